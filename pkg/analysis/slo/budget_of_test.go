package slo

import (
	"testing"
	"time"
)

// TestBudgetOfSaysTheSpanStored: a budget over a 30d period with one hour stored is the
// hour's budget and says so; with the period covered, or the coverage unknown (0), it is the
// period's. Expected phrases written by hand.
func TestBudgetOfSaysTheSpanStored(t *testing.T) {
	day := 24 * time.Hour
	for _, c := range []struct {
		covered time.Duration
		want    string
	}{
		{time.Hour, "budget of the 1h stored (30d not yet covered)"},
		{59*time.Minute + 40*time.Second, "budget of the 1h stored (30d not yet covered)"},
		{90 * time.Minute, "budget of the 1h30m stored (30d not yet covered)"},
		{2*day + 3*time.Hour, "budget of the 2d3h stored (30d not yet covered)"},
		{10 * time.Second, "budget of the 1m stored (30d not yet covered)"},
		{30 * day, "30d budget"},
		{30*day - 10*time.Second, "30d budget"},
		{0, "30d budget"},
	} {
		r := Report{Spec: Spec{Period: 30 * day, PeriodName: "30d"}, Covered: c.covered}
		if got := r.BudgetOf(); got != c.want {
			t.Errorf("covered %v: %q, want %q", c.covered, got, c.want)
		}
	}
}
