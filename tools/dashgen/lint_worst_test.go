package main

import (
	"fmt"
	"strings"
	"testing"
)

// The worst-target lint (issue 33, second review): a fresh on-call
// reviewer read the screenshots and found numbers that pooled every target
// (the overview's ttft-p99 budget −811 % while vllm-kv-pressure alone had
// −8161 %), legends cut before the target's name, series blending targets,
// and an unlabelled 0–1 axis. Each test below failed on the dashboards
// committed before that review.

// transformationIDs lists the ids of a panel's transformations in order.
func transformationIDs(p map[string]any) []string {
	var out []string
	ts, _ := p["transformations"].([]any)
	for _, t := range ts {
		id, _ := t.(map[string]any)["id"].(string)
		out = append(out, id)
	}
	return out
}

// overrideDisplayNames joins the displayName values the overrides of a
// panel set: a field renamed by a transformation (organize) carries its own
// displayName, which a panel default does not replace, so the tiles are
// named by an override.
func overrideDisplayNames(p map[string]any) string {
	var out []string
	os, _ := get(p, "fieldConfig", "overrides").([]any)
	for _, o := range os {
		for _, pr := range o.(map[string]any)["properties"].([]any) {
			if prm := pr.(map[string]any); prm["id"] == "displayName" {
				out = append(out, fmt.Sprint(prm["value"]))
			}
		}
	}
	return strings.Join(out, "\n")
}

// TestOverviewSLOTilesNameTheWorstTarget: every SLO stat tile of the
// overview reads the slo query grouped by target (never all targets
// merged, where one healthy target's traffic dilutes an overspent one) and
// reduces it to one value per objective with a groupBy; the budget and
// attainment tiles sort on their own number first and name the target
// whose number they show. Before, the tiles queried groupBy none.
func TestOverviewSLOTilesNameTheWorstTarget(t *testing.T) {
	found := map[string]bool{}
	for _, l := range onCallPanels(t) {
		if l.dash != "inferscope-overview.json" || l.p["type"] != "stat" {
			continue
		}
		isSLO := false
		for _, q := range l.queries() {
			if q["queryType"] == "slo" {
				isSLO = true
				if q["groupBy"] != "target" {
					t.Errorf("%s: slo tile grouped by %v: all targets merged hide the worst one; group by target and reduce per objective", l.where(), q["groupBy"])
				}
			}
		}
		if !isSLO {
			continue
		}
		ids := strings.Join(transformationIDs(l.p), ",")
		tr := jsonText(l.p["transformations"])
		if !strings.Contains(ids, "groupBy") {
			t.Errorf("%s: no groupBy transformation (transformations %s): one tile per target × objective, or none per objective", l.where(), ids)
		}
		name := overrideDisplayNames(l.p)
		for _, field := range []string{"budget_remaining", "attainment"} {
			if !strings.Contains(tr, `"`+field+`"`) {
				continue
			}
			found[field] = true
			if !strings.HasPrefix(ids, "sortBy,groupBy") || !strings.Contains(tr, `"field":"`+field+`"`) {
				t.Errorf("%s: %s is not sorted on before it is grouped by objective (transformations %s): the tile would show an arbitrary target", l.where(), field, ids)
			}
			if !strings.Contains(name, "${__data.fields.target}") {
				t.Errorf("%s: tile name %q does not name the target whose %s it shows", l.where(), name, field)
			}
		}
		if strings.Contains(tr, "status_value") {
			found["status_value"] = true
			if !strings.Contains(tr, `"max"`) {
				t.Errorf("%s: the alert tile must show the most severe status of any target (groupBy max), transformations %s", l.where(), tr)
			}
		}
	}
	for _, f := range []string{"budget_remaining", "attainment", "status_value"} {
		if !found[f] {
			t.Errorf("the overview has no SLO tile showing %s", f)
		}
	}
}

// TestAlertTileDoesNotReadAllFine: the overview's burn-rate alert tile,
// which says nothing about the budget already spent, must not read "No
// alert firing" or "OK" alone for status 0: its text points at the budget.
func TestAlertTileDoesNotReadAllFine(t *testing.T) {
	checked := 0
	for _, l := range onCallPanels(t) {
		if l.dash != "inferscope-overview.json" || l.p["type"] != "stat" || !strings.Contains(jsonText(l.p["transformations"]), "status_value") {
			continue
		}
		checked++
		maps, _ := get(l.p, "fieldConfig", "defaults", "mappings").([]any)
		for _, m := range maps {
			zero, ok := get(m.(map[string]any), "options", "0").(map[string]any)
			if !ok {
				continue
			}
			if text, _ := zero["text"].(string); !strings.Contains(text, "budget") {
				t.Errorf("%s: status 0 reads %q: beside an overspent budget it reads as all fine; say where the budget is", l.where(), text)
			}
		}
		if title, _ := l.p["title"].(string); !strings.Contains(title, "firing now") {
			t.Errorf("%s: the title must say it is about alerts firing now", l.where())
		}
	}
	if checked == 0 {
		t.Error("no burn-rate alert tile on the overview")
	}
}

