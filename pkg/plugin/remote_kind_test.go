package plugin

import (
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestVictoriaMetricsIsFlagged: behind a server answering buildinfo as
// VictoriaMetrics v1.151.0 does (a fixed {"version":"2.24.0"} and its
// X-Server-Hostname header), the frames of a rate-based query type carry
// VictoriaMetricsNotice and those of a gauge read do not; the server is asked
// once per instance. Behind Prometheus's buildinfo, no frame carries it.
func TestVictoriaMetricsIsFlagged(t *testing.T) {
	for _, c := range []struct {
		name   string
		header string
		body   string
		want   bool
	}{
		{"VictoriaMetrics", "vm-0", `{"status":"success","data":{"version":"2.24.0"}}`, true},
		{"Prometheus", "", `{"status":"success","data":{"version":"2.42.0","revision":"r","branch":"HEAD","buildUser":"u","buildDate":"d","goVersion":"go1.19"}}`, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			var asked atomic.Int64
			f := &fakeServer{}
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if c.header != "" {
					w.Header().Set("X-Server-Hostname", c.header)
				}
				if r.URL.Path == "/api/v1/status/buildinfo" {
					asked.Add(1)
					w.Header().Set("Content-Type", "application/json")
					_, _ = w.Write([]byte(c.body))
					return
				}
				f.ServeHTTP(w, r)
			}))
			defer srv.Close()
			i := remoteInstance(t, srv.URL, "5s")
			has := func(queryType string, extra map[string]any) bool {
				q := map[string]any{"queryType": queryType}
				for k, v := range extra {
					q[k] = v
				}
				a := queryBoth(t, i, q).Responses["A"]
				require.NoError(t, a.Error, queryType)
				require.NotEmpty(t, a.Frames, queryType)
				found := false
				for _, f := range a.Frames {
					n := 0
					if f.Meta != nil {
						for _, nt := range f.Meta.Notices {
							if nt.Text == VictoriaMetricsNotice {
								n++
							}
						}
					}
					assert.LessOrEqual(t, n, 1, "%s: once per frame", queryType)
					found = found || n == 1
				}
				return found
			}
			assert.Equal(t, c.want, has("throughput", nil), "throughput")
			assert.Equal(t, c.want, has("latency", map[string]any{"stages": []string{"ttft"}}), "latency")
			assert.False(t, has("raw", map[string]any{"metric": "vllm:num_requests_running"}), "raw reads a gauge")
			assert.Equal(t, int64(1), asked.Load(), "buildinfo asked once per instance")
		})
	}
}
