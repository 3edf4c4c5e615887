package slo

import (
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/inferscope/inferscope-llm-datasource/pkg/hist"
)

// TestThresholdNoticesNameTargets: a 3 s objective over three targets: a and c use vLLM's
// TTFT layout (…, 2.5, 5, …: 3 s lies between), b a layout with a 3 s bound. The notice names
// a and c, not b, and says b has the bound; with only b nothing is said.
func TestThresholdNoticesNameTargets(t *testing.T) {
	vllm := []hist.Bucket{{UpperBound: 1}, {UpperBound: 2.5}, {UpperBound: 5}, {UpperBound: math.Inf(1)}}
	own := []hist.Bucket{{UpperBound: 1}, {UpperBound: 3}, {UpperBound: 10}, {UpperBound: math.Inf(1)}}
	got := ThresholdNotices(3, map[string][]hist.Bucket{"a": vllm, "b": own, "c": vllm})
	assert.Equal(t, []string{"targets a, c: 3 s is not a bucket bound: it lies between le=2.5 and le=5, so attainment is interpolated between the exact fractions at those bounds (it is a bound for b)"}, got)
	assert.Empty(t, ThresholdNotices(3, map[string][]hist.Bucket{"b": own}))
	assert.Equal(t, []string{"target a: 3 s is not a bucket bound: it lies between le=2.5 and le=5, so attainment is interpolated between the exact fractions at those bounds"},
		ThresholdNotices(3, map[string][]hist.Bucket{"a": vllm}))
}

// TestDisprovedReportIsUnknown: every TTFT observation ≤ 1 ms (100 requests) with a 0.5 s
// objective would read attainment 1 and "ok". With the histogram's verdict (its mean 0.46 s
// disproves the buckets) the row has no attainment, budget or burn rate, status unknown (value
// NaN: no data for an alert rule), and the verdict's sentence as reason.
func TestDisprovedReportIsUnknown(t *testing.T) {
	b := []hist.Bucket{{UpperBound: 0.001, Count: 100}, {UpperBound: 0.5, Count: 100}, {UpperBound: math.Inf(1), Count: 100}}
	spec := Spec{Profile: "p", Objective: "ttft", Kind: "latency", Signal: "ttft", Threshold: 0.5, Target: 0.99, Period: 24 * time.Hour}
	c := LatencyCounts(0.5, b)
	w := Windowed{Range: c, Period: c, Burn: map[time.Duration]Counts{}, RangeBuckets: b}
	for _, win := range Windows {
		w.Burn[win] = c
	}
	ok := NewReport(spec, nil, w, spec.Period)
	assert.Equal(t, 1.0, ok.Attainment)
	assert.Equal(t, OK, ok.Status)
	w.Disproved = "ttft: the histogram contradicts itself"
	r := NewReport(spec, nil, w, spec.Period)
	assert.Equal(t, Unknown, r.Status)
	assert.Equal(t, w.Disproved, r.Reason)
	assert.True(t, math.IsNaN(r.Attainment) && math.IsNaN(r.Budget.Remaining) && math.IsNaN(r.Quantile.Value))
	for _, win := range Windows {
		assert.True(t, math.IsNaN(r.Burn[win]))
	}
	assert.True(t, math.IsNaN(Unknown.Value()))
}
