package enginemodel

import "sort"

// Histogram is a classic Prometheus histogram with le-inclusive buckets
// (a value equal to a bound lands in that bound's bucket, as in
// prometheus_client and client_golang). counts are per bucket, not
// cumulative; the last element is the +Inf bucket.
type Histogram struct {
	bounds []float64
	counts []uint64
	sum    float64
	count  uint64
}

func newHistogram(bounds []float64) *Histogram {
	return &Histogram{bounds: bounds, counts: make([]uint64, len(bounds)+1)}
}

func (h *Histogram) observe(v float64) { h.observeN(v, 1) }

// observeN records n observations of v.
func (h *Histogram) observeN(v float64, n uint64) {
	i := sort.SearchFloat64s(h.bounds, v)
	h.counts[i] += n
	h.sum += v * float64(n)
	h.count += n
}

func (h *Histogram) reset() {
	clear(h.counts)
	h.sum, h.count = 0, 0
}

// Count is the number of observations.
func (h *Histogram) Count() uint64 { return h.count }

// Sum is the sum of the observed values (the histogram's unit).
func (h *Histogram) Sum() float64 { return h.sum }

// Cumulative returns the bucket map client_golang's const histograms take: per upper
// bound, the count of observations at or under it (the +Inf bucket is Count).
func (h *Histogram) Cumulative() map[float64]uint64 {
	m := make(map[float64]uint64, len(h.bounds))
	var c uint64
	for i, b := range h.bounds {
		c += h.counts[i]
		m[b] = c
	}
	return m
}

// Default bucket lists (engines.md §1.2 and §1.3).
var (
	bucketsTTFTV0    = []float64{0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5, 10}
	bucketsTTFTV1    = []float64{0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5, 10, 20, 40, 80, 160, 640, 2560}
	bucketsTPOTV0    = []float64{0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1, 2.5}
	bucketsTPOTV1    = []float64{0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1, 2.5, 5, 7.5, 10, 20, 40, 80}
	bucketsLatencyV0 = []float64{0.3, 0.5, 0.8, 1, 1.5, 2, 2.5, 5, 10, 15, 20, 30, 40, 50, 60}
	bucketsLatencyV1 = []float64{0.3, 0.5, 0.8, 1, 1.5, 2, 2.5, 5, 10, 15, 20, 30, 40, 50, 60, 120, 240, 480, 960, 1920, 7680}
	bucketsIterV1    = []float64{1, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384}
	bucketsParamsN   = []float64{1, 2, 5, 10, 20}
)

// bucketsIterV0 are V0's CUDA-graph capture sizes: 1, 2, 4, then 8..256 step 8.
func bucketsIterV0() []float64 {
	b := []float64{1, 2, 4}
	for i := 8; i <= 256; i += 8 {
		b = append(b, float64(i))
	}
	return b
}

// buckets125 is vLLM's build_1_2_5_buckets: 1, 2, 5, 10, 20, 50, … while ≤ max.
func buckets125(maxValue int) []float64 {
	var b []float64
	for e := 1.0; ; e *= 10 {
		for _, m := range []float64{1, 2, 5} {
			v := m * e
			if v > float64(maxValue) {
				return b
			}
			b = append(b, v)
		}
	}
}
