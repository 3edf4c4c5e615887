package collect

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/histogram"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/value"
	"github.com/prometheus/prometheus/storage"
)

// The collector's own metrics, registered once on the process's default
// registry, which the plugin SDK serves to Grafana through CollectMetrics.
// Every series carries the data source's UID in `datasource`; per-target
// series also carry `target` (the job name). A target's series are deleted
// when it leaves the settings, a data source's when its store closes.
var (
	scrapesTotal         = counter("scrapes_total", "Scrapes attempted, per data source and target (each writes one up sample).", "datasource", "target")
	scrapeFailuresTotal  = counter("scrape_failures_total", "Scrapes that failed (up = 0) or whose samples could not be stored, per data source and target.", "datasource", "target")
	scrapeOverloadsTotal = counter("scrape_overloads_total", "Scrapes that failed because the plugin could not keep up: the page had arrived but was still being parsed and stored when the scrape timeout passed (a slow target times out while fetching and is not counted here), per data source and target.", "datasource", "target")
	scrapeDuration       = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Namespace: "inferscope", Name: "scrape_duration_seconds",
		Help:    "Duration of scrapes in seconds (the scrape_duration_seconds sample of each), per data source.",
		Buckets: []float64{0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30},
	}, []string{"datasource"})
	samplesStoredTotal         = counter("samples_stored_total", "Samples committed to the embedded TSDB (page samples kept after relabelling plus the scrape's own up and scrape_* samples), per data source and target.", "datasource", "target")
	storageAppendFailuresTotal = counter("storage_append_failures_total", "Scrape commits the TSDB refused (full disk, I/O error), per data source.", "datasource")
	storageBytesDesc           = prometheus.NewDesc("inferscope_storage_bytes",
		"Bytes on disk of a data source's embedded TSDB (blocks, WAL, head chunks).", []string{"datasource"}, nil)
	storageSeriesDesc = prometheus.NewDesc("inferscope_storage_head_series",
		"Series in the in-memory head of a data source's embedded TSDB.", []string{"datasource"}, nil)
)

// counter is the counter vector inferscope_<name>, labelled by labels.
func counter(name, help string, labels ...string) *prometheus.CounterVec {
	return prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: "inferscope", Name: name, Help: help}, labels)
}

func init() {
	prometheus.MustRegister(scrapesTotal, scrapeFailuresTotal, scrapeOverloadsTotal, scrapeDuration, samplesStoredTotal, storageAppendFailuresTotal, storageCollector{}, tsdbCollector{})
}

// tsdbCounterRE selects the TSDB's own counters of trouble that the plugin
// re-exports: WAL corruptions, failed compactions, head and WAL truncations
// (done and failed), failed checkpoints, reloads and WAL writes.
var tsdbCounterRE = regexp.MustCompile(`^prometheus_tsdb_[a-z_]*(corruptions|failed|failures|truncations)_total$`)

// tsdbCollector re-exports, per open store, the TSDB's own counters of
// trouble (tsdbCounterRE) from the registry given to tsdb.Open, renamed
// prometheus_tsdb_* → inferscope_tsdb_* and labelled with the data source:
// e.g. inferscope_tsdb_wal_corruptions_total{datasource="…"}. Unchecked (it
// describes nothing): the families are the TSDB's.
type tsdbCollector struct{}

func (tsdbCollector) Describe(chan<- *prometheus.Desc) {}

// openStores is the stores open now, copied under the lock so a collector
// reads them without holding it.
func openStores() []*store {
	stores.Lock()
	defer stores.Unlock()
	open := make([]*store, 0, len(stores.m))
	for _, s := range stores.m {
		open = append(open, s)
	}
	return open
}

func (tsdbCollector) Collect(ch chan<- prometheus.Metric) {
	for _, s := range openStores() {
		if s.reg == nil {
			continue
		}
		mfs, err := s.reg.Gather()
		if err != nil {
			continue
		}
		for _, mf := range mfs {
			if !tsdbCounterRE.MatchString(mf.GetName()) {
				continue
			}
			var v float64
			for _, m := range mf.GetMetric() {
				v += counterOf(m)
			}
			name := "inferscope_tsdb_" + strings.TrimPrefix(mf.GetName(), "prometheus_tsdb_")
			d := prometheus.NewDesc(name, "The embedded TSDB's "+mf.GetName()+": "+mf.GetHelp(), []string{"datasource"}, nil)
			if m, err := prometheus.NewConstMetric(d, prometheus.CounterValue, v, s.uid); err == nil {
				ch <- m
			}
		}
	}
}

// storageCollector reports the size of every open store at collection time.
type storageCollector struct{}

func (storageCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- storageBytesDesc
	ch <- storageSeriesDesc
}

