package slo

import (
	"math"
	"strconv"
	"testing"
	"time"

	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/inferscope/inferscope-llm-datasource/pkg/hist"
)

// vllmTTFT08 is vLLM's default TTFT layout from 0.8 on (…1.0, 2.5, 5.0…20, 40…);
// vllmTTFT06 the 0.6 layout, which ends at 10 s.
var (
	vllmTTFT08 = []float64{0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5, 10, 20, 40, 80, 160, 640, 2560}
	vllmTTFT06 = []float64{0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5, 10}
	custom2s   = []float64{0.5, 1, 2, 4}
)

// layoutSamples writes one histogram's cumulative bucket rates: n
// observations, all in the bucket whose upper bound is `at`.
func layoutSamples(labels model.Metric, bounds []float64, at, n float64) model.Vector {
	var v model.Vector
	for _, b := range append(append([]float64{}, bounds...), math.Inf(1)) {
		c := 0.0
		if b >= at {
			c = n
		}
		m := labels.Clone()
		m["le"] = model.LabelValue(strconv.FormatFloat(b, 'f', -1, 64))
		if math.IsInf(b, 1) {
			m["le"] = "+Inf"
		}
		v = append(v, &model.Sample{Metric: m, Value: model.SampleValue(c)})
	}
	return v
}

// sumByLe is what `sum by (le)` across targets gives: buckets added bound by bound.
func sumByLe(v model.Vector) []hist.Bucket {
	_, b, _ := BucketVector(stripJob(v))
	for _, x := range b {
		return x
	}
	return nil
}

func stripJob(v model.Vector) model.Vector {
	var out model.Vector
	for _, s := range v {
		m := model.Metric{"le": s.Metric["le"]}
		out = append(out, &model.Sample{Metric: m, Value: s.Value})
	}
	return out
}

func TestMixedLayoutsAreExactAtEveryGroupBy(t *testing.T) {
	// Target a on vLLM's default TTFT layout: 100 requests, all in (0.5, 0.75]
	// s, 50 on engine 0 and 50 on engine 1. Target b on a custom layout with a
	// 2 s bound: 100 requests, all in (1, 2] s, engine 0. Every request is
	// under 2 s: the truth is attainment 1 at TTFT ≤ 2 s.
	a0 := model.Metric{"job": "a", "model_name": "m", "engine": "0"}
	a1 := model.Metric{"job": "a", "model_name": "m", "engine": "1"}
	b0 := model.Metric{"job": "b", "model_name": "m", "engine": "0"}
	v := append(append(layoutSamples(a0, vllmTTFT08, 0.75, 50), layoutSamples(a1, vllmTTFT08, 0.75, 50)...), layoutSamples(b0, custom2s, 2, 100)...)

	// Bucket by bucket (the old sum by (le)): le=2 holds only b's 100 of the
	// 200 requests, and 2 s is a bound of the sum, so it reads "exact" 0.5;
	// at target 0.99 the budget is 1 − 0.5/0.01 = −49 (−4900 %).
	old := LatencyCounts(2, sumByLe(v))
	assert.InDelta(t, 0.5, old.Good/old.Total, 1e-12)
	assert.InDelta(t, -49, BudgetRemaining(old, 0.99).Remaining, 1e-9)

	// Per layout, then added: a's 2 s lies between 1 and 2.5 where its count
	// is already 100 of 100 (bracket [1, 1]); b's 2 s is a bound, 100 of 100.
	for _, groupBy := range [][]string{nil, {"model"}, {"target"}, {"engine"}, {"target", "model"}} {
		ls, bad := LayeredVector(v, groupBy)
		require.Zero(t, bad)
		for _, l := range ls {
			c := l.Counts(2)
			v, lo, hi := c.Attainment()
			assert.Equal(t, []float64{1, 1, 1}, []float64{v, lo, hi}, "groupBy %v group %v", groupBy, l.Group.Labels)
			assert.Equal(t, 1.0, BudgetRemaining(c, 0.99).Remaining)
			assert.Equal(t, 0.0, BurnRate(c, 0.99))
		}
		// Request totals by group, by hand.
		totals := map[string]float64{}
		for _, l := range ls {
			totals[l.Group.Key] = l.Counts(2).Total
		}
		switch len(groupBy) {
		case 0:
			assert.Equal(t, map[string]float64{"": 200}, totals)
		}
		if len(groupBy) == 1 && groupBy[0] == "engine" {
			// engine 0: a's 50 + b's 100; engine 1: a's 50.
			assert.Equal(t, map[string]float64{"engine=0,": 150, "engine=1,": 50}, totals)
			// The old sum at engine 0 would read 100 of 150.
			var e0 model.Vector
			for _, s := range v {
				if s.Metric["engine"] == "0" {
					e0 = append(e0, s)
				}
			}
			o := LatencyCounts(2, sumByLe(e0))
			assert.InDelta(t, 100.0/150, o.Good/o.Total, 1e-12)
		}
		if len(groupBy) == 1 && groupBy[0] == "target" {
			assert.Equal(t, map[string]float64{"target=a,": 100, "target=b,": 100}, totals)
		}
	}
	ls, _ := LayeredVector(v, nil)
	assert.Equal(t, 2, ls[0].Layouts())
	assert.False(t, ls[0].Locate(2).Exact, "2 s is not a bound of a's layout")
	// The p99 of both: every request is at most 2 s; the merged bracket says so.
	q := ls[0].Quantile(0.99)
	assert.LessOrEqual(t, q.Upper, 2.0)
}