// TestBurnRateLegendNamesTheTargetFirst: the SLO dashboard's burn-rate
// series are named target first, in a table legend, so a cut legend still
// says whose budget burns. Before, the names were "burn rate 5m ·
// objective=…, profile=…, target=…", cut before the target.
func TestBurnRateLegendNamesTheTargetFirst(t *testing.T) {
	checked := 0
	for _, l := range onCallPanels(t) {
		for _, q := range l.queries() {
			if q["queryType"] != "burn_rate" || q["groupBy"] != "target" || l.p["type"] != "timeseries" {
				continue
			}
			checked++
			name, _ := get(l.p, "fieldConfig", "defaults", "displayName").(string)
			if !strings.HasPrefix(name, "${__field.labels.target}") || !strings.Contains(name, "${__field.labels.window}") {
				t.Errorf("%s: burn-rate series named %q: want the target first, then the window", l.where(), name)
			}
			if mode := get(l.p, "options", "legend", "displayMode"); mode != "table" {
				t.Errorf("%s: legend %v, want a table", l.where(), mode)
			}
		}
	}
	if checked == 0 {
		t.Error("no burn-rate panel grouped by target")
	}
}

// TestSLODashboardSaysWhy: the SLO dashboard, which says which target
// overspends, also says why (the diagnosis per target). Before, it had no
// diagnosis panel.
func TestSLODashboardSaysWhy(t *testing.T) {
	for _, l := range onCallPanels(t) {
		if l.dash != "inferscope-slo.json" {
			continue
		}
		for _, q := range l.queries() {
			if q["queryType"] == "diagnosis" {
				return
			}
		}
	}
	t.Error("inferscope-slo.json has no diagnosis panel: it says which target burns but not why")
}

// TestLatencyDeepDiveNamesSeriesByTarget: the deep dive's quantile panels
// group by target, so with several targets selected each series carries
// its target (frames name it "ttft p99 · target=…") instead of one blend.
func TestLatencyDeepDiveNamesSeriesByTarget(t *testing.T) {
	checked := 0
	for _, l := range onCallPanels(t) {
		if l.dash != "inferscope-latency.json" || l.p["type"] != "timeseries" {
			continue
		}
		for _, q := range l.queries() {
			if q["queryType"] != "latency" {
				continue
			}
			checked++
			if q["groupBy"] != "target" {
				t.Errorf("%s: latency grouped by %v: several targets blend into one series", l.where(), q["groupBy"])
			}
		}
	}
	if checked == 0 {
		t.Error("no latency panel on the deep dive")
	}
}

// TestSpikeMarkersAreNotDrawn: no latency panel draws the spike markers
// (0/1 per window) as bars on a right axis: that was grey shading over the
// TTFT and TPOT panels on an unlabelled 0–1 axis. They stay in the tooltip.
func TestSpikeMarkersAreNotDrawn(t *testing.T) {
	for _, l := range onCallPanels(t) {
		os, _ := get(l.p, "fieldConfig", "overrides").([]any)
		for _, o := range os {
			om := o.(map[string]any)
			m, _ := get(om, "matcher", "options").(string)
			if !strings.Contains(m, "spike") || l.p["type"] != "timeseries" {
				continue
			}
			hidden := false
			for _, pr := range om["properties"].([]any) {
				prm := pr.(map[string]any)
				if prm["id"] == "custom.axisPlacement" && prm["value"] == "right" {
					t.Errorf("%s: spike markers on a right axis", l.where())
				}
				if prm["id"] == "custom.hideFrom" && get(prm, "value", "viz") == true {
					hidden = true
				}
			}
			if !hidden {
				t.Errorf("%s: spike markers (%s) are drawn", l.where(), m)
			}
		}
	}
}

// TestThrottleReasonsNamedByServingAndGPU: the GPU dashboard's throttle
// rows are named by the targets the GPU serves and its index. Before, both
// rows read "throttle · gpu=0, host".
func TestThrottleReasonsNamedByServingAndGPU(t *testing.T) {
	checked := 0
	for _, l := range onCallPanels(t) {
		for _, q := range l.queries() {
			if q["queryType"] != "gpu" || !strings.Contains(jsonText(q["signals"]), "throttle_reasons") {
				continue
			}
			checked++
			name, _ := get(l.p, "fieldConfig", "defaults", "displayName").(string)
			if !strings.Contains(name, "${__field.labels.serving}") || !strings.Contains(name, "${__field.labels.gpu}") {
				t.Errorf("%s: throttle rows named %q: want the serving label and the GPU index", l.where(), name)
			}
		}
	}
	if checked == 0 {
		t.Error("no throttle-reasons panel")
	}
}

// TestCollapsedRowsReserveNoSpace: the panel after a collapsed row starts
// on the next grid line, so collapsed, empty-by-default rows do not leave
// their hidden panels' height blank. Before, the overview's four collapsed
// rows sat 9, 9, 9 and 7 lines apart: a blank third of its screenshot.
func TestCollapsedRowsReserveNoSpace(t *testing.T) {
	checked := 0
	for name, ps := range committedDashboardsRaw(t) {
		for k, p := range ps {
			if p["type"] != "row" || p["collapsed"] != true || k+1 == len(ps) {
				continue
			}
			checked++
			y, _ := get(p, "gridPos", "y").(float64)
			next, _ := get(ps[k+1], "gridPos", "y").(float64)
			if next != y+1 {
				t.Errorf("%s: collapsed row %q at y=%v is followed by %q at y=%v, want %v", name, p["title"], y, ps[k+1]["title"], next, y+1)
			}
		}
	}
	if checked == 0 {
		t.Error("no collapsed row followed by a panel")
	}
}

// TestPanelsFitTheGrid: every panel lies inside Grafana's 24-column grid
// (the SLO dashboard's diagnosis table, first placed beside a half-width
// panel, ran off its right edge).
func TestPanelsFitTheGrid(t *testing.T) {
	for _, l := range onCallPanels(t) {
		x, _ := get(l.p, "gridPos", "x").(float64)
		w, _ := get(l.p, "gridPos", "w").(float64)
		if x+w > 24 {
			t.Errorf("%s: x %v + w %v is past the grid's 24 columns", l.where(), x, w)
		}
	}
}
