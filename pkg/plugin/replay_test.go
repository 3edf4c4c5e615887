package plugin

import (
	"context"
	"errors"
	"io"
	"math"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/textparse"
	"github.com/prometheus/prometheus/tsdb"
	"github.com/stretchr/testify/require"

	"github.com/inferscope/inferscope-llm-datasource/pkg/catalog"
	"github.com/inferscope/inferscope-llm-datasource/pkg/settings"
	"github.com/inferscope/inferscope-llm-datasource/pkg/source"
)

// replayStore is a TSDB fed by hand with scrapes of text pages, as the
// collector stores them: job/instance labels, catalog.Stores' filter, an
// `up` sample per scrape and staleness markers for series that disappear.
type replayStore struct {
	t    *testing.T
	db   *tsdb.DB
	job  string
	last map[string]labels.Labels
}

func newReplayStore(t *testing.T, job string) *replayStore {
	t.Helper()
	db, err := tsdb.Open(t.TempDir(), nil, nil, tsdb.DefaultOptions(), nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = db.Close() })
	return &replayStore{t: t, db: db, job: job, last: map[string]labels.Labels{}}
}

// scrape stores one scrape of page at ts, with every counter and histogram
// sample multiplied by factor (counters advancing as in cases/README.md).
func (r *replayStore) scrape(page []byte, ts time.Time, factor float64) {
	r.t.Helper()
	app := r.db.Appender(context.Background())
	cur := map[string]labels.Labels{}
	p := textparse.NewPromParser(page, labels.NewSymbolTable(), false)
	types := map[string]model.MetricType{}
	var ls labels.Labels
	for {
		et, err := p.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		require.NoError(r.t, err)
		switch et {
		case textparse.EntryType:
			n, typ := p.Type()
			types[string(n)] = typ
		case textparse.EntrySeries:
			_, _, v := p.Series()
			p.Labels(&ls)
			name := ls.Get(model.MetricNameLabel)
			if !catalog.Stores(name) {
				continue
			}
			switch familyType(types, name) {
			case model.MetricTypeCounter, model.MetricTypeHistogram:
				v *= factor
			}
			b := labels.NewBuilder(ls)
			b.Set("job", r.job)
			b.Set("instance", r.job+":8000")
			l := b.Labels()
			cur[l.String()] = l
			_, err := app.Append(0, l, ts.UnixMilli(), v)
			require.NoError(r.t, err)
		}
	}
	for k, l := range r.last {
		if _, ok := cur[k]; !ok {
			_, err := app.Append(0, l, ts.UnixMilli(), math.Float64frombits(0x7ff0000000000002)) // StaleNaN
			require.NoError(r.t, err)
		}
	}
	r.last = cur
	_, err := app.Append(0, labels.FromStrings("__name__", "up", "job", r.job, "instance", r.job+":8000"), ts.UnixMilli(), 1)
	require.NoError(r.t, err)
	require.NoError(r.t, app.Commit())
}

// familyType finds the TYPE of the family a sample belongs to.
func familyType(types map[string]model.MetricType, name string) model.MetricType {
	if t, ok := types[name]; ok {
		return t
	}
	for _, suf := range []string{"_bucket", "_sum", "_count", "_total"} {
		if len(name) > len(suf) && name[len(name)-len(suf):] == suf {
			if t, ok := types[name[:len(name)-len(suf)]]; ok {
				return t
			}
		}
	}
	return model.MetricTypeUnknown
}

// instance returns a plugin instance over the store with one target named
// after the job, its clock at now.
func (r *replayStore) instance(now time.Time) *Instance {
	r.t.Helper()
	st, err := settings.Load([]byte(`{"targets":[{"name":"`+r.job+`","url":"http://`+r.job+`:8000/metrics"}]}`), nil)
	require.NoError(r.t, err)
	inst := newInstanceForTest(st, source.NewEmbedded(r.db, source.EmbeddedOptions{}))
	inst.now = func() time.Time { return now }
	return inst
}

// swapLabelValue replaces a label value throughout a page.
func swapLabelValue(page []byte, from, to string) []byte {
	return []byte(strings.ReplaceAll(string(page), `"`+from+`"`, `"`+to+`"`))
}

// TestEventsModelChange replays a vLLM page scraped every 15 s for 10
// minutes serving org/model-7b, then the same URL serving org/other-13b
// (a port collision: another server's counters, starting lower). The model
// change is reported once, at the first scrape of the new model (± one
// interval), and it is the only event.
func TestEventsModelChange(t *testing.T) {
	page, err := os.ReadFile("testdata/vllm-v1-dp2-no-ttft-e2e-buckets-end-60s.prom")
	require.NoError(t, err)
	other := swapLabelValue(page, "org/model-7b", "org/other-13b")
	r := newReplayStore(t, "vllm-a")
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	const n = 80 // 20 minutes
	for k := 0; k < n; k++ {
		ts := start.Add(time.Duration(k) * 15 * time.Second)
		if k < 40 {
			r.scrape(page, ts, float64(1+k))
		} else {
			r.scrape(other, ts, float64(1+k-40))
		}
	}
	end := start.Add(n * 15 * time.Second)
	inst := r.instance(end)
	rows := eventRows(t, runQuery(t, inst, map[string]any{"queryType": "events"}, start, end, 15*time.Second))
	require.Len(t, rows, 1, "%+v", rows)
	require.Equal(t, "model_change", rows[0].kind)
	require.WithinDuration(t, start.Add(40*15*time.Second), rows[0].at, 15*time.Second)
	require.Contains(t, rows[0].text, "org/model-7b")
	require.Contains(t, rows[0].text, "org/other-13b")

	// A throughput query spanning the change says so; one before it does not.
	dr := runQuery(t, inst, map[string]any{"queryType": "throughput"}, start.Add(5*time.Minute), end, 15*time.Second)
	require.NoError(t, dr.Error)
	require.True(t, hasNotice(dr.Frames[0].Meta.Notices, "target vllm-a changed its served models at "+rows[0].at.UTC().Format(time.RFC3339)))
	dr = runQuery(t, inst, map[string]any{"queryType": "throughput"}, start.Add(2*time.Minute), start.Add(8*time.Minute), 15*time.Second)
	require.NoError(t, dr.Error)
	require.False(t, hasNotice(dr.Frames[0].Meta.Notices, "changed its served models"))
}

