package main

import (
	"strings"
	"testing"
)

// The eighth review of issue 33 (review 33-7 and the final review, overview, SLO and latency
// sections) left: three different 1h burn figures for one objective with nothing saying which
// is which, burn windows longer than the stored history drawn as if covered, a latency page
// with no SLO status and no cause, bucket-interpolated quantiles read as measurements, p50
// lines of both targets drawn in one near-white, and unlabelled threshold lines. Each test
// below failed on the dashboards committed before that review.

// TestBurnFiguresSayWhatTheyAre: every panel that shows an slo query's burn rate (a Burn
// column or burn 1h) says it is the point estimate at the range's end; the SLO page's
// Objectives table also says the Why sentence quotes a bound of the attainment bracket and
// that a Burn cell stays empty while the history is shorter than its window; the burn_rate
// chart says its Last is at the last whole step and that a window is drawn only once covered.
func TestBurnFiguresSayWhatTheyAre(t *testing.T) {
	tables, charts := 0, 0
	for _, l := range onCallPanels(t) {
		q := jsonText(l.p["targets"])
		desc, _ := l.p["description"].(string)
		switch {
		case l.p["type"] == "table" && strings.Contains(q, `"queryType":"slo"`) && strings.Contains(jsonText(l.p["transformations"]), "burn_1h"):
			tables++
			if !strings.Contains(desc, "point estimate") {
				t.Errorf("%s: shows a burn rate without saying it is the point estimate at the range's end", l.where())
			}
			if strings.Contains(jsonText(l.p["fieldConfig"]), `"Why"`) {
				for _, want := range []string{"bound of the attainment bracket", "shorter than its window"} {
					if !strings.Contains(desc, want) {
						t.Errorf("%s: the description does not say %q", l.where(), want)
					}
				}
			}
		case l.p["type"] == "timeseries" && strings.Contains(q, `"queryType":"burn_rate"`):
			charts++
			for _, want := range []string{"last whole step", "covers it"} {
				if !strings.Contains(desc, want) {
					t.Errorf("%s: the description does not say %q", l.where(), want)
				}
			}
		}
	}
	if tables < 2 || charts < 1 {
		t.Errorf("%d slo tables with burn rates and %d burn charts checked, want the overview's and the SLO page's", tables, charts)
	}
}

// TestLatencyPageAnswersTheFiveSecondTest: the latency deep dive's first row (before any
// chart) holds the SLO status per target against the selected profile (an slo query with
// $profile grouped by target, showing status and threshold) and the diagnosis class per
// target (a diagnosis table's current rows); every chart that draws the profile's threshold
// line names it in its title, since Grafana gives a threshold no legend entry.
func TestLatencyPageAnswersTheFiveSecondTest(t *testing.T) {
	var slo, why, charts int
	firstRow := ""
	for _, l := range onCallPanels(t) {
		if l.dash != "inferscope-latency.json" {
			continue
		}
		if firstRow == "" {
			firstRow = l.row
		}
		q := jsonText(l.p["targets"])
		tr := jsonText(l.p["transformations"])
		title, _ := l.p["title"].(string)
		if l.row == firstRow && l.p["type"] == "table" {
			switch {
			case strings.Contains(q, `"queryType":"slo"`) && strings.Contains(q, `"profile":"$profile"`) && strings.Contains(q, `"groupBy":"target"`) &&
				strings.Contains(tr, "status") && strings.Contains(tr, "threshold"):
				slo++
			case strings.Contains(q, `"queryType":"diagnosis"`) && strings.Contains(tr, "current") && strings.Contains(tr, "class"):
				why++
			}
		}
		if l.p["type"] == "timeseries" && strings.Contains(q, `"profile":"$profile"`) && strings.Contains(q, `"queryType":"latency"`) {
			mode, _ := get(l.p, "fieldConfig", "defaults", "custom", "thresholdsStyle", "mode").(string)
			if mode != "" && mode != "off" {
				charts++
				if !strings.Contains(title, "threshold") {
					t.Errorf("%s: draws the profile's threshold line and its title does not name it", l.where())
				}
			}
		}
	}
	if slo != 1 || why != 1 {
		t.Errorf("latency page's first row %q: %d SLO status tables and %d diagnosis tables, want one each", firstRow, slo, why)
	}
	if charts < 4 {
		t.Errorf("%d latency charts with the profile's threshold checked, want TTFT, ITL, TPOT and E2E", charts)
	}
}
