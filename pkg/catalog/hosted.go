package catalog

import (
	"fmt"
	"slices"
	"strings"
)

// Gateways and hosted models: the LiteLLM proxy and the OpenTelemetry GenAI semantic
// conventions. Both see requests from the caller's side of an LLM API, so they carry hosted
// models (an OpenAI or Anthropic model behind the gateway) next to self-hosted ones, and they
// see the failures an engine never sees (rate limits, content filters, upstream timeouts).
//
// LiteLLM proxy (`litellm_` prefix, prometheus_client): names, labels and buckets from
// BerriAI/litellm litellm/integrations/prometheus.py and litellm/types/integrations/prometheus.py
// (PrometheusMetricLabels, LATENCY_BUCKETS) and the docs page "Prometheus metrics"
// (docs/proxy/prometheus, updated 2026-10-08), LiteLLM 1.7x–1.8x. Counters are declared without
// _total and exposed with it by prometheus_client:
//
//   - litellm_proxy_total_requests_metric_total {end_user, hashed_api_key, api_key_alias,
//     requested_model, team, team_alias, user, status_code, user_email, route, …, model_id}:
//     every client request, answered or failed; litellm_proxy_failed_requests_metric_total
//     {… exception_status, exception_class …}: the client got no success. Their deprecated
//     predecessors litellm_requests_metric_total and litellm_llm_api_failed_requests_metric_total
//     are still emitted next to them.
//   - litellm_request_total_latency_metric (histogram, s, whole request at the proxy),
//     litellm_llm_api_latency_metric (s, the upstream call), litellm_llm_api_time_to_first_token_metric
//     (s, streaming calls only, from the upstream call's start), labels {model, hashed_api_key,
//     api_key_alias, team, team_alias, requested_model, end_user, user, model_id}; buckets
//     0.005 … 600 s.
//   - litellm_input_tokens_metric_total, litellm_output_tokens_metric_total,
//     litellm_total_tokens_metric_total {… model, requested_model …}; litellm_spend_metric_total
//     (USD) {… model, api_provider …}.
//   - deployment families {litellm_model_name, model_id, api_base, api_provider, …}:
//     litellm_deployment_total_requests_total, _success_responses_total,
//     _failure_responses_total (+ exception_status, exception_class), litellm_deployment_state
//     (0 healthy, 1 partial outage, 2 complete outage), litellm_deployment_cooled_down_total,
//     litellm_remaining_requests_metric and litellm_remaining_tokens_metric (the provider's
//     x-ratelimit-remaining-* headers, {model_group, api_provider, api_base, litellm_model_name,
//     …}), litellm_deployment_latency_per_output_token (a histogram of TTFT, or the whole
//     response time when not streamed, divided by the output tokens: not a TPOT, not read).
//
// exception_class is the provider (capitalised) and the exception's class, e.g.
// "Openai.RateLimitError"; exception_status its HTTP status, e.g. "429".
//
// OpenTelemetry GenAI (`gen_ai_` prefix): the instruments of open-telemetry/semantic-conventions
// v1.44.0, model/gen-ai/deprecated/metrics-deprecated.yaml (the conventions moved to
// open-telemetry/semantic-conventions-genai with PR #3696; the names are unchanged) and
// docs/gen-ai/gen-ai-metrics.md before the move (explicit bucket boundaries), as the
// OpenTelemetry Collector's Prometheus exporter (and the SDKs' Prometheus exporters) write them:
// dots become underscores and the unit is suffixed ("s" → _seconds, "{token}" adds nothing):
//
//   - client: gen_ai_client_operation_duration_seconds, gen_ai_client_token_usage
//     (+ gen_ai_token_type "input"/"output"), gen_ai_client_operation_time_to_first_chunk_seconds,
//     gen_ai_client_operation_time_per_output_chunk_seconds (streaming only);
//   - server: gen_ai_server_request_duration_seconds, gen_ai_server_time_to_first_token_seconds,
//     gen_ai_server_time_per_output_token_seconds;
//   - attributes gen_ai_operation_name, gen_ai_request_model, gen_ai_response_model,
//     gen_ai_provider_name (before semantic conventions 1.37: gen_ai_system), server_address,
//     server_port and, on a failed operation, error_type.

