package main

import (
	"github.com/grafana/grafana-foundation-sdk/go/cog"
	"github.com/grafana/grafana-foundation-sdk/go/common"
	"github.com/grafana/grafana-foundation-sdk/go/dashboard"
)

// UIDModels is the uid of the "Models and providers" dashboard (the error-surge alert rules
// link to its panels).
const UIDModels = "inferscope-models"

// errorsQuery is an errors query of the selected targets and models (docs/gateways.md).
func errorsQuery(kv ...any) queryBuilder {
	return query(sel(append([]any{"queryType", "errors"}, kv...)...)...)
}

// modelsClasses are the five error classes with their panel titles and descriptions, in the
// order of the dashboard (and of catalog.ErrorClasses).
var modelsClasses = []struct{ class, title, desc string }{
	{"api_timeout", "API timeouts", "Share of requests whose upstream (the provider's API or the engine behind the gateway) did not answer in time: LiteLLM Timeout / APITimeoutError (408) and 504, OpenTelemetry error_type timeout or *Timeout*. Allowed share 1 % (the dashed red line)."},
	{"rate_limit", "Rate limits", "Share of requests refused with 429 or a RateLimitError by the provider or the gateway's own limits. Allowed share 0.5 % (the dashed red line); the provider's remaining requests and tokens are in the rate-limit panel."},
	{"content_filter", "Content filter", "Share of requests refused by a content policy (LiteLLM ContentPolicyViolationError, error_type content_filter, finish_reason content_filter). Allowed share 1 % (the dashed red line)."},
	{"model_error", "Model errors", "Share of requests the provider or engine failed: 5xx, APIError, InternalServerError, ServiceUnavailableError, APIConnectionError and any error type not recognised. Allowed share 0.1 % (the dashed red line)."},
	{"client_error", "Client errors", "Share of requests at fault: 4xx other than 408 and 429 (BadRequestError, AuthenticationError, NotFoundError, ContextWindowExceededError, BudgetExceededError). Allowed share 0.5 % (the dashed red line)."},
}

// noGateway is the hint of a models panel without data: the per-model error classes and
// spend come from a gateway's metrics, which engines alone do not export.
const noGateway = "No gateway in the selection: add a LiteLLM proxy or an OpenTelemetry GenAI exporter as a target (docs/gateways.md); engines alone have no per-class errors or spend"

// gatewayRowTitle is the collapsed row of the gateway's per-model and
// per-provider tables, saying what fills them.
const gatewayRowTitle = "Models and providers at the gateway (needs a LiteLLM proxy or OpenTelemetry GenAI target)"

// modelLatencyName names a per-target-and-model latency series target first with its stage,
// statistic and, for a bucket bound, the bound, then its model ("vllm-a ttft p99  ·
// meta-llama/Llama-3.1-8B-Instruct", two spaces where the bound is empty): a narrow legend
// keeps the target and the statistic (issue 33: the frames' "ttft p99 · model=…" put the
// model first, then "vllm-a · meta-llama/Llama-3.1-8B-Instruct tt…" cut the statistic).
const modelLatencyName = "${__field.labels.target} ${__field.labels.stage} ${__field.labels.stat} ${__field.labels.bound} · ${__field.labels.model}"

// modelRequestsName names a per-target-and-model request series target first with its finish
// reason ("vllm-a requests/s stop · meta-llama/…").
const modelRequestsName = "${__field.labels.target} requests/s ${__field.labels.reason} · ${__field.labels.model}"

