package plugin

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

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
