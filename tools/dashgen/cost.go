package main

import (
	"maps"
	"math"
	"regexp"
	"slices"

	"github.com/grafana/grafana-foundation-sdk/go/cog"
	"github.com/grafana/grafana-foundation-sdk/go/common"
	"github.com/grafana/grafana-foundation-sdk/go/dashboard"
	"github.com/grafana/grafana-foundation-sdk/go/gauge"
	"github.com/grafana/grafana-foundation-sdk/go/stat"
	"github.com/grafana/grafana-foundation-sdk/go/table"
	"github.com/grafana/grafana-foundation-sdk/go/timeseries"
)

// UIDCost is the uid of the "Cost & capacity" dashboard (the cost-spike alert rule links to
// its first panel).
const UIDCost = "inferscope-cost"

// unitMoney is the panels' unit for money: the settings' default currency (USD). The data
// source sets each cost field's unit from the settings' currency (currencyUSD, currencyEUR, …
// or "suffix: CAD"), and a field's own unit wins over the panel default, so another currency
// shows as itself.
const unitMoney = "currencyUSD"

// costQuery is a cost query of the selected targets keeping the series of the given stats (prices are per
// target: the cost query takes no models filter).
func costQuery(stats ...string) queryBuilder {
	return query("queryType", "cost", "targets", []string{"$target"}, "series", stats)
}

// costTS is a cost time series: one series per target and stat, a table legend with mean,
// max and last (the numbers are the point of the panel).
func costTS(title, desc, unit string, w, h uint32, q queryBuilder) *timeseries.PanelBuilder {
	p := ts(title, desc, unit, w, h, q).Legend(legendTable()).Min(0).NoValue(noPrices).DisplayName(costName)
	// Each statistic by its readable name (issue 33: legends read "cost_per_1m_output_tokens",
	// "idle_share", "decode_cost_per_hour"): an override per statistic that matches its series
	// by the frame's name ("cost per hour · target=…") or by costName ("vllm-a cost_per_hour "),
	// most specific last.
	for _, st := range slices.Sorted(maps.Keys(costStatNames)) {
		p = p.OverrideByRegexp(`(?:.* `+st+`( .*)?|`+regexp.QuoteMeta(costStatNames[st])+` · .*)`,
			props(prop("displayName", "${__field.labels.target} "+costStatNames[st]+" ${__field.labels.bound}")))
	}
	return p
}

// costStatNames are the cost query's statistics by their readable names, as the data source
// names its frames (docs/cost.md).
var costStatNames = map[string]string{ // #nosec G101 -- display names of cost statistics ("…tokens"), not credentials
	"cost_per_1m_output_tokens": "cost per 1M output tokens", "cost_per_1m_tokens": "cost per 1M tokens",
	"cost_per_hour": "cost per hour", "cost_per_request": "cost per request",
	"decode_cost_per_hour": "decode cost per hour (approximate)", "energy_cost_per_hour": "energy cost per hour",
	"energy_per_output_token": "energy per output token", "idle_cost_per_hour": "idle cost per hour",
	"idle_share": "idle share", "prefill_cost_per_hour": "prefill cost per hour (approximate)",
	"prefix_cache_savings_per_hour": "prefix-cache savings per hour",
}

// costName names a cost series target first ("vllm-a cost_per_1m_tokens"):
// the frames' "cost per 1M tokens · target=vllm-a" was cut before the
// target in a 12-wide legend (issue 33).
const costName = "${__field.labels.target} ${__field.labels.stat} ${__field.labels.bound}"

// capacityColumns and whatIfColumns are the column headers of the capacity tables by frame
// field (issue 33: "knee_error", "days_to_knee", "ttft_p99_error" as headers); the frames'
// field names stay as they are (the capacity query's contract).
var (
	capacityColumns = map[string]string{"knee_error": "knee error", "days_to_knee": "days to knee",
		"utilisation": "replica load target (of knee)", "replicas": replicasColumn, "days_to_knee_note": "knee trend", "knee_note": "knee check"}
	whatIfColumns = map[string]string{"ttft_p50": "TTFT p50", "ttft_p99": "TTFT p99", "ttft_p99_error": "TTFT p99 error",
		"tpot_p50": "TPOT p50", "tpot_p99": "TPOT p99", "tpot_p99_error": "TPOT p99 error",
		"e2e_p50": "E2E p50", "e2e_p99": "E2E p99", "e2e_p99_error": "E2E p99 error", "worst_objective": "worst objective",
		"ttft_p99_observed": "TTFT p99 observed", "e2e_p99_observed": "E2E p99 observed", "note": "twin check"}
)

