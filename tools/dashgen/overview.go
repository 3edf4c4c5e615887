package main

import (
	"fmt"

	"github.com/grafana/grafana-foundation-sdk/go/cog"
	"github.com/grafana/grafana-foundation-sdk/go/common"
	"github.com/grafana/grafana-foundation-sdk/go/dashboard"
	"github.com/grafana/grafana-foundation-sdk/go/stat"
	"github.com/grafana/grafana-foundation-sdk/go/table"
	"github.com/grafana/grafana-foundation-sdk/go/timeseries"
)

// The error-rate levels of the overview's real-time error panels (issue 21):
// a ratio of engine error finishes, client aborts excluded. The SLO tiles
// and the endpoint table take their levels from the selected profile.
var errorRatioWarn, errorRatioCrit = 0.008, 0.020

// requestsTotal sums the per-finish-reason request rates of a throughput
// query into one field per row, named alias.
func requestsTotal(alias string) []dashboard.DataTransformerConfig {
	return []dashboard.DataTransformerConfig{
		keepFields(`requests/s.*`),
		rowReduce("sum", alias, true),
	}
}

// errorRatio turns a throughput query (groupBy none) into the share of
// finished requests that ended with finish reason error, per step. Client
// aborts (finish reason abort) are the client's choice, not a server error:
// they count in the denominator only.
func errorRatio() []dashboard.DataTransformerConfig {
	return []dashboard.DataTransformerConfig{
		keepFields(`requests/s.*`),
		rowReduce("sum", "all", false),
		transformation("calculateField", map[string]any{
			"mode":   "reduceRow",
			"reduce": map[string]any{"reducer": "sum", "include": []string{"requests/s error"}},
			"alias":  "failed",
		}),
		transformation("calculateField", map[string]any{
			"mode":          "binary",
			"binary":        map[string]any{"left": "failed", "operator": "/", "right": "all"},
			"alias":         "error ratio",
			"replaceFields": true,
		}),
	}
}

// sloNow is the slo query of the selected profile over the dashboard's
// range, grouped by groupBy.
func sloNow(groupBy string) queryBuilder {
	return query(withProfile("queryType", "slo", "groupBy", groupBy)...)
}

// sloWorstTiles is one stat tile per objective of the selected profile
// showing field re of its worst target (issue 33: a pooled number hid the
// endpoint that overspent its budget): the slo query grouped by target,
// sorted on re (ascending: the lowest first), then grouped by objective
// keeping the first (worst) row's target and value, so the tile reads
// "objective · worst: target" with that target's own number.
func sloWorstTiles(title, desc, re, unit string, w uint32, t *dashboard.ThresholdsConfigBuilder) *stat.PanelBuilder {
	return sloStat(title, desc, unit, w, t).
		Transformations(worstPerObjective(re, "first", false)).
		OverrideByName(re, props(prop("displayName", sloWorstName)))
}

// budgetSpentField is the overview budget tile's calculated field: the
// share of the allowed bad requests spent, 1 − budget_remaining (bad /
// allowed over the period), named in the tile so an exhausted budget says
// by how much (issue 33: −8161 % read as a rendering fault).
const budgetSpentField = "budget_spent"

// budgetTileName is the budget tile's name: the objective, the worst target and the share
// of the budget spent over the objective's period ("6% of 30d budget spent", "8262% of 30d
// budget spent" once overspent).
const budgetTileName = sloWorstName + " · ${__data.fields." + budgetSpentField + "} of " + periodBudget + " spent"

// periodBudget names an error budget by what it is computed over: the slo frame's budget_of
// field, the objective's period ("30d budget", "month budget") once the stored history covers
// it, else the span stored ("budget of the 1h stored (30d not yet covered)"; issue 33, review
// 33-8: one stored hour read "8275% of 30d budget spent").
const periodBudget = "${__data.fields.budget_of}"

// budgetTileFields selects the budget tile's one drawn field by its display
// name (Grafana's byRegexp matcher reads the display name, not the field's
// name: "/^budget_remaining$/" matched nothing and the tile read "no
// requests").
const budgetTileFields = ".* spent$"

// budgetWorstTiles turns a worst-target tile of budget_remaining into the
// overview's budget tile: the spent factor computed per objective after the
// worst row is kept, shown in the tile's name ("ttft-p99 · worst:
// vllm-kv-pressure · 82.6× spent"), the value alone drawn (budget_spent
// would be a tile of its own).
func budgetWorstTiles(p *stat.PanelBuilder) *stat.PanelBuilder {
	built, _ := p.Build()
	tr := append(built.Transformations, transformation("calculateField", map[string]any{
		"mode":   "binary",
		"binary": map[string]any{"left": "1", "operator": "-", "right": "budget_remaining"},
		"alias":  budgetSpentField,
	}))
	return p.Transformations(tr).
		// Grafana matches reduceOptions.fields on the display name, which the
		// override below sets (ending " spent"); budget_spent keeps its own.
		ReduceOptions(common.NewReduceDataOptionsBuilder().Values(true).Calcs([]string{"lastNotNull"}).Fields(budgetTileFields)).
		OverrideByName("budget_remaining", props(prop("displayName", budgetTileName))).
		// A share of the budget (issue 33: "0.1 x spent" read as the 1 h burn rate).
		OverrideByName(budgetSpentField, props(prop("unit", unitRatio), prop("decimals", 0)))
}

// probeRowTitle is the overview's collapsed probe row.
const probeRowTitle = "Client-side probe: TTFT, errors and token jitter as users see them (filled per target with a probe in the settings, probes[])"

// statNameSize is the font size in px of the names under a big stat value that carry the
// answer (the objective and worst target of an SLO tile, the target and agent of a GPU tile):
// Grafana sizes them to the tile otherwise, and the screenshots read about 6 px there (issue
// 33, review 7).
const statNameSize = 13

// readableNames fixes a stat tile's name size at statNameSize (the value keeps its auto size).
func readableNames() *common.VizTextDisplayOptionsBuilder {
	return common.NewVizTextDisplayOptionsBuilder().TitleSize(statNameSize)
}

// sloStat is the overview's SLO stat tile: background colour, value and
// name, one value per row of the slo query grouped by target.
func sloStat(title, desc, unit string, w uint32, t *dashboard.ThresholdsConfigBuilder) *stat.PanelBuilder {
	return stat.NewPanelBuilder().
		Title(title).Description(desc).
		Datasource(dsRef).Span(w).Height(5).Unit(unit).
		Thresholds(t).
		ColorMode(common.BigValueColorModeBackground).
		GraphMode(common.BigValueGraphModeNone).
		TextMode(common.BigValueTextModeValueAndName).
		Text(readableNames()).
		JustifyMode(common.BigValueJustifyModeCenter).
		Orientation(common.VizOrientationAuto).
		ReduceOptions(common.NewReduceDataOptionsBuilder().Values(true).Calcs([]string{"lastNotNull"})).
		WithTarget(sloNow("target"))
}

