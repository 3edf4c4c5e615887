package main

import (
	"encoding/json"
	"regexp"
	"strings"
	"testing"
)

// The ninth review of issue 33 (an SRE on the cost and models screenshots) found the
// literal template "${__value.text}" in six "twin check" cells of the cost page, red, blue
// and green: Grafana writes a mapping's result text as it is (a regex mapping expands $1
// groups only), so a colour-only mapping must carry no text. Each test below failed on
// the dashboards committed before that review.

// mappingResults walks v and calls f with every value mapping's result (the "result" of a
// mapping's options, or each entry of a value map's options) and where it sits.
func mappingResults(v any, where string, f func(where string, typ string, res map[string]any)) {
	switch x := v.(type) {
	case map[string]any:
		if typ, ok := x["type"].(string); ok {
			if opts, ok := x["options"].(map[string]any); ok {
				switch typ {
				case "regex", "range", "special":
					if r, ok := opts["result"].(map[string]any); ok {
						f(where, typ, r)
					}
				case "value":
					for _, o := range opts {
						if r, ok := o.(map[string]any); ok {
							f(where, typ, r)
						}
					}
				}
			}
		}
		w := where
		if t, ok := x["title"].(string); ok {
			w = t
		}
		for _, c := range x {
			mappingResults(c, w, f)
		}
	case []any:
		for _, c := range x {
			mappingResults(c, where, f)
		}
	}
}

func TestMappingsDoNotPrintTemplates(t *testing.T) {
	n, colourOnly := 0, 0
	for name, d := range committedDashboards(t) {
		raw, err := json.Marshal(d.Panels)
		if err != nil {
			t.Fatal(err)
		}
		var ps any
		if err := json.Unmarshal(raw, &ps); err != nil {
			t.Fatal(err)
		}
		mappingResults(ps, "", func(where, typ string, r map[string]any) {
			n++
			text, hasText := r["text"].(string)
			if hasText && strings.Contains(text, "${__value") {
				t.Errorf("%s, %q: a %s mapping's result text is %q, which Grafana shows literally; leave text out to keep the value", name, where, typ, text)
			}
			if !hasText {
				if _, ok := r["color"]; !ok {
					t.Errorf("%s, %q: a %s mapping has neither text nor colour", name, where, typ)
				}
				colourOnly++
			}
		})
	}
	// The twin check, days-to-knee, HTTP status, last-error and throttle-reason columns
	// are coloured by regex mappings that keep the value: at least those must be here.
	if colourOnly < 10 {
		t.Errorf("found %d colour-only mappings of %d; the twin check column alone has 3", colourOnly, n)
	}
}

// The review's "Days to the knee" tile showed its no-history text ("needs at least 30
// minutes and 100 finished requests … widen the range") beside a capacity table with the
// days on a 60-minute, 16 K-request range: the tile's reduceOptions.fields regex
// (/^days_to_knee_note$/) is matched against each field's display name, and the panel gave
// every field the display name "${__data.fields.target} · ${__data.fields.profile}", so no
// field matched and Grafana drew the no-value text. A stat or gauge that picks its fields
// by a regex must match the display name of a field it keeps.
func TestReduceFieldsMatchADisplayName(t *testing.T) {
	checked := 0
	for name, d := range committedDashboards(t) {
		for _, p := range d.Panels {
			typ, _ := p["type"].(string)
			if typ != "stat" && typ != "gauge" && typ != "bargauge" {
				continue
			}
			pat, _ := get(p, "options", "reduceOptions", "fields").(string)
			if pat == "" {
				continue
			}
			re, err := regexp.Compile(strings.TrimSuffix(strings.TrimPrefix(pat, "/"), "/"))
			if err != nil {
				t.Errorf("%s, %q: reduceOptions.fields %q: %v", name, p["title"], pat, err)
				continue
			}
			// The fields the panel keeps: its filterFieldsByName include pattern's names.
			var kept []string
			trs, _ := p["transformations"].([]any)
			for _, tr := range trs {
				if get(tr.(map[string]any), "id") != "filterFieldsByName" {
					continue
				}
				inc, _ := get(tr.(map[string]any), "options", "include", "pattern").(string)
				inc = strings.TrimSuffix(strings.TrimPrefix(inc, "^(?:"), ")$")
				kept = append(kept, strings.Split(inc, "|")...)
			}
			if len(kept) == 0 {
				continue
			}
			checked++
			var shown []string
			ok := false
			for _, f := range kept {
				dn, _ := seriesProp(p, f, "displayName").(string)
				if dn == "" {
					dn = f
				}
				shown = append(shown, dn)
				if re.MatchString(dn) {
					ok = true
				}
			}
			if !ok {
				t.Errorf("%s, %q: reduceOptions.fields %q matches none of the kept fields' display names %q, so the panel shows its no-value text", name, p["title"], pat, shown)
			}
		}
	}
	if checked == 0 {
		t.Error("no stat picks its fields by a regex: the days-to-the-knee tile does")
	}
}

// The review's models page cut its TTFT, E2E, TPOT and ITL legends to "vll…" and their
// values to "1.33 m", "80", "1 r": a 300 px right-hand table legend on half-width panels.
// The latency page's legends, readable, are 520 px on full-width panels (1600 px at 24
// columns): a right-hand legend must be at least that wide and leave the graph half the
// panel; a bottom legend has the panel's width.
func TestModelsLatencyLegendsFit(t *testing.T) {
	d := committedDashboards(t)["inferscope-models.json"]
	found := 0
	for _, p := range d.Panels {
		title, _ := p["title"].(string)
		if p["type"] != "timeseries" || !strings.Contains(title, "per target and model") {
			continue
		}
		stage := strings.Fields(title)[0]
		if stage != "TTFT" && stage != "E2E" && stage != "TPOT" && stage != "ITL" {
			continue
		}
		found++
		w, _ := get(p, "gridPos", "w").(float64)
		px := w * 1600 / 24
		place, _ := get(p, "options", "legend", "placement").(string)
		if place != "right" {
			continue
		}
		lw, _ := get(p, "options", "legend", "width").(float64)
		if lw < 520 || px-lw < px/2 {
			t.Errorf("%q: a %.0f px right legend on a %.0f px panel: under 520 px it cuts \"vllm-kv-pressure p99\" and \"1.33 mins\", over half the panel it squeezes the graph", title, lw, px)
		}
	}
	if found != 4 {
		t.Errorf("found %d of the TTFT, E2E, TPOT and ITL panels per target and model", found)
	}
}
