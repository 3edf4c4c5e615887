package slo

import (
	"fmt"
	"math"
	"time"

	"github.com/prometheus/common/model"

	"github.com/inferscope/inferscope-llm-datasource/pkg/hist"
)

// Spec is the objective a Report is about (copied from settings so that
// this package does not depend on the settings package).
type Spec struct {
	Profile, Objective string
	// Kind is "latency", "error_ratio" or "availability"; Signal the latency stage.
	Kind, Signal string
	// Threshold in seconds (NaN for error-ratio objectives); Target a ratio 0..1.
	Threshold, Target float64
	Period            time.Duration
	// PeriodName is the period as the profile names it: "30d" (Prometheus notation) for a
	// rolling period, "month" for the calendar month, so a dashboard can say whose budget it
	// shows ("of 30d budget spent").
	PeriodName string
}

// Report is one row of the slo table: an objective over one group.
type Report struct {
	Spec
	Group map[string]string
	// Location of the threshold in the bucket layout (latency objectives).
	Location Threshold
	// Requests seen over the query's range; Attainment (0..1) over that range with its exact bracket.
	Requests                                     float64
	Attainment, AttainmentLower, AttainmentUpper float64
	// Quantile is the observed latency at the objective's ratio over the
	// range, with its bucket bounds (latency objectives; NaN otherwise).
	Quantile hist.Estimate
	// Budget remaining over the period (or the part of it the history covers).
	Budget Budget
	// Covered is how much of the period the stored history spans (≤ Period).
	Covered time.Duration
	// Burn rates by window (Windows); NaN where a window holds no request.
	Burn map[time.Duration]float64
	// BurnFavourable and BurnPessimistic are the burn rates on the bounds
	// of the attainment bracket (equal to Burn when the threshold is a bound).
	BurnFavourable, BurnPessimistic map[time.Duration]float64
	// Status is Evaluation.Status: from the favourable bound, Possible when
	// only the other bound fires, rows counted only when the store covers
	// their long window.
	Status     Status
	Reason     string
	Evaluation Evaluation
	// Unit says what Requests counts (CountUnit): "requests", "token gaps"
	// or "seconds".
	Unit string
}

// CountUnit names what an objective's counts hold: "seconds" for
// availability (time based), "token gaps" for ITL (vLLM observes one
// inter-token latency per generated token after the first, so 2,400
// requests of 20 tokens give 45,600 gaps), "requests" otherwise.
func CountUnit(kind, signal string) string {
	switch {
	case kind == "availability":
		return "seconds"
	case kind == "error_ratio":
		return "requests"
	case signal == "itl":
		return "token gaps"
	}
	return "requests"
}

// Windowed are one group's counts over each window a report needs: the
// query's range, the objective's period, and every burn-rate window.
type Windowed struct {
	Range, Period Counts
	Burn          map[time.Duration]Counts
	// Buckets over the range (latency objectives), for the quantile and the
	// threshold's location.
	RangeBuckets []hist.Bucket
	// RangeParts, when set, are the range's buckets per target (one layout
	// each): the quantile and the threshold's location are then taken over
	// all of them (Layered), never from buckets summed across layouts.
	RangeParts [][]hist.Bucket
	// Disproved, when not empty, is the sentence of the histogram's verdict
	// (sanity.Verdict.Sentence): it contradicts itself over the range, so the
	// report draws no attainment, quantile, budget or burn rate from it and its
	// status is Unknown, with this sentence as the reason.
	Disproved string
}

