package main

import (
	"fmt"
	"regexp"
	"strings"
	"testing"
)

// The eighth review of issue 33 (an on-call SRE on the models, cost & capacity and GPU
// screenshots) found: a models panel of four p50 series, TPOT and ITL alike, in identical
// near-white dotted swatches with no p99 and no SLO line; legends cut by the long model name;
// a stage breakdown pooling a 4 ms and a 19 s mean queue under a title promising gateway time
// the demo has none of; no answer to "is the SLO met, which endpoint, why" on the page; and
// on the GPU page SM, DRAM and tensor activity in one colour per target. Each test below
// failed on the dashboards committed before that review.

// seriesProp is the value a panel gives property id of a series of display name name: the
// last matching override's (byName exactly, byRegexp anchored at both ends), else the
// panel default's (fieldConfig.defaults.custom for a custom.* id), nil where neither sets it.
func seriesProp(p map[string]any, name, id string) any {
	var v any
	if k, ok := strings.CutPrefix(id, "custom."); ok {
		v = get(p, "fieldConfig", "defaults", "custom", k)
	} else {
		v = get(p, "fieldConfig", "defaults", id)
	}
	ovs, _ := get(p, "fieldConfig", "overrides").([]any)
	for _, o := range ovs {
		om := o.(map[string]any)
		mid, _ := get(om, "matcher", "id").(string)
		opt, _ := get(om, "matcher", "options").(string)
		match := false
		switch mid {
		case "byName":
			match = opt == name
		case "byRegexp":
			re, err := regexp.Compile("^(?:" + opt + ")$")
			match = err == nil && re.MatchString(name)
		}
		if !match {
			continue
		}
		prs, _ := om["properties"].([]any)
		for _, pr := range prs {
			if pm := pr.(map[string]any); pm["id"] == id {
				v = pm["value"]
			}
		}
	}
	return v
}

// lineLook is how a series is drawn apart from its colour: its line style and width.
func lineLook(p map[string]any, name string) string {
	return jsonText(seriesProp(p, name, "custom.lineStyle")) + " width " + jsonText(seriesProp(p, name, "custom.lineWidth"))
}

// modelsPanels are the models dashboard's panels outside its gateway rows.
func modelsPanels(t *testing.T) []lintPanel {
	t.Helper()
	var out []lintPanel
	for _, l := range onCallPanels(t) {
		if l.dash == "inferscope-models.json" && !l.collapsed {
			out = append(out, l)
		}
	}
	if len(out) == 0 {
		t.Fatal("no open panel on the models dashboard")
	}
	return out
}

// TestModelsTokenLatencyIsReadable: the models dashboard draws time per output token and the
// inter-token (chunk) gap on panels of their own, each with p50 and p99 per target under the
// selected profile (so the data source draws the SLO threshold) and a title that names the
// threshold line; on each, every target's p50 and p99 differ in colour and in line, and the
// two targets' p99s and p50s differ in colour.
func TestModelsTokenLatencyIsReadable(t *testing.T) {
	targets := provisionedTargets(t)
	stages := map[string]int{}
	for _, l := range modelsPanels(t) {
		for _, q := range l.queries() {
			if q["queryType"] != "latency" {
				continue
			}
			st := strs(q["stages"])
			if len(st) != 1 {
				t.Errorf("%s: stages %v on one panel: a stage per panel, named in its title", l.where(), st)
				continue
			}
			if st[0] != "tpot" && st[0] != "itl" {
				continue
			}
			stages[st[0]]++
			stats := strings.Join(strs(q["stats"]), ",")
			if !strings.Contains(stats, "p50") || !strings.Contains(stats, "p99") {
				t.Errorf("%s: stats %s, want p50 and p99", l.where(), stats)
			}
			if q["profile"] != "$profile" {
				t.Errorf("%s: no profile in the query, so no SLO threshold line", l.where())
			}
			if title, _ := l.p["title"].(string); !strings.Contains(title, "SLO") {
				t.Errorf("%s: the title does not name the SLO threshold line", l.where())
			}
			colour := map[string]string{}
			for _, tg := range targets {
				name := map[string]string{}
				for _, s := range []string{"p50", "p99"} {
					name[s] = displayNameFor(l.p, map[string]string{"target": tg, "stat": s, "stage": st[0], "model": "meta-llama/Llama-3.1-8B-Instruct", "bound": ""})
					_, c := seriesColour(l.p, name[s])
					if other, ok := colour[s+" "+c]; ok {
						t.Errorf("%s: %q and %s's %s share the colour %q", l.where(), name[s], other, s, c)
					}
					colour[s+" "+c] = tg
				}
				_, c50 := seriesColour(l.p, name["p50"])
				_, c99 := seriesColour(l.p, name["p99"])
				if c50 == c99 || lineLook(l.p, name["p50"]) == lineLook(l.p, name["p99"]) {
					t.Errorf("%s: %q and %q are drawn alike (%s %s, %s %s)", l.where(), name["p50"], name["p99"], c50, lineLook(l.p, name["p50"]), c99, lineLook(l.p, name["p99"]))
				}
			}
		}
	}
	if stages["tpot"] != 1 || stages["itl"] != 1 {
		t.Errorf("panels per stage %v, want one TPOT and one ITL panel", stages)
	}
}

