package queries

import (
	"context"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/data"
	"github.com/prometheus/common/model"

	"github.com/inferscope/inferscope-llm-datasource/pkg/analysis"
	"github.com/inferscope/inferscope-llm-datasource/pkg/analysis/sanity"
	"github.com/inferscope/inferscope-llm-datasource/pkg/analysis/slo"
	"github.com/inferscope/inferscope-llm-datasource/pkg/catalog"
	"github.com/inferscope/inferscope-llm-datasource/pkg/fetch"
	"github.com/inferscope/inferscope-llm-datasource/pkg/frames"
	"github.com/inferscope/inferscope-llm-datasource/pkg/settings"
)

// BurnRate is the burn_rate query: per objective × group, one series per burn-rate window and
// a status series.
type BurnRate struct {
	Common
	// Profile names an SLO profile of the settings (empty: every profile).
	Profile string `json:"profile,omitempty"`
	// Objectives restricts the profile to these objective names (empty: all).
	Objectives []string `json:"objectives,omitempty"`
	// Format is timeseries (default), status (the status series only),
	// sustained (the burn rate over the last 2 minutes on the bound of the
	// attainment bracket that favours the service, for a "for 5m" rule) or
	// budget (the burn-down: budget remaining over the period at each step).
	Format string `json:"format,omitempty"`
}

func (q *BurnRate) lists() []namedList { return []namedList{{"objectives", &q.Objectives}} }

var burnRateEnums = map[string][]string{"format": {"timeseries", "status", "sustained", "budget"}}

