package gpu

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// AgentOptions configure an Agent.
type AgentOptions struct {
	// Interval between two samples; must be at least MinInterval. GPM ratios are
	// averages over this interval.
	Interval time.Duration
	// Hostname is the value of the hostname label on every series.
	Hostname string
	// XIDWait is how long one WaitXID call blocks (default 1 s); Close waits at
	// most about this long for the event goroutine.
	XIDWait time.Duration
	// Logger receives sampling and event errors; nil discards them.
	Logger *slog.Logger
}

// MinInterval is the shortest sampling interval: NVML GPM needs two samples at
// least 100 ms apart, and a shorter interval only burns CPU on the GPU node.
const MinInterval = 200 * time.Millisecond

// Agent samples a Source on an interval in one goroutine and counts XID events
// in another. Scrapes read the cache the sampler fills and never call the Source.
type Agent struct {
	src  Source
	opts AgentOptions
	log  *slog.Logger

	cache atomic.Pointer[cached]

	mu           sync.Mutex // guards the fields below
	xids         map[xidKey]float64
	sampleErrors float64
	readErrors   float64

	descs    descSet
	cancel   context.CancelFunc
	wg       sync.WaitGroup
	closeErr error
	once     sync.Once
}

type xidKey struct {
	id  Identity
	xid uint64
}

// cached is what a scrape reads: the metrics built from the last sample.
type cached struct {
	snap    Snapshot
	metrics []prometheus.Metric
	err     error // non-nil when the last sample failed; metrics is then empty
}

// NewAgent takes a first sample synchronously (so the first scrape has data),
// then starts the sampling and XID goroutines. It returns an error only for bad
// options; a failing first sample is reported by Healthy and /healthz. The Agent
// owns src from then on and closes it in Close.
func NewAgent(src Source, opts AgentOptions) (*Agent, error) {
	if src == nil {
		return nil, errors.New("gpu agent: nil source")
	}
	if opts.Interval < MinInterval {
		return nil, fmt.Errorf("gpu agent: interval %s is shorter than the minimum %s", opts.Interval, MinInterval)
	}
	if opts.XIDWait <= 0 {
		opts.XIDWait = time.Second
	}
	logger := opts.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	a := &Agent{src: src, opts: opts, log: logger, xids: map[xidKey]float64{}, descs: newDescSet()}
	a.sampleOnce()
	ctx, cancel := context.WithCancel(context.Background())
	a.cancel = cancel
	a.wg.Add(2)
	go a.sampleLoop(ctx)
	go a.xidLoop(ctx)
	return a, nil
}

func (a *Agent) sampleLoop(ctx context.Context) {
	defer a.wg.Done()
	t := time.NewTicker(a.opts.Interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			a.sampleOnce()
		}
	}
}

func (a *Agent) sampleOnce() {
	snap, err := a.src.Sample()
	if err != nil {
		a.log.Error("gpu sample failed", "err", err)
		a.mu.Lock()
		a.sampleErrors++
		a.mu.Unlock()
		a.cache.Store(&cached{err: err})
		return
	}
	a.mu.Lock()
	a.readErrors += float64(snap.ReadErrors)
	a.mu.Unlock()
	a.cache.Store(&cached{snap: snap, metrics: a.descs.build(snap, a.opts.Hostname)})
}

func (a *Agent) xidLoop(ctx context.Context) {
	defer a.wg.Done()
	for ctx.Err() == nil {
		events, err := a.src.WaitXID(a.opts.XIDWait)
		if errors.Is(err, ErrNoEvents) {
			a.log.Info("XID events unavailable", "err", err)
			return
		}
		if err != nil {
			a.log.Error("waiting for XID events failed", "err", err)
			a.mu.Lock()
			a.readErrors++
			a.mu.Unlock()
			// Back off one interval so a persistent error does not spin.
			select {
			case <-ctx.Done():
				return
			case <-time.After(a.opts.Interval):
			}
			continue
		}
		if len(events) == 0 {
			continue
		}
		a.mu.Lock()
		for _, e := range events {
			a.xids[xidKey{e.Identity, e.XID}]++
		}
		a.mu.Unlock()
	}
}

// Healthy returns nil when the last sample succeeded, is at most three intervals
// old and read every GPU, else an error that says which.
func (a *Agent) Healthy() error {
	c := a.cache.Load()
	if c == nil {
		return errors.New("no sample yet")
	}
	if c.err != nil {
		return fmt.Errorf("last GPU sample failed: %w", c.err)
	}
	if age := time.Since(c.snap.Time); age > 3*a.opts.Interval {
		return fmt.Errorf("last GPU sample is %s old (interval %s)", age.Round(time.Millisecond), a.opts.Interval)
	}
	for _, d := range c.snap.Devices {
		if d.Err != nil {
			return fmt.Errorf("GPU %d (%s): %w", d.Identity.Index, d.Identity.UUID, d.Err)
		}
	}
	return nil
}

// Close stops both goroutines, then closes the Source. It is safe to call more
// than once; later calls return the first result.
func (a *Agent) Close() error {
	a.once.Do(func() {
		a.cancel()
		a.wg.Wait()
		a.closeErr = a.src.Close()
	})
	return a.closeErr
}

