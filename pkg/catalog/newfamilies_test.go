package catalog

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// storedSamples are the sample names of a testdata page that the collector stores (Stores).
func storedSamples(t *testing.T, file string) []string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", file))
	require.NoError(t, err)
	samples, _, err := pageNames(b)
	require.NoError(t, err)
	return StoredNames(samples)
}

// TestNewVLLMFamiliesDetectedPerVersion: the page with every newer vLLM family (admission
// rejections, waiting by reason, prompt tokens by source and cached, KV offload and NIXL
// transfer, LoRA info and loaded adapters, tool-call parser invocations) is detected as V1
// 0.24+ (the tool-call counter appeared in 0.24), and every new signal is exported on it. On
// the real 0.11 page, families that appeared after 0.12 are absent (with the version in the
// note) and the others are not_seen; on the real V0 page every V1-only family is absent and
// lora_requests_info (V0 since 0.6.4) is exported (the page carries it).
func TestNewVLLMFamiliesDetectedPerVersion(t *testing.T) {
	names := storedSamples(t, "vllm-0.24-v1-new-families.prom")
	for _, n := range []string{"vllm:admission_rejections_total", "vllm:num_requests_waiting_by_reason", "vllm:prompt_tokens_by_source_total",
		"vllm:prompt_tokens_cached_total", "vllm:kv_offload_total_bytes_total", "vllm:kv_offload_total_time_total", "vllm:nixl_xfer_time_seconds_bucket",
		"vllm:nixl_bytes_transferred_bucket", "vllm:lora_requests_info", "vllm:lora_adapter_loaded", "vllm:tool_call_parser_invocations_total"} {
		assert.Contains(t, names, n, "the collector stores %s", n)
	}
	d := Detect(names)
	assert.Equal(t, EngineVLLM, d.Engine)
	assert.Equal(t, "v1", d.Generation, d.Evidence)
	assert.Equal(t, "0.24+", d.Version, d.Evidence)
	for _, s := range NewVLLMSignals {
		a := Assess(d, names, s)
		assert.Equal(t, StateExported, a.State, "%s on the new-families page: %+v", s, a)
	}

	old := storedSamples(t, "vllm-0.11-v1-qwen05b-created-series.prom")
	d11 := Detect(old)
	require.Equal(t, "0.11-0.12", d11.Version)
	want11 := map[Signal]State{
		Rejections: StateNotSeen, RequestsWaitingByReason: StateAbsent, PromptTokensBySource: StateAbsent, PromptTokensCached: StateAbsent,
		KVOffloadBytes: StateNotSeen, KVOffloadTime: StateNotSeen, NIXLTransferBytes: StateNotSeen, NIXLTransferTime: StateNotSeen,
		LoRARequestsInfo: StateNotSeen, LoRAAdaptersLoaded: StateNotSeen, ToolCallInvocations: StateAbsent,
	}
	for s, w := range want11 {
		a := Assess(d11, old, s)
		assert.Equal(t, w, a.State, "%s on 0.11", s)
		if w == StateAbsent {
			assert.Contains(t, a.AbsentSentence("old", EngineVLLM), "predates the family", s)
		}
		if w == StateNotSeen {
			assert.Contains(t, a.NotSeenSentence("old", EngineVLLM), "not seen in the queried range", s)
		}
	}

	v0 := storedSamples(t, "vllm-0.8-v0-multiproc-qwen3-0.6b-under-load-decommented.prom")
	d0 := Detect(v0)
	require.Equal(t, "v0", d0.Generation)
	for _, s := range NewVLLMSignals {
		a := Assess(d0, v0, s)
		if s == LoRARequestsInfo {
			assert.Equal(t, StateExported, a.State, "the real V0 page carries lora_requests_info")
			continue
		}
		assert.Equal(t, StateAbsent, a.State, "%s on V0", s)
	}
	// Other engines never export them.
	assert.Equal(t, Absent, Lookup(EngineSGLang, Rejections).Status)
}

// TestParseLoRAInfo: lora_requests_info's value is the Unix time of its last update and its
// adapters are comma-joined label values (the page's waiting list has a space after the
// comma and repeats an adapter that is also running).
func TestParseLoRAInfo(t *testing.T) {
	info := ParseLoRAInfo(map[string]string{"max_lora": "4", "running_lora_adapters": "sql-lora,chat-lora",
		"waiting_lora_adapters": "sql-lora, summ-lora"}, 1764600012.5)
	assert.Equal(t, []string{"sql-lora", "chat-lora"}, info.Running)
	assert.Equal(t, []string{"sql-lora", "summ-lora"}, info.Waiting)
	assert.Equal(t, 4, info.MaxLoRA)
	assert.Equal(t, time.Date(2025, 12, 1, 14, 40, 12, 500_000_000, time.UTC), info.Updated)

	idle := ParseLoRAInfo(map[string]string{"max_lora": "x", "running_lora_adapters": "", "waiting_lora_adapters": ",,"}, 0)
	assert.Empty(t, idle.Running)
	assert.Empty(t, idle.Waiting)
	assert.Equal(t, -1, idle.MaxLoRA)
	assert.True(t, idle.Updated.IsZero())
}