// worstPerObjective reduces the slo frame grouped by target to one row per
// objective: sorted on field (descending when desc), then grouped by
// objective with reducer over field; with reducer "first" the target and period of
// that row are kept too (named target and period), so the row is the worst target's.
// The groupBy transformation names its outputs "field (reducer)": they are
// renamed back, so display names can use ${__data.fields.target}. The
// rename sets the fields' displayName, which a panel default does not
// replace: callers name the tiles with an override on field.
func worstPerObjective(field, reducer string, desc bool) []dashboard.DataTransformerConfig {
	fields := map[string]any{
		"objective": map[string]any{"operation": "groupby", "aggregations": []string{}},
		field:       map[string]any{"operation": "aggregate", "aggregations": []string{reducer}},
	}
	rename := map[string]any{field + " (" + reducer + ")": field}
	if reducer == "first" {
		fields["target"] = map[string]any{"operation": "aggregate", "aggregations": []string{"first"}}
		rename["target (first)"] = "target"
		// The objective's period ("30d"), for the budget tile's name (issue 33: the tiles did
		// not say over how long the budget counts).
		fields["period"] = map[string]any{"operation": "aggregate", "aggregations": []string{"first"}}
		rename["period (first)"] = "period"
		fields["budget_of"] = map[string]any{"operation": "aggregate", "aggregations": []string{"first"}}
		rename["budget_of (first)"] = "budget_of"
	}
	return []dashboard.DataTransformerConfig{
		transformation("sortBy", map[string]any{"fields": map[string]any{}, "sort": []map[string]any{{"field": field, "desc": desc}}}),
		transformation("groupBy", map[string]any{"fields": fields}),
		transformation("organize", map[string]any{"renameByName": rename}),
	}
}

// sloWorstName names a worst-target tile by its objective and the target
// whose number it shows.
const sloWorstName = "${__data.fields.objective} · worst: ${__data.fields.target}"

// sloObjectiveName names a tile by its objective (the slo frame's objective
// column).
const sloObjectiveName = "${__data.fields.objective}"

// sloStatusMappings colours the slo frame's status_value: 0 ok, 0.5
// possible (only the unfavourable bound of the bracket fires), 1 ticket, 2
// page, null unknown (the range's telemetry cannot be judged).
func sloStatusMappings() []dashboard.ValueMapping {
	return []dashboard.ValueMapping{
		valueMap(map[string]dashboard.ValueMappingResult{
			"0":   textResult("OK", green),
			"0.5": textResult("Possible", amber),
			"1":   textResult("Ticket", orange),
			"2":   textResult("Page", red),
			"ok":  textResult("OK", green), "possible": textResult("Possible", amber),
			"ticket": textResult("Ticket", orange), "page": textResult("Page", red), "unknown": textResult("unknown", grey),
		}),
		nullMap("unknown"),
	}
}

// kvPeakTitle names the overview's KV-cache tile: the range's maximum
// (issue 33), so it cannot read lower than the diagnosis's window max.
const kvPeakTitle = "KV peak (range max)"

// meanTTFTTitle names the overview's mean TTFT tile.
const meanTTFTTitle = "Mean TTFT (range)"

// meanTileWindow is the rate window of the overview's mean latency tiles: the dashboard's
// range, the window of the per-target-and-model table's means.
const meanTileWindow = "$__range"

// allTargets ends the title of a panel that pools the selected targets into one value or
// series (issue 33: the overview's "Now" tiles, traffic panels and heatmaps, and the models
// dashboard, mixed a healthy target with a bad one and did not say so).
const allTargets = " (all targets)"

// burnAlertTileTitle names the overview tile that shows the burn-rate
// alert status: what the alert windows (5m to 3d) say now, not the budget spent.
const burnAlertTileTitle = "Burn alert firing now (5m–3d)"

// budgetTileTitle names the overview's budget tile; its value names the period.
const budgetTileTitle = "Error budget left over the SLO period, worst target"

// burnAlertNone is the burn-rate tile's text when no alert fires: short, on
// a blue background (issue 33: "none now (budget: see left)" on grey could
// not be read), never a green "OK" (the budget may still be overspent).
const burnAlertNone = "none (see budget)"

// burnAlertTileMappings are sloStatusMappings for the overview's status
// tile, where the tile sits beside the error budget: status 0 reads "No
// alert firing" in the neutral text colour, never a green "OK", since an
// overspent budget (Error budget left below 0) can coexist with no alert
// firing (the burn in the 5m … 3d windows is below every level).
func burnAlertTileMappings() []dashboard.ValueMapping {
	return []dashboard.ValueMapping{
		valueMap(map[string]dashboard.ValueMappingResult{
			"0":   textResult(burnAlertNone, blue),
			"0.5": textResult("Possible", amber),
			"1":   textResult("Ticket", orange),
			"2":   textResult("Page", red),
		}),
		nullMap("unknown"),
	}
}

