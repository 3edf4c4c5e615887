package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// The fifth review of issue 33 found, on the screenshots: a target green on one panel and
// yellow on the next, both targets' p99 the same red (and the SLO line red too), a target's
// yellow beside the amber 85 % line ("double yellow"), the overview's "Where the time goes"
// and GPU saturation tile mixing both targets into one series, and gauge names cut to
// "… · G…". Each test below failed on the dashboards committed before that review.

// provisionedTargets are the inference targets of the shipped data source, read from its
// provisioning file (not from dashgen).
func provisionedTargets(t *testing.T) []string {
	t.Helper()
	var ds struct {
		Datasources []struct {
			JSONData struct {
				Targets []struct {
					Name string `yaml:"name"`
				} `yaml:"targets"`
			} `yaml:"jsonData"`
		} `yaml:"datasources"`
	}
	readYAML(t, "provisioning/datasources/inferscope.yaml", &ds)
	var out []string
	for _, d := range ds.Datasources {
		for _, tg := range d.JSONData.Targets {
			out = append(out, tg.Name)
		}
	}
	if len(out) < 2 {
		t.Fatalf("%d targets provisioned, want the demo's two", len(out))
	}
	return out
}

// seriesColour is the colour Grafana gives a series of display name name on panel p: the
// last override that matches it (byName exactly, byRegexp anchored at both ends) and sets
// color, else the panel default; "" where neither fixes a colour (the palette's turn).
func seriesColour(p map[string]any, name string) (mode, colour string) {
	pick := func(c any) {
		cm, _ := c.(map[string]any)
		if m, _ := cm["mode"].(string); m == "fixed" || m == "shades" {
			mode, colour = m, cm["fixedColor"].(string)
		} else if m != "" {
			mode, colour = m, ""
		}
	}
	pick(get(p, "fieldConfig", "defaults", "color"))
	ovs, _ := get(p, "fieldConfig", "overrides").([]any)
	for _, o := range ovs {
		om := o.(map[string]any)
		id, _ := get(om, "matcher", "id").(string)
		opt, _ := get(om, "matcher", "options").(string)
		match := false
		switch id {
		case "byName":
			match = opt == name
		case "byRegexp":
			re, err := regexp.Compile("^(?:" + opt + ")$")
			match = err == nil && re.MatchString(name)
		}
		if !match {
			continue
		}
		props, _ := om["properties"].([]any)
		for _, pr := range props {
			pm := pr.(map[string]any)
			if pm["id"] == "color" {
				pick(pm["value"])
			}
		}
	}
	return mode, colour
}

// targetNames are display names the dashboards give a target's series (latency statistic,
// bound-less latency name, GPU signal, burn rate, cost statistic, the target alone).
func targetNames(target string) []string {
	return []string{target, target + " p99 ", target + " p99", target + " max ", target + " queue",
		"sm_active · " + target + " on gpu-x GPU 0", target + " on gpu-x · GPU 0", target + " · ttft-p99 1h",
		target + " cost_per_request ",
		// The data source's own names (displayNameFromDS), which Grafana's byRegexp matcher
		// reads where a transformation ran before the panel's displayName applies.
		"running · target=" + target, "saturation · gpu=0, serving=" + target + " on gpu-x, source=sm_active"}
}

// TestTargetsKeepOneColourOnEveryPanel: a target's series have one colour on every time
// series of every dashboard (or shades of it, on panels with several signals per target),
// and two targets never share one.
func TestTargetsKeepOneColourOnEveryPanel(t *testing.T) {
	targets := provisionedTargets(t)
	colourOf := map[string]string{}
	checked := 0
	for _, l := range onCallPanels(t) {
		if l.p["type"] != "timeseries" {
			continue
		}
		checked++
		for _, tg := range targets {
			for _, n := range targetNames(tg) {
				_, c := seriesColour(l.p, n)
				if c == "" {
					t.Errorf("%s: series %q takes the palette's colour, which differs from panel to panel; give target %s a fixed colour", l.where(), n, tg)
					continue
				}
				// A latency statistic has its own shade of the target's hue since the seventh
				// review (issue 33): one colour per target and statistic.
				key := tg + " "
				if strings.Contains(jsonText(l.p["targets"]), `"latency"`) {
					key += statOfName(tg, n)
				}
				if prev, ok := colourOf[key]; ok && prev != c {
					t.Errorf("%s: series %q is %s, %s elsewhere", l.where(), n, c, prev)
				}
				colourOf[key] = c
			}
		}
	}
	seen := map[string]string{}
	for key, c := range colourOf {
		if other, ok := seen[c]; ok && strings.Fields(other)[0] != strings.Fields(key)[0] {
			t.Errorf("targets %s and %s share the colour %s", key, other, c)
		}
		seen[c] = key
	}
	if checked < 30 {
		t.Errorf("%d time series checked, want every dashboard's", checked)
	}
}

