package hist

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// bucketsOf counts observations into cumulative buckets with the given
// finite bounds (+Inf added).
func bucketsOf(obs []float64, bounds ...float64) []Bucket {
	out := make([]Bucket, 0, len(bounds)+1)
	for _, b := range append(slices.Clone(bounds), math.Inf(1)) {
		n := 0
		for _, v := range obs {
			if v <= b {
				n++
			}
		}
		out = append(out, Bucket{UpperBound: b, Count: float64(n)})
	}
	return out
}

func repeat(v float64, n int) []float64 {
	out := make([]float64, n)
	for i := range out {
		out[i] = v
	}
	return out
}

// The example: A has bounds {0.1, 1} and 100 requests at 0.05 s, B
// has {0.5} and 100 requests at 0.3 s. Summing buckets puts B's requests
// "above 1 s"; merging layouts keeps the truth (0.3 s) inside the bounds.
func TestQuantilesMergedDifferentLayouts(t *testing.T) {
	a := bucketsOf(repeat(0.05, 100), 0.1, 1)
	b := bucketsOf(repeat(0.3, 100), 0.5)
	r := QuantilesMerged(EstimatorPrometheus, []float64{0.25, 0.75, 0.9}, [][]Bucket{a, b}, math.NaN(), math.NaN())
	require.Len(t, r.Layouts, 2)
	// By hand, merged interpolated cumulative counts at the union {0.1, 0.5, 1, +Inf}:
	// 0.1 → 100 + 100·0.1/0.5 = 120, 0.5 → 200, 1 → 200. p75 (rank 150) lies in (0.1, 0.5]:
	// 0.1 + 0.4·(150−120)/(200−120) = 0.25; p90 (rank 180): 0.1 + 0.4·60/80 = 0.4.
	assert.InDelta(t, 0.25, r.Estimates[1].Value, 1e-12)
	assert.InDelta(t, 0.4, r.Estimates[2].Value, 1e-12)
	// Bounds: at 0.1 the merged count is between 100 and 200, at 0.5 it is exactly 200,
	// so rank 150 and 180 are certainly ≤ 0.5 and possibly ≤ 0.1: [0, 0.5] holds 0.3.
	for _, e := range r.Estimates[1:] {
		assert.Equal(t, 0.0, e.Lower)
		assert.Equal(t, 0.5, e.Upper)
		assert.Equal(t, NotClamped, e.Clamp)
	}
	// p25 (rank 50): 0.1 holds at least 100 → upper 0.1; value 0.1·50/120.
	assert.InDelta(t, 0.1*50/120, r.Estimates[0].Value, 1e-12)
	assert.Equal(t, 0.1, r.Estimates[0].Upper)
}

// One layout: the result is QuantilesWith on the summed buckets, i.e.
// histogram_quantile over sum by (le); an idle histogram of another layout
// changes nothing.
func TestQuantilesMergedSameLayoutIsTheSum(t *testing.T) {
	a := bucketsOf([]float64{0.05, 0.2, 0.7, 3}, 0.1, 0.5, 1)
	b := bucketsOf([]float64{0.3, 0.4, 0.9}, 0.1, 0.5, 1)
	idle := bucketsOf(nil, 0.25, 2)
	sum := make([]Bucket, len(a))
	for i := range a {
		sum[i] = Bucket{UpperBound: a[i].UpperBound, Count: a[i].Count + b[i].Count}
	}
	qs := []float64{0.5, 0.9, 0.99}
	r := QuantilesMerged(EstimatorPrometheus, qs, [][]Bucket{a, idle, b}, math.NaN(), math.NaN())
	assert.Len(t, r.Layouts, 1)
	assert.Equal(t, QuantilesWith(EstimatorPrometheus, qs, sum, math.NaN(), math.NaN()), r.Estimates)
	// No observations anywhere: NaN, as for one histogram.
	r = QuantilesMerged(EstimatorPrometheus, qs, [][]Bucket{idle, bucketsOf(nil, 0.1)}, math.NaN(), math.NaN())
	assert.True(t, math.IsNaN(r.Estimates[0].Value))
}

// Property: for random observations split over two or three layouts, the
// true rank-⌈qN⌉ quantile of all observations lies in [Lower, Upper] and so
// does the value, for both estimators.
func TestQuantilesMergedBoundsHoldTheTruth(t *testing.T) {
	rng := rand.New(rand.NewPCG(10, 2))
	layouts := [][]float64{
		{0.1, 1},
		{0.5},
		{0.001, 0.005, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5, 10},
		{0.3, 0.5, 0.8, 1, 1.5, 2, 2.5, 5, 10, 15, 20, 30},
	}
	qs := []float64{0.01, 0.25, 0.5, 0.75, 0.9, 0.95, 0.99}
	checked := 0
	for trial := 0; trial < 400; trial++ {
		n := 2 + rng.IntN(2)
		var parts [][]Bucket
		var all []float64
		sum := 0.0
		for k := 0; k < n; k++ {
			scale := math.Exp(rng.NormFloat64()*1.5 - 1)
			obs := make([]float64, 1+rng.IntN(300))
			for i := range obs {
				obs[i] = scale * math.Exp(rng.NormFloat64()*0.8)
				sum += obs[i]
			}
			all = append(all, obs...)
			parts = append(parts, bucketsOf(obs, layouts[rng.IntN(len(layouts))]...))
		}
		slices.Sort(all)
		for _, est := range []Estimator{EstimatorPrometheus, EstimatorRefined} {
			r := QuantilesMerged(est, qs, parts, sum, float64(len(all)))
			for i, q := range qs {
				e := r.Estimates[i]
				truth := all[int(math.Ceil(q*float64(len(all))))-1]
				require.Truef(t, e.Lower <= truth && truth <= e.Upper, "trial %d %s q=%v: truth %v outside [%v, %v]", trial, est, q, truth, e.Lower, e.Upper)
				require.Truef(t, e.Lower <= e.Value && e.Value <= e.Upper, "trial %d %s q=%v: value %v outside [%v, %v]", trial, est, q, e.Value, e.Lower, e.Upper)
				checked++
			}
		}
	}
	assert.Equal(t, 400*2*len(qs), checked)
}