// HostedProviderLabel is the output label of groupBy provider: the gateway's upstream
// provider (LiteLLM api_provider, OpenTelemetry gen_ai_provider_name or the older gen_ai_system).
const HostedProviderLabel = "provider"

// providerLabels lists, per engine, the stored labels naming the provider, applied in order
// with label_replace into HostedProviderLabel (the last one present wins, so the current
// OpenTelemetry attribute is read once when a series carries both).
var providerLabels = map[Engine][]string{
	EngineLiteLLM:   {"api_provider"},
	EngineOTelGenAI: {"gen_ai_system", "gen_ai_provider_name"},
}

// ModelLabels returns the stored labels engine e names the model with, preferred last
// (label_replace order; model_name first).
func ModelLabels(e Engine) []string {
	if l := modelLabels[e]; len(l) > 0 {
		return slices.Clone(l)
	}
	return []string{"model_name"}
}

// gatewayEngines are the engines that measure requests an engine behind them measures again:
// the llm-d router's endpoint picker, the LiteLLM proxy and OpenTelemetry GenAI instruments.
var gatewayEngines = []Engine{EngineLLMDEPP, EngineLiteLLM, EngineOTelGenAI}

// IsGateway reports whether e measures requests from in front of the engines (llm-d-epp,
// litellm, otel-genai): queries over all targets leave such targets out, and the builders
// visit them only with Scope.Gateway.
func IsGateway(e Engine) bool { return slices.Contains(gatewayEngines, e) }

// OTel GenAI metric names as the Collector's Prometheus exporter writes them.
const (
	OTelClientDuration   = "gen_ai_client_operation_duration_seconds"
	OTelClientTokens     = "gen_ai_client_token_usage" // #nosec G101 -- a metric name, not a credential
	OTelClientFirstChunk = "gen_ai_client_operation_time_to_first_chunk_seconds"
	OTelClientChunkGap   = "gen_ai_client_operation_time_per_output_chunk_seconds"
	OTelServerDuration   = "gen_ai_server_request_duration_seconds"
	OTelServerTTFT       = "gen_ai_server_time_to_first_token_seconds"
	OTelServerTPOT       = "gen_ai_server_time_per_output_token_seconds"
)

const (
	noteLiteLLMView   = "Measured by the LiteLLM proxy, from the caller's side of the provider's API: it includes the network to the provider (or to the engine behind it) and the provider's own queue."
	noteLiteLLMTTFT   = "LiteLLM records time to first token for streamed calls only, from the start of its call to the provider (the proxy's own pre-call time is not in it)."
	noteLiteLLMTokens = "Tokens from the providers' usage fields, counted when a request ends."
	noteLiteLLMReqs   = "Every client request of the proxy, answered or failed (litellm_proxy_total_requests_metric; the deprecated litellm_requests_metric is read only where the current name is missing); retries and fallbacks to other deployments are not counted again."
	noteLiteLLMSpend  = "LiteLLM's own cost of each request (USD) from its model price map or the deployment's configured prices."
	noteLiteLLMErrors = "Client requests that got no success answer, by exception_class (provider.ExceptionClass) and exception_status (HTTP status)."
	noteLiteLLMTPOT   = "LiteLLM's latency_per_output_token is the time to first token (streamed) or the whole response time (not streamed) divided by the output tokens, which is not a time per output token; it is not read."
	noteOTelView      = "Measured by OpenTelemetry GenAI instrumentation (client: the application's SDK call; server: the model server), exported through the OpenTelemetry Collector's Prometheus exporter."
	noteOTelTTFT      = noteOTelView + " The server's time to first token when exported, else the client's time to first chunk (streaming calls only)."
	noteOTelITL       = "The client's time per output chunk (streaming only): the gap between chunks, and a chunk may carry several tokens."
	noteOTelTPOT      = "The server's time per output token after the first, per successful response; client instrumentation has no such instrument."
	noteOTelTokens    = "From the token-usage histogram's _sum by gen_ai_token_type, which grows when an operation ends."
	noteOTelReqs      = "Operations counted by the duration histogram's _count (server request duration when exported, else the client's operation duration); failed operations included (error_type set)."
	noteOTelErrors    = "Operations whose duration carries error_type (an HTTP status, an exception's name or _OTHER)."
)

