package catalog

import (
	"fmt"
	"regexp"
	"strconv"
)

// entry is one cell of the catalogue: how engine e provides signal s.
type entry struct {
	status  Status
	note    string
	metrics []Metric
}

func hist(names ...string) []Metric  { return metricsOf(KindHistogram, 1, names) }
func ctr(names ...string) []Metric   { return metricsOf(KindCounter, 1, names) }
func gauge(names ...string) []Metric { return metricsOf(KindGauge, 1, names) }

func metricsOf(k Kind, scale float64, names []string) []Metric {
	out := make([]Metric, 0, len(names))
	for _, n := range names {
		out = append(out, Metric{Name: n, Kind: k, Scale: scale})
	}
	return out
}

// sglangPhysicalKV is SGLang 0.5.11+'s physical KV-pool occupancy, (kv_used_tokens +
// kv_evictable_tokens) / max_total_num_tokens, under both exposures (see Metric.Over).
func sglangPhysicalKV() []Metric {
	used, evict, total := sglangNames("kv_used_tokens"), sglangNames("kv_evictable_tokens"), sglangNames("max_total_num_tokens")
	out := make([]Metric, len(used))
	for i := range used {
		out[i] = Metric{Name: used[i], Kind: KindGauge, Scale: 1, Plus: evict[i], Over: total[i]}
	}
	return out
}

// notePhysicalKV is the note of SGLang's KV usage when its physical occupancy is stored.
const notePhysicalKV = "SGLang 0.5.11+: physical KV-pool occupancy, (kv_used_tokens + kv_evictable_tokens) / max_total_num_tokens; evictable radix-cache tokens count as occupied."

func scaled(k Kind, scale float64, names ...string) []Metric { return metricsOf(k, scale, names) }

// labelValueOrDict matches label = v, and also the Python dict repr `{'label': 'v'}` that
// IBM TGIS-compatible servers put in the value (tgi_batch_inference_duration{method="{'method':
// 'prefill'}"}: the label set passed through str()): method=~"prefill|\\{'method': 'prefill'\\}".
func labelValueOrDict(label, v string) string {
	re := regexp.QuoteMeta(v) + "|" + regexp.QuoteMeta("{'"+label+"': '"+v+"'}")
	return label + "=~" + strconv.Quote(re)
}

func withMatch(ms []Metric, match string) []Metric {
	for i := range ms {
		ms[i].Match = match
	}
	return ms
}

// vllmNames expands vLLM family names (without the `vllm:` prefix) into the names a page
// may carry: the engine's own `vllm:<x>` and the Ray metrics agent's `ray_vllm:<x>` (Ray Serve
// LLM, corpus file vllm-0.6-v0-ray-serve-exported-datadog-fixture.prom), keeping the order of
// the arguments (preference order).
func vllmNames(bases ...string) []string {
	out := make([]string, 0, 2*len(bases))
	for _, b := range bases {
		out = append(out, "vllm:"+b, "ray_vllm:"+b)
	}
	return out
}

// sglangNames expands SGLang family names into `sglang:<x>` and the smg router's underscored
// re-export `sglang_<x>` (corpus file sglang-reexported-by-smg-router-underscored-pr813.prom).
func sglangNames(bases ...string) []string {
	out := make([]string, 0, 2*len(bases))
	for _, b := range bases {
		out = append(out, "sglang:"+b, "sglang_"+b)
	}
	return out
}

// trtllmNames expands trtllm-serve names into `trtllm_<x>` and, when early is true, the
// unprefixed name of the first implementation (TensorRT-LLM PR #5785, corpus file
// trtllm-serve-2025-unprefixed-core-metrics-pr5785.prom).
func trtllmNames(early bool, bases ...string) []string {
	out := make([]string, 0, 2*len(bases))
	for _, b := range bases {
		out = append(out, "trtllm_"+b)
		if early {
			out = append(out, b)
		}
	}
	return out
}

