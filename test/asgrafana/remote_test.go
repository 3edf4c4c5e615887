package asgrafana

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/data"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestRemoteModeAsGrafana drives the built plugin in remote mode as Grafana
// does: the server's URL is the data source's top-level URL, the bearer
// token and a custom header come from secureJsonData (Grafana's
// httpHeaderName1/httpHeaderValue1), and every request the plugin sends
// the fake Prometheus must carry them. The fake answers the TTFT buckets
// 1, 3, 4 (le 0.1, 1, +Inf) per second with a partial-data warning: the
// median is 0.1 + 0.9 × (2 − 1)/(3 − 1) = 0.55 s (histogram_quantile's
// linear interpolation, by hand), and the warning is a notice.
func TestRemoteModeAsGrafana(t *testing.T) {
	var mu sync.Mutex
	var seenAuth, seenTenant []string
	mux := http.NewServeMux()
	ok := func(w http.ResponseWriter, body string) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(body))
	}
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		_ = r.ParseForm()
		mu.Lock()
		seenAuth = append(seenAuth, r.Header.Get("Authorization"))
		seenTenant = append(seenTenant, r.Header.Get("X-Scope-OrgID"))
		mu.Unlock()
		q := r.Form.Get("query")
		switch {
		case r.URL.Path == "/api/v1/label/__name__/values":
			ok(w, `{"status":"success","data":["vllm:time_to_first_token_seconds_bucket","vllm:time_to_first_token_seconds_count","vllm:time_to_first_token_seconds_sum","vllm:kv_cache_usage_perc","vllm:inter_token_latency_seconds_bucket","vllm:num_requests_running"]}`)
		case strings.HasPrefix(r.URL.Path, "/api/v1/label/"):
			ok(w, `{"status":"success","data":["Qwen/Qwen3-0.6B"]}`)
		case r.URL.Path == "/api/v1/series":
			ok(w, `{"status":"success","data":[{"__name__":"vllm:num_requests_running","job":"vllm","instance":"10.0.0.5:8000","model_name":"Qwen/Qwen3-0.6B"}]}`)
		case r.URL.Path == "/api/v1/query_range" && strings.Contains(q, "time_to_first_token_seconds_bucket"):
			ts, _ := strconv.ParseFloat(r.Form.Get("start"), 64)
			row := func(le string, v float64) string {
				b, _ := json.Marshal(map[string]any{"metric": map[string]string{"le": le}, "values": [][]any{{ts, jsonNum(v)}}})
				return string(b)
			}
			ok(w, `{"status":"success","warnings":["partial response: store-gateway-2 unavailable"],"data":{"resultType":"matrix","result":[`+
				row("0.1", 1)+","+row("1", 3)+","+row("+Inf", 4)+`]}}`)
		case r.URL.Path == "/api/v1/query_range":
			ok(w, `{"status":"success","data":{"resultType":"matrix","result":[]}}`)
		case r.URL.Path == "/api/v1/query" && q == "vector(1)":
			ok(w, `{"status":"success","data":{"resultType":"vector","result":[{"metric":{},"value":[1,"1"]}]}}`)
		case r.URL.Path == "/api/v1/query":
			ok(w, `{"status":"success","data":{"resultType":"vector","result":[]}}`)
		default:
			http.NotFound(w, r)
		}
	})
	srv := httptest.NewServer(mux)
	defer srv.Close()

	h := startPlugin(t)
	jd, err := json.Marshal(map[string]any{"mode": "remote", "remoteTimeout": "5s", "httpHeaderName1": "X-Scope-OrgID",
		"targets": []map[string]any{{"name": "vllm-a", "selector": `{job="vllm", instance="10.0.0.5:8000"}`}}})
	require.NoError(t, err)
	ds := dataSource{id: 40, uid: "inferscope-remote", jsonData: jd, url: srv.URL, updatedMS: time.Now().UnixMilli(),
		secure: map[string]string{"remoteBearerToken": "s3cret-token", "httpHeaderValue1": "team-llm"}}

	hr := h.checkHealth(t, ds)
	assert.Equal(t, "OK", hr.Status.String(), hr.Message)
	assert.Contains(t, hr.Message, "Remote Prometheus "+srv.URL+" answered")
	assert.Contains(t, hr.Message, "vllm-a: vllm")
	assert.NotContains(t, hr.Message, "s3cret")

	now := time.Now().Truncate(time.Minute)
	res := h.query(t, ds, now.Add(-10*time.Minute), now, map[string]map[string]any{
		"A": {"queryType": "latency", "stages": []string{"ttft"}, "stats": []string{"p50"}, "bounds": false},
	})
	a := res["A"]
	require.Empty(t, a.err)
	var got []float64
	var notices []string
	for _, f := range a.frames {
		if f.Meta != nil {
			for _, n := range f.Meta.Notices {
				notices = append(notices, n.Text)
			}
		}
		for _, fl := range f.Fields {
			if fl.Type() == data.FieldTypeNullableFloat64 || fl.Type() == data.FieldTypeFloat64 {
				for k := 0; k < fl.Len(); k++ {
					if v, ok := fl.ConcreteAt(k); ok {
						got = append(got, v.(float64))
					}
				}
			}
		}
	}
	require.NotEmpty(t, got, "p50 TTFT values")
	assert.InDelta(t, 0.55, got[0], 1e-12)
	assert.Contains(t, notices, "remote Prometheus "+srv.URL+": partial response: store-gateway-2 unavailable")

	code, body := h.resource(t, ds, "discover")
	assert.Equal(t, int32(200), code, string(body))
	assert.Contains(t, string(body), `"selector":"{job=\"vllm\", instance=\"10.0.0.5:8000\"}"`)

	mu.Lock()
	defer mu.Unlock()
	require.NotEmpty(t, seenAuth)
	for k := range seenAuth {
		assert.Equal(t, "Bearer s3cret-token", seenAuth[k], "request %d", k)
		assert.Equal(t, "team-llm", seenTenant[k], "request %d", k)
	}
}

// jsonNum spells a sample value as the Prometheus API does: a string.
func jsonNum(v float64) string {
	b, _ := json.Marshal(v)
	return string(b)
}
