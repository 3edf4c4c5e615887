package plugin

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/backend"
	"github.com/grafana/grafana-plugin-sdk-go/backend/log"
	"github.com/grafana/grafana-plugin-sdk-go/data"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

// newLiveInstance builds an instance the way Grafana does, with a real
// collector storing under a temporary storagePath.
func newLiveInstance(t *testing.T, uid string, js map[string]any) *Instance {
	t.Helper()
	b, err := json.Marshal(js)
	require.NoError(t, err)
	raw, err := NewInstance(context.Background(), backend.DataSourceInstanceSettings{UID: uid, JSONData: b})
	require.NoError(t, err)
	inst := raw.(*Instance)
	require.NoError(t, inst.settingsErr)
	return inst
}

// TestHealthMessageStaysShort: 50 unreachable targets under Grafana's own
// 1 s deadline: the message names that deadline and stays short; every
// target is in the JSON details.
func TestHealthMessageStaysShort(t *testing.T) {
	opt := goleak.IgnoreCurrent()
	t.Cleanup(func() { goleak.VerifyNone(t, opt) })
	stall := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() }))
	defer stall.Close()
	var targets []map[string]any
	for k := 0; k < 50; k++ {
		targets = append(targets, map[string]any{"name": fmt.Sprintf("vllm-%02d", k), "url": stall.URL + "/metrics"})
	}
	inst := newLiveInstance(t, "health-short", map[string]any{"storagePath": t.TempDir(), "targets": targets})
	defer inst.Dispose()
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	res, err := inst.CheckHealth(ctx, &backend.CheckHealthRequest{})
	require.NoError(t, err)
	assert.Equal(t, backend.HealthStatusError, res.Status)
	t.Logf("health message with 50 failed targets: %d bytes", len(res.Message))
	assert.Less(t, len(res.Message), 1200, res.Message)
	assert.Contains(t, res.Message, "50 of 50 targets failed")
	assert.Contains(t, res.Message, "the health check's deadline of")
	assert.Contains(t, res.Message, "set by Grafana")
	assert.Contains(t, res.Message, "and 45 more (see the details)")
	var details struct {
		Targets []healthTarget `json:"targets"`
	}
	require.NoError(t, json.Unmarshal(res.JSONDetails, &details))
	assert.Len(t, details.Targets, 50)
}

// TestInstanceStorageDirectory: the store lives in storagePath/org.<org>/<uid>,
// marked as that data source's, and outlives the instance.
func TestInstanceStorageDirectory(t *testing.T) {
	root := t.TempDir()
	inst := newLiveInstance(t, "P1809F7CD0C75ACF3", map[string]any{"storagePath": root})
	assert.Equal(t, filepath.Join(root, "org.1", "P1809F7CD0C75ACF3"), inst.collector.Dir(), "organisation unknown: 1")
	owner, err := os.ReadFile(filepath.Join(root, "org.1", "P1809F7CD0C75ACF3.owner"))
	require.NoError(t, err)
	assert.Equal(t, "org=1 uid=\"P1809F7CD0C75ACF3\"\n", string(owner))
	inst.Dispose()
	_, err = os.Stat(filepath.Join(root, "org.1", "P1809F7CD0C75ACF3", "wal"))
	require.NoError(t, err, "the history stays after Dispose")
}

// TestShutdownDisposesEveryInstance: what the process does on SIGTERM or
// on the gRPC server's stop.
func TestShutdownDisposesEveryInstance(t *testing.T) {
	opt := goleak.IgnoreCurrent()
	t.Cleanup(func() { goleak.VerifyNone(t, opt) })
	root := t.TempDir()
	a := newLiveInstance(t, "a", map[string]any{"storagePath": root})
	b := newLiveInstance(t, "b", map[string]any{"storagePath": root})
	require.ElementsMatch(t, []*Instance{a, b}, live.all())
	Shutdown()
	assert.Empty(t, live.all())
	// Both stores were closed: their locks are free.
	for _, uid := range []string{"a", "b"} {
		c := newLiveInstance(t, uid, map[string]any{"storagePath": root})
		c.Dispose()
	}
}

// TestQueryAfterDisposeSaysRetry: a query reaching a disposed instance gets
// a 503 "data source reconfigured, retry", not a 500 about a closed head.
func TestQueryAfterDisposeSaysRetry(t *testing.T) {
	inst := newLiveInstance(t, "retry", map[string]any{"storagePath": t.TempDir(),
		"targets": []map[string]any{{"name": "vllm-a", "url": "http://127.0.0.1:1/metrics"}}})
	inst.Dispose()
	before := queryCount(t, "raw", "error")
	now := time.Now()
	resp, err := inst.QueryData(context.Background(), &backend.QueryDataRequest{Queries: []backend.DataQuery{{
		RefID: "A", QueryType: "raw", JSON: []byte(`{"queryType":"raw","metric":"vllm:num_requests_running"}`),
		TimeRange: backend.TimeRange{From: now.Add(-time.Hour), To: now}, Interval: time.Minute, MaxDataPoints: 60,
	}}})
	require.NoError(t, err)
	r := resp.Responses["A"]
	require.Error(t, r.Error)
	assert.Contains(t, r.Error.Error(), "data source reconfigured, retry")
	assert.Equal(t, backend.Status(http.StatusServiceUnavailable), r.Status)
	// inferscope_query_duration_seconds counted the failed raw query.
	assert.Equal(t, before+1, queryCount(t, "raw", "error"))
}

