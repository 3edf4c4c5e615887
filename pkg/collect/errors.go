package collect

import (
	"crypto/tls"
	"errors"
	"net"
	"net/url"
	"sync"
	"syscall"
	"time"

	"github.com/prometheus/prometheus/scrape"
)

// ScrapeError is one failed scrape as the collector saw it: when the scrape
// started and its error text (unsanitised; callers showing it to panel
// viewers sanitise it).
type ScrapeError struct {
	At    time.Time
	Error string
}

// maxErrorsPerTarget bounds the in-memory error history of one target; the
// oldest entries go first.
const maxErrorsPerTarget = 512

// errorLog remembers, per target, the failed scrapes seen by polling the
// scrape manager (Prometheus keeps only the last error). It lives in memory
// and is lost when the instance is re-created; the `up` series in the TSDB
// remains the record of which scrapes failed.
type errorLog struct {
	mu      sync.Mutex
	per     map[string][]ScrapeError
	last    map[string]time.Time
	quit    chan struct{}
	done    chan struct{}
	close   sync.Once
	started bool // guarded by mu
}

func newErrorLog() *errorLog {
	return &errorLog{per: map[string][]ScrapeError{}, last: map[string]time.Time{}, quit: make(chan struct{}), done: make(chan struct{})}
}

// watch polls the collector's target status every `every` until stop.
// start launches watch; stop waits for it.
func (l *errorLog) start(c *Collector, every time.Duration) {
	l.mu.Lock()
	l.started = true
	l.mu.Unlock()
	go l.watch(c, every)
}

func (l *errorLog) watch(c *Collector, every time.Duration) {
	defer close(l.done)
	if every < 10*time.Millisecond {
		every = 10 * time.Millisecond
	}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-l.quit:
			return
		case <-t.C:
			l.record(c.mgr.TargetsActive(), c.endpoints)
		}
	}
}

// record appends the last scrape of each endpoint when it failed and was not seen yet.
func (l *errorLog) record(active map[string][]*scrape.Target, eps []endpoint) {
	l.mu.Lock()
	defer l.mu.Unlock()
	byName := activeByName(active)
	for _, ep := range eps {
		t := byName[ep.name]
		if t == nil {
			continue
		}
		at, err := t.LastScrape(), t.LastError()
		if err == nil || at.IsZero() || at.Equal(l.last[ep.name]) {
			continue
		}
		l.last[ep.name] = at
		list := append(l.per[ep.name], ScrapeError{At: at, Error: err.Error()})
		if len(list) > maxErrorsPerTarget {
			list = list[len(list)-maxErrorsPerTarget:]
		}
		l.per[ep.name] = list
	}
}

// stop ends watch and waits for it; without a running watch it returns at once.
func (l *errorLog) stop() {
	l.close.Do(func() { close(l.quit) })
	l.mu.Lock()
	started := l.started
	l.mu.Unlock()
	if started {
		<-l.done
	}
}

// ScrapeErrors returns the failed scrapes of target or agent name that
// started within [from, to], oldest first (at most the last 512 are kept).
func (c *Collector) ScrapeErrors(name string, from, to time.Time) []ScrapeError {
	l := c.errors
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []ScrapeError
	for _, e := range l.per[name] {
		if !e.At.Before(from) && !e.At.After(to) {
			e.Error = c.mask(e.Error)
			out = append(out, e)
		}
	}
	return out
}

// scrapeErrorText is the last_error of an endpoint whose scrape failed: a connection-level
// failure (refused, host not found, unreachable, closed, TLS) as the sentence the health check
// gives (describeFetchError: "connection refused at 10.0.0.5:8000/metrics"), for targets,
// agents and probes alike, instead of Go's `Get "…": dial tcp …: connect: connection refused`;
// anything else (an HTTP status, a sample or time limit, a parse error) keeps its own text.
func scrapeErrorText(err error, rawURL string) string {
	var (
		dnsErr *net.DNSError
		recErr tls.RecordHeaderError
	)
	connLevel := errors.Is(err, syscall.ECONNREFUSED) || errors.Is(err, syscall.ECONNRESET) ||
		errors.Is(err, syscall.EHOSTUNREACH) || errors.Is(err, syscall.ENETUNREACH) ||
		errors.As(err, &dnsErr) || untrustedCert(err) || errors.As(err, &recErr)
	if !connLevel {
		return err.Error()
	}
	where := rawURL
	if u, perr := url.Parse(rawURL); perr == nil && u.Host != "" {
		where = u.Host + u.EscapedPath()
	}
	return describeFetchError(err, where, "the scrape timeout")
}
