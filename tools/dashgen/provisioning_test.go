package main

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"gopkg.in/yaml.v3"
)

func readYAML(t *testing.T, path string, v any) {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("..", "..", path))
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(raw, v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

type ruleFiles struct {
	grafana struct {
		Groups []struct {
			Folder string `yaml:"folder"`
			Rules  []struct {
				UID    string            `yaml:"uid"`
				Labels map[string]string `yaml:"labels"`
			} `yaml:"rules"`
		} `yaml:"groups"`
	}
	prometheus struct {
		Groups []struct {
			Rules []struct {
				Alert  string            `yaml:"alert"`
				Labels map[string]string `yaml:"labels"`
			} `yaml:"rules"`
		} `yaml:"groups"`
	}
}

func loadRules(t *testing.T) ruleFiles {
	var r ruleFiles
	readYAML(t, "provisioning/alerting/inferscope-rules.yaml", &r.grafana)
	readYAML(t, "provisioning/prometheus/inferscope-vllm.rules.yml", &r.prometheus)
	// The cost rules' alert (InferscopeCostSpike) needs its runbook section too.
	var cost ruleFiles
	readYAML(t, "provisioning/prometheus/inferscope-cost.rules.yml", &cost.prometheus)
	r.prometheus.Groups = append(r.prometheus.Groups, cost.prometheus.Groups...)
	return r
}

// TestOneFolderForDashboardsAndRules: Grafana's rule files name their folder
// by title only, and rules are provisioned before dashboards, so the
// dashboards provider must use the same title and no folderUid (with one,
// Grafana refuses a second folder of the same title).
func TestOneFolderForDashboardsAndRules(t *testing.T) {
	var dash struct {
		Providers []map[string]any `yaml:"providers"`
	}
	readYAML(t, "provisioning/dashboards/inferscope.yaml", &dash)
	if len(dash.Providers) != 1 {
		t.Fatalf("want one dashboards provider, got %d", len(dash.Providers))
	}
	p := dash.Providers[0]
	if _, ok := p["folderUid"]; ok {
		t.Error("the dashboards provider sets folderUid: the alert rules' folder (by title) would clash with it")
	}
	rules := loadRules(t)
	for _, g := range rules.grafana.Groups {
		if g.Folder != p["folder"] {
			t.Errorf("rule group folder %q differs from the dashboards' folder %q", g.Folder, p["folder"])
		}
	}
}

// TestEveryRuleHasARunbookAndARoute: docs/runbooks.md has a section per
// Grafana rule uid and Prometheus alert, and every rule's severity is routed
// by both notification examples, with the page-over-ticket inhibition.
func TestEveryRuleHasARunbookAndARoute(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("..", "..", "docs", "runbooks.md"))
	if err != nil {
		t.Fatal(err)
	}
	sections := map[string]bool{}
	for _, m := range regexp.MustCompile(`(?m)^### (\S+)\s*$`).FindAllStringSubmatch(string(raw), -1) {
		sections[m[1]] = true
	}
	rules := loadRules(t)
	severities := map[string]bool{}
	for _, g := range rules.grafana.Groups {
		for _, r := range g.Rules {
			if !sections[r.UID] {
				t.Errorf("docs/runbooks.md has no section \"### %s\"", r.UID)
			}
			severities[r.Labels["severity"]] = true
		}
	}
	for _, g := range rules.prometheus.Groups {
		for _, r := range g.Rules {
			if r.Alert == "" {
				continue
			}
			if !sections[r.Alert] {
				t.Errorf("docs/runbooks.md has no section \"### %s\"", r.Alert)
			}
			severities[r.Labels["severity"]] = true
		}
	}
	for s := range severities {
		if !slices.Contains([]string{"page", "ticket", "warning"}, s) {
			t.Errorf("a rule has severity %q, which no route handles", s)
		}
	}

	var gn struct {
		ContactPoints []struct {
			Name string `yaml:"name"`
		} `yaml:"contactPoints"`
		Policies []struct {
			Receiver string `yaml:"receiver"`
			Routes   []struct {
				Receiver       string     `yaml:"receiver"`
				ObjectMatchers [][]string `yaml:"object_matchers"`
			} `yaml:"routes"`
		} `yaml:"policies"`
	}
	readYAML(t, "provisioning/alerting-examples/inferscope-notifications.yaml", &gn)
	points := map[string]bool{}
	for _, c := range gn.ContactPoints {
		points[c.Name] = true
	}
	routed := map[string]string{}
	for _, p := range gn.Policies {
		if !points[p.Receiver] {
			t.Errorf("policy root receiver %q is not a contact point", p.Receiver)
		}
		for _, r := range p.Routes {
			if !points[r.Receiver] {
				t.Errorf("route receiver %q is not a contact point", r.Receiver)
			}
			for _, m := range r.ObjectMatchers {
				if len(m) == 3 && m[0] == "severity" && m[1] == "=" {
					routed[m[2]] = r.Receiver
				}
			}
		}
	}
	for _, s := range []string{"page", "ticket", "warning"} {
		if routed[s] == "" {
			t.Errorf("Grafana notification policy does not route severity=%s", s)
		}
	}
	if routed["page"] == routed["ticket"] {
		t.Error("page and ticket go to the same contact point")
	}

	var am struct {
		Route struct {
			Receiver string `yaml:"receiver"`
			Routes   []struct {
				Receiver string   `yaml:"receiver"`
				Matchers []string `yaml:"matchers"`
			} `yaml:"routes"`
		} `yaml:"route"`
		InhibitRules []struct {
			SourceMatchers []string `yaml:"source_matchers"`
			TargetMatchers []string `yaml:"target_matchers"`
			Equal          []string `yaml:"equal"`
		} `yaml:"inhibit_rules"`
		Receivers []struct {
			Name string `yaml:"name"`
		} `yaml:"receivers"`
	}
	readYAML(t, "provisioning/alerting-examples/alertmanager.yml", &am)
	recv := map[string]bool{}
	for _, r := range am.Receivers {
		recv[r.Name] = true
	}
	amRouted := map[string]bool{}
	for _, r := range am.Route.Routes {
		if !recv[r.Receiver] {
			t.Errorf("alertmanager route receiver %q is not defined", r.Receiver)
		}
		for _, m := range r.Matchers {
			amRouted[strings.Trim(strings.TrimPrefix(m, "severity="), `"`)] = true
		}
	}
	for _, s := range []string{"page", "ticket", "warning"} {
		if !amRouted[s] {
			t.Errorf("alertmanager example does not route severity=%s", s)
		}
	}
	inhibits := false
	for _, ir := range am.InhibitRules {
		if slices.Equal(ir.SourceMatchers, []string{`severity="page"`}) && slices.Equal(ir.TargetMatchers, []string{`severity="ticket"`}) &&
			slices.Contains(ir.Equal, "target") && slices.Contains(ir.Equal, "objective") && slices.Contains(ir.Equal, "job") {
			inhibits = true
		}
	}
	if !inhibits {
		t.Error("alertmanager example has no page-over-ticket inhibition per objective and target")
	}
}

