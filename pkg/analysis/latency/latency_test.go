package latency

import (
	"math"
	"testing"
	"time"

	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/inferscope/inferscope-llm-datasource/pkg/analysis"
	"github.com/inferscope/inferscope-llm-datasource/pkg/catalog"
	"github.com/inferscope/inferscope-llm-datasource/pkg/hist"
)

var t0 = time.Unix(1_700_000_000, 0)

func steps(n int) []time.Time {
	return analysis.Steps(t0, t0.Add(time.Duration(n-1)*15*time.Second), 15*time.Second)
}

func constSeries(labels model.Metric, v float64, st []time.Time) *model.SampleStream {
	s := &model.SampleStream{Metric: labels}
	for _, t := range st {
		s.Values = append(s.Values, model.SamplePair{Timestamp: model.TimeFromUnixNano(t.UnixNano()), Value: model.SampleValue(v)})
	}
	return s
}

func bucketMatrix(job string, st []time.Time, les []string, counts []float64) model.Matrix {
	var m model.Matrix
	for i, le := range les {
		m = append(m, constSeries(model.Metric{"le": model.LabelValue(le), "job": model.LabelValue(job)}, counts[i], st))
	}
	return m
}

func TestParseStat(t *testing.T) {
	s, err := ParseStat("p99.9")
	require.NoError(t, err)
	assert.InDelta(t, 0.999, s.Quantile, 1e-12)
	m, err := ParseStat("mean")
	require.NoError(t, err)
	assert.True(t, m.IsMean())
	for _, bad := range []string{"p0", "p100", "median", "pabc", "p-1"} {
		_, err := ParseStat(bad)
		assert.Error(t, err, bad)
	}
}

func TestComputeQuantilesMeansAndBounds(t *testing.T) {
	st := steps(3)
	// Per-second bucket rates: 2 obs/s ≤ 0.1 s, 6 ≤ 0.5 s, 8 ≤ 1 s, 10 in all.
	in := Input{
		Stage:   catalog.TTFT,
		Buckets: bucketMatrix("a", st, []string{"0.1", "0.5", "1.0", "+Inf"}, []float64{2, 6, 8, 10}),
		Sum:     model.Matrix{constSeries(model.Metric{"job": "a"}, 4, st)},
		Count:   model.Matrix{constSeries(model.Metric{"job": "a"}, 10, st)},
	}
	p50, _ := ParseStat("p50")
	p99, _ := ParseStat("p99")
	mean, _ := ParseStat("mean")
	var notes analysis.Notices
	out := Compute(in, st, Options{Stats: []Stat{mean, p50, p99}, Estimator: hist.EstimatorPrometheus, Bounds: true}, &notes)
	byName := map[string]analysis.Series{}
	for _, s := range out {
		byName[s.Name] = s
		assert.Equal(t, "a", s.Labels["target"])
		assert.Equal(t, "s", s.Unit)
	}
	require.Len(t, out, 7) // mean + (p50, lower, upper) + (p99, lower, upper)
	// By hand: mean = 4/10; p50 rank 5 lies in (0.1, 0.5] holding counts 2..6 → 0.1 + 0.4·(5−2)/(6−2) = 0.4.
	assert.InDelta(t, 0.4, byName["ttft mean"].Values[2], 1e-12)
	assert.InDelta(t, 0.4, byName["ttft p50"].Values[2], 1e-12)
	assert.Equal(t, 0.1, byName["ttft p50 lower"].Values[2])
	assert.Equal(t, 0.5, byName["ttft p50 upper"].Values[2])
	// p99 rank 9.9 lies in the +Inf bucket: Prometheus returns the highest finite bound, 1.
	assert.Equal(t, 1.0, byName["ttft p99"].Values[0])
	// Its upper bound is unknown: NaN (a null in the frame), never +Inf.
	assert.True(t, math.IsNaN(byName["ttft p99 upper"].Values[0]))
	var clamped bool
	for _, n := range notes.List() {
		if n.Severity == analysis.Warning {
			clamped = true
			assert.Contains(t, n.Text, "+Inf bucket")
		}
	}
	assert.True(t, clamped, "a clamped quantile must give a notice")
}

func TestComputeMergesLeSpellings(t *testing.T) {
	st := steps(1)
	// Two targets grouped together, one exposing le="1" (Go client), one le="1.0" (Python).
	m := append(bucketMatrix("x", st, []string{"0.5", "1", "+Inf"}, []float64{1, 3, 4}),
		bucketMatrix("y", st, []string{"0.5", "1.0", "+Inf"}, []float64{1, 1, 4})...)
	for _, s := range m {
		delete(s.Metric, "job") // grouped by none
	}
	p50, _ := ParseStat("p50")
	var notes analysis.Notices
	out := Compute(Input{Stage: catalog.E2E, Buckets: m}, st, Options{Stats: []Stat{p50}, Estimator: hist.EstimatorPrometheus}, &notes)
	require.Len(t, out, 1)
	// Merged: ≤0.5: 2, ≤1: 4, +Inf: 8. Rank 4 → exactly at the 1 s bound: 0.5 + 0.5·(4−2)/(4−2) = 1.
	assert.InDelta(t, 1.0, out[0].Values[0], 1e-12)
}

