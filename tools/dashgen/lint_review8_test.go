package main

import (
	"encoding/json"
	"math"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// The eighth review of issue 33 (review 33-7 and the final review, overview, SLO and latency
// sections) left: three different 1h burn figures for one objective with nothing saying which
// is which, burn windows longer than the stored history drawn as if covered, a latency page
// with no SLO status and no cause, bucket-interpolated quantiles read as measurements, p50
// lines of both targets drawn in one near-white, and unlabelled threshold lines. Each test
// below failed on the dashboards committed before that review.

// TestBurnFiguresSayWhatTheyAre: every panel that shows an slo query's burn rate (a Burn
// column or burn 1h) says it is the point estimate at the range's end; the SLO page's
// Objectives table also says the Why sentence quotes a bound of the attainment bracket and
// that a Burn cell stays empty while the history is shorter than its window; the burn_rate
// chart says its Last is at the last whole step and that a window is drawn only once covered.
func TestBurnFiguresSayWhatTheyAre(t *testing.T) {
	tables, charts := 0, 0
	for _, l := range onCallPanels(t) {
		q := jsonText(l.p["targets"])
		desc, _ := l.p["description"].(string)
		switch {
		case l.p["type"] == "table" && strings.Contains(q, `"queryType":"slo"`) && strings.Contains(jsonText(l.p["transformations"]), "burn_1h"):
			tables++
			if !strings.Contains(desc, "point estimate") {
				t.Errorf("%s: shows a burn rate without saying it is the point estimate at the range's end", l.where())
			}
			if strings.Contains(jsonText(l.p["fieldConfig"]), `"Why"`) {
				for _, want := range []string{"bound of the attainment bracket", "shorter than its window"} {
					if !strings.Contains(desc, want) {
						t.Errorf("%s: the description does not say %q", l.where(), want)
					}
				}
			}
		case l.p["type"] == "timeseries" && strings.Contains(q, `"queryType":"burn_rate"`):
			charts++
			for _, want := range []string{"last whole step", "covers it"} {
				if !strings.Contains(desc, want) {
					t.Errorf("%s: the description does not say %q", l.where(), want)
				}
			}
		}
	}
	if tables < 2 || charts < 1 {
		t.Errorf("%d slo tables with burn rates and %d burn charts checked, want the overview's and the SLO page's", tables, charts)
	}
}

// TestLatencyPageAnswersTheFiveSecondTest: the latency deep dive's first row (before any
// chart) holds the SLO status per target against the selected profile (an slo query with
// $profile grouped by target, showing status and threshold) and the diagnosis class per
// target (a diagnosis table's current rows); every chart that draws the profile's threshold
// line names it in its title, since Grafana gives a threshold no legend entry.
func TestLatencyPageAnswersTheFiveSecondTest(t *testing.T) {
	var slo, why, charts int
	firstRow := ""
	for _, l := range onCallPanels(t) {
		if l.dash != "inferscope-latency.json" {
			continue
		}
		if firstRow == "" {
			firstRow = l.row
		}
		q := jsonText(l.p["targets"])
		tr := jsonText(l.p["transformations"])
		title, _ := l.p["title"].(string)
		if l.row == firstRow && l.p["type"] == "table" {
			switch {
			case strings.Contains(q, `"queryType":"slo"`) && strings.Contains(q, `"profile":"$profile"`) && strings.Contains(q, `"groupBy":"target"`) &&
				strings.Contains(tr, "status") && strings.Contains(tr, "threshold"):
				slo++
			case strings.Contains(q, `"queryType":"diagnosis"`) && strings.Contains(tr, "current") && strings.Contains(tr, "class"):
				why++
			}
		}
		if l.p["type"] == "timeseries" && strings.Contains(q, `"profile":"$profile"`) && strings.Contains(q, `"queryType":"latency"`) {
			mode, _ := get(l.p, "fieldConfig", "defaults", "custom", "thresholdsStyle", "mode").(string)
			if mode != "" && mode != "off" {
				charts++
				if !strings.Contains(title, "threshold") {
					t.Errorf("%s: draws the profile's threshold line and its title does not name it", l.where())
				}
			}
		}
	}
	if slo != 1 || why != 1 {
		t.Errorf("latency page's first row %q: %d SLO status tables and %d diagnosis tables, want one each", firstRow, slo, why)
	}
	if charts < 4 {
		t.Errorf("%d latency charts with the profile's threshold checked, want TTFT, ITL, TPOT and E2E", charts)
	}
}

// TestDeepDiveQuantilesAreNotReadAsMeasurements: the latency deep dive's quantile charts use
// the estimator variable (its default prometheus since review 33-8, as every page; refined,
// placed in the bucket with the window's mean, one click away), and the row above them says, without hovering, that the values are placed
// inside a bucket and that a line flat at a bucket edge is a clamp.
func TestDeepDiveQuantilesAreNotReadAsMeasurements(t *testing.T) {
	var d struct {
		Templating struct {
			List []struct {
				Name    string         `json:"name"`
				Current map[string]any `json:"current"`
			} `json:"list"`
		} `json:"templating"`
	}
	if err := json.Unmarshal(readDashboard(t, "inferscope-latency.json"), &d); err != nil {
		t.Fatal(err)
	}
	def := ""
	for _, v := range d.Templating.List {
		if v.Name == "estimator" {
			def = jsonText(v.Current["value"])
		}
	}
	// Review 33-8 (D6) made the default prometheus, the estimator of every page
	// (TestOneQuantileEstimatorOnEveryPage); refined stays a choice of the variable.
	if def != `"prometheus"` {
		t.Errorf("latency page: estimator default %s, want \"prometheus\"", def)
	}
	charts := 0
	for _, l := range onCallPanels(t) {
		q := jsonText(l.p["targets"])
		if l.dash != "inferscope-latency.json" || l.p["type"] != "timeseries" || !strings.Contains(q, `"queryType":"latency"`) {
			continue
		}
		charts++
		if !strings.Contains(q, `"estimator":"$estimator"`) {
			t.Errorf("%s: does not use the estimator variable", l.where())
		}
		for _, want := range []string{"inside the bucket", "clamped"} {
			if !strings.Contains(l.row, want) {
				t.Errorf("%s: its row %q does not say %q", l.where(), l.row, want)
			}
		}
	}
	if charts < 8 {
		t.Errorf("%d deep-dive quantile charts checked, want every stage's", charts)
	}
}

// grafanaShades are the hex values of Grafana's named shades the target palette uses (its
// classic palette, packages/grafana-data/src/themes/colors), for the luminance check.
var grafanaShades = map[string]string{
	"super-light-blue": "#C0D8FF", "light-blue": "#8AB8FF", "blue": "#3274D9", "dark-blue": "#1250B0",
	"super-light-purple": "#DEB6F2", "light-purple": "#CA95E5", "purple": "#A352CC", "dark-purple": "#7C2EA3",
}

// luminance is the WCAG relative luminance (0 black … 1 white) of a #RRGGBB colour or a named
// shade; -1 when unknown.
func luminance(c string) float64 {
	if h, ok := grafanaShades[c]; ok {
		c = h
	}
	if len(c) != 7 || c[0] != '#' {
		return -1
	}
	lin := func(s string) float64 {
		v, err := strconv.ParseUint(s, 16, 8)
		if err != nil {
			return math.NaN()
		}
		x := float64(v) / 255
		if x <= 0.03928 {
			return x / 12.92
		}
		return math.Pow((x+0.055)/1.055, 2.4)
	}
	return 0.2126*lin(c[1:3]) + 0.7152*lin(c[3:5]) + 0.0722*lin(c[5:7])
}

// TestLuminanceByHand: white 1, black 0, light-blue #8AB8FF 0.469 (by hand: 0.2126 × 0.254 +
// 0.7152 × 0.479 + 0.0722 × 1).
func TestLuminanceByHand(t *testing.T) {
	if l := luminance("#FFFFFF"); math.Abs(l-1) > 1e-9 {
		t.Errorf("white: %v", l)
	}
	if l := luminance("#000000"); l != 0 {
		t.Errorf("black: %v", l)
	}
	if l := luminance("light-blue"); math.Abs(l-0.469) > 0.002 {
		t.Errorf("light-blue: %v, want 0.469", l)
	}
}

// TestP50KeepsTheTargetsColour: on the latency deep dive each demo target's p50 is a shade of
// its own hue dark enough to read as that hue on the dark theme (luminance under 0.5; the
// super-light shades read near-white, 0.55 and 0.68), and the targets' p50 colours differ.
func TestP50KeepsTheTargetsColour(t *testing.T) {
	targets, err := datasourceTargets(datasourceFile)
	if err != nil || len(targets) < 2 {
		t.Fatalf("demo targets: %v %v", targets, err)
	}
	seen := map[string]string{}
	checked := 0
	for _, l := range onCallPanels(t) {
		if l.dash != "inferscope-latency.json" || l.p["type"] != "timeseries" {
			continue
		}
		for _, q := range l.queries() {
			if q["queryType"] != "latency" || !slices.Contains(strs(q["stats"]), "p50") {
				continue
			}
			checked++
			for _, tg := range targets {
				name := displayNameFor(l.p, map[string]string{"target": tg, "stat": "p50", "stage": strs(q["stages"])[0], "bound": ""})
				_, c := seriesColour(l.p, name)
				if lum := luminance(c); lum < 0 || lum >= 0.5 {
					t.Errorf("%s: %q is %s (luminance %.2f): near-white, not its target's hue", l.where(), name, c, lum)
				}
				if other, ok := seen[c]; ok && other != tg {
					t.Errorf("%s: %s's and %s's p50 share %s", l.where(), tg, other, c)
				}
				seen[c] = tg
			}
		}
	}
	if checked < 8 {
		t.Errorf("%d latency charts with a p50 checked, want every stage's", checked)
	}
}

// TestStatNamesAreReadable: on the overview and the SLO page, every stat tile whose name
// carries the answer (an slo tile: objective, worst target, budget spent; a gpu tile: the
// serving target and agent) fixes the name's font size at 12 px or more (Grafana's auto size
// drew about 6 px under the big value).
func TestStatNamesAreReadable(t *testing.T) {
	checked := 0
	for _, l := range onCallPanels(t) {
		if l.p["type"] != "stat" || (l.dash != "inferscope-overview.json" && l.dash != "inferscope-slo.json") {
			continue
		}
		q := jsonText(l.p["targets"])
		if !strings.Contains(q, `"queryType":"slo"`) && !strings.Contains(q, `"queryType":"gpu"`) {
			continue
		}
		if mode, _ := get(l.p, "options", "textMode").(string); mode != "value_and_name" {
			continue
		}
		checked++
		if size, _ := get(l.p, "options", "text", "titleSize").(float64); size < 12 {
			t.Errorf("%s: name size %v px, want 12 or more", l.where(), size)
		}
	}
	if checked < 5 {
		t.Errorf("%d tiles checked, want the overview's SLO and GPU tiles and the SLO page's budget tiles", checked)
	}
}

// TestTimelineStateNamesFit: every state timeline mapping diagnosis classes names each class
// in at most ten characters (a few minutes' bar on a 12-wide panel; "KV-cache pressure" was
// cut to "KV-cache pres"), the colours those of the tables' mappings.
func TestTimelineStateNamesFit(t *testing.T) {
	full := diagnosisMappings()[0].ValueMap.Options
	checked := 0
	for _, l := range onCallPanels(t) {
		if l.p["type"] != "state-timeline" || !strings.Contains(jsonText(l.p["targets"]), `"queryType":"diagnosis"`) {
			continue
		}
		checked++
		maps, _ := get(l.p, "fieldConfig", "defaults", "mappings").([]any)
		seen := 0
		for _, m := range maps {
			opts, _ := get(m.(map[string]any), "options").(map[string]any)
			for class, r := range opts {
				rm, _ := r.(map[string]any)
				text, _ := rm["text"].(string)
				colour, _ := rm["color"].(string)
				seen++
				if len([]rune(text)) > 10 {
					t.Errorf("%s: class %s is named %q, %d characters", l.where(), class, text, len([]rune(text)))
				}
				if f, ok := full[class]; ok && f.Color != nil && *f.Color != colour {
					t.Errorf("%s: class %s is %s, %s in the tables", l.where(), class, colour, *f.Color)
				}
			}
		}
		if seen < len(full) {
			t.Errorf("%s: %d classes mapped, want all %d", l.where(), seen, len(full))
		}
	}
	if checked == 0 {
		t.Error("no diagnosis state timeline checked")
	}
}

// TestProbeRowDoesNotClaimAMissingProbe: the demo's settings configure a probe
// (provisioning probes[]), so the overview's probe row title says what the row holds, not
// that a probe is needed.
func TestProbeRowDoesNotClaimAMissingProbe(t *testing.T) {
	var ds struct {
		Datasources []struct {
			JSONData struct {
				Probes []struct {
					Name string `yaml:"name"`
				} `yaml:"probes"`
			} `yaml:"jsonData"`
		} `yaml:"datasources"`
	}
	readYAML(t, "provisioning/datasources/inferscope.yaml", &ds)
	if len(ds.Datasources) == 0 || len(ds.Datasources[0].JSONData.Probes) == 0 {
		t.Skip("the demo configures no probe")
	}
	found := false
	for _, l := range onCallPanels(t) {
		if l.dash != "inferscope-overview.json" || !strings.Contains(strings.ToLower(l.row), "probe") {
			continue
		}
		found = true
		if strings.Contains(strings.ToLower(l.row), "needs") {
			t.Errorf("%s: its row %q says a probe is needed, though the demo configures %q", l.where(), l.row, ds.Datasources[0].JSONData.Probes[0].Name)
		}
	}
	if !found {
		t.Error("no probe row on the overview")
	}
}

// TestOverviewLatencyRowSaysFlatTopsAreClamps: the overview's p99-and-max charts read
// histogram_quantile's value (a rank in the +Inf bucket is the highest finite edge, 80 s and
// 120 s in the demo): their row says a flat line at a bucket edge is clamped and names the
// dashed red line.
func TestOverviewLatencyRowSaysFlatTopsAreClamps(t *testing.T) {
	checked := 0
	for _, l := range onCallPanels(t) {
		q := jsonText(l.p["targets"])
		if l.dash != "inferscope-overview.json" || l.p["type"] != "timeseries" || !strings.Contains(q, `"queryType":"latency"`) || !strings.Contains(q, `"p99"`) || strings.Contains(q, `"source":"probe"`) {
			continue
		}
		checked++
		for _, want := range []string{"clamped", "dashed red"} {
			if !strings.Contains(l.row, want) {
				t.Errorf("%s: its row %q does not say %q", l.where(), l.row, want)
			}
		}
	}
	if checked < 3 {
		t.Errorf("%d overview p99 charts checked, want TTFT, TPOT and E2E", checked)
	}
}