// NewReport assembles one row: attainment over the range, the quantile at
// the target ratio, the budget over the period, burn rates and status.
func NewReport(spec Spec, group map[string]string, w Windowed, covered time.Duration) Report {
	r := Report{Spec: spec, Group: group, Covered: covered, Burn: map[time.Duration]float64{},
		BurnFavourable: map[time.Duration]float64{}, BurnPessimistic: map[time.Duration]float64{}, Unit: CountUnit(spec.Kind, spec.Signal)}
	r.Requests = w.Range.Total
	r.Attainment, r.AttainmentLower, r.AttainmentUpper = w.Range.Attainment()
	nan := math.NaN()
	r.Quantile = hist.Estimate{Value: nan, Lower: nan, Upper: nan}
	if spec.Kind != "error_ratio" && spec.Kind != "availability" {
		switch {
		case len(w.RangeParts) > 0:
			l := Layered{Parts: w.RangeParts}
			r.Location = l.Locate(spec.Threshold)
			r.Quantile = l.Quantile(spec.Target)
		default:
			r.Location = Locate(spec.Threshold, w.RangeBuckets)
			if len(w.RangeBuckets) > 0 {
				r.Quantile = hist.Quantile(spec.Target, w.RangeBuckets)
			}
		}
	}
	r.Budget = BudgetRemaining(w.Period, spec.Target)
	for _, win := range Windows {
		c, ok := w.Burn[win]
		// A window longer than the stored history reads that history only (issue 33: with an
		// hour stored, the 2h, 6h, 1d and 3d burn rates all equalled the 1h one): no burn rate
		// until the store covers it, as its rows are not evaluated (EvaluateBracket). A
		// coverage of 0 is unknown (no sample count read), not an empty store: kept. The
		// shortest window is always kept: it is the burn now, with nothing shorter to read.
		if !ok || (covered > 0 && covered < win && win != Windows[0]) {
			r.Burn[win], r.BurnFavourable[win], r.BurnPessimistic[win] = nan, nan, nan
			continue
		}
		r.Burn[win] = BurnRate(c, spec.Target)
		r.BurnFavourable[win], r.BurnPessimistic[win] = BurnBracket(c, spec.Target)
	}
	if w.Disproved != "" {
		r.Attainment, r.AttainmentLower, r.AttainmentUpper = nan, nan, nan
		r.Quantile = hist.Estimate{Value: nan, Lower: nan, Upper: nan}
		r.Budget = Budget{Remaining: nan, Lower: nan, Upper: nan}
		for win := range r.Burn {
			r.Burn[win] = nan
		}
		r.Status, r.Reason = Unknown, w.Disproved
		return r
	}
	r.Evaluation = EvaluateBracket(r.BurnFavourable, r.BurnPessimistic, spec.Period, spec.Target, covered)
	r.Status, r.Reason = r.Evaluation.Status, r.Evaluation.Reason
	if f := r.Evaluation.Fired; f != nil {
		// The sentence's burn rates are on a bound of the attainment bracket; the Burn
		// columns hold the point estimates (issue 33: "burn rate 79.4 over 1h" in the Why
		// column beside Burn 1h 82.85 in the same row): both are named.
		r.Reason += fmt.Sprintf(" (burn rates on the bound of the attainment bracket %s; the point estimates are %.4g over %s and %.4g over %s)",
			f.Bound, r.Burn[f.Long], WindowName(f.Long), r.Burn[f.Short], WindowName(f.Short))
	}
	if r.Status == OK && r.Budget.Remaining < 0 {
		r.Reason = fmt.Sprintf("budget overspent (%.1f%% left) but no burn-rate rule fires now; %s", 100*r.Budget.Remaining, r.Reason)
	}
	return r
}

// BudgetOf names the error budget that Budget is computed over, as a noun phrase for a tile
// or column: "30d budget" (PeriodName) once the stored history covers the period (or its
// coverage is unknown, 0), else "budget of the 1h stored (30d not yet covered)", the
// coverage rounded to the minute in Prometheus notation (issue 33, review 33-8: one stored
// hour read "8275% of 30d budget spent", the budget being the hour's allowed bad requests).
func (r Report) BudgetOf() string {
	c := r.Covered.Round(time.Minute)
	if r.Covered <= 0 || c >= r.Period {
		return r.PeriodName + " budget"
	}
	if c < time.Minute {
		c = time.Minute
	}
	return "budget of the " + model.Duration(c).String() + " stored (" + r.PeriodName + " not yet covered)"
}
