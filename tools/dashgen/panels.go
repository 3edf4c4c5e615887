package main

import (
	"strings"

	"github.com/grafana/grafana-foundation-sdk/go/cog"
	"github.com/grafana/grafana-foundation-sdk/go/common"
	"github.com/grafana/grafana-foundation-sdk/go/dashboard"
	"github.com/grafana/grafana-foundation-sdk/go/stat"
	"github.com/grafana/grafana-foundation-sdk/go/table"
	"github.com/grafana/grafana-foundation-sdk/go/timeseries"
)

// Units: one per axis. Grafana has no tokens-per-second unit, so tokens/s is
// a custom suffix unit; everything else is one of Grafana's own unit ids.
const (
	unitRPS     = "reqps"
	unitTokens  = "count:tok/s"
	unitSeconds = "s"
	unitRatio   = "percentunit"
	unitCount   = "short"
	unitNone    = "none"
)

// Colours of the threshold steps and value mappings (Grafana's palette names).
const (
	green  = "green"
	amber  = "#EAB839"
	orange = "orange"
	red    = "red"
	blue   = "blue"
	grey   = "text"
)

// step is one threshold step: from Value (nil = −∞) the colour is Color.
type step struct {
	value *float64
	color string
}

func from(v float64, color string) step { return step{&v, color} }
func baseColor(color string) step       { return step{nil, color} }

// thresholds builds absolute thresholds from ordered steps (the lint test
// checks the order).
func thresholds(steps ...step) *dashboard.ThresholdsConfigBuilder {
	out := make([]dashboard.Threshold, len(steps))
	for k, s := range steps {
		out[k] = dashboard.Threshold{Value: s.value, Color: s.color}
	}
	return dashboard.NewThresholdsConfigBuilder().Mode(dashboard.ThresholdsModeAbsolute).Steps(out)
}

// upperBad: green below warn, amber from warn, red from crit (latencies, error ratios).
func upperBad(warn, crit float64) *dashboard.ThresholdsConfigBuilder {
	return thresholds(baseColor(green), from(warn, amber), from(crit, red))
}

// lowerBad: red below crit, amber below warn, green from warn (availability, budget).
func lowerBad(crit, warn float64) *dashboard.ThresholdsConfigBuilder {
	return thresholds(baseColor(red), from(crit, amber), from(warn, green))
}

// neutral thresholds for panels whose value has no good or bad side.
func neutral() *dashboard.ThresholdsConfigBuilder { return thresholds(baseColor(blue)) }

// burnRateThresholds: the reference lines of the multi-window multi-burn-rate
// rule (SRE Workbook ch. 5): 1 spends the budget exactly over the period, 6
// over 5 days (ticket), 14.4 over ~2 days (page).
func burnRateThresholds() *dashboard.ThresholdsConfigBuilder {
	return thresholds(baseColor(green), from(1, amber), from(6, orange), from(14.4, red))
}

// mapping helpers. textResult with an empty text is a colour-only result: it
// carries no text, so the cell keeps its value (Grafana writes a mapping's
// text literally; "${__value.text}" there showed as that template).
func textResult(text, color string) dashboard.ValueMappingResult {
	r := dashboard.ValueMappingResult{}
	if text != "" {
		r.Text = ptr(text)
	}
	if color != "" {
		r.Color = ptr(color)
	}
	return r
}

func valueMap(opts map[string]dashboard.ValueMappingResult) dashboard.ValueMapping {
	for k, r := range opts {
		r.Index = nil
		opts[k] = r
	}
	return dashboard.ValueMapping{ValueMap: &dashboard.ValueMap{Type: dashboard.MappingTypeValueToText, Options: opts}}
}

func nullMap(text string) dashboard.ValueMapping {
	return dashboard.ValueMapping{SpecialValueMap: &dashboard.SpecialValueMap{
		Type:    dashboard.MappingTypeSpecialValue,
		Options: dashboard.DashboardSpecialValueMapOptions{Match: dashboard.SpecialValueMatchNullAndNan, Result: textResult(text, grey)},
	}}
}

