package catalog

import "slices"

// Engine names the software behind a scraped page: an inference engine or a GPU exporter.
type Engine string

// Engines known to the catalogue. EngineUnknown is what Detect returns when no known family is
// present.
const (
	EngineVLLM          Engine = "vllm"           // vLLM V0 and V1 (`vllm:` prefix; Ray-exported `ray_vllm:`)
	EngineSGLang        Engine = "sglang"         // SGLang (`sglang:`; smg-router re-export `sglang_`)
	EngineTGI           Engine = "tgi"            // Hugging Face text-generation-inference (`tgi_`)
	EngineLlamaCpp      Engine = "llamacpp"       // llama.cpp server and the ik_llama.cpp fork (`llamacpp:`)
	EngineTRTLLM        Engine = "trtllm"         // TensorRT-LLM trtllm-serve (`trtllm_`, first builds unprefixed)
	EngineTriton        Engine = "triton"         // Triton Inference Server core and TRT-LLM backend (`nv_`)
	EngineCustom        Engine = "custom"         // a service's own metrics mapped in targets[].metrics, stored as UserMetricPrefix
	EngineLLMDEPP       Engine = "llm-d-epp"      // the llm-d router's endpoint picker (`llm_d_epp_`; before: `inference_objective_`, `inference_model_`, `inference_pool_`, `inference_extension_`)
	EngineLiteLLM       Engine = "litellm"        // the LiteLLM proxy (`litellm_`), a gateway to hosted and self-hosted models
	EngineOTelGenAI     Engine = "otel-genai"     // OpenTelemetry GenAI semantic-convention instruments through a Prometheus exporter (`gen_ai_`)
	EngineDCGM          Engine = "dcgm"           // NVIDIA dcgm-exporter (`DCGM_FI_`)
	EngineInferscopeGPU Engine = "inferscope-gpu" // Inferscope's own GPU agent (GPUAgentPrefix)
	EngineUnknown       Engine = "unknown"        // nothing recognised
)

// Engines lists every known engine except EngineUnknown, in the catalogue's fixed order
// (LLM engines first, then the gateways: the llm-d router's endpoint picker, the LiteLLM proxy
// and OpenTelemetry GenAI instruments, then GPU exporters). Builders visit engines in this
// order; they visit EngineCustom only with Scope.User and the gateways (IsGateway) only with
// Scope.Gateway, so the PromQL of queries over other targets is unchanged.
var Engines = []Engine{EngineVLLM, EngineSGLang, EngineTGI, EngineLlamaCpp, EngineTRTLLM,
	EngineTriton, EngineCustom, EngineLLMDEPP, EngineLiteLLM, EngineOTelGenAI, EngineDCGM, EngineInferscopeGPU}

// Signal is a canonical, engine-independent quantity (DESIGN §3).
type Signal string

