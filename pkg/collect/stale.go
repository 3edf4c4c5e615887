package collect

import (
	"context"
	"math"
	"sync"
	"time"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/value"
	"github.com/prometheus/prometheus/tsdb"
	"github.com/prometheus/prometheus/tsdb/chunkenc"
)

// Staleness after a settings change or a restart.
//
// Prometheus writes a staleness marker (value.StaleNaN) for every series a
// scrape no longer returns, and, when a target disappears from service
// discovery, for all of its series two scrape intervals after its loop
// stopped (scrapeLoop.endOfRunStaleness). It deliberately writes none when
// the whole scrape manager stops (Manager.Stop → scrapePool.stop cancels the
// pool's context once the loops returned, and endOfRunStaleness gives up on a
// cancelled context: "we presume the server is shutting down and will restart
// where it was"). Inferscope stops a whole manager on every settings save and
// at every plugin restart, so without more the series of a relabelled,
// renamed, moved or removed target stay "present" for PromQL's 5-minute
// lookback next to the new ones, and every sum of a gauge counts them twice.
//
// The new collector therefore does what Prometheus does for a vanished
// target, across managers and processes: it notes the time scraping stopped
// (the previous instance's stop, or this process's start), waits until every
// target and agent of the new settings has committed one scrape after it (at
// most two scrape intervals and a tenth, Prometheus's wait), and then writes a
// staleness marker for every stored series whose latest sample is still older
// than that time and not already a marker. A series the new settings scrape
// again has a newer sample by then and is left alone. The marker is written
// where the next scrape would have been (latest + scrape interval), or at the
// stop time when that is earlier, so the history shows the series ending when
// its scraping ended.

// staleScanWindow is how far before the stop markStale looks for series still "present".
const staleScanWindow = 10 * time.Minute

// staleSweep is one pending sweep of a collector.
type staleSweep struct {
	quit chan struct{}
	done chan struct{}
	once sync.Once
	// marked is the number of staleness markers written, for tests.
	marked int
}

// startStaleSweep launches the sweep for a collector that began scraping
// after stop. jobs are the job names of its targets and agents.
func (c *Collector) startStaleSweep(stop time.Time, interval time.Duration, jobs []string) {
	s := &staleSweep{quit: make(chan struct{}), done: make(chan struct{})}
	c.sweep = s
	go func() {
		defer close(s.done)
		timeout := time.NewTimer(2*interval + interval/10)
		defer timeout.Stop()
		tick := time.NewTicker(min(interval/4, 250*time.Millisecond))
		defer tick.Stop()
	wait:
		for !c.store.committedSince(jobs, stop) {
			select {
			case <-s.quit:
				return
			case <-timeout.C:
				break wait
			case <-tick.C:
			}
		}
		n, err := markStale(c.store.db, stop, interval)
		s.marked = n
		if err != nil {
			c.logger.Warn("writing staleness markers for series no longer scraped", "error", err)
		} else if n > 0 {
			c.logger.Info("staleness markers written for series no longer scraped", "series", n, "stoppedAt", stop)
		}
	}()
}

// stopSweep ends a pending sweep and waits for it. Safe to call more than once.
func (c *Collector) stopSweep() {
	if c.sweep == nil {
		return
	}
	c.sweep.once.Do(func() { close(c.sweep.quit) })
	<-c.sweep.done
}

// markStale writes a staleness marker for every series of db with a sample in
// the staleScanWindow before stop whose latest sample is at or before stop and
// is not already a marker, at
// min(latest + interval, stop) (and always after latest). A series with a
// sample after stop is scraped again and is left alone; so is a native
// histogram series (the collector stores none). It returns the number of
// markers written. Appends that lose a race with a newer scrape are refused
// by the TSDB as out of order and change nothing.
func markStale(db *tsdb.DB, stop time.Time, interval time.Duration) (int, error) {
	stopMs := stop.UnixMilli()
	step := interval.Milliseconds()
	// Only series with a sample within twice PromQL's 5-minute lookback (plus an interval)
	// before the stop can still be "present" at or after it; older ones are left as they are,
	// which bounds the scan to the last minutes of the head.
	q, err := db.Querier(stopMs-(staleScanWindow+interval).Milliseconds(), math.MaxInt64)
	if err != nil {
		return 0, err
	}
	defer q.Close()
	ctx := context.Background()
	ss := q.Select(ctx, false, nil, labels.MustNewMatcher(labels.MatchRegexp, model.MetricNameLabel, ".+"))
	type mark struct {
		lset labels.Labels
		t    int64
	}
	var marks []mark
	var it chunkenc.Iterator
	for ss.Next() {
		s := ss.At()
		it = s.Iterator(it)
		var (
			lastT  int64 = math.MinInt64
			lastV  float64
			native bool
		)
		for vt := it.Next(); vt != chunkenc.ValNone; vt = it.Next() {
			if vt != chunkenc.ValFloat {
				native = true
				break
			}
			lastT, lastV = it.At()
		}
		if native || lastT == math.MinInt64 || lastT > stopMs || value.IsStaleNaN(lastV) {
			continue
		}
		t := min(lastT+step, stopMs)
		if t <= lastT {
			t = lastT + 1
		}
		marks = append(marks, mark{s.Labels(), t})
	}
	if err := ss.Err(); err != nil {
		return 0, err
	}
	if len(marks) == 0 {
		return 0, nil
	}
	app := db.Appender(ctx)
	n := 0
	for _, m := range marks {
		if _, err := app.Append(0, m.lset, m.t, math.Float64frombits(value.StaleNaN)); err == nil {
			n++
		}
	}
	if err := app.Commit(); err != nil {
		return 0, err
	}
	return n, nil
}

// committedSince reports whether every job has committed a scrape (its up
// sample, success or failure) after t.
func (s *store) committedSince(jobs []string, t time.Time) bool {
	stores.Lock()
	defer stores.Unlock()
	for _, j := range jobs {
		if !s.commits[j].After(t) {
			return false
		}
	}
	return true
}