func rangeMap(lo, hi *float64, text, color string) dashboard.ValueMapping {
	return dashboard.ValueMapping{RangeMap: &dashboard.RangeMap{
		Type:    dashboard.MappingTypeRangeToText,
		Options: dashboard.DashboardRangeMapOptions{From: lo, To: hi, Result: textResult(text, color)},
	}}
}

// statusMappings colours the SLO status words (and their numbers 0/1/2).
func statusMappings() []dashboard.ValueMapping {
	return []dashboard.ValueMapping{valueMap(map[string]dashboard.ValueMappingResult{
		"ok":     textResult("OK", green),
		"ticket": textResult("Ticket", amber),
		"page":   textResult("Page", red),
		"0":      textResult("OK", green),
		"1":      textResult("Ticket", amber),
		"2":      textResult("Page", red),
	})}
}

// prop builds one override property.
func prop(id string, v any) dashboard.DynamicConfigValue {
	return dashboard.DynamicConfigValue{Id: id, Value: v}
}

func props(p ...dashboard.DynamicConfigValue) []dashboard.DynamicConfigValue { return p }

func thresholdsProp(t *dashboard.ThresholdsConfigBuilder) dashboard.DynamicConfigValue {
	v, _ := t.Build()
	return prop("thresholds", v)
}

func cellColor(mode string) dashboard.DynamicConfigValue {
	return prop("custom.cellOptions", map[string]any{"type": mode})
}

func colorBackground() dashboard.DynamicConfigValue {
	return prop("custom.cellOptions", map[string]any{"type": "color-background", "mode": "basic"})
}

func colorText() dashboard.DynamicConfigValue { return cellColor("color-text") }

func gaugeCell() dashboard.DynamicConfigValue {
	return prop("custom.cellOptions", map[string]any{"type": "gauge", "mode": "basic", "valueDisplayMode": "text"})
}

// transformation builds one transformation step.
func transformation(id string, options map[string]any) dashboard.DataTransformerConfig {
	return dashboard.DataTransformerConfig{Id: id, Options: options}
}

// keepFields keeps the time field and the fields whose display name matches
// the JavaScript regular expression re.
func keepFields(re string) dashboard.DataTransformerConfig {
	return transformation("filterFieldsByName", map[string]any{"include": map[string]any{"pattern": "^(?:Time|time|" + re + ")$"}})
}

// dropFields removes the fields whose display name matches re (anchored).
func dropFields(re string) dashboard.DataTransformerConfig {
	return transformation("filterFieldsByName", map[string]any{"exclude": map[string]any{"pattern": "^(?:" + re + ")$"}})
}

// rowTotal replaces the fields by their sum per row (time step), named alias.
func rowReduce(reducer, alias string, replace bool) dashboard.DataTransformerConfig {
	return transformation("calculateField", map[string]any{
		"mode":          "reduceRow",
		"reduce":        map[string]any{"reducer": reducer},
		"alias":         alias,
		"replaceFields": replace,
	})
}

// Legends and tooltips: every panel makes a legend decision.

// legendList is a bottom list legend (few series, no numbers needed).
func legendList() *common.VizLegendOptionsBuilder {
	return common.NewVizLegendOptionsBuilder().ShowLegend(true).DisplayMode(common.LegendDisplayModeList).Placement(common.LegendPlacementBottom).Calcs([]string{})
}

// legendTable is a bottom table legend with mean, max and last per series,
// sorted by the largest mean first.
func legendTable() *common.VizLegendOptionsBuilder {
	return common.NewVizLegendOptionsBuilder().ShowLegend(true).DisplayMode(common.LegendDisplayModeTable).Placement(common.LegendPlacementBottom).
		Calcs([]string{"mean", "max", "lastNotNull"}).SortBy("Mean").SortDesc(true)
}

