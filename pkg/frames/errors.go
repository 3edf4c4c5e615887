package frames

import (
	"github.com/grafana/grafana-plugin-sdk-go/data"

	"github.com/inferscope/inferscope-llm-datasource/pkg/analysis/errclass"
	"github.com/inferscope/inferscope-llm-datasource/pkg/catalog"
)

// ErrorClassThreshold prefixes a Meta.Thresholds key naming an error class (see Meta).
const ErrorClassThreshold = "error_class:"

// ErrorsTable is the errors query's table frame "errors": the group columns (target, model,
// provider: whichever the query grouped by), requests (reqps), errors (reqps), ttft_p50 and
// itl_p50 (s, the median of the gateway's summed bucket rates at the end of the range), one
// "<class> share" column per class (percentunit, each with its allowed share as a threshold),
// worst_burn (the highest share ÷ allowed share over the classes, "x"), worst_class,
// spend_per_request and spend_per_1m_tokens (currency; null where the gateway exports no
// spend).
func ErrorsTable(rows []errclass.Row, classes []catalog.ErrorClass, allowed map[catalog.ErrorClass]float64, currency string, m Meta) data.Frames {
	f := data.NewFrame("errors")
	groupLabelColumns(f, rows, func(r errclass.Row) map[string]string { return r.Labels })
	numberColumn(f, rows, "requests", "reqps", func(r errclass.Row) float64 { return r.Requests })
	numberColumn(f, rows, "errors", "reqps", func(r errclass.Row) float64 { return r.Errors })
	numberColumn(f, rows, "ttft_p50", "s", func(r errclass.Row) float64 { return r.TTFTP50 })
	numberColumn(f, rows, "itl_p50", "s", func(r errclass.Row) float64 { return r.ITLP50 })
	for i, c := range classes {
		numberColumn(f, rows, string(c)+" share", "percentunit", func(r errclass.Row) float64 { return r.Shares[i] })
		threshold(f.Fields[len(f.Fields)-1], allowed[c])
	}
	numberColumn(f, rows, "worst_burn", "x", func(r errclass.Row) float64 { return r.WorstBurn })
	stringColumn(f, rows, "worst_class", func(r errclass.Row) string { return r.WorstClass })
	numberColumn(f, rows, "spend_per_request", currency, func(r errclass.Row) float64 { return r.SpendPerRequest })
	numberColumn(f, rows, "spend_per_1m_tokens", currency, func(r errclass.Row) float64 { return r.SpendPerMTokens })
	return withMeta(f, m)
}