// Overview is the front page, worst first: the selected profile's SLO
// status, attainment and error budget per objective; one row per target ×
// model and objective sorted by status and budget with the observed
// quantile against its threshold and the target's diagnosis and advice;
// the why (diagnosis evidence and advice, probe errors, regression
// verdicts, telemetry gaps); then the real-time row, traffic, per-target
// latency with p99, max and the profile's threshold, saturation and GPUs.
// Rows that are empty by default (probe, HTTP status) are collapsed, with
// what fills them in their titles.
func Overview() *dashboard.DashboardBuilder {
	b := shell(UIDOverview, "Inferscope — overview",
		"Is the SLO met, which endpoint is burning its error budget, and why: per target and model, against the selected SLO profile.",
		targetVar(), modelVar(), profileVar()).
		Annotation(eventsAnnotation())

	// SLO of the selected profile: status, attainment and budget per objective.
	b.WithRow(row("SLO: profile $profile"))
	b.WithPanel(budgetWorstTiles(sloWorstTiles(budgetTileTitle, "Per objective of the selected SLO profile, the target with the least error budget left and its budget: 1 − bad requests / allowed bad requests over the objective's period, which the tile names (30d: the last 30 days; month: the calendar month), or, while the stored history is shorter, the part it covers, which the name then says (“budget of the 1h stored (30d not yet covered)”). An overspent budget (0 or below) reads exhausted, in red, and the tile's name says how many times the allowed bad requests were spent (bad / allowed = 1 − budget left: 82.6× for −8161 %); amber under 25 % left. Each target is judged on its own (the slo query grouped by target), so a healthy target's traffic cannot hide an overspent one; the endpoint table below has every target and model.",
		"budget_remaining", unitRatio, 9, budgetThresholds()).
		Decimals(1).
		Mappings(append(budgetMappings(), nullMap("no requests")))))
	b.WithPanel(sloWorstTiles("Attainment over the range, worst target", "Per objective of the selected SLO profile, the target with the lowest attainment and its attainment: the share of its requests over the dashboard's range (not the budget's period) that met the objective (latency ≤ threshold, no error finish, target serving), request-weighted. Red below 99 %, amber below 99.5 %.",
		"attainment", unitRatio, 9, lowerBad(0.99, 0.995)).
		Decimals(2).
		Mappings([]dashboard.ValueMapping{nullMap("no requests")}))
	b.WithPanel(sloStat(burnAlertTileTitle, "Per objective of the selected SLO profile, the most severe burn-rate alert of any selected target now, by the multi-window multi-burn-rate rule (docs/slo.md): none, Possible (only the unfavourable bound of the attainment bracket fires), Ticket or Page. It judges how fast the budget burns in the alert windows (5m to 3d), not how much of it is already spent: a budget overspent earlier in the period shows in the Error budget left tile (left, red below 0) while this tile says none now. Page: 1h and 5m burn above 14.4, or 6h and 30m above 6; ticket: 1d and 2h above 3, or 3d and 6h above 1 (the 30d period's factors). The endpoint table below says which target and model burn.",
		unitCount, 6, neutral()).
		Transformations(worstPerObjective("status_value", "max", true)).
		OverrideByName("status_value", props(prop("displayName", sloObjectiveName))).
		Mappings(burnAlertTileMappings()))

	// Who is burning: one row per objective × target × model, worst first.
	b.WithRow(row("Endpoints, worst first"))
	b.WithPanel(endpointTable())

	// The why: what the diagnosis found now per target, with its evidence and advice.
	b.WithRow(row("Why: diagnosis, probe errors, regressions, telemetry gaps"))
	b.WithPanel(diagnosisNowTable(24, diagnosisNowHeight))
	// Id 6: the engine alert rules link here.
	b.WithPanel(diagnosisTimeline("Diagnosis over time", "The bottleneck class found per target over time (queue saturation, KV-cache pressure, prefill compute, decode bandwidth, GPU throttling, frontend, stalled, healthy), from the rules in docs/diagnosis.md; the table above gives the evidence and advice of the current one. The bars carry short names so that a short state still shows one (KV cache: KV-cache pressure, queue: queue saturation, HOL block: head-of-line blocking, prefill and decode: compute- and memory-bound); the tooltip and the tables give the full class.",
		12, 7, query(sel("queryType", "diagnosis", "format", "timeline")...)).Id(6))
	b.WithPanel(tbl("Telemetry gaps", "Per target, the signals the dashboards need that its engine does not export or that were not seen in the range (missing, approximated, frozen or contradictory telemetry; docs/telemetry-sanity.md): a panel that is empty for one target is explained here.",
		12, 7, query("queryType", "targets", "targets", []string{"$target"}, "format", "telemetry")).
		Transformations([]dashboard.DataTransformerConfig{transformation("reduce", map[string]any{"mode": "seriesToRows", "reducers": []string{"lastNotNull"}, "labelsToFields": true}),
			// The telemetry format answers every target × signal, 1 where the
			// family is missing and 0 where it is there: only the 1s are gaps
			// (issue 33: vllm-healthy's queue, prefill and decode time read
			// "missing" beside their 4.65 ms, 16.5 ms and 1.89 s).
			transformation("filterByValue", map[string]any{
				"type": "include", "match": "any",
				"filters": []map[string]any{{"fieldName": "Last *", "config": map[string]any{"id": "greater", "options": map[string]any{"value": 0}}}},
			}),
			transformation("organize", map[string]any{"excludeByName": map[string]any{"Last *": true}, "renameByName": map[string]any{"Field": "gap"},
				"indexByName": map[string]any{"target": 0, "signal": 1, "Field": 2}})}).
		NoValue("No telemetry gap: every signal is exported and seen").
		OverrideByRegexp(".*", emptyCell()))

	// Real-time row: sparklines of the last hour.
	b.WithRow(row("Now"))
	// Titles that fit their tiles (issue 33: "(all targets)" was cut at "Requests/s (all
	// targ…" in 4-wide tiles; titleFits): the pooled tiles are 6 wide, input and output
	// tokens one tile with two values.
	b.WithPanel(statPanel("Requests/s"+allTargets, "Finished requests per second, all finish reasons, summed over the selected targets and models (the endpoint table has each target's).",
		unitRPS, 6, 4, neutral(), query(sel("queryType", "throughput", "groupBy", "none")...)).
		Transformations(requestsTotal("requests/s")))
	b.WithPanel(statPanel("Tokens/s in, out"+allTargets, "Prompt (input, prefill) and generated (output, decode) tokens per second, summed over the selected targets and models.",
		unitTokens, 6, 4, neutral(), query(sel("queryType", "throughput", "groupBy", "none")...)).
		Transformations([]dashboard.DataTransformerConfig{keepFields(`(prompt|generation) tokens/s.*`)}).
		TextMode(common.BigValueTextModeValueAndName).
		OverrideByRegexp(`prompt tokens/s.*`, props(prop("displayName", "in"))).
		OverrideByRegexp(`generation tokens/s.*`, props(prop("displayName", "out"))))
	// Per GPU, named by its target (issue 33: a mean over both targets' GPUs named neither).
	b.WithPanel(statPanel("GPU saturation", "Per GPU of the selected targets, named target on agent · GPU n: SM active where profiling metrics exist, else graphics-engine activity, else utilisation. Amber from 85 %, red from 95 %.",
		unitRatio, 4, 4, upperBad(0.85, 0.95), query("queryType", "gpu", "targets", []string{"$target"}, "signals", []string{"saturation"})).
		// The serving target and agent only: the tile is narrow, and the GPU number made the
		// names too small to read.
		TextMode(common.BigValueTextModeValueAndName).DisplayName("${__field.labels.serving}").
		Text(readableNames()).
		NoValue(noGPUAgent).
		Min(0).Max(1))
	// Per target, named (issue 33: a mean of both targets named neither), over the
	// dashboard's range like the per-target-and-model table's mean E2E below (issue 33: a
	// 46 s mean TTFT over the last rate window sat above a 32 s mean E2E over the range):
	// each tile's value is the range's mean, its sparkline the mean over the range's length
	// ending at each step.
	meanStat := func(stage string, kv ...any) queryBuilder {
		return query(sel(append([]any{"queryType", "latency", "stages", []string{stage}, "stats", []string{"mean"}, "groupBy", "target", "bounds", false, "window", meanTileWindow}, kv...)...)...)
	}
	// Coloured by the selected profile's TTFT threshold (issue 33: "46.0 s" in neutral blue at
	// 15× the 3 s objective, beside red Waiting and Preemptions tiles): with a profile the data
	// source sets each ttft series' thresholds, green below the objective's threshold and red
	// from it; the panel's blue stays for a profile without a TTFT objective. The profile also
	// adds the spike markers (0/1 per window), which are not tiles.
	b.WithPanel(perTargetTile(statPanel(meanTTFTTitle, "Mean time to first token per target over the dashboard's range (the same requests as the per-target-and-model table's mean E2E below): rate of the histogram's _sum over rate of its _count over the range, red from the selected profile's TTFT threshold (green below it). The SLO tiles above judge the profile's quantile itself.",
		unitSeconds, 4, 4, neutral(), meanStat("ttft", "profile", "$profile")).
		Transformations([]dashboard.DataTransformerConfig{dropFields(spikeSeries)})))
	b.WithPanel(perTargetTile(statPanel("Mean ITL (range)", "Mean inter-token latency per target over the dashboard's range: rate of the histogram's _sum over rate of its _count over the range. A mean has no objective: the SLO tiles above judge the profile's quantiles.",
		unitSeconds, 4, 4, neutral(), meanStat("itl"))))
	satStat := func(title, desc, re, unit string, t *dashboard.ThresholdsConfigBuilder, reducer string) *stat.PanelBuilder {
		p := statPanel(title, desc, unit, 4, 4, t, query(sel("queryType", "saturation", "groupBy", "engine")...)).
			Transformations([]dashboard.DataTransformerConfig{keepFields(re), rowReduce(reducer, title, true)})
		return p
	}
	// Per target (issue 33: one number over both targets hid which one was full).
	b.WithPanel(perTargetTile(statPanel("Running", "Requests in the engines' running batches per target, summed across its engines.",
		unitCount, 4, 4, neutral(), query(sel("queryType", "saturation", "groupBy", "target")...)).
		Transformations([]dashboard.DataTransformerConfig{keepFields(`running.*`)})))
	b.WithPanel(perTargetTile(statPanel("Waiting per target", "Requests queued for a batch slot per target, summed across its engines: a standing queue means the engines are full. Amber from 1, red from 20.",
		unitCount, 4, 4, upperBad(1, 20), query(sel("queryType", "saturation", "groupBy", "target")...)).
		Transformations([]dashboard.DataTransformerConfig{keepFields(`waiting.*`)})))
	// The range's peak, not the last sample (issue 33): the diagnosis reads
	// the max over its rate window (0.959 beside a tile showing the last
	// value, 47.9 %), so a last value could contradict it; the peak over the
	// range is at least the diagnosis's number.
	b.WithPanel(satStat(kvPeakTitle, "The highest KV-cache usage (0..1) any engine reached over the dashboard's range (the max across engines per step, then the max over the range; the sparkline is the max across engines): the first engine to preempt. The diagnosis's KV-cache evidence is the max over its rate window ending now, so it is at most this number. Amber from 80 %, red from 95 %.", `KV-cache usage.*`, unitRatio, upperBad(0.8, 0.95), "max").
		ReduceOptions(common.NewReduceDataOptionsBuilder().Values(false).Calcs([]string{"max"})))
	b.WithPanel(perTargetTile(statPanel("Preemptions/s", "Requests preempted per second (KV cache exhausted) per target, summed across its engines. Red from any.",
		unitCount, 4, 4, upperBad(0.001, 0.01), query(sel("queryType", "saturation", "groupBy", "target")...)).
		Transformations([]dashboard.DataTransformerConfig{keepFields(`preemptions/s.*`)})))
	// Per target (issue 33: the pooled 14.2 % averaged the healthy target's ~29 % with the
	// KV-pressured one's ~0 %, hiding the fact the advice "enable prefix caching" rests on).
	b.WithPanel(perTargetTile(statPanel("Prefix-cache hits", "Prefix-cache hit ratio (hit tokens over queried tokens) per target: rate of its engines' hits over rate of their queries.",
		unitRatio, 4, 4, neutral(), query(sel("queryType", "saturation", "groupBy", "target")...)).
		Transformations([]dashboard.DataTransformerConfig{keepFields(`prefix-cache hit ratio.*`)})))
	// Targets down counts the inventory's not_up (state down, stale or not scraped yet), not the
	// raw up series: a target whose scrapes stopped keeps its last up = 1 until the series goes
	// stale, and read "all up" here while the targets dashboard said stale (review, issue 33).
	b.WithPanel(statPanel("Targets down", "Selected targets and their GPU agents whose state is not up: the last scrape failed (down), succeeded too long ago (stale: more than three scrape intervals) or none happened yet. The targets dashboard names them. Red from 1.",
		unitCount, 4, 4, thresholds(baseColor(green), from(1, red)),
		query("queryType", "targets", "targets", []string{"$target"})).
		GraphMode(common.BigValueGraphModeNone).
		ReduceOptions(common.NewReduceDataOptionsBuilder().Values(false).Calcs([]string{"sum"}).Fields("/^not_up$/")).
		Mappings([]dashboard.ValueMapping{valueMap(map[string]dashboard.ValueMappingResult{"0": textResult("all up", green)})}))

	// Per target and model: load and where the time goes.
	b.WithRow(row("Per target and model"))
	b.WithPanel(perTargetModelTable())

	// Traffic and errors.
	b.WithRow(row("Traffic and errors"))
	b.WithPanel(finishReasonsStacked("Finished requests by reason, per model"+allTargets, "Finished requests per second by finish reason (stop, length, abort, error), stacked per model: the stack's height is the model's request rate; stop is green, length purple, abort orange and error red on every dashboard.",
		"model", common.StackingModeNormal))
	b.WithPanel(ts("Tokens/s"+allTargets, "Prompt (input) and generated (output) tokens per second, summed over the selected targets and models.",
		unitTokens, 12, legendH, query(sel("queryType", "throughput", "groupBy", "none")...)).
		Transformations([]dashboard.DataTransformerConfig{keepFields(`.*tokens/s.*`)}).
		Legend(legendTable()))
	b.WithPanel(ts("Error rate"+allTargets, "Share of finished requests that ended with finish reason error, per step; client aborts (finish reason abort, the client's choice) are not errors and count only in the denominator. The dashed lines are the warning level, amber at 0.8 %, and the critical level, red at 2 %; the profile's error-ratio objective is judged in the SLO tiles.",
		unitRatio, 12, legendH, query(sel("queryType", "throughput", "groupBy", "none")...)).
		Transformations(errorRatio()).
		Thresholds(upperBad(errorRatioWarn, errorRatioCrit)).
		ThresholdsStyle(common.NewGraphThresholdsStyleConfigBuilder().Mode(common.GraphThresholdsStyleModeDashed)).
		Min(0).AxisSoftMax(0.03))
	b.WithPanel(finishReasonsStacked("Finish reasons (share)"+allTargets, "Share of finished requests per finish reason (stop, length, abort, error) over time, all selected targets and models, stacked to 100 % (the tooltip shows each reason's requests/s): a rising length share is truncated answers, a rising abort share is clients giving up (often on a slow TTFT). Stop green, length purple, abort orange, error red.",
		"none", common.StackingModePercent))

	// Latency per target: p99 and max against the profile's threshold.
	// The row says, without hovering, that a flat top is a bucket edge (issue 33, review 7: TTFT
	// p99 flat at 80 s and 120 s read as measurements).
	b.WithRow(row("Latency per target (p99, max, dashed red: the profile's threshold; a line flat at a bucket edge is clamped, at least that edge)"))
	for _, st := range []struct{ stage, title string }{{"ttft", "TTFT"}, {"tpot", "TPOT"}, {"e2e", "E2E latency"}} {
		b.WithPanel(latencyTS(st.title+" p99 and max per target", "Per target: p99 (solid) and max (dashed: the upper bound of the highest occupied bucket in the window) over the rate window, with the selected profile's threshold for this stage as the dashed red line. A max that jumps while the p99 stays flat is a short spike; both rising is sustained degradation. Quantiles are interpolated inside the bucket (histogram_quantile): where the p99's bucket is wide, the table below says which bracket it lies in.",
			8, legendH, query(withProfile("queryType", "latency", "stages", []string{st.stage}, "stats", []string{"p99", "max"}, "groupBy", "target", "bounds", false)...)).
			DisplayName(latencyTargetName).
			// Max and last only: the mean column left the names no room, and
			// "vllm-kv-pressure max" and "… p99" were both cut to "vllm-kv-pressure…".
			Legend(legendTableMaxLast()))
	}
	b.WithPanel(p99LiesInTable())
	for _, st := range []struct{ stage, title string }{{"ttft", "TTFT"}, {"itl", "ITL"}, {"e2e", "E2E latency"}} {
		b.WithPanel(heatmapPanel(st.stage, st.title+" heatmap", 8, 8))
	}

	// Per target (issue 33: one stack of both targets' means, queue 2.11 s, was neither the
	// KV-starved target's 19.5 s nor the healthy one's 5 ms): one line per target and stage,
	// target first; not stacked, since a stack would add the targets' means together.
	b.WithPanel(ts("Where the time goes (mean per stage)", "Mean queue, prefill and decode time and frontend overhead (E2E − queue − inference) per request, per target (named first in the legend). Means add up to the mean E2E, quantiles do not.",
		unitSeconds, 24, legendH, query(sel("queryType", "breakdown", "groupBy", "target")...)).
		DisplayName("${__field.labels.target} ${__field.labels.stage}").
		FillOpacity(0).
		Legend(legendRight(560)))

	// Saturation.
	b.WithRow(row("Saturation"))
	b.WithPanel(ts("Queue", "Requests running in the engines' batches and waiting for a slot, summed per target: a waiting count that does not drain is a full server.",
		unitCount, 8, legendH, query(sel("queryType", "saturation", "groupBy", "target")...)).
		Transformations([]dashboard.DataTransformerConfig{keepFields(`(running|waiting).*`)}).
		// No fixed colour: one per series (issue 33: both targets' waiting were
		// the same orange); named target first so a narrow legend keeps it.
		Legend(legendTable()).
		DisplayName("${__field.labels.target} ${__field.labels.signal}").
		// One colour per target (setTargetColours); waiting dashed.
		OverrideByRegexp(`.*waiting.*`, props(prop("custom.lineStyle", map[string]any{"fill": "dash", "dash": []int{10, 10}}), prop("custom.fillOpacity", 0))))
	b.WithPanel(ts("KV-cache usage: max and spread across engines", "KV-cache usage (0..1) of every engine (vLLM data-parallel rank) with the max and min across them: a wide spread is load imbalance, a max near 1 means preemptions are close. The dashed lines: amber at 80 % (preemptions come close), red at 95 % (the engine preempts).",
		unitRatio, 8, legendH, query(sel("queryType", "saturation", "groupBy", "engine")...)).
		Transformations([]dashboard.DataTransformerConfig{keepFields(`KV-cache usage.*`), rowReduce("max", "max across engines", false), rowReduce("min", "min across engines", false)}).
		Legend(legendTable()).
		// Each engine named target first (the max and min rows have no labels).
		OverrideByRegexp(`KV-cache usage.*`, props(prop("displayName", "${__field.labels.target} engine ${__field.labels.engine}"))).
		Min(0).Max(1).
		Thresholds(upperBad(0.8, 0.95)).
		ThresholdsStyle(common.NewGraphThresholdsStyleConfigBuilder().Mode(common.GraphThresholdsStyleModeDashed)).
		// Grey and dashed (issue 33: red and blue, they were drawn as one line with a target's
		// own colour); the engines keep their target's colour (setTargetColours).
		OverrideByName("max across engines", props(prop("color", map[string]any{"mode": "fixed", "fixedColor": grey}), prop("custom.lineWidth", 1), prop("custom.lineStyle", map[string]any{"fill": "dash", "dash": []int{10, 10}}), prop("custom.fillOpacity", 0))).
		OverrideByName("min across engines", props(prop("color", map[string]any{"mode": "fixed", "fixedColor": grey}), prop("custom.lineWidth", 1), prop("custom.lineStyle", map[string]any{"fill": "dot", "dash": []int{0, 6}}), prop("custom.fillOpacity", 0))))
	b.WithPanel(ts("Preemptions/s", "Requests preempted per second because the KV cache ran out, per target.",
		unitCount, 8, legendH, query(sel("queryType", "saturation", "groupBy", "target")...)).
		Transformations([]dashboard.DataTransformerConfig{keepFields(`preemptions/s.*`)}).
		AxisLabel("preemptions/s").
		Legend(legendTable()).
		DisplayName("${__field.labels.target}"))

	// GPU summary.
	b.WithRow(row("GPUs"))
	gq := func(signals ...string) queryBuilder {
		return query("queryType", "gpu", "targets", []string{"$target"}, "signals", signals)
	}
	b.WithPanel(gpuTS("GPU saturation", "Per GPU: SM active where profiling metrics exist, else graphics-engine activity, else utilisation (0..1); a notice says which was used.",
		unitRatio, 12, legendH, gq("saturation")).
		Min(0).Max(1))
	b.WithPanel(gpuTS("GPU power", "Power drawn per GPU, in watts; the GPU dashboard sets it against the enforced limit.",
		"watt", 6, legendH, gq("power")).Min(0).
		// A list: a table legend's three numbers left the names "vllm-…" in a narrow panel.
		Legend(legendList()))
	b.WithPanel(gpuTS("GPU memory used", "Framebuffer memory used per GPU, in bytes, from 0.",
		"bytes", 6, legendH, gq("fb_used")).Min(0).
		Legend(legendList()))

	// Empty by default: collapsed, with what fills them in their titles.
	// Empty without a probe or without a change in the range (issue 33: both
	// sat open in the why row as headers or "No data").
	// The title says what the row holds and for which targets, not that a probe is missing
	// (issue 33, review 7: "needs a probe in the settings" read as "not configured" on a demo
	// that configures one, probe-healthy).
	probe := row(probeRowTitle).Collapsed(true)
	regressions := row("Regression verdicts (fill after a restart, version, model or configuration change in the range)").Collapsed(true)
	regressions.WithPanel(tbl("Regression verdicts", "Around each restart, engine, version, model or cache-configuration change of the selected targets in the range: per stage the verdict (regressed, improved, no change, not comparable) of the mean latency 30 minutes before against after, at comparable load (docs/benchmarks.md). Empty: no change in the range.",
		12, 7, query("queryType", "regression", "targets", []string{"$target"}, "span", "30m")).
		Transformations([]dashboard.DataTransformerConfig{transformation("organize", map[string]any{
			"excludeByName": map[string]any{"time": false, "title": true, "size_lower": true, "size_upper": true, "windows_before": true, "windows_after": true,
				"windows_with_requests_before": true, "windows_with_requests_after": true, "running_before": true, "running_after": true, "verdict_value": true, "controlled_for": true},
		})}).
		NoValue("No restart, version, model or configuration change of the selected targets in the range").
		OverrideByRegexp(".*", emptyCell()).
		OverrideByName("verdict", props(colorBackground(), prop("mappings", []dashboard.ValueMapping{valueMap(map[string]dashboard.ValueMappingResult{
			"regressed": textResult("regressed", red), "improved": textResult("improved", green), "no change": textResult("no change", blue), "not comparable": textResult("not comparable", grey)})}))).
		OverrideByRegexp(`before|after`, props(prop("unit", unitSeconds))).
		OverrideByName("size", props(prop("unit", unitRatio))))
	probe.WithPanel(tbl("Probe errors by class", "Client-side probe requests per second that failed, per target and error class (HTTP 429, 5xx, timeouts, cut streams; docs/probe.md), averaged over the range: failures users see that the engine's counters may not. Empty without a probe (settings probes[]).",
		12, 6, query(sel("queryType", "probe", "view", "errors")...)).
		Transformations([]dashboard.DataTransformerConfig{transformation("reduce", map[string]any{"mode": "seriesToRows", "reducers": []string{"mean", "max"}, "labelsToFields": true}),
			transformation("organize", map[string]any{"excludeByName": map[string]any{"Field": true, "signal": true, "source": true}})}).
		NoValue("No probe: add one in the data source's settings (probes[], docs/probe.md) to see errors as users see them").
		OverrideByRegexp(".*", emptyCell()).
		OverrideByRegexp(`Mean|Max`, props(prop("unit", unitRPS), prop("decimals", 3))))
	for _, p := range probePanels() {
		probe.WithPanel(p)
	}
	b.WithRow(probe)
	b.WithRow(regressions)
	b.WithRow(row("HTTP status (needs a remote Prometheus that scrapes http_requests_total)").Collapsed(true).WithPanel(httpStatusPanel()))
	b.WithRow(row("Prompt tokens by source (vLLM 0.13 and later: vllm:prompt_tokens_by_source_total)").Collapsed(true).WithPanel(promptBySourcePanel()))
	b.WithRow(row("Engine sleep state (vLLM 0.11 and later: vllm:engine_sleep_state)").Collapsed(true).WithPanel(sleepStatePanel()))
	withParityRows(b)
	return b
}

