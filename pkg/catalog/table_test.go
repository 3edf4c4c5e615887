package catalog

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Hand-checked expectations from engines.md (§1 vLLM, §2 SGLang, §3 TGI, §4 llama.cpp, §5
// NVIDIA, §6 DCGM, §8 cross-engine table).
func TestAvailabilityTables(t *testing.T) {
	type want struct {
		status Status
		first  string // first (preferred) metric name; "" when absent
		kind   Kind
		scale  float64
	}
	cases := map[Engine]map[Signal]want{
		EngineVLLM: {
			QueueTime:          {Exact, "vllm:request_queue_time_seconds", KindHistogram, 1},
			TTFT:               {Exact, "vllm:time_to_first_token_seconds", KindHistogram, 1},
			ITL:                {Exact, "vllm:inter_token_latency_seconds", KindHistogram, 1},
			TPOT:               {Exact, "vllm:request_time_per_output_token_seconds", KindHistogram, 1},
			E2E:                {Exact, "vllm:e2e_request_latency_seconds", KindHistogram, 1},
			KVCacheUsage:       {Exact, "vllm:kv_cache_usage_perc", KindGauge, 1},
			PrefixCacheQueries: {Exact, "vllm:prefix_cache_queries_total", KindCounter, 1},
			PrefixCacheHits:    {Exact, "vllm:prefix_cache_hits_total", KindCounter, 1},
			RequestsFinished:   {Exact, "vllm:request_success_total", KindCounter, 1},
			IterationTokens:    {Exact, "vllm:iteration_tokens_total", KindHistogram, 1},
			GPUUtil:            {Absent, "", "", 0},
		},
		EngineSGLang: {
			TTFT:            {Exact, "sglang:time_to_first_token_seconds", KindHistogram, 1},
			ITL:             {Approximate, "sglang:inter_token_latency_seconds", KindHistogram, 1},
			TPOT:            {Approximate, "sglang:time_per_output_token_seconds", KindHistogram, 1},
			PrefillTime:     {Absent, "", "", 0},
			DecodeTime:      {Absent, "", "", 0},
			KVCacheUsage:    {Approximate, "sglang:kv_used_tokens", KindGauge, 1},
			Preemptions:     {Exact, "sglang:num_retracted_requests_total", KindCounter, 1},
			RequestsWaiting: {Exact, "sglang:num_queue_reqs", KindGauge, 1},
		},
		EngineTGI: {
			TTFT:             {Absent, "", "", 0},
			TPOT:             {Approximate, "tgi_request_mean_time_per_token_duration", KindHistogram, 1},
			ITL:              {Approximate, "tgi_batch_forward_duration", KindHistogram, 1},
			QueueTime:        {Exact, "tgi_request_queue_duration", KindHistogram, 1},
			E2E:              {Exact, "tgi_request_duration", KindHistogram, 1},
			RequestsFinished: {Approximate, "tgi_request_success", KindCounter, 1},
			KVCacheUsage:     {Absent, "", "", 0},
			RequestsWaiting:  {Exact, "tgi_queue_size", KindGauge, 1},
		},
		EngineLlamaCpp: {
			TTFT:             {Absent, "", "", 0},
			E2E:              {Absent, "", "", 0},
			PrefillTime:      {Approximate, "llamacpp:prompt_seconds_total", KindCounter, 1},
			GenerationTokens: {Exact, "llamacpp:tokens_predicted_total", KindCounter, 1},
			RequestsWaiting:  {Exact, "llamacpp:requests_deferred", KindGauge, 1},
		},
		EngineTRTLLM: {
			TTFT: {Exact, "trtllm_time_to_first_token_seconds", KindHistogram, 1},
			TPOT: {Exact, "trtllm_time_per_output_token_seconds", KindHistogram, 1},
			ITL:  {Absent, "", "", 0},
		},
		EngineTriton: {
			QueueTime: {Approximate, "nv_inference_queue_duration_us", KindCounter, 1e-6},
			TTFT:      {Approximate, "nv_inference_first_response_histogram_ms", KindHistogram, 0.001},
			GPUUtil:   {Exact, "nv_gpu_utilization", KindGauge, 1},
		},
		EngineDCGM: {
			GPUUtil:         {Exact, "DCGM_FI_DEV_GPU_UTIL", KindGauge, 0.01},
			FBUsed:          {Exact, "DCGM_FI_DEV_FB_USED", KindGauge, 1048576},
			SMClock:         {Exact, "DCGM_FI_DEV_SM_CLOCK", KindGauge, 1e6},
			SMActive:        {Exact, "DCGM_FI_PROF_SM_ACTIVE", KindGauge, 1},
			Energy:          {Exact, "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", KindCounter, 0.001},
			ThrottleReasons: {Approximate, "DCGM_FI_DEV_CLOCKS_EVENT_REASONS", KindGauge, 1},
			TTFT:            {Absent, "", "", 0},
		},
		EngineInferscopeGPU: {
			GPUUtil:         {Exact, "inferscope_gpu_utilization_ratio", KindGauge, 1},
			FBUsed:          {Exact, "inferscope_gpu_fb_used_bytes", KindGauge, 1},
			ThrottleReasons: {Exact, "inferscope_gpu_throttle_reason", KindGauge, 1},
			Energy:          {Exact, "inferscope_gpu_energy_joules_total", KindCounter, 1},
			KVCacheUsage:    {Absent, "", "", 0},
		},
	}
	for e, sigs := range cases {
		for s, w := range sigs {
			a := Lookup(e, s)
			assert.Equal(t, e, a.Engine)
			assert.Equal(t, s, a.Signal)
			assert.Equal(t, w.status, a.Status, "%s/%s", e, s)
			if w.status == Absent {
				assert.Empty(t, a.Metrics, "%s/%s", e, s)
				continue
			}
			require.NotEmpty(t, a.Metrics, "%s/%s", e, s)
			assert.Equal(t, w.first, a.Metrics[0].Name, "%s/%s", e, s)
			assert.Equal(t, w.kind, a.Metrics[0].Kind, "%s/%s", e, s)
			assert.Equal(t, w.scale, a.Metrics[0].Scale, "%s/%s", e, s)
			if w.status == Approximate {
				assert.NotEmpty(t, a.Note, "approximate %s/%s needs a note", e, s)
			}
		}
	}
}

func TestOldNamesFollowNewNames(t *testing.T) {
	names := func(a Availability) []string {
		var out []string
		for _, m := range a.Metrics {
			out = append(out, m.Name)
		}
		return out
	}
	assert.Equal(t, []string{"vllm:kv_cache_usage_perc", "ray_vllm:kv_cache_usage_perc",
		"vllm:gpu_cache_usage_perc", "ray_vllm:gpu_cache_usage_perc"}, names(Lookup(EngineVLLM, KVCacheUsage)))
	assert.Equal(t, []string{"vllm:inter_token_latency_seconds", "ray_vllm:inter_token_latency_seconds",
		"vllm:time_per_output_token_seconds", "ray_vllm:time_per_output_token_seconds"}, names(Lookup(EngineVLLM, ITL)))
	assert.Equal(t, []string{"sglang:num_queue_reqs", "sglang_num_queue_reqs", "sglang:num_requests_waiting",
		"sglang_num_requests_waiting"}, names(Lookup(EngineSGLang, RequestsWaiting)))
	assert.Equal(t, []string{"trtllm_time_to_first_token_seconds", "time_to_first_token_seconds"}, names(Lookup(EngineTRTLLM, TTFT)))
}

func TestSignalsCoversEverySignal(t *testing.T) {
	for _, e := range append(append([]Engine{}, Engines...), EngineUnknown, Engine("bogus")) {
		for _, s := range AllSignals {
			a := Lookup(e, s)
			assert.Equal(t, s, a.Signal)
			if a.Status == Absent {
				assert.Empty(t, a.Metrics)
			} else {
				for _, m := range a.Metrics {
					assert.NotZero(t, m.Scale, "%s/%s/%s", e, a.Signal, m.Name)
					assert.True(t, validName(m.Name), m.Name)
				}
			}
		}
	}
	a := Lookup(EngineBogusForTest, TTFT) // not in the table
	assert.Equal(t, Absent, a.Status)
	assert.Contains(t, a.Note, "unknown engine")
	assert.Contains(t, Lookup(EngineVLLM, Signal("nope")).Note, "unknown signal")
	// Lookup returns copies: mutating them does not change the catalogue.
	m := Lookup(EngineVLLM, TTFT).Metrics
	m[0].Name = "changed"
	assert.Equal(t, "vllm:time_to_first_token_seconds", Lookup(EngineVLLM, TTFT).Metrics[0].Name)
}

const EngineBogusForTest Engine = "bogus"

func TestLookupFor(t *testing.T) {
	v0 := Detection{Engine: EngineVLLM, Generation: "v0", Version: "0.8-0.10"}
	a := LookupFor(v0, TPOT)
	assert.Equal(t, Approximate, a.Status)
	assert.Equal(t, "vllm:time_per_output_token_seconds", a.Metrics[0].Name)
	assert.Contains(t, a.Note, "inter-token")
	// Old V1 (version below 0.11, generation unknown).
	assert.Equal(t, Approximate, LookupFor(Detection{Engine: EngineVLLM, Version: "0.9-0.10"}, TPOT).Status)
	// 0.11+: exact per-request TPOT; the V0 hit-rate gauge does not exist.
	v1 := Detection{Engine: EngineVLLM, Generation: "v1", Version: "0.11-0.12"}
	assert.Equal(t, Exact, LookupFor(v1, TPOT).Status)
	assert.Equal(t, Absent, LookupFor(v1, PrefixCacheHitRate).Status)
	assert.Equal(t, Approximate, LookupFor(v0, PrefixCacheHitRate).Status)
	// SGLang pre-release: percent.
	wip := LookupFor(Detection{Engine: EngineSGLang, Version: VersionSGLangPrerelease}, PrefixCacheHitRate)
	assert.Equal(t, 0.01, wip.Metrics[0].Scale)
	assert.Equal(t, 1.0, Lookup(EngineSGLang, PrefixCacheHitRate).Metrics[0].Scale)
}
