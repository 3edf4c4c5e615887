package slo

import (
	"fmt"
	"math"
	"strings"
	"time"
)

// Possible is the status of an objective whose bracket straddles an alert:
// the bound of the attainment bracket that favours the service fires no
// row, the other does (a threshold between bucket bounds, or a histogram
// that contradicts itself). It never pages; a notice says which bound would.
// Value 0.5: under the provisioned rules' ticket threshold (> 0.5).
const Possible Status = "possible"

// RowPlan is one row of Rules applied to an objective's period and target.
type RowPlan struct {
	Rule
	// Raw is the Workbook/Sloth factor BudgetShare × period / Long (14.4,
	// 6, 3, 1 at 30 d; 43.2, 18, 9, 3 at 90 d; 3.36, 1.4, 0.7, 0.233 at 7 d).
	Raw float64
	// Factor is the burn rate both windows must exceed: Raw for page rows,
	// Raw held at 1 or more for ticket rows (a burn under 1 leaves budget at
	// the end of the period).
	Factor float64
	// Never is empty when the row can fire, else the sentence saying why it
	// cannot: a page row whose Raw is under 1 (periods under 5 d for
	// 6h/30m) is off, since it would page on any burn above 1; a row whose
	// Factor is at or above the highest possible burn 1 / (1 − target)
	// (every request bad) can never be exceeded.
	Never string
}

// Name renders the row as "page 1h/5m".
func (r RowPlan) Name() string {
	return fmt.Sprintf("%s %s/%s", r.Severity, WindowName(r.Long), WindowName(r.Short))
}

// PlanRows returns Rules scaled to an objective's period and target
// (target NaN: the never-fires check on the highest burn is skipped).
// Source: SRE Workbook ch. 5 (factor = budget share × period / window) and
// Sloth getBurnRateFactor.
func PlanRows(period time.Duration, target float64) []RowPlan {
	out := make([]RowPlan, len(Rules))
	maxBurn := 1 / (1 - target)
	for i, r := range Rules {
		p := RowPlan{Rule: r, Raw: r.BudgetShare * period.Hours() / r.Long.Hours()}
		p.Factor = p.Raw
		if r.Severity == Ticket && p.Factor < 1 {
			p.Factor = 1
		}
		switch {
		case r.Severity == Page && p.Raw < 1:
			p.Never = fmt.Sprintf("row %s is off for a %s period: its factor %.3g is under 1, and a page on any burn above 1 would wake someone for a pace that leaves budget at the end of the period", p.Name(), WindowName(period), p.Raw)
		case !math.IsNaN(target) && p.Factor >= maxBurn:
			p.Never = fmt.Sprintf("row %s can never fire for a %s period at target %g: its factor %.3g is at or above the highest possible burn rate 1 / (1 − %g) = %.3g (every request bad)", p.Name(), WindowName(period), target, p.Factor, target, maxBurn)
		}
		out[i] = p
	}
	return out
}

// Evaluation is the status of an objective from its burn rates over the
// windows, evaluated on both bounds of the attainment bracket.
type Evaluation struct {
	// Status is from the bound that favours the service (fewest bad
	// requests), or Possible when only the other bound fires a row.
	Status Status
	// Worst is the status from the bound that disfavours the service.
	Worst  Status
	Reason string
	// NotEvaluated names the rows ("page 6h/30m") whose long window the
	// stored history does not cover; they cannot fire.
	NotEvaluated []string
	// Never holds a sentence per row that can never fire (RowPlan.Never).
	Never []string
	// Fired is the row whose burn rates the Reason quotes (nil when none fires), with the
	// bound they were read on.
	Fired *FiredRow
}

// FiredRow is the row an Evaluation's Reason quotes: its windows and the bound of the
// attainment bracket its burn rates were read on ("in the service's favour" or "against the
// service").
type FiredRow struct {
	Long, Short time.Duration
	Bound       string
}

// EvaluateBracket applies PlanRows(period, target) to two sets of burn
// rates by window: favourable (from the upper attainment bound) and
// pessimistic (from the lower one); NaN or missing windows never fire. A
// row counts only when covered (how much history the store holds) is at
// least its long window: a new store holding one hour would otherwise read
// its 6h, 1d and 3d windows over that hour and page on a 5-minute outage.
// Page wins over ticket; the status pages only when even the favourable
// bound fires a page row.
func EvaluateBracket(favourable, pessimistic map[time.Duration]float64, period time.Duration, target float64, covered time.Duration) Evaluation {
	rows := PlanRows(period, target)
	var e Evaluation
	for _, r := range rows {
		if r.Never != "" {
			e.Never = append(e.Never, r.Never)
			continue
		}
		if covered < r.Long {
			e.NotEvaluated = append(e.NotEvaluated, r.Name())
		}
	}
	fav, why, favRow := fire(rows, favourable, covered)
	worst, whyWorst, worstRow := fire(rows, pessimistic, covered)
	if rank(worst) < rank(fav) {
		worst = fav
	}
	e.Status, e.Worst = fav, worst
	switch {
	case fav != OK:
		e.Fired = &FiredRow{Long: favRow.Long, Short: favRow.Short, Bound: "in the service's favour"}
	case worst != OK:
		e.Fired = &FiredRow{Long: worstRow.Long, Short: worstRow.Short, Bound: "against the service"}
	}
	switch {
	case fav == worst && fav != OK:
		e.Reason = why
	case fav == OK && worst != OK:
		e.Status = Possible
		e.Reason = fmt.Sprintf("possible %s: on the bound of the attainment bracket against the service %s; on the bound in its favour no row fires, so it does not alert", worst, whyWorst)
	case fav != worst:
		e.Reason = fmt.Sprintf("%s; a %s is possible on the bound against the service (%s)", why, worst, whyWorst)
	default:
		fast := favourable[Windows[0]]
		if math.IsNaN(fast) {
			e.Reason = "no requests in the last 5m; no burn-rate rule fires on the longer windows"
		} else {
			burns := fmt.Sprintf("burn %.3g over 5m", fast)
			if h := favourable[time.Hour]; !math.IsNaN(h) {
				burns += fmt.Sprintf(", %.3g over 1h", h)
			}
			e.Reason = fmt.Sprintf("no burn-rate rule fires (%s, on the bound of the attainment bracket in the service's favour)", burns)
		}
	}
	if len(e.NotEvaluated) > 0 {
		e.Reason += fmt.Sprintf("; not evaluated (the store holds %s, less than their long window): %s", WindowName(covered.Truncate(time.Minute)), strings.Join(e.NotEvaluated, ", "))
	}
	return e
}

