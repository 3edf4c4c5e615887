package plugin

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/backend"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/inferscope/inferscope-llm-datasource/pkg/settings"
)

// fakeServer is a Prometheus HTTP API whose answer to each query is chosen
// by a substring of the PromQL: the test decides which queries fail and how.
type fakeServer struct {
	// behave returns the status code and body for a query, or 0 for the
	// default success (an empty matrix or vector).
	behave func(query string) (int, string)
	delay  time.Duration
	calls  atomic.Int64
}

func (f *fakeServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.calls.Add(1)
	_ = r.ParseForm()
	if f.delay > 0 {
		select {
		case <-time.After(f.delay):
		case <-r.Context().Done():
			return
		}
	}
	w.Header().Set("Content-Type", "application/json")
	if strings.HasPrefix(r.URL.Path, "/api/v1/label/") {
		_, _ = w.Write([]byte(`{"status":"success","data":["vllm:e2e_request_latency_seconds_bucket","vllm:time_to_first_token_seconds_bucket","vllm:num_requests_running","vllm:kv_cache_usage_perc","vllm:inter_token_latency_seconds_bucket"]}`))
		return
	}
	q := r.Form.Get("query")
	if f.behave != nil {
		if code, body := f.behave(q); code != 0 {
			w.WriteHeader(code)
			_, _ = w.Write([]byte(body))
			return
		}
	}
	typ := "matrix"
	if r.URL.Path == "/api/v1/query" {
		typ = "vector"
	}
	_, _ = fmt.Fprintf(w, `{"status":"success","data":{"resultType":%q,"result":[]}}`, typ)
}

// remoteInstance builds a remote-mode instance over url with three vLLM targets.
func remoteInstance(t *testing.T, url, timeout string) *Instance {
	t.Helper()
	js, err := json.Marshal(map[string]any{"mode": "remote", "remoteTimeout": timeout,
		"targets": []map[string]any{{"name": "vllm-a", "selector": `{job="vllm", pod="a"}`}, {"name": "vllm-b", "selector": `{job="vllm", pod="b"}`},
			{"name": "vllm-c", "selector": `{job="vllm", pod="c"}`}}})
	require.NoError(t, err)
	inst, err := NewInstance(context.Background(), backend.DataSourceInstanceSettings{UID: "r", Type: PluginID, URL: url, JSONData: js})
	require.NoError(t, err)
	i := inst.(*Instance)
	require.NoError(t, i.settingsErr)
	t.Cleanup(i.Dispose)
	return i
}

func queryBoth(t *testing.T, i *Instance, qs ...map[string]any) *backend.QueryDataResponse {
	t.Helper()
	now := time.Now()
	req := &backend.QueryDataRequest{}
	for k, q := range qs {
		js, err := json.Marshal(q)
		require.NoError(t, err)
		req.Queries = append(req.Queries, backend.DataQuery{RefID: string(rune('A' + k)), QueryType: q["queryType"].(string), JSON: js,
			Interval: 15 * time.Second, MaxDataPoints: 100, TimeRange: backend.TimeRange{From: now.Add(-time.Hour), To: now}})
	}
	resp, err := i.QueryData(context.Background(), req)
	require.NoError(t, err)
	return resp
}

// TestRemoteServerFailuresAreNamed: each way a server can fail reaches the
// panel as one clear sentence with a downstream status, and a failing query
// does not fail the other queries of the same request.
func TestRemoteServerFailuresAreNamed(t *testing.T) {
	cases := []struct {
		name   string
		code   int
		body   string
		status backend.Status
		want   string
	}{
		{"limit: samples per query", 422, `{"status":"error","errorType":"execution","error":"query processing would load too many samples into memory in query execution"}`,
			backend.StatusTooManyRequests, "hit its limit on samples per query (Prometheus --query.max-samples)"},
		{"limit: Mimir series", 422, `{"status":"error","errorType":"execution","error":"the query exceeded the maximum number of series (limit: 100000 series) (err-mimir-max-series-per-query)"}`,
			backend.StatusTooManyRequests, "hit its limit on series per query (Mimir -querier.max-fetched-series-per-query)"},
		{"bad data", 400, `{"status":"error","errorType":"bad_data","error":"parse error: unexpected character"}`,
			backend.StatusBadRequest, "rejected the query"},
		{"proxy 502", 502, `<html><body>Bad Gateway</body></html>`, backend.StatusBadGateway, "failed (range query"},
		{"5xx with API error", 503, `{"status":"error","errorType":"unavailable","error":"store gateway unavailable"}`, backend.StatusBadGateway, "store gateway unavailable"},
		{"auth 401", 401, `Unauthorized`, backend.StatusBadGateway, "refused the request"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := &fakeServer{behave: func(q string) (int, string) {
				if strings.Contains(q, "time_to_first_token_seconds_bucket") {
					return c.code, c.body
				}
				return 0, ""
			}}
			srv := httptest.NewServer(f)
			defer srv.Close()
			i := remoteInstance(t, srv.URL, "5s")
			resp := queryBoth(t, i,
				map[string]any{"queryType": "latency", "stages": []string{"ttft"}},
				map[string]any{"queryType": "latency", "stages": []string{"e2e"}})
			a, b := resp.Responses["A"], resp.Responses["B"]
			require.Error(t, a.Error)
			assert.Contains(t, a.Error.Error(), "remote Prometheus "+srv.URL)
			assert.Contains(t, a.Error.Error(), c.want)
			assert.Equal(t, c.status, a.Status)
			assert.Equal(t, backend.ErrorSourceDownstream, a.ErrorSource)
			assert.NoError(t, b.Error, "the other query is unaffected")
		})
	}
}

