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
