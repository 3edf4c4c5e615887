package catalog

import "fmt"

// The llm-d router's endpoint picker (EPP; formerly the Gateway API inference extension) sits
// in front of the engines and measures each request from the gateway's side. Its families,
// read from llm-d/llm-d-router pkg/epp/metrics (llm_d_router_metrics.go, metrics.go,
// cardinality.go, collectors/inference_pool.go) and the predicted-latency plugin's metrics.go,
// and its docs/metrics.md, August 2026:
//
//   - current names, subsystem `llm_d_epp_`, request families labelled {model_name,
//     target_model_name, fairness_id, priority}: request_total, request_error_total
//     (+error_code), request_duration_seconds, request_ttft_seconds (+streaming; buckets 0.005 …
//     120 s; a non-streaming request's TTFT is its whole duration), request_streaming_tpot_seconds
//     ((e2e − TTFT) / (output tokens − 1); 0.0005 … 2 s), request_streaming_itl_seconds (gap
//     between response body chunks; 0.001 … 2 s), request_input_tokens and request_output_tokens
//     (histograms), request_running; pool gauges {name}: average_/std_dev_ kv_cache_utilization,
//     queue_size, running_requests, ready_endpoints, per_endpoint_queue_size
//     {name, model_server_endpoint}; request_slo_violation_total {plugin_name, plugin_type,
//     model_name, target_model_name, type}.
//   - deprecated names, still emitted next to the current ones during the migration (dual
//     emission) and gone afterwards: inference_objective_* (request_total {model_name,
//     target_model_name, priority}, request_error_total, request_duration_seconds (buckets 0.005 …
//     3600 s), input_tokens, output_tokens, running_requests, and, from the predicted-latency
//     plugin only, request_ttft_seconds and request_tpot_seconds {model_name, target_model_name}
//     and request_slo_violation_total {…, type}); the Gateway API inference extension's first
//     names inference_model_* (request_total, request_error_total, request_duration_seconds,
//     input_tokens, output_tokens, running_requests); inference_pool_* (average_kv_cache_utilization,
//     average_queue_size, ready_pods, per_pod_queue_size {name, model_server_pod});
//     inference_extension_* (scheduler and flow-control families).
//
// Only the current names carry fairness_id; the deprecated request families are labelled by
// model (and priority on request_total) only. fairness_id comes from the
// x-llm-d-inference-fairness-id header and model_name from the request body: the router caps
// each at TenantBound distinct values over its process's life and reports later values as
// OverflowTenant.

// TenantLabel is the stored label of the llm-d router's tenant: groupBy tenant groups by it.
const TenantLabel = "fairness_id"

// TenantBound is the most distinct tenants (and models) the llm-d router labels its series with
// (its maxFairnessLabelValues and maxModelLabelValues), and the most tenant
// groups a query answers with.
const TenantBound = 1000

// OverflowTenant is the label value the llm-d router reports for every tenant (or model) beyond
// TenantBound; Inferscope folds groups beyond its own bound into the same value.
const OverflowTenant = "other"

// eppNew prefixes current EPP family names.
func eppNew(bases ...string) []string {
	out := make([]string, len(bases))
	for i, b := range bases {
		out[i] = "llm_d_epp_" + b
	}
	return out
}

// twinOf marks deprecated metrics with the current name they are emitted next to.
func twinOf(ms []Metric, twin string) []Metric {
	for i := range ms {
		ms[i].Twin = twin
	}
	return ms
}

// eppFamily is a current family followed by its deprecated predecessors, each read only where
// the target has no series of the current one (Metric.Twin).
func eppFamily(k Kind, current string, old ...string) []Metric {
	return append(metricsOf(k, 1, []string{current}), twinOf(metricsOf(k, 1, old), current)...)
}

const (
	noteEPPView         = "Measured by the llm-d router's endpoint picker, from the gateway's side: it includes the router's own time and the network between router and engine."
	noteEPPTTFT         = noteEPPView + " Streaming requests only (streaming=\"true\"; a non-streaming request's TTFT is its whole duration, left out); the deprecated inference_objective_request_ttft_seconds (no fairness_id, no streaming label) was recorded only by the predicted-latency plugin."
	noteEPPITL          = "The router's gap between consecutive response body chunks of streamed requests: a chunk may carry several tokens, so it reads high next to the engine's per-token ITL."
	noteEPPTPOT         = noteEPPView + " Streaming requests, (E2E − TTFT) / (output tokens − 1) per request; the deprecated inference_objective_request_tpot_seconds was recorded only by the predicted-latency plugin."
	noteEPPTokens       = "Counted from the router's per-request token histogram's _sum (tokens reported in the responses' usage), which grows when a request finishes."
	noteEPPRequests     = "Requests the router scheduled onto an endpoint, counted when it handles the request body (not when the request finishes); requests refused before scheduling (no endpoint, flow-control rejection) are only in gateway_errors."
	noteEPPSLOViolation = "Only with the predicted-latency (SLO-aware routing) plugin: requests that missed the TTFT or TPOT objective they were routed for, by type."
)

