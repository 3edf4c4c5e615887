package baseline

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/inferscope/inferscope-llm-datasource/pkg/bench"
	"github.com/inferscope/inferscope-llm-datasource/pkg/hist"
)

func ttft(counts ...float64) map[string]map[string][]hist.Bucket {
	les := []float64{0.1, 0.2, 0.4, 0.8, math.Inf(1)}
	b := make([]hist.Bucket, len(les))
	for i := range les {
		b[i] = hist.Bucket{UpperBound: les[i], Count: counts[i]}
	}
	return map[string]map[string][]hist.Bucket{"ttft": {"a": b}}
}

// Hand-made windows: at 5 req/s (kept, baseline rate 5 ± 25 %) the TTFT
// buckets are {0.1: 0, 0.2: 2.5, 0.4: 4.5, 0.8: 5, +Inf: 5}; the busy
// window at 9 req/s is left out. Merged over the two kept windows:
// {0.2: 5, 0.4: 9, 0.8: 10, +Inf: 10}. p50 = rank 5 = exactly 0.2 (bucket
// (0.1, 0.2]); p90 = rank 9 = 0.4 (bucket (0.2, 0.4]); p99 = rank 9.9 →
// 0.4 + 0.4 × 0.9/1 = 0.76 (bucket (0.4, 0.8]).
func TestSelectAndCompareByHand(t *testing.T) {
	ws := []Window{
		{RequestRate: 5, OutputTokens: 600, Buckets: ttft(0, 2.5, 4.5, 5, 5)},
		{RequestRate: 9, OutputTokens: 1000, Buckets: ttft(0, 0, 0, 1, 9)},
		{RequestRate: 4.5, OutputTokens: 560, Buckets: ttft(0, 2.5, 4.5, 5, 5)},
		{RequestRate: 0, OutputTokens: 0},
	}
	b := bench.Baseline{RequestRate: 5, MeanConcurrency: math.NaN(), Concurrency: 32, OutputThroughput: 640, RequestThroughput: 5,
		Stages: map[string]bench.Metric{"ttft": {Percentiles: []bench.Percentile{{P: 50, Value: 0.11}, {P: 90, Value: 0.18}, {P: 99, Value: 0.4}}}}}
	sel := Select(ws, b, 0.25)
	assert.Equal(t, ByRequestRate, sel.Basis)
	assert.Equal(t, []bool{true, false, true, false}, sel.Keep)
	assert.Equal(t, 2, sel.Kept)
	assert.Equal(t, 3, sel.WithRequests)
	assert.Contains(t, sel.Description, "within ±25% of the baseline's 5 req/s: 2 of 3")

	rows := Compare(b, ws, sel, 0.1)
	byKey := map[string]Row{}
	for _, r := range rows {
		byKey[r.Metric+"/"+r.Stat] = r
	}
	p50 := byKey["ttft/p50"]
	assert.InDelta(t, 0.2, p50.Production, 1e-12)
	assert.InDelta(t, 0.2/0.11, p50.Ratio, 1e-12)
	assert.Equal(t, AsBenchmark, p50.Verdict, "p50 lies in (0.1, 0.2]: 0.1 is not above 0.11 × 1.1, the bucket cannot tell")
	p99 := byKey["ttft/p99"]
	assert.InDelta(t, 0.76, p99.Production, 1e-12)
	assert.InDelta(t, 1.9, p99.Ratio, 1e-12)
	assert.Equal(t, Worse, byKey["ttft/p90"].Verdict, "p90 lies in (0.2, 0.4]: even 0.2 exceeds 0.18 × 1.1 = 0.198")
	assert.Equal(t, AsBenchmark, p99.Verdict, "p99 lies in (0.4, 0.8]: 0.4 is not above 0.44")
	out := byKey["output_throughput/mean"]
	assert.InDelta(t, 580, out.Production, 1e-12)
	assert.Equal(t, AsBenchmark, out.Verdict, "580 is within 10 % of 640 (576)")
	assert.Equal(t, NoBaseline, byKey["itl/p50"].Verdict)
	require.Len(t, rows, 14)
}
