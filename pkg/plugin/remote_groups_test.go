package plugin

import (
	"context"
	"encoding/json"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/backend"
	"github.com/grafana/grafana-plugin-sdk-go/data"
	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/tsdb"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/inferscope/inferscope-llm-datasource/pkg/source"
)

// tsdbAPI serves the part of Prometheus's HTTP API the plugin uses
// (query, query_range, label values) from a TSDB, evaluated by the embedded
// PromQL engine: a server whose answers are Prometheus's own evaluation of
// the samples the test wrote.
func tsdbAPI(t *testing.T, q source.Querier) *httptest.Server {
	t.Helper()
	parseT := func(s string) time.Time {
		f, err := strconv.ParseFloat(s, 64)
		if err != nil {
			tt, _ := time.Parse(time.RFC3339Nano, s)
			return tt
		}
		sec, frac := math.Modf(f)
		return time.Unix(int64(sec), int64(frac*1e9))
	}
	reply := func(w http.ResponseWriter, v any, err error) {
		w.Header().Set("Content-Type", "application/json")
		if err != nil {
			w.WriteHeader(http.StatusBadRequest)
			_ = json.NewEncoder(w).Encode(map[string]any{"status": "error", "errorType": "bad_data", "error": err.Error()})
			return
		}
		_ = json.NewEncoder(w).Encode(map[string]any{"status": "success", "data": v})
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/api/v1/query", func(w http.ResponseWriter, r *http.Request) {
		_ = r.ParseForm()
		v, err := q.Query(r.Context(), r.Form.Get("query"), parseT(r.Form.Get("time")))
		if err != nil {
			reply(w, nil, err)
			return
		}
		reply(w, map[string]any{"resultType": v.Type().String(), "result": v}, nil)
	})
	mux.HandleFunc("/api/v1/query_range", func(w http.ResponseWriter, r *http.Request) {
		_ = r.ParseForm()
		step, _ := strconv.ParseFloat(r.Form.Get("step"), 64)
		m, err := q.QueryRange(r.Context(), r.Form.Get("query"), parseT(r.Form.Get("start")), parseT(r.Form.Get("end")),
			time.Duration(step*float64(time.Second)))
		if err != nil {
			reply(w, nil, err)
			return
		}
		if m == nil {
			m = model.Matrix{}
		}
		reply(w, map[string]any{"resultType": "matrix", "result": m}, nil)
	})
	mux.HandleFunc("/api/v1/label/{name}/values", func(w http.ResponseWriter, r *http.Request) {
		_ = r.ParseForm()
		seen := map[string]bool{}
		matches := r.Form["match[]"]
		if len(matches) == 0 {
			matches = []string{""}
		}
		for _, m := range matches {
			vs, err := q.LabelValues(r.Context(), r.PathValue("name"), m, parseT(r.Form.Get("start")), parseT(r.Form.Get("end")))
			if err != nil {
				reply(w, nil, err)
				return
			}
			for _, v := range vs {
				seen[v] = true
			}
		}
		out := []string{}
		for v := range seen {
			out = append(out, v)
		}
		sort.Strings(out)
		reply(w, out, nil)
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv
}

// replacedPodStore holds what a Prometheus scraping a Kubernetes deployment
// "chat" holds when its only pod chat-7d9f-a is replaced at minute 30 by
// chat-7d9f-b (a new name, as a rollout or an eviction gives): vLLM's TTFT
// histogram and running gauge, every 15 s, from t0 to t0+60m. Each scrape
// interval, pod a finishes 30 requests (10 with TTFT ≤ 0.1 s, 10 in
// (0.1, 0.5], 10 in (0.5, 1]) and pod b 30 (none ≤ 0.1 s, 15 in (0.1, 0.5],
// 15 in (0.5, 1]), so by histogram_quantile's linear interpolation the TTFT
// p50 is 0.1 + 0.4·(15−10)/10 = 0.3 s on pod a and 0.1 + 0.4·15/15 = 0.5 s
// on pod b, and each serves 30/15 = 2 requests/s. A pod of another
// namespace, outside the group's selector, serves 1000 requests/s.
func replacedPodStore(t *testing.T, t0 time.Time) source.Querier {
	t.Helper()
	db, err := tsdb.Open(t.TempDir(), nil, nil, tsdb.DefaultOptions(), nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = db.Close() })
	app := db.Appender(context.Background())
	type pod struct {
		ns, name   string
		from, to   int // scrape indices, 15 s apart
		perBucket  [3]float64
		running    float64
		deployment string
	}
	pods := []pod{
		{"llm", "chat-7d9f-a", 0, 120, [3]float64{10, 10, 10}, 3, "chat"},
		{"llm", "chat-7d9f-b", 120, 240, [3]float64{0, 15, 15}, 5, "chat"},
		{"other", "batch-0", 0, 240, [3]float64{0, 0, 15000}, 50, "batch"},
	}
	for _, p := range pods {
		base := []string{"job", "vllm", "namespace", p.ns, "pod", p.name, "instance", p.name + ":8000", "deployment", p.deployment, "model_name", "Qwen/Qwen3-0.6B"}
		for i := p.from; i <= p.to; i++ {
			ts := t0.Add(time.Duration(i) * 15 * time.Second).UnixMilli()
			n := float64(i - p.from)
			cum := 0.0
			for k, le := range []string{"0.1", "0.5", "1"} {
				cum += p.perBucket[k]
				_, err := app.Append(0, labels.FromStrings(append([]string{"__name__", "vllm:time_to_first_token_seconds_bucket", "le", le}, base...)...), ts, cum*n)
				require.NoError(t, err)
			}
			_, err := app.Append(0, labels.FromStrings(append([]string{"__name__", "vllm:time_to_first_token_seconds_bucket", "le", "+Inf"}, base...)...), ts, cum*n)
			require.NoError(t, err)
			_, err = app.Append(0, labels.FromStrings(append([]string{"__name__", "vllm:time_to_first_token_seconds_count"}, base...)...), ts, cum*n)
			require.NoError(t, err)
			_, err = app.Append(0, labels.FromStrings(append([]string{"__name__", "vllm:time_to_first_token_seconds_sum"}, base...)...), ts, 0.4*cum*n)
			require.NoError(t, err)
			_, err = app.Append(0, labels.FromStrings(append([]string{"__name__", "vllm:num_requests_running"}, base...)...), ts, p.running)
			require.NoError(t, err)
		}
	}
	require.NoError(t, app.Commit())
	return source.NewEmbedded(db, source.EmbeddedOptions{})
}

