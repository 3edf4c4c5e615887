package main

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// The "Regression after a change" alert rule links to the latency
// dashboard's regression table by panel id.
func TestRegressionPanelIDMatchesTheAlertRule(t *testing.T) {
	d, err := Latency().Build()
	if err != nil {
		t.Fatal(err)
	}
	last := d.Panels[len(d.Panels)-1].Panel
	if last == nil || last.Id == nil || *last.Id != regressionPanelID || *last.Title != "Regression verdicts after changes" {
		t.Fatalf("the regression table is not panel %d of the latency dashboard", regressionPanelID)
	}
	rules, err := os.ReadFile(filepath.Join("..", "..", "provisioning", "alerting", "inferscope-rules.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	_, rule, ok := strings.Cut(string(rules), "uid: inferscope-regression-after-change")
	if !ok || !strings.Contains(rule, "__dashboardUid__: "+UIDLatency) || !strings.Contains(rule, `__panelId__: "`+strconv.Itoa(regressionPanelID)+`"`) {
		t.Fatalf("the rule does not link to panel %d of %s", regressionPanelID, UIDLatency)
	}
}