// replicasColumn heads the capacity table's replicas: they are sized for the load averaged
// over the whole range, the chart's for the load over replicasWindow at each step (issue 33:
// the table's 3 beside the chart's last 2, mean 3, max 5 read as a contradiction).
const replicasColumn = "replicas (range's mean load)"

// replicasWindow is the rate window of the recommended-replicas chart: a quarter of an hour,
// the stabilisation an HPA or KEDA scaler would apply, so the count does not jump with each
// minute's noise (issue 33: it went 2, 5, 2 from one minute to the next).
const replicasWindow = "15m"

// whatIfOrder is the what-if table's column order: the change and the twin's check first,
// then each p99 beside its observed value and band (the p50s are left out: the objectives
// are on the p99; they stay in the panel's data).
var whatIfOrder = map[string]any{"target": 0, "profile": 1, "change": 2, "note": 3, "load": 4,
	"ttft_p99": 5, "ttft_p99_observed": 6, "ttft_p99_error": 7, "tpot_p99": 8, "tpot_p99_error": 9,
	"e2e_p99": 10, "e2e_p99_observed": 11, "e2e_p99_error": 12, "attainment": 13, "worst_objective": 14, "holds": 15, "advice": 16}

// readableColumns is a table's displayName override per frame field, in the fields' order
// (sorted, so the generated JSON is stable).
func readableColumns(p *table.PanelBuilder, names map[string]string) *table.PanelBuilder {
	for _, f := range slices.Sorted(maps.Keys(names)) {
		p = p.OverrideByName(f, props(prop("displayName", names[f])))
	}
	return p
}

// noPrices is the hint of a cost panel without data.
const noPrices = "No price for the selected targets: set targets[].costPerHour or gpuAgents[].costPerGPUHour (and energyPricePerKWh) in the data source's settings"

// noHistory is the hint of a capacity panel without data.
const noHistory = "The twin needs at least 30 minutes and 100 finished requests of history in the dashboard's range: widen the range"

// capacityQuery is a capacity query of the selected targets in a format, under the selected
// SLO profile (docs/capacity.md): every profile of the settings made 8 tiles of 2 targets ×
// 4 profiles, their names cut (issue 33).
func capacityQuery(kv ...any) queryBuilder {
	return query(append([]any{"queryType", "capacity", "targets", []string{"$target"}, "profiles", []string{"$profile"}}, kv...)...)
}

// capacityName names a capacity row's value "target · profile".
const capacityName = "${__data.fields.target} · ${__data.fields.profile}"

// tableRowsHeight is the height in grid rows of a table that shows rows rows of small cells
// (36 px) and its header without scrolling: h × 30 px plus 8 px per gap, less the 40 px title.
func tableRowsHeight(rows int) uint32 {
	need := float64(rows+1)*36 + 40
	return uint32(math.Ceil((need + 8) / 38))
}

// whatIfHeight shows the what-if rows of two targets (the current configuration and five
// changes each) under one profile; paramsHeight two targets' calibrated parameters (15 each
// in the golden history) (issue 33: both tables were cut after the first target's rows).
var (
	whatIfHeight = tableRowsHeight(2 * 6)
	paramsHeight = tableRowsHeight(2 * 15)
)

// daysToKneeMappings colour the days to the knee in words (the capacity table's
// days_to_knee_note) as lowerBad(7, 30) colours the number: red under 7 days, amber under 30,
// green from 30; no rising trend green, no trend read grey, past the knee red.
func daysToKneeMappings() []dashboard.ValueMapping {
	return []dashboard.ValueMapping{
		regexMap(`^past the knee now$`, "past the knee now", red),
		regexMap(`^no rising trend$`, "no rising trend", green),
		regexMap(`^no trend read.*`, "", grey),
		regexMap(`^in [0-6]\.\d days$`, "", red),
		regexMap(`^in ([7-9]|[12]\d)\.\d days$`, "", amber),
		regexMap(`^in \d+\.\d days$`, "", green),
	}
}

