// Package catalog maps Inferscope's canonical signals (queue_time, ttft, kv_cache_usage,
// gpu_util, …) to the raw metric names each inference engine exposes, per engine and per
// version, detects the engine behind a /metrics page from its metric names, and builds the
// PromQL that reads a signal across every engine at once.
//
// The package is pure: no I/O, no clock, no globals that change after init.
//
// # Sources
//
// Metric names, renames, units and timing semantics come from ../shared/reference/engines.md
// (vLLM V0/V1 loggers, SGLang collector, TGI router, llama.cpp server, trtllm-serve, Triton,
// dcgm-exporter) and the real pages in ../shared/corpus (see SOURCES.md there).
//
// # Never double counting renamed metrics
//
// vLLM renamed several families and, for a few releases, exposes the old and the new name
// side by side with identical data (gpu_cache_usage_perc and kv_cache_usage_perc in 0.10,
// time_per_output_token_seconds and inter_token_latency_seconds in 0.11). Every builder joins
// the alternatives of a signal with PromQL's `or` after rate() (or on the raw gauge): set
// operators match series on all labels except the metric name, so a series present under both
// names is taken once, from the newer name, while targets that only have one of the names keep
// theirs.
//
// # Ranks, replicas and process splits
//
// Engines label parallel ranks and processes (rankLabels): a partition label
// (vLLM engine, SGLang dp_rank) splits the work, so counts add up and ratios are
// averaged across its values; a replica label (SGLang tp_rank, cp_rank, pp_rank: every
// pipeline stage schedules the same requests, attention and expert ranks) repeats one scheduler's numbers and is counted once; vLLM's pid splits one engine's
// gauge across API-server processes, one of which holds the value. Every builder collapses an
// engine's replicas (and, for gauges, process splits) with `max without (…)` before the outer
// sum or avg, so pages with and without those labels give the same answer. Gauge samples that
// cannot be true (ValueRange) are dropped first; ImpossiblePromQL selects them for notices.
//
// # Units
//
// Every Metric carries Scale, the factor that turns the stored value into SI units (seconds,
// bytes, hertz, watts, ratios 0..1). Counter and gauge builders apply Scale in PromQL.
// Histogram bucket bounds (`le`) cannot be rescaled in PromQL, so HistogramPromQL only reads
// histograms whose Scale is 1; a caller that wants a scaled histogram (Triton's
// nv_inference_first_response_histogram_ms) queries it alone with HistogramPromQLFor and
// multiplies the parsed `le` bounds and the _sum by Metric.Scale in Go.
//
// # Models
//
// Results always carry the stored label `model_name`. SGLang 0.3 (`name`) and Triton
// (`model`) label the model differently; their series are passed through label_replace so the
// result carries `model_name` too. A model filter never returns data that cannot be attributed
// to a model: engines with no model label (TGI, llama.cpp, GPU exporters) only match a model
// filter when the target's configured labels (settings.Target.Labels) set `model_name`.
//
// # GPU agents
//
// GPUPromQL reads GPU gauges from the two agent sources only (the Inferscope agent and
// dcgm-exporter) and normalises identity labels in PromQL with label_replace: dcgm-exporter's
// UUID (uuid with --use-old-namespace, gpu_uuid on NVLink families), Hostname (renamed hostname
// in 2026) and modelName (model_name) become the agent's uuid, hostname and name, GPU_I_ID
// becomes gpu_instance_id; each term is aggregated onto job plus GPULabels before terms are
// joined with `or`, so the source's other labels (driver version, device, Kubernetes pod) never
// split or double a GPU. DCGM blank sentinels (every value ≥ DCGM_INT32_BLANK = 2147483632) are
// dropped before scaling: a blank is a missing value, never a reading.
package catalog