// p99LiesInTitle names the overview's "where p99 lies" cue.
const p99LiesInTitle = "Where each p99 lies (wide buckets only)"

// p99LiesInTable is the overview's cue under its p99 panels (issue 33: "p99 lies in 250–500
// ms" where the bucket is wide): the buckets query's lies_in per target and stage, only the
// rows where the p99's bucket is over 10 % of its value wide (lies_in is empty otherwise).
func p99LiesInTable() *table.PanelBuilder {
	return tbl(p99LiesInTitle, "Per target and stage (TTFT, TPOT, E2E), where the p99 over the dashboard's range lies when its histogram bucket is over 10 % of the value wide (p99 lies in 250–500 ms): the line above is interpolated inside that bucket, and the true p99 can be anywhere in the bracket. The bucket advice on the latency dashboard has the bounds to add to vLLM's --custom-histogram-buckets.",
		24, 8, query(sel("queryType", "buckets", "stages", []string{"ttft", "tpot", "e2e"}, "stats", []string{"p99"}, "groupBy", "target")...)).
		Transformations([]dashboard.DataTransformerConfig{
			transformation("filterByValue", map[string]any{
				"type": "include", "match": "all",
				"filters": []map[string]any{{"fieldName": "lies_in", "config": map[string]any{"id": "regex", "options": map[string]any{"value": ".+"}}}},
			}),
			transformation("organize", map[string]any{
				"excludeByName": map[string]any{"kind": true, "requested": true, "requested_label": true, "exact": true, "clamped": true, "extra_bounds": true, "custom_histogram_buckets": true, "flag": true},
				"indexByName":   map[string]any{"target": 0, "signal": 1, "lies_in": 2, "value": 3, "bucket_lower": 4, "bucket_upper": 5, "relative_width": 6},
				"renameByName":  map[string]any{"signal": "stage", "lies_in": "where p99 lies", "value": "p99 drawn", "bucket_lower": "bucket from", "bucket_upper": "bucket to", "relative_width": "bucket width / p99"},
			}),
		}).
		NoValue("Every p99 lies in a bucket under 10 % of its value wide: read the lines above as drawn").
		OverrideByRegexp(".*", emptyCell()).
		OverrideByName("target", props(prop("custom.width", 170))).
		OverrideByName("stage", props(prop("custom.width", 80))).
		OverrideByName("where p99 lies", props(prop("custom.width", 360))).
		OverrideByRegexp(`p99 drawn|bucket from|bucket to`, props(prop("unit", unitSeconds), prop("custom.width", 120))).
		OverrideByName("bucket width / p99", props(prop("unit", unitRatio), prop("decimals", 0), thresholdsProp(thresholds(baseColor(green), from(0.1, amber), from(0.5, orange))), colorText()))
}

