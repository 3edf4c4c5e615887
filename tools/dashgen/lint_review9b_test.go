package main

import (
	"encoding/json"
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