// sentinelFilter holds, per stored name, a PromQL comparison appended to the raw selector to
// drop sentinel values before aggregation: vLLM V0's prefix-cache hit rate reads −1 when
// prefix caching is disabled (kept only when >= 0); DCGM reports "blank" fields (not set, not
// found, not supported, not permitted) as the constants of its dcgm_structs.h:
// DCGM_INT32_BLANK 0x7ffffff0 = 2147483632 (…+3), DCGM_INT64_BLANK 0x7ffffffffffffff0 (…+3) and
// DCGM_FP64_BLANK 2^47 = 140737488355328 (…+3). The corpus page
// dcgm-exporter-4.5.3-readme-snippet.prom shows DCGM_FI_DEV_MEMORY_TEMP 9223372036854775794
// (INT64 not supported). Every DCGM gauge the table reads (percent, ratio, MiB, W, °C, MHz, a
// clock-event bitmask) is physically far below 2^31, so DCGM gauges are kept only when
// < dcgmBlankFloor, which drops all three blank families.
var sentinelFilter = map[string]string{}

// dcgmBlankFloor is DCGM_INT32_BLANK (0x7ffffff0), the smallest DCGM blank constant (see
// sentinelFilter).
const dcgmBlankFloor = "2147483632"

// modelLabels lists, per engine, the stored labels that name the model, preferred first. A
// label other than model_name is copied into model_name with label_replace.
var modelLabels = map[Engine][]string{
	EngineVLLM:   {"model_name", "model"}, // `model`: Triton's vLLM backend re-publishing vllm:* names
	EngineSGLang: {"model_name", "name"},  // `name`: SGLang 0.3 (PR #1853) and pre-release builds
	EngineTRTLLM: {"model_name"},
	EngineTriton: {"model_name", "model"},
}

const (
	noteVLLMPrefixBlocks = "Early vLLM V1 (0.8) counted prefix-cache queries and hits in blocks, later releases in tokens; the hit ratio is right either way."
	noteSGLangITL        = "SGLang splits each streamed chunk's gap evenly over the chunk's tokens (one observation per token of gap/tokens): the mean is the true mean gap per token, but tails are smoothed, so high quantiles read low."
	noteSGLangTPOT       = "Older SGLang (up to 0.4) only: a running average (time since first token / tokens so far) observed at every streamed chunk, not one value per request; long requests weigh more. Newer SGLang has no per-request TPOT."
	noteTGITPOT          = "TGI's mean time per token is inference duration / generated tokens and includes prefill, so it reads high for long prompts and short outputs."
	noteTGIITL           = "TGI has no per-request inter-token metric; this is the duration of each decode batch forward pass (tgi_batch_forward_duration{method=\"decode\"}), which excludes scheduling gaps between steps."
	noteTGITokens        = "TGI has no token counters; counted from the request length histogram's _sum, which grows when a request finishes." // #nosec G101 -- a note about token counters, not a credential
	noteLlamaMean        = "llama.cpp only exports cumulative processing seconds: the mean per token is rate(seconds)/rate(tokens); there is no distribution and no per-request value."
	// noteLlamaPrefill and noteLlamaDecode: llama.cpp's prefill and decode times are seconds per
	// token, not per request (issue 40 point 5: a cached one-token prompt read 4.164 s); it
	// counts no requests, so they cannot be converted.
	noteLlamaPrefill = "seconds per prompt token, not per request: rate(llamacpp:prompt_seconds_total) / rate(llamacpp:prompt_tokens_total); llama.cpp counts no requests to convert it with, and tokens reused from the prompt cache are not counted, so a short or cached prompt can read seconds per token."
	noteLlamaDecode  = "seconds per generated token, not per request: rate(llamacpp:tokens_predicted_seconds_total) / rate(llamacpp:tokens_predicted_total); llama.cpp counts no requests to convert it with."
	noteTritonMean   = "Triton exports cumulative microsecond counters, not histograms: only the mean (rate of the duration counter / rate of nv_inference_request_success) is available."
	noteDCGMThrottle = "dcgm-exporter reports the NVML clocks-event (throttle) reasons as one bitmask value, not one series per reason."
)

