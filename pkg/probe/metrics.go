package probe

import (
	"math"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
)

// Bucket layouts (seconds). Fine below 100 ms so sub-100 ms SLO thresholds fall
// on a boundary (5, 10, 15, 20, 25, 30, 40, 50, 60, 75, 100 ms).
var (
	// LatencyBuckets are TTFB, TTFT and E2E buckets, 5 ms … 60 s.
	LatencyBuckets = []float64{0.005, 0.01, 0.015, 0.02, 0.025, 0.03, 0.04, 0.05, 0.06, 0.075, 0.1, 0.125, 0.15, 0.2, 0.25, 0.3,
		0.4, 0.5, 0.75, 1, 1.5, 2, 2.5, 3, 4, 5, 7.5, 10, 15, 20, 30, 60}
	// GapBuckets are inter-token gap, TPOT, per-request max gap and stddev buckets, 1 ms … 10 s.
	GapBuckets = []float64{0.001, 0.0025, 0.005, 0.0075, 0.01, 0.0125, 0.015, 0.02, 0.025, 0.03, 0.04, 0.05, 0.06, 0.075,
		0.1, 0.125, 0.15, 0.2, 0.25, 0.3, 0.4, 0.5, 0.75, 1, 1.5, 2, 3, 5, 10}
)

// Metric names (see the package doc).
const (
	Prefix = "inferscope_probe_"

	MetricRequests      = Prefix + "requests_total"
	MetricErrors        = Prefix + "errors_total"
	MetricOutputTokens  = Prefix + "output_tokens_total"
	MetricTTFB          = Prefix + "time_to_first_byte_seconds"
	MetricTTFT          = Prefix + "time_to_first_token_seconds"
	MetricITL           = Prefix + "inter_token_latency_seconds"
	MetricTPOT          = Prefix + "time_per_output_token_seconds"
	MetricE2E           = Prefix + "e2e_request_latency_seconds"
	MetricRequestMaxGap = Prefix + "request_max_inter_token_latency_seconds"
	MetricRequestStddev = Prefix + "request_inter_token_latency_stddev_seconds"
	MetricLastTimestamp = Prefix + "last_request_timestamp_seconds"
	MetricLastSuccess   = Prefix + "last_success"
	MetricLastTTFB      = Prefix + "last_time_to_first_byte_seconds"
	MetricLastTTFT      = Prefix + "last_time_to_first_token_seconds"
	MetricLastE2E       = Prefix + "last_e2e_request_latency_seconds"
	MetricLastTPOT      = Prefix + "last_time_per_output_token_seconds"
	MetricLastMaxGap    = Prefix + "last_max_inter_token_latency_seconds"
	MetricLastVariance  = Prefix + "last_inter_token_latency_variance_seconds2"
	MetricLastOutput    = Prefix + "last_output_tokens"
	MetricInterval      = Prefix + "interval_seconds"
	MetricMaxTokens     = Prefix + "max_tokens"
)

// Metrics holds the probe's collectors on a registry of its own.
type Metrics struct {
	Registry *prometheus.Registry

	requests, errors, outTokens                 *prometheus.CounterVec
	ttfb, ttft, itl, tpot, e2e, maxGap, stddev  *prometheus.HistogramVec
	lastTS, lastOK, lastTTFB, lastTTFT, lastE2E *prometheus.GaugeVec
	lastTPOT, lastMax, lastVar, lastOut         *prometheus.GaugeVec
	interval, maxTokens                         *prometheus.GaugeVec

	mu   sync.Mutex
	last map[string]Result // by endpoint
}

// NewMetrics registers every family on a new registry.
func NewMetrics() *Metrics {
	lbl := []string{"endpoint", "model"}
	m := &Metrics{Registry: prometheus.NewRegistry(), last: map[string]Result{}}
	counter := func(name, help string, extra ...string) *prometheus.CounterVec {
		return prometheus.NewCounterVec(prometheus.CounterOpts{Name: name, Help: help}, append(append([]string{}, lbl...), extra...))
	}
	hist := func(name, help string, b []float64) *prometheus.HistogramVec {
		return prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: name, Help: help, Buckets: b}, lbl)
	}
	gauge := func(name, help string) *prometheus.GaugeVec {
		return prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: name, Help: help}, lbl)
	}
	m.requests = counter(MetricRequests, "Probe requests sent.")
	m.errors = counter(MetricErrors, "Probe requests that failed, by class (connect, timeout, http_429, http_4xx, http_5xx, stream_cut, stream_error, bad_response) and HTTP code.", "class", "code")
	m.outTokens = counter(MetricOutputTokens, "Output tokens received by successful probe requests.")
	m.ttfb = hist(MetricTTFB, "Seconds from sending a probe request to its response headers (successful requests).", LatencyBuckets)
	m.ttft = hist(MetricTTFT, "Seconds from sending a probe request to the first chunk carrying text, as the client sees it (successful requests).", LatencyBuckets)
	m.itl = hist(MetricITL, "Every gap between consecutive text chunks of successful probe streams, seconds.", GapBuckets)
	m.tpot = hist(MetricTPOT, "Per successful request: (last text chunk − first) / (output tokens − 1), seconds.", GapBuckets)
	m.e2e = hist(MetricE2E, "Seconds from sending a probe request to data: [DONE] (successful requests).", LatencyBuckets)
	m.maxGap = hist(MetricRequestMaxGap, "Per successful request: its largest inter-token gap, seconds.", GapBuckets)
	m.stddev = hist(MetricRequestStddev, "Per successful request: the standard deviation of its inter-token gaps (√ population variance), seconds.", GapBuckets)
	m.lastTS = gauge(MetricLastTimestamp, "Unix time the last probe request was sent.")
	m.lastOK = gauge(MetricLastSuccess, "1 when the last probe request succeeded, else 0.")
	m.lastTTFB = gauge(MetricLastTTFB, "Time to first byte of the last successful probe request, seconds.")
	m.lastTTFT = gauge(MetricLastTTFT, "TTFT of the last successful probe request, seconds.")
	m.lastE2E = gauge(MetricLastE2E, "E2E latency of the last successful probe request, seconds.")
	m.lastTPOT = gauge(MetricLastTPOT, "TPOT of the last successful probe request, seconds.")
	m.lastMax = gauge(MetricLastMaxGap, "Largest inter-token gap of the last successful probe request, seconds.")
	m.lastVar = gauge(MetricLastVariance, "Population variance of the inter-token gaps of the last successful probe request, seconds².")
	m.lastOut = gauge(MetricLastOutput, "Output tokens of the last successful probe request.")
	m.interval = gauge(MetricInterval, "Configured interval between two probe requests to one endpoint, seconds.")
	m.maxTokens = gauge(MetricMaxTokens, "Configured max_tokens of one probe request.")
	for _, c := range []prometheus.Collector{m.requests, m.errors, m.outTokens, m.ttfb, m.ttft, m.itl, m.tpot, m.e2e, m.maxGap,
		m.stddev, m.lastTS, m.lastOK, m.lastTTFB, m.lastTTFT, m.lastE2E, m.lastTPOT, m.lastMax, m.lastVar, m.lastOut, m.interval, m.maxTokens} {
		m.Registry.MustRegister(c)
	}
	return m
}