// TestAlertRulePanelLinksResolve: every rule's __dashboardUid__ and
// __panelId__ name a panel (not a row) of a committed dashboard, of the kind
// the rule is about.
func TestAlertRulePanelLinksResolve(t *testing.T) {
	var f struct {
		Groups []struct {
			Rules []struct {
				UID         string            `yaml:"uid"`
				Annotations map[string]string `yaml:"annotations"`
				Data        []struct {
					Model map[string]any `yaml:"model"`
				} `yaml:"data"`
			} `yaml:"rules"`
		} `yaml:"groups"`
	}
	readYAML(t, "provisioning/alerting/inferscope-rules.yaml", &f)
	byUID := map[string]lintDashboard{}
	for _, d := range committedDashboards(t) {
		byUID[d.UID] = d
	}
	for _, g := range f.Groups {
		for _, r := range g.Rules {
			uid, id := r.Annotations["__dashboardUid__"], r.Annotations["__panelId__"]
			if uid == "" && id == "" {
				continue
			}
			d, ok := byUID[uid]
			if !ok {
				t.Errorf("%s links to dashboard %q, which is not committed", r.UID, uid)
				continue
			}
			var found map[string]any
			for _, p := range d.Panels {
				if fmt.Sprint(p["id"]) == id {
					found = p
				}
			}
			if found == nil || found["type"] == "row" {
				t.Errorf("%s links to panel %s of %s, which is not a panel there", r.UID, id, uid)
				continue
			}
			// The panel queries what the rule queries.
			want := r.Data[0].Model["queryType"]
			same := false
			for _, q := range found["targets"].([]any) {
				if q.(map[string]any)["queryType"] == want {
					same = true
				}
			}
			if !same && ((want != "raw" && want != "targets") || uid != UIDTargets) {
				t.Errorf("%s (%v) links to panel %q, which does not show a %v query", r.UID, want, found["title"], want)
			}
		}
	}
}