func groupInstance(t *testing.T, url string, now time.Time) *Instance {
	t.Helper()
	js, err := json.Marshal(map[string]any{"mode": "remote", "scrapeInterval": "15s",
		"targetGroups": []map[string]any{{"name": "chat", "selector": `{namespace="llm", job="vllm"}`,
			"targetLabels": []string{"namespace", "pod"}, "groupLabels": []string{"deployment"}, "maxTargets": 1}}})
	require.NoError(t, err)
	inst, err := NewInstance(context.Background(), backend.DataSourceInstanceSettings{UID: "g", Type: PluginID, URL: url, JSONData: js})
	require.NoError(t, err)
	i := inst.(*Instance)
	require.NoError(t, i.settingsErr)
	i.now = func() time.Time { return now }
	t.Cleanup(i.Dispose)
	return i
}

// seriesAt returns, per series of the frames (keyed by its labels), the
// value at time at.
func seriesAt(t *testing.T, frames data.Frames, at time.Time) map[string]float64 {
	t.Helper()
	out := map[string]float64{}
	for _, f := range frames {
		var times *data.Field
		for _, fl := range f.Fields {
			if fl.Type() == data.FieldTypeTime {
				times = fl
			}
		}
		if times == nil {
			continue
		}
		for _, fl := range f.Fields {
			if fl.Type() == data.FieldTypeTime {
				continue
			}
			for k := 0; k < fl.Len(); k++ {
				if ts, ok := times.At(k).(time.Time); ok && ts.Equal(at) {
					if v, ok := fl.ConcreteAt(k); ok {
						if x, ok := v.(float64); ok {
							out[fl.Name+" "+fl.Labels.String()] = x
						}
					}
				}
			}
		}
	}
	return out
}

func queryAt(t *testing.T, i *Instance, from, to time.Time, q map[string]any) data.Frames {
	t.Helper()
	js, err := json.Marshal(q)
	require.NoError(t, err)
	resp, err := i.QueryData(context.Background(), &backend.QueryDataRequest{Queries: []backend.DataQuery{{RefID: "A",
		QueryType: q["queryType"].(string), JSON: js, Interval: time.Minute, MaxDataPoints: 1000, TimeRange: backend.TimeRange{From: from, To: to}}}})
	require.NoError(t, err)
	r := resp.Responses["A"]
	require.NoError(t, r.Error)
	return r.Frames
}