func TestComputeNoRequestsIsNaNNotZero(t *testing.T) {
	st := steps(2)
	in := Input{Stage: catalog.TTFT,
		Buckets: bucketMatrix("a", st, []string{"0.1", "+Inf"}, []float64{0, 0}),
		Sum:     model.Matrix{constSeries(model.Metric{"job": "a"}, 0, st)},
		Count:   model.Matrix{constSeries(model.Metric{"job": "a"}, 0, st)}}
	mean, _ := ParseStat("mean")
	p90, _ := ParseStat("p90")
	var notes analysis.Notices
	for _, s := range Compute(in, st, Options{Stats: []Stat{mean, p90}}, &notes) {
		for _, v := range s.Values {
			assert.True(t, math.IsNaN(v), "%s must be no data, not %v", s.Name, v)
		}
	}
}

func TestBreakdownOverheadIsE2EMinusQueueMinusInference(t *testing.T) {
	st := steps(2)
	mk := func(sum, count float64) MeanInput {
		return MeanInput{Sum: model.Matrix{constSeries(model.Metric{"job": "a"}, sum, st)}, Count: model.Matrix{constSeries(model.Metric{"job": "a"}, count, st)}}
	}
	// 2 req/s; per request: queue 0.05, prefill 0.2, decode 1.5, inference 1.7, e2e 1.8.
	in := map[catalog.Signal]MeanInput{
		catalog.QueueTime: mk(0.1, 2), catalog.PrefillTime: mk(0.4, 2), catalog.DecodeTime: mk(3, 2),
		catalog.InferenceTime: mk(3.4, 2), catalog.E2E: mk(3.6, 2),
	}
	got := map[string]float64{}
	for _, s := range Breakdown(in, st) {
		got[s.Labels["stage"]] = s.Values[1]
	}
	assert.InDelta(t, 0.05, got["queue"], 1e-12)
	assert.InDelta(t, 0.2, got["prefill"], 1e-12)
	assert.InDelta(t, 1.5, got["decode"], 1e-12)
	assert.InDelta(t, 0.05, got["overhead"], 1e-12)
}

func TestBreakdownTable(t *testing.T) {
	vec := func(v float64) model.Vector {
		return model.Vector{&model.Sample{Metric: model.Metric{"job": "a"}, Value: model.SampleValue(v)}}
	}
	in := map[catalog.Signal]InstantMean{
		catalog.QueueTime: {Sum: vec(1), Count: vec(0.5)}, catalog.PrefillTime: {Sum: vec(0.5), Count: vec(0.5)},
		catalog.DecodeTime: {Sum: vec(2), Count: vec(0.5)}, catalog.InferenceTime: {Sum: vec(2.5), Count: vec(0.5)},
		catalog.E2E: {Sum: vec(3.6), Count: vec(0.5)},
	}
	rows := BreakdownTable(in, 10*time.Minute)
	require.Len(t, rows, 1)
	r := rows[0]
	assert.InDelta(t, 2.0, r.Queue, 1e-12)
	assert.InDelta(t, 1.0, r.Prefill, 1e-12)
	assert.InDelta(t, 4.0, r.Decode, 1e-12)
	assert.InDelta(t, 7.2, r.Total, 1e-12)
	assert.InDelta(t, 0.2, r.Overhead, 1e-9) // 7.2 − 2 − 5
	assert.InDelta(t, 300, r.Requests, 1e-9) // 0.5 req/s × 600 s
}

func TestComputeMeanFromInfBucketWhenCountIsNil(t *testing.T) {
	st := steps(1)
	in := Input{Stage: catalog.E2E,
		Buckets: bucketMatrix("a", st, []string{"1", "+Inf"}, []float64{3, 4}),
		Sum:     model.Matrix{constSeries(model.Metric{"job": "a"}, 6, st)}}
	mean, _ := ParseStat("mean")
	var notes analysis.Notices
	out := Compute(in, st, Options{Stats: []Stat{mean}}, &notes)
	require.Len(t, out, 1)
	assert.InDelta(t, 1.5, out[0].Values[0], 1e-12) // 6 s of latency over 4 requests (the +Inf bucket)
}

func TestComputeWithoutInfBucketSaysWhy(t *testing.T) {
	st := steps(2)
	in := Input{Stage: catalog.TTFT, Buckets: bucketMatrix("a", st, []string{"0.1", "1"}, []float64{2, 4})}
	p50, _ := ParseStat("p50")
	var notes analysis.Notices
	out := Compute(in, st, Options{Stats: []Stat{p50}}, &notes)
	require.Len(t, out, 1)
	assert.True(t, math.IsNaN(out[0].Values[0]))
	require.Len(t, notes.List(), 1)
	assert.Contains(t, notes.List()[0].Text, "no +Inf bucket")
}