// Canonical signals. Latency signals are in seconds, token signals in tokens, request signals
// in requests, ratios in 0..1, memory in bytes, power in watts, clocks in hertz, temperature
// in degrees Celsius.
const (
	QueueTime          Signal = "queue_time"           // histogram, s: waiting before first scheduling
	PrefillTime        Signal = "prefill_time"         // histogram, s: first scheduling → first token
	DecodeTime         Signal = "decode_time"          // histogram, s: first token → last token
	InferenceTime      Signal = "inference_time"       // histogram, s: prefill + decode
	TTFT               Signal = "ttft"                 // histogram, s: arrival → first token
	ITL                Signal = "itl"                  // histogram, s: gap between consecutive output batches
	TPOT               Signal = "tpot"                 // histogram, s: per request decode time / (tokens − 1)
	E2E                Signal = "e2e"                  // histogram, s: arrival → finish
	PromptTokens       Signal = "prompt_tokens"        // counter, tokens
	GenerationTokens   Signal = "generation_tokens"    // counter, tokens
	RequestsFinished   Signal = "requests_finished"    // counter, requests (vLLM/TRT-LLM: by finished_reason)
	RequestsRunning    Signal = "requests_running"     // gauge, requests
	RequestsWaiting    Signal = "requests_waiting"     // gauge, requests
	KVCacheUsage       Signal = "kv_cache_usage"       // gauge, ratio 0..1 (average it, never sum)
	Preemptions        Signal = "preemptions"          // counter, preemptions (SGLang: retractions)
	PrefixCacheQueries Signal = "prefix_cache_queries" // counter, tokens looked up in the prefix cache
	PrefixCacheHits    Signal = "prefix_cache_hits"    // counter, tokens found in the prefix cache
	IterationTokens    Signal = "iteration_tokens"     // histogram, tokens per engine step
	GPUUtil            Signal = "gpu_util"             // gauge, ratio 0..1 of time a kernel ran
	SMActive           Signal = "sm_active"            // gauge, ratio 0..1
	DRAMActive         Signal = "dram_active"          // gauge, ratio 0..1
	TensorActive       Signal = "tensor_active"        // gauge, ratio 0..1
	FBUsed             Signal = "fb_used"              // gauge, bytes
	FBTotal            Signal = "fb_total"             // gauge, bytes
	Power              Signal = "power"                // gauge, W
	PowerLimit         Signal = "power_limit"          // gauge, W
	Temperature        Signal = "temperature"          // gauge, °C
	SMClock            Signal = "sm_clock"             // gauge, Hz
	SMClockMax         Signal = "sm_clock_max"         // gauge, Hz
	ThrottleReasons    Signal = "throttle_reasons"     // gauge; agent: 1 per active {reason}; DCGM: bitmask

	// PrefixCacheHitRate is an extra signal (not in the contract list): a ratio 0..1 exported
	// as a gauge by engines that have no hit/query counters (vLLM V0, SGLang, TRT-LLM).
	// vLLM V0 reports −1 when prefix caching is off; GaugePromQL drops those samples, so the
	// signal is absent, never −1 or 0, for such targets.
	PrefixCacheHitRate Signal = "prefix_cache_hit_rate"
	// Energy is an extra signal (not in the contract list): a counter of joules consumed by a
	// GPU since the exporter started; CounterRatePromQL turns it into watts.
	Energy Signal = "energy"
	// GREngineActive is an extra signal (not in the contract list): gauge, ratio 0..1 of time
	// the graphics/compute engine was active (DCGM_FI_PROF_GR_ENGINE_ACTIVE, a DCGM profiling
	// field that dcgm-exporter enables by default, unlike SM active). It is the saturation
	// signal's first fallback when SM active is missing. It differs from GPU
	// utilisation only in resolution (a profiler ratio over the whole interval, not a
	// whole-percent reading); like GPU utilisation it measures time, so one busy SM counts as
	// active.
	GREngineActive Signal = "gr_engine_active"
	// PowerLimitDefault is an extra signal (not in the contract list): gauge, W, the board's
	// default power limit (the limit after a reset: NVML nvmlDeviceGetPowerManagementDefaultLimit,
	// DCGM_FI_DEV_POWER_MGMT_LIMIT_DEF). An enforced limit (PowerLimit) below it is a cap set
	// by an administrator or a power manager (the diagnosis class power_capped).
	PowerLimitDefault Signal = "power_limit_default"
	// PromptLength is an extra signal (not in the contract list): histogram, prompt tokens per
	// request (vLLM's request_prompt_tokens, observed when a request finishes, V0 and V1 alike;
	// buckets 1, 2, 5, 10, 20, … up to max_model_len). The diagnosis reads its tail for
	// head-of-line blocking by long prompts.
	PromptLength Signal = "prompt_length"

	// The families below are newer vLLM V1 families (2026). Each is an extra signal (not in
	// the contract list); query types read them only where a target in scope exports them.

	// Rejections is a counter of requests refused at admission (HTTP 503), by {reason}
	// (vllm:admission_rejections_total; no engine label). Requests.
	Rejections Signal = "rejections"
	// RequestsWaitingByReason is the waiting-queue gauge split by {reason}: "capacity" (no room
	// in the batch or the KV cache) and "deferred" (waiting on grammar compilation or a remote
	// KV transfer); the reasons sum to requests_waiting. Requests.
	RequestsWaitingByReason Signal = "requests_waiting_by_reason"
	// PromptTokensBySource is a counter of prompt tokens by {source}: local_compute,
	// local_cache_hit, external_kv_transfer; the sources sum to prompt_tokens. Tokens.
	PromptTokensBySource Signal = "prompt_tokens_by_source"
	// PromptTokensCached is a counter of prompt tokens served from a cache (local prefix cache
	// plus external KV transfer). Tokens. Divided by prompt_tokens it is the token-weighted
	// prefix-cache hit ratio, next to the block-level prefix_cache_hits/prefix_cache_queries.
	PromptTokensCached Signal = "prompt_tokens_cached" // #nosec G101 -- a signal name, not a credential
	// KVOffloadBytes is a counter of bytes moved by the KV offloading connector, by
	// {transfer_type} (e.g. cpu_to_gpu, gpu_to_cpu). Bytes.
	KVOffloadBytes Signal = "kv_offload_bytes"
	// KVOffloadTime is a counter of seconds spent in KV offloading transfers, by
	// {transfer_type}. Seconds.
	KVOffloadTime Signal = "kv_offload_time"
	// NIXLTransferBytes is the histogram of bytes per NIXL KV-cache transfer (disaggregated
	// prefill/decode); its _sum rate is bytes/s, its _count rate transfers/s. Bytes.
	NIXLTransferBytes Signal = "nixl_transfer_bytes"
	// NIXLTransferTime is the histogram of the duration of each NIXL KV-cache transfer. Seconds.
	NIXLTransferTime Signal = "nixl_transfer_time"
	// LoRARequestsInfo is vLLM's LoRA info gauge: its value is the Unix time of the last
	// update (not a count), and its labels running_lora_adapters and waiting_lora_adapters hold
	// comma-joined adapter names, max_lora the slot count. Read it with ParseLoRAInfo.
	LoRARequestsInfo Signal = "lora_requests_info"
	// LoRAAdaptersLoaded is the per-adapter residency gauge, 1 while {adapter_name} is loaded
	// at {level} ("gpu" or "cpu"), with {pinned}. Adapters.
	LoRAAdaptersLoaded Signal = "lora_adapters_loaded"
	// ToolCallInvocations is a counter of tool-call parser invocations by {mode} (streaming
	// counts once per delta, non-streaming once per choice), {outcome} (tool_call,
	// no_tool_call) and {request_type}. Invocations.
	ToolCallInvocations Signal = "tool_call_invocations"

	// The speculative-decoding counters (SpecDecodeSignals).

	// SpecDecodeDrafts is a counter of speculative-decoding drafts proposed (one per request
	// per engine step that speculated; vllm:spec_decode_num_drafts_total, V1). Drafts.
	SpecDecodeDrafts Signal = "spec_decode_drafts"
	// SpecDecodeDraftTokens is a counter of draft tokens proposed
	// (vllm:spec_decode_num_draft_tokens_total). Tokens.
	SpecDecodeDraftTokens Signal = "spec_decode_draft_tokens" // #nosec G101 -- a signal name, not a credential
	// SpecDecodeAccepted is a counter of draft tokens the target model accepted
	// (vllm:spec_decode_num_accepted_tokens_total). Tokens. Divided by SpecDecodeDraftTokens
	// it is the draft acceptance rate; 1 + it / SpecDecodeDrafts is the mean acceptance length
	// (tokens emitted per draft, the bonus token included; vllm/v1/spec_decode/metrics.py).
	SpecDecodeAccepted Signal = "spec_decode_accepted_tokens"
	// SpecDecodeAcceptedPerPos is a counter of accepted draft tokens by draft {position}
	// ("0" … "k-1"; vllm:spec_decode_num_accepted_tokens_per_pos_total). Tokens. Divided by
	// SpecDecodeDrafts it is the acceptance rate at each position.
	SpecDecodeAcceptedPerPos Signal = "spec_decode_accepted_tokens_per_pos"
)