// table is the catalogue: engine → signal → entry. Signals missing from an engine's map are
// Absent with no note.
var table = map[Engine]map[Signal]entry{
	EngineVLLM: {
		QueueTime:     {Exact, "", hist(vllmNames("request_queue_time_seconds", "time_in_queue_requests")...)},
		PrefillTime:   {Exact, "", hist(vllmNames("request_prefill_time_seconds")...)},
		DecodeTime:    {Exact, "", hist(vllmNames("request_decode_time_seconds")...)},
		InferenceTime: {Exact, "", hist(vllmNames("request_inference_time_seconds")...)},
		TTFT:          {Exact, "", hist(vllmNames("time_to_first_token_seconds")...)},
		// time_per_output_token_seconds was always a per-step inter-token gap (V0 and V1 ≤0.11);
		// 0.11 exposes it next to inter_token_latency_seconds with the same data.
		ITL:              {Exact, "", hist(vllmNames("inter_token_latency_seconds", "time_per_output_token_seconds")...)},
		TPOT:             {Exact, "Per-request TPOT exists from vLLM 0.11; older vLLM only has the per-step inter-token histogram (see itl).", hist(vllmNames("request_time_per_output_token_seconds")...)},
		E2E:              {Exact, "", hist(vllmNames("e2e_request_latency_seconds")...)},
		PromptTokens:     {Exact, "", ctr(vllmNames("prompt_tokens_total")...)},
		GenerationTokens: {Exact, "", ctr(vllmNames("generation_tokens_total")...)},
		RequestsFinished: {Exact, "Counted by finished_reason; aborted requests are included (finished_reason=\"abort\").", ctr(vllmNames("request_success_total")...)},
		RequestsRunning:  {Exact, "", gauge(vllmNames("num_requests_running")...)},
		RequestsWaiting:  {Exact, "", gauge(vllmNames("num_requests_waiting")...)},
		KVCacheUsage:     {Exact, "", gauge(vllmNames("kv_cache_usage_perc", "gpu_cache_usage_perc")...)},
		Preemptions:      {Exact, "", ctr(vllmNames("num_preemptions_total")...)},
		PrefixCacheQueries: {Exact, noteVLLMPrefixBlocks,
			ctr(vllmNames("prefix_cache_queries_total", "gpu_prefix_cache_queries_total")...)},
		PrefixCacheHits: {Exact, noteVLLMPrefixBlocks,
			ctr(vllmNames("prefix_cache_hits_total", "gpu_prefix_cache_hits_total")...)},
		PrefixCacheHitRate: {Approximate, "vLLM V0 only: a block hit rate recomputed at each log interval; −1 (prefix caching off) is treated as absent. V1 exports hit and query counters instead.",
			gauge(vllmNames("gpu_prefix_cache_hit_rate")...)},
		IterationTokens:  {Exact, "", hist(vllmNames("iteration_tokens_total")...)},
		PromptLength:     {Exact, "", hist(vllmNames("request_prompt_tokens")...)},
		GenerationLength: {Exact, "", hist(vllmNames("request_generation_tokens")...)},
		// Newer V1 families (NewVLLMSignals); LookupFor marks them absent for V0 and for
		// versions before they existed.
		Rejections:               {Exact, "Requests refused at admission (HTTP 503), by reason; the family has no engine label.", ctr(vllmNames(AdmissionRejectionsBase)...)},
		RequestsWaitingByReason:  {Exact, "", gauge(vllmNames("num_requests_waiting_by_reason")...)},
		PromptTokensBySource:     {Exact, "", ctr(vllmNames("prompt_tokens_by_source_total")...)},
		PromptTokensCached:       {Exact, "", ctr(vllmNames("prompt_tokens_cached_total")...)},
		KVOffloadBytes:           {Exact, "Only with a KV offloading connector (--kv-transfer-config with OffloadingConnector).", ctr(vllmNames("kv_offload_total_bytes_total")...)},
		KVOffloadTime:            {Exact, "Only with a KV offloading connector (--kv-transfer-config with OffloadingConnector).", ctr(vllmNames("kv_offload_total_time_total")...)},
		NIXLTransferBytes:        {Exact, "Only with the NIXL connector (disaggregated prefill/decode).", hist(vllmNames("nixl_bytes_transferred")...)},
		NIXLTransferTime:         {Exact, "Only with the NIXL connector (disaggregated prefill/decode).", hist(vllmNames("nixl_xfer_time_seconds")...)},
		LoRARequestsInfo:         {Exact, "Only with --enable-lora; the value is a timestamp and the adapters are comma-joined label values (see ParseLoRAInfo).", gauge(vllmNames("lora_requests_info")...)},
		LoRAAdaptersLoaded:       {Exact, "", gauge(vllmNames("lora_adapter_loaded")...)},
		SpecDecodeDrafts:         {Exact, "Only with speculative decoding (--speculative-config).", ctr(vllmNames("spec_decode_num_drafts_total")...)},
		SpecDecodeDraftTokens:    {Exact, "Only with speculative decoding (--speculative-config).", ctr(vllmNames("spec_decode_num_draft_tokens_total")...)},
		SpecDecodeAccepted:       {Exact, "Only with speculative decoding (--speculative-config).", ctr(vllmNames("spec_decode_num_accepted_tokens_total")...)},
		SpecDecodeAcceptedPerPos: {Exact, "Only with speculative decoding (--speculative-config); by draft position.", ctr(vllmNames("spec_decode_num_accepted_tokens_per_pos_total")...)},
		ToolCallInvocations:      {Exact, "Counted by the delegating tool-call parser only (not the harmony path); streaming counts once per delta, non-streaming once per choice.", ctr(vllmNames("tool_call_parser_invocations_total")...)},
	},
	EngineSGLang: {
		QueueTime: {Exact, "Scheduler wait-queue time; pre-release 0.3 builds exported waiting_request_latency_seconds instead (meaning inferred from its name).",
			hist(sglangNames("queue_time_seconds", "waiting_request_latency_seconds")...)},
		PrefillTime:      {Absent, "SGLang has no per-request prefill histogram; TTFT − queue time approximates prefill plus overheads.", nil},
		DecodeTime:       {Absent, "SGLang has no per-request decode histogram; E2E − TTFT approximates it.", nil},
		InferenceTime:    {Absent, "SGLang has no per-request inference-time histogram.", nil},
		TTFT:             {Exact, "", hist(sglangNames("time_to_first_token_seconds")...)},
		ITL:              {Approximate, noteSGLangITL, hist(sglangNames("inter_token_latency_seconds")...)},
		TPOT:             {Approximate, noteSGLangTPOT, hist(sglangNames("time_per_output_token_seconds")...)},
		E2E:              {Exact, "", hist(sglangNames("e2e_request_latency_seconds")...)},
		PromptTokens:     {Exact, "", ctr(sglangNames("prompt_tokens_total")...)},
		GenerationTokens: {Exact, "", ctr(sglangNames("generation_tokens_total")...)},
		RequestsFinished: {Approximate, "SGLang counts finished requests without a finish reason; aborted requests are counted separately (num_aborted_requests_total).",
			ctr(sglangNames("num_requests_total")...)},
		RequestsRunning: {Exact, "", gauge(sglangNames("num_running_reqs", "num_requests_running")...)},
		RequestsWaiting: {Exact, "", gauge(sglangNames("num_queue_reqs", "num_requests_waiting")...)},
		KVCacheUsage: {Approximate, "SGLang's token_usage is used tokens / KV capacity and counts evictable radix-cache tokens as free, so it reads lower than vLLM's block usage.",
			append(sglangPhysicalKV(), gauge(sglangNames("token_usage")...)...)},
		Preemptions: {Exact, "SGLang calls preemption retraction.", ctr(sglangNames("num_retracted_requests_total")...)},
		PrefixCacheQueries: {Approximate, "SGLang has no cache-query counter; prompt tokens stand in for tokens looked up in the radix cache.",
			ctr(sglangNames("prompt_tokens_total")...)},
		PrefixCacheHits: {Exact, "Cached prompt tokens (newer builds split them by cache_source; the rate sums the sources).",
			ctr(sglangNames("cached_tokens_total")...)},
		PrefixCacheHitRate: {Approximate, "SGLang recomputes cache_hit_rate at log intervals only, so it is stale when idle; pre-release builds reported percent (see LookupFor).",
			gauge(sglangNames("cache_hit_rate")...)},
	},
	EngineTGI: {
		QueueTime:        {Exact, "", hist("tgi_request_queue_duration")},
		PrefillTime:      {Approximate, "TGI has no per-request prefill time; this is the duration of each prefill batch (tgi_batch_inference_duration{method=\"prefill\"}), shared by the requests in the batch.", withMatch(hist("tgi_batch_inference_duration"), labelValueOrDict("method", "prefill"))},
		DecodeTime:       {Absent, "TGI has no per-request decode time; inference_time includes prefill.", nil},
		InferenceTime:    {Exact, "", hist("tgi_request_inference_duration")},
		TTFT:             {Absent, "TGI exports no time to first token; queue time plus the prefill batch duration approximates it.", nil},
		ITL:              {Approximate, noteTGIITL, withMatch(hist("tgi_batch_forward_duration"), labelValueOrDict("method", "decode"))},
		TPOT:             {Approximate, noteTGITPOT, hist("tgi_request_mean_time_per_token_duration")},
		E2E:              {Exact, "Validation + queue + inference.", hist("tgi_request_duration")},
		PromptTokens:     {Approximate, noteTGITokens, ctr("tgi_request_input_length_sum")},
		GenerationTokens: {Approximate, noteTGITokens, ctr("tgi_request_generated_tokens_sum")},
		RequestsFinished: {Approximate, "TGI counts successful requests without a finish reason; failures are in tgi_request_failure{err}.", ctr("tgi_request_success")},
		RequestsRunning:  {Exact, "", gauge("tgi_batch_current_size")},
		RequestsWaiting:  {Exact, "", gauge("tgi_queue_size")},
	},
	EngineLlamaCpp: {
		PrefillTime:      {Approximate, noteLlamaPrefill, ctr("llamacpp:prompt_seconds_total")},
		DecodeTime:       {Approximate, noteLlamaDecode, ctr("llamacpp:tokens_predicted_seconds_total")},
		ITL:              {Approximate, noteLlamaMean, ctr("llamacpp:tokens_predicted_seconds_total")},
		TPOT:             {Approximate, noteLlamaMean, ctr("llamacpp:tokens_predicted_seconds_total")},
		PromptTokens:     {Approximate, "Prompt tokens actually processed; tokens reused from the prompt cache are not counted (inferred from the server code).", ctr("llamacpp:prompt_tokens_total")},
		GenerationTokens: {Exact, "", ctr("llamacpp:tokens_predicted_total")},
		RequestsRunning:  {Exact, "Busy slots.", gauge("llamacpp:requests_processing")},
		RequestsWaiting:  {Exact, "Tasks waiting for a free slot.", gauge("llamacpp:requests_deferred")},
		KVCacheUsage:     {Exact, "Only builds before mid-2025 export it (removed by llama.cpp PR #13660).", gauge("llamacpp:kv_cache_usage_ratio")},
		DecodeSteps:      {Exact, "llama_decode calls: one per decode step while a slot is busy. The token counters move only at a request's first token (prompt) or end (generated), so this is the counter that shows work in flight.", ctr("llamacpp:n_decode_total")},
	},
	EngineTRTLLM: {
		QueueTime:          {Exact, "", hist(trtllmNames(true, "request_queue_time_seconds")...)},
		PrefillTime:        {Exact, "", hist(trtllmNames(false, "request_prefill_time_seconds")...)},
		DecodeTime:         {Exact, "", hist(trtllmNames(false, "request_decode_time_seconds")...)},
		InferenceTime:      {Exact, "", hist(trtllmNames(false, "request_inference_time_seconds")...)},
		TTFT:               {Exact, "Filled only when the server runs with return_perf_metrics: true.", hist(trtllmNames(true, "time_to_first_token_seconds")...)},
		ITL:                {Absent, "trtllm-serve has no inter-token histogram; tpot is the per-request mean.", nil},
		TPOT:               {Exact, "Filled only when the server runs with return_perf_metrics: true.", hist(trtllmNames(true, "time_per_output_token_seconds")...)},
		E2E:                {Exact, "", hist(trtllmNames(true, "e2e_request_latency_seconds")...)},
		PromptTokens:       {Exact, "", ctr(trtllmNames(false, "prompt_tokens_total")...)},
		GenerationTokens:   {Exact, "", ctr(trtllmNames(false, "generation_tokens_total")...)},
		RequestsFinished:   {Exact, "Counted by finished_reason (TensorRT-LLM reasons such as stop, length, end_id).", ctr(trtllmNames(true, "request_success_total")...)},
		RequestsRunning:    {Exact, "", gauge(trtllmNames(false, "num_requests_running")...)},
		RequestsWaiting:    {Exact, "", gauge(trtllmNames(false, "num_requests_waiting")...)},
		KVCacheUsage:       {Exact, "", gauge(trtllmNames(false, "kv_cache_utilization")...)},
		PrefixCacheQueries: {Approximate, "trtllm-serve has no cache-query counter; prompt tokens stand in for tokens looked up.", ctr(trtllmNames(false, "prompt_tokens_total")...)},
		PrefixCacheHits:    {Exact, "", ctr(trtllmNames(false, "prompt_cache_hit_tokens_total")...)},
		PrefixCacheHitRate: {Approximate, "Per-iteration KV block reuse rate, not a token hit ratio.", gauge(trtllmNames(false, "kv_cache_hit_rate")...)},
	},
	EngineTriton: {
		QueueTime:     {Approximate, noteTritonMean, scaled(KindCounter, 1e-6, "nv_inference_queue_duration_us")},
		InferenceTime: {Approximate, noteTritonMean, scaled(KindCounter, 1e-6, "nv_inference_compute_infer_duration_us")},
		E2E:           {Approximate, noteTritonMean, scaled(KindCounter, 1e-6, "nv_inference_request_duration_us")},
		TTFT: {Approximate, "Triton's first-response histogram exists only for decoupled (streaming) models with histogram latencies enabled; it is in milliseconds, so read it with HistogramPromQLFor and rescale the bounds.",
			scaled(KindHistogram, 0.001, "nv_inference_first_response_histogram_ms")},
		RequestsFinished: {Approximate, "Successful requests without a finish reason; failures are in nv_inference_request_failure.", ctr("nv_inference_request_success")},
		RequestsRunning: {Approximate, "TensorRT-LLM backend only: requests scheduled in the in-flight batcher.",
			withMatch(gauge("nv_trt_llm_request_metrics"), `request_type="scheduled"`)},
		RequestsWaiting: {Exact, "", gauge("nv_inference_pending_request_count")},
		KVCacheUsage: {Approximate, "TensorRT-LLM backend only: fraction of KV blocks in use.",
			withMatch(gauge("nv_trt_llm_kv_cache_block_metrics"), `kv_cache_block_type="fraction"`)},
		GPUUtil:    {Exact, "", gauge("nv_gpu_utilization")},
		FBUsed:     {Exact, "", gauge("nv_gpu_memory_used_bytes")},
		FBTotal:    {Exact, "", gauge("nv_gpu_memory_total_bytes")},
		Power:      {Exact, "", gauge("nv_gpu_power_usage")},
		PowerLimit: {Exact, "", gauge("nv_gpu_power_limit")},
		Energy:     {Exact, "", ctr("nv_energy_consumption")},
	},
	EngineDCGM: {
		GPUUtil:           {Exact, "Fraction of time a kernel was running; a busy GPU can still have idle SMs (see sm_active).", scaled(KindGauge, 0.01, "DCGM_FI_DEV_GPU_UTIL")},
		SMActive:          {Exact, "", gauge("DCGM_FI_PROF_SM_ACTIVE")},
		DRAMActive:        {Exact, "", gauge("DCGM_FI_PROF_DRAM_ACTIVE")},
		TensorActive:      {Exact, "", gauge("DCGM_FI_PROF_PIPE_TENSOR_ACTIVE")},
		FBUsed:            {Exact, "", scaled(KindGauge, 1048576, "DCGM_FI_DEV_FB_USED")},
		FBTotal:           {Exact, "", scaled(KindGauge, 1048576, "DCGM_FI_DEV_FB_TOTAL")},
		Power:             {Exact, "", gauge("DCGM_FI_DEV_POWER_USAGE")},
		PowerLimit:        {Exact, "", gauge("DCGM_FI_DEV_POWER_MGMT_LIMIT", "DCGM_FI_DEV_ENFORCED_POWER_LIMIT")},
		PowerLimitDefault: {Exact, "", gauge("DCGM_FI_DEV_POWER_MGMT_LIMIT_DEF")},
		Temperature:       {Exact, "", gauge("DCGM_FI_DEV_GPU_TEMP")},
		SMClock:           {Exact, "", scaled(KindGauge, 1e6, "DCGM_FI_DEV_SM_CLOCK")},
		SMClockMax:        {Exact, "", scaled(KindGauge, 1e6, "DCGM_FI_DEV_MAX_SM_CLOCK")},
		ThrottleReasons: {Approximate, noteDCGMThrottle,
			gauge("DCGM_FI_DEV_CLOCKS_EVENT_REASONS", "DCGM_FI_DEV_CLOCK_THROTTLE_REASONS")},
		Energy:         {Exact, "", scaled(KindCounter, 0.001, "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION")},
		GREngineActive: {Exact, "", gauge("DCGM_FI_PROF_GR_ENGINE_ACTIVE")},
	},
	EngineInferscopeGPU: {
		GPUUtil:           {Exact, "", gauge(AgentUtilizationRatio)},
		SMActive:          {Exact, "", gauge(AgentSMActiveRatio)},
		DRAMActive:        {Exact, "", gauge(AgentDRAMActiveRatio)},
		TensorActive:      {Exact, "", gauge(AgentTensorActiveRatio)},
		FBUsed:            {Exact, "", gauge(AgentFBUsedBytes)},
		FBTotal:           {Exact, "", gauge(AgentFBTotalBytes)},
		Power:             {Exact, "", gauge(AgentPowerWatts)},
		PowerLimit:        {Exact, "", gauge(AgentPowerLimitWatts)},
		PowerLimitDefault: {Exact, "", gauge(AgentPowerDefaultLimitWatts)},
		Temperature:       {Exact, "", gauge(AgentTemperatureCelsius)},
		SMClock:           {Exact, "", gauge(AgentSMClockHertz)},
		SMClockMax:        {Exact, "", gauge(AgentSMClockMaxHertz)},
		ThrottleReasons:   {Exact, "One series per reason (label reason), 1 while active.", gauge(AgentThrottleReason)},
		Energy:            {Exact, "", ctr(AgentEnergyJoulesTotal)},
	},
}

