package main

import (
	"regexp"
	"strings"
	"testing"
)

// The fourth on-call review (issue 33) judged the screenshots again against "in five
// seconds: is the SLO met, which endpoint is bad, why": tiles that merged both targets and
// named neither, empty probe and regression tables left open, abort red on one panel and
// amber on the next, a grey burn-rate tile, right legends taking most of a half-width chart,
// a telemetry table listing every signal as a gap, "0.0 day" to the knee. Each test below
// failed on the dashboards committed before that review.

// TestNowTilesNameTheirTarget: an overview stat tile of latency, or of a saturation signal
// grouped by target, shows one value per target named by it: the mean of two targets (a
// healthy one at 24 ms and a saturated one at 36 s) is neither's.
func TestNowTilesNameTheirTarget(t *testing.T) {
	checked := 0
	for _, l := range onCallPanels(t) {
		if l.dash != "inferscope-overview.json" || l.p["type"] != "stat" {
			continue
		}
		for _, q := range l.queries() {
			latency := q["queryType"] == "latency"
			perTarget := q["queryType"] == "saturation" && q["groupBy"] == "target"
			if !latency && !perTarget {
				continue
			}
			checked++
			if q["groupBy"] != "target" {
				t.Errorf("%s: a latency tile grouped by %v merges the targets; group by target", l.where(), q["groupBy"])
			}
			if name, _ := get(l.p, "fieldConfig", "defaults", "displayName").(string); !strings.Contains(name, "__field.labels.target") {
				t.Errorf("%s: values not named by their target (displayName %q)", l.where(), name)
			}
			if strings.Contains(jsonText(l.p["transformations"]), "reduceRow") {
				t.Errorf("%s: reduces the targets' values into one", l.where())
			}
		}
	}
	if checked < 4 {
		t.Errorf("%d per-target tiles on the overview, want the mean TTFT, mean ITL, waiting and preemption tiles", checked)
	}
}

// TestEmptyByDefaultTablesAreCollapsed: the probe's, the regression verdicts' and the
// gateway's panels have no data in a setup without a probe, without a change in the range or
// without a gateway (the demo): they sit in collapsed rows whose titles say what fills them,
// not open as a header row or "No data".
func TestEmptyByDefaultTablesAreCollapsed(t *testing.T) {
	checked := 0
	for _, l := range onCallPanels(t) {
		if l.dash != "inferscope-overview.json" && l.dash != "inferscope-models.json" {
			continue
		}
		for _, q := range l.queries() {
			qt, _ := q["queryType"].(string)
			if qt != "probe" && qt != "regression" && qt != "errors" && q["source"] != "probe" {
				continue
			}
			checked++
			if !l.collapsed {
				t.Errorf("%s: empty by default (%s query) in the open row %q", l.where(), qt, l.row)
			}
			if !strings.Contains(strings.ToLower(l.row), "need") && !strings.Contains(strings.ToLower(l.row), "fill") {
				t.Errorf("%s: row %q does not say what fills it", l.where(), l.row)
			}
			break
		}
	}
	if checked == 0 {
		t.Error("no probe, regression or errors panel on the overview and models dashboards")
	}
}

// finishReasonMatcher finds the finish reason an override's regexp names.
var finishReasonMatcher = regexp.MustCompile(`requests/s \(?([a-z|]+)\)?`)

// TestFinishReasonColoursAgree: every override colouring a finish reason's series gives it
// the colour of finishReasonColors, on every dashboard (abort was red on one overview panel,
// amber on the next and green, the palette's, on the models dashboard), and every panel that
// colours one colours all four.
func TestFinishReasonColoursAgree(t *testing.T) {
	checked := 0
	for _, l := range onCallPanels(t) {
		os, _ := get(l.p, "fieldConfig", "overrides").([]any)
		seen := map[string]bool{}
		for _, o := range os {
			om := o.(map[string]any)
			m, _ := get(om, "matcher", "options").(string)
			sm := finishReasonMatcher.FindStringSubmatch(m)
			if sm == nil {
				continue
			}
			for _, pr := range om["properties"].([]any) {
				prm := pr.(map[string]any)
				if prm["id"] != "color" {
					continue
				}
				colour, _ := get(prm, "value", "fixedColor").(string)
				for _, reason := range strings.Split(sm[1], "|") {
					checked++
					seen[reason] = true
					if want := finishReasonColors[reason]; colour != want {
						t.Errorf("%s: finish reason %s drawn %q, want %q as on every dashboard", l.where(), reason, colour, want)
					}
				}
			}
		}
		if len(seen) > 0 && len(seen) < len(finishReasonColors) {
			t.Errorf("%s: colours the finish reasons %v only; the others take the palette's colours (length's yellow beside an amber abort)", l.where(), seen)
		}
	}
	if checked == 0 {
		t.Error("no finish-reason colour override")
	}
}

// TestBurnTileNoneIsNotGrey: the burn-rate tile's "no alert" text has a colour of its own: in
// the tile's background colour mode the text colour drew a grey box whose text could not be read.
func TestBurnTileNoneIsNotGrey(t *testing.T) {
	checked := 0
	for _, l := range onCallPanels(t) {
		if l.dash != "inferscope-overview.json" || l.p["title"] != burnAlertTileTitle {
			continue
		}
		maps, _ := get(l.p, "fieldConfig", "defaults", "mappings").([]any)
		for _, m := range maps {
			zero, ok := get(m.(map[string]any), "options", "0").(map[string]any)
			if !ok {
				continue
			}
			checked++
			if c, _ := zero["color"].(string); c == "" || c == grey {
				t.Errorf("%s: status 0 drawn in %q: a grey box on the background colour mode", l.where(), c)
			}
			if text, _ := zero["text"].(string); len(text) > 20 {
				t.Errorf("%s: status 0 reads %q: too long for the tile", l.where(), text)
			}
		}
	}
	if checked != 1 {
		t.Errorf("%d status-0 mappings on the burn-rate tile, want 1", checked)
	}
}

