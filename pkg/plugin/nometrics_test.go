package plugin

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestTargetWithoutMetricsPageIsNotCalledDown: a server that answers but has no /metrics
// (Ollama answers 404 there, as pkg/plugin's live test saw) is not "down": the notice says
// that it answers without a metrics page, names the status, and claims no signal.
func TestTargetWithoutMetricsPageIsNotCalledDown(t *testing.T) {
	if testing.Short() {
		t.Skip("scrapes a loopback target for a few seconds")
	}
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { http.NotFound(w, r) }))
	defer hs.Close()
	inst := newLiveInstance(t, "nometrics", map[string]any{"storagePath": t.TempDir(),
		"scrapeInterval": "1s", "scrapeTimeout": "1s", "retention": "1h",
		"targets": []map[string]any{{"name": "ollama", "url": hs.URL + "/metrics"}}})
	defer inst.Dispose()
	t0 := time.Now()
	var notices []string
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		dr := runQuery(t, inst, map[string]any{"queryType": "latency", "targets": []string{"ollama"}, "signal": "ttft", "window": "5s"},
			t0, time.Now(), time.Second)
		require.NoError(t, dr.Error)
		notices = nil
		for _, f := range dr.Frames {
			if f.Meta != nil {
				for _, n := range f.Meta.Notices {
					notices = append(notices, n.Text)
				}
			}
			assert.Zero(t, framePoints(f))
		}
		if strings.Contains(strings.Join(notices, "\n"), "404") {
			break
		}
	}
	all := strings.Join(notices, "\n")
	t.Logf("notices: %q", notices)
	assert.Contains(t, all, "target ollama answers, but not with a metrics page: server returned HTTP status 404 Not Found")
	assert.NotContains(t, all, "is down")
	assert.NotContains(t, all, "samples stop at the last successful scrape", "there never was one")
}
