// Package gpu is the Inferscope GPU agent: it reads NVIDIA GPUs through NVML
// (github.com/NVIDIA/go-nvml) on an interval, keeps the last reading in a cache,
// and serves it as Prometheus metrics on /metrics (plus /healthz).
//
// The package is split so that everything except the NVML reader builds and is
// tested without cgo:
//
//   - Source is the plugin-owned interface over NVML reads. Its NVML
//     implementation (OpenNVML) needs linux and cgo; on other builds
//     OpenNVML returns ErrNVMLUnavailable.
//   - Agent owns the two goroutines: one samples the Source every
//     interval into the cache, the other waits for XID events. A scrape reads the
//     cache and never calls NVML.
//   - Collector turns the cache into const metrics on the agent's
//     own prometheus.Registry.
//   - Run parses the flags and serves HTTP(S) with an optional bearer
//     token; cmd/inferscope-gpu-agent only calls it.
//
// Metric names and units are the Name* constants (NameUtilization, …).
//
// The package must not be imported by the plugin binary: the plugin reads agents
// over HTTP.
package gpu