// statOfName is the latency statistic (p50, p95, p99, max) series name n of target tg names
// after the target, "" for none.
func statOfName(tg, n string) string {
	rest := strings.Fields(strings.TrimPrefix(n, tg))
	if len(rest) > 0 && (rest[0] == "p50" || rest[0] == "p95" || rest[0] == "p99" || rest[0] == "max") {
		return rest[0]
	}
	return ""
}

// thresholdColours are the colours the dashboards use for good, warning and bad (threshold
// steps, SLO lines), with the palette's yellow, which is the amber (#EAB839).
var thresholdColours = map[string]bool{"green": true, "#EAB839": true, "yellow": true, "orange": true, "red": true, "dark-red": true, "semi-dark-red": true}

// TestNoTargetInAThresholdColour: a target's series is never green, yellow, orange or red,
// the colours of the dashed threshold lines (a yellow target beside the amber 85 % line read
// as a second threshold, a red p99 as the SLO line).
func TestNoTargetInAThresholdColour(t *testing.T) {
	targets := provisionedTargets(t)
	for _, l := range onCallPanels(t) {
		if l.p["type"] != "timeseries" {
			continue
		}
		for _, tg := range targets {
			for _, n := range targetNames(tg) {
				_, c := seriesColour(l.p, n)
				if c == "" {
					c = "#EAB839 (the classic palette's second colour)"
				}
				if thresholdColours[strings.Fields(c)[0]] {
					t.Errorf("%s: series %q is %s, a threshold colour", l.where(), n, c)
				}
			}
		}
	}
}

// TestStatisticsToldApartByLine: where a latency panel's statistics share their target's
// colour, p99, p95, p50 and max are drawn differently (width or dashes).
func TestStatisticsToldApartByLine(t *testing.T) {
	checked := 0
	for _, l := range onCallPanels(t) {
		if l.dash != "inferscope-latency.json" || l.p["type"] != "timeseries" || !strings.Contains(jsonText(l.p["targets"]), `"latency"`) {
			continue
		}
		checked++
		style := map[string]string{}
		for _, st := range []string{"p50", "p95", "p99", "max"} {
			name := "vllm-a " + st + " "
			var width, dash string
			ovs, _ := get(l.p, "fieldConfig", "overrides").([]any)
			for _, o := range ovs {
				om := o.(map[string]any)
				opt, _ := get(om, "matcher", "options").(string)
				if re, err := regexp.Compile("^(?:" + opt + ")$"); err != nil || !re.MatchString(name) {
					continue
				}
				for _, pr := range om["properties"].([]any) {
					pm := pr.(map[string]any)
					switch pm["id"] {
					case "custom.lineWidth":
						width = jsonText(pm["value"])
					case "custom.lineStyle":
						dash = jsonText(pm["value"])
					}
				}
			}
			s := width + "/" + dash
			for other, os := range style {
				if os == s {
					t.Errorf("%s: %s and %s are drawn alike (%s)", l.where(), st, other, s)
				}
			}
			style[st] = s
		}
	}
	if checked < 8 {
		t.Errorf("%d latency time series checked, want 8", checked)
	}
}

// TestOverviewPanelsDoNotPoolTargets: "Where the time goes" and the GPU saturation tile show
// their values per target, named by it, not one series over both targets.
func TestOverviewPanelsDoNotPoolTargets(t *testing.T) {
	found := map[string]bool{}
	for _, l := range onCallPanels(t) {
		title, _ := l.p["title"].(string)
		if l.dash != "inferscope-overview.json" || (title != "Where the time goes (mean per stage)" && (title != "GPU saturation" || l.p["type"] != "stat")) {
			continue
		}
		found[title] = true
		name, _ := get(l.p, "fieldConfig", "defaults", "displayName").(string)
		if !strings.Contains(name, "labels.target") && !strings.Contains(name, "labels.serving") {
			t.Errorf("%s: series not named by their target (displayName %q)", l.where(), name)
		}
		if strings.Contains(jsonText(l.p["transformations"]), "reduceRow") {
			t.Errorf("%s: reduces the targets' values into one", l.where())
		}
		for _, q := range l.queries() {
			if q["queryType"] == "breakdown" && q["groupBy"] != "target" {
				t.Errorf("%s: breakdown grouped by %v pools the targets; group by target", l.where(), q["groupBy"])
			}
		}
		if mode, _ := get(l.p, "fieldConfig", "defaults", "custom", "stacking", "mode").(string); mode != "" && mode != "none" {
			t.Errorf("%s: stacked (%s): a stack adds the targets' means together", l.where(), mode)
		}
	}
	if len(found) != 2 {
		t.Errorf("found %v, want both panels", found)
	}
}

