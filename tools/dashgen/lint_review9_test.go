package main

import (
	"encoding/json"
	"strings"
	"testing"
)

// The ninth review of issue 33 (review 33-8, latency and SLO sections) found: the latency
// page's "Why now" table one row high, healthy first, its time the range's start; the SLO
// table beside it cut at "Bu". Each test below failed on the dashboards committed before
// that review.

// panelPixelsHigh is the inner height in pixels of a panel h grid rows high: 30 px a row
// and 8 px between rows, less the title bar (32 px) and a table's header row (36 px).
func panelPixelsHigh(h float64) float64 { return h*30 + (h-1)*8 - 32 - 36 }

// latencyPanel is the latency deep dive's panel titled title.
func latencyPanel(t *testing.T, title string) lintPanel {
	t.Helper()
	for _, l := range onCallPanels(t) {
		if l.dash == "inferscope-latency.json" && l.p["title"] == title {
			return l
		}
	}
	t.Fatalf("latency: no panel %q", title)
	return lintPanel{}
}

// TestLatencyWhyNowShowsEveryTargetWorstFirst: the Why-now table sorts the current rows by
// severity level, highest first, before the level is dropped; shows the last evaluated step
// (timeEnd), not the finding's start (time, the range's start for a finding that holds all
// along); and is high enough for at least four rows at its row-height cap (the demo's two
// targets and two more).
func TestLatencyWhyNowShowsEveryTargetWorstFirst(t *testing.T) {
	l := latencyPanel(t, latencyWhyTitle)
	tr := jsonText(l.p["transformations"])
	if !strings.Contains(tr, `"sortBy"`) || !strings.Contains(tr, `{"desc":true,"field":"level"}`) {
		t.Errorf("%s: current rows not sorted by level, worst first: %s", l.where(), tr)
	}
	if strings.Contains(tr, `Time|time|`) || !strings.Contains(tr, "timeEnd") {
		t.Errorf("%s: shows the finding's start (time), not the last evaluation (timeEnd): %s", l.where(), tr)
	}
	h, _ := get(l.p, "gridPos", "h").(float64)
	rowH, _ := get(l.p, "options", "maxRowHeight").(float64)
	if rowH <= 0 || panelPixelsHigh(h)/rowH < 4 {
		t.Errorf("%s: %v grid rows at a %v px row cap fit fewer than 4 rows", l.where(), h, rowH)
	}
}

// TestLatencySLOStatusFitsItsWidth: every column of the latency page's SLO status table has a
// fixed width and together they fit the panel (less 30 px of padding and border), so the last
// header is not cut ("Bu"); the panel fits the demo's four objective rows (36 px each).
func TestLatencySLOStatusFitsItsWidth(t *testing.T) {
	l := latencyPanel(t, "SLO status per target")
	w, _ := get(l.p, "gridPos", "w").(float64)
	h, _ := get(l.p, "gridPos", "h").(float64)
	sum := 0.0
	for _, col := range []string{"Status", "Target", "Objective", "Threshold", "Observed quantile", "Attainment", "Budget left"} {
		cw, ok := seriesProp(l.p, col, "custom.width").(float64)
		if !ok {
			t.Errorf("%s: column %q has no width", l.where(), col)
		}
		sum += cw
	}
	if sum > gridPixels(w)-30 {
		t.Errorf("%s: columns %v px wide in a %v px panel", l.where(), sum, gridPixels(w))
	}
	if panelPixelsHigh(h)/36 < 4 {
		t.Errorf("%s: %v grid rows fit fewer than 4 objective rows", l.where(), h)
	}
}

// TestBudgetsSayTheSpanComputedOver: every budget tile (a stat of the slo query's
// budget_remaining) names its budget from the slo frame's budget_of field ("30d budget", or
// "budget of the 1h stored (30d not yet covered)" while the history is shorter than the
// period), kept through its transformations; the SLO page's Objectives table shows budget_of
// beside the budget left. Before review 33-8 the tiles read "${__data.fields.period} budget":
// "8275% of 30d budget spent" after one stored hour.
func TestBudgetsSayTheSpanComputedOver(t *testing.T) {
	tiles, tables := 0, 0
	for _, l := range onCallPanels(t) {
		tr := jsonText(l.p["transformations"])
		if !strings.Contains(jsonText(l.p["targets"]), `"queryType":"slo"`) || !strings.Contains(tr, "budget_remaining") && l.p["type"] == "stat" {
			continue
		}
		switch {
		case l.p["type"] == "stat":
			tiles++
			if !strings.Contains(statTexts(l.p), "${__data.fields.budget_of}") || strings.Contains(statTexts(l.p), "${__data.fields.period} budget") {
				t.Errorf("%s: the tile does not name its budget from budget_of", l.where())
			}
			if !strings.Contains(tr, "budget_of") {
				t.Errorf("%s: the transformations drop budget_of", l.where())
			}
		case l.dash == "inferscope-slo.json" && l.p["title"] == "Objectives":
			tables++
			if strings.Contains(tr, `"budget_of":true`) || !strings.Contains(tr, `"budget_of":"Budget of"`) {
				t.Errorf("%s: no Budget of column: %s", l.where(), tr)
			}
		}
	}
	if tiles < 2 || tables != 1 {
		t.Errorf("%d budget tiles and %d Objectives tables, want the overview's and the SLO page's tiles and one table", tiles, tables)
	}
}

