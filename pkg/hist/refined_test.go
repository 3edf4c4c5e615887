package hist

import (
	"encoding/binary"
	"math"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// withinBounds reports whether e.Value is NaN or inside [e.Lower, e.Upper].
func withinBounds(e Estimate) bool {
	if math.IsNaN(e.Value) {
		return true
	}
	return e.Value >= e.Lower && e.Value <= e.Upper
}

func TestRefinedDegenerate(t *testing.T) {
	typical := []Bucket{{0.1, 2}, {0.25, 10}, {0.5, 40}, {1, 90}, {2.5, 99}, {inf, 100}}
	cases := []struct {
		name       string
		q          float64
		b          []Bucket
		sum, count float64
		reason     string // expected fallback reason fragment; "" = refined
	}{
		{"typical", 0.5, typical, 70, 100, ""},
		{"all in +Inf", 0.5, []Bucket{{0.1, 0}, {1, 0}, {inf, 7}}, 70, 7, "+Inf bucket"},
		{"one bucket", 0.5, []Bucket{{inf, 7}}, 7, 7, "undefined"},
		{"zero count", 0.5, []Bucket{{0.1, 0}, {inf, 0}}, 0, 0, "undefined"},
		{"empty", 0.5, nil, 0, 0, "undefined"},
		{"q NaN", math.NaN(), typical, 70, 100, "undefined"},
		{"mean below the buckets (counter reset)", 0.5, typical, 1, 100, "outside the range"},
		{"mean above the buckets", 0.5, []Bucket{{0.1, 2}, {1, 10}, {inf, 10}}, 20, 10, "outside the range"},
		{"no mean", 0.5, typical, 0, 0, "mean not available"},
		{"NaN sum", 0.5, typical, math.NaN(), 100, "mean not available"},
		{"negative mean", 0.5, typical, -5, 100, "mean not positive"},
		{"NaN count in a bucket", 0.3, []Bucket{{0.1, 10}, {1, 50}, {2, math.NaN()}, {inf, 100}}, 50, 100, "not finite"},
		{"negative counts", 0.3, []Bucket{{0.1, -5}, {1, 50}, {inf, 100}}, 50, 100, "negative"},
		{"non-positive lowest bound", 0.5, []Bucket{{0, 10}, {1, 50}, {inf, 100}}, 40, 100, "not positive"},
		{"clamped low", 0.05, []Bucket{{0, 10}, {1, 50}, {inf, 100}}, 40, 100, "lowest bucket bound"},
		{"unknown estimator", 0.5, typical, 70, 100, "unknown estimator"},
	}
	for _, tc := range cases {
		e := EstimatorRefined
		if tc.name == "unknown estimator" {
			e = "magic"
		}
		var got Estimate
		require.NotPanics(t, func() { got = QuantileWith(e, tc.q, tc.b, tc.sum, tc.count) }, tc.name)
		assert.Truef(t, withinBounds(got), "%s: %v outside [%v, %v]", tc.name, got.Value, got.Lower, got.Upper)
		prom := Quantile(tc.q, tc.b)
		// Bounds never change with the estimator.
		sameFloat(t, prom.Lower, got.Lower, tc.name+" lower")
		sameFloat(t, prom.Upper, got.Upper, tc.name+" upper")
		if tc.reason == "" {
			assert.Equalf(t, MethodRefined, got.Method, tc.name)
			continue
		}
		assert.Truef(t, strings.HasPrefix(got.Method, "linear-fallback: "), "%s: method %q", tc.name, got.Method)
		assert.Containsf(t, got.Method, tc.reason, tc.name)
		sameFloat(t, prom.Value, got.Value, tc.name+" fallback value")
	}
}

// A histogram whose every observation is in vLLM's first request-phase
// bucket: Prometheus can only say "half of 0.3 s"; the mean moves refined.
func TestRefinedUsesMean(t *testing.T) {
	b := []Bucket{{0.3, 1000}, {0.5, 1000}, {inf, 1000}}
	prom := Quantile(0.5, b)
	assert.InDelta(t, 0.15, prom.Value, 1e-12)
	low := QuantileWith(EstimatorRefined, 0.5, b, 20, 1000)   // mean 20 ms
	high := QuantileWith(EstimatorRefined, 0.5, b, 200, 1000) // mean 200 ms
	require.Equal(t, MethodRefined, low.Method)
	require.Equal(t, MethodRefined, high.Method)
	assert.Less(t, low.Value, 0.02, "median of a right-skewed shape is below its 20 ms mean")
	assert.Greater(t, low.Value, 0.005)
	assert.Greater(t, high.Value, low.Value)
	assert.True(t, low.InLowestBucket)
	assert.Equal(t, 0.0, low.Lower)
	assert.Equal(t, 0.3, low.Upper)
	// Counts or rates: same answer.
	rates := []Bucket{{0.3, 1000.0 / 300}, {0.5, 1000.0 / 300}, {inf, 1000.0 / 300}}
	assert.InDelta(t, low.Value, QuantileWith(EstimatorRefined, 0.5, rates, 20.0/300, 1000.0/300).Value, 1e-9)
}

func FuzzQuantileWith(f *testing.F) {
	seed := func(q, sum, count float64, bs ...float64) []byte {
		var out []byte
		for _, v := range append([]float64{q, sum, count}, bs...) {
			out = binary.LittleEndian.AppendUint64(out, math.Float64bits(v))
		}
		return out
	}
	f.Add(seed(0.5, 70, 100, 0.1, 2, 0.25, 10, 0.5, 40, 1, 90, 2.5, 99, inf, 100))
	f.Add(seed(0.99, 7, 7, 0.1, 0, 1, 0, inf, 7))
	f.Add(seed(0.5, 0, 0, inf, 0))
	f.Add(seed(0.9, 1, 100, 0.3, 50, 0.5, 40, inf, 100))
	f.Add(seed(0.5, -3, 10, 0, 5, 1, math.NaN(), inf, 10))
	f.Add(seed(1, 1e300, 1e-300, 1e-300, 1, 1e300, 2, inf, 3))
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) < 24 {
			return
		}
		get := func(i int) float64 { return math.Float64frombits(binary.LittleEndian.Uint64(data[8*i:])) }
		q, sum, count := get(0), get(1), get(2)
		var b []Bucket
		for i := 3; 8*(i+2) <= len(data) && len(b) < 40; i += 2 {
			b = append(b, Bucket{UpperBound: get(i), Count: get(i + 1)})
		}
		for _, e := range []Estimator{EstimatorPrometheus, EstimatorRefined} {
			got := QuantileWith(e, q, b, sum, count)
			if !withinBounds(got) {
				t.Fatalf("%s q=%v b=%v sum=%v count=%v: value %v outside [%v, %v]", e, q, b, sum, count, got.Value, got.Lower, got.Upper)
			}
		}
		qs := []float64{q, 0.5, 0.99}
		for _, e := range []Estimator{EstimatorPrometheus, EstimatorRefined} {
			for i, got := range QuantilesWith(e, qs, b, sum, count) {
				if !withinBounds(got) {
					t.Fatalf("QuantilesWith %s q=%v b=%v sum=%v count=%v: value %v outside [%v, %v]", e, qs[i], b, sum, count, got.Value, got.Lower, got.Upper)
				}
			}
		}
		fr := FractionBelow(q, b)
		if !math.IsNaN(fr.Value) && (fr.Value < fr.Lower || fr.Value > fr.Upper) {
			t.Fatalf("fraction %v outside [%v, %v]", fr.Value, fr.Lower, fr.Upper)
		}
	})
}

