package buckets

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/inferscope/inferscope-llm-datasource/pkg/hist"
)

func bk(le, c float64) hist.Bucket { return hist.Bucket{UpperBound: le, Count: c} }

// ttft is a slice of vLLM's TTFT layout: 50 requests ≤ 1 s, 80 ≤ 2.5 s, all ≤ 5 s.
var ttft = []hist.Bucket{bk(1, 50), bk(2.5, 80), bk(5, 100), bk(math.Inf(1), 100)}

func TestQuantileAdvice(t *testing.T) {
	// p90: rank 90 falls in (2.5, 5] holding 20 → 2.5 + 2.5·10/20 = 3.75;
	// the bucket is 2.5/3.75 = 66.7 % of the value wide.
	a := ForQuantile(0.9, ttft)
	assert.Equal(t, 3.75, a.Value)
	assert.Equal(t, 2.5, a.Lower)
	assert.Equal(t, 5.0, a.Upper)
	assert.InDelta(t, 2.5/3.75, a.RelativeWidth, 1e-12)
	// 3.75·1.08^k for k = −3…3, three significant digits, inside (2.885, 4.875).
	assert.Equal(t, []float64{2.98, 3.22, 3.47, 3.75, 4.05, 4.37, 4.72}, a.Extra)
	assert.Equal(t, []float64{1, 2.5, 2.98, 3.22, 3.47, 3.75, 4.05, 4.37, 4.72, 5}, a.Bounds)
	// With the extra bounds the bucket holding 3.75 is (3.47, 3.75]: 7.5 %.
	assert.Less(t, (3.75-3.47)/3.75, MaxError)
	// A quantile already in a narrow bucket needs nothing.
	narrow := []hist.Bucket{bk(1, 0), bk(1.05, 100), bk(math.Inf(1), 100)}
	assert.Empty(t, ForQuantile(0.5, narrow).Extra)
}

func TestClampedQuantileAdvice(t *testing.T) {
	// p90 in the +Inf bucket: clamped at 2.5, the layout is extended upward.
	a := ForQuantile(0.9, []hist.Bucket{bk(1, 50), bk(2.5, 80), bk(math.Inf(1), 100)})
	assert.Equal(t, hist.ClampedHigh, a.Clamp)
	assert.Equal(t, 2.5, a.Value)
	assert.True(t, math.IsInf(a.RelativeWidth, 1))
	assert.Equal(t, []float64{2.7, 2.92, 3.15, 3.4, 3.67, 3.97, 4.28, 4.63}, a.Extra)
}

func TestThresholdAdvice(t *testing.T) {
	// 2.5 s is a bound: exact, nothing to add.
	a := ForThreshold(2.5, ttft)
	assert.True(t, a.Exact)
	assert.Zero(t, a.RelativeWidth)
	assert.Empty(t, a.Extra)
	// 3 s lies in (2.5, 5]: width 2.5/3; adding 3 itself makes it exact.
	a = ForThreshold(3, ttft)
	assert.False(t, a.Exact)
	assert.Equal(t, 2.5, a.Lower)
	assert.Equal(t, 5.0, a.Upper)
	assert.InDelta(t, 2.5/3, a.RelativeWidth, 1e-12)
	assert.Equal(t, []float64{3}, a.Extra)
	assert.Equal(t, `{"time_to_first_token":[1,2.5,3,5]}`, CustomBucketsJSON(VLLMFamily("ttft"), a.Bounds))
	// Above the highest finite bound: clamped, unbounded bucket.
	a = ForThreshold(8, ttft)
	assert.Equal(t, hist.ClampedHigh, a.Clamp)
	assert.True(t, math.IsInf(a.RelativeWidth, 1))
	assert.Equal(t, "inter_token_latency", VLLMFamily("tpot"))
	assert.Equal(t, "request_latency", VLLMFamily("queue_time"))
}

// TestLiesIn (issue 33): the "p99 lies in 250–500 ms" cue of a wide bucket,
// from hand-set advice and from TestQuantileAdvice's ttft layout.
func TestLiesIn(t *testing.T) {
	q := func(r, v, lo, hi float64) Advice {
		w := (hi - lo) / v
		return Advice{Kind: KindQuantile, Requested: r, Value: v, Lower: lo, Upper: hi, RelativeWidth: w}
	}
	// 0.4 s in (0.25, 0.5]: 0.25/0.4 = 62.5 % wide.
	assert.Equal(t, "p99 lies in 250–500 ms", LiesIn(q(0.99, 0.4, 0.25, 0.5)))
	// (0.5, 1]: the lower bound in ms, the upper in s.
	assert.Equal(t, "p99.9 lies in 500 ms–1 s", LiesIn(q(0.999, 0.8, 0.5, 1)))
	assert.Equal(t, "p50 lies in 0–5 ms", LiesIn(q(0.5, 0.002, 0, 0.005)))
	// +Inf bucket above the highest bound 10 s.
	assert.Equal(t, "p99 lies above 10 s (the highest finite bound)", LiesIn(Advice{Kind: KindQuantile, Requested: 0.99, Value: 10, Lower: 10, Upper: math.Inf(1), RelativeWidth: math.Inf(1)}))
	// 1.05 − 1 = 0.05 of 1.02: 4.9 %, under MaxError: no cue.
	assert.Empty(t, LiesIn(q(0.99, 1.02, 1, 1.05)))
	// A threshold, and an undefined quantile (no requests), get none.
	assert.Empty(t, LiesIn(Advice{Kind: KindThreshold, Requested: 0.3, Value: 0.3, Lower: 0.25, Upper: 0.5, RelativeWidth: 0.83}))
	assert.Empty(t, LiesIn(Advice{Kind: KindQuantile, Requested: 0.99, Value: math.NaN(), RelativeWidth: math.NaN()}))
	// TestQuantileAdvice's p90: 3.75 s in (2.5, 5].
	assert.Equal(t, "p90 lies in 2.5–5 s", LiesIn(ForQuantile(0.9, ttft)))
}

// TestRequested: a quantile by its p-name, a threshold with its unit (ms below a second).
func TestRequested(t *testing.T) {
	assert.Equal(t, "p99", Requested(Advice{Kind: KindQuantile, Requested: 0.99}))
	assert.Equal(t, "p99.9", Requested(Advice{Kind: KindQuantile, Requested: 0.999}))
	assert.Equal(t, "p50", Requested(Advice{Kind: KindQuantile, Requested: 0.5}))
	assert.Equal(t, "threshold 3 s", Requested(Advice{Kind: KindThreshold, Requested: 3}))
	assert.Equal(t, "threshold 50 ms", Requested(Advice{Kind: KindThreshold, Requested: 0.05}))
	assert.Equal(t, "threshold 2.5 s", Requested(Advice{Kind: KindThreshold, Requested: 2.5}))
}
