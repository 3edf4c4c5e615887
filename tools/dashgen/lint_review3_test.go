package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// The third on-call review (issue 33) judged the screenshots of the latency, GPU, models,
// cost and targets dashboards against "in five seconds: is the SLO met, which endpoint is
// bad, why" and found: a KV-cache tile lower than the diagnosis's evidence, budgets reading
// −8161 %, a target last scraped 20 minutes before reading a green up, legends cut to three
// rows and series named with their target last. Each test below failed on the dashboards
// committed before that review.

// TestKVCacheTileShowsTheRangeMax: the overview's KV-cache tile reduces with max over the
// range (the diagnosis's 0.959 is a max over its rate window, so the tile's last value,
// 47.9 %, contradicted it) and says so in its title and description.
func TestKVCacheTileShowsTheRangeMax(t *testing.T) {
	checked := 0
	for _, l := range onCallPanels(t) {
		if l.dash != "inferscope-overview.json" || l.p["type"] != "stat" || !strings.Contains(jsonText(l.p["transformations"]), "KV-cache usage") {
			continue
		}
		checked++
		calcs := strs(get(l.p, "options", "reduceOptions", "calcs"))
		if len(calcs) != 1 || calcs[0] != "max" {
			t.Errorf("%s: reduces with %v: a last value can read lower than the diagnosis's window max; reduce with max", l.where(), calcs)
		}
		title, _ := l.p["title"].(string)
		desc, _ := l.p["description"].(string)
		if !strings.Contains(title, "max") || !strings.Contains(desc, "over the dashboard's range") {
			t.Errorf("%s: title %q and description must say the number is the range's maximum", l.where(), title)
		}
	}
	if checked != 1 {
		t.Errorf("%d KV-cache stat tiles on the overview, want 1", checked)
	}
}

// exhaustedMapping reports whether mappings (a panel default's or an override's) hold a
// range mapping to a text with "exhausted" over a numeric range ending at or below 0 and
// starting below −1 (Grafana reads a missing from as 0, which maps no overspent budget).
func exhaustedMapping(mappings any) bool {
	ms, _ := mappings.([]any)
	for _, m := range ms {
		mm, _ := m.(map[string]any)
		if mm["type"] != "range" {
			continue
		}
		from, okF := get(mm, "options", "from").(float64)
		to, okT := get(mm, "options", "to").(float64)
		text, _ := get(mm, "options", "result", "text").(string)
		if okF && okT && from < -1 && to <= 0 && strings.Contains(text, "exhausted") {
			return true
		}
	}
	return false
}

// TestOverspentBudgetsReadExhausted: every stat tile of budget_remaining and every table
// column of the error budget maps a budget at or below 0 to "exhausted" (1 − bad/allowed:
// 82.6 times the allowed bad requests read −8161 %), and the overview's tile names the
// spent factor, computed as 1 − budget_remaining.
func TestOverspentBudgetsReadExhausted(t *testing.T) {
	tiles, columns, spent := 0, 0, 0
	for _, l := range onCallPanels(t) {
		tr := jsonText(l.p["transformations"])
		if l.p["type"] == "stat" && strings.Contains(tr, "budget_remaining") {
			tiles++
			if !exhaustedMapping(get(l.p, "fieldConfig", "defaults", "mappings")) {
				t.Errorf("%s: no range mapping naming a budget at or below 0 exhausted", l.where())
			}
			if l.dash == "inferscope-overview.json" {
				if !strings.Contains(tr, `"left":"1","operator":"-","right":"budget_remaining"`) || !strings.Contains(overrideDisplayNames(l.p), "${__data.fields."+budgetSpentField+"}") {
					t.Errorf("%s: the tile does not name the spent factor 1 − budget_remaining", l.where())
				} else {
					spent++
				}
				// Grafana's reduceOptions.fields is a regular expression over display
				// names: it must match the tile's name and not budget_spent's.
				fields, _ := get(l.p, "options", "reduceOptions", "fields").(string)
				re, err := regexp.Compile(fields)
				name := sloWorstName + " · ${__data.fields." + budgetSpentField + "} of ${__data.fields.budget_of} spent"
				if fields == "" || err != nil || !re.MatchString(name) || re.MatchString(budgetSpentField) || !strings.Contains(overrideDisplayNames(l.p), name) {
					t.Errorf("%s: reduceOptions.fields %q must match the display name %q and not %q (the spent factor would be a tile of its own, or no field drawn)", l.where(), fields, name, budgetSpentField)
				}
			}
		}
		if l.p["type"] != "table" {
			continue
		}
		os, _ := get(l.p, "fieldConfig", "overrides").([]any)
		for _, o := range os {
			om := o.(map[string]any)
			if name, _ := get(om, "matcher", "options").(string); name != "budget left" && name != "Error budget left" {
				continue
			}
			columns++
			ok := false
			for _, pr := range om["properties"].([]any) {
				if prm := pr.(map[string]any); prm["id"] == "mappings" && exhaustedMapping(prm["value"]) {
					ok = true
				}
			}
			if !ok {
				t.Errorf("%s: column %v has no exhausted mapping", l.where(), get(om, "matcher", "options"))
			}
		}
	}
	if tiles < 2 || columns < 2 || spent != 1 {
		t.Errorf("budget tiles %d (want ≥ 2), budget columns %d (want ≥ 2), overview tiles naming the spent factor %d (want 1)", tiles, columns, spent)
	}
}

