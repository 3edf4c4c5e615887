package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// The final review of issue 33 ranked, on the screenshots: legend names dark grey on the
// dark canvas, panels that pool both targets without saying so (the overview's "Now" tiles,
// traffic panels and heatmaps, the whole models dashboard), cut-off "why" text, the mean
// TTFT tile in neutral blue at 15× the objective, and raw frame field names (fb_used,
// knee_error, last_scrape, cost_per_1m_output_tokens) in legends and headers. Each test
// below failed on the dashboards committed before that review.

// pooledQueryTypes are the query types whose series are summed or merged over the selected
// targets unless grouped by target.
var pooledQueryTypes = map[string]bool{"throughput": true, "latency": true, "saturation": true, "breakdown": true}

// TestPooledPanelsSayAllTargets: a panel whose query merges the selected targets (grouped by
// none, model or engine and summed across them, or a heatmap of all of them) says so in its
// title, "(all targets)", or shows one value per target.
func TestPooledPanelsSayAllTargets(t *testing.T) {
	checked := 0
	for _, l := range onCallPanels(t) {
		title, _ := l.p["title"].(string)
		// The KV-cache peak and max are the worst engine's value, a max, not a sum or mean.
		if l.p["type"] == "row" || title == kvPeakTitle || title == "KV-cache usage: max and spread across engines" {
			continue
		}
		pooled := false
		for _, q := range l.queries() {
			qt, _ := q["queryType"].(string)
			g, _ := q["groupBy"].(string)
			if !pooledQueryTypes[qt] || g == "target" || g == "target_model" {
				continue
			}
			if g == "engine" && !strings.Contains(jsonText(l.p["transformations"]), "reduceRow") {
				continue // one series per engine, named by it
			}
			pooled = true
		}
		if !pooled {
			continue
		}
		checked++
		if !strings.HasSuffix(title, "(all targets)") {
			t.Errorf("%s: merges the selected targets and its title does not say \"(all targets)\"", l.where())
		}
	}
	// Overview: 2 tiles (input and output tokens share one since the seventh review), 4
	// traffic panels, 3 heatmaps, prompt tokens by source; latency: 3 heatmaps (the models
	// dashboard's stage breakdown, the last pooled one there, is per target and model since
	// review 8).
	if checked < 13 {
		t.Errorf("%d pooled panels checked, want the overview's, the latency heatmaps and the models dashboard's", checked)
	}
	for _, l := range onCallPanels(t) {
		if l.dash == "inferscope-overview.json" && (l.p["title"] == "Running" || l.p["title"] == "Prefix-cache hits") {
			if name, _ := get(l.p, "fieldConfig", "defaults", "displayName").(string); name != perTargetTileName {
				t.Errorf("%s: not one tile per target (displayName %q)", l.where(), name)
			}
		}
	}
}

// TestMeanTTFTColouredByProfile: the mean TTFT tile asks for the selected profile, so that
// the data source sets the TTFT objective's threshold on each series (green below, red from
// it), and drops the spike markers the profile adds.
func TestMeanTTFTColouredByProfile(t *testing.T) {
	found := false
	for _, l := range onCallPanels(t) {
		if l.p["title"] != meanTTFTTitle {
			continue
		}
		found = true
		for _, q := range l.queries() {
			if q["profile"] != "$profile" {
				t.Errorf("%s: query without the selected profile: the tile has no objective threshold", l.where())
			}
		}
		if !strings.Contains(jsonText(l.p["transformations"]), "spike") {
			t.Errorf("%s: the profile's spike markers are not dropped (they would be tiles)", l.where())
		}
	}
	if !found {
		t.Error("no Mean TTFT per target tile")
	}
}

// overrideDisplayNamesByMatcher maps each override's matcher option to the displayName it sets.
func overrideDisplayNamesByMatcher(p map[string]any) map[string]string {
	out := map[string]string{}
	ovs, _ := get(p, "fieldConfig", "overrides").([]any)
	for _, o := range ovs {
		om := o.(map[string]any)
		opt, _ := get(om, "matcher", "options").(string)
		ps, _ := om["properties"].([]any)
		for _, pr := range ps {
			pm := pr.(map[string]any)
			if pm["id"] == "displayName" {
				out[opt], _ = pm["value"].(string)
			}
		}
	}
	return out
}

