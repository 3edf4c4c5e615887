// Package slo computes SLO compliance from histogram bucket rates and
// finish-reason counts: attainment (fraction of requests meeting a latency
// threshold, with exact bounds when the threshold is not a bucket bound),
// request-weighted error budgets, burn rates over the multi-window
// multi-burn-rate windows, the ok/ticket/page status, and goodput bounds.
// Pure functions over numbers; no I/O and no SDK.
//
// Sources: burn rate = error ratio / (1 − objective) and the alerting table
// (page 1h/5m ×14.4, page 6h/30m ×6, ticket 1d/2h ×3, ticket 3d/6h ×1 for a
// 30-day period; factor = budget share × period / long window) follow the
// SRE Workbook (ch. 5, table 5-8) and Sloth's google-30d windows; fractions
// under a threshold follow Prometheus's histogram_fraction for classic
// histograms (promql.BucketFraction) through hist.FractionBelow.
package slo

import (
	"fmt"
	"math"
	"time"

	"github.com/inferscope/inferscope-llm-datasource/pkg/hist"
)

// Counts are the requests of one window (counts, or per-second rates: only
// ratios are taken): Total requests, of which Good met the objective.
// GoodLower ≤ Good ≤ GoodUpper: when a threshold falls between bucket bounds,
// Good is interpolated (Prometheus histogram_fraction) and the bounds are the
// exact counts at the neighbouring bounds; otherwise all three are equal.
type Counts struct {
	Good, GoodLower, GoodUpper, Total float64
}

// Add returns the element-wise sum of two windows' counts (request counts
// add across disjoint windows and disjoint targets; so do their bounds).
func (c Counts) Add(o Counts) Counts {
	return Counts{Good: c.Good + o.Good, GoodLower: c.GoodLower + o.GoodLower, GoodUpper: c.GoodUpper + o.GoodUpper, Total: c.Total + o.Total}
}

// Sub returns c − o (a window from two prefix sums).
func (c Counts) Sub(o Counts) Counts {
	return Counts{Good: c.Good - o.Good, GoodLower: c.GoodLower - o.GoodLower, GoodUpper: c.GoodUpper - o.GoodUpper, Total: c.Total - o.Total}
}

// Attainment is the fraction of good requests (0..1) with its bounds:
// Good/Total, GoodLower/Total, GoodUpper/Total. All NaN when Total is not
// positive (no requests: no attainment is defined).
func (c Counts) Attainment() (value, lower, upper float64) {
	if !(c.Total > 0) {
		nan := math.NaN()
		return nan, nan, nan
	}
	clamp := func(x float64) float64 { return math.Max(0, math.Min(1, x/c.Total)) }
	return clamp(c.Good), clamp(c.GoodLower), clamp(c.GoodUpper)
}

// Threshold describes where a latency threshold sits in a histogram's bucket
// layout. Exact is true when it equals a bound numerically (so le="2.0"
// matches 2 s). Otherwise Below and Above are the neighbouring bounds (Below
// 0 under the lowest bound, Above +Inf over the highest finite one) and the
// attainment is interpolated between them.
type Threshold struct {
	Value        float64
	Exact        bool
	Below, Above float64
}

// String says where the threshold sits, e.g. "2 s is a bucket bound" or
// "3 s is not a bucket bound: it lies between le=2.5 and le=5, interpolated".
func (t Threshold) String() string {
	if t.Exact {
		return fmt.Sprintf("%s is a bucket bound", seconds(t.Value))
	}
	return fmt.Sprintf("%s is not a bucket bound: it lies between le=%s and le=%s, so attainment is interpolated between the exact fractions at those bounds", seconds(t.Value), le(t.Below), le(t.Above))
}

func seconds(v float64) string { return fmt.Sprintf("%g s", v) }

func le(v float64) string {
	if math.IsInf(v, 1) {
		return "+Inf"
	}
	return fmt.Sprintf("%g", v)
}

// Locate places threshold (seconds) among the bounds of b (any order; NaN
// bounds ignored). With no finite bound at all, Below is 0 and Above +Inf.
func Locate(threshold float64, b []hist.Bucket) Threshold {
	t := Threshold{Value: threshold, Below: 0, Above: math.Inf(1)}
	for _, x := range b {
		u := x.UpperBound
		switch {
		case math.IsNaN(u):
		case u == threshold:
			t.Exact = true
		case u < threshold && u > t.Below:
			t.Below = u
		case u > threshold && u < t.Above:
			t.Above = u
		}
	}
	if math.IsInf(threshold, 1) {
		t.Exact = true
	}
	return t
}

