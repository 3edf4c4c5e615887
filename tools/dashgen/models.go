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

// modelLatencyName names a per-target-and-model latency series by its target, statistic and,
// for a bucket bound, the bound ("vllm-a p99 ", a trailing space where the bound is empty):
// each panel has one stage, named in its title, and the model is left out (issue 33: the
// frames' "ttft p99 · model=…" put the model first, then "vllm-a ttft p99 ·
// meta-llama/Llama-3.1-8B-I…" was cut in every legend, though the demo serves one model; the
// models each target serves are in the table at the top, modelLegendNote).
const modelLatencyName = "${__field.labels.target} ${__field.labels.stat} ${__field.labels.bound}"

// modelRequestsName names a per-target-and-model request series target first with its finish
// reason ("vllm-a requests/s stop"; the model left out, as in modelLatencyName).
const modelRequestsName = "${__field.labels.target} requests/s ${__field.labels.reason}"

// modelLegendNote ends the description of each per-target-and-model time series: why its
// legend names no model.
const modelLegendNote = "Series are named by target: a vLLM server serves one model (LoRA adapters aside), named in the table at the top; a target serving several models draws one line of that name per model."

// modelLegendWidth is the right legend's width (px) of the models dashboard's latency panels:
// a target, a statistic and two numbers (legendRight: max and last). 520 px, as the latency
// page's, on full-width panels (issue 33, review 9: 300 px on half-width panels cut the names
// to "vll…" and the values to "1.33 m", "80", "1 r").
const modelLegendWidth = 520

// sloLineTitle ends the title of a latency panel that draws the selected profile's threshold,
// so that the dashed red line is named on the panel itself, not only in its description
// (issue 33: "an unlabelled red line").
const sloLineTitle = " (red dashes: SLO threshold)"

// sloLineIfTitle is sloLineTitle for a stage not every profile has an objective on (the
// shipped interactive-chat profile has none on E2E or ITL, service none on TPOT): no line is
// promised that the selected profile does not draw.
const sloLineIfTitle = " (red dashes: SLO, if the profile has one)"

// stageBreakdownTitle is the models dashboard's stage breakdown, per target, saying what its
// gateway row needs (issue 33: "Stage breakdown with gateway and network time" promised a
// series the demo has none of, and "(all targets)" pooled a 4 ms and a 19 s mean queue).
const stageBreakdownTitle = "Mean time per stage per target and model (gateway and network time needs an llm-d router target)"

// stageBreakdownName names a stage breakdown series target first ("vllm-a queue"); the
// gateway row has no target and gets its own name by an override.
const stageBreakdownName = "${__field.labels.target} ${__field.labels.stage}"

