package plugin

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/backend"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestDiagnosisReadsRejectionsAndWaitingByReason: on the vLLM page with the newer families the
// diagnosis query reads the admission rejections (over the target, whatever the models: the
// family has no model label) and the waiting gauge by reason, and answers; on the real 0.11 page
// alone it reads neither (the PromQL of older targets is unchanged).
func TestDiagnosisReadsRejectionsAndWaitingByReason(t *testing.T) {
	if testing.Short() {
		t.Skip("scrapes two loopback targets for about six seconds")
	}
	t0 := time.Now()
	nf := httptest.NewServer(newScaledPage(t, newFamiliesPage, textFormatType, t0, 0.05))
	defer nf.Close()
	old := httptest.NewServer(newScaledPage(t, "testdata/vllm-0.11-v1-qwen05b-created-series.prom", textFormatType, t0, 0.05))
	defer old.Close()
	inst := newLiveInstance(t, "diag23", map[string]any{"storagePath": t.TempDir(),
		"scrapeInterval": "1s", "scrapeTimeout": "1s", "retention": "1h",
		"targets": []map[string]any{{"name": "new", "url": nf.URL + "/metrics"}, {"name": "old", "url": old.URL + "/metrics"}}})
	defer inst.Dispose()
	time.Sleep(6 * time.Second)
	executed := func(targets []string) string {
		js, err := json.Marshal(map[string]any{"queryType": "diagnosis", "targets": targets, "window": "4s", "models": []string{"Qwen/Qwen3-0.6B"}})
		require.NoError(t, err)
		now := time.Now()
		resp, err := inst.QueryData(context.Background(), &backend.QueryDataRequest{Queries: []backend.DataQuery{{
			RefID: "A", QueryType: "diagnosis", JSON: js, Interval: time.Second, MaxDataPoints: 100,
			TimeRange: backend.TimeRange{From: now.Add(-5 * time.Second), To: now}}}})
		require.NoError(t, err)
		r := resp.Responses["A"]
		require.NoError(t, r.Error)
		require.NotEmpty(t, r.Frames)
		return r.Frames[0].Meta.ExecutedQueryString
	}
	q := executed([]string{"new", "old"})
	assert.Contains(t, q, `rate(vllm:admission_rejections_total{job=~"new|old"}[4s])`, "rejections over the targets, no model matcher")
	assert.Contains(t, q, "sum by (job, reason)")
	assert.Contains(t, q, "vllm:num_requests_waiting_by_reason")
	q = executed([]string{"old"})
	assert.NotContains(t, q, "admission_rejections")
	assert.NotContains(t, q, "waiting_by_reason")
}