// legendTableMaxLast is legendTable with max and last only, largest max first, for narrow
// panels whose series names are long (target and statistic).
func legendTableMaxLast() *common.VizLegendOptionsBuilder {
	return common.NewVizLegendOptionsBuilder().ShowLegend(true).DisplayMode(common.LegendDisplayModeTable).Placement(common.LegendPlacementBottom).
		Calcs([]string{"max", "lastNotNull"}).SortBy("Max").SortDesc(true)
}

// legendH is the height of a panel whose bottom table legend must show 4
// series (legendRows(10) = 4).
const legendH = 10

// legendRight is a table legend on the right, width px wide, with max and
// last per series, sorted by the largest max first (worst first): panels
// with many series (several statistics or signals per target) get the
// panel's full height for their legend instead of 35 % of it.
func legendRight(width float64) *common.VizLegendOptionsBuilder {
	return common.NewVizLegendOptionsBuilder().ShowLegend(true).DisplayMode(common.LegendDisplayModeTable).Placement(common.LegendPlacementRight).
		Width(width).Calcs([]string{"max", "lastNotNull"}).SortBy("Max").SortDesc(true)
}

// tooltipMulti shows every series at the cursor, largest first.
func tooltipMulti() *common.VizTooltipOptionsBuilder {
	return common.NewVizTooltipOptionsBuilder().Mode(common.TooltipDisplayModeMulti).Sort(common.SortOrderDescending)
}

// ts is a time-series panel with one unit for its axis, a list legend and a
// multi tooltip; callers switch to a table legend where numbers matter.
func ts(title, desc, unit string, w, h uint32, qs ...queryBuilder) *timeseries.PanelBuilder {
	b := timeseries.NewPanelBuilder().
		Title(title).Description(desc).
		Datasource(dsRef).Span(w).Height(h).
		Unit(unit).
		Legend(legendList()).
		Tooltip(tooltipMulti()).
		LineWidth(1).FillOpacity(10).
		ShowPoints(common.VisibilityModeNever).
		SpanNulls(common.BoolOrFloat64{Bool: ptr(false)}).
		Thresholds(neutral()).
		ColorScheme(dashboard.NewFieldColorBuilder().Mode(dashboard.FieldColorModeIdPaletteClassic))
	for _, q := range qs {
		b.WithTarget(q)
	}
	return b
}

// latencyTS is a latency time series: seconds, table legend with mean, max
// and last, the objective's threshold drawn as a dashed line where the
// query names a profile (the data source sets it per series).
//
// A quantile's bucket bounds (series with bound="lower"/"upper", named
// "… lower"/"… upper") are kept out of the plot and the legend and shown in
// the tooltip: hovering a quantile reads the bucket it lies in, and no
// panel is filled by bands. The max series (stat max) is dashed.
//
// A description that does not name its estimator gets estimatorNote (issue 33, review 33-8:
// only the latency page said which estimator placed its quantiles).
func latencyTS(title, desc string, w, h uint32, qs ...queryBuilder) *timeseries.PanelBuilder {
	if !strings.Contains(desc, "estimator") {
		desc += " " + estimatorNote
	}
	return ts(title, desc, unitSeconds, w, h, qs...).
		Legend(legendTable()).
		FillOpacity(0).
		ThresholdsStyle(common.NewGraphThresholdsStyleConfigBuilder().Mode(common.GraphThresholdsStyleModeDashed)).
		OverrideByRegexp(boundSeries, props(prop("custom.hideFrom", map[string]any{"viz": true, "legend": true, "tooltip": false}), prop("custom.fillOpacity", 0))).
		OverrideByRegexp(maxSeries, props(prop("custom.lineStyle", map[string]any{"fill": "dash", "dash": []int{6, 4}}), prop("custom.lineWidth", 1))).
		// The spike markers (stat="spike": 1 in a window whose p99 crossed the
		// objective's threshold) are kept for the tooltip only: drawn, they
		// were grey shading on an unlabelled 0–1 right axis (issue 33); the
		// threshold line says the same against the p99.
		OverrideByRegexp(spikeSeries, props(prop("custom.hideFrom", map[string]any{"viz": true, "legend": true, "tooltip": false}), prop("unit", unitCount)))
}