// LatencyCounts returns the window's counts for a latency objective from
// cumulative bucket counts or rates b (seconds): Total is the +Inf bucket and
// Good the count at or under threshold by hist.FractionBelow (exactly
// Prometheus's histogram_fraction(-Inf, threshold)), with GoodLower and
// GoodUpper its exact bracket. A histogram without a +Inf bucket or without
// observations gives zero Counts (no requests seen), never NaN.
func LatencyCounts(threshold float64, b []hist.Bucket) Counts {
	total := math.NaN()
	for _, x := range b {
		if math.IsInf(x.UpperBound, 1) {
			if math.IsNaN(total) {
				total = 0
			}
			total += x.Count
		}
	}
	if !(total > 0) {
		return Counts{}
	}
	f := hist.FractionBelow(threshold, b)
	if math.IsNaN(f.Value) {
		return Counts{}
	}
	return Counts{Good: f.Value * total, GoodLower: f.Lower * total, GoodUpper: f.Upper * total, Total: total}
}

// ErrorCounts returns the window's counts for an error-ratio objective:
// finished requests total, of which bad ended with reason abort or error.
// Negative inputs (which only broken data can give) are treated as 0.
func ErrorCounts(bad, total float64) Counts {
	bad, total = math.Max(bad, 0), math.Max(total, 0)
	if math.IsNaN(bad) {
		bad = 0
	}
	if math.IsNaN(total) || total == 0 {
		return Counts{}
	}
	g := math.Max(total-bad, 0)
	return Counts{Good: g, GoodLower: g, GoodUpper: g, Total: total}
}

// BurnRate is the rate at which a window spends the error budget: error
// ratio / (1 − target), with error ratio = 1 − attainment (1 = spending
// exactly the budget over the period). NaN when the window has no requests.
func BurnRate(c Counts, target float64) float64 {
	v, _, _ := c.Attainment()
	return (1 - v) / (1 - target)
}

// Budget is the error budget remaining over a period: 1 − bad / allowed bad,
// with bad = Total − Good and allowed = (1 − target) × Total: request
// weighted (a ratio of increases, not a mean of per-window ratios). 1 means
// untouched, 0 spent, below 0 overspent. Lower and Upper come from the
// attainment bounds. With no requests nothing was spent: all three are 1, so
// a new objective starts at exactly 100 %.
type Budget struct {
	Remaining, Lower, Upper float64
}

// BudgetRemaining computes the Budget of a period's counts for target (0 < target < 1).
func BudgetRemaining(c Counts, target float64) Budget {
	if !(c.Total > 0) {
		return Budget{1, 1, 1}
	}
	v, lo, hi := c.Attainment()
	rem := func(a float64) float64 { return 1 - (1-a)/(1-target) }
	return Budget{Remaining: rem(v), Lower: rem(lo), Upper: rem(hi)}
}

// Status is the alerting state of an objective.
type Status string

// Statuses, in increasing severity.
const (
	OK     Status = "ok"
	Ticket Status = "ticket"
	Page   Status = "page"
	// Unknown: the objective's histogram contradicts itself over the range (sanity.Verdict),
	// so neither attainment nor burn rates can be drawn from it; never "ok".
	Unknown Status = "unknown"
)

// Value is the numeric status for alert rules: 0 ok, 0.5 possible, 1
// ticket, 2 page; NaN (no data: a rule's no-data state, never ok) for
// Unknown.
func (s Status) Value() float64 {
	switch s {
	case Page:
		return 2
	case Ticket:
		return 1
	case Possible:
		return 0.5
	case Unknown:
		return math.NaN()
	}
	return 0
}

// Rule is one row of the multi-window multi-burn-rate table: alert with
// Severity when the burn rates over both Long and Short windows exceed
// Factor(period). BudgetShare is the share of the period's budget the long
// window would consume at that burn.
type Rule struct {
	Severity    Status
	Long, Short time.Duration
	BudgetShare float64
}

