package main

import (
	"encoding/json"
	"fmt"

	"github.com/grafana/grafana-foundation-sdk/go/dashboard"
)

// Render builds every dashboard and returns file name → indented JSON with a
// trailing newline, exactly the bytes committed under dashboards/.
func Render() (map[string][]byte, error) {
	targets := colourTargets
	if targets == nil {
		var err error
		if targets, err = datasourceTargets(datasourceFile); err != nil {
			return nil, err
		}
	}
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
		pin := func(p *dashboard.Panel) error {
			if p.Id != nil {
				if pinned[*p.Id] {
					return fmt.Errorf("%s: panel id %d pinned twice", name, *p.Id)
				}
				pinned[*p.Id] = true
			}
			return nil
		}
		for _, p := range d.Panels {
			if p.Panel != nil {
				if err := pin(p.Panel); err != nil {
					return nil, err
				}
			}
			// A collapsed row holds its panels.
			if p.RowPanel != nil {
				for k := range p.RowPanel.Panels {
					if err := pin(&p.RowPanel.Panels[k]); err != nil {
						return nil, err
					}
				}
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
				for j := range r.Panels {
					if r.Panels[j].Id == nil {
						r.Panels[j].Id = ptr(free())
					}
				}
			}
		}
		compactCollapsedRows(d.Panels)
		setTargetColours(d.Panels, targets)
		if err := setMaxRowHeights(d.Panels); err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
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

// compactCollapsedRows moves every panel below a collapsed row up by the
// height of the panels the row holds (issue 33): the builder lays a
// collapsed row's panels out as if open, so each collapsed row reserved
// their height and the overview's bottom third was blank. Grafana floats
// panels up on load; the screenshots and any other reader of gridPos do
// not. A collapsed row's own panels move with it (they keep their place
// under the row when it is opened).
func compactCollapsedRows(ps []dashboard.PanelOrRowPanel) {
	var shift uint32
	move := func(g *dashboard.GridPos) {
		if g != nil {
			g.Y -= shift
		}
	}
	for k := range ps {
		if p := ps[k].Panel; p != nil {
			move(p.GridPos)
			continue
		}
		r := ps[k].RowPanel
		if r == nil || r.GridPos == nil {
			continue
		}
		rowY := r.GridPos.Y
		bottom := rowY + 1
		for j := range r.Panels {
			if g := r.Panels[j].GridPos; g != nil && g.Y+g.H > bottom {
				bottom = g.Y + g.H
			}
		}
		move(r.GridPos)
		for j := range r.Panels {
			move(r.Panels[j].GridPos)
		}
		if r.Collapsed {
			shift += bottom - (rowY + 1)
		}
	}
}

// tableMaxRowHeight is the table panel option maxRowHeight (pixels; Grafana 12.2 and later,
// @grafana/schema's table Options.maxRowHeight, read by @grafana/ui's TableNG:
// a wrapped cell taller than it is cut, and opens whole on hover) by table title. The
// foundation SDK's table options do not have it yet, so Render sets it on the built panel.
// Issue 33: the endpoint table's wrapped advice (the rule's and the capacity twin's, a
// dozen lines at its column width) made each burning row 200 px high and pushed the other
// endpoints out of the panel; three lines say what to do, the rest is on hover and in the
// diagnosis table below.
var tableMaxRowHeight = map[string]float64{
	"Endpoints, worst first":             60,
	"Diagnosis now: evidence and advice": 120,
	sloDiagnosisTitle:                    120,
	latencyWhyTitle:                      60,
	"Objectives":                         60,
}

// setMaxRowHeights sets maxRowHeight on the table panels of tableMaxRowHeight (open or in a
// collapsed row).
func setMaxRowHeights(ps []dashboard.PanelOrRowPanel) error {
	set := func(p *dashboard.Panel) error {
		if p.Type != "table" || p.Title == nil {
			return nil
		}
		h, ok := tableMaxRowHeight[*p.Title]
		if !ok {
			return nil
		}
		raw, err := json.Marshal(p.Options)
		if err != nil {
			return err
		}
		opts := map[string]any{}
		if err := json.Unmarshal(raw, &opts); err != nil {
			return err
		}
		opts["maxRowHeight"] = h
		p.Options = opts
		return nil
	}
	for k := range ps {
		if p := ps[k].Panel; p != nil {
			if err := set(p); err != nil {
				return err
			}
		}
		if r := ps[k].RowPanel; r != nil {
			for j := range r.Panels {
				if err := set(&r.Panels[j]); err != nil {
					return err
				}
			}
		}
	}
	return nil
}