func TestBatchObjectiveOverTwoVLLMLayouts(t *testing.T) {
	// Batch TTFT ≤ 30 s over a vLLM 0.6 target (layout ends at 10 s) and a
	// 0.8 target, 100 requests each, all in (5, 7.5] s.
	v := append(layoutSamples(model.Metric{"job": "v06", "model_name": "m"}, vllmTTFT06, 7.5, 100),
		layoutSamples(model.Metric{"job": "v08", "model_name": "m"}, vllmTTFT08, 7.5, 100)...)
	// Bucket by bucket: le=20 and le=40 hold only v08's 100 of 200; 30 s
	// interpolates between them to 100 → 0.5, budget 1 − 0.5/0.01 = −49.
	old := LatencyCounts(30, sumByLe(v))
	assert.InDelta(t, 0.5, old.Good/old.Total, 1e-12)
	assert.InDelta(t, -49, BudgetRemaining(old, 0.99).Remaining, 1e-9)
	// Per layout: v06 has 100 at its top finite bound 10 s (bracket [1, 1]:
	// nothing in +Inf); v08 100 at 20 s. Sum 200 of 200.
	for _, groupBy := range [][]string{nil, {"model"}, {"target"}} {
		ls, _ := LayeredVector(v, groupBy)
		for _, l := range ls {
			_, lo, hi := l.Counts(30).Attainment()
			assert.Equal(t, []float64{1, 1}, []float64{lo, hi}, "groupBy %v", groupBy)
		}
	}
}

func TestLayeredHistoryAddsPerLayout(t *testing.T) {
	// The same two targets as TestMixedLayoutsAreExactAtEveryGroupBy as a
	// range result of rates over 1-minute steps: 2 steps, a at 1 req/s and
	// b at 3 req/s, all under 2 s. groupBy none: 4 req/s × 60 s = 240 a
	// step, all good; burn 0 on every window.
	t0 := time.Date(2026, 1, 1, 0, 1, 0, 0, time.UTC)
	steps := []time.Time{t0, t0.Add(time.Minute)}
	var m model.Matrix
	add := func(v model.Vector) {
		for _, s := range v {
			m = append(m, &model.SampleStream{Metric: s.Metric, Values: []model.SamplePair{
				{Timestamp: model.TimeFromUnixNano(steps[0].UnixNano()), Value: s.Value},
				{Timestamp: model.TimeFromUnixNano(steps[1].UnixNano()), Value: s.Value}}})
		}
	}
	add(layoutSamples(model.Metric{"job": "a", "model_name": "m"}, vllmTTFT08, 0.75, 1))
	add(layoutSamples(model.Metric{"job": "b", "model_name": "m"}, custom2s, 2, 3))
	groups, hs, ls := LayeredHistory(m, steps, time.Minute, 2, nil)
	require.Len(t, groups, 1)
	h := hs[groups[0].Key]
	for _, c := range h.Counts {
		assert.InDelta(t, 240, c.Total, 1e-9)
		assert.InDelta(t, 240, c.GoodLower, 1e-9)
	}
	burn, _ := h.BurnSeries(0.99, 30*24*time.Hour)
	assert.Equal(t, 0.0, burn[5*time.Minute][1])
	assert.Len(t, ls[groups[0].Key].Parts, 2)
	// By model the same; by target two groups of 60 and 180 a step.
	groups, hs, _ = LayeredHistory(m, steps, time.Minute, 2, []string{"target"})
	require.Len(t, groups, 2)
	assert.InDelta(t, 60, hs[groups[0].Key].Counts[0].Total, 1e-9)
	assert.InDelta(t, 180, hs[groups[1].Key].Counts[0].Total, 1e-9)
}