// TestGaugeNamesAboveTheirBar: the screenshot harness draws a gauge panel's values with
// @grafana/ui's BarGauge; without a name placement it puts the name left of the bar in at
// most a third of the width and cut "vllm-kv-pressure on gpu-kv-pressure · GPU 0" to
// "… · G…". Grafana's gauge panel writes each name above its gauge; the harness must too.
func TestGaugeNamesAboveTheirBar(t *testing.T) {
	src, err := os.ReadFile(filepath.Join("..", "..", "harness", "panels.tsx"))
	if err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`namePlacement=\{BarGaugeNamePlacement\.Top\}`).Match(src) {
		t.Error("harness/panels.tsx draws gauges without namePlacement={BarGaugeNamePlacement.Top}: their names are cut")
	}
}

// TestBucketAdviceNamesTargetAndUnits: the latency dashboard's bucket advice has one row
// group per target with the target as a column (a pooled p99 is neither target's), shows
// what it places with its unit ("p99", "threshold 3 s", the frame's requested_label, not
// the bare number 3 of requested), and gives every column it sets a width at least its
// header's (headerWidth), so the headers do not run together.
func TestBucketAdviceNamesTargetAndUnits(t *testing.T) {
	checked := 0
	for _, l := range onCallPanels(t) {
		if l.dash != "inferscope-latency.json" || !strings.Contains(jsonText(l.p["targets"]), `"buckets"`) {
			continue
		}
		checked++
		for _, q := range l.queries() {
			if q["groupBy"] != "target" {
				t.Errorf("%s: buckets grouped by %v pools the targets; group by target", l.where(), q["groupBy"])
			}
		}
		var org map[string]any
		trs, _ := l.p["transformations"].([]any)
		for _, tr := range trs {
			if m := tr.(map[string]any); m["id"] == "organize" {
				org, _ = m["options"].(map[string]any)
			}
		}
		exclude, _ := org["excludeByName"].(map[string]any)
		rename, _ := org["renameByName"].(map[string]any)
		if exclude["target"] == true {
			t.Errorf("%s: hides the target column", l.where())
		}
		if exclude["requested"] != true || rename["requested_label"] == nil {
			t.Errorf("%s: shows requested (a quantile as 0.99 beside a threshold as a bare 3); show requested_label", l.where())
		}
		ovs, _ := get(l.p, "fieldConfig", "overrides").([]any)
		for _, o := range ovs {
			om := o.(map[string]any)
			if get(om, "matcher", "id") != "byName" {
				continue
			}
			header, _ := get(om, "matcher", "options").(string)
			for _, pr := range om["properties"].([]any) {
				pm := pr.(map[string]any)
				if pm["id"] != "custom.width" {
					continue
				}
				w, _ := pm["value"].(float64)
				if need := headerWidth(header); w < need {
					t.Errorf("%s: column %q %v px wide, its header needs %.0f", l.where(), header, w, need)
				}
			}
		}
	}
	if checked != 1 {
		t.Errorf("%d bucket advice tables, want 1", checked)
	}
}

// TestBudgetTileSaysSpentShareNotAFactor: the overview's budget tile names the budget spent
// as a share of the budget ("6% of budget spent" beside 94 % left), not as a factor with the
// unit x ("0.1 x spent" read as the 1 h burn rate, which the table shows as "burn 1h 0.1").
func TestBudgetTileSaysSpentShareNotAFactor(t *testing.T) {
	checked := 0
	for _, l := range onCallPanels(t) {
		if l.dash != "inferscope-overview.json" || !strings.Contains(jsonText(l.p["transformations"]), budgetSpentField) {
			continue
		}
		checked++
		ovs, _ := get(l.p, "fieldConfig", "overrides").([]any)
		for _, o := range ovs {
			om := o.(map[string]any)
			for _, pr := range om["properties"].([]any) {
				pm := pr.(map[string]any)
				if get(om, "matcher", "options") == budgetSpentField && pm["id"] == "unit" && pm["value"] != unitRatio {
					t.Errorf("%s: the spent budget's unit is %v, want %s (a share of the budget)", l.where(), pm["value"], unitRatio)
				}
				if name, _ := pm["value"].(string); pm["id"] == "displayName" && strings.Contains(name, budgetSpentField) && !strings.HasSuffix(name, " of ${__data.fields.budget_of} spent") {
					// budget_of is "30d budget" or "budget of the 1h stored (…)" (review 33-8).
					t.Errorf("%s: the tile reads %q, want it to end \"of <budget_of> spent\"", l.where(), name)
				}
			}
		}
	}
	if checked != 1 {
		t.Errorf("%d budget tiles with the spent share, want 1", checked)
	}
}

