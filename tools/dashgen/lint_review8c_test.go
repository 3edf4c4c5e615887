package main

import (
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"
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

// costPanel is the cost dashboard's panel titled title (or whose title starts with it).
func costPanel(t *testing.T, title string) map[string]any {
	t.Helper()
	for _, l := range onCallPanels(t) {
		if got, _ := l.p["title"].(string); l.dash == "inferscope-cost.json" && strings.HasPrefix(got, title) {
			return l.p
		}
	}
	t.Fatalf("no cost panel %q", title)
	return nil
}

// TestReplicasSayWhichLoadTheyAreSizedFor: the capacity table's replicas are sized for the
// range's mean load and the chart's for each step's load over a window; each says which (the
// table's 3 beside the chart's last 2 read as a contradiction), and the chart's window is a
// stabilisation window of at least 10 minutes, not the minute's rate that jumped 2, 5, 2.
func TestReplicasSayWhichLoadTheyAreSizedFor(t *testing.T) {
	chart := costPanel(t, "Recommended replicas")
	q := (lintPanel{p: chart}).queries()[0]
	w, _ := q["window"].(string)
	if d, err := time.ParseDuration(w); err != nil || d < 10*time.Minute {
		t.Errorf("the replicas chart's window is %q, want 10m or more", w)
	}
	if title, _ := chart["title"].(string); w == "" || !strings.Contains(title, w) {
		t.Errorf("the replicas chart's title %q does not name its load window %q", title, w)
	}
	if desc, _ := chart["description"].(string); !strings.Contains(desc, "averaged over the whole range") {
		t.Error("the replicas chart does not say why the table's count can differ")
	}
	names := overrideDisplayNamesByMatcher(costPanel(t, "Capacity per target and profile"))
	if !strings.Contains(names["replicas"], "mean load") {
		t.Errorf("the capacity table's replicas column is headed %q, not by the load it is sized for", names["replicas"])
	}
}

// TestDaysToKneeTellsSafeFromUnread: the days-to-the-knee tile shows the days in words (the
// frame's days_to_knee_note), and "no rising trend" and a range too short to read a trend map
// to different texts and colours (one text, "no rising trend (or under a day)", merged them).
func TestDaysToKneeTellsSafeFromUnread(t *testing.T) {
	p := costPanel(t, "Days to the knee")
	// reduceOptions.fields matches display names (review 9: the note's name is the row's
	// "target · profile", so the regex must pick that name and not target's or profile's).
	f, _ := get(p, "options", "reduceOptions", "fields").(string)
	re := regexp.MustCompile(strings.Trim(f, "/"))
	note, _ := seriesProp(p, "days_to_knee_note", "displayName").(string)
	if note == "" {
		note = "days_to_knee_note"
	}
	if !re.MatchString(note) || re.MatchString("target") || re.MatchString("profile") {
		t.Errorf("the tile reads field %q, not days_to_knee_note (shown as %q)", f, note)
	}
	maps := jsonText(get(p, "fieldConfig", "defaults", "mappings"))
	if strings.Contains(maps, "or under a day") {
		t.Error("a mapping still merges no trend and under a day")
	}
	colour := func(value string) string {
		ms, _ := get(p, "fieldConfig", "defaults", "mappings").([]any)
		for _, m := range ms {
			pattern, _ := get(m.(map[string]any), "options", "pattern").(string)
			if re, err := regexp.Compile(pattern); pattern != "" && err == nil && re.MatchString(value) {
				c, _ := get(m.(map[string]any), "options", "result", "color").(string)
				return c
			}
		}
		return ""
	}
	// The texts are the backend's (twin.DaysToKneeWords); the colours lowerBad(7, 30)'s.
	for value, want := range map[string]string{"no rising trend": green, "no trend read: the range is under a day": grey,
		"past the knee now": red, "in 3.2 days": red, "in 12.0 days": amber, "in 45.0 days": green} {
		if got := colour(value); got != want {
			t.Errorf("%q is coloured %q, want %q", value, got, want)
		}
	}
}

// TestWhatIfFlagsTheTwinsMiss: the what-if table shows the observed p99s beside the
// predictions and the twin check, red where it starts "off"; it puts the lowest attainment
// first and is tall enough for two targets' six rows each (by hand: 13 rows of 36 px and a
// 40 px title are 508 px; 14 grid rows are 14 × 30 + 13 × 8 = 524 px), and the calibrated
// parameters for 2 × 15 rows (1156 px: 31 grid rows, 1170 px).
func TestWhatIfFlagsTheTwinsMiss(t *testing.T) {
	p := costPanel(t, "What if")
	names := overrideDisplayNamesByMatcher(p)
	for _, f := range []string{"ttft_p99_observed", "e2e_p99_observed", "note"} {
		if names[f] == "" {
			t.Errorf("the what-if table does not name its %s column", f)
		}
	}
	if tr := jsonText(p["transformations"]); strings.Contains(tr, `"note":true`) || strings.Contains(tr, `"ttft_p99_observed":true`) {
		t.Error("the what-if table hides the twin's check")
	}
	red := false
	for _, m := range overrideMatchers(p, "mappings") {
		if m == "note" && strings.Contains(jsonText(p), `"pattern":"^off.*"`) {
			red = true
		}
	}
	if !red {
		t.Error("an \"off\" twin check is not mapped red")
	}
	if s := jsonText(get(p, "options", "sortBy")); !strings.Contains(s, `"displayName":"attainment"`) {
		t.Errorf("the what-if table is sorted by %s, not the lowest attainment first", s)
	}
	for title, want := range map[string]float64{"What if": 14, "Calibrated parameters": 31} {
		if h, _ := get(costPanel(t, title), "gridPos", "h").(float64); h < want {
			t.Errorf("%s: %v grid rows high, want %v", title, h, want)
		}
	}
}

// gpuPanel is the GPU dashboard's panel whose title starts with title.
func gpuPanel(t *testing.T, title string) map[string]any {
	t.Helper()
	for _, l := range onCallPanels(t) {
		if got, _ := l.p["title"].(string); l.dash == "inferscope-gpu.json" && strings.HasPrefix(got, title) {
			return l.p
		}
	}
	t.Fatalf("no GPU panel %q", title)
	return nil
}

// TestGPUActivitySignalsDifferByLine: on "SM, DRAM and tensor activity" a target's three
// signals keep the target's colour and differ by line (one colour per target made SM, DRAM
// and tensor activity indistinguishable).
func TestGPUActivitySignalsDifferByLine(t *testing.T) {
	p := gpuPanel(t, "SM, DRAM and tensor activity")
	for _, tg := range provisionedTargets(t) {
		looks := map[string]string{}
		colours := map[string]bool{}
		for _, sig := range []string{"SM active", "DRAM active", "tensor pipes active"} {
			name := sig + " · " + tg + " on gpu-x GPU 0"
			look := lineLook(p, name)
			if other, ok := looks[look]; ok {
				t.Errorf("%q is drawn like %q (%s)", name, other, look)
			}
			looks[look] = name
			_, c := seriesColour(p, name)
			colours[c] = true
		}
		if len(colours) != 1 || colours[""] {
			t.Errorf("%s's signals take colours %v, want the target's one", tg, colours)
		}
	}
}

// TestGPUThresholdLinesAreNamedInTheTitle: a GPU chart drawing dashed threshold lines names
// each step's colour and value in its title, where the screenshot shows it (the lines at 85 %
// and 95 % had no label on the panel).
func TestGPUThresholdLinesAreNamedInTheTitle(t *testing.T) {
	checked := 0
	for _, l := range onCallPanels(t) {
		if l.dash != "inferscope-gpu.json" || l.p["type"] != "timeseries" {
			continue
		}
		if mode, _ := get(l.p, "fieldConfig", "defaults", "custom", "thresholdsStyle", "mode").(string); mode == "" || mode == "off" {
			continue
		}
		title, _ := l.p["title"].(string)
		unit, _ := get(l.p, "fieldConfig", "defaults", "unit").(string)
		steps, _ := get(l.p, "fieldConfig", "defaults", "thresholds", "steps").([]any)
		for _, s := range steps {
			v, ok := s.(map[string]any)["value"].(float64)
			if !ok {
				continue
			}
			checked++
			word := thresholdColourWords[s.(map[string]any)["color"].(string)]
			if re := regexp.MustCompile(word + ` ` + stepValueText(v, unit)); !re.MatchString(title) {
				t.Errorf("%s: the title does not name the %s line at %v (want %q)", l.where(), word, v, re)
			}
		}
	}
	if checked != 4 {
		t.Errorf("%d threshold steps checked, want 4 (saturation and temperature, amber and red)", checked)
	}
}

// TestGPUPageSaysWhereKVCacheLives: the GPU dashboard opens with a row saying that KV-cache
// usage is on the overview and that a framebuffer near full is vLLM's pre-allocation (both
// GPUs read 72.5 of 80 GiB, which a new on-call took for "memory is fine").
func TestGPUPageSaysWhereKVCacheLives(t *testing.T) {
	panels := committedDashboardsRaw(t)["inferscope-gpu.json"]
	if len(panels) == 0 || panels[0]["type"] != "row" {
		t.Fatal("the GPU dashboard does not open with a row")
	}
	title, _ := panels[0]["title"].(string)
	for _, w := range []string{"KV-cache usage is on the overview", "pre-allocation"} {
		if !strings.Contains(title, w) {
			t.Errorf("the first row %q does not say %q", title, w)
		}
	}
}

// TestSmallTilesFixTheirTextSize: the GPU gauges and the days-to-the-knee tile fix their
// names' text size (auto-sized, the names read about 6 px high).
func TestSmallTilesFixTheirTextSize(t *testing.T) {
	for _, p := range []map[string]any{gpuPanel(t, "Temperature now"), gpuPanel(t, "Power now"), costPanel(t, "Days to the knee")} {
		if s, _ := get(p, "options", "text", "titleSize").(float64); s < 12 {
			t.Errorf("%q: title text size %v, want 12 px or more", p["title"], s)
		}
	}
}
