package main

import (
	"github.com/grafana/grafana-foundation-sdk/go/cog"
	"github.com/grafana/grafana-foundation-sdk/go/common"
	"github.com/grafana/grafana-foundation-sdk/go/dashboard"
	"github.com/grafana/grafana-foundation-sdk/go/stat"
	"github.com/grafana/grafana-foundation-sdk/go/statetimeline"
	"github.com/grafana/grafana-foundation-sdk/go/table"
	"github.com/grafana/grafana-foundation-sdk/go/timeseries"
)

// Dashboard uids: stable, so links between the dashboards and alert rules'
// panel links keep working across regenerations.
const (
	UIDOverview = "inferscope-overview"
	UIDLatency  = "inferscope-latency"
	UIDSLO      = "inferscope-slo"
	UIDGPU      = "inferscope-gpu"
	UIDTargets  = "inferscope-targets"
)

// sel is the target and model selection every query carries, from the
// dashboard's variables (the front end expands multi-value variables).
func sel(kv ...any) []any {
	return append([]any{"targets", []string{"$target"}, "models", []string{"$model"}}, kv...)
}

func withProfile(kv ...any) []any { return sel(append([]any{"profile", "$profile"}, kv...)...) }

// base is the dashboard shell shared by all five: tags, time, refresh, the
// variables and the links to the other dashboards (keeping time and variables).
func base(uid, title, description string, vars ...cog.Builder[dashboard.VariableModel]) *dashboard.DashboardBuilder {
	b := dashboard.NewDashboardBuilder(title).
		Uid(uid).
		Description(description).
		Tags([]string{"inferscope", "llm"}).
		Time("now-1h", "now").
		Refresh("30s").
		Timezone(common.TimeZoneBrowser).
		Tooltip(dashboard.DashboardCursorSyncCrosshair).
		Link(dashboard.NewDashboardLinkBuilder("Inferscope").
			Type(dashboard.DashboardLinkTypeDashboards).
			Tags([]string{"inferscope"}).
			AsDropdown(true).
			IncludeVars(true).
			KeepTime(true)).
		WithVariable(dashboard.NewDatasourceVariableBuilder("datasource").
			Label("Data source").
			Type(pluginID))
	for _, v := range vars {
		b.WithVariable(v)
	}
	return b
}

func queryVar(name, label, queryType string) *dashboard.QueryVariableBuilder {
	return dashboard.NewQueryVariableBuilder(name).
		Label(label).
		Datasource(dsRef).
		Query(dashboard.StringOrMap{Map: map[string]any{"queryType": queryType, "refId": name}}).
		Definition(queryType).
		Multi(true).
		IncludeAll(true).
		AllValue("").
		Refresh(dashboard.VariableRefreshOnDashboardLoad).
		Current(dashboard.VariableOption{Text: strOrArr("All"), Value: strOrArr("$__all")})
}

func strOrArr(s string) dashboard.StringOrArrayOfString {
	return dashboard.StringOrArrayOfString{String: &s}
}

func targetVar() cog.Builder[dashboard.VariableModel] { return queryVar("target", "Target", "targets") }
func modelVar() cog.Builder[dashboard.VariableModel]  { return queryVar("model", "Model", "models") }
func gpuVar() cog.Builder[dashboard.VariableModel]    { return queryVar("gpu", "GPU", "gpus") }

// profileVar picks one SLO profile from the data source's settings.
func profileVar() cog.Builder[dashboard.VariableModel] {
	return dashboard.NewQueryVariableBuilder("profile").
		Label("SLO profile").
		Datasource(dsRef).
		Query(dashboard.StringOrMap{Map: map[string]any{"queryType": "profiles", "refId": "profile"}}).
		Definition("profiles").
		Refresh(dashboard.VariableRefreshOnDashboardLoad)
}