// TestHarnessTextInThemeColour: the screenshot page writes text in the theme's primary
// colour, as Grafana's global styles do (legends and gauge names inherited the browser's
// black and read dark grey on the near-black canvas).
func TestHarnessTextInThemeColour(t *testing.T) {
	src, err := os.ReadFile(filepath.Join("..", "..", "harness", "panels.tsx"))
	if err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`background: theme\.colors\.background\.canvas, color: theme\.colors\.text\.primary`).Match(src) {
		t.Error("harness/panels.tsx: the page's root sets no text colour")
	}
}

// TestRegressionTableSaysWhatFillsIt: the latency dashboard's regression verdicts, empty in
// a range without a change, say so instead of "No data".
func TestRegressionTableSaysWhatFillsIt(t *testing.T) {
	checked := 0
	for _, l := range onCallPanels(t) {
		if l.p["title"] != "Regression verdicts after changes" {
			continue
		}
		checked++
		nv, _ := get(l.p, "fieldConfig", "defaults", "noValue").(string)
		if !strings.Contains(nv, "change") {
			t.Errorf("%s: noValue %q does not say that a change fills it", l.where(), nv)
		}
	}
	if checked == 0 {
		t.Error("no regression verdicts table")
	}
}

// TestLatencyLegendsKeepTheStatistic: the latency deep dive's right legends are wide enough
// for the longest demo name with its statistic ("vllm-kv-pressure p99", cut to
// "vllm-kv-pressure ..." at 430 px beside "1.33 mins" columns).
func TestLatencyLegendsKeepTheStatistic(t *testing.T) {
	for _, l := range onCallPanels(t) {
		if l.dash != "inferscope-latency.json" || l.p["type"] != "timeseries" || get(l.p, "options", "legend", "placement") != "right" {
			continue
		}
		if w, _ := get(l.p, "options", "legend", "width").(float64); w < 500 {
			t.Errorf("%s: right legend %v px wide, want at least 500", l.where(), w)
		}
	}
}

// headerWidth is the width a table header of text needs: about 7 px a character at
// Grafana's 14 px header font, plus 16 px of cell padding.
func headerWidth(text string) float64 { return 7*float64(len([]rune(text))) + 16 }

// TestTableColumnsFitTheirHeaders: every table column whose width a dashboard fixes is at
// least as wide as its header (the overview's "objective ratio" read "bjective ratio").
func TestTableColumnsFitTheirHeaders(t *testing.T) {
	for _, l := range onCallPanels(t) {
		if l.p["type"] != "table" {
			continue
		}
		ovs, _ := get(l.p, "fieldConfig", "overrides").([]any)
		for _, o := range ovs {
			om := o.(map[string]any)
			if get(om, "matcher", "id") != "byName" {
				continue
			}
			header, _ := get(om, "matcher", "options").(string)
			for _, pr := range om["properties"].([]any) {
				pm := pr.(map[string]any)
				if pm["id"] == "displayName" {
					header, _ = pm["value"].(string)
				}
			}
			for _, pr := range om["properties"].([]any) {
				pm := pr.(map[string]any)
				if pm["id"] != "custom.width" {
					continue
				}
				if w, _ := pm["value"].(float64); w < headerWidth(header) {
					t.Errorf("%s: column %q %v px wide, its header needs %.0f", l.where(), header, w, headerWidth(header))
				}
			}
		}
	}
}

// TestTableOptionsAreGrafanaTableOptions: every option a dashboard sets on a table panel
// (maxRowHeight among them) is one Grafana's table panel declares, in @grafana/schema's
// table panel Options (read from node_modules; skipped where npm ci has not run). footer is
// the pre-12.2 option (show false here), which Grafana still migrates on load.
func TestTableOptionsAreGrafanaTableOptions(t *testing.T) {
	src, err := os.ReadFile(filepath.Join("..", "..", "node_modules", "@grafana", "schema", "dist", "esm", "raw", "composable", "table", "panelcfg", "x", "TablePanelCfg_types.gen.d.ts"))
	if err != nil {
		t.Skip("no node_modules/@grafana/schema: run npm ci")
	}
	body := string(src)
	if i := strings.Index(body, "export interface Options {"); i >= 0 {
		body = body[i:]
		if j := strings.Index(body, "\n}"); j >= 0 {
			body = body[:j]
		}
	}
	declared := map[string]bool{"footer": true}
	for _, m := range regexp.MustCompile(`(?m)^\s+(\w+)\??:`).FindAllStringSubmatch(body, -1) {
		declared[m[1]] = true
	}
	if !declared["maxRowHeight"] {
		t.Error("@grafana/schema's table Options has no maxRowHeight")
	}
	for _, l := range onCallPanels(t) {
		if l.p["type"] != "table" {
			continue
		}
		opts, _ := l.p["options"].(map[string]any)
		for k := range opts {
			if !declared[k] {
				t.Errorf("%s: table option %q is not one Grafana's table panel reads", l.where(), k)
			}
		}
	}
}
