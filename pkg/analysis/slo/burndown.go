package slo

import (
	"sort"
	"time"
)

// PeriodStart returns the start of the compliance period that ends at t: t
// − period for a rolling period, or the first instant of t's calendar month
// in UTC when calendarMonth is set (the budget then resets on the 1st).
func PeriodStart(t time.Time, period time.Duration, calendarMonth bool) time.Time {
	if calendarMonth {
		u := t.UTC()
		return time.Date(u.Year(), u.Month(), 1, 0, 0, 0, 0, time.UTC)
	}
	return t.Add(-period)
}

// MonthLength returns the length of t's calendar month in UTC (28 to 31
// days): the period a calendar-month objective's burn-rate factors scale
// with (0.02 × 744 h / 1 h = 14.88 for the 1h/5m row of a 31-day month).
func MonthLength(t time.Time) time.Duration {
	start := PeriodStart(t, 0, true)
	return start.AddDate(0, 1, 0).Sub(start)
}

// BurnDown returns, at every step of h, the error budget remaining over the
// compliance period up to that step (BudgetRemaining of the counts of the
// steps inside (PeriodStart(Times[i]), Times[i]]): the burn-down chart. A
// rolling period slides (what leaves the window is forgiven); a calendar
// month starts again at 100 % on the 1st. Only the steps h holds count:
// callers ask the history from the period start of the first step shown.
func (h History) BurnDown(target float64, period time.Duration, calendarMonth bool) []Budget {
	p := h.prefix()
	out := make([]Budget, len(h.Counts))
	for i, t := range h.Times {
		start := PeriodStart(t, period, calendarMonth)
		// First step j whose interval (Times[j] − Resolution, Times[j]] starts at or after start.
		j := sort.Search(len(h.Times), func(k int) bool { return !h.Times[k].Add(-h.Resolution).Before(start) })
		if j > i {
			out[i] = Budget{1, 1, 1}
			continue
		}
		out[i] = BudgetRemaining(p[i+1].Sub(p[j]), target)
	}
	return out
}