func estimatorVar() cog.Builder[dashboard.VariableModel] {
	return dashboard.NewCustomVariableBuilder("estimator").
		Label("Quantile estimator").
		Values(dashboard.StringOrMap{String: ptr("prometheus,refined")}).
		Current(dashboard.VariableOption{Text: strOrArr("prometheus"), Value: strOrArr("prometheus")})
}

// eventsAnnotation marks restarts, model and version changes and up/down
// transitions of the selected targets on every time-series panel (events
// are per target: the query takes no model selection).
func eventsAnnotation() cog.Builder[dashboard.AnnotationQuery] {
	return dashboard.NewAnnotationQueryBuilder().
		Name("Engine events").
		Datasource(dsRef).
		Enable(true).
		IconColor("orange").
		Target(query("queryType", "events", "targets", []string{"$target"}))
}

// ts is a time-series panel; unit "" leaves each field's own unit (the
// frames carry one per series) for panels that mix units.
func ts(title, desc, unit string, w, h uint32, q queryBuilder) *timeseries.PanelBuilder {
	b := timeseries.NewPanelBuilder().
		Title(title).Description(desc).
		Datasource(dsRef).Span(w).Height(h).
		WithTarget(q)
	if unit != "" {
		b.Unit(unit)
	}
	return b
}

func tbl(title, desc string, w, h uint32, q queryBuilder) *table.PanelBuilder {
	return table.NewPanelBuilder().
		Title(title).Description(desc).
		Datasource(dsRef).Span(w).Height(h).
		WithTarget(q)
}

func timeline(title, desc string, w, h uint32, q queryBuilder) *statetimeline.PanelBuilder {
	return statetimeline.NewPanelBuilder().
		Title(title).Description(desc).
		Datasource(dsRef).Span(w).Height(h).
		WithTarget(q)
}

var stageTitles = []struct{ stage, title string }{
	{"ttft", "Time to first token (TTFT)"},
	{"itl", "Inter-token latency (ITL)"},
	{"tpot", "Time per output token (TPOT, per request)"},
	{"e2e", "End-to-end latency (E2E)"},
	{"queue_time", "Queue time"},
	{"prefill_time", "Prefill time"},
	{"decode_time", "Decode time"},
	{"inference_time", "Inference time (prefill + decode)"},
}

const latencyDesc = "Mean (rate of _sum / rate of _count) and p50, p90, p99 from the histogram's bucket rates over the window, interpolated inside the bucket exactly as Prometheus histogram_quantile does (or with the refined estimator). The shaded band around each quantile is the bucket it fell in: the true value lies inside it."

// Overview is the front page: SLO status, load, where the time goes, what is
// wrong, GPUs; engine events as annotations.
func Overview() *dashboard.DashboardBuilder {
	b := base(UIDOverview, "Inferscope — overview",
		"Are users getting the latency they were promised, per model and target, and if not, why?",
		targetVar(), modelVar(), profileVar()).
		Annotation(eventsAnnotation())
	b.WithPanel(tbl("SLO status", "Per objective of the selected profile and target: attainment over the dashboard's range (fraction of requests under the threshold, with its exact bounds when the threshold is not a bucket bound), error budget left over the objective's period (request-weighted) and the multi-window burn-rate status (ok, ticket, page).",
		24, 7, query(withProfile("queryType", "slo", "groupBy", "target")...)))
	b.WithPanel(ts("TTFT p99 and ITL p99", "99th percentile time to first token and inter-token latency per target; the band is the bucket each quantile fell in. The profile's thresholds are drawn as lines.",
		"s", 12, 8, query(withProfile("queryType", "latency", "stages", []string{"ttft", "itl"}, "stats", []string{"p99"}, "groupBy", "target")...)))
	b.WithPanel(ts("Throughput", "Finished requests per second by finish reason, prompt and generation tokens per second (rates of the engines' counters); each series carries its own unit.",
		"", 12, 8, query(sel("queryType", "throughput")...)))
	b.WithPanel(ts("Where the time goes (mean per stage)", "Mean queue, prefill and decode time and frontend overhead (E2E − queue − inference) per request, stacked: means add up, quantiles do not.",
		"s", 12, 8, query(sel("queryType", "breakdown")...)).
		Stacking(common.NewStackingConfigBuilder().Mode(common.StackingModeNormal)).
		FillOpacity(40))
	b.WithPanel(ts("Saturation", "Running and waiting requests (summed across engines), KV-cache usage (averaged across engines and targets, 0..1), preemptions per second, prefix-cache hit ratio; each series carries its own unit.",
		"", 12, 8, query(sel("queryType", "saturation")...)))
	b.WithPanel(timeline("Diagnosis", "The bottleneck class found per target over time (queue saturation, KV-cache pressure, prefill compute, decode bandwidth, GPU throttling, frontend, stalled, healthy), from the rules in docs/diagnosis.md.",
		24, 6, query(sel("queryType", "diagnosis", "format", "timeline")...)))
	b.WithPanel(ts("GPU saturation", "Per GPU: SM active where profiling metrics exist, else graphics-engine activity, else utilisation (0..1); a notice says which was used.",
		"percentunit", 24, 8, query("queryType", "gpu", "targets", []string{"$target"}, "signals", []string{"saturation"})))
	return b
}

