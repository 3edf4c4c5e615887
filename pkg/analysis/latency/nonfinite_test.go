package latency

import (
	"math"
	"testing"
	"time"

	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/inferscope/inferscope-llm-datasource/pkg/analysis"
	"github.com/inferscope/inferscope-llm-datasource/pkg/analysis/sanity"
	"github.com/inferscope/inferscope-llm-datasource/pkg/catalog"
	"github.com/inferscope/inferscope-llm-datasource/pkg/hist"
)

// TestBreakdownLeavesOutNonFiniteRates: target a, 2 req/s: per request queue 0.05 s, prefill
// 0.2, decode 1.5, inference 1.7, E2E 1.8 (overhead 1.8 − 0.05 − 1.7 = 0.05). Target b holds
// the same shape but its E2E _sum rate is +Inf (an infinite sample in the store): it is left out
// of every part as a target lacking E2E, so the row is a's alone, never +Inf or NaN.
func TestBreakdownLeavesOutNonFiniteRates(t *testing.T) {
	st := steps(2)
	mk := func(sumA, sumB, count float64) MeanInput {
		return MeanInput{
			Sum:   model.Matrix{constSeries(model.Metric{"job": "a"}, sumA, st), constSeries(model.Metric{"job": "b"}, sumB, st)},
			Count: model.Matrix{constSeries(model.Metric{"job": "a"}, count, st), constSeries(model.Metric{"job": "b"}, count, st)},
		}
	}
	in := map[catalog.Signal]MeanInput{
		catalog.QueueTime: mk(0.1, 0.1, 2), catalog.PrefillTime: mk(0.4, 0.4, 2), catalog.DecodeTime: mk(3, 3, 2),
		catalog.InferenceTime: mk(3.4, 3.4, 2), catalog.E2E: mk(3.6, math.Inf(1), 2),
	}
	var notes analysis.Notices
	got := map[string]float64{}
	for _, s := range BreakdownBy(in, st, "job", &notes) {
		got[s.Labels["stage"]] = s.Values[1]
	}
	assert.InDelta(t, 0.05, got["queue"], 1e-12)
	assert.InDelta(t, 0.2, got["prefill"], 1e-12)
	assert.InDelta(t, 1.5, got["decode"], 1e-12)
	assert.InDelta(t, 0.05, got["overhead"], 1e-12)
}

// TestQuantileAtTheLastPartialStep: by model m, bucket rates 2, 6, 8, 10 obs/s for le 0.1, 0.5,
// 1, +Inf at three steps, _sum 4/s and _count 10/s; the windowed increases (delta) are there
// at the first two steps only (at the last, partial step delta saw one sample). By hand the
// p50 is 0.1 + 0.4·(5 − 2)/(6 − 2) = 0.4 at every step, like the mean 4/10 = 0.4: the last step
// has both, not the mean alone.
func TestQuantileAtTheLastPartialStep(t *testing.T) {
	st := steps(3)
	rate := bucketMatrix("a", st, []string{"0.1", "0.5", "1.0", "+Inf"}, []float64{2, 6, 8, 10})
	inc := bucketMatrix("a", st[:2], []string{"0.1", "0.5", "1.0", "+Inf"}, []float64{120, 360, 480, 600})
	for _, m := range []model.Matrix{rate, inc} {
		for _, s := range m {
			delete(s.Metric, "job")
			s.Metric["model_name"] = "m"
		}
	}
	in := Input{Stage: "ttft", Buckets: rate, Increases: inc, Window: time.Minute,
		Sum:    model.Matrix{constSeries(model.Metric{"model_name": "m"}, 4, st)},
		Count:  model.Matrix{constSeries(model.Metric{"model_name": "m"}, 10, st)},
		Resets: model.Matrix{constSeries(model.Metric{"model_name": "m"}, 0, st)},
	}
	p50, _ := ParseStat("p50")
	mean, _ := ParseStat("mean")
	var notes analysis.Notices
	got := map[string][]float64{}
	for _, s := range Compute(in, st, Options{Stats: []Stat{mean, p50}, Estimator: hist.EstimatorPrometheus}, &notes) {
		got[s.Name] = s.Values
	}
	require.Len(t, got["ttft p50"], 3)
	for i := range st {
		assert.InDelta(t, 0.4, got["ttft mean"][i], 1e-12, "mean at step %d", i)
		assert.InDelta(t, 0.4, got["ttft p50"][i], 1e-12, "p50 at step %d", i)
	}
}

// TestVerdictBlanksDisprovedQuantiles: TTFT with every observation ≤ 1 ms (10/s in le=0.001,
// none above) and a mean of 4.6/10 = 0.46 s at the first two steps; at the third the _sum is
// 0.005/s (mean 0.0005 s, consistent). The p50 and its bounds are blanked at the two
// contradicted steps and kept at the third (0.0005 s, as the buckets give: rank 5 of 10 in
// (0, 0.001]); the mean stays at every step.
func TestVerdictBlanksDisprovedQuantiles(t *testing.T) {
	st := steps(3)
	b := bucketMatrix("a", st, []string{"0.001", "0.5", "+Inf"}, []float64{10, 10, 10})
	sum := &model.SampleStream{Metric: model.Metric{"job": "a"}}
	for i, v := range []float64{4.6, 4.6, 0.005} {
		sum.Values = append(sum.Values, model.SamplePair{Timestamp: model.TimeFromUnixNano(st[i].UnixNano()), Value: model.SampleValue(v)})
	}
	count := model.Matrix{constSeries(model.Metric{"job": "a"}, 10, st)}
	in := Input{Stage: catalog.TTFT, Buckets: b, Sum: model.Matrix{sum}, Count: count}
	p50, _ := ParseStat("p50")
	mean, _ := ParseStat("mean")
	var notes analysis.Notices
	out := Compute(in, st, Options{Stats: []Stat{mean, p50}, Estimator: hist.EstimatorPrometheus, Bounds: true}, &notes)
	vs := sanity.JudgeHistogram(string(catalog.TTFT), b, model.Matrix{sum}, count, st)
	assert.Equal(t, 6, ApplyVerdicts(out, vs), "p50, lower, upper at two steps")
	got := map[string][]float64{}
	for _, s := range out {
		got[s.Name] = s.Values
	}
	for _, name := range []string{"ttft p50", "ttft p50 lower", "ttft p50 upper"} {
		assert.True(t, math.IsNaN(got[name][0]) && math.IsNaN(got[name][1]), name)
	}
	assert.InDelta(t, 0.0005, got["ttft p50"][2], 1e-12)
	assert.InDelta(t, 0.46, got["ttft mean"][0], 1e-12)
	assert.InDelta(t, 0.0005, got["ttft mean"][2], 1e-12)
	require.Len(t, vs.Sentences(), 1)
	assert.Contains(t, vs.Sentences()[0], "(2 steps)")
}
