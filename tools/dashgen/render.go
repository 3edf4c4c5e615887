package main

import (
	"encoding/json"
	"fmt"
)

// Render builds every dashboard and returns file name → indented JSON with a
// trailing newline, exactly the bytes committed under dashboards/.
func Render() (map[string][]byte, error) {
	out := map[string][]byte{}
	for name, b := range All() {
		d, err := b.Build()
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		// Panel ids 1..n in layout order: alert rules link to them
		// (__panelId__), so they must not change between regenerations.
		for k := range d.Panels {
			if d.Panels[k].Panel != nil {
				d.Panels[k].Panel.Id = ptr(uint32(k + 1))
			}
		}
		js, err := json.MarshalIndent(d, "", "  ")
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		out[name] = append(js, '\n')
	}
	return out, nil
}