// Latency is the deep dive: every stage's quantiles with their bands, and
// the bucket advice for the quantiles that matter.
func Latency() *dashboard.DashboardBuilder {
	b := base(UIDLatency, "Inferscope — latency deep dive",
		"Every latency stage with its quantiles and their honest bounds, and where the histograms' buckets are too coarse.",
		targetVar(), modelVar(), profileVar(), estimatorVar()).
		Annotation(eventsAnnotation())
	for _, st := range stageTitles {
		b.WithPanel(ts(st.title, latencyDesc, "s", 12, 8,
			query(withProfile("queryType", "latency", "stages", []string{st.stage}, "stats", []string{"mean", "p50", "p90", "p99"}, "estimator", "$estimator", "bounds", true)...)))
	}
	b.WithPanel(tbl("Bucket advice", "For each stage's p50, p90 and p99: the bucket the quantile falls in, its width relative to the value, clamping, and extra bucket bounds that would bring the error under 10 %, as JSON for vLLM's --custom-histogram-buckets.",
		24, 10, query(withProfile("queryType", "buckets", "stages", []string{"ttft", "itl", "e2e", "queue_time"}, "stats", []string{"p50", "p90", "p99"})...)))
	return b
}

// SLO is attainment, budget, burn rates and goodput.
func SLO() *dashboard.DashboardBuilder {
	b := base(UIDSLO, "Inferscope — SLO and error budget",
		"Attainment of the selected profile's objectives, error budget left, burn rates per window and goodput bounds.",
		targetVar(), modelVar(), profileVar()).
		Annotation(eventsAnnotation())
	b.WithPanel(tbl("Objectives", "Per objective and target: attainment over the range, the observed quantile at the objective's ratio with its bucket bounds, budget left over the period, burn rate per window and status by the multi-window multi-burn-rate rule (SRE Workbook).",
		24, 8, query(withProfile("queryType", "slo", "groupBy", "target")...)))
	b.WithPanel(ts("Burn rate per window", "Error ratio / (1 − objective) over 5m, 30m, 1h, 2h, 6h, 1d and 3d. 1 spends the budget exactly over the period; the page rule is 14.4 (1h and 5m) or 6 (6h and 30m).",
		"short", 12, 9, query(withProfile("queryType", "burn_rate", "groupBy", "target")...)))
	b.WithPanel(ts("Goodput bounds", "Requests per second meeting every objective of the profile at once. From separate histograms only bounds are knowable (Fréchet): [max(0, a + b − 1), min(a, b)] × request rate.",
		"reqps", 12, 9, query(withProfile("queryType", "goodput")...)))
	b.WithPanel(stat.NewPanelBuilder().
		Title("Error budget left").
		Description("Per objective: 1 − bad requests / allowed bad requests over the objective's period (request-weighted), 0..1; below 0 the budget is overspent.").
		Datasource(dsRef).Span(24).Height(5).Unit("percentunit").
		ReduceOptions(common.NewReduceDataOptionsBuilder().Values(true).Calcs([]string{"lastNotNull"}).Fields("/^budget_remaining$/")).
		WithTarget(query(withProfile("queryType", "slo", "groupBy", "target")...)))
	return b
}

