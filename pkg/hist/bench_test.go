package hist

import (
	"math/rand/v2"
	"testing"
)

// benchHistogram is a vLLM TTFT histogram (22 finite buckets + +Inf) of
// 4001 log-normal requests, as rates over a 5-minute window.
func benchHistogram() trial {
	r := rand.New(rand.NewPCG(7, 7))
	return makeTrial(r, scenario{bounds: ttftBounds, draw: logNormalSampler(0.25, 0.7)}, 4001, 1, 300)
}

// benchScenarios is one 1001-request histogram per accuracy scenario
// (request-phase, TTFT and ITL bucket sets; log-normal, gamma, Weibull and
// bimodal shapes), as rates over a 5-minute window.
func benchScenarios() []trial {
	var out []trial
	for si, sc := range scenarios() {
		r := rand.New(rand.NewPCG(11, uint64(si)))
		out = append(out, makeTrial(r, sc, 1001, 1, 300))
	}
	return out
}

var (
	benchSink     float64
	benchQuantile = []float64{0.5, 0.9, 0.99}
)

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

// The Scenarios benchmarks cycle through benchScenarios and p50/p90/p99, one
// quantile per op: an average over shapes the fit finds easy and hard.
func BenchmarkQuantilePrometheusScenarios(b *testing.B) {
	tls := benchScenarios()
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		tl := tls[i%len(tls)]
		benchSink += QuantileWith(EstimatorPrometheus, benchQuantile[i%3], tl.buckets, tl.sum, tl.count).Value
		i++
	}
}

func BenchmarkQuantileRefinedScenarios(b *testing.B) {
	tls := benchScenarios()
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		tl := tls[i%len(tls)]
		benchSink += QuantileWith(EstimatorRefined, benchQuantile[i%3], tl.buckets, tl.sum, tl.count).Value
		i++
	}
}

// The Quantiles benchmarks compute p50, p90 and p99 of benchHistogram in
// one call (one op = three quantiles), as a panel showing all three does.
func BenchmarkQuantilesPrometheus3(b *testing.B) {
	tl := benchHistogram()
	b.ReportAllocs()
	for b.Loop() {
		for _, e := range QuantilesWith(EstimatorPrometheus, benchQuantile, tl.buckets, tl.sum, tl.count) {
			benchSink += e.Value
		}
	}
}

func BenchmarkQuantilesRefined3(b *testing.B) {
	tl := benchHistogram()
	b.ReportAllocs()
	for b.Loop() {
		for _, e := range QuantilesWith(EstimatorRefined, benchQuantile, tl.buckets, tl.sum, tl.count) {
			if e.Method != MethodRefined {
				b.Fatal(e.Method)
			}
			benchSink += e.Value
		}
	}
}

func BenchmarkFractionBelow(b *testing.B) {
	tl := benchHistogram()
	b.ReportAllocs()
	for b.Loop() {
		benchSink += FractionBelow(0.5, tl.buckets).Value
	}
}
