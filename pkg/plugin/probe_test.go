package plugin

import (
	"context"
	"encoding/json"
	"math"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/backend"
	"github.com/grafana/grafana-plugin-sdk-go/data"
	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/inferscope/inferscope-llm-datasource/pkg/queries/goldentest"
	"github.com/inferscope/inferscope-llm-datasource/pkg/sim"
)

// probeFixture returns an instance over the probe fixture (goldentest.Probe: vllm-a with
// probe-a's hand-written requests, goldentest.ProbeSchedule, and vllm-b without a probe),
// its clock at the end of the history, and the simulation start. Its golden cases run from
// pkg/queries (probe_golden_test.go and the OnProbe cases of the other types).
func probeFixture(t *testing.T) (*Instance, time.Time) {
	t.Helper()
	probeFxOnce.Do(func() {
		fx, err := goldentest.Probe(os.Getenv("GF_PATHS_DATA"))
		if err != nil {
			probeFxErr = err
			return
		}
		probeFxInst = newInstanceForTest(fx.Settings, fx.Querier)
		probeFxInst.now = func() time.Time { return fx.End }
		probeFxStart = fx.Start
	})
	require.NoError(t, probeFxErr)
	return probeFxInst, probeFxStart
}

var (
	probeFxOnce  sync.Once
	probeFxInst  *Instance
	probeFxStart time.Time
	probeFxErr   error
)

// probeQuery runs one query on the probe fixture over [from, to) at a 1 m step.
func probeQuery(t *testing.T, query map[string]any, from, to time.Duration) data.Frames {
	t.Helper()
	inst, start := probeFixture(t)
	js, err := json.Marshal(query)
	require.NoError(t, err)
	resp, err := inst.QueryData(context.Background(), &backend.QueryDataRequest{Queries: []backend.DataQuery{{
		RefID: "A", QueryType: query["queryType"].(string), JSON: js, Interval: time.Minute, MaxDataPoints: 1000,
		TimeRange: backend.TimeRange{From: start.Add(from), To: start.Add(to)},
	}}})
	require.NoError(t, err)
	require.NoError(t, resp.Responses["A"].Error)
	return resp.Responses["A"].Frames
}

// valueAt returns the value at time at of the frame whose value field has
// every given label, and whether there was one.
func valueAt(t *testing.T, fs data.Frames, at time.Time, labels map[string]string) (float64, bool) {
	t.Helper()
	for _, f := range fs {
		if len(f.Fields) < 2 {
			continue
		}
		ok := true
		for k, v := range labels {
			if f.Fields[1].Labels[k] != v {
				ok = false
			}
		}
		if !ok {
			continue
		}
		for i := 0; i < f.Fields[0].Len(); i++ {
			if f.Fields[0].At(i).(time.Time).Equal(at) {
				p := f.Fields[1].At(i).(*float64)
				if p == nil {
					return math.NaN(), true
				}
				return *p, true
			}
		}
	}
	return 0, false
}

// TestProbeSpikeIsNotSustained: the one-token stall of request 48 (12:01) marks
// the windows holding it as a spike and never as sustained; the 32 slow
// requests from 20:01 make windows inside that stretch sustained, not spikes.
// Expected values come from the fixture's schedule, by hand.
func TestProbeSpikeIsNotSustained(t *testing.T) {
	fs := probeQuery(t, q("probe", "view", "spikes", "window", "5m", "threshold", 0.5), 5*time.Minute, goldentest.Span)
	start := sim.DefaultStart
	at := func(m int, stat string) float64 {
		v, ok := valueAt(t, fs, start.Add(time.Duration(m)*time.Minute), map[string]string{"stat": stat, "target": "vllm-a", "probe": "probe-a"})
		require.True(t, ok, "no %s at minute %d", stat, m)
		return v
	}
	// 9:00: nothing above 0.5 s
	assert.Equal(t, 0.0, at(9, "over"))
	assert.Equal(t, 0.0, at(9, "spike"))
	assert.Equal(t, 0.0, at(9, "sustained"))
	// 14:00: the stalled request and 19 healthy ones in (9:00, 14:00]
	assert.Equal(t, 1.0, at(14, "over"))
	assert.Equal(t, 20.0, at(14, "requests"))
	assert.Equal(t, 1.0, at(14, "spike"))
	assert.Equal(t, 0.0, at(14, "sustained"))
	assert.InDelta(t, 0.800, at(14, "max"), 1e-9, "the exact per-request maximum, not a bucket bound")
	// 26:00: every request of (21:00, 26:00] had a 0.6 s gap
	assert.Equal(t, 20.0, at(26, "over"))
	assert.Equal(t, 1.0, at(26, "sustained"))
	assert.Equal(t, 0.0, at(26, "spike"))
	assert.InDelta(t, 0.600, at(26, "max"), 1e-9)
	// no window of the stall's stretch (12:01 … 17:00) is ever sustained
	for m := 12; m <= 18; m++ {
		assert.Equal(t, 0.0, at(m, "sustained"), "minute %d", m)
	}
}

