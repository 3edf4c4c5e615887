package source

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestIsVictoriaMetrics: the buildinfo answers as each server sends them
// (VictoriaMetrics v1.151.0's fixed answer and header, Prometheus 2.42's,
// Thanos 0.42's and Mimir's shape) and a server without the path.
func TestIsVictoriaMetrics(t *testing.T) {
	cases := []struct {
		name   string
		header string
		status int
		body   string
		want   bool
	}{
		{"VictoriaMetrics", "vm-0", 200, `{"status":"success","data":{"version":"2.24.0"}}`, true},
		{"VictoriaMetrics without its hostname header", "", 200, `{"status":"success","data":{"version":"2.24.0"}}`, true},
		{"VictoriaMetrics behind a proxy that 404s the path", "vm-0", 404, `not found`, true},
		{"Prometheus 2.42", "", 200, `{"status":"success","data":{"version":"2.42.0","revision":"225c61122d88b01d1f0eaaee0e05b6f3e0567ac0","branch":"HEAD","buildUser":"root","buildDate":"20230131","goVersion":"go1.19.5"}}`, false},
		{"Thanos", "", 200, `{"status":"success","data":{"version":"0.42.5","revision":"abc","branch":"HEAD","buildUser":"u","buildDate":"d","goVersion":"go1.26.10"}}`, false},
		{"Mimir", "", 200, `{"status":"success","data":{"application":"Grafana Mimir","version":"2.14.0","revision":"r","branch":"b","goVersion":"go1.22","features":{}}}`, false},
		{"no buildinfo", "", 404, `404 page not found`, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				assert.Equal(t, "/prefix/api/v1/status/buildinfo", r.URL.Path)
				if c.header != "" {
					w.Header().Set("X-Server-Hostname", c.header)
				}
				w.WriteHeader(c.status)
				_, _ = w.Write([]byte(c.body))
			}))
			defer srv.Close()
			got, err := IsVictoriaMetrics(context.Background(), srv.URL+"/prefix/", nil)
			require.NoError(t, err)
			assert.Equal(t, c.want, got)
		})
	}
	_, err := IsVictoriaMetrics(context.Background(), "http://127.0.0.1:1", nil)
	assert.Error(t, err, "unreachable")
}
