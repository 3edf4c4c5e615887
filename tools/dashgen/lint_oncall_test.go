package main

import (
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// The on-call lint (issue 33) reads the committed dashboards and alert
// rules and checks what an SRE needs to answer "is the SLO met, which
// endpoint is bad, why" in five seconds. Each rule failed on the dashboards
// before issue 33:
//   - the overview has rows per target and model (an slo table grouped by
//     target_model, joined with the diagnosis; a per-target-and-model table)
//     and per-target latency panels;
//   - thresholds of latency come from the profile: no panel reading a
//     latency query carries fixed threshold steps, and every such panel
//     with a p99 names the profile;
//   - every latency panel with a p99 also asks for max (spike vs sustained);
//   - a stat with one tile per row names each tile from the row's fields;
//   - a panel that is empty by default (probe, HTTP metrics, GPU without an
//     agent, capacity before 30 min of history, cost without prices) sits in
//     a collapsed row or says what fills it (noValue);
//   - legends: per-GPU series are named by their target and GPU index;
//     merged latency panels give each statistic its own colour; bucket
//     bounds are kept out of the plot (hover);
//   - errors exclude client aborts; availability is no raw `up`;
//   - the bucket advice shows the argument to paste, not raw JSON;
//   - every alert rule has a runbook_url and no `runbook` key; the
//     diagnosis rules carry evidence and advice.

// lintPanel is one panel with the row it sits in.
type lintPanel struct {
	dash, row string
	collapsed bool
	p         map[string]any
}

// onCallPanels lists every non-row panel of the committed dashboards with
// its row (panels of a collapsed row are nested in it).
func onCallPanels(t *testing.T) []lintPanel {
	t.Helper()
	var out []lintPanel
	for name, d := range committedDashboardsRaw(t) {
		row, collapsed := "", false
		for _, p := range d {
			if p["type"] == "row" {
				row, _ = p["title"].(string)
				collapsed, _ = p["collapsed"].(bool)
				if sub, ok := p["panels"].([]any); ok {
					for _, q := range sub {
						out = append(out, lintPanel{name, row, true, q.(map[string]any)})
					}
				}
				continue
			}
			out = append(out, lintPanel{name, row, collapsed, p})
		}
	}
	return out
}

// committedDashboardsRaw is committedDashboards' panels, not flattened.
func committedDashboardsRaw(t *testing.T) map[string][]map[string]any {
	t.Helper()
	out := map[string][]map[string]any{}
	for name := range committedDashboards(t) {
		raw := readDashboard(t, name)
		var d struct {
			Panels []map[string]any `json:"panels"`
		}
		if err := json.Unmarshal(raw, &d); err != nil {
			t.Fatal(err)
		}
		out[name] = d.Panels
	}
	return out
}

func (l lintPanel) where() string { return fmt.Sprintf("%s: panel %q", l.dash, l.p["title"]) }

func (l lintPanel) queries() []map[string]any {
	var out []map[string]any
	ts, _ := l.p["targets"].([]any)
	for _, q := range ts {
		out = append(out, q.(map[string]any))
	}
	return out
}

func strs(v any) []string {
	l, _ := v.([]any)
	var out []string
	for _, e := range l {
		s, _ := e.(string)
		out = append(out, s)
	}
	return out
}

func jsonText(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

func TestOverviewHasRowsPerTargetAndModel(t *testing.T) {
	var endpointTable, perTargetModel, perTargetLatency bool
	for _, l := range onCallPanels(t) {
		if l.dash != "inferscope-overview.json" {
			continue
		}
		qs := l.queries()
		types := map[string]map[string]any{}
		for _, q := range qs {
			types[q["queryType"].(string)] = q
		}
		if l.p["type"] == "table" {
			if s, ok := types["slo"]; ok && s["groupBy"] == "target_model" {
				if _, ok := types["diagnosis"]; ok {
					endpointTable = true
				}
			}
			if b, ok := types["breakdown"]; ok && b["groupBy"] == "target_model" {
				perTargetModel = true
			}
			for _, q := range qs {
				if q["groupBy"] == "model" {
					t.Errorf("%s: a table grouped by model alone merges the targets serving it", l.where())
				}
			}
		}
		if lq, ok := types["latency"]; ok && l.p["type"] == "timeseries" && lq["groupBy"] == "target" && slices.Contains(strs(lq["stats"]), "p99") && lq["source"] == nil {
			perTargetLatency = true
		}
	}
	if !endpointTable {
		t.Error("the overview has no table of slo rows grouped by target_model joined with the diagnosis (one row per endpoint, worst first)")
	}
	if !perTargetModel {
		t.Error("the overview has no per-target-and-model table")
	}
	if !perTargetLatency {
		t.Error("the overview has no latency panel with a p99 per target")
	}
}

func TestLatencyThresholdsComeFromTheProfile(t *testing.T) {
	for _, l := range onCallPanels(t) {
		for _, q := range l.queries() {
			if q["queryType"] != "latency" || q["format"] == "heatmap" {
				continue
			}
			steps, _ := get(l.p, "fieldConfig", "defaults", "thresholds", "steps").([]any)
			if len(steps) > 1 {
				t.Errorf("%s: fixed threshold steps %v on a latency query: the profile's objective sets the level", l.where(), steps)
			}
			if slices.Contains(strs(q["stats"]), "p99") && q["source"] == nil && q["profile"] != "$profile" {
				t.Errorf("%s: a p99 without the selected profile draws no SLO line", l.where())
			}
		}
	}
}

func TestLatencyPanelsShowMax(t *testing.T) {
	for _, l := range onCallPanels(t) {
		if l.p["type"] != "timeseries" {
			continue
		}
		for _, q := range l.queries() {
			stats := strs(q["stats"])
			if q["queryType"] == "latency" && q["source"] == nil && slices.Contains(stats, "p99") && !slices.Contains(stats, "max") {
				t.Errorf("%s: p99 without max: a spike cannot be told from sustained degradation", l.where())
			}
		}
	}
}

func TestStatTilesAreLabelled(t *testing.T) {
	for _, l := range onCallPanels(t) {
		if l.p["type"] != "stat" && l.p["type"] != "gauge" {
			continue
		}
		if get(l.p, "options", "reduceOptions", "values") != true {
			continue
		}
		name, _ := get(l.p, "fieldConfig", "defaults", "displayName").(string)
		// A field renamed by a transformation is named by an override (its
		// own displayName beats the panel default).
		name += overrideDisplayNames(l.p)
		if !strings.Contains(name, "${__data.fields.") {
			t.Errorf("%s: one tile per row, but the tiles are not named from the row (displayName %q)", l.where(), name)
		}
	}
}

// emptyByDefault says why a panel's query is empty in a default setup, or "".
func emptyByDefault(q map[string]any) string {
	switch {
	case q["queryType"] == "probe" || q["source"] == "probe":
		return "no probe configured"
	case q["queryType"] == "raw" && strings.HasPrefix(fmt.Sprint(q["metric"]), "http_"):
		return "the embedded collector stores no http_* family"
	case q["queryType"] == "raw" && q["metric"] == "vllm:engine_sleep_state":
		return "engines before vLLM 0.11 export no sleep state"
	case q["queryType"] == "gpu":
		return "no GPU agent"
	case q["queryType"] == "cost":
		return "no prices"
	case q["queryType"] == "capacity":
		return "under 30 minutes of history"
	case q["queryType"] == "errors":
		return "no gateway (LiteLLM, OpenTelemetry GenAI) among the targets"
	}
	return ""
}

func TestEmptyByDefaultPanelsAreCollapsedOrHinted(t *testing.T) {
	for _, l := range onCallPanels(t) {
		for _, q := range l.queries() {
			why := emptyByDefault(q)
			if why == "" || l.collapsed {
				continue
			}
			if hint, _ := get(l.p, "fieldConfig", "defaults", "noValue").(string); len(hint) < 20 {
				t.Errorf("%s: empty by default (%s), neither in a collapsed row nor saying what fills it (noValue)", l.where(), why)
			}
			break
		}
	}
}

func TestLegendsNameGPUsByTarget(t *testing.T) {
	for _, l := range onCallPanels(t) {
		if l.p["type"] != "timeseries" {
			continue
		}
		for _, q := range l.queries() {
			if q["queryType"] != "gpu" {
				continue
			}
			name, _ := get(l.p, "fieldConfig", "defaults", "displayName").(string)
			// serving (issue 33): the inference targets the GPU serves and its agent,
			// not the agent alone.
			if !strings.Contains(name, "${__field.labels.serving}") || !strings.Contains(name, "${__field.labels.gpu}") {
				t.Errorf("%s: GPU series are not named by the inference targets they serve and their GPU (displayName %q, want the serving label): two GPU 0s read alike and the legend does not say whose GPU burns", l.where(), name)
			}
		}
	}
}

// overrideMatchers returns the byRegexp/byName matchers of a panel's
// overrides that set property id (with value, when value is not nil).
func overrideMatchers(p map[string]any, id string) []string {
	var out []string
	os, _ := get(p, "fieldConfig", "overrides").([]any)
	for _, o := range os {
		om := o.(map[string]any)
		for _, pr := range om["properties"].([]any) {
			if pr.(map[string]any)["id"] == id {
				out = append(out, fmt.Sprint(get(om, "matcher", "options")))
			}
		}
	}
	return out
}

func TestLatencyPanelsColourQuantilesAndHideBands(t *testing.T) {
	for _, l := range onCallPanels(t) {
		if l.p["type"] != "timeseries" {
			continue
		}
		for _, q := range l.queries() {
			if q["queryType"] != "latency" {
				continue
			}
			stats := strs(q["stats"])
			if q["bounds"] != false {
				hidden := false
				for _, m := range overrideMatchers(l.p, "custom.hideFrom") {
					if re, err := regexp.Compile(m); err == nil && re.MatchString("ttft p99 lower") && re.MatchString("ttft p99 upper · target=a") && !re.MatchString("ttft p99") {
						hidden = true
					}
				}
				if !hidden {
					t.Errorf("%s: the bucket-bound bands fill the plot: keep them for the tooltip (hideFrom viz)", l.where())
				}
			}
			if (q["groupBy"] == nil || q["groupBy"] == "none") && len(stats) > 2 {
				colours := overrideMatchers(l.p, "color")
				for _, st := range stats {
					ok := false
					for _, m := range colours {
						if re, err := regexp.Compile(m); err == nil && re.MatchString("ttft "+st) {
							ok = true
						}
					}
					if !ok {
						t.Errorf("%s: %s has no colour of its own: quantiles share palette colours", l.where(), st)
					}
				}
			}
		}
	}
}

func TestErrorsExcludeAbortsAndAvailabilityIsTheObjective(t *testing.T) {
	for _, l := range onCallPanels(t) {
		if strings.Contains(jsonText(l.p["transformations"]), `"include":["requests/s abort"`) {
			t.Errorf("%s: counts client aborts (finish reason abort) as errors", l.where())
		}
		if strings.Contains(strings.ToLower(fmt.Sprint(l.p["title"])), "availability") {
			for _, q := range l.queries() {
				if q["queryType"] == "raw" && q["metric"] == "up" {
					t.Errorf("%s: availability read from scrape up, not the profile's availability objective", l.where())
				}
			}
		}
	}
}

func TestBucketAdviceShowsTheArgumentToPaste(t *testing.T) {
	seen := false
	for _, l := range onCallPanels(t) {
		for _, q := range l.queries() {
			if q["queryType"] != "buckets" {
				continue
			}
			seen = true
			tr := jsonText(l.p["transformations"])
			if !strings.Contains(tr, `"custom_histogram_buckets":true`) || !strings.Contains(tr, `"extra_bounds":true`) || !strings.Contains(tr, `"flag":`) {
				t.Errorf("%s: shows raw JSON columns instead of the flag to paste", l.where())
			}
		}
	}
	if !seen {
		t.Error("no bucket-advice panel")
	}
}

func TestEveryRuleHasARunbookURLAndTheDiagnosisRulesTheirEvidence(t *testing.T) {
	var f struct {
		Groups []struct {
			Rules []struct {
				UID         string            `yaml:"uid"`
				Annotations map[string]string `yaml:"annotations"`
				Data        []struct {
					Model map[string]any `yaml:"model"`
				} `yaml:"data"`
			} `yaml:"rules"`
		} `yaml:"groups"`
	}
	readYAML(t, "provisioning/alerting/inferscope-rules.yaml", &f)
	n := 0
	for _, g := range f.Groups {
		for _, r := range g.Rules {
			n++
			if !strings.HasPrefix(r.Annotations["runbook_url"], "https://") {
				t.Errorf("%s: no runbook_url", r.UID)
			}
			if _, ok := r.Annotations["runbook"]; ok {
				t.Errorf("%s: annotation runbook: Grafana links runbook_url only", r.UID)
			}
			if len(r.Data) > 0 && r.Data[0].Model["queryType"] == "diagnosis" {
				if len(r.Annotations["evidence"]) < 40 || len(r.Annotations["advice"]) < 20 {
					t.Errorf("%s: a diagnosis rule without its evidence and advice annotations", r.UID)
				}
				if r.Annotations["__panelId__"] != fmt.Sprint(diagnosisNowPanelID) {
					t.Errorf("%s: links to panel %s, not the overview's Diagnosis now (evidence and advice)", r.UID, r.Annotations["__panelId__"])
				}
			}
		}
	}
	if n == 0 {
		t.Fatal("no rule read")
	}
}

// TestTableHintsStayOutOfCells: Grafana shows a table's noValue in every
// empty cell, so a table with a hint (noValue) gives its fields a dash of
// their own; otherwise "No price …" fills the legitimately empty cells.
func TestTableHintsStayOutOfCells(t *testing.T) {
	for _, l := range onCallPanels(t) {
		if l.p["type"] != "table" {
			continue
		}
		if hint, _ := get(l.p, "fieldConfig", "defaults", "noValue").(string); hint == "" {
			continue
		}
		os, _ := get(l.p, "fieldConfig", "overrides").([]any)
		ok := false
		for _, o := range os {
			om := o.(map[string]any)
			if get(om, "matcher", "options") == ".*" && strings.Contains(jsonText(om["properties"]), `"noValue"`) {
				ok = true
			}
		}
		if !ok {
			t.Errorf("%s: its hint would fill every empty cell (no field-level noValue for all fields)", l.where())
		}
	}
}

// TestBurnStatusTilesDoNotContradictTheBudget (issue 33): a stat tile that
// shows the burn-rate alert status (the slo frame's status_value) on a
// dashboard that also shows the error budget must not say a green "OK" for
// status 0, since the alerts judge the burn in the 5m … 3d windows and a
// budget overspent earlier in the period (budget_remaining −8.11) sits
// beside it with status 0; its description must say it is not the budget
// spent and name the Error budget left tile. Before issue 33's change the
// overview's "Burn-rate alert status" tile mapped 0 to a green "OK" and its
// description did not mention the budget already spent.
func TestBurnStatusTilesDoNotContradictTheBudget(t *testing.T) {
	byDash := map[string][]lintPanel{}
	for _, l := range onCallPanels(t) {
		byDash[l.dash] = append(byDash[l.dash], l)
	}
	checked := 0
	for dash, ps := range byDash {
		budget := false
		for _, l := range ps {
			if l.p["type"] == "stat" && strings.Contains(jsonText(l.p["transformations"]), "budget_remaining") {
				budget = true
			}
		}
		if !budget {
			continue
		}
		for _, l := range ps {
			if l.p["type"] != "stat" || !strings.Contains(jsonText(l.p["transformations"]), "status_value") {
				continue
			}
			checked++
			maps, _ := get(l.p, "fieldConfig", "defaults", "mappings").([]any)
			for _, m := range maps {
				opts, _ := get(m.(map[string]any), "options").(map[string]any)
				zero, ok := opts["0"].(map[string]any)
				if !ok {
					continue
				}
				text, _ := zero["text"].(string)
				color, _ := zero["color"].(string)
				if strings.EqualFold(text, "OK") || color == "green" {
					t.Errorf("%s (%s): status 0 reads %q in %q beside an error budget that can be overspent; say what the alerts judge (e.g. No alert firing) in a neutral colour", l.where(), dash, text, color)
				}
			}
			desc, _ := l.p["description"].(string)
			if !strings.Contains(desc, "already spent") || !strings.Contains(desc, "Error budget left") {
				t.Errorf("%s: the description must say the status is not the budget already spent and point to Error budget left", l.where())
			}
		}
	}
	if checked == 0 {
		t.Error("no burn-rate status tile beside an error budget tile found: the overview lost its SLO tiles")
	}
}

// TestParityPanelsExist (issue 33): the rows of the parity table in
// docs/dashboards-and-alerts.md that name one of our panels have it on the
// named dashboard. Before issue 33's change the overview had no engine sleep
// state and no prompt-tokens-by-source panel (the parity rows said "not yet").
func TestParityPanelsExist(t *testing.T) {
	want := map[string][]string{
		"inferscope-overview.json": {"Engine sleep state", "Prompt tokens by source" + allTargets},
	}
	have := map[string]map[string]lintPanel{}
	for _, l := range onCallPanels(t) {
		if have[l.dash] == nil {
			have[l.dash] = map[string]lintPanel{}
		}
		title, _ := l.p["title"].(string)
		have[l.dash][title] = l
	}
	for dash, titles := range want {
		for _, title := range titles {
			l, ok := have[dash][title]
			if !ok {
				t.Errorf("%s: no panel %q (docs/dashboards-and-alerts.md's parity table names it)", dash, title)
				continue
			}
			if title == "Prompt tokens by source" {
				if qs := l.queries(); len(qs) != 1 || qs[0]["queryType"] != "throughput" || !strings.Contains(jsonText(l.p["transformations"]), "prompt tokens by source") {
					t.Errorf("%s: %q must keep the throughput query's prompt tokens by source series", dash, title)
				}
				if !l.collapsed {
					t.Errorf("%s: %q is empty before vLLM 0.13 and must sit in a collapsed row", dash, title)
				}
			}
			if title == "Engine sleep state" {
				qs := l.queries()
				if len(qs) != 1 || qs[0]["queryType"] != "raw" || qs[0]["metric"] != "vllm:engine_sleep_state" {
					t.Errorf("%s: %q must read the raw gauge vllm:engine_sleep_state, reads %s", dash, title, jsonText(qs))
				}
				if !l.collapsed {
					t.Errorf("%s: %q is empty before vLLM 0.11 and must sit in a collapsed row", dash, title)
				}
			}
		}
	}
}

// TestBucketAdviceSaysWhereTheQuantileLies (issue 33): where a quantile's
// bucket is wide, the bucket advice shows the buckets frame's lies_in cue
// ("p99 lies in 250–500 ms") under a readable name, not hidden. Before issue
// 33's change the frame had no such field and the panel no such column.
func TestBucketAdviceSaysWhereTheQuantileLies(t *testing.T) {
	seen := false
	for _, l := range onCallPanels(t) {
		for _, q := range l.queries() {
			if q["queryType"] != "buckets" {
				continue
			}
			seen = true
			var rename, exclude map[string]any
			for _, tr := range l.p["transformations"].([]any) {
				opts, _ := get(tr.(map[string]any), "options").(map[string]any)
				if r, ok := opts["renameByName"].(map[string]any); ok {
					rename = r
				}
				if e, ok := opts["excludeByName"].(map[string]any); ok {
					exclude = e
				}
			}
			if name, _ := rename["lies_in"].(string); name == "" {
				t.Errorf("%s: the lies_in cue (p99 lies in 250–500 ms) is not shown under a name", l.where())
			}
			if exclude["lies_in"] == true {
				t.Errorf("%s: the lies_in cue is excluded", l.where())
			}
			if desc, _ := l.p["description"].(string); !strings.Contains(desc, "lies in") {
				t.Errorf("%s: the description does not say what the where-it-lies column is", l.where())
			}
		}
	}
	if !seen {
		t.Error("no bucket-advice panel")
	}
}