// initErrors are the error series created at zero for every endpoint: a
// counter series that first appears at 1 is invisible to rate() and
// increase() until its second increment, so the usual classes and codes
// start at 0. A 4xx or 5xx code not listed is still counted; its first
// occurrence is then missed by rate().
var initErrors = [][2]string{{ClassConnect, ""}, {ClassTimeout, ""}, {ClassHTTP429, "429"}, {ClassStreamCut, ""},
	{ClassStreamError, ""}, {ClassBadResponse, ""}, {ClassHTTP4xx, "400"}, {ClassHTTP4xx, "401"}, {ClassHTTP4xx, "403"},
	{ClassHTTP4xx, "404"}, {ClassHTTP4xx, "408"}, {ClassHTTP4xx, "413"}, {ClassHTTP4xx, "422"}, {ClassHTTP5xx, "500"},
	{ClassHTTP5xx, "502"}, {ClassHTTP5xx, "503"}, {ClassHTTP5xx, "504"}, {ClassContentFilter, ""}}

// Init creates an endpoint's series at zero (counters, the usual error
// classes and codes, the configured load), so rates start from the first scrape.
func (m *Metrics) Init(endpoint, model string, intervalSeconds float64, maxTokens int) {
	m.requests.WithLabelValues(endpoint, model)
	m.outTokens.WithLabelValues(endpoint, model)
	for _, e := range initErrors {
		m.errors.WithLabelValues(endpoint, model, e[0], e[1])
	}
	m.interval.WithLabelValues(endpoint, model).Set(intervalSeconds)
	m.maxTokens.WithLabelValues(endpoint, model).Set(float64(maxTokens))
}

// Observe records one finished request.
func (m *Metrics) Observe(r Result) {
	l := []string{r.Endpoint, r.Model}
	m.requests.WithLabelValues(l...).Inc()
	m.lastTS.WithLabelValues(l...).Set(float64(r.Start.UnixNano()) / 1e9)
	m.mu.Lock()
	m.last[r.Endpoint] = r
	m.mu.Unlock()
	if !r.OK() {
		m.errors.WithLabelValues(r.Endpoint, r.Model, r.Class, r.Code()).Inc()
		m.lastOK.WithLabelValues(l...).Set(0)
		return
	}
	m.lastOK.WithLabelValues(l...).Set(1)
	m.outTokens.WithLabelValues(l...).Add(float64(r.OutputTokens))
	m.ttfb.WithLabelValues(l...).Observe(r.TTFB)
	m.ttft.WithLabelValues(l...).Observe(r.TTFT)
	m.e2e.WithLabelValues(l...).Observe(r.E2E)
	itl := m.itl.WithLabelValues(l...)
	for _, g := range r.Gaps {
		itl.Observe(g)
	}
	if r.OutputTokens > 1 && len(r.Gaps) > 0 {
		m.tpot.WithLabelValues(l...).Observe(r.TPOT)
		m.maxGap.WithLabelValues(l...).Observe(r.GapMax)
		m.stddev.WithLabelValues(l...).Observe(math.Sqrt(r.GapVariance))
	}
	m.lastTTFB.WithLabelValues(l...).Set(r.TTFB)
	m.lastTTFT.WithLabelValues(l...).Set(r.TTFT)
	m.lastE2E.WithLabelValues(l...).Set(r.E2E)
	m.lastTPOT.WithLabelValues(l...).Set(r.TPOT)
	m.lastMax.WithLabelValues(l...).Set(r.GapMax)
	m.lastVar.WithLabelValues(l...).Set(r.GapVariance)
	m.lastOut.WithLabelValues(l...).Set(float64(r.OutputTokens))
}

// Last returns the last result of every endpoint.
func (m *Metrics) Last() []Result {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make([]Result, 0, len(m.last))
	for _, r := range m.last {
		out = append(out, r)
	}
	return out
}
