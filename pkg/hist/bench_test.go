package hist

import (
	"math"
	"math/rand/v2"
	"testing"
)

// benchHistogram is a vLLM TTFT histogram (22 finite buckets + +Inf) of
// 4001 log-normal requests, as rates over a 5-minute window.
func benchHistogram() trial {
	r := rand.New(rand.NewPCG(7, 7))
	return makeTrial(r, scenario{bounds: ttftBounds, draw: logNormalSampler(0.25, 0.7)}, 4001, 1, 300)
}

var benchSink float64

func BenchmarkQuantilePrometheus(b *testing.B) {
	tl := benchHistogram()
	b.ReportAllocs()
	for b.Loop() {
		benchSink += QuantileWith(EstimatorPrometheus, 0.99, tl.buckets, tl.sum, tl.count).Value
	}
}

func BenchmarkQuantileRefined(b *testing.B) {
	tl := benchHistogram()
	b.ReportAllocs()
	for b.Loop() {
		e := QuantileWith(EstimatorRefined, 0.99, tl.buckets, tl.sum, tl.count)
		if e.Method != MethodRefined {
			b.Fatal(e.Method)
		}
		benchSink += e.Value
	}
}

func BenchmarkFractionBelow(b *testing.B) {
	tl := benchHistogram()
	b.ReportAllocs()
	for b.Loop() {
		benchSink += FractionBelow(0.5, tl.buckets).Value
	}
	_ = math.NaN()
}