// TestTargetGroupKeepsHistoryWhenAPodIsReplaced: a pod replaced under a new
// name needs no edit of the data source. The group's own target and a
// groupBy on its group label carry one series across the replacement, whose
// values are pod a's before it and pod b's after it (the hand-computed TTFT
// p50 of each, above), with the same labels, so an alert rule on it keeps
// its one alert instance; groupBy the target label splits the answer per
// discovered pod.
func TestTargetGroupKeepsHistoryWhenAPodIsReplaced(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	srv := tsdbAPI(t, replacedPodStore(t, t0))
	end := t0.Add(60 * time.Minute)
	i := groupInstance(t, srv.URL, end)
	before, after := t0.Add(20*time.Minute), t0.Add(50*time.Minute)

	for _, by := range []string{"target", "deployment"} {
		lat := map[string]any{"queryType": "latency", "stages": []string{"ttft"}, "stats": []string{"p50"}, "bounds": false, "window": "5m", "groupBy": by}
		frames := queryAt(t, i, t0, end, lat)
		b, a := seriesAt(t, frames, before), seriesAt(t, frames, after)
		require.Len(t, b, 1, "groupBy %s: one series before the replacement: %v", by, b)
		require.Len(t, a, 1, "groupBy %s: one series after the replacement: %v", by, a)
		for k, v := range b {
			assert.InDelta(t, 0.3, v, 1e-9, "groupBy %s: pod a's p50 before", by)
			require.Contains(t, a, k, "groupBy %s: the same series (same labels, the alert's instance) after the replacement", by)
			assert.InDelta(t, 0.5, a[k], 1e-9, "groupBy %s: pod b's p50 after", by)
			if by == "deployment" {
				assert.Contains(t, k, `deployment=chat`)
			}
		}

		// The alert rule's query: the same JSON over the rule's last 10 minutes, evaluated
		// before and after the replacement, answers under the same labels.
		ab := seriesAt(t, queryAt(t, i, before.Add(-10*time.Minute), before, lat), before)
		aa := seriesAt(t, queryAt(t, i, after.Add(-10*time.Minute), after, lat), after)
		require.Len(t, ab, 1)
		require.Len(t, aa, 1)
		for k := range ab {
			assert.Contains(t, aa, k, "groupBy %s: the alert instance is the same before and after the replacement", by)
		}
	}

	sat := queryAt(t, i, t0, end, map[string]any{"queryType": "saturation", "groupBy": "deployment"})
	for at, want := range map[time.Time]float64{before: 3, after: 5} {
		got := map[string]float64{}
		for k, v := range seriesAt(t, sat, at) {
			if strings.Contains(k, "running") {
				got[k] = v
			}
		}
		require.Len(t, got, 1, "running requests of the deployment at %s: %v", at, got)
		for _, v := range got {
			assert.InDelta(t, want, v, 1e-9, "running requests at %s (the other namespace's 50 are outside the selector)", at)
		}
	}

	// Per discovered target: groupBy pod gives pod a before and pod b after.
	frames := queryAt(t, i, t0, end, map[string]any{"queryType": "latency", "stages": []string{"ttft"}, "stats": []string{"p50"}, "bounds": false, "window": "5m", "groupBy": "pod"})
	b, a := seriesAt(t, frames, before), seriesAt(t, frames, after)
	require.Len(t, b, 1, "%v", b)
	require.Len(t, a, 1, "%v", a)
	for k, v := range b {
		assert.Contains(t, k, "chat-7d9f-a")
		assert.InDelta(t, 0.3, v, 1e-9)
	}
	for k, v := range a {
		assert.Contains(t, k, "chat-7d9f-b")
		assert.InDelta(t, 0.5, v, 1e-9)
	}
}

