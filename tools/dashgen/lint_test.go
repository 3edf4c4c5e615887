package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// The dashboard lint reads the committed dashboards/*.json (what users
// import), not the builders, so a hand edit is linted too. Rules:
//   - every panel has a description, a unit and, where the visualisation
//     has one, an explicit legend decision; time series have a multi,
//     sorted tooltip and one unit per axis (no per-field unit overrides, except
//     one that also moves its fields to the right-hand axis);
//   - every query decodes: its queryType and each field exist in the
//     plugin's query schema (src/generated/queryschema.json, generated from
//     the Go request structs) with the schema's JSON type and, for enums,
//     one of its values (or a dashboard variable);
//   - every data source reference resolves to the dashboard's `datasource`
//     variable of the plugin's type, and every $variable used exists;
//   - every threshold list is ordered (base step first, values rising);
//   - no link or annotation is hidden in the controls menu;
//   - a latency query asking for two of p50, p90 and p99 also asks for p95.

type lintDashboard struct {
	UID         string           `json:"uid"`
	Panels      []map[string]any `json:"panels"`
	Links       []map[string]any `json:"links"`
	Annotations struct {
		List []map[string]any `json:"list"`
	} `json:"annotations"`
	Templating struct {
		List []map[string]any `json:"list"`
	} `json:"templating"`
}

type schemaField struct {
	Type string   `json:"type"`
	Enum []string `json:"enum"`
}

func loadSchema(t *testing.T) map[string]map[string]schemaField {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("..", "..", "src", "generated", "queryschema.json"))
	if err != nil {
		t.Fatalf("query schema: %v", err)
	}
	var s map[string]map[string]schemaField
	if err := json.Unmarshal(raw, &s); err != nil {
		t.Fatalf("query schema: %v", err)
	}
	return s
}

func committedDashboards(t *testing.T) map[string]lintDashboard {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join("..", "..", "dashboards", "*.json"))
	if err != nil || len(paths) == 0 {
		t.Fatalf("no dashboards found: %v", err)
	}
	out := map[string]lintDashboard{}
	for _, p := range paths {
		raw, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		var d lintDashboard
		if err := json.Unmarshal(raw, &d); err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		d.Panels = flatPanels(d.Panels)
		out[filepath.Base(p)] = d
	}
	return out
}

// flatPanels lists a dashboard's panels with those of its collapsed rows
// (which Grafana nests in the row's own panels) after their row.
func flatPanels(ps []map[string]any) []map[string]any {
	var out []map[string]any
	for _, p := range ps {
		out = append(out, p)
		if sub, ok := p["panels"].([]any); ok {
			for _, q := range sub {
				out = append(out, q.(map[string]any))
			}
		}
	}
	return out
}

// legendless are visualisations without a legend to decide on.
var legendless = map[string]bool{"stat": true, "table": true, "gauge": true, "bargauge": true, "text": true}

var varRef = regexp.MustCompile(`\$\{?([A-Za-z_][A-Za-z0-9_]*)`)

func get(m map[string]any, path ...string) any {
	var cur any = m
	for _, k := range path {
		mm, ok := cur.(map[string]any)
		if !ok {
			return nil
		}
		cur = mm[k]
	}
	return cur
}

