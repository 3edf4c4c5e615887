package hist

import (
	"math"
	"math/rand/v2"
	"slices"
)

// vLLM's default bucket sets (vllm/v1/metrics/loggers.py, vLLM 0.11).
var (
	requestPhaseBounds = []float64{0.3, 0.5, 0.8, 1, 1.5, 2, 2.5, 5, 10, 15, 20, 30, 40, 50, 60, 120, 240, 480, 960, 1920, 7680}
	ttftBounds         = []float64{0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5, 10, 20, 40, 80, 160, 640, 2560}
	itlBounds          = []float64{0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1, 2.5, 5, 7.5, 10, 20, 40, 80}
)

// sampler draws one observation (seconds); jitter in [0.7, 1.4] scales the
// distribution so trials do not all sit at the same place relative to the
// bucket bounds.
type sampler func(r *rand.Rand, jitter float64) float64

func logNormalSampler(median, sigma float64) sampler {
	return func(r *rand.Rand, j float64) float64 {
		return median * j * math.Exp(sigma*r.NormFloat64())
	}
}

// gammaSampler: shape k, scale theta (mean k·theta); Marsaglia & Tsang
// (2000), with the k < 1 boost U^(1/k).
func gammaSampler(k, theta float64) sampler {
	return func(r *rand.Rand, j float64) float64 {
		return theta * j * gammaDraw(r, k)
	}
}

func gammaDraw(r *rand.Rand, k float64) float64 {
	if k < 1 {
		return gammaDraw(r, k+1) * math.Pow(r.Float64(), 1/k)
	}
	d := k - 1.0/3
	c := 1 / math.Sqrt(9*d)
	for {
		x := r.NormFloat64()
		v := 1 + c*x
		if v <= 0 {
			continue
		}
		v = v * v * v
		u := r.Float64()
		if math.Log(u) < 0.5*x*x+d-d*v+d*math.Log(v) {
			return d * v
		}
	}
}

// weibullSampler: shape k, scale lambda, by inversion.
func weibullSampler(k, lambda float64) sampler {
	return func(r *rand.Rand, j float64) float64 {
		return lambda * j * math.Pow(-math.Log(1-r.Float64()), 1/k)
	}
}

// mixtureSampler: with probability w from a, else from b.
func mixtureSampler(w float64, a, b sampler) sampler {
	return func(r *rand.Rand, j float64) float64 {
		if r.Float64() < w {
			return a(r, j)
		}
		return b(r, j)
	}
}

type scenario struct {
	name   string // distribution, with realistic meaning
	set    string // bucket set name
	bounds []float64
	draw   sampler
}

// scenarios covers each bucket set with log-normal, gamma, Weibull and a
// bimodal mixture at parameters typical of LLM serving.
func scenarios() []scenario {
	return []scenario{
		// Request phases: queue time (median ~20 ms) and decode time (seconds).
		{"queue lognormal med 20ms s=1", "request", requestPhaseBounds, logNormalSampler(0.02, 1)},
		{"queue gamma k=0.6 mean 35ms", "request", requestPhaseBounds, gammaSampler(0.6, 0.058)},
		{"queue weibull k=0.7 scale 25ms", "request", requestPhaseBounds, weibullSampler(0.7, 0.025)},
		{"queue bimodal 80% 8ms / 20% 1.2s", "request", requestPhaseBounds, mixtureSampler(0.8, logNormalSampler(0.008, 0.6), logNormalSampler(1.2, 0.5))},
		{"decode lognormal med 4s s=0.6", "request", requestPhaseBounds, logNormalSampler(4, 0.6)},
		{"decode gamma k=3 mean 4.5s", "request", requestPhaseBounds, gammaSampler(3, 1.5)},
		{"decode weibull k=1.5 scale 5s", "request", requestPhaseBounds, weibullSampler(1.5, 5)},
		{"decode bimodal 60% 1.5s / 40% 12s", "request", requestPhaseBounds, mixtureSampler(0.6, logNormalSampler(1.5, 0.4), logNormalSampler(12, 0.4))},
		// TTFT.
		{"ttft lognormal med 250ms s=0.7", "ttft", ttftBounds, logNormalSampler(0.25, 0.7)},
		{"ttft gamma k=2 mean 300ms", "ttft", ttftBounds, gammaSampler(2, 0.15)},
		{"ttft weibull k=1.2 scale 400ms", "ttft", ttftBounds, weibullSampler(1.2, 0.4)},
		{"ttft bimodal 70% 60ms / 30% 1.2s", "ttft", ttftBounds, mixtureSampler(0.7, logNormalSampler(0.06, 0.3), logNormalSampler(1.2, 0.5))},
		// ITL / TPOT: median ~18 ms, p99 ~30 ms.
		{"tpot lognormal med 18ms s=0.22", "itl", itlBounds, logNormalSampler(0.018, 0.22)},
		{"tpot gamma k=16 mean 19ms", "itl", itlBounds, gammaSampler(16, 0.0012)},
		{"tpot weibull k=4 scale 21ms", "itl", itlBounds, weibullSampler(4, 0.021)},
		{"tpot bimodal 85% 15ms / 15% 45ms", "itl", itlBounds, mixtureSampler(0.85, logNormalSampler(0.015, 0.15), logNormalSampler(0.045, 0.2))},
	}
}

// trial is one bucketed sample with its exact answers.
type trial struct {
	buckets    []Bucket
	sum, count float64
	sorted     []float64
}

// makeTrial draws n observations and buckets them the way a Prometheus
// client does (an observation equal to a bound counts in that bucket).
// scale divides counts and sum, as rate() over a window would.
func makeTrial(r *rand.Rand, s scenario, n int, jitter, scale float64) trial {
	xs := make([]float64, n)
	sum := 0.0
	for i := range xs {
		xs[i] = s.draw(r, jitter)
		sum += xs[i]
	}
	slices.Sort(xs)
	bs := make([]Bucket, 0, len(s.bounds)+1)
	k := 0
	for _, ub := range s.bounds {
		for k < n && xs[k] <= ub {
			k++
		}
		bs = append(bs, Bucket{UpperBound: ub, Count: float64(k) / scale})
	}
	bs = append(bs, Bucket{UpperBound: math.Inf(1), Count: float64(n) / scale})
	return trial{buckets: bs, sum: sum / scale, count: float64(n) / scale, sorted: xs}
}

// trueQuantile is the ceil(q·n)-th smallest observation (at least the
// first): the rank convention of histogram_quantile's bucket search, under
// which the bucket holding cumulative rank q·n contains this observation.
func trueQuantile(sorted []float64, q float64) float64 {
	k := int(math.Ceil(q * float64(len(sorted))))
	k = max(k, 1)
	return sorted[k-1]
}

func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	n := len(s)
	if n == 0 {
		return math.NaN()
	}
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}
