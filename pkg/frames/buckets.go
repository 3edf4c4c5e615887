package frames

import (
	"encoding/json"
	"strings"

	"github.com/grafana/grafana-plugin-sdk-go/data"

	"github.com/inferscope/inferscope-llm-datasource/pkg/analysis/buckets"
)

// BucketsTable is the buckets query's table: signal, group labels, kind
// (quantile/threshold), requested (quantile ratio or threshold seconds),
// value (s), the bucket's lower and upper edges (s), relative width (ratio),
// clamp (""/high/low), exact (threshold is a bound), extra bounds (JSON
// array), the --custom-histogram-buckets value with them added, and flag:
// that value as the command-line argument to paste into vLLM's arguments
// (--custom-histogram-buckets '<json>', shell-quoted; empty where no bound
// is needed), and lies_in: "p99 lies in 250–500 ms" where a quantile's
// bucket is over 10 % of the value wide (buckets.LiesIn; empty otherwise), and
// requested_label: requested with its unit, "p99" or "threshold 3 s" (buckets.Requested).
func BucketsTable(rows []buckets.Row, m Meta) data.Frames {
	f := data.NewFrame("buckets")
	str := func(name string, get func(buckets.Row) string) { stringColumn(f, rows, name, get) }
	num := func(name, unit string, get func(buckets.Row) float64) { numberColumn(f, rows, name, unit, get) }
	str("signal", func(r buckets.Row) string { return r.Signal })
	groupLabelColumns(f, rows, func(r buckets.Row) map[string]string { return r.Group })
	str("kind", func(r buckets.Row) string { return r.Advice.Kind })
	num("requested", "short", func(r buckets.Row) float64 { return r.Advice.Requested })
	num("value", "s", func(r buckets.Row) float64 { return r.Advice.Value })
	num("bucket_lower", "s", func(r buckets.Row) float64 { return r.Advice.Lower })
	num("bucket_upper", "s", func(r buckets.Row) float64 { return r.Advice.Upper })
	num("relative_width", "percentunit", func(r buckets.Row) float64 { return r.Advice.RelativeWidth })
	str("clamped", func(r buckets.Row) string { return string(r.Advice.Clamp) })
	exact := make([]bool, len(rows))
	for i, r := range rows {
		exact[i] = r.Advice.Exact
	}
	f.Fields = append(f.Fields, data.NewField("exact", nil, exact))
	str("extra_bounds", func(r buckets.Row) string {
		b, _ := json.Marshal(r.Advice.Extra)
		if r.Advice.Extra == nil {
			return "[]"
		}
		return string(b)
	})
	str("custom_histogram_buckets", func(r buckets.Row) string { return r.CustomBuckets })
	// Added for issue 33 (after the existing fields, so none moves).
	str("flag", func(r buckets.Row) string {
		if r.CustomBuckets == "" || len(r.Advice.Extra) == 0 {
			return ""
		}
		return "--custom-histogram-buckets '" + strings.ReplaceAll(r.CustomBuckets, "'", `'\''`) + "'"
	})
	// Added for issue 33: "p99 lies in 250–500 ms" where the quantile's bucket
	// is over buckets.MaxError wide (buckets.LiesIn), else "".
	str("lies_in", func(r buckets.Row) string { return buckets.LiesIn(r.Advice) })
	// Added for issue 33: requested with its unit, "p99" or "threshold 3 s" (buckets.Requested).
	str("requested_label", func(r buckets.Row) string { return buckets.Requested(r.Advice) })
	return withMeta(f, m)
}