func TestRemoteServerWarningsBecomeNotices(t *testing.T) {
	f := &fakeServer{behave: func(q string) (int, string) {
		return 200, `{"status":"success","warnings":["partial response: store 10.0.0.9:10901 unavailable"],"data":{"resultType":"matrix","result":[]}}`
	}}
	srv := httptest.NewServer(f)
	defer srv.Close()
	i := remoteInstance(t, srv.URL, "5s")
	resp := queryBoth(t, i, map[string]any{"queryType": "throughput"})
	a := resp.Responses["A"]
	require.NoError(t, a.Error)
	require.NotEmpty(t, a.Frames)
	var texts []string
	for _, n := range a.Frames[0].Meta.Notices {
		texts = append(texts, n.Text)
	}
	assert.Contains(t, texts, "remote Prometheus "+srv.URL+": partial response: store 10.0.0.9:10901 unavailable", "once, though every query of the request carried it")
}

func TestRemoteServerSlowIsCutAtTheTimeout(t *testing.T) {
	f := &fakeServer{delay: 10 * time.Second}
	srv := httptest.NewServer(f)
	defer srv.Close()
	i := remoteInstance(t, srv.URL, "1s")
	t0 := time.Now()
	resp := queryBoth(t, i, map[string]any{"queryType": "saturation"})
	took := time.Since(t0)
	a := resp.Responses["A"]
	require.Error(t, a.Error)
	assert.Contains(t, a.Error.Error(), "did not answer in time")
	// Each request's timeout and the query's in all are the same 1 s: either names it.
	assert.Regexp(t, `(no answer within 1s|took longer than 1s in all), the data source's timeout`, a.Error.Error())
	assert.Equal(t, backend.StatusTimeout, a.Status)
	// The server's kind (waited for at most kindWait), the stored names (1 s), the targets'
	// status (its own request, 1 s), the names again (1 s: a failed look-up is not cached) and
	// then the query's requests: the first one to time out ends the others of the same query
	// at once, whatever the number of targets and signals. Far below the server's 10 s.
	assert.Less(t, took, 4500*time.Millisecond, "no hang beyond the timeout")

	h, err := i.CheckHealth(context.Background(), &backend.CheckHealthRequest{})
	require.NoError(t, err)
	assert.Equal(t, backend.HealthStatusError, h.Status)
	assert.Contains(t, h.Message, "did not answer in time")
}

func TestRemoteServerUnreachable(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	url := "http://" + l.Addr().String()
	require.NoError(t, l.Close())
	i := remoteInstance(t, url, "2s")
	resp := queryBoth(t, i, map[string]any{"queryType": "latency"})
	a := resp.Responses["A"]
	require.Error(t, a.Error)
	assert.Contains(t, a.Error.Error(), "remote Prometheus "+url+" is unreachable")
	assert.Contains(t, a.Error.Error(), "connection refused")
	assert.Equal(t, backend.StatusBadGateway, a.Status)

	h, err := i.CheckHealth(context.Background(), &backend.CheckHealthRequest{})
	require.NoError(t, err)
	assert.Equal(t, backend.HealthStatusError, h.Status)
	assert.Contains(t, h.Message, "is unreachable")
}