// init builds the catalogue, in this one place and in this order: the engines whose maps are
// built from other files' tables are added to table (the llm-d router, the hosted sources,
// engine "custom"), the GPU error signals are merged into the GPU sources' maps, and then what
// is derived from the finished table is built (sentinelFilter from DCGM's gauges, engineIndex
// from every engine's names).
func init() { buildCatalogue() }

// buildCatalogue completes table and builds the lookups derived from it (see init).
func buildCatalogue() {
	addLLMDEngine()
	addHostedEngines()
	addCustomEngine()
	addGPUErrorSignals()
	buildSentinelFilter()
	buildEngineIndex()
}

// buildSentinelFilter fills sentinelFilter: vLLM V0's prefix-cache hit rate and every DCGM
// gauge of the table (called by buildCatalogue, after addGPUErrorSignals).
func buildSentinelFilter() {
	for _, n := range vllmNames("gpu_prefix_cache_hit_rate") {
		sentinelFilter[n] = ">= 0"
	}
	for _, sigs := range table[EngineDCGM] {
		for _, m := range sigs.metrics {
			if m.Kind == KindGauge {
				sentinelFilter[m.Name] = "< " + dcgmBlankFloor
			}
		}
	}
}

// Lookup returns how engine e provides signal s. Unknown engines or signals give Status
// Absent with a Note saying so. The returned Metrics slice is a copy. The entry is the
// engine-wide one; LookupFor refines it for a detected version.
func Lookup(e Engine, s Signal) Availability {
	a := Availability{Engine: e, Signal: s, Status: Absent}
	if !knownSignal(s) {
		a.Note = "unknown signal " + strconv.Quote(string(s))
		return a
	}
	sigs, ok := table[e]
	if !ok {
		a.Note = "unknown engine " + strconv.Quote(string(e))
		return a
	}
	en, ok := sigs[s]
	if !ok {
		return a
	}
	a.Status, a.Note = en.status, en.note
	if en.status != Absent {
		a.Metrics = append([]Metric(nil), en.metrics...)
	}
	return a
}

