package plugin

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"strconv"
	"sync"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/backend"
	"github.com/prometheus/client_golang/prometheus"
)

// Admission control of QueryData, like Prometheus's --query.max-concurrency
// and its query queue: at most maxConcurrent requests compute at once in the
// plugin process (every data source together: they share its CPUs and
// memory); the others wait in line, at most queueWait, and are then answered
// "busy, retry" (HTTP 503) rather than all slowing down together.
//
// The slots are shared with a fair share: one data source holds at most
// perSource of them (default three quarters), so a flood on one data source
// leaves slots free for the others, and a freed slot goes to the waiting
// request whose organisation, then whose data source, has the fewest requests
// computing (the earliest of those first). A data source flooding the plugin
// waits behind its own requests, not in front of another's.
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
	envPerSource     = "INFERSCOPE_MAX_CONCURRENT_QUERIES_PER_DATASOURCE"
)

// sourceKey names the data source a request is for: its organisation and UID.
type sourceKey struct {
	org int64
	uid string
}

// sourceOf is the data source of a QueryData request.
func sourceOf(pc backend.PluginContext) sourceKey {
	k := sourceKey{org: orgOf(pc)}
	if pc.DataSourceInstanceSettings != nil {
		k.uid = pc.DataSourceInstanceSettings.UID
	}
	return k
}

// admission is the process's query gate: limit slots, at most perSource of
// them per data source, and the requests waiting for one.
type admission struct {
	limit, perSource int
	wait             time.Duration

	mu       sync.Mutex
	inFlight int
	bySource map[sourceKey]int
	byOrg    map[int64]int
	queue    []*waiter // in arrival order
	seq      uint64
}

// waiter is one request in line; ready is closed when it is granted a slot.
type waiter struct {
	key     sourceKey
	seq     uint64
	ready   chan struct{}
	granted bool
}

// gate is the plugin process's admission control, sized from the environment.
var gate = newAdmission(envInt(envMaxConcurrent, DefaultMaxConcurrentQueries), envInt(envPerSource, 0), envDuration(envQueueWait, DefaultQueryQueueWait))

// newAdmission makes a gate of n slots (at least 1), perSource of them at
// most per data source (below 1: three quarters of n, at least 1; above n: n).
func newAdmission(n, perSource int, wait time.Duration) *admission {
	n = max(n, 1)
	if perSource < 1 {
		perSource = max(n*3/4, 1)
	}
	return &admission{limit: n, perSource: min(perSource, n), wait: wait,
		bySource: map[sourceKey]int{}, byOrg: map[int64]int{}}
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
	}, func() float64 { return float64(gate.limit) })
)

func init() {
	prometheus.MustRegister(queueWait, queriesInFlight, queriesQueued, queriesRejected, queryConcurrencyLimit)
}

// busyError is the answer to a request that found no slot in time.
type busyError struct {
	limit, perSource int
	wait             time.Duration
}

func (e busyError) Error() string {
	return fmt.Sprintf("Inferscope is busy, retry: no query slot came free for %s (the plugin computes at most %d requests at once, %s, and at most %d for one data source, %s)",
		e.wait, e.limit, envMaxConcurrent, e.perSource, envPerSource)
}

// acquire waits for a slot for data source key (at most a.wait, or until ctx
// ends) and returns its release, or the error to answer.
func (a *admission) acquire(ctx context.Context, key sourceKey) (func(), error) {
	t0 := time.Now()
	a.mu.Lock()
	if len(a.queue) == 0 && a.fitsLocked(key) {
		a.grantLocked(key)
		a.mu.Unlock()
		queueWait.Observe(0)
		return a.releaser(key), nil
	}
	a.seq++
	w := &waiter{key: key, seq: a.seq, ready: make(chan struct{})}
	a.queue = append(a.queue, w)
	// A request may fit although others wait (their data sources are at their share).
	a.dispatchLocked()
	a.mu.Unlock()
	queriesQueued.Inc()
	defer queriesQueued.Dec()
	timer := time.NewTimer(a.wait)
	defer timer.Stop()
	var err error
	select {
	case <-w.ready:
	case <-timer.C:
		err = busyError{limit: a.limit, perSource: a.perSource, wait: a.wait}
	case <-ctx.Done():
		err = ctx.Err()
	}
	queueWait.Observe(time.Since(t0).Seconds())
	if err != nil {
		a.mu.Lock()
		granted := w.granted
		if !granted {
			a.removeLocked(w)
		}
		a.mu.Unlock()
		if !granted {
			if _, busy := err.(busyError); busy {
				queriesRejected.Inc()
			}
			return nil, err
		}
		// Granted as the wait ended: the request runs (its context decides the rest).
	}
	return a.releaser(key), nil
}

// fitsLocked says whether a request of key may take a slot now.
func (a *admission) fitsLocked(key sourceKey) bool {
	return a.inFlight < a.limit && a.bySource[key] < a.perSource
}

func (a *admission) grantLocked(key sourceKey) {
	a.inFlight++
	a.bySource[key]++
	a.byOrg[key.org]++
	queriesInFlight.Inc()
}

// releaser returns the release of one slot of key, safe to call once.
func (a *admission) releaser(key sourceKey) func() {
	var once sync.Once
	return func() { once.Do(func() { a.release(key) }) }
}

func (a *admission) release(key sourceKey) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.inFlight--
	if a.bySource[key]--; a.bySource[key] <= 0 {
		delete(a.bySource, key)
	}
	if a.byOrg[key.org]--; a.byOrg[key.org] <= 0 {
		delete(a.byOrg, key.org)
	}
	queriesInFlight.Dec()
	a.dispatchLocked()
}

// dispatchLocked hands free slots to waiters: each time to the waiter that
// fits whose organisation has the fewest requests computing, then whose data
// source has, then the earliest.
func (a *admission) dispatchLocked() {
	for a.inFlight < a.limit {
		best := -1
		for i, w := range a.queue {
			if a.bySource[w.key] >= a.perSource {
				continue
			}
			if best < 0 || a.before(w, a.queue[best]) {
				best = i
			}
		}
		if best < 0 {
			return
		}
		w := a.queue[best]
		a.queue = append(a.queue[:best], a.queue[best+1:]...)
		w.granted = true
		a.grantLocked(w.key)
		close(w.ready)
	}
}

// before orders two waiters for the next slot.
func (a *admission) before(w, v *waiter) bool {
	if ow, ov := a.byOrg[w.key.org], a.byOrg[v.key.org]; ow != ov {
		return ow < ov
	}
	if sw, sv := a.bySource[w.key], a.bySource[v.key]; sw != sv {
		return sw < sv
	}
	return w.seq < v.seq
}

func (a *admission) removeLocked(w *waiter) {
	for i, v := range a.queue {
		if v == w {
			a.queue = append(a.queue[:i], a.queue[i+1:]...)
			return
		}
	}
}

// busyResponse answers every query of req with err: 503 from the plugin.
func busyResponse(req *backend.QueryDataRequest, err error) *backend.QueryDataResponse {
	resp := backend.NewQueryDataResponse()
	for _, q := range req.Queries {
		resp.Responses[q.RefID] = backend.DataResponse{Error: err, Status: backend.Status(http.StatusServiceUnavailable), ErrorSource: backend.ErrorSourcePlugin}
	}
	return resp
}
