// Package probe is Inferscope's active client-side probe (command
// cmd/inferscope-probe): it sends small streaming requests to OpenAI-compatible
// endpoints (/v1/chat/completions or /v1/completions) on an interval, measures
// each request as a user sees it, and serves the results on /metrics for the
// data source to scrape (settings probes[]), like the GPU agent.
//
// Per request (Result): time to first byte (response headers), TTFT (first
// chunk carrying text), every inter-token gap (between chunks carrying text),
// output tokens (the usage block when the server sends one, else the text
// chunks), E2E (request sent → [DONE]), TPOT = (last token − first token) /
// (output tokens − 1), the population variance and the maximum of the gaps, and
// an error class (ClassConnect, ClassTimeout, ClassHTTP4xx with the status code,
// ClassHTTP429, ClassHTTP5xx, ClassStreamCut, ClassStreamError, ClassBadResponse).
//
// Metrics (labels endpoint and model; histograms in seconds with buckets down to
// 2.5 ms, fine enough for sub-100 ms SLOs):
//
//	inferscope_probe_requests_total                         counter
//	inferscope_probe_errors_total{class,code}                counter
//	inferscope_probe_output_tokens_total                    counter
//	inferscope_probe_time_to_first_byte_seconds             histogram
//	inferscope_probe_time_to_first_token_seconds            histogram
//	inferscope_probe_inter_token_latency_seconds            histogram (every gap)
//	inferscope_probe_time_per_output_token_seconds          histogram
//	inferscope_probe_e2e_request_latency_seconds            histogram
//	inferscope_probe_request_max_inter_token_latency_seconds histogram (one per request: its largest gap)
//	inferscope_probe_request_inter_token_latency_stddev_seconds histogram (one per request: √variance of its gaps)
//	inferscope_probe_last_*                                 gauges: the last request's raw timings
//	inferscope_probe_interval_seconds, inferscope_probe_max_tokens gauges: the configured load
//
// GET /last returns the last request of each endpoint as JSON, with every gap.
// The load is bounded by a token bucket per endpoint (golang.org/x/time/rate):
// at most one request per interval per endpoint, one at a time.
package probe
