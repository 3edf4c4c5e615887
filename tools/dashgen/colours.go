package main

import (
	"fmt"
	"os"
	"regexp"
	"slices"

	"github.com/grafana/grafana-foundation-sdk/go/dashboard"
	"gopkg.in/yaml.v3"
)

// hue is one colour of the target palette with its shade per latency statistic: the target
// names the hue, the statistic the shade (p50 lightest, p99 the hue itself, max darkest), so a
// series' colour says both on every dashboard. Mean shares p50's shade and p90 p95's: no
// panel draws them together.
type hue struct{ name, p50, p95, p99, max string }

// targetPalette gives the targets of the data source their colours in the order its settings
// list them (issue 33: the colours were hand-written for the demo's two target names, so a
// user's own targets took the classic palette, a different colour on each panel). None is
// green, yellow, orange or red: those mean good, warning and bad on thresholds and SLO lines.
// The first two are Grafana's named blue and purple shades; the others have no named shades
// in Grafana's palette and are written as hex. After six targets the hues repeat.
//
// p50 is the light shade, not the super-light one (issue 33, review 7: both targets' p50 were
// near-white dotted lines with identical legend swatches); p95 sits between it and the hue.
var targetPalette = []hue{
	{"blue", "light-blue", "#5E96EC", "blue", "dark-blue"},
	{"purple", "light-purple", "#B673D8", "purple", "dark-purple"},
	{"cyan", "#6ED0E0", "#47C4D8", "#1FB8CF", "#0A7E91"},
	{"magenta", "#E88FDB", "#DF76D1", "#D65CC6", "#A3339A"},
	{"slate", "#A9B4C2", "#94A0B0", "#7F8C9D", "#56606E"},
	{"indigo", "#9D97EB", "#877FE5", "#7067DE", "#4A40B8"},
}

// shade is the colour of statistic stat of a target of hue h ("" for a statistic without
// one of its own).
func (h hue) shade(stat string) string {
	switch stat {
	case "p50", "mean":
		return h.p50
	case "p90", "p95":
		return h.p95
	case "p99":
		return h.p99
	case "max":
		return h.max
	}
	return ""
}

// targetHue is the hue of the k-th target of the data source's settings.
func targetHue(k int) hue { return targetPalette[k%len(targetPalette)] }

// datasourceFile is the data-source provisioning file whose targets get the palette's colours
// in order; dashgen's -datasource flag points it at a user's own file.
var datasourceFile = "../../provisioning/datasources/inferscope.yaml"

// colourTargets are the target names given fixed colours; nil reads them from datasourceFile
// (dashgen's -targets flag sets them directly).
var colourTargets []string

// datasourceTargets reads the inference targets of the data sources in a provisioning file,
// in the order their settings list them.
func datasourceTargets(path string) ([]string, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("target colours: %w", err)
	}
	var ds struct {
		Datasources []struct {
			JSONData struct {
				Targets []struct {
					Name string `yaml:"name"`
				} `yaml:"targets"`
			} `yaml:"jsonData"`
		} `yaml:"datasources"`
	}
	if err := yaml.Unmarshal(raw, &ds); err != nil {
		return nil, fmt.Errorf("target colours: %s: %w", path, err)
	}
	var out []string
	for _, d := range ds.Datasources {
		for _, t := range d.JSONData.Targets {
			if t.Name != "" && !slices.Contains(out, t.Name) {
				out = append(out, t.Name)
			}
		}
	}
	return out, nil
}

// targetSeries matches a display name that names target as a whole word: first
// ("vllm-a p99 "), after a separator ("power · vllm-a on gpu-a GPU 0"), as a label value
// ("running · target=vllm-a", "…, serving=vllm-a on gpu-a, …": the data source's own name,
// which the matcher reads where a transformation ran first) or alone. Grafana anchors a
// field-name regexp at both ends.
func targetSeries(target string) string {
	return `(.*[ ·=])?` + regexp.QuoteMeta(target) + `([ ·,].*)?`
}

// targetStatSeries matches a display name of target's statistic stat: the target as a whole
// word, then stat as a later word ("vllm-a p99 ", "vllm-a p99 lower", "vllm-a · model ttft
// p99 ").
func targetStatSeries(target, stat string) string {
	return `(.*[ ·=])?` + regexp.QuoteMeta(target) + `[ ·,](.*[ ·])?` + stat + `( .*)?`
}

// shadedPanels are the time series with several lines per target that colours tell apart
// (burn rate per window, cost per stage, SM/DRAM/tensor activity, mean time per stage): each
// target's lines are shades of the target's colour (Grafana's "shades" colour mode), so the
// hue still says which target and the shade which signal.
var shadedPanels = map[string]bool{
	burnChartTitle:                         true,
	"Cost per hour: idle, prefill, decode": true,
	"SM, DRAM and tensor activity":         true,
	"Where the time goes (mean per stage)": true,
	stageBreakdownTitle:                    true,
}

// shadedStats are the latency statistics that take their own shade of a target's hue.
var shadedStats = []string{"p50", "p90", "p95", "p99", "max"}

// isLatencyPanel reports whether a panel reads the latency query (series per statistic).
func isLatencyPanel(p *dashboard.Panel) bool {
	for _, t := range p.Targets {
		if q, ok := t.(Query); ok && q.Fields["queryType"] == "latency" {
			return true
		}
	}
	return false
}

// setTargetColours appends one colour override per target to every time series (open or in
// a collapsed row), after the panel's own overrides so it wins over them (statistics keep
// their line style): the target's hue, or its shades on shadedPanels; on latency panels, one
// more per target and statistic with the statistic's shade of the hue.
func setTargetColours(ps []dashboard.PanelOrRowPanel, targets []string) {
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
		add := func(re, colour string) {
			p.FieldConfig.Overrides = append(p.FieldConfig.Overrides, dashboard.DashboardFieldConfigSourceOverrides{
				Matcher:    dashboard.MatcherConfig{Id: "byRegexp", Options: re},
				Properties: props(prop("color", map[string]any{"mode": mode, "fixedColor": colour})),
			})
		}
		latency := isLatencyPanel(p)
		for k, tg := range targets {
			h := targetHue(k)
			add(targetSeries(tg), h.p99)
			if latency {
				for _, st := range shadedStats {
					add(targetStatSeries(tg, st), h.shade(st))
				}
			}
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
