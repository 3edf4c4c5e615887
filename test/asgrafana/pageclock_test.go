package asgrafana

import (
	"fmt"
	"math"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// pageClock gives a served page a clock of its own, for the tests whose rates must hold on a
// loaded machine (issue 32; pkg/plugin's scaledPage.onGrid is the same idea): the k-th answer
// (k from 0) is the page as at t0 + k·step, and every sample of it carries that time as its
// explicit timestamp, which the collector honours. The stored samples then lie exactly one
// step apart on a grid of whole seconds however late a busy machine scrapes, so the rate of a
// counter that grows by the same amount per answer is exactly that amount per step; a scrape
// the plugin gave up on leaves a gap, which gridEnd waits past. t0 is two seconds before the
// test's start, so the page's time never runs ahead of the wall clock (a query ending now sees
// every answer); under load it falls behind, which only delays gridEnd.
type pageClock struct {
	t0   time.Time
	step time.Duration
	n    atomic.Int64 // answers given
}

// newPageClock is a one-second page clock for a test that started at start. Pages sharing
// one test's start share the grid.
func newPageClock(start time.Time) *pageClock {
	return &pageClock{t0: start.Truncate(time.Second).Add(-2 * time.Second), step: time.Second}
}

// next numbers an answer: it returns k (from 0) and the explicit timestamp to append to every
// sample line of the page's text format, " <t0 + k·step in Unix milliseconds>".
func (c *pageClock) next() (int, string) {
	k := c.n.Add(1) - 1
	return int(k), " " + strconv.FormatInt(c.at(int(k)).UnixMilli(), 10)
}

// at is the page's time of its k-th answer.
func (c *pageClock) at(k int) time.Time {
	return c.t0.Add(time.Duration(k) * c.step)
}

// gridProbe names one stored series of a page on a pageClock that gridEnd reads: a counter
// (metric, with matchers picking one series of the target) that changes at every answer.
type gridProbe struct {
	target   string
	metric   string
	matchers map[string]string
}

// gridEnd waits (up to three minutes) until, for every probe, the store holds every one of
// its page's answers from span before some time end up to end, with end − span not before
// notBefore, and returns the latest such end. A query whose rate windows lie inside
// [end − span, end] then reads only complete, evenly spaced samples, where Prometheus's
// rate() extrapolates to the window's edges in full and so equals the page's own rate.
//
// The store is read as Grafana would, through raw queries at a one-second step on the
// grid: the value at step T is the latest sample at or before T, and the probed counter
// changes at every answer, so a value that differs from the one a step earlier proves that
// the grid's point in (T − 1 s, T] is stored.
func gridEnd(t *testing.T, host *pluginHost, ds dataSource, c *pageClock, probes []gridProbe, notBefore time.Time, span time.Duration) time.Time {
	t.Helper()
	deadline := time.Now().Add(3 * time.Minute)
	for {
		to := time.Now()
		from := to.Add(-90 * time.Second)
		if from.Before(c.t0) {
			from = c.t0
		}
		models := map[string]map[string]any{}
		for i, p := range probes {
			m := map[string]any{"queryType": "raw", "metric": p.metric, "targets": []string{p.target}}
			if len(p.matchers) > 0 {
				m["matchers"] = p.matchers
			}
			models[fmt.Sprintf("P%d", i)] = m
		}
		res := host.query(t, ds, from, to, models)
		var end time.Time
		stored := make([]map[int64]bool, len(probes))
		for i, p := range probes {
			r := res[fmt.Sprintf("P%d", i)]
			require.Empty(t, r.err, "raw %s of %s", p.metric, p.target)
			stored[i] = map[int64]bool{}
			ss := seriesOf(t, r.frames)
			require.LessOrEqual(t, len(ss), 1, "probe %+v: pick one series with matchers", p)
			var last time.Time
			for _, s := range ss {
				for j := 1; j < len(s.values); j++ {
					require.Equal(t, c.step, s.times[j].Sub(s.times[j-1]), "probe %+v: raw steps", p)
					a, b := s.values[j-1], s.values[j]
					if math.IsNaN(a) || math.IsNaN(b) || a == b {
						continue
					}
					g := c.t0.Add(s.times[j].Sub(c.t0).Truncate(c.step))
					stored[i][g.UnixMilli()] = true
					if g.After(last) {
						last = g
					}
				}
			}
			if last.IsZero() {
				end = time.Time{}
				break
			}
			if i == 0 || last.Before(end) {
				end = last
			}
		}
		complete := !end.IsZero() && !end.Add(-span).Before(notBefore)
		for i := range probes {
			for g := end.Add(-span); complete && !g.After(end); g = g.Add(c.step) {
				complete = stored[i][g.UnixMilli()]
			}
		}
		if complete {
			return end
		}
		require.True(t, time.Now().Before(deadline), "the pages never served a complete stretch of %v after %v (probes %+v)", span, notBefore, probes)
		time.Sleep(500 * time.Millisecond)
	}
}