// runBurnRate answers the burn_rate query: per objective and group, one
// series per burn-rate window (labels profile, objective, window and the
// group) and one status series (0 ok, 0.5 possible, 1 ticket, 2 page), each a frame of
// its own with a unique label set, so a Grafana-managed alert rule can
// reduce and threshold them directly. With format "status" only the status
// series come back (an alert rule then thresholds the status alone).
//
// Method: one range query per objective asks the bucket (or finish-reason)
// rates over windows of resolution R at steps of R, from the range start
// minus the longest window (3 d) to its end; every burn window is then a
// sum of consecutive R-steps (slo.History), so seven windows cost one
// query. R (slo.BurnResolution) divides 5 minutes, so every window is its
// true length whatever the panel step; the series are shown at the step.
func runBurnRate(ctx context.Context, env *fetch.Env, p fetch.Plan, q *BurnRate) (data.Frames, error) {
	statusOnly, sustained, budgetOnly := false, false, false
	switch q.Format {
	case "", "timeseries":
	case "status":
		statusOnly = true
	case "sustained":
		sustained = true
	case "budget":
		budgetOnly = true
	default:
		return nil, badQueryf("format: %q is not timeseries (burn rates and status), status (the status series only, for alert rules), sustained (the burn rate over the last 2 minutes on the bound in the service's favour, for a 'for 5m' rule) or budget (the budget remaining over the period at each step)", q.Format)
	}
	r := fetch.NewRun(ctx, env, p)
	objs, err := selectObjectives(env, p, q.Profile, q.Objectives, true, &r.Notes)
	if err != nil {
		return nil, err
	}
	// The history's resolution divides every burn window (5m … 3d), so the
	// windows are the true ones whatever the panel step; the series are
	// shown at the panel step (every show-th step) when it is coarser.
	res := slo.BurnResolution(p.Step, env.Settings.ScrapeInterval)
	show := 1
	if p.Step > res {
		show = int(p.Step / res)
	}
	longest := slo.Windows[len(slo.Windows)-1]
	end := fetch.AlignToStep(p.End, res)
	first := fetch.AlignToStep(p.Start, res)
	if first.Before(p.Start) {
		first = first.Add(res)
	}
	if end.Before(first) {
		end = first
	}
	from := first.Add(-longest)
	// sustained: the burn rate over the last 2 minutes (rounded up to whole
	// steps) on the favourable bound of the attainment bracket; above 1 means
	// the objective's quantile is above its threshold. A rule holding it for
	// 5 minutes tells sustained degradation from a spike; it needs no 3-day
	// history.
	spikeW := (2*time.Minute + res - 1) / res * res
	if sustained {
		from = first.Add(-spikeW)
	}
	steps := analysis.Steps(from, end, res)
	out := first.Sub(from) / res // index of the first step shown
	var series []analysis.Series
	for _, s := range objs {
		if s.obj.Kind != settings.KindAvailability {
			r.ScopeNotices(ctx, []catalog.Signal{s.signal()})
		}
		errorNotices(ctx, r, s)
		qs, err := windowQueries(ctx, r, s, res, objectiveLe(ctx, r, s, from, end))
		if err != nil {
			return nil, err
		}
		var m model.Matrix
		for _, q := range qs {
			part, err := fetch.AsMatrix(r.Exec(ctx, fetch.Query{PromQL: q, From: from, To: end, Step: res, Chunked: true}))
			if err != nil {
				return nil, err
			}
			m = append(m, part...)
		}
		groups, hs, layouts := kindHistory(env, s, m, steps, res, &r.Notes)
		// The latency query's warning when the histogram contradicts itself over the range.
		if _, err := disprovedGroups(ctx, r, s, p.End.Sub(p.Start)+res, p.End); err != nil {
			return nil, err
		}
		if len(groups) == 0 {
			r.Notes.Add(analysis.Info, fmt.Sprintf("objective %s/%s: no %s data in scope over the range and the 3d before it (not exported, or no requests)", s.profile, s.obj.Name, kindWhat(s)))
			continue
		}
		// The budget remaining over the period at every shown step (the
		// burn-down), for the timeseries format.
		var budgets map[string][]float64
		if budgetOnly {
			if budgets, err = budgetSeries(ctx, r, s, every(steps[out:], show), time.Duration(show)*res); err != nil {
				return nil, err
			}
		}
		if len(groups) > 0 {
			thresholdNotice(ctx, r, s, firstPart(layouts[groups[0].Key]), p.Start, p.End)
		}
		verdicts, err := rangeVerdicts(ctx, r, s, p)
		if err != nil {
			return nil, err
		}
		for _, g := range groups {
			layeredThresholdNotice(s, layouts[g.Key], &r.Notes)
			h := hs[g.Key]
			// Burn rates are the point values; the status is from the
			// attainment bracket, each row only once the history covers its
			// long window (slo.History.StatusSeries).
			burn, _ := h.BurnSeries(s.obj.Target, factorPeriod(s, end))
			status := h.StatusSeries(s.obj.Target, factorPeriod(s, end), 2*env.Settings.ScrapeInterval)
			// The windows' series only (status, sustained and budget formats draw none): the
			// status already counts a row only once the history covers its long window.
			if uncovered := slo.MaskUncovered(burn, h.CoveredAt(), 2*env.Settings.ScrapeInterval); len(uncovered) > 0 && !statusOnly && !sustained && !budgetOnly {
				r.Notes.Add(analysis.Info, fmt.Sprintf("objective %s/%s: burn rates over %s are not drawn where the stored history is shorter than the window (at the range's end it covers about %s): a longer window would read the same requests as a shorter one",
					s.profile, s.obj.Name, strings.Join(uncovered, ", "), shortDuration(lastCovered(h.CoveredAt()))))
			}
			if v, ok := verdicts.Find(g.Labels); ok && v.Disproved(0) {
				// The histogram contradicts itself over the range: no burn rate or status is
				// drawn from it (status value null: an alert rule's no data, never ok).
				r.Notes.Add(analysis.Warning, fmt.Sprintf("objective %s/%s: %s", s.profile, s.obj.Name, v.Sentence()))
				for w := range burn {
					for i := range burn[w] {
						burn[w][i] = math.NaN()
					}
				}
				for i := range status {
					status[i] = slo.Unknown
				}
			}
			shown := every(steps[out:], show)
			labels := func(extra map[string]string) map[string]string {
				l := map[string]string{"profile": s.profile, "objective": s.obj.Name}
				for k, v := range g.Labels {
					l[k] = v
				}
				for k, v := range extra {
					l[k] = v
				}
				return l
			}
			if budgetOnly {
				if b, ok := budgets[g.Key]; ok {
					series = append(series, analysis.Series{Name: "budget remaining", Labels: labels(map[string]string{"stat": "budget"}), Unit: "percentunit", Times: shown, Values: b})
				}
				continue
			}
			if sustained {
				vals := make([]float64, 0, len(h.Counts))
				for _, c := range h.Window(spikeW) {
					f, _ := slo.BurnBracket(c, s.obj.Target)
					vals = append(vals, f)
				}
				name := slo.WindowName(spikeW)
				series = append(series, analysis.Series{Name: "burn rate " + name + " favourable", Labels: labels(map[string]string{"window": name, "bound": "favourable"}),
					Unit: "short", Times: shown, Values: every(vals[out:], show)})
				continue
			}
			for _, w := range slo.Windows {
				if statusOnly {
					break
				}
				name := slo.WindowName(w)
				series = append(series, analysis.Series{Name: "burn rate " + name, Labels: labels(map[string]string{"window": name}),
					Unit: "short", Times: shown, Values: every(burn[w][out:], show)})
			}
			vals := make([]float64, 0, len(shown))
			for _, st := range every(status[out:], show) {
				vals = append(vals, st.Value())
			}
			series = append(series, analysis.Series{Name: "status", Labels: labels(nil), Unit: "short", Times: shown, Values: vals})
		}
	}
	r.Notes.Add(analysis.Info, fmt.Sprintf("burn rate = error ratio / (1 − target) over 5m … 3d, from request counts summed over %s steps; status 0 ok, 0.5 possible, 1 ticket, 2 page by the multi-window rule (page: 1h and 5m above 14.4, or 6h and 30m above 6; ticket: 1d and 2h above 3, or 3d and 6h above 1; factors for a 30d period, scaled for others) on the attainment bracket (page only when even the bound in the service's favour fires; possible otherwise), each row only once the stored history covers its long window", model.Duration(res)))
	return frames.TimeSeries(series, meta(r, nil)), nil
}