// quantileStat reports whether a latency query's stats ask for a quantile (p50 … p99.9).
func quantileStat(q map[string]any) bool {
	for _, s := range strs(q["stats"]) {
		if strings.HasPrefix(s, "p") {
			return true
		}
	}
	return false
}

// TestOneQuantileEstimatorOnEveryPage: every latency query that asks for a quantile, on every
// dashboard, uses the prometheus estimator (the query's default, histogram_quantile's value,
// also the slo table's observed quantile and the alert rules'), or the page's $estimator whose
// default is prometheus; and each such panel says so in its description (review 33-8 D6: the
// healthy TTFT p99 max read 220 ms on the overview and models pages, 142 ms on the latency
// page, which defaulted to refined, and only the latency page named its estimator).
func TestOneQuantileEstimatorOnEveryPage(t *testing.T) {
	defaults := map[string]string{}
	for name := range committedDashboards(t) {
		var d struct {
			Templating struct {
				List []struct {
					Name    string         `json:"name"`
					Current map[string]any `json:"current"`
				} `json:"list"`
			} `json:"templating"`
		}
		if err := json.Unmarshal(readDashboard(t, name), &d); err != nil {
			t.Fatal(err)
		}
		for _, v := range d.Templating.List {
			if v.Name == "estimator" {
				defaults[name], _ = v.Current["value"].(string)
			}
		}
	}
	panels := 0
	for _, l := range onCallPanels(t) {
		uses := false
		for _, q := range l.queries() {
			if q["queryType"] != "latency" || q["format"] == "heatmap" || !quantileStat(q) {
				continue
			}
			uses = true
			est, _ := q["estimator"].(string)
			if est == "$estimator" {
				est = defaults[l.dash]
			}
			if est != "" && est != "prometheus" {
				t.Errorf("%s: quantiles by the %q estimator, want prometheus (as every page)", l.where(), est)
			}
		}
		if !uses {
			continue
		}
		panels++
		desc, _ := l.p["description"].(string)
		if !strings.Contains(desc, "prometheus estimator") {
			t.Errorf("%s: the description does not name the prometheus estimator", l.where())
		}
	}
	if panels < 15 {
		t.Errorf("%d quantile panels checked, want the overview's, models', probe's and latency's", panels)
	}
}

// TestBurnChartNamesItsLinesAndDrawsNoStatus: the SLO page's burn-rate chart removes the
// burn_rate query's status series (the frame named status, its display name from the data
// source "status · …") before it is drawn: named by the panel's template it read
// "vllm-kv-pressure · ttft-p99" at 2.00, no window and no meaning given (review 33-8 D7); and
// its title names each dashed threshold line with its value.
func TestBurnChartNamesItsLinesAndDrawsNoStatus(t *testing.T) {
	n := 0
	for _, l := range onCallPanels(t) {
		if l.p["type"] != "timeseries" || !strings.Contains(jsonText(l.p["targets"]), `"queryType":"burn_rate"`) {
			continue
		}
		n++
		tr := jsonText(l.p["transformations"])
		if !strings.Contains(tr, `"exclude":{"pattern":"^(?:status · .*)$"}`) {
			t.Errorf("%s: the status series is drawn: %s", l.where(), tr)
		}
		title, _ := l.p["title"].(string)
		for _, want := range []string{"14.4", "6", "1 "} {
			if !strings.Contains(title, want) {
				t.Errorf("%s: the title does not name the %q line", l.where(), want)
			}
		}
	}
	if n == 0 {
		t.Error("no burn-rate chart")
	}
}

// TestDiagnosisNowTablesListWorstFirst: every table of the diagnosis query's current rows (the
// overview's Diagnosis now, the SLO page's Why, the latency page's Why now) sorts them by
// severity level, highest first (review 33-8: healthy came first, in the frame's target order).
func TestDiagnosisNowTablesListWorstFirst(t *testing.T) {
	n := 0
	for _, l := range onCallPanels(t) {
		tr := jsonText(l.p["transformations"])
		if l.p["type"] != "table" || !strings.Contains(jsonText(l.p["targets"]), `"queryType":"diagnosis"`) || !strings.Contains(tr, `"fieldName":"current"`) || l.p["title"] == "Endpoints, worst first" {
			continue
		}
		n++
		if !strings.Contains(tr, `{"desc":true,"field":"level"}`) {
			t.Errorf("%s: current diagnoses not sorted worst first", l.where())
		}
	}
	if n < 3 {
		t.Errorf("%d current-diagnosis tables, want the overview's, the SLO page's and the latency page's", n)
	}
}