// GPU shows every GPU of the agents behind the selected targets.
func GPU() *dashboard.DashboardBuilder {
	b := base(UIDGPU, "Inferscope — GPUs",
		"Per GPU: saturation, memory, power against its limit, temperature, clocks and throttle reasons, from the Inferscope GPU agent or dcgm-exporter.",
		targetVar(), gpuVar()).
		Annotation(eventsAnnotation())
	gq := func(signals ...string) queryBuilder {
		return query("queryType", "gpu", "targets", []string{"$target"}, "gpus", []string{"$gpu"}, "signals", signals)
	}
	b.WithPanel(ts("Saturation", "SM active where profiling metrics exist, else graphics-engine activity, else utilisation (0..1).", "percentunit", 12, 8, gq("saturation")))
	b.WithPanel(ts("SM, DRAM and tensor activity", "Profiling ratios 0..1: SM active, DRAM active (memory bandwidth), tensor pipes active.", "percentunit", 12, 8, gq("sm_active", "dram_active", "tensor_active")))
	b.WithPanel(ts("Power against its limit", "Power drawn and the enforced power limit, in watts: a draw pinned at the limit with a falling SM clock is a power cap.", "watt", 12, 8, gq("power", "power_limit")))
	b.WithPanel(ts("Temperature", "GPU die temperature in °C, from NVML or DCGM_FI_DEV_GPU_TEMP; a rising temperature with a falling SM clock is thermal throttling.", "celsius", 12, 8, gq("temperature")))
	b.WithPanel(ts("SM clock against its maximum", "Current and maximum SM clock in hertz: a current clock well below the maximum under load means the GPU is being held back (see throttle reasons).", "hertz", 12, 8, gq("sm_clock", "sm_clock_max")))
	b.WithPanel(ts("Framebuffer memory", "Framebuffer used and installed, in bytes.", "bytes", 12, 8, gq("fb_used", "fb_total")))
	b.WithPanel(timeline("Throttle reasons", "NVML clocks-event reasons over time: hardware slowdown, thermal and power-brake reasons slow the GPU down.", 24, 7, gq("throttle_reasons")))
	return b
}

// Targets is the inventory: what each target is, whether it answers, what
// it exports.
func Targets() *dashboard.DashboardBuilder {
	b := base(UIDTargets, "Inferscope — targets",
		"Every configured target: engine, version, models, scrape health and what it exports.",
		targetVar()).
		Annotation(eventsAnnotation())
	b.WithPanel(tbl("Inventory", "One row per target and GPU agent: engine, V0/V1, version range, models, up, last scrape, scrape duration, stored series, the last scrape error and the signals it exports.",
		24, 10, query("queryType", "targets", "targets", []string{"$target"})))
	b.WithPanel(tbl("Events", "Engine restarts, up/down transitions, model, engine, version and configuration changes per target, from the stored counters and labels.",
		24, 8, query("queryType", "events", "targets", []string{"$target"})))
	return b
}

// All lists every dashboard with the file it is written to.
func All() map[string]*dashboard.DashboardBuilder {
	return map[string]*dashboard.DashboardBuilder{
		"inferscope-overview.json": Overview(),
		"inferscope-latency.json":  Latency(),
		"inferscope-slo.json":      SLO(),
		"inferscope-gpu.json":      GPU(),
		"inferscope-targets.json":  Targets(),
		"inferscope-cost.json":     Cost(),
	}
}
