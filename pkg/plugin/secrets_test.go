package plugin

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/backend"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestSecretsNeverEchoed: a remote server that rejects every request and
// echoes the request's headers in its error body (proxies and debug servers
// do) must not hand the bearer token or the custom header value to a panel
// viewer: the query error, the health message and details, and resource
// answers carry *** instead.
func TestSecretsNeverEchoed(t *testing.T) {
	const token, header = "SUPERSECRETTOKEN123", "HDRSECRET456"
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		msg := fmt.Sprintf("bad request; headers: %s / %s", r.Header.Get("Authorization"), r.Header.Get("X-Scope-OrgID"))
		_ = json.NewEncoder(w).Encode(map[string]string{"status": "error", "errorType": "bad_data", "error": msg})
	}))
	defer srv.Close()
	js, err := json.Marshal(map[string]any{"mode": "remote", "remoteTimeout": "5s",
		"httpHeaderName1": "X-Scope-OrgID",
		"targets":         []map[string]any{{"name": "vllm-a", "selector": `{job="vllm"}`}}})
	require.NoError(t, err)
	inst, err := NewInstance(context.Background(), backend.DataSourceInstanceSettings{UID: "s", Type: PluginID, URL: srv.URL, JSONData: js,
		DecryptedSecureJSONData: map[string]string{"remoteBearerToken": token, "httpHeaderValue1": header}})
	require.NoError(t, err)
	i := inst.(*Instance)
	require.NoError(t, i.settingsErr)
	t.Cleanup(i.Dispose)

	var out []string
	resp := queryBoth(t, i, map[string]any{"queryType": "latency", "stages": []string{"ttft"}},
		map[string]any{"queryType": "slo", "profile": "interactive-chat"})
	for _, dr := range resp.Responses {
		if dr.Error != nil {
			out = append(out, dr.Error.Error())
		}
		for _, f := range dr.Frames {
			if f.Meta != nil {
				for _, n := range f.Meta.Notices {
					out = append(out, n.Text)
				}
			}
		}
	}
	h, err := i.CheckHealth(context.Background(), &backend.CheckHealthRequest{})
	require.NoError(t, err)
	out = append(out, h.Message, string(h.JSONDetails))
	var sent []*backend.CallResourceResponse
	for _, path := range []string{"discover", "models", "signals"} {
		require.NoError(t, i.CallResource(context.Background(), &backend.CallResourceRequest{Path: path, Method: "GET", URL: path},
			backend.CallResourceResponseSenderFunc(func(r *backend.CallResourceResponse) error { sent = append(sent, r); return nil })))
	}
	for _, r := range sent {
		out = append(out, string(r.Body))
	}
	all := strings.Join(out, "\n")
	require.Contains(t, all, "headers: ", "the server's echo reached the outputs, so the test tests something")
	assert.NotContains(t, all, token)
	assert.NotContains(t, all, header)
	assert.Contains(t, all, secretMask)
}

// TestSecretEncodingsNeverEchoed: a remote server that echoes the base64 of
// the whole Authorization header (`Bearer <token>`) and the token's hex, in
// its label values (model names: the health text and /models) and in series
// labels (a raw query's frame labels), reaches no viewer with either. The
// encodings are Python's (base64.b64encode(b"Bearer " + token), hexlify).
// Checked failing before: both reached the health text, the frame labels and
// /models.
func TestSecretEncodingsNeverEchoed(t *testing.T) {
	const token = "SUPERSECRETTOKEN123"
	const b64Header = "QmVhcmVyIFNVUEVSU0VDUkVUVE9LRU4xMjM="
	const hexToken = "5355504552534543524554544f4b454e313233"
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		require.Equal(t, "Bearer "+token, r.Header.Get("Authorization"))
		w.Header().Set("Content-Type", "application/json")
		labels := `{"__name__":"vllm:num_requests_running","job":"vllm","model_name":"m-` + b64Header + `","echo":"` + hexToken + `"}`
		switch {
		case strings.Contains(r.URL.Path, "/label/") && strings.Contains(r.URL.Path, "__name__"):
			_, _ = w.Write([]byte(`{"status":"success","data":["vllm:num_requests_running","vllm:time_to_first_token_seconds_bucket"]}`))
		case strings.Contains(r.URL.Path, "/label/"):
			_, _ = w.Write([]byte(`{"status":"success","data":["m-` + b64Header + `","h-` + hexToken + `"]}`))
		case strings.HasSuffix(r.URL.Path, "/query_range"):
			now := time.Now().Unix()
			_, _ = fmt.Fprintf(w, `{"status":"success","data":{"resultType":"matrix","result":[{"metric":%s,"values":[[%d,"1"],[%d,"2"]]}]}}`, labels, now-60, now-30)
		case strings.HasSuffix(r.URL.Path, "/series"):
			_, _ = w.Write([]byte(`{"status":"success","data":[` + labels + `]}`))
		default:
			_, _ = fmt.Fprintf(w, `{"status":"success","data":{"resultType":"vector","result":[{"metric":%s,"value":[%d,"1"]}]}}`, labels, time.Now().Unix())
		}
	}))
	defer srv.Close()
	js, err := json.Marshal(map[string]any{"mode": "remote", "remoteTimeout": "5s",
		"targets": []map[string]any{{"name": "vllm-a", "selector": `{job="vllm"}`}}})
	require.NoError(t, err)
	inst, err := NewInstance(context.Background(), backend.DataSourceInstanceSettings{UID: "s2", Type: PluginID, URL: srv.URL, JSONData: js,
		DecryptedSecureJSONData: map[string]string{"remoteBearerToken": token}})
	require.NoError(t, err)
	i := inst.(*Instance)
	require.NoError(t, i.settingsErr)
	t.Cleanup(i.Dispose)

	h, err := i.CheckHealth(context.Background(), &backend.CheckHealthRequest{})
	require.NoError(t, err)
	health := h.Message + "\n" + string(h.JSONDetails)

	resp := queryBoth(t, i, map[string]any{"queryType": "raw", "metric": "vllm:num_requests_running"})
	var labels []string
	for _, dr := range resp.Responses {
		require.NoError(t, dr.Error)
		for _, f := range dr.Frames {
			for _, fd := range f.Fields {
				for k, v := range fd.Labels {
					labels = append(labels, k+"="+v)
				}
			}
		}
	}
	frameLabels := strings.Join(labels, "\n")

	var sent []*backend.CallResourceResponse
	require.NoError(t, i.CallResource(context.Background(), &backend.CallResourceRequest{Path: "models", Method: "GET", URL: "models"},
		backend.CallResourceResponseSenderFunc(func(r *backend.CallResourceResponse) error { sent = append(sent, r); return nil })))
	require.Len(t, sent, 1)
	models := string(sent[0].Body)

	for what, text := range map[string]string{"health": health, "frame labels": frameLabels, "/models": models} {
		assert.Contains(t, text, "m-", "%s: the echo reached it, so the test tests something", what)
		assert.NotContains(t, text, "U0VDUkVUVE9LRU4", "%s: base64 of the header's SECRETTOKEN", what)
		assert.NotContains(t, text, "4543524554544f4b", "%s: hex of ECRETTOK", what)
		assert.NotContains(t, text, token, what)
	}
	t.Logf("health: %s\nlabels: %s\nmodels: %s", h.Message, frameLabels, models)
}