// TestModelsLegendsLeaveOutTheModel: no series name of the models dashboard's per-target
// panels carries the model (the demo's one model, "meta-llama/Llama-3.1-8B-Instruct", cut
// every legend), and each such panel's description says where the models are named.
func TestModelsLegendsLeaveOutTheModel(t *testing.T) {
	checked := 0
	for _, l := range modelsPanels(t) {
		if l.p["type"] != "timeseries" {
			continue
		}
		checked++
		names := fmt.Sprint(get(l.p, "fieldConfig", "defaults", "displayName")) + overrideDisplayNames(l.p)
		desc, _ := l.p["description"].(string)
		switch {
		case strings.Contains(names, "labels.model") && !strings.Contains(names, "gateway and network · ${__field.labels.model}"):
			t.Errorf("%s: series names carry the model: %s", l.where(), names)
		case !strings.Contains(desc, "named in the table at the top") && !strings.Contains(desc, "per model"):
			t.Errorf("%s: the description does not say where the model is named", l.where())
		}
	}
	if checked != 7 {
		t.Errorf("%d models time series checked, want 7 (TTFT, E2E, TPOT, ITL, requests, tokens, stages)", checked)
	}
}

// TestModelsPoolNothingAndSayWhatTheGatewayRowNeeds: every open models panel is per target
// (no "(all targets)"), and the stage breakdown's title says what its gateway and network
// series needs (the demo has no llm-d router).
func TestModelsPoolNothingAndSayWhatTheGatewayRowNeeds(t *testing.T) {
	breakdown := 0
	for _, l := range modelsPanels(t) {
		title, _ := l.p["title"].(string)
		for _, q := range l.queries() {
			if qt, _ := q["queryType"].(string); !pooledQueryTypes[qt] {
				continue
			}
			if g := q["groupBy"]; g != "target" && g != "target_model" {
				t.Errorf("%s: grouped by %v, which pools the targets", l.where(), g)
			}
			if q["queryType"] == "breakdown" {
				breakdown++
				if strings.Contains(title, "gateway") && !strings.Contains(title, "needs an llm-d router") {
					t.Errorf("%s: promises gateway time without saying what it needs", l.where())
				}
			}
		}
	}
	if breakdown != 1 {
		t.Errorf("%d stage breakdowns, want 1", breakdown)
	}
}

// TestModelsOpensWithTheFiveSecondAnswer: the models dashboard's first row holds the SLO
// status per target and model with the diagnosis that holds now (is the SLO met, which
// endpoint, why).
func TestModelsOpensWithTheFiveSecondAnswer(t *testing.T) {
	panels := committedDashboardsRaw(t)["inferscope-models.json"]
	if len(panels) < 2 || panels[0]["type"] != "row" {
		t.Fatal("the models dashboard does not open with a row")
	}
	if title, _ := panels[0]["title"].(string); !strings.Contains(title, "SLO") {
		t.Errorf("the first row is %q, not the SLO answer", title)
	}
	var slo, diagnosis bool
	for _, q := range (lintPanel{p: panels[1]}).queries() {
		slo = slo || (q["queryType"] == "slo" && q["groupBy"] == "target_model" && q["profile"] == "$profile")
		diagnosis = diagnosis || q["queryType"] == "diagnosis"
	}
	if !slo || !diagnosis {
		t.Errorf("the first panel %q has slo by target and model %v, diagnosis %v; want both", panels[1]["title"], slo, diagnosis)
	}
}