// TestRenameInsideRange (issue 10, item 1): a target exports vLLM's
// time_per_output_token_seconds for the first 3 h and
// inter_token_latency_seconds after an upgrade. An itl query over the 6 h
// has data in both halves: the names come from the queried range, not from
// the last hour before its end. Every request takes 0.02 s (bucket
// (0.01, 0.025]): p50 = 0.01 + 0.5·0.015 = 0.0175 s by histogram_quantile's
// interpolation, in each half.
func TestRenameInsideRange(t *testing.T) {
	mk := func(name string) []byte {
		return []byte("# TYPE vllm:" + name + " histogram\n" +
			"vllm:" + name + `_bucket{engine="0",model_name="m",le="0.01"} 0` + "\n" +
			"vllm:" + name + `_bucket{engine="0",model_name="m",le="0.025"} 10` + "\n" +
			"vllm:" + name + `_bucket{engine="0",model_name="m",le="+Inf"} 10` + "\n" +
			"vllm:" + name + `_sum{engine="0",model_name="m"} 0.2` + "\n" +
			"vllm:" + name + `_count{engine="0",model_name="m"} 10` + "\n" +
			"# TYPE vllm:num_requests_running gauge\n" +
			`vllm:num_requests_running{engine="0",model_name="m"} 1` + "\n")
	}
	before, after := mk("time_per_output_token_seconds"), mk("inter_token_latency_seconds")
	r := newReplayStore(t, "vllm-a")
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	const n = 6 * 60 * 4 // 6 h at 15 s
	for k := 0; k < n; k++ {
		ts := start.Add(time.Duration(k) * 15 * time.Second)
		if k < n/2 {
			r.scrape(before, ts, float64(1+k))
		} else {
			r.scrape(after, ts, float64(1+k))
		}
	}
	// Compact the first hours into blocks, as a long-running collector does:
	// names are then looked up per block, by time.
	require.NoError(t, r.db.Compact(context.Background()))
	require.NotEmpty(t, r.db.Blocks(), "compaction made blocks")
	end := start.Add(n * 15 * time.Second)
	inst := r.instance(end)
	dr := runQuery(t, inst, map[string]any{"queryType": "latency", "stages": []string{"itl"}, "stats": []string{"p50"}, "bounds": false, "window": "5m"},
		start.Add(10*time.Minute), end.Add(-15*time.Second), 10*time.Minute)
	require.NoError(t, dr.Error)
	require.Len(t, dr.Frames, 1)
	f := dr.Frames[0]
	var firstHalf, secondHalf int
	for i := 0; i < f.Rows(); i++ {
		ts := f.Fields[0].At(i).(time.Time)
		v := f.Fields[1].At(i).(*float64)
		if ts.Sub(start) > 3*time.Hour-10*time.Minute && ts.Sub(start) < 3*time.Hour+10*time.Minute {
			continue // windows around the rename
		}
		require.NotNil(t, v, "itl p50 at %s", ts.Sub(start))
		require.InDelta(t, 0.0175, *v, 1e-9, "itl p50 at %s", ts.Sub(start))
		if ts.Sub(start) < 3*time.Hour {
			firstHalf++
		} else {
			secondHalf++
		}
	}
	require.Greater(t, firstHalf, 10)
	require.Greater(t, secondHalf, 10)
}

// TestIdleNotice: a target whose page never changes (no request finishes)
// has its e2e series empty; the latency query says, for that target and
// stage, that no request was counted in the range (the count did not grow),
// and says nothing of the kind for a target whose counters advance.
func TestIdleNotice(t *testing.T) {
	page, err := os.ReadFile("testdata/vllm-v1-dp2-no-ttft-e2e-buckets-end-60s.prom")
	require.NoError(t, err)
	idle := newReplayStore(t, "idle")
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for k := 0; k < 40; k++ {
		idle.scrape(page, start.Add(time.Duration(k)*15*time.Second), 1)
	}
	end := start.Add(40 * 15 * time.Second)
	dr := runQuery(t, idle.instance(end), map[string]any{"queryType": "latency", "stages": []string{"e2e"}, "stats": []string{"p50"}}, start.Add(2*time.Minute), end, 15*time.Second)
	require.NoError(t, dr.Error)
	require.True(t, hasNotice(dr.Frames[0].Meta.Notices, "target idle: no requests in the queried range for e2e (its histogram's count did not grow): no data, not zero"), "%v", dr.Frames[0].Meta.Notices)

	busy := newReplayStore(t, "busy")
	for k := 0; k < 40; k++ {
		busy.scrape(page, start.Add(time.Duration(k)*15*time.Second), float64(1+k))
	}
	dr = runQuery(t, busy.instance(end), map[string]any{"queryType": "latency", "stages": []string{"e2e"}, "stats": []string{"p50"}}, start.Add(2*time.Minute), end, 15*time.Second)
	require.NoError(t, dr.Error)
	require.False(t, hasNotice(dr.Frames[0].Meta.Notices, "no requests in the queried range"), "%v", dr.Frames[0].Meta.Notices)
}
