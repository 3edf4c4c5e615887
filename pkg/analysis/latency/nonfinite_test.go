package latency

import (
	"math"
	"testing"

	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/assert"

	"github.com/inferscope/inferscope-llm-datasource/pkg/analysis"
	"github.com/inferscope/inferscope-llm-datasource/pkg/catalog"
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