// TestInventoryReadsStaleNotUp: the targets dashboard's inventory shows the frame's state
// (up only while the last scrape is recent), coloured, worst first, and hides the raw up
// flag, which stayed true for a target last scraped 20 minutes before; the screenshots'
// renderer reads "from now" cells at the frames' capture time.
func TestInventoryReadsStaleNotUp(t *testing.T) {
	checked := 0
	for _, l := range onCallPanels(t) {
		if l.dash != "inferscope-targets.json" || l.p["title"] != "Inventory" {
			continue
		}
		checked++
		if get(l.p, "transformations") == nil || !strings.Contains(jsonText(l.p["transformations"]), `"up":true`) {
			t.Errorf("%s: the raw up flag is shown (it reads up for a stale target)", l.where())
		}
		var mapped bool
		os, _ := get(l.p, "fieldConfig", "overrides").([]any)
		for _, o := range os {
			om := o.(map[string]any)
			if get(om, "matcher", "options") != "state" {
				continue
			}
			for _, pr := range om["properties"].([]any) {
				prm := pr.(map[string]any)
				if prm["id"] != "mappings" {
					continue
				}
				js := jsonText(prm["value"])
				mapped = strings.Contains(js, `"stale":{"color":"orange","text":"stale"}`) && strings.Contains(js, `"up":{"color":"green","text":"up"}`)
			}
		}
		if !mapped {
			t.Errorf("%s: state is not coloured (up green, stale orange)", l.where())
		}
		if sb := jsonText(get(l.p, "options", "sortBy")); !strings.Contains(sb, `"displayName":"state"`) {
			t.Errorf("%s: not sorted by state (down, not scraped yet, stale before up): %s", l.where(), sb)
		}
	}
	if checked != 1 {
		t.Fatalf("%d inventory panels, want 1", checked)
	}
	js, err := os.ReadFile(filepath.Join("..", "..", "harness", "render-panels.js"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(js), "clock.setFixedTime") || !strings.Contains(string(js), "capturedAt") {
		t.Error("harness/render-panels.js does not set the page's clock to the frames' capture time")
	}
}

// TestLegendRowsByHand pins legendRows on the hand computation: content = 30h + 8(h−1) −
// 40 px, 35 % of it in 22 px lines, less the header line: h 8 → 0.35 × 256 / 22 = 4.07 →
// 3 rows; h 10 → 0.35 × 332 / 22 = 5.28 → 4; h 12 → 0.35 × 408 / 22 = 6.49 → 5.
func TestLegendRowsByHand(t *testing.T) {
	for h, want := range map[uint32]int{8: 3, 9: 3, 10: 4, 12: 5} {
		if got := legendRows(h); got != want {
			t.Errorf("legendRows(%d) = %d, want %d", h, got, want)
		}
	}
}

// TestTableLegendsShowFourSeries: a time series with a table legend at the bottom is high
// enough for 4 series (legendRows ≥ 4; the review found 4-series legends cut to 3 at
// height 8 and 9), and one on the right has a width (Grafana's default, up to 60 % of the
// panel, squeezed the plot).
func TestTableLegendsShowFourSeries(t *testing.T) {
	n := 0
	for _, l := range onCallPanels(t) {
		if l.p["type"] != "timeseries" || get(l.p, "options", "legend", "displayMode") != "table" {
			continue
		}
		n++
		h, _ := get(l.p, "gridPos", "h").(float64)
		switch get(l.p, "options", "legend", "placement") {
		case "bottom":
			if rows := legendRows(uint32(h)); rows < 4 {
				t.Errorf("%s: height %v shows %d legend rows; give it height %d or a right legend", l.where(), h, rows, legendH)
			}
		case "right":
			if w, _ := get(l.p, "options", "legend", "width").(float64); w < 200 {
				t.Errorf("%s: right legend without a width of at least 200 px", l.where())
			}
		}
	}
	if n == 0 {
		t.Fatal("no table legend read")
	}
}

// TestSeriesNamedTargetOrModelFirst: the latency deep dive, the cost dashboard and the
// models dashboard name their series target first (the frames' "ttft p99 ·
// target=vllm-kv-pressure" and "replicas · profile=code-co…" were cut before the target),
// and the deep dive's legend is on the right (six statistics per target).
func TestSeriesNamedTargetOrModelFirst(t *testing.T) {
	checked := 0
	for _, l := range onCallPanels(t) {
		if l.p["type"] != "timeseries" {
			continue
		}
		var group string
		for _, q := range l.queries() {
			switch {
			case l.dash == "inferscope-latency.json" && q["queryType"] == "latency":
				group = "target"
			case l.dash == "inferscope-cost.json" && (q["queryType"] == "cost" || q["queryType"] == "capacity"):
				group = "target"
			case l.dash == "inferscope-models.json" && q["queryType"] == "latency":
				// Per target and model since the seventh review (issue 33): target first.
				group = "target"
			}
		}
		if group == "" {
			continue
		}
		checked++
		name, _ := get(l.p, "fieldConfig", "defaults", "displayName").(string)
		if !strings.HasPrefix(name, "${__field.labels."+group+"}") {
			t.Errorf("%s: series named %q, not %s first", l.where(), name, group)
		}
		if l.dash == "inferscope-latency.json" && get(l.p, "options", "legend", "placement") != "right" {
			t.Errorf("%s: the deep dive's legend (six statistics per target) must be on the right", l.where())
		}
	}
	if checked < 8+7+3 {
		t.Errorf("%d panels checked, want at least 18 (8 latency, 7 cost, 3 models)", checked)
	}
}

// TestLatencyOverridesMatchTheTargetFirstNames: Grafana anchors a field-name regexp at both
// ends, so the deep dive's overrides (bounds hidden, max dashed, a colour per statistic) must
// match the names latencyBoundsTargetName gives ("vllm-a p99 " with an empty bound, "vllm-a
// p99 lower"); a first cut of the target-first names left max solid and the colours off.
func TestLatencyOverridesMatchTheTargetFirstNames(t *testing.T) {
	name := func(stat, bound string) string {
		r := strings.NewReplacer("${__field.labels.target}", "vllm-a", "${__field.labels.stat}", stat, "${__field.labels.bound}", bound)
		return r.Replace(latencyBoundsTargetName)
	}
	checked := 0
	for _, l := range onCallPanels(t) {
		if l.dash != "inferscope-latency.json" || l.p["type"] != "timeseries" {
			continue
		}
		checked++
		want := map[string]bool{name("max", ""): false, name("p99", ""): false, name("p99", "lower"): false}
		os, _ := get(l.p, "fieldConfig", "overrides").([]any)
		for _, o := range os {
			om := o.(map[string]any)
			if get(om, "matcher", "id") != "byRegexp" {
				continue
			}
			re, err := regexp.Compile("^(?:" + get(om, "matcher", "options").(string) + ")$")
			if err != nil {
				t.Fatal(err)
			}
			for n := range want {
				if re.MatchString(n) {
					want[n] = true
				}
			}
		}
		for n, ok := range want {
			if !ok {
				t.Errorf("%s: no override matches the series %q", l.where(), n)
			}
		}
	}
	if checked == 0 {
		t.Fatal("no latency panel")
	}
}

// TestTargetsDownTileCountsTheState: the overview's "Targets down" tile sums the targets
// frame's not_up (state down, stale or not scraped yet); before, it counted the raw up series,
// whose last value stays 1 after scrapes stop, so a stale target read "all up" there while the
// targets dashboard said stale.
func TestTargetsDownTileCountsTheState(t *testing.T) {
	checked := 0
	for _, l := range onCallPanels(t) {
		if l.dash != "inferscope-overview.json" || l.p["title"] != "Targets down" {
			continue
		}
		checked++
		q := jsonText(l.p["targets"])
		if !strings.Contains(q, `"queryType":"targets"`) || strings.Contains(q, `"metric":"up"`) {
			t.Errorf("%s: queries %s; want the targets query type, not the raw up series", l.where(), q)
		}
		calcs := strs(get(l.p, "options", "reduceOptions", "calcs"))
		fields, _ := get(l.p, "options", "reduceOptions", "fields").(string)
		if len(calcs) != 1 || calcs[0] != "sum" || fields != "/^not_up$/" {
			t.Errorf("%s: reduces %v over %q; want sum over /^not_up$/", l.where(), calcs, fields)
		}
	}
	if checked != 1 {
		t.Errorf("%d \"Targets down\" tiles on the overview, want 1", checked)
	}
}

// legendRows is how many series a bottom table legend shows on a panel h
// grid rows high (issue 33: the reviewer found 4-series legends cut to 3):
// Grafana gives a bottom legend at most 35 % of the panel's content (h × 30
// px plus 8 px per gap, less the 40 px title), 22 px a line, one line the
// header. 3 rows at height 8 and 9, 4 at 10 and 11, 5 at 12.
func legendRows(h uint32) int {
	content := float64(h)*30 + float64(h-1)*8 - 40
	return int(0.35*content/22) - 1
}
