// Package enginemodel is a discrete-event model of one vLLM engine core, with no I/O: the part
// of the simulator (pkg/sim) that the plugin may link, for the capacity twin (pkg/twin).
//
// A Core runs Poisson arrivals (optionally sinusoidally modulated) or a trace; prompt and
// output lengths from LengthDist; a V1-style scheduler that serves running requests first and
// then admits waiting ones within max_num_seqs and the max_num_batched_tokens budget, with
// chunked prefill; paged KV blocks with preemption when blocks run out (by default recompute
// of the most recently admitted request; Config.Preemption selects swap to host memory and the
// oldest or largest victim, Preemption); a prefix-cache hit ratio; and a roofline step time (gpuModel):
// prefill is compute-bound (2·params FLOPs per token at the current SM clock), decode is
// bandwidth-bound (weights plus every scheduled context token's KV bytes per step). The GPU
// model integrates utilisation, SM and DRAM activity, power against the limit, temperature
// (first-order thermal model), the SM clock and NVML throttle reasons; thermal throttling
// lowers the clock and so lengthens compute-bound steps. Restarts and stalls of the
// configuration are applied as simulated time passes.
//
// Every request keeps its ground truth (Request.Truth): queue, prefill, decode, inference,
// TTFT, E2E, TPOT and every inter-token gap, with vLLM's clocks (engines.md §1.5). Stats holds
// the state of vLLM's metrics (counters and classic histograms, observed as vLLM observes
// them); pkg/sim exposes it through client_golang, renders pages, serves the OpenAI API and
// fast-forwards into a TSDB. The model is deterministic given Config.Seed.
//
// pkg/archtest (TestEngineModelDoesNoIO) keeps this package's imports to the standard
// library's computational packages.
package enginemodel