// The families below are the llm-d router's endpoint picker's (EPP, formerly the Gateway API
// inference extension). Each is an extra signal (not in the contract list), read only where a
// target in scope is an EPP (Scope.Gateway).

const (
	// GatewayErrors is a counter of requests that failed at the router, by {error_code}
	// (llm_d_epp_request_error_total; before: inference_objective_/inference_model_
	// request_error_total). Requests.
	GatewayErrors Signal = "gateway_errors"
	// SLOViolations is a counter of requests that missed the TTFT or TPOT objective the router's
	// predicted-latency plugin routed them for, by {type} ("ttft_slo_violation",
	// "tpot_slo_violation") (llm_d_epp_request_slo_violation_total; before:
	// inference_objective_request_slo_violation_total). Requests.
	SLOViolations Signal = "slo_violations"
	// EndpointQueue is the waiting-queue length of each endpoint of a pool as the router reads it,
	// by {name} (the pool) and {model_server_endpoint} (before: {model_server_pod})
	// (llm_d_epp_per_endpoint_queue_size; before: inference_pool_per_pod_queue_size). Requests.
	// Its spread over a pool's endpoints is the pool's queue imbalance.
	EndpointQueue Signal = "endpoint_queue"
	// PoolQueueStdDev is the standard deviation of the endpoints' queue lengths in a pool, by
	// {name} (llm_d_epp_std_dev_queue_size, new names only). Requests.
	PoolQueueStdDev Signal = "pool_queue_stddev"
	// PoolKVStdDev is the standard deviation of the endpoints' KV-cache utilisation in a pool,
	// by {name} (llm_d_epp_std_dev_kv_cache_utilization, new names only). Ratio 0..1.
	PoolKVStdDev Signal = "pool_kv_stddev"
)