func (storageCollector) Collect(ch chan<- prometheus.Metric) {
	for _, s := range openStores() {
		ch <- prometheus.MustNewConstMetric(storageBytesDesc, prometheus.GaugeValue, float64(storeDirSize(s.dir)), s.uid)
		ch <- prometheus.MustNewConstMetric(storageSeriesDesc, prometheus.GaugeValue, float64(s.db.Head().NumSeries()), s.uid)
	}
}

// forgetTargets deletes the per-target series of targets of data source uid.
func forgetTargets(uid string, targets []string) {
	for _, t := range targets {
		scrapesTotal.DeleteLabelValues(uid, t)
		scrapeFailuresTotal.DeleteLabelValues(uid, t)
		samplesStoredTotal.DeleteLabelValues(uid, t)
	}
}

// forgetDataSource deletes every series of data source uid.
func forgetDataSource(uid string) {
	m := prometheus.Labels{"datasource": uid}
	scrapesTotal.DeletePartialMatch(m)
	scrapeFailuresTotal.DeletePartialMatch(m)
	scrapeOverloadsTotal.DeletePartialMatch(m)
	samplesStoredTotal.DeletePartialMatch(m)
	scrapeDuration.DeletePartialMatch(m)
	storageAppendFailuresTotal.DeletePartialMatch(m)
}

// meteredAppendable hands the scrape manager appenders that count what each
// scrape commits. A scrape loop appends the page's samples and then its
// report (up, scrape_duration_seconds, …) to one appender and commits once,
// or, when the scrape failed, rolls the page back and commits the report
// alone; so each commit carrying an up sample is one scrape attempt.
//
// A scrape the plugin itself gave up on (ErrParseTimeout: the page had arrived but could not
// be stored within the scrape timeout) is counted as an attempt and an overload, but its
// up = 0 sample is not stored: the target did answer, so an availability objective must not
// charge the plugin's own shortage to the target's error budget (issue 32). Its page series
// still go stale, and the availability query reads such a step as the last state stored
// within the 5-minute lookback, or as unknown after it.
//
// It also enforces, while the page is parsed, the sample limit and the
// scrape timeout (see pageLimits): Prometheus's own sample_limit lets the
// scrape loop parse the rest of the page after the limit (to count it), and
// its scrape_timeout covers the fetch but not the parsing.
type meteredAppendable struct {
	db storage.Appendable
	st *store
	// sampleLimit (0: none) and timeout (0: none) bound each scrape's page.
	sampleLimit int
	timeout     time.Duration
	// now is the clock of the timeout (nil: time.Now; tests freeze or step it).
	now func() time.Time
}

func (m meteredAppendable) Appender(ctx context.Context) storage.Appender {
	now := m.now
	if now == nil {
		now = time.Now
	}
	a := &meteredAppender{Appender: m.db.Appender(ctx), st: m.st, limit: m.sampleLimit, now: now}
	if m.timeout > 0 {
		// The scrape loop takes its appender as the scrape starts.
		a.deadline = now().Add(m.timeout)
		a.timeout = m.timeout
	}
	return a
}

// reportNames are the scrape loop's own series, appended after the page;
// they do not count against the sample limit (as in Prometheus).
var reportNames = map[string]bool{"up": true, "scrape_duration_seconds": true, "scrape_samples_scraped": true,
	"scrape_samples_post_metric_relabeling": true, "scrape_series_added": true}

// ErrSampleLimit is the error of a scrape whose page holds more samples of
// the stored families than the sample limit: parsing stops at the first
// sample over it and nothing of the page is stored.
var ErrSampleLimit = errors.New("sample limit exceeded")

// ErrParseTimeout is the error of a scrape whose page was still being parsed
// and stored when the scrape timeout passed: parsing stops there and nothing
// of the page is stored.
var ErrParseTimeout = errors.New("scrape timeout exceeded while storing the page")

// pageLimitError is ErrSampleLimit or ErrParseTimeout with its sentence.
type pageLimitError struct {
	msg  string
	kind error
}

func (e pageLimitError) Error() string        { return e.msg }
func (e pageLimitError) Is(target error) bool { return target == e.kind }

// deadlineEvery is how many samples pass between two looks at the clock.
const deadlineEvery = 256

// meteredAppender is one scrape's appender.
type meteredAppender struct {
	storage.Appender
	st       *store
	job      string
	n        int
	up       float64
	duration float64
	sawUp    bool
	sawDur   bool

	limit    int
	deadline time.Time
	timeout  time.Duration
	now      func() time.Time
	page     int // page samples seen (not stale markers, not report series)
}

