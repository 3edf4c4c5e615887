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
		// Panel ids: alert rules link to panels (__dashboardUid__ and
		// __panelId__ in provisioning/alerting), so a linked panel pins its
		// id in the builder (PanelBuilder.Id); every other panel and row gets
		// the next free id in layout order, stable across regenerations.
		pinned := map[uint32]bool{}
		for _, p := range d.Panels {
			if p.Panel != nil && p.Panel.Id != nil {
				if pinned[*p.Panel.Id] {
					return nil, fmt.Errorf("%s: panel id %d pinned twice", name, *p.Panel.Id)
				}
				pinned[*p.Panel.Id] = true
			}
		}
		next := uint32(1)
		free := func() uint32 {
			for pinned[next] {
				next++
			}
			id := next
			next++
			return id
		}
		for k := range d.Panels {
			if p := d.Panels[k].Panel; p != nil && p.Id == nil {
				p.Id = ptr(free())
			}
			if r := d.Panels[k].RowPanel; r != nil {
				r.Id = free()
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