// DecodeSteps is a counter of the engine's decode steps (llama.cpp's llamacpp:n_decode_total:
// one per llama_decode call, whatever the batch). Steps. It moves on every step while requests
// are in flight, where llama.cpp's token counters move only when a request gets its first
// token (prompt tokens) or finishes (generated tokens): the diagnosis and the frozen-gauge
// check read it as activity (issue 40).
const DecodeSteps Signal = "decode_steps"

// GenerationLength is an extra signal (not in the contract list): histogram, generated tokens
// per request (vLLM's request_generation_tokens, observed when a request finishes, V0 and V1
// alike; buckets 1, 2, 5, 10, 20, … up to max_model_len, like PromptLength). The tokens query
// shows its distribution next to the prompt lengths.
const GenerationLength Signal = "generation_length"

// GatewaySignals are the extra signals of the llm-d router's endpoint picker, in AllSignals
// order.
var GatewaySignals = []Signal{GatewayErrors, SLOViolations, EndpointQueue, PoolQueueStdDev, PoolKVStdDev}

// The families below are the LiteLLM proxy's and OpenTelemetry GenAI's (addHostedEngines). Each is an
// extra signal (not in the contract list), read only where a target in scope is a gateway.
const (
	// RequestErrors is a counter of requests that failed as the caller saw them, by the
	// source's error labels (LiteLLM exception_class and exception_status, OpenTelemetry
	// error_type); ClassifyError maps each series to an ErrorClass. Requests.
	RequestErrors Signal = "request_errors"
	// GatewaySpend is a counter of the gateway's own cost of requests (LiteLLM
	// litellm_spend_metric_total). US dollars.
	GatewaySpend Signal = "gateway_spend"
	// DeploymentFailures is a counter of failed calls to one upstream deployment, retries
	// included, by {exception_class, exception_status, api_provider}. Calls.
	DeploymentFailures Signal = "deployment_failures"
	// DeploymentState is a gauge per upstream deployment: 0 healthy, 1 partial outage, 2
	// complete outage (LiteLLM litellm_deployment_state). State code.
	DeploymentState Signal = "deployment_state"
	// RateLimitRemainingRequests is a gauge of the requests the provider's rate limit still
	// allows (its x-ratelimit-remaining-requests header). Requests.
	RateLimitRemainingRequests Signal = "ratelimit_remaining_requests"
	// RateLimitRemainingTokens is a gauge of the tokens the provider's rate limit still allows
	// (x-ratelimit-remaining-tokens). Tokens.
	RateLimitRemainingTokens Signal = "ratelimit_remaining_tokens"
)

// HostedSignals are the extra signals of the LiteLLM proxy and OpenTelemetry GenAI, in
// AllSignals order.
var HostedSignals = []Signal{RequestErrors, GatewaySpend, DeploymentFailures, DeploymentState,
	RateLimitRemainingRequests, RateLimitRemainingTokens}

// NewVLLMSignals are the extra signals of the newer vLLM families, in AllSignals order.
var NewVLLMSignals = []Signal{Rejections, RequestsWaitingByReason, PromptTokensBySource, PromptTokensCached,
	KVOffloadBytes, KVOffloadTime, NIXLTransferBytes, NIXLTransferTime, LoRARequestsInfo, LoRAAdaptersLoaded, ToolCallInvocations}

// SpecDecodeSignals are vLLM's speculative-decoding counters (extra signals, read only where a
// target in scope exports them, like NewVLLMSignals; the accepted and draft token counters
// exist in V0 too), in AllSignals order.
var SpecDecodeSignals = []Signal{SpecDecodeDrafts, SpecDecodeDraftTokens, SpecDecodeAccepted, SpecDecodeAcceptedPerPos}

