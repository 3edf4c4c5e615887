// Package sim is a vLLM-compatible simulator with ground truth, for demos
// and tests. It must not be imported by the plugin binary.
//
// # Model
//
// The engine model (V1 scheduler, paged KV cache, prefix cache, roofline step times, GPU
// power and thermal model, ground truth per request) is pkg/enginemodel, which does no I/O and
// is shared with the capacity twin (pkg/twin); Sim wraps an enginemodel.Core, and this
// package's Config, Request, Options, State, … are aliases of its types.
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