// addHostedEngines adds the LiteLLM proxy and OpenTelemetry GenAI instrumentation to the
// table (called by buildCatalogue).
func addHostedEngines() {
	table[EngineLiteLLM] = map[Signal]entry{
		TTFT:             {Exact, noteLiteLLMTTFT, hist("litellm_llm_api_time_to_first_token_metric")},
		E2E:              {Exact, noteLiteLLMView, hist("litellm_request_total_latency_metric")},
		TPOT:             {Absent, noteLiteLLMTPOT, nil},
		PromptTokens:     {Exact, noteLiteLLMTokens, ctr("litellm_input_tokens_metric_total")},
		GenerationTokens: {Exact, noteLiteLLMTokens, ctr("litellm_output_tokens_metric_total")},
		RequestsFinished: {Exact, noteLiteLLMReqs, append(ctr("litellm_proxy_total_requests_metric_total"),
			twinOf(ctr("litellm_requests_metric_total"), "litellm_proxy_total_requests_metric_total")...)},
		RequestErrors: {Exact, noteLiteLLMErrors, append(ctr("litellm_proxy_failed_requests_metric_total"),
			twinOf(ctr("litellm_llm_api_failed_requests_metric_total"), "litellm_proxy_failed_requests_metric_total")...)},
		GatewaySpend: {Exact, noteLiteLLMSpend, ctr("litellm_spend_metric_total")},
		DeploymentFailures: {Exact, "Failed calls to one deployment (a provider endpoint), retries included, by exception_class and exception_status.",
			ctr("litellm_deployment_failure_responses_total")},
		DeploymentState: {Exact, "0 healthy, 1 partial outage, 2 complete outage, per deployment (litellm_model_name, api_provider, api_base).",
			gauge("litellm_deployment_state")},
		RateLimitRemainingRequests: {Exact, "The provider's x-ratelimit-remaining-requests header, as last seen by the proxy.", gauge("litellm_remaining_requests_metric")},
		RateLimitRemainingTokens:   {Exact, "The provider's x-ratelimit-remaining-tokens header, as last seen by the proxy.", gauge("litellm_remaining_tokens_metric")},
	}
	// Copied in this order, the last present wins: litellm_model_name (deployment families),
	// model (the model the proxy sent upstream: latency, tokens, spend), requested_model (the
	// model group the client asked for: latency, tokens, requests and failures). Requests and
	// failures carry only requested_model and spend only model, so a model group named unlike
	// its upstream model shows its spend under the upstream name (docs/gateways.md).
	modelLabels[EngineLiteLLM] = []string{"model_name", "litellm_model_name", "model", "requested_model"}

	table[EngineOTelGenAI] = map[Signal]entry{
		TTFT:             {Exact, noteOTelTTFT, append(hist(OTelServerTTFT), twinOf(hist(OTelClientFirstChunk), OTelServerTTFT)...)},
		ITL:              {Approximate, noteOTelITL, hist(OTelClientChunkGap)},
		TPOT:             {Exact, noteOTelTPOT, hist(OTelServerTPOT)},
		E2E:              {Exact, noteOTelView, append(hist(OTelServerDuration), twinOf(hist(OTelClientDuration), OTelServerDuration)...)},
		PromptTokens:     {Approximate, noteOTelTokens, withMatch(ctr(OTelClientTokens+"_sum"), `gen_ai_token_type="input"`)},
		GenerationTokens: {Approximate, noteOTelTokens, withMatch(ctr(OTelClientTokens+"_sum"), `gen_ai_token_type="output"`)},
		RequestsFinished: {Exact, noteOTelReqs, append(ctr(OTelServerDuration+"_count"),
			twinOf(ctr(OTelClientDuration+"_count"), OTelServerDuration+"_count")...)},
		RequestErrors: {Exact, noteOTelErrors, withMatch(append(ctr(OTelServerDuration+"_count"),
			twinOf(ctr(OTelClientDuration+"_count"), OTelServerDuration+"_count")...), `error_type!=""`)},
	}
	modelLabels[EngineOTelGenAI] = []string{"model_name", "gen_ai_response_model", "gen_ai_request_model"}
}

