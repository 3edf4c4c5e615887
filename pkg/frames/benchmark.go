package frames

import (
	"github.com/grafana/grafana-plugin-sdk-go/data"

	"github.com/inferscope/inferscope-llm-datasource/pkg/analysis/baseline"
)

// BenchmarkTable is the benchmark query's table: one row per metric ×
// statistic with the baseline's name, metric (ttft, tpot, itl, e2e,
// output_throughput, request_throughput), stat (p50, p90, p99, mean), unit,
// production's value with its bounds (s, or tokens/s and req/s), the
// baseline's value, ratio production/baseline, the verdict (worse, better,
// as benchmarked, not in baseline, no production data), and the load
// basis (request_rate, concurrency, none) with the sentence saying which
// windows were compared. Non-finite numbers are nulls.
func BenchmarkTable(name string, rows []baseline.Row, sel baseline.Selection, m Meta) data.Frames {
	f := data.NewFrame("benchmark")
	str := func(col string, get func(baseline.Row) string) { stringColumn(f, rows, col, get) }
	num := func(col, unit string, get func(baseline.Row) float64) { numberColumn(f, rows, col, unit, get) }
	str("baseline", func(baseline.Row) string { return name })
	str("metric", func(r baseline.Row) string { return r.Metric })
	str("stat", func(r baseline.Row) string { return r.Stat })
	str("unit", func(r baseline.Row) string { return r.Unit })
	num("production", "", func(r baseline.Row) float64 { return r.Production })
	num("production_lower", "", func(r baseline.Row) float64 { return r.ProductionLower })
	num("production_upper", "", func(r baseline.Row) float64 { return r.ProductionUp })
	num("baseline_value", "", func(r baseline.Row) float64 { return r.Baseline })
	num("ratio", "short", func(r baseline.Row) float64 { return r.Ratio })
	str("verdict", func(r baseline.Row) string { return r.Verdict })
	str("load_basis", func(baseline.Row) string { return string(sel.Basis) })
	str("windows", func(baseline.Row) string { return sel.Description })
	return withMeta(f, m)
}