// Factor is the burn-rate threshold of the rule for an objective period:
// BudgetShare × period / Long (Sloth getBurnRateFactor; 14.4, 6, 3 and 1 for
// the rows of Rules at 30 days), never below 1. For periods shorter than
// 30 days the formula drops under 1 on the long rows (0.1 on 3d/6h for a
// 3-day period), and a burn rate under 1 spends less than the budget allows
// over the period: alerting on it would page healthy objectives.
func (r Rule) Factor(period time.Duration) float64 {
	return math.Max(1, r.BudgetShare*period.Hours()/r.Long.Hours())
}

// Rules is the alerting table: SRE Workbook table 5-8 plus Sloth's 1d/2h ticket row.
var Rules = []Rule{
	{Page, time.Hour, 5 * time.Minute, 0.02},
	{Page, 6 * time.Hour, 30 * time.Minute, 0.05},
	{Ticket, 24 * time.Hour, 2 * time.Hour, 0.10},
	{Ticket, 72 * time.Hour, 6 * time.Hour, 0.10},
}

// Windows are the burn-rate windows of Rules, shortest first: 5m, 30m, 1h, 2h, 6h, 1d, 3d.
var Windows = []time.Duration{5 * time.Minute, 30 * time.Minute, time.Hour, 2 * time.Hour, 6 * time.Hour, 24 * time.Hour, 72 * time.Hour}

// WindowName renders a window in Prometheus notation ("5m", "1d", "3d").
func WindowName(w time.Duration) string {
	switch {
	case w%(24*time.Hour) == 0:
		return fmt.Sprintf("%dd", w/(24*time.Hour))
	case w%time.Hour == 0:
		return fmt.Sprintf("%dh", w/time.Hour)
	case w%time.Minute == 0:
		return fmt.Sprintf("%dm", w/time.Minute)
	}
	return w.String()
}

// Evaluate applies Rules to burn rates by window (NaN or missing: no
// requests, never alerting) for an objective with the given period (factors
// as PlanRows: page rows under factor 1 are off), assuming the history
// covers every window (EvaluateBracket checks coverage and the bracket), and
// returns the status with one sentence of reason naming the rule that fired
// (the first page row, else the first ticket row) or saying all is well.
func Evaluate(burn map[time.Duration]float64, period time.Duration) (Status, string) {
	return evaluate(burn, period, true)
}

// StatusOf is Evaluate without the sentence, for evaluating many steps.
func StatusOf(burn map[time.Duration]float64, period time.Duration) Status {
	st, _ := evaluate(burn, period, false)
	return st
}

func evaluate(burn map[time.Duration]float64, period time.Duration, why bool) (Status, string) {
	st, reason, _ := fire(PlanRows(period, math.NaN()), burn, period)
	if st != OK {
		return st, reason
	}
	if !why {
		return OK, ""
	}
	fast := burn[Windows[0]]
	if math.IsNaN(fast) {
		return OK, "no requests in the last 5m; no burn-rate rule fires on the longer windows"
	}
	return OK, fmt.Sprintf("no burn-rate rule fires (burn %.3g over 5m, %.3g over 1h)", fast, burn[time.Hour])
}

// Goodput is the fraction of requests meeting several objectives at once,
// known only within bounds from separate histograms: by the Fréchet
// inequalities, the share of requests meeting all n objectives lies in
// [max(0, Σ aᵢ − (n − 1)), min aᵢ]. Lower uses each attainment's lower
// bound and Upper each upper bound, so the interval also covers
// interpolation. NaN when any attainment is undefined.
type Goodput struct {
	Lower, Upper float64
}

// GoodputBounds returns the Fréchet bounds of the joint attainment of
// objectives measured on the same requests; each element is one
// objective's window Counts.
func GoodputBounds(cs []Counts) Goodput {
	if len(cs) == 0 {
		nan := math.NaN()
		return Goodput{nan, nan}
	}
	sum, minHi := 0.0, math.Inf(1)
	for _, c := range cs {
		_, lo, hi := c.Attainment()
		if math.IsNaN(lo) || math.IsNaN(hi) {
			nan := math.NaN()
			return Goodput{nan, nan}
		}
		sum += lo
		minHi = math.Min(minHi, hi)
	}
	return Goodput{Lower: math.Max(0, sum-float64(len(cs)-1)), Upper: minHi}
}