// promptBySourcePanel stacks vLLM's prompt tokens by source (the throughput
// query's prompt tokens by source series, vLLM 0.13 and later).
func promptBySourcePanel() *timeseries.PanelBuilder {
	return ts("Prompt tokens by source"+allTargets, "Prompt tokens per second by where their KV came from (vLLM's prompt_tokens_by_source, 0.13 and later), stacked, all selected targets and models: local_compute was prefilled here, local_cache_hit came from this engine's prefix cache, external_kv_transfer from a KV connector (another instance or an offload tier). A growing local_compute share at steady traffic is the prefix cache losing hits.",
		unitTokens, 12, legendH, query(sel("queryType", "throughput", "groupBy", "none")...)).
		Transformations([]dashboard.DataTransformerConfig{keepFields(`prompt tokens by source.*`)}).
		Stacking(common.NewStackingConfigBuilder().Mode(common.StackingModeNormal).Group("A")).
		FillOpacity(40).
		Legend(legendTable()).
		NoValue("No prompt tokens by source: vLLM exports vllm:prompt_tokens_by_source_total from 0.13 on")
}

// sleepStatePanel draws vLLM's engine sleep state per target, engine and
// state (the raw gauge vllm:engine_sleep_state: awake 1 while serving,
// weights_offloaded 1 at sleep level 1, discard_all 1 at level 2), so a
// sleeping engine that reads as idle is told apart from an idle one.
func sleepStatePanel() *timeseries.PanelBuilder {
	return ts("Engine sleep state", "vLLM's vllm:engine_sleep_state per target, engine and state (vLLM 0.11 and later; the engine must run with --enable-sleep-mode to ever leave awake): awake is 1 while the engine serves, weights_offloaded 1 at sleep level 1 (weights in CPU memory), discard_all 1 at level 2 (weights dropped). A sleeping engine answers /metrics with no running requests and 0 KV-cache use: it reads as idle, not as capacity.",
		unitCount, 24, 6, query("queryType", "raw", "metric", "vllm:engine_sleep_state", "targets", []string{"$target"})).
		DisplayName(sleepStateName).
		Min(0).Max(1).
		NoValue(noSleepState).
		LineInterpolation(common.LineInterpolationStepAfter)
}

