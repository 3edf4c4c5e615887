package catalog

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Pages copied from ../shared/corpus (see SOURCES.md there: #1, #32, #28, #33). Expected
// versions follow from engines.md's version table, worked out by hand per page below.
func TestDetectTestdataPages(t *testing.T) {
	cases := []struct {
		file       string
		engine     Engine
		generation string
		version    string
	}{
		// kv_cache_usage_perc without gpu_cache_usage_perc (0.11+), time_per_output_token
		// still present (removed 0.13, hidden 0.12) next to inter_token_latency (0.11+).
		{"vllm-0.11-v1-qwen05b-created-series.prom", EngineVLLM, "v1", "0.11-0.12"},
		// gpu_cache_usage_perc (≤0.10), TPOT without ITL (≤0.10), no V1 prefix counters and no
		// V0 swap families (hidden from 0.8) → V0, 0.8-0.10.
		{"vllm-0.8-v0-multiproc-qwen3-0.6b-under-load-decommented.prom", EngineVLLM, "v0", "0.8-0.10"},
		// running-average TPOT (≤0.4), func_latency (0.4), num_queue_reqs (0.4+) → 0.4.
		{"sglang-0.4-llama8b-heavy-load-queue2826-docs.prom", EngineSGLang, "", "0.4"},
		{"tgi-unknown-datadog-fixture-full-under-load.prom", EngineTGI, "", ""},
	}
	for _, c := range cases {
		t.Run(c.file, func(t *testing.T) {
			b, err := os.ReadFile(filepath.Join("testdata", c.file))
			require.NoError(t, err)
			samples, _, err := pageNames(b)
			require.NoError(t, err)
			// Only sample names, as the collector stores them.
			d := Detect(samples)
			assert.Equal(t, c.engine, d.Engine, d.Evidence)
			assert.Equal(t, c.generation, d.Generation, d.Evidence)
			assert.Equal(t, c.version, d.Version, d.Evidence)
			assert.NotEmpty(t, d.Evidence)
		})
	}
}

func TestDetectHandWritten(t *testing.T) {
	cases := []struct {
		name       string
		names      []string
		engine     Engine
		generation string
		version    string
	}{
		{"empty", nil, EngineUnknown, "", ""},
		{"garbage", []string{"", "foo", "http_requests_total"}, EngineUnknown, "", ""},
		// avg throughput gauges: V0 ≤0.7; best_of: ≤0.6; e2e histogram 0.4+.
		{"vllm v0 0.4-0.6", []string{"vllm:avg_prompt_throughput_toks_per_s", "vllm:request_params_best_of_bucket",
			"vllm:e2e_request_latency_seconds_count"}, EngineVLLM, "v0", "0.4-0.6"},
		// both KV names (0.9-0.10): V1.
		{"vllm 0.10 both names", []string{"vllm:gpu_cache_usage_perc", "vllm:kv_cache_usage_perc"}, EngineVLLM, "v1", "0.9-0.10"},
		// ITL without TPOT: 0.12+; by_source: 0.13+.
		{"vllm 0.13+", []string{"vllm:inter_token_latency_seconds_bucket", "vllm:prompt_tokens_by_source_total"}, EngineVLLM, "v1", "0.13+"},
		{"ray exported", []string{"ray_vllm:num_requests_swapped", "ray_vllm:gpu_cache_usage_perc"}, EngineVLLM, "v0", "0.2-0.7"},
		{"ray underscored", []string{"ray_vllm_kv_cache_usage_perc"}, EngineVLLM, "v1", "0.11+"},
		{"sglang underscored", []string{"sglang_cache_hit_rate", "sglang_queue_time_seconds_bucket"}, EngineSGLang, "", "0.5+"},
		{"sglang wip", []string{"sglang:queue_req", "sglang:token_usage"}, EngineSGLang, "", VersionSGLangPrerelease},
		{"trtllm prefixed", []string{"trtllm_time_to_first_token_seconds_bucket"}, EngineTRTLLM, "", ""},
		{"trtllm unprefixed", []string{"e2e_request_latency_seconds_sum", "request_success_total"}, EngineTRTLLM, "", ""},
		{"triton", []string{"nv_inference_request_success", "nv_gpu_utilization"}, EngineTriton, "", ""},
		{"llamacpp", []string{"llamacpp:prompt_tokens_total"}, EngineLlamaCpp, "", ""},
		{"dcgm", []string{"DCGM_FI_DEV_GPU_UTIL"}, EngineDCGM, "", ""},
		{"agent", []string{AgentPowerWatts, AgentThrottleReason}, EngineInferscopeGPU, "", ""},
		// An engine page wins over GPU metrics on the same page.
		{"vllm plus dcgm", []string{"DCGM_FI_DEV_GPU_UTIL", "DCGM_FI_DEV_FB_USED", "vllm:num_requests_running"}, EngineVLLM, "", ""},
		// V0 and V1 markers together: generation and version unknown.
		{"conflict", []string{"vllm:num_requests_swapped", "vllm:inter_token_latency_seconds_count"}, EngineVLLM, "", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d := Detect(c.names)
			assert.Equal(t, c.engine, d.Engine, d.Evidence)
			assert.Equal(t, c.generation, d.Generation, d.Evidence)
			assert.Equal(t, c.version, d.Version, d.Evidence)
		})
	}
}

func TestParseVersionRange(t *testing.T) {
	cases := []struct {
		in     string
		lo, hi int
		ok     bool
	}{
		{"0.11-0.12", 11, 12, true}, {"0.13+", 13, openEnd, true}, {"0.4", 4, 4, true},
		{"", 0, 0, false}, {"1.2", 0, 0, false}, {"0.12-0.11", 12, 11, false}, {VersionSGLangPrerelease, 0, 0, false},
	}
	for _, c := range cases {
		lo, hi, ok := parseVersionRange(c.in)
		assert.Equal(t, c.ok, ok, c.in)
		if c.ok {
			assert.Equal(t, []int{c.lo, c.hi}, []int{lo, hi}, c.in)
		}
	}
}