// queryCount is the sample count of inferscope_query_duration_seconds for
// a query type and outcome, from the registry the SDK serves.
func queryCount(t *testing.T, queryType, outcome string) uint64 {
	t.Helper()
	mfs, err := prometheus.DefaultGatherer.Gather()
	require.NoError(t, err)
	for _, mf := range mfs {
		if mf.GetName() != "inferscope_query_duration_seconds" {
			continue
		}
		for _, m := range mf.GetMetric() {
			l := map[string]string{}
			for _, lp := range m.GetLabel() {
				l[lp.GetName()] = lp.GetValue()
			}
			if l["query_type"] == queryType && l["outcome"] == outcome {
				return m.GetHistogram().GetSampleCount()
			}
		}
	}
	return 0
}

// TestNoticeMetrics: every notice of an answered query is counted by
// query type and severity.
func TestNoticeMetrics(t *testing.T) {
	f := data.NewFrame("x")
	f.SetMeta(&data.FrameMeta{Notices: []data.Notice{{Severity: data.NoticeSeverityWarning, Text: "a"}, {Severity: data.NoticeSeverityWarning, Text: "b"}, {Severity: data.NoticeSeverityInfo, Text: "c"}}})
	warn := noticesTotal.WithLabelValues("latency", "warning")
	info := noticesTotal.WithLabelValues("latency", "info")
	w0, i0 := testutil.ToFloat64(warn), testutil.ToFloat64(info)
	observeQuery("latency", time.Now(), backend.DataResponse{Frames: data.Frames{f}})
	assert.Equal(t, w0+2, testutil.ToFloat64(warn))
	assert.Equal(t, i0+1, testutil.ToFloat64(info))
}

// fakeLog records what reaches the SDK's logger.
type fakeLog struct {
	lines *[]string
	with  []any
}

func (f fakeLog) rec(lvl, msg string, args ...any) {
	*f.lines = append(*f.lines, fmt.Sprint(lvl, " ", msg, " ", append(append([]any{}, f.with...), args...)))
}
func (f fakeLog) Debug(msg string, args ...any) { f.rec("debug", msg, args...) }
func (f fakeLog) Info(msg string, args ...any)  { f.rec("info", msg, args...) }
func (f fakeLog) Warn(msg string, args ...any)  { f.rec("warn", msg, args...) }
func (f fakeLog) Error(msg string, args ...any) { f.rec("error", msg, args...) }
func (f fakeLog) Level() log.Level              { return log.Debug }
func (f fakeLog) With(args ...any) log.Logger {
	return fakeLog{lines: f.lines, with: append(append([]any{}, f.with...), args...)}
}
func (f fakeLog) FromContext(context.Context) log.Logger { return f }

// TestLogsGoThroughTheSDK: warnings and errors reach the SDK's logger with
// the data source's uid; debug and info lines of the TSDB do not.
func TestLogsGoThroughTheSDK(t *testing.T) {
	var lines []string
	l := newLogger(fakeLog{lines: &lines}, "P1809F7CD", nil)
	l.With("component", "tsdb").Info("WAL replay completed")
	l.With("component", "scrape").Warn("append failed", "target", "vllm-a")
	l.WithGroup("g").Error("boom", "k", 1)
	assert.Equal(t, []string{
		"warn append failed [datasource P1809F7CD component scrape target vllm-a]",
		"error boom [datasource P1809F7CD g.k 1]",
	}, lines)
}

// TestSettingsSavesLeaveNothing: ten settings saves as Grafana performs
// them (a new instance, then Dispose of the old one) with two live targets
// leave no goroutine and one store; the last Dispose closes it.
func TestSettingsSavesLeaveNothing(t *testing.T) {
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = w.Write([]byte("vllm:num_requests_running{model_name=\"m\"} 1\n"))
	}))
	var open, total atomic.Int64 // the server's view of the scrape connections
	srv.Config.ConnState = func(_ net.Conn, st http.ConnState) {
		switch st {
		case http.StateNew:
			open.Add(1)
			total.Add(1)
		case http.StateClosed, http.StateHijacked:
			open.Add(-1)
		}
	}
	srv.Start()
	defer srv.Close()
	opt := goleak.IgnoreCurrent()
	t.Cleanup(func() { goleak.VerifyNone(t, opt) })
	js := map[string]any{"storagePath": t.TempDir(), "scrapeInterval": "200ms", "scrapeTimeout": "200ms",
		"targets": []map[string]any{{"name": "a", "url": srv.URL + "/metrics"}, {"name": "b", "url": srv.URL + "/metrics"}}}
	prev := newLiveInstance(t, "saves", js)
	for k := 0; k < 10; k++ {
		time.Sleep(250 * time.Millisecond) // let both targets be scraped
		next := newLiveInstance(t, "saves", js)
		prev.Dispose()
		prev = next
		// Only the live instance's two connections remain.
		require.Eventually(t, func() bool { return open.Load() <= 2 }, 2*time.Second, 5*time.Millisecond, "save %d: %d connections open", k, open.Load())
	}
	assert.Len(t, live.all(), 1)
	prev.Dispose()
	assert.Empty(t, live.all())
	require.Eventually(t, func() bool { return open.Load() == 0 }, 5*time.Second, 10*time.Millisecond,
		"%d of %d scrape connections still open after the last Dispose", open.Load(), total.Load())
	t.Logf("ten settings saves: %d scrape connections opened, all closed", total.Load())
}