// liteLLMMarker and otelGenAIMarker prefix the families of the two sources.
const (
	liteLLMMarker   = "litellm_"
	otelGenAIMarker = "gen_ai_"
)

// detectHosted adds the evidence of a LiteLLM or OpenTelemetry GenAI page.
func detectHosted(ns nameSet, d *Detection) {
	switch d.Engine {
	case EngineLiteLLM:
		if ns.present("litellm_proxy_total_requests_metric_total") {
			d.Evidence = append(d.Evidence, "litellm_proxy_total_requests_metric present: client requests counted by the proxy (LiteLLM 1.5x+)")
		} else if ns.present("litellm_requests_metric_total") {
			d.Evidence = append(d.Evidence, "only the deprecated litellm_requests_metric: an older LiteLLM proxy; failures come from litellm_llm_api_failed_requests_metric")
		}
		if !ns.present("litellm_llm_api_time_to_first_token_metric") {
			d.Evidence = append(d.Evidence, "no litellm_llm_api_time_to_first_token_metric: no streamed call yet, or a LiteLLM from before the TTFT histogram")
		}
	case EngineOTelGenAI:
		var srv, cli bool
		for _, n := range []string{OTelServerDuration, OTelServerTTFT, OTelServerTPOT} {
			srv = srv || ns.present(n)
		}
		for _, n := range []string{OTelClientDuration, OTelClientTokens, OTelClientFirstChunk, OTelClientChunkGap} {
			cli = cli || ns.present(n)
		}
		switch {
		case srv && cli:
			d.Generation = OTelGenAIBoth
		case srv:
			d.Generation = OTelGenAIServer
		default:
			d.Generation = OTelGenAIClient
		}
		d.Evidence = append(d.Evidence, fmt.Sprintf("OpenTelemetry GenAI %s instruments (semantic conventions gen_ai.*, exported with units suffixed)", d.Generation))
	}
}

// Kinds of OpenTelemetry GenAI pages (Detection.Generation): client instruments only, server
// instruments only, or both.
const (
	OTelGenAIClient = "client"
	OTelGenAIServer = "server"
	OTelGenAIBoth   = "client+server"
)

// ErrorClass is one of the five classes of failed requests a gateway sees.
type ErrorClass string

// The error classes, in the order they are shown.
const (
	ErrAPITimeout    ErrorClass = "api_timeout"    // the upstream did not answer in time (timeouts, connection failures, 408, 504)
	ErrRateLimit     ErrorClass = "rate_limit"     // 429 and rate-limit exceptions
	ErrContentFilter ErrorClass = "content_filter" // content-policy refusals and finish_reason content_filter
	ErrModelError    ErrorClass = "model_error"    // the provider or engine failed (5xx, API errors, broken streams)
	ErrClientError   ErrorClass = "client_error"   // the request was at fault (4xx other than 408 and 429)
)

// ErrorClasses lists the classes in display order.
var ErrorClasses = []ErrorClass{ErrAPITimeout, ErrRateLimit, ErrContentFilter, ErrModelError, ErrClientError}

// DefaultAllowedShare is each class's allowed share of requests (0..1), the requirements'
// objectives: API timeout < 1 %, rate limit < 0.5 %, content filter < 1 %, model error
// < 0.1 %, client error < 0.5 %.
var DefaultAllowedShare = map[ErrorClass]float64{
	ErrAPITimeout: 0.01, ErrRateLimit: 0.005, ErrContentFilter: 0.01, ErrModelError: 0.001, ErrClientError: 0.005,
}