// TestTargetGroupMembersFollowTheSeries: GET /members lists the pods the
// group's series name in the last hour (both the replaced pod and its
// successor at minute 60, none of the other namespace), capped at the
// group's maxTargets (1 here) with a notice naming how many were left out;
// ten minutes after minute 120, only the successor is left.
func TestTargetGroupMembersFollowTheSeries(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	srv := tsdbAPI(t, replacedPodStore(t, t0))
	i := groupInstance(t, srv.URL, t0.Add(60*time.Minute))
	ms, err := i.members(context.Background(), "")
	require.NoError(t, err)
	require.Len(t, ms, 1)
	assert.Equal(t, "chat", ms[0].Group)
	assert.Equal(t, 2, ms[0].Total)
	require.Len(t, ms[0].Members, 1)
	assert.Equal(t, map[string]string{"namespace": "llm", "pod": "chat-7d9f-a", "deployment": "chat"}, ms[0].Members[0].Labels)
	assert.Contains(t, ms[0].Notice, "2 targets (namespace, pod)")
	assert.Contains(t, ms[0].Notice, "more than its maxTargets 1")
	h, err := i.CheckHealth(context.Background(), &backend.CheckHealthRequest{})
	require.NoError(t, err)
	assert.Contains(t, h.Message, "chat: vllm", "the group is probed as a target")
	assert.Contains(t, h.Message, "Target group chat: 2 discovered targets by namespace, pod in the last 1h0m0s (target group chat: 2 targets")

	// Pod a's last sample is at minute 30, pod b's at minute 60, and the window is 1h: at
	// minute 80 both are listed, at minute 100 only pod b, at minute 130 neither.
	for _, c := range []struct {
		min  int
		pods []string
	}{{80, []string{"chat-7d9f-a", "chat-7d9f-b"}}, {100, []string{"chat-7d9f-b"}}, {130, nil}} {
		i.now = func() time.Time { return t0.Add(time.Duration(c.min) * time.Minute) }
		ms, err = i.members(context.Background(), "chat")
		require.NoError(t, err)
		assert.Equal(t, len(c.pods), ms[0].Total, "minute %d", c.min)
		if len(c.pods) > 0 {
			assert.Equal(t, c.pods[0], ms[0].Members[0].Labels["pod"], "minute %d", c.min)
		} else {
			assert.Empty(t, ms[0].Members)
			assert.Empty(t, ms[0].Notice)
		}
	}

	_, err = i.members(context.Background(), "nosuch")
	require.ErrorContains(t, err, `group: "nosuch" is not a target group`)

	// A groupBy that is neither canonical nor a group label names the group's labels.
	js, _ := json.Marshal(map[string]any{"queryType": "latency", "groupBy": "node"})
	resp, err := i.QueryData(context.Background(), &backend.QueryDataRequest{Queries: []backend.DataQuery{{RefID: "A", QueryType: "latency", JSON: js,
		Interval: time.Minute, MaxDataPoints: 100, TimeRange: backend.TimeRange{From: t0, To: t0.Add(time.Hour)}}}})
	require.NoError(t, err)
	require.ErrorContains(t, resp.Responses["A"].Error, "a label of the target groups in scope (namespace, pod, deployment)")
}

// TestEveryQueryTypeTakesAGroupLabel: every query type of the query schema
// but cost, regression and capacity (grouped by target by design, which
// here is the group) accepts groupBy on a target group's target label; where
// a type does not answer this bare query, it is for a field the query leaves
// out, never for groupBy.
func TestEveryQueryTypeTakesAGroupLabel(t *testing.T) {
	t0 := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	srv := tsdbAPI(t, replacedPodStore(t, t0))
	i := groupInstance(t, srv.URL, t0.Add(60*time.Minute))
	b, err := os.ReadFile(filepath.Join("..", "..", "src", "generated", "queryschema.json"))
	require.NoError(t, err)
	var schema map[string]json.RawMessage
	require.NoError(t, json.Unmarshal(b, &schema))
	require.NotEmpty(t, schema)
	perTarget := map[string]bool{"cost": true, "regression": true, "capacity": true}
	answered := 0
	for qt := range schema {
		js, _ := json.Marshal(map[string]any{"queryType": qt, "groupBy": "pod"})
		resp, err := i.QueryData(context.Background(), &backend.QueryDataRequest{Queries: []backend.DataQuery{{RefID: "A", QueryType: qt, JSON: js,
			Interval: time.Minute, MaxDataPoints: 100, TimeRange: backend.TimeRange{From: t0, To: t0.Add(time.Hour)}}}})
		require.NoError(t, err, qt)
		if e := resp.Responses["A"].Error; e != nil {
			if perTarget[qt] {
				// Per target by design: a price, a regression verdict and the twin's engine
				// belong to a target (here the group), never to a label of it.
				assert.Contains(t, e.Error(), "groupBy", qt)
				continue
			}
			assert.NotContains(t, e.Error(), "groupBy", qt)
			t.Logf("%s: %v", qt, e)
			continue
		}
		assert.False(t, perTarget[qt], qt)
		answered++
	}
	t.Logf("%d of %d query types answered groupBy pod", answered, len(schema))
}