// QuantilesWith must give, for every q, exactly what QuantileWith gives.
func TestQuantilesWithMatchesQuantileWith(t *testing.T) {
	typical := []Bucket{{0.1, 2}, {0.25, 10}, {0.5, 40}, {1, 90}, {2.5, 99}, {inf, 100}}
	qs := []float64{0.5, 0.9, 0.99, 0, 1, 0.999, -0.5, 1.5, math.NaN(), 0.01}
	hists := []struct {
		name       string
		b          []Bucket
		sum, count float64
	}{
		{"typical", typical, 70, 100},
		{"unsorted with duplicate bounds", []Bucket{{1, 90}, {0.25, 10}, {inf, 100}, {0.5, 40}, {1.0, 0}, {0.1, 2}}, 70, 100},
		{"mean outside the buckets", typical, 1, 100},
		{"no mean", typical, 0, 0},
		{"all in +Inf", []Bucket{{0.1, 0}, {1, 0}, {inf, 7}}, 70, 7},
		{"non-positive lowest bound", []Bucket{{0, 10}, {1, 50}, {inf, 100}}, 40, 100},
		{"empty", nil, 0, 0},
		{"first request-phase bucket only", []Bucket{{0.3, 1000}, {0.5, 1000}, {inf, 1000}}, 20, 1000},
	}
	for _, h := range hists {
		for _, e := range []Estimator{EstimatorPrometheus, EstimatorRefined, "", "magic"} {
			got := QuantilesWith(e, qs, h.b, h.sum, h.count)
			require.Len(t, got, len(qs))
			for i, q := range qs {
				want := QuantileWith(e, q, h.b, h.sum, h.count)
				msg := h.name + " " + string(e)
				sameFloat(t, want.Value, got[i].Value, msg+" value q=%v", q)
				sameFloat(t, want.Lower, got[i].Lower, msg+" lower q=%v", q)
				sameFloat(t, want.Upper, got[i].Upper, msg+" upper q=%v", q)
				sameFloat(t, want.Count, got[i].Count, msg+" count q=%v", q)
				assert.Equalf(t, want.Clamp, got[i].Clamp, msg+" clamp q=%v", q)
				assert.Equalf(t, want.InLowestBucket, got[i].InLowestBucket, msg+" lowest q=%v", q)
				assert.Equalf(t, want.Method, got[i].Method, msg+" method q=%v", q)
			}
		}
	}
	assert.Empty(t, QuantilesWith(EstimatorRefined, nil, typical, 70, 100))
	// The input is not modified.
	in := []Bucket{{1, 90}, {0.25, 10}, {inf, 100}, {0.5, 40}}
	QuantilesWith(EstimatorRefined, qs, in, 50, 100)
	assert.Equal(t, []Bucket{{1, 90}, {0.25, 10}, {inf, 100}, {0.5, 40}}, in)
}
