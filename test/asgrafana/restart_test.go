package asgrafana

import (
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"net/http"
	"path/filepath"
	"slices"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestHistorySurvivesRestart: the plugin process is stopped as Grafana stops
// it (gRPC shutdown), then killed with SIGKILL; each time the next process
// finds the earlier samples in Grafana's data directory.
func TestHistorySurvivesRestart(t *testing.T) {
	// Scrape k serves the value k, so the stored values name the scrapes.
	var served atomic.Int64
	url := serve(t, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; version=0.0.4")
		_, _ = fmt.Fprintf(w, "vllm:num_requests_running{model_name=\"m\"} %d\n", served.Add(1))
	}))
	// A 2 s interval against the queries' 1 s step: every scrape is seen.
	jd, err := json.Marshal(map[string]any{"scrapeInterval": "2s", "scrapeTimeout": "1s", "targets": []map[string]any{{"name": "vllm-a", "url": url}}})
	require.NoError(t, err)
	ds := dataSource{id: 3, uid: "restart-uid", jsonData: jd, updatedMS: time.Now().UnixMilli()}
	dataDir := t.TempDir()
	start := time.Now().Add(-time.Second)

	// scrapes returns the scrape numbers stored for vllm-a, ascending.
	scrapes := func(h *pluginHost) []int {
		r := h.query(t, ds, start, time.Now(), map[string]map[string]any{"A": {"queryType": "raw", "metric": "vllm:num_requests_running", "targets": []string{"vllm-a"}}})["A"]
		require.Empty(t, r.err)
		seen := map[int]bool{}
		for _, s := range seriesOf(t, r.frames) {
			for _, v := range s.values {
				if !math.IsNaN(v) {
					seen[int(v)] = true
				}
			}
		}
		return slices.Sorted(maps.Keys(seen))
	}
	waitScrapes := func(h *pluginHost, n int) []int {
		var got []int
		require.Eventually(t, func() bool { got = scrapes(h); return len(got) >= n }, 40*time.Second, 250*time.Millisecond)
		return got
	}

	first := startPluginData(t, dataDir)
	before := waitScrapes(first, 3)
	// Grafana's stop: go-plugin's Kill asks the gRPC server to shut down,
	// the plugin disposes its instances and closes its stores.
	first.client.Kill()
	assert.Contains(t, first.logs.String(), "plugin stopping: closing every data source's store: instances=1", "the gRPC stop did not dispose the instance")
	assert.DirExists(t, filepath.Join(dataDir, "inferscope", "org.1", "restart-uid", "wal"))

	second := startPluginData(t, dataDir)
	beforeKill := waitScrapes(second, len(before)+3)
	assert.Subset(t, beforeKill, before, "the first process's samples are gone")

	// kill -9: at most the scrape in flight is lost.
	pid := second.client.ReattachConfig().Pid
	require.NoError(t, syscall.Kill(pid, syscall.SIGKILL))
	require.Eventually(t, second.client.Exited, 10*time.Second, 50*time.Millisecond)
	third := startPluginData(t, dataDir)
	afterKill := scrapes(third)
	assert.Subset(t, afterKill, beforeKill, "samples lost to kill -9")
	t.Logf("stored scrapes: first process %v, before kill -9 %v, after %v", before, beforeKill, afterKill)

	// SIGTERM (Grafana's second step when a plugin does not stop): the
	// process disposes its instances and exits.
	require.NoError(t, syscall.Kill(third.client.ReattachConfig().Pid, syscall.SIGTERM))
	require.Eventually(t, third.client.Exited, 10*time.Second, 50*time.Millisecond)
	assert.Contains(t, third.logs.String(), "plugin got SIGTERM")
	assert.Contains(t, third.logs.String(), "plugin stopping: closing every data source's store: instances=1")
}