// quantileColour is each statistic's colour where the target has none of its own: light to
// dark as the quantile rises, max in the theme's text colour (dashed).
var quantileColour = []struct{ stat, colour string }{
	{"mean", "#A9B4C2"}, {"p50", "#C0D8FF"}, {"p90", "#6ED0E0"}, {"p95", "#8AB8FF"}, {"p99", "#8F3BB8"}, {"max", grey},
}

// spikeSeries matches the display names of the spike markers (stat spike).
const spikeSeries = `.*spike.*`

// boundSeries matches the display names of a quantile's bucket bounds.
const boundSeries = `.* (lower|upper)( ·.*)?`

// latencyBoundsTargetName names a latency series target first with its
// statistic and, for a bucket bound, the bound ("vllm-a p99 lower"), so the
// bound, max and colour overrides still match and a cut legend keeps the
// target (the frames' names, "ttft p99 · target=vllm-a", put it last).
const latencyBoundsTargetName = "${__field.labels.target} ${__field.labels.stat} ${__field.labels.bound}"

// maxSeries matches the display names of the max series (stat max); the
// " ?"s take latencyBoundsTargetName's and modelLatencyName's empty bound
// (Grafana anchors a field-name regexp at both ends).
const maxSeries = `.* max ?( ·.*)? ?`

// quantileColours gives each statistic of a latency panel its own colour where no target
// colour applies (a target the generator was not told about, targetPalette): none is a status
// colour (issue 33: the models dashboard drew p99 in green, which reads "good", and red p99s
// read as the SLO line). The demo's and the listed targets get their hue's shade per
// statistic instead (setTargetColours): the same statistic, the same shade, on every
// dashboard.
func quantileColours(b *timeseries.PanelBuilder) *timeseries.PanelBuilder {
	for _, c := range quantileColour {
		b.OverrideByRegexp(`.* `+c.stat+`( (lower|upper))? ?( ·.*)? ?`, props(prop("color", map[string]any{"mode": "fixed", "fixedColor": c.colour})))
	}
	// The statistic is also told by its line (issue 33), for readers who cannot tell the
	// shades apart: p99 solid and thick, p95 long dashes, p50 dots, max short dashes
	// (latencyTS).
	b.OverrideByRegexp(`.* p99 ?( ·.*)? ?`, props(prop("custom.lineWidth", 2)))
	b.OverrideByRegexp(`.* p95 ?( ·.*)? ?`, props(prop("custom.lineStyle", map[string]any{"fill": "dash", "dash": []int{12, 6}})))
	b.OverrideByRegexp(`.* p50 ?( ·.*)? ?`, props(prop("custom.lineStyle", map[string]any{"fill": "dot", "dash": []int{0, 6}}), prop("custom.lineWidth", 2)))
	return b
}

// statPanel is a single-number panel with a last-hour sparkline.
func statPanel(title, desc, unit string, w, h uint32, t *dashboard.ThresholdsConfigBuilder, qs ...queryBuilder) *stat.PanelBuilder {
	b := stat.NewPanelBuilder().
		Title(title).Description(desc).
		Datasource(dsRef).Span(w).Height(h).
		Unit(unit).
		Thresholds(t).
		GraphMode(common.BigValueGraphModeArea).
		ColorMode(common.BigValueColorModeValue).
		TextMode(common.BigValueTextModeValue).
		JustifyMode(common.BigValueJustifyModeCenter).
		Orientation(common.VizOrientationAuto).
		ReduceOptions(common.NewReduceDataOptionsBuilder().Values(false).Calcs([]string{"lastNotNull"})).
		Mappings([]dashboard.ValueMapping{nullMap("no traffic")})
	for _, q := range qs {
		b.WithTarget(q)
	}
	return b
}