// every returns every k-th element of xs, the last one included.
func every[T any](xs []T, k int) []T {
	if k <= 1 || len(xs) == 0 {
		return xs
	}
	var out []T
	for j := (len(xs) - 1) % k; j < len(xs); j += k {
		out = append(out, xs[j])
	}
	return out
}

// budgetSeries returns, per group, the error budget remaining over the
// objective's period at each shown instant (slo.BudgetRemaining of the
// period's counts; 1 where the period holds no request). A rolling period
// is one range query whose window is the period; a calendar month reads the
// counts at the display step from the 1st of the first shown instant's month
// and sums them from each instant's 1st (slo.History.BurnDown).
func budgetSeries(ctx context.Context, r *fetch.Run, s selected, shown []time.Time, step time.Duration) (map[string][]float64, error) {
	if len(shown) == 0 {
		return nil, nil
	}
	first, last := shown[0], shown[len(shown)-1]
	steps, window := shown, s.obj.Period
	if s.obj.CalendarMonth {
		// Steps back from the last shown instant to the 1st of the first
		// shown instant's month, so that the shown instants are among them.
		n := int(last.Sub(slo.PeriodStart(first, 0, true))/step) + 1
		steps = make([]time.Time, n)
		for i := range steps {
			steps[i] = last.Add(-time.Duration(n-1-i) * step)
		}
		window = step
	}
	qs, err := windowQueries(ctx, r, s, window, nil)
	if err != nil {
		return nil, err
	}
	var m model.Matrix
	for _, q := range qs {
		part, err := fetch.AsMatrix(r.Exec(ctx, fetch.Query{PromQL: q, From: steps[0], To: last, Step: step, Chunked: true}))
		if err != nil {
			return nil, err
		}
		m = append(m, part...)
	}
	var local analysis.Notices // the burn-rate history already said what these reads would
	groups, hs, _ := kindHistory(r.Env, s, m, steps, window, &local)
	out := map[string][]float64{}
	for _, g := range groups {
		h := hs[g.Key]
		var bs []slo.Budget
		if s.obj.CalendarMonth {
			bs = h.BurnDown(s.obj.Target, 0, true)
		} else {
			for _, c := range h.Counts {
				bs = append(bs, slo.BudgetRemaining(c, s.obj.Target))
			}
		}
		vals := make([]float64, 0, len(shown))
		for _, b := range bs[len(bs)-len(shown):] {
			vals = append(vals, b.Remaining)
		}
		out[g.Key] = vals
	}
	return out, nil
}

// rangeVerdicts judges a latency objective's histogram over the query's range as one window
// (sanity.JudgeWindow on every bucket, _sum and _count rate over [Start, End]); none for
// error-ratio objectives.
func rangeVerdicts(ctx context.Context, r *fetch.Run, s selected, p fetch.Plan) (sanity.Verdicts, error) {
	if s.obj.Kind != settings.KindLatency {
		return nil, nil
	}
	w := p.End.Sub(p.Start)
	if w < p.Window {
		w = p.Window
	}
	bq, err := windowQueries(ctx, r, s, w, nil)
	if err != nil {
		return nil, err
	}
	sq, cq, err := verdictQueries(ctx, r, s, w)
	if err != nil {
		return nil, err
	}
	all := append(append(append([]string{}, bq...), sq...), cq...)
	vs, err := r.InstantAll(ctx, all, p.End)
	if err != nil {
		return nil, err
	}
	return sanity.JudgeWindow(s.obj.Signal, concat(vs, bq), concat(vs, sq), concat(vs, cq), p.End), nil
}

// lastCovered is the history's coverage at its last step (0 for none).
func lastCovered(cov []time.Duration) time.Duration {
	if len(cov) == 0 {
		return 0
	}
	return cov[len(cov)-1]
}
