// Package sim is a vLLM-compatible simulator with ground truth, for demos
// and tests. It must not be imported by the plugin binary.
//
// # Model
//
// A discrete-event model of one vLLM engine core (engine.go): Poisson
// arrivals (optionally sinusoidally modulated) or a trace; prompt and output
// lengths from LengthDist; a V1-style scheduler that serves running requests
// first and then admits waiting ones within max_num_seqs and the
// max_num_batched_tokens budget, with chunked prefill; paged KV blocks with
// recompute preemption of the most recently admitted request when blocks run
// out; a prefix-cache hit ratio; and a roofline step time (gpu.go): prefill is
// compute-bound (2·params FLOPs per token at the current SM clock), decode is
// bandwidth-bound (weights plus every scheduled context token's KV bytes per
// step). The GPU model integrates utilisation, SM and DRAM activity, power
// against the limit, temperature (first-order thermal model), the SM clock
// and NVML throttle reasons; thermal throttling lowers the clock and so
// lengthens compute-bound steps.
//
// Every request keeps its ground truth (Request.Truth): queue, prefill,
// decode, inference, TTFT, E2E, TPOT and every inter-token gap, with vLLM's
// clocks (engines.md §1.5): V1 inference = prefill + decode exactly and E2E =
// queue + inference + frontend overhead; V0 E2E = queue + prefill + decode.
// The model is deterministic given Config.Seed.
//
// # Metrics
//
// Registry() exposes vLLM's metrics through client_golang with vLLM's names,
// HELP texts, labels (model_name; engine="0" for V1) and default buckets for
// the chosen Version (0.6 V0, 0.10, 0.11, 0.13; see the Version constants).
// Differences from a real page: client_golang writes le="1" where Python
// writes le="1.0" (match le numerically; FastForward stores the Prometheus 3
// form "1.0"), puts le last in the label set, prints integers without ".0",
// and emits no _created series, python_gc_* or process_* families except
// process_start_time_seconds (which changes on each simulated restart).
// Latency histograms are observed when a request finishes, TTFT at the first
// token and ITL per token, as in vLLM; aborted requests only increment
// request_success_total{finished_reason="abort"}. GPUPage() renders the
// simulated GPU under the inferscope GPU agent's metric names.
//
// # Clocks
//
// Server runs the model against the wall clock and serves the OpenAI API
// (SSE streaming whose chunks leave when the model's steps end), /health,
// /version and /metrics. FastForward runs hours of simulated time into a
// storage.Appendable (a TSDB) exactly as a scrape would store it; Page and
// GPUPage render the text pages at any simulated instant.
//
// # Scenarios
//
// Scenarios lists named configurations with the bottleneck each is meant to
// produce (healthy, queue-saturated, kv-pressure, prefill-heavy,
// decode-bound, thermal-throttled, restart, flaky, stalled).
package sim
