package plugin

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"strconv"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/backend"
	"github.com/prometheus/client_golang/prometheus"
)

// Admission control of QueryData, like Prometheus's --query.max-concurrency
// and its query queue: at most maxConcurrent requests compute at once in the
// plugin process (every data source together: they share its CPUs and
// memory); the others wait in line, at most queueWait, and are then answered
// "busy, retry" (HTTP 503) rather than all slowing down together.
const (
	// DefaultMaxConcurrentQueries is Prometheus's --query.max-concurrency default.
	DefaultMaxConcurrentQueries = 20
	// DefaultQueryQueueWait is how long a request waits for a free slot.
	DefaultQueryQueueWait = 5 * time.Second
)

// Environment overrides of the defaults (Grafana passes its environment to
// the plugins it starts).
const (
	envMaxConcurrent = "INFERSCOPE_MAX_CONCURRENT_QUERIES"
	envQueueWait     = "INFERSCOPE_QUERY_QUEUE_WAIT"
)

// admission is the process's query gate.
type admission struct {
	slots chan struct{}
	wait  time.Duration
}

// gate is the plugin process's admission control, sized from the environment.
var gate = newAdmission(envInt(envMaxConcurrent, DefaultMaxConcurrentQueries), envDuration(envQueueWait, DefaultQueryQueueWait))

func newAdmission(n int, wait time.Duration) *admission {
	return &admission{slots: make(chan struct{}, max(n, 1)), wait: wait}
}

func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}

func envDuration(name string, def time.Duration) time.Duration {
	if v, err := time.ParseDuration(os.Getenv(name)); err == nil && v >= 0 {
		return v
	}
	return def
}

var (
	queueWait = prometheus.NewHistogram(prometheus.HistogramOpts{
		Namespace: "inferscope", Name: "query_queue_wait_seconds",
		Help:    "Time a QueryData request waited for one of the plugin's concurrent query slots (admitted or not), in seconds.",
		Buckets: []float64{0.001, 0.005, 0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10},
	})
	queriesInFlight = prometheus.NewGauge(prometheus.GaugeOpts{
		Namespace: "inferscope", Name: "queries_in_flight",
		Help: "QueryData requests computing now (at most the concurrency limit).",
	})
	queriesQueued = prometheus.NewGauge(prometheus.GaugeOpts{
		Namespace: "inferscope", Name: "queries_queued",
		Help: "QueryData requests waiting for a slot now.",
	})
	queriesRejected = prometheus.NewCounter(prometheus.CounterOpts{
		Namespace: "inferscope", Name: "queries_rejected_total",
		Help: `QueryData requests answered "busy, retry" after waiting the whole queue wait.`,
	})
	queryConcurrencyLimit = prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Namespace: "inferscope", Name: "query_concurrency_limit",
		Help: "The plugin's concurrent QueryData limit (" + envMaxConcurrent + ").",
	}, func() float64 { return float64(cap(gate.slots)) })
)

func init() {
	prometheus.MustRegister(queueWait, queriesInFlight, queriesQueued, queriesRejected, queryConcurrencyLimit)
}

// busyError is the answer to a request that found no slot in time.
type busyError struct {
	limit int
	wait  time.Duration
}

func (e busyError) Error() string {
	return fmt.Sprintf("Inferscope is busy, retry: all %d query slots stayed taken for %s (the plugin's concurrency limit, %s)", e.limit, e.wait, envMaxConcurrent)
}

// acquire waits for a slot (at most a.wait, or until ctx ends) and returns
// its release, or the error to answer.
func (a *admission) acquire(ctx context.Context) (func(), error) {
	t0 := time.Now()
	select {
	case a.slots <- struct{}{}:
		queueWait.Observe(0)
		queriesInFlight.Inc()
		return a.release, nil
	default:
	}
	queriesQueued.Inc()
	defer queriesQueued.Dec()
	timer := time.NewTimer(a.wait)
	defer timer.Stop()
	select {
	case a.slots <- struct{}{}:
		queueWait.Observe(time.Since(t0).Seconds())
		queriesInFlight.Inc()
		return a.release, nil
	case <-timer.C:
		queueWait.Observe(time.Since(t0).Seconds())
		queriesRejected.Inc()
		return nil, busyError{limit: cap(a.slots), wait: a.wait}
	case <-ctx.Done():
		queueWait.Observe(time.Since(t0).Seconds())
		return nil, ctx.Err()
	}
}

func (a *admission) release() {
	queriesInFlight.Dec()
	<-a.slots
}

// busyResponse answers every query of req with err: 503 from the plugin.
func busyResponse(req *backend.QueryDataRequest, err error) *backend.QueryDataResponse {
	resp := backend.NewQueryDataResponse()
	for _, q := range req.Queries {
		resp.Responses[q.RefID] = backend.DataResponse{Error: err, Status: backend.Status(http.StatusServiceUnavailable), ErrorSource: backend.ErrorSourcePlugin}
	}
	return resp
}
