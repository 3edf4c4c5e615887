package main

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCommittedDashboardsMatchGenerator fails when dashboards/*.json differs
// from what the generator writes: edit the generator, then run `go run .`.
func TestCommittedDashboardsMatchGenerator(t *testing.T) {
	files, err := Render()
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range files {
		got, err := os.ReadFile(filepath.Join("..", "..", "dashboards", name))
		if err != nil {
			t.Fatalf("%s is not committed: %v (run `go run .` in tools/dashgen)", name, err)
		}
		if string(got) != string(want) {
			t.Errorf("dashboards/%s differs from the generator's output: run `go run .` in tools/dashgen", name)
		}
	}
}

// TestPluginJSONIncludesEveryDashboard keeps plugin.json's includes in step
// with the generated files, so every dashboard can be imported from the data
// source's Dashboards tab.
func TestPluginJSONIncludesEveryDashboard(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("..", "..", "src", "plugin.json"))
	if err != nil {
		t.Fatal(err)
	}
	var pj struct {
		Includes []struct {
			Type, Path string
		} `json:"includes"`
	}
	if err := json.Unmarshal(raw, &pj); err != nil {
		t.Fatal(err)
	}
	included := map[string]bool{}
	for _, inc := range pj.Includes {
		if inc.Type == "dashboard" {
			included[strings.TrimPrefix(inc.Path, "dashboards/")] = true
		}
	}
	for name := range All() {
		if !included[name] {
			t.Errorf("plugin.json does not include dashboards/%s", name)
		}
	}
}

// TestEveryPanelIsDescribed: every panel says what its number is and where
// it comes from, and every panel queries the Inferscope data source.
func TestEveryPanelIsDescribed(t *testing.T) {
	files, err := Render()
	if err != nil {
		t.Fatal(err)
	}
	for name, js := range files {
		type panel struct {
			Type, Title, Description string
			Datasource               struct{ Type string }
			Targets                  []map[string]any
			Panels                   []panel // a collapsed row's
		}
		var d struct{ Panels []panel }
		if err := json.Unmarshal(js, &d); err != nil {
			t.Fatal(err)
		}
		for _, p := range d.Panels {
			d.Panels = append(d.Panels, p.Panels...)
		}
		if len(d.Panels) == 0 {
			t.Errorf("%s has no panels", name)
		}
		for _, p := range d.Panels {
			if p.Type == "row" {
				continue
			}
			if len(p.Description) < 40 {
				t.Errorf("%s: panel %q has no real description", name, p.Title)
			}
			if p.Datasource.Type != pluginID || len(p.Targets) == 0 {
				t.Errorf("%s: panel %q does not query %s", name, p.Title, pluginID)
			}
			for _, q := range p.Targets {
				if q["queryType"] == nil {
					t.Errorf("%s: panel %q has a query without queryType", name, p.Title)
				}
			}
		}
	}
}

// TestScreenshotsAreCommittedAndReferenced: plugin.json's screenshots exist
// (under src/, where webpack copies them from) and the README shows each.
func TestScreenshotsAreCommittedAndReferenced(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("..", "..", "src", "plugin.json"))
	if err != nil {
		t.Fatal(err)
	}
	var pj struct {
		Info struct {
			Screenshots []struct{ Name, Path string } `json:"screenshots"`
		} `json:"info"`
	}
	if err := json.Unmarshal(raw, &pj); err != nil {
		t.Fatal(err)
	}
	if len(pj.Info.Screenshots) < len(All()) {
		t.Errorf("plugin.json has %d screenshots for %d dashboards", len(pj.Info.Screenshots), len(All()))
	}
	readme, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range pj.Info.Screenshots {
		png, err := os.ReadFile(filepath.Join("..", "..", "src", s.Path))
		if err != nil || len(png) < 8 || string(png[1:4]) != "PNG" {
			t.Errorf("screenshot %s is not a committed PNG under src/: %v", s.Path, err)
		}
		if !strings.Contains(string(readme), "src/"+s.Path) {
			t.Errorf("README.md does not show src/%s", s.Path)
		}
	}
}

// TestScreenshotsAreFresh: the screenshots were drawn from the committed
// dashboards. scripts/render-panels.sh records each dashboard's SHA-256 in
// src/img/screenshots/dashboards.sha256 when it draws the images; a
// dashboard changed since (or one added without a screenshot) fails here
// until the script is run again.
func TestScreenshotsAreFresh(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("..", "..", "src", "img", "screenshots", "dashboards.sha256"))
	if err != nil {
		t.Fatalf("no record of the dashboards the screenshots show (run scripts/render-panels.sh): %v", err)
	}
	recorded := map[string]string{}
	for _, l := range strings.Split(strings.TrimSpace(string(raw)), "\n") {
		f := strings.Fields(l)
		if len(f) == 2 {
			recorded[f[1]] = f[0]
		}
	}
	for name := range All() {
		js, err := os.ReadFile(filepath.Join("..", "..", "dashboards", name))
		if err != nil {
			t.Fatal(err)
		}
		sum := sha256.Sum256(js)
		if got := hex.EncodeToString(sum[:]); recorded[name] != got {
			t.Errorf("%s changed since its screenshot was drawn (recorded %q, now %s): run scripts/render-panels.sh", name, recorded[name], got)
		}
	}
}