// sleepStateName names a sleep-state series "vllm-a engine 0 awake".
const sleepStateName = "${__field.labels.job} engine ${__field.labels.engine} ${__field.labels.sleep_state}"

// noSleepState is the sleep-state panel's hint when the engines export no
// sleep state.
const noSleepState = "No vllm:engine_sleep_state: the engines are older than vLLM 0.11 or not vLLM"

// latencyTargetName names a per-target latency series "vllm-a p99" (the
// stat after the target, so a narrow legend keeps both).
const latencyTargetName = "${__field.labels.target} ${__field.labels.stat}"

// gpuName names a GPU series by the inference targets it serves, its agent
// and its index ("vllm-healthy on gpu-healthy · GPU 0": the gpu query's
// serving label, the agent alone where no target names it), so two GPU 0s
// of different nodes never read alike and the legend says whose GPU it is.
const gpuName = "${__field.labels.serving} · GPU ${__field.labels.gpu}"

// gpuTS is a per-GPU time series: a table legend, each series named by
// gpuName, and a hint where no GPU agent is configured.
func gpuTS(title, desc, unit string, w, h uint32, q queryBuilder) *timeseries.PanelBuilder {
	return ts(title, desc, unit, w, h, q).Legend(legendTable()).DisplayName(gpuName).NoValue(noGPUAgent)
}

// gpuSignalName names a series of a panel with several GPU signals
// ("power_limit · vllm-healthy on gpu-healthy GPU 0").
const gpuSignalName = "${__field.labels.signal} · ${__field.labels.serving} GPU ${__field.labels.gpu}"