// Models is the "Models and providers" dashboard: the per-model table of a gateway (LiteLLM
// proxy, OpenTelemetry GenAI instruments) with requests, TTFT and ITL medians, errors by class
// and spend, then per model TTFT and time per output token with their bucket bounds, request
// and token rates, each error class's share against its allowed share, and the gateway and
// network time of models that are served by an engine Inferscope also reads.
func Models() *dashboard.DashboardBuilder {
	b := shell(UIDModels, "Inferscope — models and providers",
		"Hosted and self-hosted models as a gateway (a LiteLLM proxy, OpenTelemetry GenAI instruments) sees them: requests, latency, errors in five classes (API timeout, rate limit, content filter, model error, client error) against their allowed shares, and spend, per model and provider (docs/gateways.md).",
		targetVar(), modelVar(), profileVar())
	// A gateway's panels: empty without one (the demo has none), so collapsed
	// with what fills them in the title (issue 33: two "No data" tables and
	// five empty charts opened the dashboard).
	gateway := row(gatewayRowTitle).Collapsed(true)
	gateway.WithPanel(tbl("Models", "One row per model at the end of the range: requests/s, errors/s, median TTFT and ITL (the gateway's buckets; ITL only where the source has an inter-chunk histogram), each error class's share of requests (red past its allowed share), the worst class's burn (share ÷ allowed share) and LiteLLM's spend per request and per 1M tokens (USD).",
		24, 8, errorsQuery("format", "table", "groupBy", "model")).
		Id(1).
		NoValue(noGateway).
		OverrideByRegexp(".*", emptyCell()).
		// Worst first: the highest burn on top.
		SortBy([]cog.Builder[common.TableSortByFieldState]{common.NewTableSortByFieldStateBuilder().DisplayName("worst_burn").Desc(true)}).
		OverrideByName("worst_burn", props(thresholdsProp(upperBad(1, 10)), colorBackground())).
		OverrideByName("spend_per_request", props(prop("unit", unitMoney), prop("decimals", 6))).
		OverrideByName("spend_per_1m_tokens", props(prop("unit", unitMoney))).
		OverrideByRegexp(".* share$", props(colorText())))
	gateway.WithPanel(tbl("Providers", "The same per provider (LiteLLM api_provider, OpenTelemetry gen_ai.provider.name or the older gen_ai.system, read as one provider label): a slow or failing provider shows across all its models.",
		24, 6, errorsQuery("format", "table", "groupBy", "provider")).
		NoValue(noGateway).
		OverrideByRegexp(".*", emptyCell()).
		SortBy([]cog.Builder[common.TableSortByFieldState]{common.NewTableSortByFieldStateBuilder().DisplayName("worst_burn").Desc(true)}).
		OverrideByName("worst_burn", props(thresholdsProp(upperBad(1, 10)), colorBackground())).
		OverrideByRegexp(".* share$", props(colorText())))
	b.WithRow(gateway)
	errs := row("Errors by class (needs a gateway target)").Collapsed(true)
	for i, c := range modelsClasses {
		p := ts(c.title, c.desc, unitRatio, 8, legendH, errorsQuery("errorClasses", []string{c.class}, "groupBy", "model")).
			Min(0).Legend(legendTable()).NoValue(noGateway).
			ThresholdsStyle(common.NewGraphThresholdsStyleConfigBuilder().Mode(common.GraphThresholdsStyleModeDashed))
		errs.WithPanel(p.Id(uint32(10 + i))) // the error-surge alert rule of the class links here
	}
	b.WithRow(errs)
	// Per target and model (issue 33: one series per model pooled a healthy and a KV-starved
	// server of the same model, and its p99 was the palette's green): each target in its hue,
	// each statistic in its shade of it (setTargetColours, quantileColours).
	b.WithRow(row("Latency and traffic per target and model"))
	b.WithPanel(quantileColours(latencyTS("TTFT per target and model", "Median, 95th and 99th percentile time to first token per target and model as the gateway or engine measured it, and the highest occupied bucket (max: a spike lifts it, sustained degradation lifts p99 too), against the selected profile's TTFT threshold (the dashed red line); bucket bounds on hover (LiteLLM: streamed calls, from the start of its call to the provider; OpenTelemetry: the server's TTFT, else the client's time to first chunk). Each target has its colour, each statistic its shade of it.",
		12, legendH, query(withProfile("queryType", "latency", "stages", []string{"ttft"}, "stats", []string{"p50", "p95", "p99", "max"}, "groupBy", "target_model")...)).DisplayName(modelLatencyName)))
	b.WithPanel(quantileColours(latencyTS("Time per output token / chunk per target and model", "Median time per output token (OpenTelemetry server instruments, engines) and inter-chunk gap (OpenTelemetry client: a chunk may carry several tokens) per target and model, bucket bounds on hover, against the selected profile's TPOT threshold where it has one (the dashed red line); LiteLLM exports neither.",
		12, legendH, query(sel("queryType", "latency", "stages", []string{"tpot", "itl"}, "stats", []string{"p50"}, "groupBy", "target_model")...)).DisplayName(modelLatencyName)))
	b.WithPanel(quantileColours(latencyTS("E2E per target and model", "Median, 95th and 99th percentile and max end-to-end request latency per target and model, against the selected profile's E2E threshold (the dashed red line); bucket bounds on hover. Each target has its colour, each statistic its shade of it.",
		12, legendH, query(withProfile("queryType", "latency", "stages", []string{"e2e"}, "stats", []string{"p50", "p95", "p99", "max"}, "groupBy", "target_model")...)).DisplayName(modelLatencyName)))
	b.WithPanel(ts("Requests per target and model", "Requests/s per target and model (failures included; an engine's by finish reason: stop solid, length dotted, abort dashed, error thick), each target in its colour.",
		unitRPS, 12, legendH, query(sel("queryType", "throughput", "groupBy", "target_model")...)).
		Transformations([]dashboard.DataTransformerConfig{keepFields(`requests/s.*`)}).Legend(legendTable()).
		DisplayName(modelRequestsName).
		OverrideByRegexp(`requests/s stop.*`, finishReasonColor("stop")).
		OverrideByRegexp(`requests/s length.*`, finishReasonColor("length")).
		OverrideByRegexp(`requests/s abort.*`, finishReasonColor("abort")).
		OverrideByRegexp(`requests/s error.*`, finishReasonColor("error")).
		// Each target in its colour (setTargetColours, which wins over the reasons' colours):
		// the reasons told apart by their lines.
		OverrideByRegexp(`requests/s length.*`, props(prop("custom.lineStyle", map[string]any{"fill": "dot", "dash": []int{0, 6}}), prop("custom.lineWidth", 2))).
		OverrideByRegexp(`requests/s abort.*`, props(prop("custom.lineStyle", map[string]any{"fill": "dash", "dash": []int{10, 10}}))).
		OverrideByRegexp(`requests/s error.*`, props(prop("custom.lineWidth", 3))))
	b.WithPanel(ts("Tokens per target and model", "Prompt (solid) and generated (dashed) tokens/s per target and model, from the engines' counters or the providers' usage fields.",
		unitTokens, 12, legendH, query(sel("queryType", "throughput", "groupBy", "target_model")...)).
		Transformations([]dashboard.DataTransformerConfig{keepFields(`(prompt|generation) tokens/s.*`)}).Legend(legendTable()).
		OverrideByRegexp(`prompt tokens/s.*`, props(prop("displayName", "${__field.labels.target} prompt tokens/s · ${__field.labels.model}"))).
		OverrideByRegexp(`generation tokens/s.*`, props(prop("displayName", "${__field.labels.target} generated tokens/s · ${__field.labels.model}"),
			prop("custom.lineStyle", map[string]any{"fill": "dash", "dash": []int{10, 10}}))))
	b.WithPanel(ts("Stage breakdown with gateway and network time"+allTargets, "Mean time per stage per model; where the selection holds a gateway and the engines behind it, the row gateway and network is the gateway's mean TTFT minus the engine's for the same model (a difference of means, docs/llm-d-router.md): time in the gateway and on the network. A hosted model has no engine and no such row. Select the gateway and the engines in the target variable.",
		unitSeconds, 12, legendH, query(sel("queryType", "breakdown", "groupBy", "model")...)).Legend(legendTable()))
	return b
}