// capacityPanels are the capacity row of the cost dashboard: headroom gauges, days until the
// load trend reaches the knee, the replica recommendation, the capacity table, the what-if
// table and the calibrated parameters, all from the calibrated twin (cached per target and
// range for 5 minutes, so the panels share one calibration).
func capacityPanels(b *dashboard.DashboardBuilder) {
	b.WithRow(row("Capacity (calibrated twin)"))
	b.WithPanel(gauge.NewPanelBuilder().
		Title("Headroom").
		Description("Knee over current load, per target under the selected SLO profile: the twin calibrated on the dashboard's range finds the highest load (req/s) at which every latency objective of the profile still holds; 1 is at the knee, below 1 past it. Amber under 1.25 (above 80 % of the knee), red under 1. Needs at least 30 minutes and 100 finished requests of history.").
		Datasource(dsRef).Span(8).Height(legendH).
		Unit("x").Min(0).Max(5).Decimals(2).
		Thresholds(lowerBad(1, 1.25)).
		ShowThresholdMarkers(true).
		ReduceOptions(common.NewReduceDataOptionsBuilder().Values(true).Calcs([]string{"lastNotNull"})).
		Transformations([]dashboard.DataTransformerConfig{keepFields(`target|profile|headroom`)}).
		DisplayName(capacityName).
		NoValue(noHistory).
		WithTarget(capacityQuery()))
	b.WithPanel(stat.NewPanelBuilder().
		Title("Days to the knee").
		Description("Days until the request-rate trend over the dashboard's range (a least-squares line, through each day's peak with two days or more) reaches the selected profile's knee, per target: red under 7 days, amber under 30, green from 30; \"no rising trend\" (green) when the trend is flat, falling or within its noise (a slope under twice its standard error); \"no trend read: the range is under a day\" (grey) when the range is too short to tell (an hour's line is warm-up and noise, not growth: widen the range to a day or more); \"past the knee now\" (red) when the load already is.").
		Datasource(dsRef).Span(8).Height(legendH).
		Unit("d").Decimals(1).
		Thresholds(lowerBad(7, 30)).
		ColorMode(common.BigValueColorModeValue).
		TextMode(common.BigValueTextModeValueAndName).
		// Fixed sizes (issue 33: auto-sized, the target's name read about 6 px high).
		Text(common.NewVizTextDisplayOptionsBuilder().TitleSize(14).ValueSize(22)).
		GraphMode(common.BigValueGraphModeNone).
		Transformations([]dashboard.DataTransformerConfig{keepFields(`target|profile|days_to_knee_note`)}).
		// The days in words (the frame's days_to_knee_note), coloured as the thresholds would
		// the number: 0 is a load already past the knee (issue 33: "0.0 day" read as a fault),
		// and a null no longer merges a flat trend with a range too short to read one ("no
		// rising trend (or under a day)" read as "safe or imminent").
		// The tile's field is picked by its display name (Grafana matches reduceOptions.fields
		// against display names): the panel's "target · profile" name on every field left
		// /^days_to_knee_note$/ matching none, so the tile showed its no-history text beside a
		// capacity table with the days (issue 33, review 9). Only the note is named
		// "target · profile" now, and / · / picks it (the raw template and its text alike).
		ReduceOptions(common.NewReduceDataOptionsBuilder().Values(true).Calcs([]string{"lastNotNull"}).Fields("/ · /")).
		Mappings(daysToKneeMappings()).
		OverrideByName("days_to_knee_note", props(prop("displayName", capacityName))).
		NoValue(noHistory).
		WithTarget(capacityQuery()))
	b.WithPanel(ts("Recommended replicas (load over "+replicasWindow+")", "Replicas that keep each at 80 % of its knee: ceil(load / (0.8 × knee)), at least 1, with the load each target's finished requests/s over the last "+replicasWindow+" at each step (a scaler's stabilisation window, so the count does not jump with each minute's noise) and the knee of its twin over the whole range (one series per target and profile). The capacity table's replicas are sized for the load averaged over the whole range, so its count can differ from this chart's last value: the table says what the range needed on average, the chart what the last quarter hour needs. Ready as an HPA/KEDA external metric: the target value is this count.",
		unitNone, 8, legendH, capacityQuery("format", "replicas", "window", replicasWindow)).Min(0).Decimals(0).Legend(legendTable()).NoValue(noHistory).
		DisplayName("${__field.labels.target} · ${__field.labels.profile}"))
	b.WithPanel(readableColumns(tbl("Capacity per target and profile", "Per target and SLO profile: load served over the range (req/s), the twin's knee with its error band (the 90th percentile of the knee errors in the validation, docs/capacity.md), headroom, days to the knee (and the knee trend in words), recommended replicas at 80 % of the knee for the load averaged over the range (the chart beside has them for the last "+replicasWindow+"'s load), the objectives the twin scored (latency objectives only) and the knee check: \"in doubt\" (amber) when the twin's current configuration misses the target's observed p99 (the what-if table's twin check is off), so the knee may be off by more than its error band.",
		24, 6, capacityQuery()).
		NoValue(noHistory).
		// Worst first: the least headroom on top.
		SortBy([]cog.Builder[common.TableSortByFieldState]{common.NewTableSortByFieldStateBuilder().DisplayName("headroom")}).
		OverrideByRegexp(".*", emptyCell()).
		OverrideByName("headroom", props(thresholdsProp(lowerBad(1, 1.25)), colorBackground(), prop("unit", "x"), prop("decimals", 2))).
		OverrideByName("objectives", props(prop("custom.wrapText", true), prop("custom.minWidth", 300))).
		// The knee is in doubt when the twin's current configuration misses the observed p99
		// (issue 33, review 9: "knee error 13%" beside a twin check marked off), amber.
		OverrideByName("knee_note", props(colorText(), prop("custom.wrapText", true), prop("custom.minWidth", 300),
			prop("mappings", []dashboard.ValueMapping{regexMap(`^in doubt.*`, "", amber)}))), capacityColumns))
	b.WithPanel(readableColumns(tbl("What if", "The twin's prediction at the current load for the current configuration and for max_num_seqs halved and doubled, one more replica, prompts twice as long and prefix caching at 50 %: TTFT, TPOT and E2E p99 (with the p99's error band from the validation; none for the current configuration; the p50s are in the panel's data), the lowest attainment over the profile's objectives and whether the profile holds, the lowest attainment first. The current row has the observed TTFT and E2E p99 over the twin's history beside its predictions, and the twin check says \"off\" (red) when the prediction's band (the narrowest change band: 14 % TTFT, 11 % E2E) does not reach the observed p99's bucket: then read the other rows as changes against the current one, not as absolute numbers. A change predicting the same as the current configuration says why: the limit it moves does not bind at this load. Hover a cell to read it whole.",
		24, whatIfHeight, capacityQuery("format", "whatif")).
		NoValue(noHistory).
		Transformations([]dashboard.DataTransformerConfig{transformation("organize", map[string]any{
			"excludeByName": map[string]any{"ttft_p50": true, "tpot_p50": true, "e2e_p50": true},
			"indexByName":   whatIfOrder,
		})}).
		// Worst first: the lowest attainment on top (issue 33: the KV-starved target's rows
		// were cut below the healthy one's).
		SortBy([]cog.Builder[common.TableSortByFieldState]{common.NewTableSortByFieldStateBuilder().DisplayName("attainment")}).
		OverrideByRegexp(".*", emptyCell()).
		OverrideByName("note", props(prop("mappings", []dashboard.ValueMapping{
			regexMap(`^off.*`, "", red), regexMap(`^matches.*`, "", green), regexMap(`^same as current.*`, "", blue)}),
			colorText(), prop("custom.inspect", true), prop("custom.width", 300))).
		OverrideByName("advice", props(prop("custom.inspect", true))).
		OverrideByName("holds", props(prop("mappings", []dashboard.ValueMapping{valueMap(map[string]dashboard.ValueMappingResult{
			"true": textResult("holds", green), "false": textResult("breaks", red)})}), colorText())), whatIfColumns))
	b.WithPanel(readableColumns(tbl("Calibrated parameters", "Each parameter of each target's twin with where it came from: data (read from the history), fit (fitted by simulating the twin until its mean ITL and prefill time match the history's) or default (vLLM does not export it: max_num_seqs and the token budget, unless set in the query). Sized for two targets' rows (about 15 each) without scrolling.",
		24, paramsHeight, capacityQuery("format", "parameters")).NoValue(noHistory).
		OverrideByRegexp(".*", emptyCell()), map[string]string{"fit_error": "fit error"}))
}