func TestDashboardLint(t *testing.T) {
	schema := loadSchema(t)
	for name, d := range committedDashboards(t) {
		vars := map[string]bool{}
		for _, v := range d.Templating.List {
			vars[v["name"].(string)] = true
		}
		// Grafana's own variables.
		for _, v := range []string{"__all_variables", "__url_time_range", "__data", "__value", "__field", "__series", "__rate_interval", "__interval", "__range"} {
			vars[v] = true
		}
		dsVarOK := false
		for _, v := range d.Templating.List {
			if v["name"] == "datasource" && v["type"] == "datasource" && v["query"] == pluginID {
				dsVarOK = true
			}
		}
		if !dsVarOK {
			t.Errorf("%s: no `datasource` variable of type %s", name, pluginID)
		}
		errf := func(where, format string, a ...any) {
			t.Errorf("%s: %s: %s", name, where, fmt.Sprintf(format, a...))
		}
		checkVars := func(where string, v any) {
			raw, _ := json.Marshal(v)
			for _, m := range varRef.FindAllStringSubmatch(string(raw), -1) {
				if !vars[m[1]] {
					errf(where, "uses $%s, which is not a variable of the dashboard", m[1])
				}
			}
		}
		checkDS := func(where string, ds any) {
			m, _ := ds.(map[string]any)
			if m["type"] != pluginID || m["uid"] != "${datasource}" {
				errf(where, "data source %v does not resolve to the dashboard's datasource variable of type %s", ds, pluginID)
			}
		}
		checkQuery := func(where string, q map[string]any) {
			checkDS(where, q["datasource"])
			qt, _ := q["queryType"].(string)
			fields, ok := schema[qt]
			if !ok {
				errf(where, "queryType %q is not in the plugin's query schema", qt)
				return
			}
			for k, v := range q {
				if k == "refId" || k == "datasource" || k == "hide" {
					continue
				}
				f, ok := fields[k]
				if !ok {
					errf(where, "%s query has field %q, which the plugin does not decode", qt, k)
					continue
				}
				if err := schemaCheck(f, v); err != "" {
					errf(where, "%s.%s: %s", qt, k, err)
				}
			}
			if qt == "latency" || qt == "buckets" {
				stats, _ := q["stats"].([]any)
				has := map[string]bool{}
				for _, s := range stats {
					has[s.(string)] = true
				}
				n := 0
				for _, p := range []string{"p50", "p90", "p99"} {
					if has[p] {
						n++
					}
				}
				if n >= 2 && !has["p95"] {
					errf(where, "asks for %v without p95", stats)
				}
			}
			checkVars(where, q)
		}
		for _, l := range d.Links {
			if l["placement"] != nil {
				errf("link "+fmt.Sprint(l["title"]), "placement %v hides it in the controls menu", l["placement"])
			}
			if l["keepTime"] != true || l["includeVars"] != true {
				errf("link "+fmt.Sprint(l["title"]), "does not keep the time range and variables")
			}
		}
		for _, a := range d.Annotations.List {
			if a["placement"] != nil {
				errf("annotation "+fmt.Sprint(a["name"]), "placement %v hides it in the controls menu", a["placement"])
			}
			if a["builtIn"] == float64(1) {
				continue
			}
			checkDS("annotation "+fmt.Sprint(a["name"]), a["datasource"])
			if tq, ok := a["target"].(map[string]any); ok {
				checkQuery("annotation "+fmt.Sprint(a["name"]), tq)
			}
		}
		for _, v := range d.Templating.List {
			if ds, ok := v["datasource"]; ok {
				checkDS("variable "+fmt.Sprint(v["name"]), ds)
			}
			if q, ok := v["query"].(map[string]any); ok {
				if _, ok := schema[q["queryType"].(string)]; !ok && q["queryType"] != "profiles" && q["queryType"] != "targets" && q["queryType"] != "models" && q["queryType"] != "gpus" {
					errf("variable "+fmt.Sprint(v["name"]), "variable query type %v is unknown", q["queryType"])
				}
			}
		}
		if len(d.Panels) == 0 {
			t.Errorf("%s has no panels", name)
		}
		ids := map[float64]bool{}
		for _, p := range d.Panels {
			typ, _ := p["type"].(string)
			where := fmt.Sprintf("panel %q", p["title"])
			id, _ := p["id"].(float64)
			if ids[id] {
				errf(where, "duplicate id %v", id)
			}
			ids[id] = true
			if typ == "row" {
				continue
			}
			if desc, _ := p["description"].(string); len(desc) < 40 {
				errf(where, "has no real description")
			}
			checkDS(where, p["datasource"])
			targets, _ := p["targets"].([]any)
			if len(targets) == 0 {
				errf(where, "has no query")
			}
			for _, q := range targets {
				checkQuery(where, q.(map[string]any))
			}
			unit, _ := get(p, "fieldConfig", "defaults", "unit").(string)
			if typ == "heatmap" {
				unit, _ = get(p, "options", "yAxis", "unit").(string)
			}
			if unit == "" {
				errf(where, "has no unit")
			}
			if !legendless[typ] {
				var decided bool
				if typ == "heatmap" {
					_, decided = get(p, "options", "legend", "show").(bool)
				} else {
					_, decided = get(p, "options", "legend", "showLegend").(bool)
				}
				if !decided {
					errf(where, "makes no legend decision")
				}
			}
			if typ == "timeseries" {
				if get(p, "options", "tooltip", "mode") != "multi" || get(p, "options", "tooltip", "sort") == "none" || get(p, "options", "tooltip", "sort") == nil {
					errf(where, "tooltip is not multi and sorted")
				}
			}
			checkThresholds(errf, where, get(p, "fieldConfig", "defaults", "thresholds"))
			overrides, _ := get(p, "fieldConfig", "overrides").([]any)
			for _, o := range overrides {
				// A unit override is fine when the same override moves its fields to an axis of
				// their own (custom.axisPlacement right): still one unit per axis.
				ownAxis := false
				for _, pr := range get(o.(map[string]any), "properties").([]any) {
					prm := pr.(map[string]any)
					if prm["id"] == "custom.axisPlacement" && prm["value"] == "right" {
						ownAxis = true
					}
					// A field hidden from the plot (the spike markers, tooltip only) draws no axis.
					if prm["id"] == "custom.hideFrom" && get(prm, "value", "viz") == true {
						ownAxis = true
					}
				}
				for _, pr := range get(o.(map[string]any), "properties").([]any) {
					prm := pr.(map[string]any)
					if prm["id"] == "thresholds" {
						checkThresholds(errf, where+" override", prm["value"])
					}
					if prm["id"] == "unit" && typ == "timeseries" && !ownAxis {
						errf(where, "an override sets unit %v on a time series: one unit per axis", prm["value"])
					}
					if prm["id"] == "links" {
						checkVars(where+" data link", prm["value"])
					}
				}
			}
			checkVars(where, p["transformations"])
		}
	}
}