// TestRemoteHealthPerTarget: reachable server, one target it holds and one
// it does not.
func TestRemoteHealthPerTarget(t *testing.T) {
	mux := http.NewServeMux()
	mux.HandleFunc("/api/v1/query", func(w http.ResponseWriter, r *http.Request) {
		_ = r.ParseForm()
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"status":"success","data":{"resultType":"vector","result":[]}}`))
	})
	mux.HandleFunc("/api/v1/label/{name}/values", func(w http.ResponseWriter, r *http.Request) {
		_ = r.ParseForm()
		w.Header().Set("Content-Type", "application/json")
		match := strings.Join(r.Form["match[]"], " ")
		switch {
		case r.PathValue("name") == "__name__" && strings.Contains(match, `pod="a"`):
			_, _ = w.Write([]byte(`{"status":"success","data":["vllm:kv_cache_usage_perc","vllm:inter_token_latency_seconds_bucket","vllm:e2e_request_latency_seconds_bucket"]}`))
		case r.PathValue("name") == "model_name" && strings.Contains(match, `pod="a"`):
			_, _ = w.Write([]byte(`{"status":"success","data":["Qwen/Qwen3-0.6B"]}`))
		default:
			_, _ = w.Write([]byte(`{"status":"success","data":[]}`))
		}
	})
	srv := httptest.NewServer(mux)
	defer srv.Close()
	js, _ := json.Marshal(map[string]any{"mode": "remote",
		"targets": []map[string]any{{"name": "vllm-a", "selector": `{job="vllm", pod="a"}`}, {"name": "vllm-b", "selector": `{job="vllm", pod="b"}`}}})
	inst, err := NewInstance(context.Background(), backend.DataSourceInstanceSettings{UID: "r", Type: PluginID, URL: srv.URL, JSONData: js})
	require.NoError(t, err)
	i := inst.(*Instance)
	defer i.Dispose()
	h, err := i.CheckHealth(context.Background(), &backend.CheckHealthRequest{})
	require.NoError(t, err)
	assert.Equal(t, backend.HealthStatusError, h.Status)
	assert.Contains(t, h.Message, "Remote Prometheus "+srv.URL+" answered in")
	assert.Contains(t, h.Message, "1 of 2 targets failed: target `vllm-b`: the server holds no series matching {job=\"vllm\", pod=\"b\"} in the last 1h0m0s")
	assert.Contains(t, h.Message, "vllm-a: vllm v1 ")
	assert.Contains(t, h.Message, " serving Qwen/Qwen3-0.6B, ")
}

// TestRemoteDiscover: the discovery helper lists the jobs and instances on
// the server that carry an engine's running-requests gauge or a GPU
// exporter's utilisation, with a selector to paste into a target.
func TestRemoteDiscover(t *testing.T) {
	var match []string
	mux := http.NewServeMux()
	mux.HandleFunc("/api/v1/series", func(w http.ResponseWriter, r *http.Request) {
		_ = r.ParseForm()
		match = r.Form["match[]"]
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"status":"success","data":[
			{"__name__":"vllm:num_requests_running","job":"vllm","instance":"10.0.0.5:8000","namespace":"llm","pod":"vllm-0","model_name":"Qwen/Qwen3-0.6B","engine":"0"},
			{"__name__":"vllm:num_requests_running","job":"vllm","instance":"10.0.0.5:8000","namespace":"llm","pod":"vllm-0","model_name":"Qwen/Qwen3-0.6B","engine":"1"},
			{"__name__":"vllm:num_requests_running","job":"vllm","instance":"10.0.0.6:8000","namespace":"llm","pod":"vllm-1","model_name":"Qwen/Qwen3-0.6B"},
			{"__name__":"sglang:num_running_reqs","job":"sglang","instance":"10.0.0.7:30000","model_name":"llama"},
			{"__name__":"DCGM_FI_DEV_GPU_UTIL","job":"dcgm","instance":"10.0.0.5:9400","Hostname":"node-a","gpu":"0"}]}`))
	})
	srv := httptest.NewServer(mux)
	defer srv.Close()
	i := remoteInstance(t, srv.URL, "5s")
	d, err := i.discover(context.Background())
	require.NoError(t, err)
	assert.Contains(t, match, `{__name__="vllm:num_requests_running"}`)
	assert.Contains(t, match, `{__name__="DCGM_FI_DEV_GPU_UTIL"}`)
	assert.Contains(t, match, `{__name__="llm_d_epp_ready_endpoints"}`, "the llm-d router, by its pool gauge")
	assert.Contains(t, match, `{__name__="inference_pool_ready_pods"}`, "the llm-d router under its deprecated names")
	require.Len(t, d.Jobs, 3)
	assert.Equal(t, Candidate{Job: "dcgm", Engine: "dcgm", Instances: 1, Selector: `{job="dcgm"}`,
		Group: &settings.TargetGroup{Name: "dcgm", Selector: `{job="dcgm"}`, TargetLabels: []string{"instance"}}}, d.Jobs[0])
	assert.Equal(t, Candidate{Job: "vllm", Engine: "vllm", Instances: 2, Models: []string{"Qwen/Qwen3-0.6B"}, Selector: `{job="vllm"}`,
		Group: &settings.TargetGroup{Name: "vllm", Selector: `{job="vllm"}`, TargetLabels: []string{"namespace", "pod"}}}, d.Jobs[2], "a job is added as a target group named by namespace and pod")
	require.Len(t, d.Instances, 4)
	assert.Equal(t, Candidate{Job: "vllm", Instance: "10.0.0.5:8000", Engine: "vllm", Labels: map[string]string{"namespace": "llm", "pod": "vllm-0"},
		Models: []string{"Qwen/Qwen3-0.6B"}, Selector: `{job="vllm", instance="10.0.0.5:8000"}`}, d.Instances[2])
	assert.Equal(t, "sglang", d.Instances[1].Engine)

	// Embedded mode has nothing to discover.
	emb := newInstanceForTest(i.settings, nil)
	_, err = emb.discover(context.Background())
	require.Error(t, err)
}