// gpuSignalLabels are the readable names of the GPU agent's signals in the multi-signal
// panels' legends, units where the axis has none for the second series (issue 33: the
// legends read the frames' signal labels, "fb_used", "sm_clock_max", "power_limit").
var gpuSignalLabels = map[string]string{
	"sm_active": "SM active", "dram_active": "DRAM active", "tensor_active": "tensor pipes active",
	"power": "power drawn", "power_limit": "power limit",
	"sm_clock": "SM clock", "sm_clock_max": "SM clock maximum",
	"fb_used": "framebuffer used", "fb_total": "framebuffer installed",
}

// gpuSignalNames names each signal's series of a multi-signal GPU panel by
// gpuSignalLabels with its GPU: an override per signal matching the frames'
// display name ("power_limit · gpu=0, …") that sets the series' displayName.
func gpuSignalNames(p *timeseries.PanelBuilder, signals ...string) *timeseries.PanelBuilder {
	for _, sig := range signals {
		p = p.OverrideByRegexp(sig+" · .*", props(prop("displayName", gpuSignalLabels[sig]+" · ${__field.labels.serving} GPU ${__field.labels.gpu}")))
	}
	return p
}

// noGPUAgent is the hint of a GPU panel without data.
const noGPUAgent = "No GPU agent for the selected targets: set targets[].agent (the Inferscope GPU agent or dcgm-exporter) in the data source's settings"

// endpointTable is the overview's "who is burning" table: one row per
// objective of the selected profile × target × model (the slo query grouped
// by target_model) with its status, the observed quantile at the
// objective's ratio against the threshold (p99 for a 0.99 objective),
// attainment, budget left and the 1h burn rate, joined by target with the
// diagnosis that holds now (class and its advice), sorted by status, worst
// first. The target cell links to the latency deep dive and the diagnosis
// of that target.
func endpointTable() *table.PanelBuilder {
	byRef := func(ref string) *dashboard.MatcherConfig {
		return &dashboard.MatcherConfig{Id: "byRefId", Options: ref}
	}
	scoped := func(t dashboard.DataTransformerConfig, ref string) dashboard.DataTransformerConfig {
		t.Filter = byRef(ref)
		return t
	}
	return tbl("Endpoints, worst first", "One row per objective of the selected profile × target × model over the dashboard's range, the most overspent error budget first: status by the multi-window multi-burn-rate rule, the observed quantile at the objective's ratio (p99 for a 0.99 objective) against its threshold, attainment, error budget left over the period and the 1h burn rate (the point estimate at the range's end, as the SLO page's Burn 1h column); then the diagnosis that holds now for the target and its one-line advice. Click a target for its latency deep dive or its diagnosis.",
		24, 10,
		queryRef("A", withProfile("queryType", "slo", "groupBy", "target_model")...),
		queryRef("B", sel("queryType", "diagnosis", "format", "table")...)).
		Transformations([]dashboard.DataTransformerConfig{
			// The diagnosis that holds now, per target (twin_advice is hidden: recommendation already ends with it).
			scoped(transformation("filterByValue", map[string]any{
				"type": "include", "match": "all",
				"filters": []map[string]any{{"fieldName": "current", "config": map[string]any{"id": "equal", "options": map[string]any{"value": true}}}},
			}), "B"),
			scoped(transformation("organize", map[string]any{
				"excludeByName": map[string]any{"time": true, "timeEnd": true, "gpu": true, "uuid": true, "severity": true, "level": true, "confidence": true,
					"confidence_note": true, "summary": true, "evidence": true, "not_checked": true, "current": true, "twin_advice": true, "title": true, "text": true, "tags": true},
				"renameByName": map[string]any{"class": "diagnosis", "recommendation": "advice"},
			}), "B"),
			scoped(transformation("organize", map[string]any{
				"excludeByName": map[string]any{"profile": true, "signal": true, "attainment_lower": true, "attainment_upper": true, "threshold_exact": true,
					"quantile_lower": true, "quantile_upper": true, "budget_lower": true, "budget_upper": true, "history": true, "burn_5m": true, "burn_30m": true,
					"burn_2h": true, "burn_6h": true, "burn_1d": true, "burn_3d": true, "status": true, "reason": true, "count_unit": true, "not_evaluated": true, "never_fires": true, "period": true, "budget_of": true},
				// Display names set before the join survive it (unnamed, the joined
				// fields would read "objective slo", "threshold slo", …).
				"renameByName": map[string]any{"status_value": "status", "model": "model", "objective": "objective", "quantile": "observed", "threshold": "threshold",
					"attainment": "attainment", "objective_target": "objective ratio", "budget_remaining": "budget left", "burn_1h": "burn 1h", "requests": "requests"},
			}), "A"),
			transformation("joinByField", map[string]any{"byField": "target", "mode": "outerTabular"}),
			transformation("organize", map[string]any{
				"indexByName": map[string]any{"status": 0, "target": 1, "model": 2, "objective": 3, "observed": 4, "threshold": 5, "attainment": 6, "objective ratio": 7,
					"budget left": 8, "burn 1h": 9, "requests": 10, "diagnosis": 11, "advice": 12},
			}),
		}).
		// Worst first: the most overspent budget on top (the status ranks pages
		// and tickets, but needs the long windows' history; the budget is
		// there from the first hour).
		SortBy([]cog.Builder[common.TableSortByFieldState]{
			common.NewTableSortByFieldStateBuilder().DisplayName("budget left"),
		}).
		OverrideByName("status", props(prop("mappings", sloStatusMappings()), colorBackground(), prop("custom.width", 70))).
		OverrideByName("target", props(
			prop("links", []map[string]any{
				{"title": "Latency deep dive of ${__data.fields.target}", "url": "/d/" + UIDLatency + "?var-target=${__data.fields.target:percentencode}&${datasource:queryparam}&${profile:queryparam}&${__url_time_range}"},
				{"title": "Diagnosis of ${__data.fields.target}", "url": "/d/" + UIDOverview + "?var-target=${__data.fields.target:percentencode}&${datasource:queryparam}&${profile:queryparam}&${__url_time_range}&viewPanel=" + fmt.Sprint(diagnosisNowPanelID)},
			}),
			prop("custom.width", 150))).
		// Widths sum to about 1200 px of the 1540: the advice keeps the rest
		// and wraps (issue 33: it was cut to its first word).
		OverrideByName("model", props(prop("custom.width", 160), prop("custom.wrapText", true))).
		OverrideByName("objective", props(prop("custom.width", 80))).
		OverrideByRegexp(`observed|threshold`, props(prop("unit", unitSeconds), prop("custom.width", 80))).
		OverrideByName("attainment", props(prop("unit", unitRatio), prop("decimals", 2), prop("custom.width", 90))).
		OverrideByName("objective ratio", props(prop("unit", unitRatio), prop("decimals", 1), prop("custom.width", 125))).
		OverrideByName("budget left", props(prop("unit", unitRatio), prop("decimals", 0), gaugeCell(), prop("min", -1), prop("max", 1), thresholdsProp(budgetThresholds()), prop("mappings", budgetMappings()), prop("custom.width", 150))).
		OverrideByName("burn 1h", props(prop("unit", unitNone), prop("decimals", 1), colorText(), thresholdsProp(burnRateThresholds()), prop("custom.width", 70))).
		OverrideByName("requests", props(prop("unit", unitCount), prop("decimals", 0), prop("custom.width", 80))).
		OverrideByName("diagnosis", props(prop("mappings", diagnosisMappings()), colorBackground(), prop("custom.width", 150))).
		OverrideByName("advice", props(prop("custom.inspect", true), prop("custom.wrapText", true), prop("custom.minWidth", 250)))
}