// addLLMDEngine adds the llm-d endpoint picker (router) to the table (called by
// buildCatalogue).
func addLLMDEngine() {
	table[EngineLLMDEPP] = map[Signal]entry{
		TTFT: {Exact, noteEPPTTFT, append(withMatch(hist(eppNew("request_ttft_seconds")...), `streaming!="false"`),
			twinOf(hist("inference_objective_request_ttft_seconds"), "llm_d_epp_request_ttft_seconds")...)},
		ITL: {Approximate, noteEPPITL, hist(eppNew("request_streaming_itl_seconds")...)},
		TPOT: {Exact, noteEPPTPOT, eppFamily(KindHistogram, "llm_d_epp_request_streaming_tpot_seconds",
			"inference_objective_request_tpot_seconds")},
		E2E: {Exact, noteEPPView, eppFamily(KindHistogram, "llm_d_epp_request_duration_seconds",
			"inference_objective_request_duration_seconds", "inference_model_request_duration_seconds")},
		PromptTokens: {Approximate, noteEPPTokens, eppFamily(KindCounter, "llm_d_epp_request_input_tokens_sum",
			"inference_objective_input_tokens_sum", "inference_model_input_tokens_sum")},
		GenerationTokens: {Approximate, noteEPPTokens, eppFamily(KindCounter, "llm_d_epp_request_output_tokens_sum",
			"inference_objective_output_tokens_sum", "inference_model_output_tokens_sum")},
		RequestsFinished: {Approximate, noteEPPRequests, eppFamily(KindCounter, "llm_d_epp_request_total",
			"inference_objective_request_total", "inference_model_request_total")},
		GatewayErrors: {Exact, "Requests that failed at the router, by error_code.", eppFamily(KindCounter, "llm_d_epp_request_error_total",
			"inference_objective_request_error_total", "inference_model_request_error_total")},
		SLOViolations: {Exact, noteEPPSLOViolation, eppFamily(KindCounter, "llm_d_epp_request_slo_violation_total",
			"inference_objective_request_slo_violation_total")},
		EndpointQueue: {Exact, "The queue length the router last read from each endpoint of the pool (label model_server_endpoint; model_server_pod under the deprecated name).",
			eppFamily(KindGauge, "llm_d_epp_per_endpoint_queue_size", "inference_pool_per_pod_queue_size")},
		PoolQueueStdDev: {Exact, "Current names only (llm_d_epp_std_dev_queue_size); for older routers take the spread of endpoint_queue.", gauge(eppNew("std_dev_queue_size")...)},
		PoolKVStdDev:    {Exact, "Current names only (llm_d_epp_std_dev_kv_cache_utilization).", gauge(eppNew("std_dev_kv_cache_utilization")...)},
	}
	// model_name is the model the client asked for; target_model_name (after any model
	// rewrite) is the one the engine serves. Groups and filters use model_name, like the
	// engines' (without a rewrite the two are equal); relabelling target_model_name into
	// model_name would merge series that differ only in the requested name.
	modelLabels[EngineLLMDEPP] = []string{"model_name"}
}

// eppMarkers are families only the endpoint picker exports, under either generation.
var eppMarkers = []string{"llm_d_epp_", "inference_objective_", "inference_model_", "inference_pool_", "inference_extension_"}

// detectEPP names the generation of an endpoint picker's page: "llm_d_epp" (current names),
// "legacy" (only the deprecated inference_* names) or "dual" (both: a release of the migration
// that emits every family twice; the builders read the current names, Metric.Twin).
func detectEPP(ns nameSet, d *Detection) {
	cur := ns.countPrefix("llm_d_epp_")
	old := ns.countPrefix("inference_objective_", "inference_model_", "inference_pool_", "inference_extension_")
	switch {
	case cur > 0 && old > 0:
		d.Generation = EPPGenerationDual
		d.Evidence = append(d.Evidence, fmt.Sprintf("%d llm_d_epp_ and %d deprecated inference_* families: a router of the migration emitting both; the llm_d_epp_ names are read", cur, old))
	case cur > 0:
		d.Generation = EPPGenerationCurrent
		d.Evidence = append(d.Evidence, "llm_d_epp_ names only: the router's current names (tenant label fairness_id on request families)")
	default:
		d.Generation = EPPGenerationLegacy
		d.Evidence = append(d.Evidence, "deprecated inference_objective_/inference_model_/inference_pool_ names only: request families carry no fairness_id, so groupBy tenant does not split them")
	}
}

// Generations of the llm-d router's endpoint picker (Detection.Generation).
const (
	EPPGenerationCurrent = "llm_d_epp"
	EPPGenerationLegacy  = "legacy"
	EPPGenerationDual    = "dual"
)
