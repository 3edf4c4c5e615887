package main

import (
	"github.com/grafana/grafana-foundation-sdk/go/cog"
	"github.com/grafana/grafana-foundation-sdk/go/dashboard"
)

// regressionPanelID is the regression table's panel id on the latency
// dashboard (its last panel, pinned in the builder): the "Regression after a
// change" alert rule links to it.
const regressionPanelID = 17

// withRegression appends the regression verdicts to a dashboard, in their own
// row: a table of verdicts per change and stage (the regression query) and
// one annotation per verdict. Kept in its own file so the dashboards' layout code stays
// untouched.
func withRegression(b *dashboard.DashboardBuilder) *dashboard.DashboardBuilder {
	b.Annotation(regressionAnnotation())
	b.WithRow(row("Regression after changes"))
	b.WithPanel(tbl("Regression verdicts after changes", "Around each restart, engine or version change, model change or vLLM cache-configuration change of the selected targets: per stage, the mean latency in the 30 minutes before and after at comparable arrival rate and prompt/output length mix, the size of the change with its 95 % bootstrap interval, and the verdict (regressed, improved, no change, not comparable when load or mix changed with it). docs/benchmarks.md gives the method.",
		24, 9, query("queryType", "regression", "targets", []string{"$target"}, "span", "30m")).Id(regressionPanelID).
		NoValue("No restart, engine, version, model or configuration change of the selected targets in the range: a verdict appears 30 minutes after one.").
		OverrideByRegexp(".*", emptyCell()))
	return b
}

// regressionAnnotation marks each regression verdict (regressed and improved
// titles carry the size) on the dashboard's time-series panels.
func regressionAnnotation() cog.Builder[dashboard.AnnotationQuery] {
	return annotation("Regression verdicts", false, "red", query("queryType", "regression", "targets", []string{"$target"}, "format", "annotations"))
}