// gridPixels is the width in pixels of a panel w grid columns wide on a 1600 px screen
// (Grafana's 24 columns over about 1540 px).
func gridPixels(w float64) float64 { return w / 24 * 1540 }

// TestRightLegendsLeaveTheChart: a right-hand legend takes at most 40 % of its panel's width
// (430 px of a half-width panel, 56 %, squeezed the deep dive's charts to a strip).
func TestRightLegendsLeaveTheChart(t *testing.T) {
	checked := 0
	for _, l := range onCallPanels(t) {
		if get(l.p, "options", "legend", "placement") != "right" {
			continue
		}
		checked++
		lw, _ := get(l.p, "options", "legend", "width").(float64)
		w, _ := get(l.p, "gridPos", "w").(float64)
		if lw == 0 || lw > 0.4*gridPixels(w) {
			t.Errorf("%s: legend %v px of %.0f px", l.where(), lw, gridPixels(w))
		}
	}
	if checked == 0 {
		t.Error("no right-hand legend")
	}
}

// TestTelemetryGapsListOnlyGaps: the telemetry format answers 1 for a missing family and 0 for
// one that is there; the overview's table keeps the 1s only (it listed vllm-healthy's queue,
// prefill and decode time as missing beside their numbers).
func TestTelemetryGapsListOnlyGaps(t *testing.T) {
	checked := 0
	for _, l := range onCallPanels(t) {
		for _, q := range l.queries() {
			if q["queryType"] != "targets" || q["format"] != "telemetry" {
				continue
			}
			checked++
			ok := false
			trs, _ := l.p["transformations"].([]any)
			for _, tr := range trs {
				trm := tr.(map[string]any)
				if trm["id"] == "filterByValue" && get(trm, "options", "type") == "include" && strings.Contains(jsonText(trm["options"]), `"greater"`) {
					ok = true
				}
			}
			if !ok {
				t.Errorf("%s: lists every target × signal, the 0s (present) too: keep the rows whose value is above 0", l.where())
			}
		}
	}
	if checked == 0 {
		t.Error("no telemetry table")
	}
}

// TestDaysToKneeSaysPastTheKnee: 0 days to the knee is a load already past it, and reads so
// ("0.0 day" read as a fault).
func TestDaysToKneeSaysPastTheKnee(t *testing.T) {
	checked := 0
	for _, l := range onCallPanels(t) {
		if !strings.Contains(jsonText(l.p["transformations"]), "days_to_knee") || l.p["type"] != "stat" {
			continue
		}
		checked++
		if !strings.Contains(jsonText(get(l.p, "fieldConfig", "defaults", "mappings")), "past the knee") {
			t.Errorf("%s: 0 days is not mapped to a text saying the load is past the knee", l.where())
		}
	}
	if checked != 1 {
		t.Errorf("%d days-to-the-knee tiles, want 1", checked)
	}
}

// TestOverviewTablesCapWrappedRows: the overview's endpoint and diagnosis tables wrap their
// long cells and cap the row height (maxRowHeight), so every endpoint fits the panel: wrapped
// whole, a burning row's advice was a dozen lines and pushed the other endpoints out.
func TestOverviewTablesCapWrappedRows(t *testing.T) {
	for _, l := range onCallPanels(t) {
		if l.dash != "inferscope-overview.json" || (l.p["title"] != "Endpoints, worst first" && l.p["title"] != "Diagnosis now: evidence and advice") {
			continue
		}
		if h, _ := get(l.p, "options", "maxRowHeight").(float64); h < 40 || h > 120 {
			t.Errorf("%s: maxRowHeight %v, want 40 to 120 px", l.where(), h)
		}
		if !strings.Contains(jsonText(get(l.p, "fieldConfig", "overrides")), `"custom.wrapText"`) {
			t.Errorf("%s: no wrapped column", l.where())
		}
	}
}

// TestGPUSummaryNamesUnits: the GPU summary has one row per GPU and signal, so a column holds
// °C, W and ratios at once; each signal's cell names its unit (plain numbers read 428.98 next
// to 0.37).
func TestGPUSummaryNamesUnits(t *testing.T) {
	checked := 0
	for _, l := range onCallPanels(t) {
		if l.dash != "inferscope-gpu.json" || l.p["title"] != "GPU summary" {
			continue
		}
		checked++
		maps := ""
		os, _ := get(l.p, "fieldConfig", "overrides").([]any)
		for _, o := range os {
			om := o.(map[string]any)
			if get(om, "matcher", "options") == "signal" {
				maps = jsonText(om["properties"])
			}
		}
		for _, want := range []string{"°C", "(W)", "0..1"} {
			if !strings.Contains(maps, want) {
				t.Errorf("%s: the signal cells do not name the unit %s", l.where(), want)
			}
		}
	}
	if checked != 1 {
		t.Errorf("%d GPU summary tables, want 1", checked)
	}
}
