package asgrafana

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestRemoteRedirectsAsGrafana: a remote server answering 302, 307 or 308
// to another port of 127.0.0.1 (another origin) is not followed by the
// built plugin, whatever the credentials (bearer token, basic auth, a
// custom header): Save & test and queries say why, and the other server
// receives no request at all. A redirect within the server's origin is
// followed (the data source answers).
func TestRemoteRedirectsAsGrafana(t *testing.T) {
	var mu sync.Mutex
	var foreign []string
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		foreign = append(foreign, r.Method+" "+r.URL.Path+" auth="+r.Header.Get("Authorization")+" tenant="+r.Header.Get("X-Scope-OrgID"))
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"status":"success","data":{"resultType":"vector","result":[{"metric":{},"value":[1,"1"]}]}}`))
	}))
	defer other.Close()
	codes := map[string]int{"/302": http.StatusFound, "/307": http.StatusTemporaryRedirect, "/308": http.StatusPermanentRedirect}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case strings.HasPrefix(r.URL.Path, "/same/"):
			http.Redirect(w, r, "/real/"+strings.TrimPrefix(r.URL.Path, "/same/"), http.StatusTemporaryRedirect)
		case strings.HasPrefix(r.URL.Path, "/real/"):
			w.Header().Set("Content-Type", "application/json")
			_, _ = w.Write([]byte(`{"status":"success","data":{"resultType":"vector","result":[{"metric":{},"value":[1,"1"]}]}}`))
		default:
			for p, c := range codes {
				if strings.HasPrefix(r.URL.Path, p+"/") {
					http.Redirect(w, r, other.URL+strings.TrimPrefix(r.URL.Path, p), c)
					return
				}
			}
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()

	h := startPlugin(t)
	jd, err := json.Marshal(map[string]any{"mode": "remote", "remoteTimeout": "5s", "httpHeaderName1": "X-Scope-OrgID",
		"targets": []map[string]any{{"name": "vllm-a", "selector": `{job="vllm"}`}}})
	require.NoError(t, err)
	var id int64 = 70
	for p := range codes {
		for _, auth := range []string{"bearer", "basic"} {
			id++
			ds := dataSource{id: id, uid: "redir" + strings.Trim(p, "/") + auth, jsonData: jd, url: srv.URL + p, updatedMS: time.Now().UnixMilli(),
				secure: map[string]string{"httpHeaderValue1": "tenant-secret-1"}}
			if auth == "bearer" {
				ds.secure["remoteBearerToken"] = "bearer-secret-token-1"
			} else {
				ds.basicAuth, ds.basicAuthUser = true, "alice"
				ds.secure["basicAuthPassword"] = "basic-secret-pass-1"
			}
			hr := h.checkHealth(t, ds)
			assert.Equal(t, "ERROR", hr.Status.String(), hr.Message)
			assert.Contains(t, hr.Message, "another origin", "%s %s", p, auth)
			assert.Contains(t, hr.Message, other.URL, "%s %s", p, auth)
			now := time.Now().Truncate(time.Minute)
			res := h.query(t, ds, now.Add(-10*time.Minute), now, map[string]map[string]any{
				"A": {"queryType": "raw", "metric": "vllm:num_requests_running"},
			})
			assert.Contains(t, res["A"].err, "another origin", "%s %s", p, auth)
		}
	}
	same := dataSource{id: 90, uid: "redir-same", jsonData: jd, url: srv.URL + "/same", updatedMS: time.Now().UnixMilli(),
		secure: map[string]string{"httpHeaderValue1": "tenant-secret-1", "remoteBearerToken": "bearer-secret-token-1"}}
	hr := h.checkHealth(t, same)
	assert.Contains(t, hr.Message, "Remote Prometheus "+srv.URL+"/same answered", "a redirect within the origin is followed")

	mu.Lock()
	defer mu.Unlock()
	assert.Empty(t, foreign, "requests that reached the other origin")
}