// Collector returns a prometheus.Collector over the agent's cache. Register it on
// a registry of its own: it is unchecked (describes nothing) because MIG series
// carry two labels more than whole-GPU series of the same family.
func (a *Agent) Collector() prometheus.Collector { return (*agentCollector)(a) }

type agentCollector Agent

// Describe sends nothing: the collector is unchecked (see Agent.Collector).
func (c *agentCollector) Describe(chan<- *prometheus.Desc) {}

// Collect sends the cached per-GPU metrics, the XID counters and the agent's own
// metrics. It never calls the Source.
func (c *agentCollector) Collect(ch chan<- prometheus.Metric) {
	a := (*Agent)(c)
	cache := a.cache.Load()
	if cache != nil {
		for _, m := range cache.metrics {
			ch <- m
		}
	}
	host := a.opts.Hostname
	a.mu.Lock()
	for k, n := range a.xids {
		if m, err := prometheus.NewConstMetric(a.descs.family[XIDErrors][boolIndex(k.id.MIG)], prometheus.CounterValue, n,
			deviceLabels(k.id, host, strconv.FormatUint(k.xid, 10))...); err == nil {
			ch <- m
		}
	}
	sampleErrors, readErrors := a.sampleErrors, a.readErrors
	a.mu.Unlock()
	emit := func(d *prometheus.Desc, t prometheus.ValueType, v float64) {
		if m, err := prometheus.NewConstMetric(d, t, v, host); err == nil {
			ch <- m
		}
	}
	emit(a.descs.sampleErrors, prometheus.CounterValue, sampleErrors)
	emit(a.descs.readErrors, prometheus.CounterValue, readErrors)
	if cache != nil && cache.err == nil {
		emit(a.descs.lastSample, prometheus.GaugeValue, float64(cache.snap.Time.UnixNano())/1e9)
		emit(a.descs.sampleDuration, prometheus.GaugeValue, cache.snap.Duration.Seconds())
	}
}

// descSet holds one Desc per family and label shape, built once.
type descSet struct {
	family                                               [numFamilies][2]*prometheus.Desc // [f][0] whole GPU, [f][1] MIG device
	lastSample, sampleDuration, sampleErrors, readErrors *prometheus.Desc
}

func newDescSet() descSet {
	var s descSet
	for f, spec := range families {
		for mig := 0; mig < 2; mig++ {
			labels := []string{LabelGPU, LabelUUID, LabelName, LabelHostname}
			if mig == 1 {
				labels = append(labels, LabelGPUInstanceID, LabelComputeInstanceID)
			}
			if spec.label != "" {
				labels = append(labels, spec.label)
			}
			s.family[f][mig] = prometheus.NewDesc(spec.name, spec.help, labels, nil)
		}
	}
	host := []string{LabelHostname}
	s.lastSample = prometheus.NewDesc(NameLastSample, "Unix time at which the sample being served started, in seconds.", host, nil)
	s.sampleDuration = prometheus.NewDesc(NameSampleDuration, "Wall time the sample being served took, in seconds.", host, nil)
	s.sampleErrors = prometheus.NewDesc(NameSampleErrors, "GPU samples that failed as a whole since the agent started.", host, nil)
	s.readErrors = prometheus.NewDesc(NameReadErrors, "Single NVML reads that failed with an error other than not supported since the agent started.", host, nil)
	return s
}

// build turns a snapshot into const metrics; it runs in the sampling goroutine
// so that a scrape only copies pointers.
func (s *descSet) build(snap Snapshot, host string) []prometheus.Metric {
	n := 0
	for _, d := range snap.Devices {
		n += len(d.Values)
	}
	out := make([]prometheus.Metric, 0, n)
	for _, d := range snap.Devices {
		base := deviceLabels(d.Identity, host, "")
		base = base[:len(base)-1]
		mig := boolIndex(d.Identity.MIG)
		for _, r := range d.Values {
			if r.Family < 0 || r.Family >= numFamilies {
				continue
			}
			spec := families[r.Family]
			labels := base
			if spec.label != "" {
				labels = append(base[:len(base):len(base)], r.Label)
			}
			vt := prometheus.GaugeValue
			if spec.counter {
				vt = prometheus.CounterValue
			}
			m, err := prometheus.NewConstMetric(s.family[r.Family][mig], vt, r.Value, labels...)
			if err != nil {
				continue
			}
			out = append(out, m)
		}
	}
	return out
}

// deviceLabels returns the label values of a device series in Desc order, with
// extra as the last value (callers without an extra label drop it).
func deviceLabels(id Identity, host, extra string) []string {
	v := []string{strconv.Itoa(id.Index), id.UUID, id.Name, host}
	if id.MIG {
		v = append(v, strconv.Itoa(id.GPUInstanceID), strconv.Itoa(id.ComputeInstanceID))
	}
	return append(v, extra)
}

func boolIndex(b bool) int {
	if b {
		return 1
	}
	return 0
}