// TestProbeJoins: latency with source probe, jitter, errors and the breakdown's
// outside-the-engine row, against values from the schedule and the engine's
// own histogram read directly from the store.
func TestProbeJoins(t *testing.T) {
	start := sim.DefaultStart
	m10 := start.Add(10 * time.Minute)
	l := map[string]string{"target": "vllm-a", "probe": "probe-a", "source": "probe"}
	with := func(k, v string, more ...string) map[string]string {
		out := map[string]string{k: v}
		for a, b := range l {
			out[a] = b
		}
		for i := 0; i+1 < len(more); i += 2 {
			out[more[i]] = more[i+1]
		}
		return out
	}

	fs := probeQuery(t, q("latency", "source", "probe", "stages", []string{"ttft", "itl"}, "stats", []string{"p50", "mean"}, "groupBy", "target", "window", "5m"), 5*time.Minute, goldentest.Span)
	v, ok := valueAt(t, fs, m10, with("stage", "ttft", "stat", "mean"))
	require.True(t, ok)
	assert.InDelta(t, 0.120, v, 1e-9)
	// every TTFT is 0.120 s, in the bucket (0.1, 0.125]: linear interpolation
	// puts the median halfway, 0.1125 s
	v, _ = valueAt(t, fs, m10, with("stage", "ttft", "stat", "p50"))
	assert.InDelta(t, 0.1125, v, 1e-9)
	v, _ = valueAt(t, fs, m10, with("stage", "itl", "stat", "mean"))
	assert.InDelta(t, 0.020, v, 1e-9)

	fs = probeQuery(t, q("probe", "window", "5m"), 5*time.Minute, goldentest.Span)
	v, _ = valueAt(t, fs, m10, with("stat", "stddev_mean"))
	assert.InDelta(t, 0.0, v, 1e-9, "equal gaps have no jitter")
	v, _ = valueAt(t, fs, start.Add(14*time.Minute), with("stat", "max_gap"))
	assert.InDelta(t, 0.800, v, 1e-9)
	// the stalled request: 14 gaps of 0.02 and one of 0.8; mean 0.072,
	// variance (14·0.052² + 0.728²)/15
	want := (14*0.052*0.052 + 0.728*0.728) / 15
	v, _ = valueAt(t, fs, start.Add(14*time.Minute), with("stat", "variance_max"))
	assert.InDelta(t, want, v, 1e-9)

	fs = probeQuery(t, q("probe", "view", "errors", "window", "5m"), 5*time.Minute, goldentest.Span)
	// (14:00, 19:00] holds 20 requests: 429 at 15:01 and 16:01, 503 at 17:31,
	// a cut at 18:01: success ratio 16/20
	at19 := start.Add(19 * time.Minute)
	v, _ = valueAt(t, fs, at19, with("signal", "success_ratio"))
	assert.InDelta(t, 0.8, v, 1e-9)
	e429, _ := valueAt(t, fs, at19, with("signal", "errors", "class", "http_429", "code", "429"))
	req, _ := valueAt(t, fs, at19, with("signal", "requests"))
	assert.InDelta(t, 2.0/20, e429/req, 1e-9)
	cut, _ := valueAt(t, fs, at19, with("signal", "errors", "class", "stream_cut"))
	assert.InDelta(t, 1.0/20, cut/req, 1e-9)

	// outside the engine = 0.120 − the engine's mean TTFT over the same window,
	// read here straight from the store
	fs = probeQuery(t, q("breakdown", "groupBy", "target", "window", "5m"), 5*time.Minute, goldentest.Span)
	outside, ok := valueAt(t, fs, m10, map[string]string{"stage": "outside_engine", "target": "vllm-a"})
	require.True(t, ok, "no outside-the-engine row for vllm-a")
	_, ok = valueAt(t, fs, m10, map[string]string{"stage": "outside_engine", "target": "vllm-b"})
	assert.False(t, ok, "vllm-b has no probe")
	inst, _ := probeFixture(t)
	vec, err := inst.querier.Query(context.Background(), `sum(rate(vllm:time_to_first_token_seconds_sum{job="vllm-a"}[5m])) / sum(rate(vllm:time_to_first_token_seconds_count{job="vllm-a"}[5m]))`, m10)
	require.NoError(t, err)
	ev, ok := vec.(model.Vector)
	require.True(t, ok && len(ev) == 1, "engine TTFT: %v", vec)
	engine := float64(ev[0].Value)
	t.Logf("vllm-a at 10:00: engine mean TTFT %.4f s, client 0.120 s, outside %.4f s", engine, outside)
	assert.InDelta(t, 0.120-engine, outside, 1e-9)
}

