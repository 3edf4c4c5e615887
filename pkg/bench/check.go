package bench

import (
	"fmt"
	"math"
)

// Outcome is a verdict of an objective against a benchmark or a range of
// production data.
type Outcome string

// Outcomes, with the CLI's exit code: met 0, breached 1, possibly breached 2.
const (
	Met      Outcome = "met"
	Breached Outcome = "breached"
	// Possibly: the data bracket the objective's quantile on both sides of
	// the threshold (or do not measure it), so neither met nor breached can
	// be said for sure.
	Possibly Outcome = "possibly breached"
)

// Severity orders outcomes: met 0 < possibly breached 1 < breached 2.
func (o Outcome) Severity() int {
	switch o {
	case Breached:
		return 2
	case Possibly:
		return 1
	}
	return 0
}

// Check is one latency objective ("Target of requests have Stage ≤
// Threshold seconds") judged on a benchmark's reported percentiles.
// Quantile is Target in percent (99 for 0.99). Lower and Upper are the
// nearest reported percentiles around it (PLower ≤ Quantile ≤ PUpper, equal
// when reported exactly; P NaN when none on that side); Value is the
// reported value at Quantile (NaN unless reported exactly).
type Check struct {
	Stage             string
	Threshold, Target float64
	Quantile          float64
	Value             float64
	PLower, Lower     float64
	PUpper, Upper     float64
	Outcome           Outcome
	Reason            string
}

// CheckLatency applies the bracket rule. A latency quantile function is
// non-decreasing, so the value at Quantile lies in [Lower, Upper]:
// Upper ≤ Threshold → met for sure; Lower > Threshold → breached for sure;
// otherwise (or when the stage or a side of the bracket is missing) it
// cannot be decided from the reported percentiles: possibly breached, with
// the sentence saying which percentile to ask the tool for.
func CheckLatency(b Baseline, stage string, threshold, target float64) Check {
	nan := math.NaN()
	c := Check{Stage: stage, Threshold: threshold, Target: target, Quantile: 100 * target,
		Value: nan, PLower: nan, Lower: nan, PUpper: nan, Upper: nan}
	// 100 × 0.99 is 98.99999999999999 in floating point: round to the
	// precision percentiles are written with.
	c.Quantile = math.Round(c.Quantile*1e6) / 1e6
	m, ok := b.Stages[stage]
	if !ok {
		c.Outcome = Possibly
		c.Reason = fmt.Sprintf("the %s result does not report %s; it cannot be checked", b.Tool, stage)
		return c
	}
	lo, hi := m.Bracket(c.Quantile)
	c.PLower, c.Lower, c.PUpper, c.Upper = lo.P, lo.Value, hi.P, hi.Value
	q := "p" + trimP(c.Quantile)
	switch {
	case lo.P == c.Quantile:
		c.Value = lo.Value
		if lo.Value <= threshold {
			c.Outcome, c.Reason = Met, fmt.Sprintf("%s %s = %s ≤ %s", q, stage, secs(lo.Value), secs(threshold))
		} else {
			c.Outcome, c.Reason = Breached, fmt.Sprintf("%s %s = %s > %s", q, stage, secs(lo.Value), secs(threshold))
		}
	case !math.IsNaN(hi.P) && hi.Value <= threshold:
		c.Outcome = Met
		c.Reason = fmt.Sprintf("%s not reported, but p%s = %s ≤ %s bounds it", q, trimP(hi.P), secs(hi.Value), secs(threshold))
	case !math.IsNaN(lo.P) && lo.Value > threshold:
		c.Outcome = Breached
		c.Reason = fmt.Sprintf("%s not reported, but p%s = %s > %s already", q, trimP(lo.P), secs(lo.Value), secs(threshold))
	default:
		c.Outcome = Possibly
		c.Reason = fmt.Sprintf("%s not reported and the nearest percentiles (%s, %s) straddle %s: rerun with that percentile (vllm: --metric-percentiles %s)",
			q, side(lo), side(hi), secs(threshold), trimP(c.Quantile))
	}
	return c
}

// CheckError judges an error-ratio objective on a benchmark: the share of
// requests that succeeded, Completed / (Completed + Failed), against target.
// Without both counts it cannot be decided.
func CheckError(b Baseline, target float64) Check {
	nan := math.NaN()
	c := Check{Stage: "error_ratio", Threshold: nan, Target: target, Quantile: nan, Value: nan, PLower: nan, Lower: nan, PUpper: nan, Upper: nan}
	if math.IsNaN(b.Completed) || math.IsNaN(b.Failed) || b.Completed+b.Failed <= 0 {
		c.Outcome, c.Reason = Possibly, fmt.Sprintf("the %s result does not count failed requests", b.Tool)
		return c
	}
	a := b.Completed / (b.Completed + b.Failed)
	c.Value = a
	if a >= target {
		c.Outcome = Met
	} else {
		c.Outcome = Breached
	}
	c.Reason = fmt.Sprintf("%g of %g requests succeeded (%.4g%%, target %.4g%%)", b.Completed, b.Completed+b.Failed, 100*a, 100*target)
	return c
}

func side(p Percentile) string {
	if math.IsNaN(p.P) {
		return "none"
	}
	return fmt.Sprintf("p%s = %s", trimP(p.P), secs(p.Value))
}

func secs(v float64) string {
	if v < 1 {
		return fmt.Sprintf("%.4g ms", v*1000)
	}
	return fmt.Sprintf("%.4g s", v)
}