// TestRemoteAnswerTooLarge: an answer past remoteMaxAnswerMiB fails its query with a
// sentence naming the limit (400 from downstream), read no further than the limit; the
// other query of the request is answered.
func TestRemoteAnswerTooLarge(t *testing.T) {
	big := `{"status":"success","data":{"resultType":"matrix","result":[{"metric":{"pad":"` + strings.Repeat("x", 2<<20) + `"},"values":[]}]}}`
	f := &fakeServer{behave: func(q string) (int, string) {
		if strings.Contains(q, "time_to_first_token_seconds_bucket") {
			return 200, big
		}
		return 0, ""
	}}
	srv := httptest.NewServer(f)
	defer srv.Close()
	js, err := json.Marshal(map[string]any{"mode": "remote", "remoteTimeout": "5s", "remoteMaxAnswerMiB": 1,
		"targets": []map[string]any{{"name": "vllm-a", "selector": `{job="vllm", pod="a"}`}}})
	require.NoError(t, err)
	inst, err := NewInstance(context.Background(), backend.DataSourceInstanceSettings{UID: "r", Type: PluginID, URL: srv.URL, JSONData: js})
	require.NoError(t, err)
	i := inst.(*Instance)
	require.NoError(t, i.settingsErr)
	t.Cleanup(i.Dispose)
	resp := queryBoth(t, i,
		map[string]any{"queryType": "latency", "stages": []string{"ttft"}},
		map[string]any{"queryType": "latency", "stages": []string{"e2e"}})
	a, b := resp.Responses["A"], resp.Responses["B"]
	require.Error(t, a.Error)
	assert.Contains(t, a.Error.Error(), "answered more than the plugin reads")
	assert.Contains(t, a.Error.Error(), "the answer passed 1 MiB, the most the data source reads for one answer (remoteMaxAnswerMiB)")
	assert.Equal(t, backend.StatusBadRequest, a.Status)
	assert.Equal(t, backend.ErrorSourceDownstream, a.ErrorSource)
	assert.NoError(t, b.Error)
}

// TestRemoteQueryTotalTimeBounded: remoteTimeout bounds a query's requests to the server in
// all. The server takes 600 ms per request under a 1 s remoteTimeout, and a latency query of
// three stages makes dozens of requests, several one after another: each alone is within
// the timeout (11 s in all before, and answered), so the query now fails with the sentence
// naming the timeout, and its requests stop (checked failing before: no error, 38
// requests). A slower machine only makes the requests later, never the query pass.
func TestRemoteQueryTotalTimeBounded(t *testing.T) {
	f := &fakeServer{delay: 600 * time.Millisecond}
	srv := httptest.NewServer(f)
	defer srv.Close()
	i := remoteInstance(t, srv.URL, "1s")
	resp := queryBoth(t, i, map[string]any{"queryType": "latency", "stages": []string{"ttft", "e2e", "itl"}})
	a := resp.Responses["A"]
	require.Error(t, a.Error)
	assert.Contains(t, a.Error.Error(), "did not answer in time")
	assert.Contains(t, a.Error.Error(), "the query's requests to the server took longer than 1s in all, the data source's timeout (remoteTimeout)")
	assert.Equal(t, backend.StatusTimeout, a.Status)
	assert.Less(t, f.calls.Load(), int64(38), "the query stopped asking")
}
