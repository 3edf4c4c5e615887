package hist

import (
	"encoding/binary"
	"math"
	"testing"
)

// bucketsFrom decodes fuzz bytes into buckets: each 16 bytes are one
// (upper bound, count) pair of float64 bits, so NaN, ±Inf, negative counts
// and unsorted bounds all occur.
func bucketsFrom(data []byte) []Bucket {
	var b []Bucket
	for len(data) >= 16 {
		b = append(b, Bucket{
			UpperBound: math.Float64frombits(binary.LittleEndian.Uint64(data)),
			Count:      math.Float64frombits(binary.LittleEndian.Uint64(data[8:])),
		})
		data = data[16:]
	}
	return b
}

// within reports whether a finite v lies in [lo, hi] up to rounding: linear
// interpolation inside a bucket (Prometheus's formula) can land a few ulps
// outside its edges (found by this fuzz target: testdata/fuzz/FuzzHist).
// Non-finite values and bounds are not checked.
func within(v, lo, hi float64) bool {
	for _, x := range []float64{v, lo, hi} {
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return true
		}
	}
	tol := 1e-12 * math.Max(math.Abs(lo), math.Abs(hi))
	return v >= lo-tol && v <= hi+tol
}

// bucketBytes encodes buckets for a seed.
func bucketBytes(b []Bucket) []byte {
	out := make([]byte, 0, 16*len(b))
	for _, x := range b {
		out = binary.LittleEndian.AppendUint64(out, math.Float64bits(x.UpperBound))
		out = binary.LittleEndian.AppendUint64(out, math.Float64bits(x.Count))
	}
	return out
}

// FuzzHist: Quantile, FractionBelow and the refined estimator never panic on
// any buckets; on any input Quantile and FractionBelow equal Prometheus's
// histogram_quantile and histogram_fraction (promql.BucketQuantile and
// BucketFraction, v0.316) except for NaN bounds, which hist drops, and a
// finite quantile of either estimator lies within Prometheus's bucket.
func FuzzHist(f *testing.F) {
	// vLLM's TTFT bounds with a realistic cumulative distribution.
	f.Add(bucketBytes([]Bucket{{0.001, 0}, {0.005, 2}, {0.01, 10}, {0.02, 30}, {0.04, 55}, {0.06, 70}, {0.08, 80}, {0.1, 88}, {0.25, 97}, {0.5, 99}, {inf, 100}}), 0.99, 0.05)
	f.Add(bucketBytes([]Bucket{{1, 5}, {inf, 5}}), 0.5, 1.0)
	f.Add(bucketBytes([]Bucket{{inf, 3}}), 0.9, 2.0)
	f.Add(bucketBytes([]Bucket{{2, 10}, {1, 4}, {inf, 9}, {math.NaN(), 1}}), 0.3, -1.0)
	f.Add(bucketBytes(nil), 0.5, 0.1)
	f.Fuzz(func(t *testing.T, data []byte, q, threshold float64) {
		b := bucketsFrom(data)
		in := append([]Bucket(nil), b...)
		// NaN bounds are dropped by Normalize (ParseLe refuses them), where
		// Prometheus returns NaN: the oracle applies to the rest.
		nanBound := false
		for _, x := range in {
			nanBound = nanBound || math.IsNaN(x.UpperBound)
		}
		e := Quantile(q, b)
		if want := oracleQuantile(q, in); !nanBound && !(math.IsNaN(want) && math.IsNaN(e.Value)) && want != e.Value {
			t.Fatalf("Quantile(%v, %v) = %v, histogram_quantile says %v", q, in, e.Value, want)
		}
		if !within(e.Value, e.Lower, e.Upper) {
			t.Fatalf("Quantile(%v, %v) = %v outside its bounds [%v, %v]", q, in, e.Value, e.Lower, e.Upper)
		}
		fr := FractionBelow(threshold, b)
		if want := oracleFraction(threshold, in); !nanBound && !(math.IsNaN(want) && math.IsNaN(fr.Value)) && want != fr.Value {
			t.Fatalf("FractionBelow(%v, %v) = %v, histogram_fraction says %v", threshold, in, fr.Value, want)
		}
		sum := 0.0
		count := 0.0
		if len(b) > 0 {
			count = b[len(b)-1].Count
			sum = count * 0.05
		}
		for _, est := range []Estimator{EstimatorPrometheus, EstimatorRefined} {
			r := QuantileWith(est, q, b, sum, count)
			if !within(r.Value, e.Lower, e.Upper) {
				t.Fatalf("%s quantile %v of %v outside Prometheus's bucket [%v, %v]", est, r.Value, in, e.Lower, e.Upper)
			}
		}
		for i := range b {
			if math.Float64bits(b[i].UpperBound) != math.Float64bits(in[i].UpperBound) || math.Float64bits(b[i].Count) != math.Float64bits(in[i].Count) {
				t.Fatalf("the input buckets were modified: %v, was %v", b, in)
			}
		}
	})
}
