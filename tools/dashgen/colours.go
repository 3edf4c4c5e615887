package main

import (
	"regexp"

	"github.com/grafana/grafana-foundation-sdk/go/dashboard"
)

// targetColours gives each target of the shipped data source
// (provisioning/datasources/inferscope.yaml) one fixed colour, the same on every time
// series of every dashboard (issue 33: the palette gave a target green on one panel and
// yellow on the next, and its yellow is the amber of the 85 % threshold line beside it).
// None is green, yellow, orange or red: those mean good, warning and bad on thresholds and
// SLO lines. Targets not listed keep Grafana's classic palette.
var targetColours = []struct{ target, colour string }{
	{"vllm-healthy", "blue"},
	{"vllm-kv-pressure", "purple"},
}

// targetSeries matches a display name that names target as a whole word: first
// ("vllm-a p99 "), after a separator ("power · vllm-a on gpu-a GPU 0"), as a label value
// ("running · target=vllm-a", "…, serving=vllm-a on gpu-a, …": the data source's own name,
// which the matcher reads where a transformation ran first) or alone. Grafana anchors a
// field-name regexp at both ends.
func targetSeries(target string) string {
	return `(.*[ ·=])?` + regexp.QuoteMeta(target) + `([ ·,].*)?`
}

// shadedPanels are the time series with several lines per target that colours tell apart
// (burn rate per window, cost per stage, SM/DRAM/tensor activity, mean time per stage): each
// target's lines are shades of the target's colour (Grafana's "shades" colour mode), so the
// hue still says which target and the shade which signal.
var shadedPanels = map[string]bool{
	"Burn rate per window":                 true,
	"Cost per hour: idle, prefill, decode": true,
	"SM, DRAM and tensor activity":         true,
	"Where the time goes (mean per stage)": true,
}

// setTargetColours appends one colour override per target of targetColours to every time
// series (open or in a collapsed row), after the panel's own overrides so it wins over the
// per-statistic colours (statistics keep their line style): the target's colour, or its
// shades on shadedPanels.
func setTargetColours(ps []dashboard.PanelOrRowPanel) {
	set := func(p *dashboard.Panel) {
		if p.Type != "timeseries" || p.Title == nil {
			return
		}
		mode := "fixed"
		if shadedPanels[*p.Title] {
			mode = "shades"
		}
		if p.FieldConfig == nil {
			p.FieldConfig = dashboard.NewFieldConfigSource()
		}
		for _, tc := range targetColours {
			p.FieldConfig.Overrides = append(p.FieldConfig.Overrides, dashboard.DashboardFieldConfigSourceOverrides{
				Matcher:    dashboard.MatcherConfig{Id: "byRegexp", Options: targetSeries(tc.target)},
				Properties: props(prop("color", map[string]any{"mode": mode, "fixedColor": tc.colour})),
			})
		}
	}
	for k := range ps {
		if p := ps[k].Panel; p != nil {
			set(p)
		}
		if r := ps[k].RowPanel; r != nil {
			for j := range r.Panels {
				set(&r.Panels[j])
			}
		}
	}
}
