package sim

import (
	"context"
	"math"
	"sort"
	"strconv"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/value"
	"github.com/prometheus/prometheus/promql"
	"github.com/prometheus/prometheus/storage"
	"github.com/prometheus/prometheus/tsdb"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// memAppendable records appended samples; only Append/Commit/Rollback are
// used by FastForward (the embedded interface is nil).
type memAppendable struct {
	samples []memSample
}

type memSample struct {
	l labels.Labels
	t int64
	v float64
}

type memAppender struct {
	storage.Appender
	m       *memAppendable
	pending []memSample
}

func (m *memAppendable) Appender(context.Context) storage.Appender { return &memAppender{m: m} }

func (a *memAppender) Append(_ storage.SeriesRef, l labels.Labels, t int64, v float64) (storage.SeriesRef, error) {
	a.pending = append(a.pending, memSample{l, t, v})
	return 0, nil
}
func (a *memAppender) Commit() error {
	a.m.samples = append(a.m.samples, a.pending...)
	a.pending = nil
	return nil
}
func (a *memAppender) Rollback() error { a.pending = nil; return nil }

func TestFastForwardLabelsAndReport(t *testing.T) {
	s := newSim(t, "flaky", nil, Options{})
	app := &memAppendable{}
	st, err := s.FastForward(context.Background(), app, FastForwardOptions{
		Duration: 10 * time.Minute, ScrapeInterval: 15 * time.Second,
		VLLM: Target{Job: "vllm-a", Instance: "10.0.0.1:8000"}, GPU: Target{Job: "node-a", Instance: "10.0.0.1:9500"},
	})
	require.NoError(t, err)
	assert.Equal(t, 40, st.Scrapes)
	assert.Greater(t, st.FailedScrapes, 0, "flaky scenario fails some scrapes")
	assert.Len(t, app.samples, st.Samples)
	ups := map[string]int{}
	les := map[string]bool{}
	stale := 0
	for _, smp := range app.samples {
		job := smp.l.Get("job")
		require.Contains(t, []string{"vllm-a", "node-a"}, job)
		require.NotEmpty(t, smp.l.Get("instance"))
		assert.Equal(t, int64(0), (smp.t-DefaultStart.UnixMilli())%15000, "timestamps on scrape instants")
		if smp.l.Get("__name__") == "up" {
			ups[job+"="+map[bool]string{true: "1", false: "0"}[smp.v == 1]]++
		}
		if le := smp.l.Get("le"); le != "" {
			les[le] = true
		}
		if value.IsStaleNaN(smp.v) {
			stale++
		}
	}
	assert.Equal(t, 40, ups["node-a=1"])
	assert.Equal(t, st.FailedScrapes, ups["vllm-a=0"])
	assert.Equal(t, 40-st.FailedScrapes, ups["vllm-a=1"])
	assert.Greater(t, stale, 0, "failed scrapes write staleness markers")
	assert.True(t, les["1.0"], "le stored in Prometheus 3 float form")
	assert.True(t, les["+Inf"])
	assert.False(t, les["1"])
}

// A restart resets the counters; rate()/increase() over the stored history
// still count every request (the PromQL engine handles counter resets).
func TestFastForwardRestartIncrease(t *testing.T) {
	s := newSim(t, "restart", func(c *Config) { c.RestartEvery = 5 * time.Minute; c.RestartDowntime = 15 * time.Second }, Options{RecordTruth: true})
	db, err := tsdb.Open(t.TempDir(), nil, nil, tsdb.DefaultOptions(), nil)
	require.NoError(t, err)
	defer db.Close()
	_, err = s.FastForward(context.Background(), db, FastForwardOptions{
		Duration: 30 * time.Minute, ScrapeInterval: 15 * time.Second, VLLM: Target{Job: "vllm-r", Instance: "sim:8000"},
	})
	require.NoError(t, err)
	// ground truth: requests finished (stop/length) in (0, 30 min], excluding
	// those lost with a restart
	end := 1800.0
	truth := 0
	for _, r := range s.Finished() {
		if r.FinishReason != ReasonAbort && r.Finished <= end {
			truth++
		}
	}
	eng := promql.NewEngine(promql.EngineOpts{MaxSamples: 1e7, Timeout: time.Minute, LookbackDelta: 5 * time.Minute})
	ts := DefaultStart.Add(30 * time.Minute)
	q, err := eng.NewInstantQuery(context.Background(), db, nil, `sum(increase(vllm:request_success_total{finished_reason!="abort"}[30m]))`, ts)
	require.NoError(t, err)
	res := q.Exec(context.Background())
	require.NoError(t, res.Err)
	vec, err := res.Vector()
	require.NoError(t, err)
	require.Len(t, vec, 1)
	// increase() extrapolates to the window edges and misses what finished
	// between the last scrape before each restart and the restart: allow 5 %.
	assert.InEpsilon(t, float64(truth), vec[0].F, 0.05, "increase across 5 restarts ≈ true finished count")
	// the stored raw counter does go down (resets happened)
	q2, err := eng.NewInstantQuery(context.Background(), db, nil, `resets(vllm:generation_tokens_total[30m])`, ts)
	require.NoError(t, err)
	res2 := q2.Exec(context.Background())
	require.NoError(t, res2.Err)
	v2, err := res2.Vector()
	require.NoError(t, err)
	require.Len(t, v2, 1)
	assert.Equal(t, 5.0, v2[0].F, "restarts at 5, 10, 15, 20, 25 min")
}

// The true p50/p95/p99 of E2E over a window lies inside the bucket bounds
// that Prometheus' histogram_quantile picks from the stored buckets.
func TestFastForwardTruthWithinBuckets(t *testing.T) {
	s := newSim(t, "healthy", func(c *Config) { c.ClientTimeout = 0 }, Options{RecordTruth: true})
	db, err := tsdb.Open(t.TempDir(), nil, nil, tsdb.DefaultOptions(), nil)
	require.NoError(t, err)
	defer db.Close()
	_, err = s.FastForward(context.Background(), db, FastForwardOptions{
		Duration: 20 * time.Minute, ScrapeInterval: 15 * time.Second, VLLM: Target{Job: "v", Instance: "i:1"},
	})
	require.NoError(t, err)
	eng := promql.NewEngine(promql.EngineOpts{MaxSamples: 1e7, Timeout: time.Minute, LookbackDelta: 5 * time.Minute})
	// window (10 min, 20 min]: truth = requests finished with a timestamp in it.
	// increase over [10m] between scrapes at 600 s and 1200 s is exact for
	// buckets (no extrapolation needed when both ends are scrapes: use the
	// difference of two instant values instead).
	at := func(sec float64) map[string]float64 {
		q, err := eng.NewInstantQuery(context.Background(), db, nil, `vllm:e2e_request_latency_seconds_bucket`, DefaultStart.Add(time.Duration(sec)*time.Second))
		require.NoError(t, err)
		r := q.Exec(context.Background())
		require.NoError(t, r.Err)
		vec, err := r.Vector()
		require.NoError(t, err)
		m := map[string]float64{}
		for _, smp := range vec {
			m[smp.Metric.Get("le")] = smp.F
		}
		return m
	}
	a, b := at(600), at(1200)
	var truth []float64
	for _, r := range s.Finished() {
		if tr, ok := r.Truth(V011); ok && r.LastToken > 600 && r.LastToken <= 1200 {
			truth = append(truth, tr.E2E)
		}
	}
	sort.Float64s(truth)
	type bucket struct{ UpperBound, Count float64 }
	var buckets []bucket
	for le, v := range b {
		f, err := parseLe(le)
		require.NoError(t, err)
		buckets = append(buckets, bucket{UpperBound: f, Count: v - a[le]})
	}
	sort.Slice(buckets, func(i, j int) bool { return buckets[i].UpperBound < buckets[j].UpperBound })
	require.Equal(t, float64(len(truth)), buckets[len(buckets)-1].Count, "bucket increase counts every finished request")
	for _, q := range []float64{0.5, 0.95, 0.99} {
		rank := q * float64(len(truth))
		// bucket holding the rank: the first with cumulative count ≥ rank
		lo := 0.0
		for _, bk := range buckets {
			if bk.Count >= rank {
				tv := truth[max(0, int(math.Ceil(rank))-1)]
				assert.True(t, tv > lo && tv <= bk.UpperBound, "q=%v: true %v within (%v, %v]", q, tv, lo, bk.UpperBound)
				break
			}
			lo = bk.UpperBound
		}
	}
}

func parseLe(s string) (float64, error) {
	if s == "+Inf" {
		return math.Inf(1), nil
	}
	return strconv.ParseFloat(s, 64)
}