// pageLimits returns the error that stops the page at its current sample:
// over the sample limit, or past the scrape timeout.
func (a *meteredAppender) pageLimits(l labels.Labels, t int64, v float64) error {
	if value.IsStaleNaN(v) || reportNames[l.Get(model.MetricNameLabel)] {
		return nil
	}
	a.page++
	if a.limit > 0 && a.page > a.limit {
		return pageLimitError{kind: ErrSampleLimit, msg: fmt.Sprintf(
			"sample limit exceeded: the page holds more than %d samples of the families Inferscope stores (the sample limit); parsing stopped there and nothing of this scrape was stored: raise sampleLimit or drop series at the source", a.limit)}
	}
	if !a.deadline.IsZero() && a.page%deadlineEvery == 0 && a.now().After(a.deadline) {
		if job := l.Get("job"); job != "" {
			scrapeOverloadsTotal.WithLabelValues(a.st.uid, job).Inc()
			a.st.markOverloaded(job, t)
		}
		return pageLimitError{kind: ErrParseTimeout, msg: fmt.Sprintf(
			"scrape timeout exceeded: the page was still being parsed and stored %s after the scrape started (scrapeTimeout), after %d samples; parsing stopped there and nothing of this scrape was stored. The page had arrived: the plugin could not keep up (its host is short of CPU, or the page is too large to store within scrapeTimeout)", a.timeout, a.page)}
	}
	return nil
}

func (a *meteredAppender) Append(ref storage.SeriesRef, l labels.Labels, t int64, v float64) (storage.SeriesRef, error) {
	if err := a.pageLimits(l, t, v); err != nil {
		return 0, err
	}
	name := l.Get(model.MetricNameLabel)
	if name == "up" && a.st.wasOverloaded(l.Get("job"), t) {
		// The report of a scrape given up while storing its page: no up sample (see
		// meteredAppendable). The attempt is still counted at Commit.
		if a.job == "" {
			a.job = l.Get("job")
		}
		a.up, a.sawUp = v, true
		return 0, nil
	}
	r, err := a.Appender.Append(ref, l, t, v)
	if err == nil && !value.IsStaleNaN(v) {
		// Staleness markers (written for every series of a failed or
		// changed scrape) are bookkeeping, not samples a query returns.
		a.n++
	}
	if a.job == "" {
		a.job = l.Get("job")
	}
	switch name {
	case "up":
		a.up, a.sawUp = v, true
	case "scrape_duration_seconds":
		a.duration, a.sawDur = v, true
	}
	return r, err
}

// AppendHistogram counts a native histogram as one sample against the
// limits, as Prometheus does.
func (a *meteredAppender) AppendHistogram(ref storage.SeriesRef, l labels.Labels, t int64, h *histogram.Histogram, fh *histogram.FloatHistogram) (storage.SeriesRef, error) {
	if (h == nil || !value.IsStaleNaN(h.Sum)) && (fh == nil || !value.IsStaleNaN(fh.Sum)) {
		if err := a.pageLimits(l, t, 0); err != nil {
			return 0, err
		}
	}
	return a.Appender.AppendHistogram(ref, l, t, h, fh)
}

func (a *meteredAppender) Commit() error {
	err := commitAside(a.Appender)
	if a.job == "" {
		return err
	}
	uid := a.st.uid
	if err != nil {
		storageAppendFailuresTotal.WithLabelValues(uid).Inc()
	} else {
		samplesStoredTotal.WithLabelValues(uid, a.job).Add(float64(a.n))
	}
	if a.sawUp {
		a.st.recordAppend(a.job, err)
		scrapesTotal.WithLabelValues(uid, a.job).Inc()
		if a.up == 0 || err != nil {
			scrapeFailuresTotal.WithLabelValues(uid, a.job).Inc()
		}
		if a.sawDur {
			scrapeDuration.WithLabelValues(uid).Observe(a.duration)
		}
	}
	return err
}

func (a *meteredAppender) Rollback() error {
	a.n, a.sawUp, a.sawDur = 0, false, false
	return a.Appender.Rollback()
}

// commitAside runs app.Commit on a goroutine of its own and waits for it. The TSDB head's
// commit writes the scrape's WAL records Snappy-compressed (tsdbOptions), and
// golang/snappy's amd64 encoder (encodeBlock) has a 32 KiB stack frame: run on the scrape
// loop's goroutine, every commit grows that target's stack to 64 KiB, which the loop then
// keeps while it waits for its next scrape (the runtime halves an idle stack only at a
// collection, and the next commit grows it again): 64 MiB of stacks for 1,000 targets
// (docs/performance.md, issue 34). A goroutine that ends with the commit hands its stack
// back, so only commits in flight hold a large one; the WAL's own lock lets one commit at
// a time compress anyway. The caller waits, so the scrape loop sees the same order and
// error as before.
func commitAside(app storage.Appender) error {
	done := make(chan error, 1)
	go func() { done <- app.Commit() }()
	return <-done
}
