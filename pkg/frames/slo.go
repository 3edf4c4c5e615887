package frames

import (
	"math"
	"strings"

	"github.com/grafana/grafana-plugin-sdk-go/data"

	"github.com/inferscope/inferscope-llm-datasource/pkg/analysis/slo"
)

// SLOTable is the slo query's table: one row per objective × group with
// profile, objective, signal, threshold (s), objective_target (the
// objective's ratio, e.g. 0.99; named `target` before issue 33, when it
// collided with the group column of groupBy target), the group labels, requests over the range, attainment with its exact lower/upper
// bracket and whether the threshold is a bucket bound, the observed quantile
// at the target ratio with its bucket bounds (s), error budget remaining
// over the period with its bracket, the part of the period covered by
// history (s), burn rates over 5m … 3d, status (ok/possible/ticket/page),
// its number (0/0.5/1/2) and a one-sentence reason; then what requests
// counts (count_unit: requests, token gaps or seconds), the burn-rate rows
// not evaluated because the store does not cover their long window, and the
// rows that can never fire for the objective's period and target, and the period as the
// profile names it ("30d", "month"), and budget_of, the budget that budget_remaining is
// computed over (the period once the history covers it, else the span stored). Non-finite numbers are nulls.
func SLOTable(rows []slo.Report, m Meta) data.Frames {
	f := data.NewFrame("slo")
	str := func(name string, get func(slo.Report) string) { stringColumn(f, rows, name, get) }
	num := func(name, unit string, get func(slo.Report) float64) { numberColumn(f, rows, name, unit, get) }
	str("profile", func(r slo.Report) string { return r.Profile })
	str("objective", func(r slo.Report) string { return r.Objective })
	str("signal", func(r slo.Report) string {
		if r.Kind == "error_ratio" || r.Kind == "availability" {
			return r.Kind
		}
		return r.Signal
	})
	num("threshold", "s", func(r slo.Report) float64 { return r.Threshold })
	num("objective_target", "percentunit", func(r slo.Report) float64 { return r.Target })
	groupLabelColumns(f, rows, func(r slo.Report) map[string]string { return r.Group })
	// A count of requests (token gaps, seconds) is whole: the bucket increases behind it are
	// extrapolated to the window's edges (increase()), so it is shown rounded (issue 40: 21.125
	// requests); attainment and budgets use the exact ratio.
	num("requests", "short", func(r slo.Report) float64 { return math.Round(r.Requests) })
	num("attainment", "percentunit", func(r slo.Report) float64 { return r.Attainment })
	num("attainment_lower", "percentunit", func(r slo.Report) float64 { return r.AttainmentLower })
	num("attainment_upper", "percentunit", func(r slo.Report) float64 { return r.AttainmentUpper })
	exact := make([]bool, len(rows))
	for i, r := range rows {
		exact[i] = r.Kind == "error_ratio" || r.Kind == "availability" || r.Location.Exact
	}
	f.Fields = append(f.Fields, data.NewField("threshold_exact", nil, exact))
	num("quantile", "s", func(r slo.Report) float64 { return r.Quantile.Value })
	num("quantile_lower", "s", func(r slo.Report) float64 { return r.Quantile.Lower })
	num("quantile_upper", "s", func(r slo.Report) float64 { return r.Quantile.Upper })
	num("budget_remaining", "percentunit", func(r slo.Report) float64 { return r.Budget.Remaining })
	num("budget_lower", "percentunit", func(r slo.Report) float64 { return r.Budget.Lower })
	num("budget_upper", "percentunit", func(r slo.Report) float64 { return r.Budget.Upper })
	num("history", "s", func(r slo.Report) float64 { return r.Covered.Seconds() })
	for _, w := range slo.Windows {
		num("burn_"+slo.WindowName(w), "short", func(r slo.Report) float64 { return r.Burn[w] })
	}
	str("status", func(r slo.Report) string { return string(r.Status) })
	num("status_value", "short", func(r slo.Report) float64 { return r.Status.Value() })
	str("reason", func(r slo.Report) string { return r.Reason })
	// Added for issue 19 (after the existing fields, so none moves):
	str("count_unit", func(r slo.Report) string { return r.Unit })
	str("not_evaluated", func(r slo.Report) string { return strings.Join(r.Evaluation.NotEvaluated, ", ") })
	str("never_fires", func(r slo.Report) string { return strings.Join(r.Evaluation.Never, "; ") })
	// Added for issue 33 (the dashboards' tiles name the budget's period, "30d budget"):
	str("period", func(r slo.Report) string { return r.PeriodName })
	// Added after review 33-8 (issue 33): the budget budget_remaining is computed over, "30d
	// budget" or "budget of the 1h stored (30d not yet covered)" (Report.BudgetOf).
	str("budget_of", func(r slo.Report) string { return r.BudgetOf() })
	return withMeta(f, m)
}