// Cost is the cost dashboard: what serving costs per target, per token and per request, how
// much of it is idle, the energy per token and what the prefix cache saves; and the capacity
// row: headroom, days to the knee, replicas, the what-if table. Prices come from the data
// source settings (docs/cost.md); capacity from the calibrated twin (docs/capacity.md).
func Cost() *dashboard.DashboardBuilder {
	b := shell(UIDCost, "Inferscope — cost & capacity",
		"What a token and a request cost per target, how much is spent idle, the energy per output token and what the prefix cache saves, from the prices in the data source settings (targets[].costPerHour, gpuAgents[].costPerGPUHour, currency, energyPricePerKWh); how much load each target can take before it breaks its SLO profiles, when its traffic gets there, the replicas it needs and what a change would do, from a twin calibrated on its history.",
		targetVar(), profileVar()).
		Annotation(eventsAnnotation())
	b.WithPanel(costTS("Cost per 1M tokens", "Price per hour / 3600 / (prompt + generated tokens per second) × 1e6, and per 1M output tokens, per target over the rate window, in the settings' currency; energy included when energyPricePerKWh is set. The cost-spike alert fires when the first stays above twice its 7-day mean for 30 minutes.",
		unitMoney, 12, legendH, costQuery("cost_per_1m_tokens", "cost_per_1m_output_tokens")).
		OverrideByRegexp(`.*cost_per_1m_output_tokens.*`, props(prop("custom.lineStyle", map[string]any{"fill": "dash", "dash": []int{10, 10}}), prop("custom.fillOpacity", 0))).
		Id(1)) // the cost-spike alert rule links here
	b.WithPanel(costTS("Cost per request", "Price per second / finished requests per second, per target, in the settings' currency.",
		unitMoney, 12, legendH, costQuery("cost_per_request")))
	b.WithPanel(costTS("Energy per output token", "Joules per generated token: the rate of the GPUs' energy counters (NVML total energy, DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION) over the generated tokens per second; mean power × time where no counter is stored (a notice says so).",
		"joule", 12, legendH, costQuery("energy_per_output_token")))
	b.WithPanel(costTS("Idle share", "Share of each window with no request running (running-requests gauge at 0, each scrape counted once): hardware paid for and not serving.",
		unitRatio, 12, legendH, costQuery("idle_share")).Max(1))
	b.WithPanel(costTS("Cost per hour: idle, prefill, decode", "Cost per hour, the part spent idle, and the approximate prefill/decode split by token counts (computed prompt tokens vs output tokens; a decode token really costs more GPU time than a prefill token), in the settings' currency.",
		unitMoney, 24, legendH, costQuery("cost_per_hour", "idle_cost_per_hour", "prefill_cost_per_hour", "decode_cost_per_hour")).
		// Four series per target: the legend on the right (issue 33), the
		// panel full width so the legend takes a quarter of it, not half.
		Legend(legendRight(560)))
	b.WithPanel(costTS("Prefix-cache savings per hour", "Prompt tokens served from the prefix cache per second × the cost of a computed token, per hour, in the settings' currency.",
		unitMoney, 24, legendH, costQuery("prefix_cache_savings_per_hour")))
	b.WithPanel(statPanel("Cost per 1M tokens over the range", "Mean over the dashboard's range of the cost per 1M tokens per target (windows without tokens left out), in the settings' currency.",
		unitMoney, 24, 5, neutral(), costQuery("cost_per_1m_tokens")).
		ReduceOptions(common.NewReduceDataOptionsBuilder().Values(false).Calcs([]string{"mean"})).
		// Named by target (issue 33: two unnamed numbers).
		TextMode(common.BigValueTextModeValueAndName).DisplayName("${__field.labels.target}").
		Mappings(nil).NoValue(noPrices))
	capacityPanels(b)
	return b
}