// diagnosisNowHeight is the "Diagnosis now" table's height in grid rows: a header and two
// targets' rows of up to tableMaxRowHeight (120 px) each.
const diagnosisNowHeight = 10

// diagnosisNowPanelID is the "Diagnosis now" table's panel id on the
// overview (pinned: the endpoint table's data links open it).
const diagnosisNowPanelID = 30

// diagnosisNowTable is the diagnosis that holds now per target (and per
// GPU where one is throttled): class, summary, evidence, what could not be
// checked and the advice, from the diagnosis table's current rows.
func diagnosisNowTable(w, h uint32) *table.PanelBuilder {
	return tbl("Diagnosis now: evidence and advice", "Per target, the bottleneck class that holds at the end of the range (docs/diagnosis.md), with its summary, the evidence the rule read (signal values against their levels), what could not be checked and the advice (vLLM flags and settings to change). Hover a long cell to read it whole.",
		w, h, query(sel("queryType", "diagnosis", "format", "table")...)).
		Id(diagnosisNowPanelID).
		Transformations([]dashboard.DataTransformerConfig{
			transformation("filterByValue", map[string]any{
				"type": "include", "match": "all",
				"filters": []map[string]any{{"fieldName": "current", "config": map[string]any{"id": "equal", "options": map[string]any{"value": true}}}},
			}),
			// Worst first by the severity level, before it is hidden (issue 33, review 33-8:
			// healthy came first, as the frame lists the targets).
			transformation("sortBy", map[string]any{"fields": map[string]any{}, "sort": []map[string]any{{"field": "level", "desc": true}}}),
			transformation("organize", map[string]any{
				"excludeByName": map[string]any{"time": true, "timeEnd": true, "uuid": true, "level": true, "confidence_note": true, "twin_advice": true, "current": true, "title": true, "text": true, "tags": true, "severity": true},
				"indexByName":   map[string]any{"target": 0, "gpu": 1, "class": 2, "confidence": 3, "summary": 4, "evidence": 5, "recommendation": 6, "not_checked": 7},
				"renameByName":  map[string]any{"class": "diagnosis", "recommendation": "advice", "not_checked": "not checked"},
			}),
		}).
		OverrideByName("target", props(prop("custom.width", 150))).
		OverrideByName("gpu", props(prop("custom.width", 50))).
		OverrideByName("diagnosis", props(prop("mappings", diagnosisMappings()), colorBackground(), prop("custom.width", 180))).
		OverrideByName("confidence", props(prop("custom.width", 90))).
		// Long sentences wrap (the row grows, up to tableMaxRowHeight) and open whole on hover.
		// What could not be checked is short or empty: a narrow column, so that the summary,
		// evidence and advice share the width (issue 33: "The prefix-cache hit ratio is
		// not…" and "enable prefix cachin…" were cut in 150 px columns beside an empty one).
		OverrideByRegexp(`summary|evidence|advice|not checked`, props(prop("custom.inspect", true),
			prop("custom.wrapText", true))).
		OverrideByName("not checked", props(prop("custom.width", 120))).
		OverrideByRegexp(`summary|evidence|advice`, props(prop("custom.minWidth", 300)))
}

// perTargetModelTable is one row per target and model over the range
// (the breakdown table grouped by target_model): finished requests and the
// mean queue, prefill, decode, overhead and E2E time. The target cell
// filters the page to that target.
func perTargetModelTable() *table.PanelBuilder {
	return tbl("Per target and model", "One row per target and model over the dashboard's range: finished requests (load balance across replicas) and the mean queue, prefill, decode, frontend overhead and E2E time per request (breakdown). Click a target to filter the whole page to it.",
		24, 6, query(sel("queryType", "breakdown", "format", "table", "groupBy", "target_model")...)).
		SortBy([]cog.Builder[common.TableSortByFieldState]{common.NewTableSortByFieldStateBuilder().DisplayName("requests").Desc(true)}).
		OverrideByName("target", props(
			prop("links", []map[string]any{{
				"title": "Filter the page to ${__data.fields.target}",
				"url":   "/d/" + UIDOverview + "?var-target=${__data.fields.target:percentencode}&${datasource:queryparam}&${model:queryparam}&${profile:queryparam}&${__url_time_range}",
			}}),
			prop("custom.width", 200))).
		OverrideByName("model", props(prop("custom.width", 260))).
		OverrideByName("requests", props(prop("unit", unitCount), prop("decimals", 0), gaugeCell(), prop("color", map[string]any{"mode": "continuous-blues"}))).
		OverrideByRegexp(`queue|prefill|decode|overhead|e2e`, props(prop("unit", unitSeconds)))
}

// httpStatusPanel counts requests per HTTP status code over the range from
// the servers' own http_requests_total (prometheus-fastapi-instrumentator),
// read with a raw query: the increase (Grafana's delta reducer, which
// handles counter resets) per status. The embedded collector does not store
// http_* families; with a remote Prometheus the panel fills.
func httpStatusPanel() *table.PanelBuilder {
	return tbl("HTTP status", "Requests per HTTP status class over the dashboard's range, from the inference servers' http_requests_total (the increase of the counter, resets handled). Filled when the data source reads a remote Prometheus that scrapes the servers' HTTP metrics; the embedded collector stores only the engine's families.",
		12, 8, query("queryType", "raw", "metric", "http_requests_total", "targets", []string{"$target"})).
		Transformations([]dashboard.DataTransformerConfig{
			transformation("reduce", map[string]any{"mode": "seriesToRows", "reducers": []string{"delta"}, "labelsToFields": true}),
			transformation("groupBy", map[string]any{"fields": map[string]any{
				"status":  map[string]any{"operation": "groupby", "aggregations": []string{}},
				"handler": map[string]any{"operation": "groupby", "aggregations": []string{}},
				"Delta":   map[string]any{"operation": "aggregate", "aggregations": []string{"sum"}},
			}}),
			transformation("organize", map[string]any{"renameByName": map[string]any{"Delta (sum)": "requests"}}),
		}).
		SortBy([]cog.Builder[common.TableSortByFieldState]{common.NewTableSortByFieldStateBuilder().DisplayName("requests").Desc(true)}).
		OverrideByName("status", props(colorBackground(), prop("mappings", []dashboard.ValueMapping{
			regexMap(`2.*`, "", green), regexMap(`3.*`, "", blue),
			regexMap(`4.*`, "", amber), regexMap(`5.*`, "", red),
		}))).
		NoValue("No HTTP metrics: the embedded collector stores the engines' families only; read a remote Prometheus that scrapes http_requests_total").
		OverrideByRegexp(".*", emptyCell()).
		OverrideByName("requests", props(prop("unit", unitCount), prop("decimals", 0), gaugeCell()))
}

// regexMap maps values matching pattern to text and colour; text "" colours the
// value and keeps it (regex results are literal text, only $1-style groups expand).
func regexMap(pattern, text, color string) dashboard.ValueMapping {
	return dashboard.ValueMapping{RegexMap: &dashboard.RegexMap{
		Type:    dashboard.MappingTypeRegexToText,
		Options: dashboard.DashboardRegexMapOptions{Pattern: pattern, Result: textResult(text, color)},
	}}
}
