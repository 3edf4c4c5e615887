package plugin

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/backend"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestEmbeddedTargetGroupHealthAndMembers: an embedded-mode target group fed
// by file discovery on loopback: Save & test probes the target it found
// (engine detected from the page) and counts the discovered targets, GET
// /members lists it by instance, and a query of the group reads its series.
func TestEmbeddedTargetGroupHealthAndMembers(t *testing.T) {
	page := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; version=0.0.4")
		_, _ = w.Write([]byte("# TYPE vllm:num_requests_running gauge\nvllm:num_requests_running{model_name=\"m\"} 4\n" +
			"# TYPE vllm:kv_cache_usage_perc gauge\nvllm:kv_cache_usage_perc{model_name=\"m\"} 0.5\n"))
	}))
	defer page.Close()
	u, _ := url.Parse(page.URL)
	sd := filepath.Join(t.TempDir(), "targets.json")
	b, _ := json.Marshal([]map[string]any{{"targets": []string{u.Host}}})
	require.NoError(t, os.WriteFile(sd, b, 0o600))
	i := newLiveInstance(t, "egroups", map[string]any{"storagePath": t.TempDir(), "scrapeInterval": "1s", "scrapeTimeout": "500ms",
		"targetGroups": []map[string]any{{"name": "fleet", "discovery": map[string]any{"file": map[string]any{"files": []string{sd}}}}}})
	defer i.Dispose()

	var msg string
	require.Eventually(t, func() bool {
		h, err := i.CheckHealth(context.Background(), &backend.CheckHealthRequest{})
		require.NoError(t, err)
		msg = h.Message
		return h.Status == backend.HealthStatusOk
	}, 60*time.Second, 100*time.Millisecond, "health: %s", msg)
	assert.Contains(t, msg, "fleet: vllm")
	assert.Contains(t, msg, "Target group fleet: 1 discovered targets.")

	ms, err := i.members(context.Background(), "fleet")
	require.NoError(t, err)
	require.Len(t, ms, 1)
	assert.Equal(t, []GroupMember{{Labels: map[string]string{"instance": u.Host}}}, ms[0].Members)

	require.Eventually(t, func() bool {
		frames := queryAt(t, i, time.Now().Add(-time.Minute), time.Now(), map[string]any{"queryType": "saturation", "groupBy": "instance"})
		for _, f := range frames {
			for _, fl := range f.Fields {
				if strings.Contains(fl.Labels.String(), "instance="+u.Host) && strings.Contains(fl.Labels.String(), "requests_running") {
					return true
				}
			}
		}
		return false
	}, 60*time.Second, 200*time.Millisecond, "saturation of the group, per discovered instance")
}
