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
			if d.Panels[k].RowPanel != nil {
				d.Panels[k].RowPanel.Id = uint32(k + 1)
			}
		}
		// The SDK places links and annotation toggles in Grafana 13's
		// controls menu by default, where users do not find them: leave the
		// placement unset so they show above the panels.
		for k := range d.Links {
			d.Links[k].Placement = nil
		}
		for k := range d.Annotations.List {
			d.Annotations.List[k].Placement = nil
		}
		js, err := json.MarshalIndent(d, "", "  ")
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		out[name] = append(js, '\n')
	}
	return out, nil
}
