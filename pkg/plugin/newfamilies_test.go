package plugin

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/backend"
	"github.com/grafana/grafana-plugin-sdk-go/data"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// newFamiliesPage is a vLLM 0.24+ page (Python front end, text format) with every newer
// family the catalogue reads, on top of the numbers of pythonFrontendPage.
const newFamiliesPage = "testdata/vllm-0.24-v1-new-families.prom"

// noticeTexts collects the notices of every frame.
func noticeTexts(fs data.Frames) []string {
	var out []string
	for _, f := range fs {
		if f.Meta == nil {
			continue
		}
		for _, n := range f.Meta.Notices {
			out = append(out, n.Text)
		}
	}
	return out
}

// TestNewVLLMFamiliesThroughQueryData: a target serving the new-families page next to the real
// vLLM 0.11 page. Counters grow by growth = 0.05 of the page per second, so each rate is the
// page's value × 0.05, worked out by hand:
//
//   - rejections/s: queue_full 8 → 0.4, draining 2 → 0.1 (signal rejections, label reason);
//   - tool-call parser invocations/s: tool_call 40 → 2, no_tool_call 60 → 3;
//   - KV offload bytes/s: gpu_to_cpu 4e9 → 2e8, cpu_to_gpu 1e9 → 5e7; transfer seconds/s:
//     gpu_to_cpu 2 → 0.1, cpu_to_gpu 0.5 → 0.025 (output kv_transfer);
//   - prompt tokens by source (issue 33; tok/s, label token_source): local_compute 7800 → 390,
//     local_cache_hit 3000 → 150, external_kv_transfer 1200 → 60;
//   - NIXL per transfer (rate of _sum / rate of _count, the factor cancels): 2.5e9/50 = 5e7
//     bytes, 1.5/50 = 0.03 s;
//   - saturation: waiting capacity 1 and deferred 1 (they sum to waiting 2); the token-weighted
//     prefix-cache hit ratio 4200/12000 = 0.35 next to the block-level ratio 3000/12000 = 0.25;
//     LoRA: running_lora_adapters "sql-lora,chat-lora" → 2, waiting "sql-lora, summ-lora" → 2,
//     max_lora 4 (the info gauge's value, a timestamp, is not read); lora_adapter_loaded
//     sql-lora and chat-lora at level gpu → 2, summ-lora at cpu → 1.
//
// The 0.11 target gets a not_seen warning for rejections (0.11 could have it) and an absent
// note for the waiting split (it appeared in 0.13) and the tool-call counter (0.24).
func TestNewVLLMFamiliesThroughQueryData(t *testing.T) {
	if testing.Short() {
		t.Skip("scrapes two loopback targets for about ten seconds")
	}
	t0 := time.Now()
	nf := httptest.NewServer(newScaledPage(t, newFamiliesPage, textFormatType, t0, 0.05))
	defer nf.Close()
	old := httptest.NewServer(newScaledPage(t, "testdata/vllm-0.11-v1-qwen05b-created-series.prom", textFormatType, t0, 0.05))
	defer old.Close()
	inst := newLiveInstance(t, "newfamilies", map[string]any{"storagePath": t.TempDir(),
		"scrapeInterval": "1s", "scrapeTimeout": "1s", "retention": "1h",
		"targets": []map[string]any{{"name": "new", "url": nf.URL + "/metrics"}, {"name": "old", "url": old.URL + "/metrics"}}})
	defer inst.Dispose()
	time.Sleep(9 * time.Second)

	query := func(q map[string]any) (map[string]float64, []string) {
		t.Helper()
		q["targets"] = []string{"new", "old"}
		q["groupBy"] = "target"
		q["window"] = "4s"
		js, err := json.Marshal(q)
		require.NoError(t, err)
		now := time.Now()
		resp, err := inst.QueryData(context.Background(), &backend.QueryDataRequest{Queries: []backend.DataQuery{{
			RefID: "A", QueryType: q["queryType"].(string), JSON: js, Interval: time.Second, MaxDataPoints: 100,
			TimeRange: backend.TimeRange{From: now.Add(-5 * time.Second), To: now}}}})
		require.NoError(t, err)
		r := resp.Responses["A"]
		require.NoError(t, r.Error)
		// Values of the "new" target only (frames of both targets share names).
		var mine data.Frames
		for _, f := range r.Frames {
			if len(f.Fields) > 1 && f.Fields[1].Labels["target"] == "new" {
				mine = append(mine, f)
			}
		}
		return lastValues(t, mine), noticeTexts(r.Frames)
	}
	thr, thrNotes := query(map[string]any{"queryType": "throughput"})
	rates := map[string]float64{
		"rejections/s queue_full": 0.4, "rejections/s draining": 0.1,
		"tool-call parser invocations/s tool_call": 2, "tool-call parser invocations/s no_tool_call": 3,
		"KV offload bytes/s gpu_to_cpu": 2e8, "KV offload bytes/s cpu_to_gpu": 5e7,
		"KV offload transfer seconds/s gpu_to_cpu": 0.1, "KV offload transfer seconds/s cpu_to_gpu": 0.025,
		"prompt tokens by source: local_compute": 390, "prompt tokens by source: local_cache_hit": 150,
		"prompt tokens by source: external_kv_transfer": 60,
	}
	for name, want := range rates {
		if got, ok := thr[name]; assert.True(t, ok, "no %q frame (have %v)", name, thr) {
			assert.InEpsilon(t, want, got, 5e-2, name)
		}
	}
	for name, want := range map[string]float64{"NIXL bytes per transfer": 5e7, "NIXL seconds per transfer": 0.03} {
		if got, ok := thr[name]; assert.True(t, ok, "no %q frame (have %v)", name, thr) {
			assert.InEpsilon(t, want, got, 1e-9, name)
		}
	}
	joined := strings.Join(thrNotes, "\n")
	assert.Contains(t, joined, "target old (vllm): rejections not seen in the queried range")
	assert.Contains(t, joined, "target old (vllm) does not export tool_call_invocations")

	sat, satNotes := query(map[string]any{"queryType": "saturation"})
	for name, want := range map[string]float64{"waiting capacity": 1, "waiting deferred": 1, "waiting": 2,
		"prefix-cache token hit ratio": 0.35, "prefix-cache hit ratio": 0.25,
		"LoRA adapters running": 2, "LoRA adapters waiting": 2, "LoRA adapter slots": 4,
		"LoRA adapters loaded gpu": 2, "LoRA adapters loaded cpu": 1} {
		if got, ok := sat[name]; assert.True(t, ok, "no %q frame (have %v)", name, sat) {
			assert.InDelta(t, want, got, 1e-9, name)
		}
	}
	assert.Contains(t, strings.Join(satNotes, "\n"), "target old (vllm) does not export requests_waiting_by_reason")
}