// LatencyStages are the per-request latency histograms, in the order a request lives them.
var LatencyStages = []Signal{QueueTime, PrefillTime, DecodeTime, InferenceTime, TTFT, ITL, TPOT, E2E}

// AllSignals lists every signal the catalogue knows, contract signals first in contract order,
// then the extras PrefixCacheHitRate, Energy, GREngineActive, PromptLength and PowerLimitDefault,
// then NewVLLMSignals, then GatewaySignals, then HostedSignals, then DecodeSteps, then GPUErrorSignals,
// then GenerationLength, then SpecDecodeSignals.
var AllSignals = append(append(append([]Signal{QueueTime, PrefillTime, DecodeTime, InferenceTime, TTFT, ITL, TPOT, E2E,
	PromptTokens, GenerationTokens, RequestsFinished, RequestsRunning, RequestsWaiting,
	KVCacheUsage, Preemptions, PrefixCacheQueries, PrefixCacheHits, IterationTokens,
	GPUUtil, SMActive, DRAMActive, TensorActive, FBUsed, FBTotal, Power, PowerLimit,
	Temperature, SMClock, SMClockMax, ThrottleReasons, PrefixCacheHitRate, Energy, GREngineActive, PromptLength, PowerLimitDefault},
	NewVLLMSignals...), GatewaySignals...), append(append(append(slices.Clone(HostedSignals), DecodeSteps), GPUErrorSignals...), append([]Signal{GenerationLength}, SpecDecodeSignals...)...)...)

// Kind is the Prometheus metric type a signal is read from.
type Kind string

// Metric kinds.
const (
	KindHistogram Kind = "histogram" // classic histogram: <name>_bucket{le}, <name>_sum, <name>_count
	KindCounter   Kind = "counter"   // monotonic counter, read with rate()
	KindGauge     Kind = "gauge"     // instantaneous value
)

// Status says how well an engine provides a signal.
type Status string

// Availability statuses. Absent is never reported as zero: builders simply have no series for
// an engine whose status is Absent, and callers show "not exported by <engine>".
const (
	Exact       Status = "exact"       // the engine measures exactly this quantity
	Approximate Status = "approximate" // a related quantity; Availability.Note says how it differs
	Absent      Status = "absent"      // the engine does not export it
)

// Metric is one stored metric family that carries a signal.
type Metric struct {
	// Name is the stored name: for a histogram the base name without _bucket/_sum/_count; for
	// a counter the full sample name (normally ending in _total; TGI and Triton counters have
	// no suffix); for a gauge the sample name.
	Name string
	// Kind is the Prometheus type the builders read Name as.
	Kind Kind
	// Scale multiplies the stored value into SI units (1 normally; 0.001 for milliseconds,
	// 1e-6 for microseconds, 1048576 for MiB, 1e6 for MHz, 0.01 for percent).
	Scale float64
	// Match holds extra label matchers in PromQL syntax that select the relevant series of a
	// shared family, e.g. `method="decode"`; empty normally. (Addition to the contract.)
	Match string
	// Twin, when set, is the current name of a deprecated family that servers emit next to it
	// during a migration (the llm-d router's inference_objective_request_total beside
	// llm_d_epp_request_total, with other labels): the builders read this metric only for
	// targets that have no series of Twin (`x unless on (job) twin`), so a request is never
	// counted under both names. (Addition to the contract.)
	Twin string
	// Plus and Over, when Over is set, make a gauge a ratio derived from gauges of the same
	// labels: (Name + Plus) / Over (Plus may be empty). SGLang 0.5.11+ exports its KV pool's
	// token counts (sglang:kv_used_tokens, sglang:kv_evictable_tokens) next to the capacity
	// (sglang:max_total_num_tokens); their ratio is the pool's physical occupancy, where
	// token_usage counts evictable radix-cache tokens as free. Such a ratio of the engine's own
	// counts carries the signal exactly (Assess: StateExported). (Addition to the contract.)
	Plus, Over string
}

// Availability says whether and how an engine provides a signal.
type Availability struct {
	Engine Engine
	Signal Signal
	Status Status
	// Note is a sentence for users: why the value is approximate, or where a close substitute
	// lives when it is absent. Empty when there is nothing to say.
	Note string
	// Metrics lists the stored families for the signal in preference order, newest names
	// first. Empty when Status is Absent.
	Metrics []Metric
}