// modelsStatusTitle is the models dashboard's first row: the five-second answer (is the SLO
// met, which endpoint, why) before the per-target detail.
const modelsStatusTitle = "Is the SLO met, which endpoint is bad, why"

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
	errs := row("Errors by class (needs a gateway target)").Collapsed(true)
	for i, c := range modelsClasses {
		p := ts(c.title, c.desc, unitRatio, 8, legendH, errorsQuery("errorClasses", []string{c.class}, "groupBy", "model")).
			Min(0).Legend(legendTable()).NoValue(noGateway).
			ThresholdsStyle(common.NewGraphThresholdsStyleConfigBuilder().Mode(common.GraphThresholdsStyleModeDashed))
		errs.WithPanel(p.Id(uint32(10 + i))) // the error-surge alert rule of the class links here
	}
	// Per target and model (issue 33: one series per model pooled a healthy and a KV-starved
	// server of the same model, and its p99 was the palette's green): each target in its hue,
	// each statistic in its shade of it (setTargetColours, quantileColours).
	// The five-second answer first (issue 33: the page said neither whether the SLO is met
	// nor why): the overview's endpoint table, one row per objective × target × model with
	// its status, observed quantile, budget and the diagnosis that holds now.
	b.WithRow(row(modelsStatusTitle))
	b.WithPanel(endpointTable())
	b.WithRow(row("Latency and traffic per target and model"))
	// modelLatency is a stage's p50, p95, p99 and max per target and model.
	modelLatency := func(stage, title, desc string) {
		b.WithPanel(quantileColours(latencyTS(title, desc,
			24, legendH, query(withProfile("queryType", "latency", "stages", []string{stage}, "stats", []string{"p50", "p95", "p99", "max"}, "groupBy", "target_model")...)).
			DisplayName(modelLatencyName).Legend(legendRight(modelLegendWidth))))
	}
	// Four statistics × the targets on each latency panel, the legend on the right (issue 33:
	// an 8-series bottom legend was cut after the first target's four rows), full width so the
	// legend has room for "vllm-kv-pressure p99" and "1.33 mins" (review 9).
	modelLatency("ttft", "TTFT per target and model"+sloLineTitle, "Median, 95th and 99th percentile time to first token per target and model as the gateway or engine measured it, and the highest occupied bucket (max: a spike lifts it, sustained degradation lifts p99 too), against the selected profile's TTFT threshold (the dashed red line); bucket bounds on hover (LiteLLM: streamed calls, from the start of its call to the provider; OpenTelemetry: the server's TTFT, else the client's time to first chunk). Each target has its colour, each statistic its shade of it. "+modelLegendNote)
	modelLatency("e2e", "E2E per target and model"+sloLineIfTitle, "Median, 95th and 99th percentile and max end-to-end request latency per target and model, against the selected profile's E2E threshold where it has one (the dashed red line); bucket bounds on hover. Each target has its colour, each statistic its shade of it. "+modelLegendNote)
	// Time per output token and the inter-chunk gap in panels of their own, p50 and p99
	// (issue 33: one panel of four p50 series, TPOT and ITL alike, in near-white dotted
	// swatches, no p99 and no SLO line, was unreadable).
	modelLatency("tpot", "TPOT per target and model"+sloLineIfTitle, "Median (dotted), 95th (dashed) and 99th percentile (solid) and the highest occupied bucket (max, short dashes) of the time per output token per target and model (OpenTelemetry server instruments, engines), bucket bounds on hover, against the selected profile's TPOT threshold where it has one (the dashed red line; 50 ms in interactive-chat, none in service). LiteLLM exports none. "+modelLegendNote)
	modelLatency("itl", "ITL / chunk gap per target and model"+sloLineIfTitle, "Median (dotted), 95th (dashed) and 99th percentile (solid) and the highest occupied bucket (max, short dashes) of the inter-token latency per target and model: the engine's gap between two tokens of a stream, or an OpenTelemetry client's gap between two chunks (a chunk may carry several tokens), bucket bounds on hover, against the selected profile's ITL threshold where it has one (the dashed red line; the service profile's itl-p95 at 100 ms, none in interactive-chat). LiteLLM exports none. "+modelLegendNote)
	b.WithPanel(finishReasonColours(ts("Requests per target and model", "Requests/s per target and model (failures included; an engine's by finish reason: stop solid, length dotted, abort dashed, error thick), each target in its colour. "+modelLegendNote,
		unitRPS, 12, legendH, query(sel("queryType", "throughput", "groupBy", "target_model")...)).
		Transformations([]dashboard.DataTransformerConfig{keepFields(`requests/s.*`)}).Legend(legendTable()).
		DisplayName(modelRequestsName)).
		// Each target in its colour (setTargetColours, which wins over the reasons' colours):
		// the reasons told apart by their lines.
		OverrideByRegexp(`requests/s length.*`, props(prop("custom.lineStyle", map[string]any{"fill": "dot", "dash": []int{0, 6}}), prop("custom.lineWidth", 2))).
		OverrideByRegexp(`requests/s abort.*`, props(prop("custom.lineStyle", map[string]any{"fill": "dash", "dash": []int{10, 10}}))).
		OverrideByRegexp(`requests/s error.*`, props(prop("custom.lineWidth", 3))))
	b.WithPanel(ts("Tokens per target and model", "Prompt (solid) and generated (dashed) tokens/s per target and model, from the engines' counters or the providers' usage fields. "+modelLegendNote,
		unitTokens, 12, legendH, query(sel("queryType", "throughput", "groupBy", "target_model")...)).
		Transformations([]dashboard.DataTransformerConfig{keepFields(`(prompt|generation) tokens/s.*`)}).Legend(legendTable()).
		OverrideByRegexp(`prompt tokens/s.*`, props(prop("displayName", "${__field.labels.target} prompt tokens/s"))).
		OverrideByRegexp(`generation tokens/s.*`, props(prop("displayName", "${__field.labels.target} generated tokens/s"),
			prop("custom.lineStyle", map[string]any{"fill": "dash", "dash": []int{10, 10}}))))
	// Per target, not pooled (issue 33: "(all targets)" blended a 4 ms and a 19 s mean
	// queue), and the title says what the gateway row needs (the demo has no such target).
	b.WithPanel(ts(stageBreakdownTitle, "Mean time per stage (queue, prefill, decode, overhead) per target and model, each target in its colour, the stages its shades; where the selection holds an llm-d router (its endpoint picker) and the engines behind it, one more series per model, gateway and network: the router's mean TTFT minus the engines' for the same model (a difference of means, docs/llm-d-router.md), time in the gateway and on the network. Without such a target (as in the demo) that series is absent: add the router as a target and select it with the engines in the target variable. A hosted model has no engine and no such series.",
		unitSeconds, 24, legendH, query(sel("queryType", "breakdown", "groupBy", "target_model")...)).
		DisplayName(stageBreakdownName).Legend(legendRight(480)).
		OverrideByRegexp(`(.* )?gateway(_| and )network.*`, props(prop("displayName", "gateway and network · ${__field.labels.model}"))))
	// The gateway's rows last, collapsed: empty without a gateway target.
	b.WithRow(gateway)
	b.WithRow(errs)
	return b
}