// TestProbeSLO: slo with source probe evaluates the profile on the probe's
// requests: every TTFT (0.120 s) meets 0.15 s; the availability objective
// counts the 4 failed requests of the ~99 the range holds; queue time is not
// measured by a probe (a notice, no row).
func TestProbeSLO(t *testing.T) {
	fs := probeQuery(t, q("slo", "profile", "client", "source", "probe", "groupBy", "target"), 5*time.Minute, goldentest.To)
	require.Len(t, fs, 1)
	f := fs[0]
	col := func(name string) *data.Field {
		fd, _ := f.FieldByName(name)
		require.NotNil(t, fd, name)
		return fd
	}
	rows := map[string]int{}
	for i := 0; i < f.Rows(); i++ {
		rows[col("objective").At(i).(string)] = i
	}
	require.Len(t, rows, 2, "ttft and availability; queue time is engine-only")
	att := func(obj string) float64 {
		v := col("attainment").At(rows[obj])
		if p, ok := v.(*float64); ok {
			return *p
		}
		return v.(float64)
	}
	assert.InDelta(t, 1.0, att("ttft-150ms"), 1e-9)
	// requests made at 5:01 … 29:31 are scraped inside (5:00, 29:53]: 99, of
	// which 4 failed (15:01 and 16:01 429, 17:31 503, 18:01 cut)
	// (rate() extrapolates the two counters' increases by slightly different factors)
	assert.InDelta(t, 1-4.0/99, att("availability"), 1e-5)
	var targetCol, probeCol *data.Field
	for _, fd := range f.Fields {
		if fd.Type() == data.FieldTypeString && fd.Name == "target" {
			targetCol = fd
		}
		if fd.Name == "probe" {
			probeCol = fd
		}
	}
	require.NotNil(t, targetCol)
	require.NotNil(t, probeCol)
	assert.Equal(t, "vllm-a", targetCol.At(rows["availability"]))
	assert.Equal(t, "probe-a", probeCol.At(rows["availability"]))
	notices := f.Meta.Notices
	found := false
	for _, n := range notices {
		found = found || strings.Contains(n.Text, "queue-1s: the probe does not measure queue_time")
	}
	assert.True(t, found, "notice about queue_time: %v", notices)
}

// TestProbeByModel: grouped by model, probe series carry the model the probe
// asked for as model (like every Inferscope result), once.
func TestProbeByModel(t *testing.T) {
	fs := probeQuery(t, q("latency", "source", "probe", "stages", []string{"ttft"}, "stats", []string{"mean"}, "groupBy", "model", "window", "5m"), 5*time.Minute, goldentest.Span)
	require.NotEmpty(t, fs)
	l := fs[0].Fields[1].Labels
	assert.Equal(t, goldentest.ProbeModel, l["model"])
	assert.NotContains(t, l, "exported_model")
	v, ok := valueAt(t, fs, sim.DefaultStart.Add(10*time.Minute), map[string]string{"model": goldentest.ProbeModel, "stat": "mean"})
	require.True(t, ok)
	assert.InDelta(t, 0.120, v, 1e-9)
}