// newVLLMSince holds, per signal of NewVLLMSignals, the first vLLM minor version (0.x) that
// can export it: LookupFor reports the signal absent for V0 pages and for detected ranges
// ending before it. Sources: engines.md §1.1 (0.13: prompt tokens by source, cached prompt
// tokens, waiting by reason; NIXL and offload connector metrics are V1-only, by 0.11), vLLM
// 0.24.0 release notes (tool_call_parser_invocations_total, PR #44448), lora_requests_info
// since 0.6.4. Admission rejections and the loaded-adapter gauge are 2026 additions whose
// first release is not pinned: they are absent only for V0. Speculative decoding: see the
// entries.
var newVLLMSince = map[Signal]int{
	Rejections: 7, RequestsWaitingByReason: 13, PromptTokensBySource: 13, PromptTokensCached: 13,
	KVOffloadBytes: 11, KVOffloadTime: 11, NIXLTransferBytes: 9, NIXLTransferTime: 9,
	LoRARequestsInfo: 0 /* V0 too: never absent by version */, LoRAAdaptersLoaded: 7, ToolCallInvocations: 24,
	// V0 exported accepted and draft token counters under the same names (engines.md §1); the
	// drafts counter and the per-position counter are V1's (vllm/v1/spec_decode/metrics.py,
	// by 0.9: engines.md §1.1).
	SpecDecodeDraftTokens: 0, SpecDecodeAccepted: 0, SpecDecodeDrafts: 9, SpecDecodeAcceptedPerPos: 9,
}