// TestRawFieldNamesGetReadableNames: the GPU panels' signals, the cost statistics, the
// capacity tables' columns and the targets table's last scrape are shown by readable names
// (displayName overrides), not the frames' snake_case field names.
func TestRawFieldNamesGetReadableNames(t *testing.T) {
	snake := regexp.MustCompile(`[a-z]+_[a-z0-9_]+`)
	want := map[string][]string{ // panel title → frame names that must be renamed
		"Framebuffer memory":              {"fb_used", "fb_total"},
		"SM clock against its maximum":    {"sm_clock", "sm_clock_max"},
		"Power against its limit":         {"power", "power_limit"},
		"SM, DRAM and tensor activity":    {"sm_active", "dram_active", "tensor_active"},
		"Inventory":                       {"last_scrape"},
		"Capacity per target and profile": {"knee_error", "days_to_knee", "utilisation"},
		"What if":                         {"ttft_p50", "ttft_p99_error", "tpot_p99_error", "worst_objective"},
		"Calibrated parameters":           {"fit_error"},
		"Cost per 1M tokens":              {"cost_per_1m_output_tokens", "cost_per_1m_tokens"},
		"Cost per hour: idle, prefill, decode": {"idle_cost_per_hour", "decode_cost_per_hour",
			"prefill_cost_per_hour"},
		"Idle share":                    {"idle_share"},
		"Prefix-cache savings per hour": {"prefix_cache_savings_per_hour"},
	}
	seen := map[string]bool{}
	for _, l := range onCallPanels(t) {
		title, _ := l.p["title"].(string)
		fields, ok := want[title]
		if !ok {
			continue
		}
		seen[title] = true
		names := overrideDisplayNamesByMatcher(l.p)
		for _, f := range fields {
			renamed := ""
			for opt, name := range names {
				if opt == f || strings.HasPrefix(opt, f+" ") || strings.Contains(opt, " "+f+"(") {
					renamed = name
				}
			}
			if renamed == "" {
				t.Errorf("%s: %s has no readable displayName", l.where(), f)
				continue
			}
			if m := snake.FindString(regexp.MustCompile(`\$\{[^}]*\}`).ReplaceAllString(renamed, "")); m != "" {
				t.Errorf("%s: %s is named %q, still snake_case (%s)", l.where(), f, renamed, m)
			}
		}
	}
	for title := range want {
		if !seen[title] {
			t.Errorf("no panel %q", title)
		}
	}
}

// TestWhyTextWraps: the SLO table's Why column and the diagnosis tables' summary, evidence
// and advice wrap (at most tableMaxRowHeight per row) in columns wide enough to read, the
// mostly empty "not checked" column narrow.
func TestWhyTextWraps(t *testing.T) {
	checked := 0
	for _, l := range onCallPanels(t) {
		title, _ := l.p["title"].(string)
		ovs := jsonText(get(l.p, "fieldConfig", "overrides"))
		switch {
		case l.dash == "inferscope-slo.json" && title == "Objectives":
			checked++
			if !regexp.MustCompile(`"options":"Why"[^\]]*"custom.wrapText"`).MatchString(ovs) {
				t.Errorf("%s: the Why column does not wrap", l.where())
			}
			if h, _ := get(l.p, "options", "maxRowHeight").(float64); h < 40 || h > 120 {
				t.Errorf("%s: maxRowHeight %v, want 40 to 120 px (a wrapped reason filled the panel)", l.where(), h)
			}
		case title == "Diagnosis now: evidence and advice" || title == sloDiagnosisTitle:
			checked++
			if !regexp.MustCompile(`"options":"not checked"[^\]]*"custom.width","value":1[0-4][0-9]`).MatchString(ovs) {
				t.Errorf("%s: the not checked column is not narrow (under 150 px)", l.where())
			}
			if !regexp.MustCompile(`"options":"summary\|evidence\|advice"[^\]]*"custom.minWidth","value":3[0-9][0-9]`).MatchString(ovs) {
				t.Errorf("%s: summary, evidence and advice have no minimum width of 300 px", l.where())
			}
		}
	}
	if checked != 3 {
		t.Errorf("%d tables checked, want the SLO objectives and both diagnosis tables", checked)
	}
}

// TestHarnessButtonsInheritTextColour: the legends' series names are buttons; the screenshot
// page gives buttons the inherited text colour, as Grafana's global element styles do
// (without it they took the browser's near-black button text).
func TestHarnessButtonsInheritTextColour(t *testing.T) {
	src, err := os.ReadFile(filepath.Join("..", "..", "harness", "panels.html"))
	if err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`button[^{]*\{[^}]*color:\s*inherit`).Match(src) {
		t.Error("harness/panels.html: buttons do not inherit the text colour")
	}
}