func rank(s Status) int {
	switch s {
	case Page:
		return 3
	case Ticket:
		return 2
	case Possible:
		return 1
	}
	return 0
}

// fire returns the status of the first firing row (page rows first) and
// its sentence.
func fire(rows []RowPlan, burn map[time.Duration]float64, covered time.Duration) (Status, string, RowPlan) {
	for _, sev := range []Status{Page, Ticket} {
		for _, r := range rows {
			if r.Severity != sev || r.Never != "" || covered < r.Long {
				continue
			}
			long, short := burn[r.Long], burn[r.Short]
			if long > r.Factor && short > r.Factor {
				return sev, fmt.Sprintf("burn rate %.3g over %s and %.3g over %s both exceed %.3g: at this pace %.0f%% of the budget goes in %s",
					long, WindowName(r.Long), short, WindowName(r.Short), r.Factor, 100*r.BudgetShare, WindowName(r.Long)), r
			}
		}
	}
	return OK, "", RowPlan{}
}

// BurnBracket returns the burn rates of a window on both bounds of its
// attainment bracket: favourable (1 − upper) / (1 − target) and
// pessimistic (1 − lower) / (1 − target). NaN when the window has no
// requests.
func BurnBracket(c Counts, target float64) (favourable, pessimistic float64) {
	_, lo, hi := c.Attainment()
	return (1 - hi) / (1 - target), (1 - lo) / (1 - target)
}

// CoveredAt returns, for every step, how long the history holds data up to
// that step: from the start of the first step with requests (Times[i] −
// Resolution) to Times[i]; 0 before it.
func (h History) CoveredAt() []time.Duration {
	out := make([]time.Duration, len(h.Counts))
	first := -1
	for i, c := range h.Counts {
		if first < 0 && c.Total > 0 && !math.IsNaN(c.Total) {
			first = i
		}
		if first >= 0 {
			out[i] = h.Times[i].Sub(h.Times[first].Add(-h.Resolution))
		}
	}
	return out
}

// StatusSeries returns, for every step, the Evaluation status from both
// bounds of the burn rates over Windows, with a row counting only once the
// history covers its long window (CoveredAt plus slack, e.g. two scrape
// intervals for the first scrape's missing rate). Burn rates are the point
// values (BurnSeries).
func (h History) StatusSeries(target float64, period, slack time.Duration) []Status {
	fav := make(map[time.Duration][]Counts, len(Windows))
	for _, w := range Windows {
		fav[w] = h.Window(w)
	}
	cov := h.CoveredAt()
	out := make([]Status, len(h.Counts))
	f := make(map[time.Duration]float64, len(Windows))
	p := make(map[time.Duration]float64, len(Windows))
	rows := PlanRows(period, target)
	for i := range h.Counts {
		for _, w := range Windows {
			f[w], p[w] = BurnBracket(fav[w][i], target)
		}
		c := cov[i] + slack
		s, _, _ := fire(rows, f, c)
		worst, _, _ := fire(rows, p, c)
		if s == OK && worst != OK {
			s = Possible
		}
		out[i] = s
	}
	return out
}

// MaskUncovered sets to NaN, in burn (per window of Windows but the first, one value per step), every step
// whose history (covered, CoveredAt, plus slack) is shorter than the window: there a window
// reads the same requests as a shorter one (issue 33: with an hour stored, the 2h, 6h, 1d and
// 3d lines all equalled the 1h one). It returns the names of the windows not covered at the
// last step, shortest first. The shortest window (5m) is always kept: it is the burn now,
// with nothing shorter to read instead.
func MaskUncovered(burn map[time.Duration][]float64, covered []time.Duration, slack time.Duration) []string {
	var out []string
	for _, w := range Windows[1:] {
		vals := burn[w]
		for i := range vals {
			if i < len(covered) && covered[i]+slack < w {
				vals[i] = math.NaN()
			}
		}
		if n := len(covered); n > 0 && covered[n-1]+slack < w {
			out = append(out, WindowName(w))
		}
	}
	return out
}