// VersionSGLangPrerelease is the Version Detect reports for SGLang pages that carry the
// never-released metric names of the 2024 work-in-progress builds (new_seq, queue_req, …).
const VersionSGLangPrerelease = "0.3-prerelease"

// LookupFor is Lookup refined by what Detect found on a page:
//   - vLLM V0 or vLLM before 0.11 has no per-request TPOT: TPOT becomes Approximate, read from
//     the per-step time_per_output_token histogram (which is an inter-token latency), with a Note.
//   - vLLM 0.11+ or V1 has no prefix-cache hit-rate gauge (it has counters): Absent.
//   - SGLang pre-release builds (VersionSGLangPrerelease) reported cache_hit_rate in percent:
//     Scale 0.01.
//   - the llm-d router with only the deprecated inference_* names (EPPGenerationLegacy) has no
//     streaming ITL and no pool standard deviations: Absent.
func LookupFor(d Detection, s Signal) Availability {
	a := Lookup(d.Engine, s)
	switch d.Engine {
	case EngineVLLM:
		lo, hi, ok := parseVersionRange(d.Version)
		if s == TPOT && (d.Generation == "v0" || (ok && hi < 11)) {
			a.Status = Approximate
			a.Note = "This vLLM (V0 or before 0.11) has no per-request TPOT; shown from time_per_output_token_seconds, which is the gap between consecutive tokens (an inter-token latency), so long requests weigh more."
			a.Metrics = hist(vllmNames("time_per_output_token_seconds")...)
		}
		if since, isNew := newVLLMSince[s]; isNew && since > 0 && (d.Generation == "v0" || (ok && hi < since)) {
			a.Status, a.Metrics = Absent, nil
			a.Note = fmt.Sprintf("This vLLM (%s) predates the family: it appeared in vLLM V1 0.%d.", d.Describe(), since)
		}
		if s == PrefixCacheHitRate && (d.Generation == "v1" || (ok && lo >= 11)) {
			a.Status, a.Metrics = Absent, nil
			a.Note = "vLLM V1 exports prefix-cache hit and query counters instead (prefix_cache_hits / prefix_cache_queries)."
		}
	case EngineLLMDEPP:
		if d.Generation == EPPGenerationLegacy && (s == ITL || s == PoolQueueStdDev || s == PoolKVStdDev) {
			a.Status, a.Metrics = Absent, nil
			a.Note = "This llm-d router exports only the deprecated inference_* names; the family came with the llm_d_epp_ names."
		}
	case EngineSGLang:
		if s == PrefixCacheHitRate && d.Version == VersionSGLangPrerelease {
			for i := range a.Metrics {
				a.Metrics[i].Scale = 0.01
			}
			a.Note = "Pre-release SGLang reported cache_hit_rate in percent; rescaled to 0..1."
		}
	}
	return a
}

func knownSignal(s Signal) bool {
	for _, x := range AllSignals {
		if x == s {
			return true
		}
	}
	return false
}