func checkThresholds(errf func(string, string, ...any), where string, th any) {
	m, ok := th.(map[string]any)
	if !ok {
		return
	}
	steps, _ := m["steps"].([]any)
	if len(steps) == 0 {
		errf(where, "empty thresholds")
		return
	}
	if steps[0].(map[string]any)["value"] != nil {
		errf(where, "thresholds do not start with the base step")
	}
	prev := -1e308
	for _, s := range steps[1:] {
		v, ok := s.(map[string]any)["value"].(float64)
		if !ok || v <= prev {
			errf(where, "thresholds are not in rising order: %v", steps)
			return
		}
		prev = v
	}
}

// schemaCheck returns why v does not fit the schema field, or "".
func schemaCheck(f schemaField, v any) string {
	isVar := func(s string) bool { return strings.HasPrefix(s, "$") }
	inEnum := func(s string) bool { return len(f.Enum) == 0 || isVar(s) || slices.Contains(f.Enum, s) }
	switch f.Type {
	case "string":
		s, ok := v.(string)
		if !ok {
			return fmt.Sprintf("%v is not a string", v)
		}
		if !inEnum(s) {
			return fmt.Sprintf("%q is not one of %v", s, f.Enum)
		}
	case "string[]":
		l, ok := v.([]any)
		if !ok {
			return fmt.Sprintf("%v is not a list of strings", v)
		}
		for _, e := range l {
			s, ok := e.(string)
			if !ok {
				return fmt.Sprintf("%v is not a string", e)
			}
			if !inEnum(s) {
				return fmt.Sprintf("%q is not one of %v", s, f.Enum)
			}
		}
	case "number[]":
		l, ok := v.([]any)
		if !ok {
			return fmt.Sprintf("%v is not a list of numbers", v)
		}
		for _, e := range l {
			if _, ok := e.(float64); !ok {
				return fmt.Sprintf("%v is not a number", e)
			}
		}
	case "boolean":
		if _, ok := v.(bool); !ok {
			return fmt.Sprintf("%v is not a boolean", v)
		}
	case "object":
		if _, ok := v.(map[string]any); !ok {
			return fmt.Sprintf("%v is not an object", v)
		}
	default:
		return "unknown schema type " + f.Type
	}
	return ""
}

// TestLintCatchesMistakes feeds the lint's checks a broken panel, so a lint
// that silently accepts everything fails here.
func TestLintCatchesMistakes(t *testing.T) {
	var got []string
	errf := func(where, format string, a ...any) { got = append(got, where+": "+fmt.Sprintf(format, a...)) }
	checkThresholds(errf, "p", map[string]any{"steps": []any{
		map[string]any{"value": nil, "color": "green"}, map[string]any{"value": 2.0, "color": "red"}, map[string]any{"value": 1.0, "color": "amber"}}})
	if len(got) != 1 {
		t.Errorf("unordered thresholds not caught: %v", got)
	}
	if schemaCheck(schemaField{Type: "string", Enum: []string{"table"}}, "tabel") == "" {
		t.Error("a value outside the enum passed")
	}
	if schemaCheck(schemaField{Type: "string", Enum: []string{"table"}}, "$format") != "" {
		t.Error("a variable was refused")
	}
	if schemaCheck(schemaField{Type: "string[]"}, "ttft") == "" {
		t.Error("a string passed as a list")
	}
}

// readDashboard reads one committed dashboard by file name.
func readDashboard(t *testing.T, name string) []byte {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("..", "..", "dashboards", name))
	if err != nil {
		t.Fatal(err)
	}
	return raw
}