// tbl is a table panel; its columns are organised by overrides.
func tbl(title, desc string, w, h uint32, qs ...queryBuilder) *table.PanelBuilder {
	b := table.NewPanelBuilder().
		Title(title).Description(desc).
		Datasource(dsRef).Span(w).Height(h).
		Unit(unitNone).
		Thresholds(neutral()).
		CellHeight(common.TableCellHeightSm).
		Filterable(false)
	for _, q := range qs {
		b.WithTarget(q)
	}
	return b
}

// emptyCell is the override of a table with a panel-level noValue hint:
// Grafana shows a field's noValue in its empty cells too, so every field
// gets a dash and the hint shows only when the query returns no field.
func emptyCell() []dashboard.DynamicConfigValue { return props(prop("noValue", "–")) }

// row is a dashboard row (not collapsed, so its panels load with the page).
func row(title string) *dashboard.RowBuilder { return dashboard.NewRowBuilder(title) }

// dashLink links to another Inferscope dashboard, keeping the time range and
// the variables.
func dashLink(title, uid string) cog.Builder[dashboard.DashboardLink] {
	return dashboard.NewDashboardLinkBuilder(title).
		Type(dashboard.DashboardLinkTypeLink).
		Url("/d/" + uid).
		Icon("dashboard").
		Tooltip("Open " + title + " with this time range and these variables").
		IncludeVars(true).
		KeepTime(true)
}

// perTargetTile makes a stat tile of a query grouped by target show one
// value per target, each named by its target (issue 33: the overview's "Now"
// tiles merged both targets, or summed them, and named neither).
func perTargetTile(p *stat.PanelBuilder) *stat.PanelBuilder {
	return p.TextMode(common.BigValueTextModeValueAndName).DisplayName(perTargetTileName)
}

// perTargetTileName names a per-target tile's value by its target.
const perTargetTileName = "${__field.labels.target}"

// finishReasonColors is the colour of each finish reason on every dashboard
// (issue 33: abort was red on one panel, amber on the next and green on the
// models dashboard, length the palette's yellow beside an amber abort).
var finishReasonColors = map[string]string{"stop": green, "length": "purple", "abort": orange, "error": red}

// finishReasonColor is the override property of a finish reason's series:
// its fixed colour from finishReasonColors.
func finishReasonColor(reason string) []dashboard.DynamicConfigValue {
	return props(prop("color", map[string]any{"mode": "fixed", "fixedColor": finishReasonColors[reason]}))
}

// finishReasons are the finish reasons in the order their colours are set.
var finishReasons = []string{"stop", "length", "abort", "error"}

// finishReasonColours gives p's requests/s series of each finish reason its
// colour (finishReasonColor).
func finishReasonColours(p *timeseries.PanelBuilder) *timeseries.PanelBuilder {
	for _, r := range finishReasons {
		p = p.OverrideByRegexp(`requests/s `+r+`.*`, finishReasonColor(r))
	}
	return p
}

// finishReasonsStacked is the throughput query's requests/s by finish reason,
// grouped by groupBy and stacked by mode (normal: the stack's height is the
// request rate; percent: each reason's share), each reason in its colour.
func finishReasonsStacked(title, desc, groupBy string, mode common.StackingMode) *timeseries.PanelBuilder {
	return finishReasonColours(ts(title, desc, unitRPS, 12, legendH, query(sel("queryType", "throughput", "groupBy", groupBy)...)).
		Transformations([]dashboard.DataTransformerConfig{keepFields(`requests/s.*`)}).
		Stacking(common.NewStackingConfigBuilder().Mode(mode).Group("A")).
		FillOpacity(60).
		Legend(legendTable()))
}

// estimatorNote says which estimator places a panel's quantiles: prometheus, on every page
// (issue 33, review 33-8 D6: the latency page's refined p99 differed from the overview's).
const estimatorNote = "Quantiles by the prometheus estimator (histogram_quantile's linear interpolation inside the bucket), as on every page and in the SLO tables' observed quantile; the latency deep dive can switch to refined."