// ErrorLabels are the stored labels an error series is classified by: LiteLLM's
// exception_class and exception_status, OpenTelemetry's error_type, the probe's class and code,
// an OpenAI-style finish_reason, and an HTTP status.
var ErrorLabels = []string{"exception_class", "exception_status", "error_type", "class", "code", "finish_reason", "status_code"}

// ClassifyError names the class of one failed-request series from its labels (ErrorLabels;
// missing labels are empty). Rules, first match wins (docs/gateways.md has the table):
//
//  1. finish_reason "content_filter" (the probe's class content_filter), or an exception or
//     error type naming a content policy or filter (ContentPolicyViolationError,
//     content_filter) → content_filter;
//  2. a name with "RateLimit" or "rate_limit", probe class http_429, status 429 → rate_limit;
//  3. a name with "Timeout" (Timeout, APITimeoutError, httpx.ReadTimeout, timeout), probe
//     classes timeout and connect, status 408 or 504 → api_timeout;
//  4. LiteLLM/OpenAI client-side classes (BadRequestError, AuthenticationError,
//     PermissionDeniedError, NotFoundError, UnprocessableEntityError,
//     ContextWindowExceededError, UnsupportedParamsError, BudgetExceededError,
//     InvalidRequestError), probe class http_4xx, another 4xx status → client_error;
//  5. everything else (5xx, APIError, APIConnectionError, InternalServerError,
//     ServiceUnavailableError, the probe's http_5xx, stream_cut, stream_error, bad_response,
//     OpenTelemetry's _OTHER, names not recognised) → model_error: an unknown failure counts in
//     the class with the strictest objective, so none goes unseen.
func ClassifyError(labels map[string]string) ErrorClass {
	name := strings.ToLower(labels["exception_class"] + " " + labels["error_type"])
	probe := labels["class"]
	status := labels["exception_status"]
	if status == "" {
		status = labels["status_code"]
	}
	if status == "" && probe != "" {
		status = labels["code"]
	}
	if status == "" && isStatus(labels["error_type"]) {
		status = labels["error_type"]
	}
	switch {
	case labels["finish_reason"] == "content_filter", probe == "content_filter", strings.Contains(name, "contentpolicy"),
		strings.Contains(name, "content_policy"), strings.Contains(name, "content_filter"), strings.Contains(name, "contentfilter"):
		return ErrContentFilter
	case strings.Contains(name, "ratelimit"), strings.Contains(name, "rate_limit"), probe == "http_429", status == "429":
		return ErrRateLimit
	case strings.Contains(name, "timeout"), probe == "timeout", probe == "connect", status == "408", status == "504":
		return ErrAPITimeout
	}
	for _, c := range clientExceptionClasses {
		if strings.Contains(name, c) {
			return ErrClientError
		}
	}
	if probe == "http_4xx" || (len(status) == 3 && status[0] == '4') {
		return ErrClientError
	}
	return ErrModelError
}

// clientExceptionClasses are LiteLLM's (and the OpenAI SDK's) exception classes for requests
// at fault, lower-cased.
var clientExceptionClasses = []string{"badrequesterror", "authenticationerror", "permissiondeniederror",
	"notfounderror", "unprocessableentityerror", "contextwindowexceedederror", "unsupportedparamserror",
	"budgetexceedederror", "invalidrequesterror"}

func isStatus(s string) bool {
	if len(s) != 3 {
		return false
	}
	for _, r := range s {
		if r < '0' || r > '9' {
			return false
		}
	}
	return true
}

// CheckErrorClass returns an error naming the classes when c is not one of them.
func CheckErrorClass(c string) error {
	if slices.Contains(ErrorClasses, ErrorClass(c)) {
		return nil
	}
	names := make([]string, len(ErrorClasses))
	for i, x := range ErrorClasses {
		names[i] = string(x)
	}
	return fmt.Errorf("%q is not an error class (want %s)", c, strings.Join(names, ", "))
}
