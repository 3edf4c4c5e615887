package hist

import (
	"math"
	"slices"
	"testing"

	"github.com/prometheus/prometheus/promql"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var inf = math.Inf(1)

// oracleQuantile is Prometheus's own histogram_quantile for classic buckets.
func oracleQuantile(q float64, b []Bucket) float64 {
	pb := make(promql.Buckets, len(b))
	for i, x := range b {
		pb[i] = promql.Bucket{UpperBound: x.UpperBound, Count: x.Count}
	}
	v, _, _, _, _, _ := promql.BucketQuantile(q, pb)
	return v
}

// oracleFraction is Prometheus's histogram_fraction(-Inf, t) for classic
// buckets.
func oracleFraction(t float64, b []Bucket) float64 {
	pb := make(promql.Buckets, len(b))
	for i, x := range b {
		pb[i] = promql.Bucket{UpperBound: x.UpperBound, Count: x.Count}
	}
	return promql.BucketFraction(math.Inf(-1), t, pb)
}

func sameFloat(t *testing.T, want, got float64, msg string, args ...any) {
	t.Helper()
	if math.IsNaN(want) {
		assert.Truef(t, math.IsNaN(got), msg+": want NaN, got %v", append(args, got)...)
		return
	}
	assert.Equalf(t, want, got, msg, args...)
}

// sameBits compares bucket slices bit for bit (NaN equals NaN).
func sameBits(a, b []Bucket) bool {
	return slices.EqualFunc(a, b, func(x, y Bucket) bool {
		return math.Float64bits(x.UpperBound) == math.Float64bits(y.UpperBound) &&
			math.Float64bits(x.Count) == math.Float64bits(y.Count)
	})
}

type histCase struct {
	name string
	b    []Bucket
}

// oracleCases are the histograms every Prometheus-compatibility test runs.
var oracleCases = []histCase{
	{"empty", nil},
	{"only +Inf", []Bucket{{inf, 10}}},
	{"only +Inf zero", []Bucket{{inf, 0}}},
	{"no +Inf bucket", []Bucket{{0.1, 1}, {1, 5}}},
	{"single finite bucket plus +Inf", []Bucket{{1, 4}, {inf, 4}}},
	{"all in +Inf", []Bucket{{0.1, 0}, {1, 0}, {inf, 7}}},
	{"zero count", []Bucket{{0.1, 0}, {1, 0}, {inf, 0}}},
	{"typical", []Bucket{{0.1, 2}, {0.25, 10}, {0.5, 40}, {1, 90}, {2.5, 99}, {inf, 100}}},
	{"unsorted", []Bucket{{1, 90}, {inf, 100}, {0.1, 2}, {0.5, 40}, {0.25, 10}, {2.5, 99}}},
	{"non-monotonic", []Bucket{{0.1, 5}, {0.25, 3}, {0.5, 8}, {1, 7}, {inf, 10}}},
	{"non-monotonic top", []Bucket{{0.1, 5}, {0.25, 12}, {inf, 10}}},
	{"duplicate bounds", []Bucket{{0.5, 3}, {0.5, 4}, {1, 10}, {inf, 6}, {inf, 6}}},
	{"tiny float noise", []Bucket{{0.1, 1e12}, {0.2, 1e12 + 1e-3}, {0.3, 1e12 - 1e-3}, {inf, 1e12 + 0.5}}},
	{"negative bounds", []Bucket{{-1, 2}, {0, 5}, {1, 9}, {inf, 10}}},
	{"zero lowest bound", []Bucket{{0, 3}, {1, 9}, {inf, 10}}},
	{"rates", []Bucket{{0.001, 0}, {0.005, 0.0133}, {0.01, 0.21}, {0.02, 1.7}, {0.04, 2.2}, {inf, 2.2}}},
	{"empty lowest bucket", []Bucket{{0.5, 0}, {1, 3}, {inf, 3}}},
	{"NaN count", []Bucket{{0.5, math.NaN()}, {1, 3}, {inf, 4}}},
	{"negative counts", []Bucket{{0.5, -4}, {1, 2}, {inf, 4}}},
}

var oracleQs = []float64{math.NaN(), -0.5, 0, 0.01, 0.1, 0.25, 0.5, 0.75, 0.9, 0.95, 0.99, 0.999, 1, 1.5}

func TestQuantileMatchesPrometheus(t *testing.T) {
	for _, tc := range oracleCases {
		for _, q := range oracleQs {
			orig := slices.Clone(tc.b)
			got := Quantile(q, tc.b)
			want := oracleQuantile(q, slices.Clone(tc.b))
			sameFloat(t, want, got.Value, "%s q=%v", tc.name, q)
			assert.Truef(t, sameBits(orig, tc.b), "%s: input modified", tc.name)
			assert.Equal(t, MethodPrometheus, got.Method)
			// QuantileWith(prometheus) is the same function.
			w := QuantileWith(EstimatorPrometheus, q, tc.b, 1, 1)
			sameFloat(t, want, w.Value, "%s q=%v QuantileWith", tc.name, q)
			if !math.IsNaN(got.Value) {
				assert.GreaterOrEqualf(t, got.Value, got.Lower, "%s q=%v", tc.name, q)
				assert.LessOrEqualf(t, got.Value, got.Upper, "%s q=%v", tc.name, q)
			}
		}
	}
}

func TestQuantileBounds(t *testing.T) {
	typical := []Bucket{{0.1, 2}, {0.25, 10}, {0.5, 40}, {1, 90}, {2.5, 99}, {inf, 100}}
	cases := []struct {
		name                string
		q                   float64
		b                   []Bucket
		value, lower, upper float64
		clamp               Clamp
		lowest              bool
	}{
		// rank 50 of 100 falls in (0.5, 1] holding ranks 41..90: 0.5 + 0.5·10/50.
		{"interior", 0.5, typical, 0.6, 0.5, 1, NotClamped, false},
		// rank 1 in the lowest bucket [0, 0.1] holding 2: 0.1·1/2.
		{"lowest bucket assumed from 0", 0.01, typical, 0.05, 0, 0.1, NotClamped, true},
		// rank 99.5 > 99: +Inf bucket, Prometheus returns 2.5.
		{"+Inf bucket", 0.995, typical, 2.5, 2.5, inf, ClampedHigh, false},
		{"all in +Inf", 0.5, []Bucket{{0.1, 0}, {1, 0}, {inf, 7}}, 1, 1, inf, ClampedHigh, false},
		// lowest bound <= 0: Prometheus returns the bound itself.
		{"non-positive lowest bound", 0.1, []Bucket{{-1, 2}, {0, 5}, {1, 9}, {inf, 10}}, -1, math.Inf(-1), -1, ClampedLow, false},
		// le="1" and le="1.0" parse equal and merge: cumulative 3+3=6 at 1.
		{"single finite bucket", 0.5, []Bucket{{1, 4}, {inf, 4}}, 0.5, 0, 1, NotClamped, true},
	}
	for _, tc := range cases {
		got := Quantile(tc.q, tc.b)
		assert.InDeltaf(t, tc.value, got.Value, 1e-12, tc.name)
		assert.Equalf(t, tc.lower, got.Lower, tc.name)
		assert.Equalf(t, tc.upper, got.Upper, tc.name)
		assert.Equalf(t, tc.clamp, got.Clamp, tc.name)
		assert.Equalf(t, tc.lowest, got.InLowestBucket, tc.name)
	}
	nan := Quantile(0.5, nil)
	assert.True(t, math.IsNaN(nan.Value) && math.IsNaN(nan.Lower) && math.IsNaN(nan.Upper))
	assert.Equal(t, math.Inf(-1), Quantile(-1, []Bucket{{1, 1}, {inf, 1}}).Value)
	assert.Equal(t, math.Inf(1), Quantile(2, []Bucket{{1, 1}, {inf, 1}}).Value)
	assert.Equal(t, 100.0, Quantile(0.5, typical).Count)
}

func TestParseLeAndMerge(t *testing.T) {
	for _, s := range []string{"1", "1.0", "1e0", " 1.00 ", "+1"} {
		v, err := ParseLe(s)
		require.NoErrorf(t, err, s)
		assert.Equalf(t, 1.0, v, s)
	}
	for _, s := range []string{"+Inf", "Inf", "inf"} {
		v, err := ParseLe(s)
		require.NoError(t, err)
		assert.True(t, math.IsInf(v, 1), s)
	}
	v, err := ParseLe("0.005")
	require.NoError(t, err)
	assert.Equal(t, 0.005, v)
	_, err = ParseLe("")
	require.ErrorIs(t, err, ErrEmptyLe)
	_, err = ParseLe("abc")
	require.Error(t, err)
	_, err = ParseLe("NaN")
	require.Error(t, err)

	// Series le="1" and le="1.0" (a target that changed its formatting
	// within the window) are summed, as `sum by (le)` over both would be
	// after Prometheus coalesces equal bounds.
	one, _ := ParseLe("1")
	oneDot, _ := ParseLe("1.0")
	b := []Bucket{{0.5, 2}, {one, 3}, {oneDot, 3}, {inf, 8}}
	n := Normalize(b)
	assert.Equal(t, []Bucket{{0.5, 2}, {1, 6}, {inf, 8}}, n)
	for _, q := range oracleQs {
		sameFloat(t, oracleQuantile(q, slices.Clone(b)), Quantile(q, b).Value, "le merge q=%v", q)
	}
}

func TestNormalize(t *testing.T) {
	assert.Nil(t, Normalize(nil))
	assert.Nil(t, Normalize([]Bucket{{math.NaN(), 3}}))
	in := []Bucket{{inf, 10}, {1, 7}, {0.5, 8}, {0.1, 5}, {math.NaN(), 1}}
	orig := slices.Clone(in)
	// Sorted: 0.1:5, 0.5:8, 1:7 (decrease -> 8), +Inf:10.
	assert.Equal(t, []Bucket{{0.1, 5}, {0.5, 8}, {1, 8}, {inf, 10}}, Normalize(in))
	assert.Equal(t, len(orig), len(in))
	assert.Equal(t, orig[:4], in[:4], "input modified")
	// A relative difference below 1e-12 is float noise: taken as equal.
	noisy := Normalize([]Bucket{{1, 1e12}, {2, 1e12 - 1e-4}, {inf, 1e12 + 1e-4}})
	assert.Equal(t, 1e12, noisy[1].Count)
	assert.Equal(t, 1e12, noisy[2].Count)
}

func TestFractionBelowMatchesPrometheus(t *testing.T) {
	thresholds := []float64{math.Inf(-1), -2, -1, -0.5, 0, 0.05, 0.1, 0.2, 0.25, 0.3, 0.5, 0.7, 1, 2, 2.5, 3, 100, inf, math.NaN()}
	for _, tc := range oracleCases {
		for _, th := range thresholds {
			orig := slices.Clone(tc.b)
			got := FractionBelow(th, tc.b)
			want := oracleFraction(th, slices.Clone(tc.b))
			sameFloat(t, want, got.Value, "%s T=%v", tc.name, th)
			assert.Truef(t, sameBits(orig, tc.b), "%s: input modified", tc.name)
			if !math.IsNaN(got.Value) {
				assert.LessOrEqualf(t, got.Lower, got.Value, "%s T=%v", tc.name, th)
				assert.GreaterOrEqualf(t, got.Upper, got.Value, "%s T=%v", tc.name, th)
			}
		}
	}
}

func TestFractionBelowBounds(t *testing.T) {
	typical := []Bucket{{0.1, 2}, {0.25, 10}, {0.5, 40}, {1, 90}, {2.5, 99}, {inf, 100}}
	// At a bound: exact, 40 of 100.
	f := FractionBelow(0.5, typical)
	assert.Equal(t, FractionEstimate{Value: 0.4, Lower: 0.4, Upper: 0.4, Exact: true}, f)
	// Between 0.5 and 1: 0.4 + 0.5·(0.9−0.4) = 0.65, bounded by 0.4 and 0.9.
	f = FractionBelow(0.75, typical)
	assert.InDelta(t, 0.65, f.Value, 1e-12)
	assert.Equal(t, 0.4, f.Lower)
	assert.Equal(t, 0.9, f.Upper)
	assert.False(t, f.Exact)
	// Inside the lowest bucket: from 0, bounded by [0, 0.02].
	f = FractionBelow(0.05, typical)
	assert.InDelta(t, 0.01, f.Value, 1e-12)
	assert.Equal(t, 0.0, f.Lower)
	assert.Equal(t, 0.02, f.Upper)
	// Above the highest finite bound: nothing of +Inf counted, [0.99, 1].
	f = FractionBelow(10, typical)
	assert.Equal(t, 0.99, f.Value)
	assert.Equal(t, 0.99, f.Lower)
	assert.Equal(t, 1.0, f.Upper)
	f = FractionBelow(inf, typical)
	assert.True(t, f.Exact)
	assert.Equal(t, 1.0, f.Value)
	f = FractionBelow(0.5, []Bucket{{0.5, 1}, {inf, 0}, {inf, 0}})
	assert.True(t, math.IsNaN(f.Value), "zero total count")
}

func TestMean(t *testing.T) {
	assert.Equal(t, 0.25, Mean(1, 4))
	assert.True(t, math.IsNaN(Mean(1, 0)))
	assert.True(t, math.IsNaN(Mean(1, -1)))
	assert.True(t, math.IsNaN(Mean(1, math.NaN())))
}
