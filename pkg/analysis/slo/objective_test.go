package slo

import (
	"math"
	"testing"
	"time"

	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/assert"

	"github.com/inferscope/inferscope-llm-datasource/pkg/analysis"
	"github.com/inferscope/inferscope-llm-datasource/pkg/settings"
)

// TestObjectiveWindows pins the budget window and the burn-rate factors' period of a rolling
// and a calendar-month objective.
func TestObjectiveWindows(t *testing.T) {
	at := time.Date(2026, 2, 10, 12, 30, 45, 0, time.UTC)
	rolling := Objective{Objective: settings.Objective{Period: 7 * 24 * time.Hour}}
	month := Objective{Objective: settings.Objective{Period: 30 * 24 * time.Hour, CalendarMonth: true}}
	for _, c := range []struct {
		name           string
		o              Objective
		at             time.Time
		budget, factor time.Duration
	}{
		{"rolling period is the period", rolling, at, 7 * 24 * time.Hour, 7 * 24 * time.Hour},
		{"calendar month counts from the 1st, whole minutes", month, at, 9*24*time.Hour + 12*time.Hour + 30*time.Minute, 28 * 24 * time.Hour},
		{"calendar month at the 1st is at least a minute", month, time.Date(2026, 3, 1, 0, 0, 10, 0, time.UTC), time.Minute, 31 * 24 * time.Hour},
	} {
		t.Run(c.name, func(t *testing.T) {
			assert.Equal(t, c.budget, c.o.BudgetWindow(c.at))
			assert.Equal(t, c.factor, c.o.FactorPeriod(c.at))
		})
	}
}

// TestAvailabilityResolution: the scrape interval, coarsened to at most 10,000 samples a window.
func TestAvailabilityResolution(t *testing.T) {
	for _, c := range []struct {
		name      string
		scrape, w time.Duration
		want      time.Duration
	}{
		{"short window keeps the scrape interval", 15 * time.Second, time.Hour, 15 * time.Second},
		{"unset scrape interval is the default", 0, time.Hour, settings.DefaultScrapeInterval},
		{"30d at 15s is 4m20s", 15 * time.Second, 30 * 24 * time.Hour, 4*time.Minute + 20*time.Second},
	} {
		t.Run(c.name, func(t *testing.T) {
			assert.Equal(t, c.want, AvailabilityResolution(c.scrape, c.w))
		})
	}
}

// TestShortDuration: minutes from an hour on, seconds below.
func TestShortDuration(t *testing.T) {
	for _, c := range []struct {
		name string
		d    time.Duration
		want string
	}{
		{"hours round to minutes", 2*time.Hour + 10*time.Minute + 29*time.Second, "2h10m"},
		{"minutes round to seconds", 29*time.Minute + 45*time.Second + 400*time.Millisecond, "29m45s"},
		{"seconds", 45*time.Second + 600*time.Millisecond, "46s"},
	} {
		t.Run(c.name, func(t *testing.T) {
			assert.Equal(t, c.want, ShortDuration(c.d))
		})
	}
}

// TestObjectiveSpec: an error-ratio objective has no threshold; a calendar month is named so.
func TestObjectiveSpec(t *testing.T) {
	o := Objective{Profile: "chat", Objective: settings.Objective{Name: "errors", Kind: settings.KindErrorRatio, Threshold: 1, Target: 0.99, Period: 30 * 24 * time.Hour, CalendarMonth: true}}
	s := o.Spec()
	assert.True(t, math.IsNaN(s.Threshold))
	assert.Equal(t, settings.PeriodCalendarMonth, s.PeriodName)
	assert.Equal(t, "chat", s.Profile)
	assert.Equal(t, "errors", s.Objective)
	o.Kind, o.CalendarMonth = settings.KindLatency, false
	assert.Equal(t, 1.0, o.Spec().Threshold)
	assert.Equal(t, "30d", o.Spec().PeriodName)
}

// TestWindowCountsLatency: bucket rates counted per group at the threshold, scaled by the
// window's seconds.
func TestWindowCountsLatency(t *testing.T) {
	o := Objective{Profile: "chat", Objective: settings.Objective{Name: "ttft", Kind: settings.KindLatency, Signal: "ttft", Threshold: 1}}
	bucket := func(le string, v float64) *model.Sample {
		return &model.Sample{Metric: model.Metric{"job": "a", "le": model.LabelValue(le)}, Value: model.SampleValue(v)}
	}
	var notes analysis.Notices
	counts, layered, groups := o.WindowCounts(model.Vector{bucket("0.5", 1), bucket("1", 3), bucket("+Inf", 4)}, 10, &notes)
	assert.Len(t, groups, 1)
	c := counts[groups[0].Key]
	assert.InDelta(t, 30, c.Good, 1e-9)
	assert.InDelta(t, 40, c.Total, 1e-9)
	assert.Len(t, layered[groups[0].Key].Parts, 1)
	assert.Empty(t, notes.List())
}

// TestDescribeGroup: empty for no label, else the labels in parentheses.
func TestDescribeGroup(t *testing.T) {
	assert.Equal(t, "", DescribeGroup(nil))
	assert.Equal(t, " (target=a)", DescribeGroup(map[string]string{"target": "a"}))
}
