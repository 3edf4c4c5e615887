package frames

import (
	"fmt"
	"strings"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/data"

	"github.com/inferscope/inferscope-llm-datasource/pkg/analysis/regress"
)

// RegressionRow is one verdict of the regression query: the change it is
// about (Time, Target, Change kind such as restart or engine_change, and its
// title; "ranges" for two user-picked ranges), the before and after ranges
// compared, and the stage's verdict.
type RegressionRow struct {
	Time                  time.Time
	Target, Change, Title string
	BeforeFrom, BeforeTo  time.Time
	AfterFrom, AfterTo    time.Time
	regress.Verdict
}

// RegressionTable is the regression query's table: one row per change ×
// stage with time, target, change, title, stage, mean latency before and
// after (s), size (after/before − 1) with its 95 % bootstrap interval
// (size_lower, size_upper), the windows compared and those with requests
// on each side, mean requests running before and after, verdict
// (regressed, improved, no change, not comparable), verdict_value (1, −1,
// 0), what was controlled for and the reason.
func RegressionTable(rows []RegressionRow, m Meta) data.Frames {
	n := len(rows)
	at := make([]time.Time, n)
	for i, r := range rows {
		at[i] = r.Time
	}
	f := data.NewFrame("regression", data.NewField("time", nil, at))
	str := func(name string, get func(RegressionRow) string) { stringColumn(f, rows, name, get) }
	num := func(name, unit string, get func(RegressionRow) float64) { numberColumn(f, rows, name, unit, get) }
	str("target", func(r RegressionRow) string { return r.Target })
	str("change", func(r RegressionRow) string { return r.Change })
	str("title", func(r RegressionRow) string { return r.Title })
	str("stage", func(r RegressionRow) string { return r.Stage })
	num("before", "s", func(r RegressionRow) float64 { return r.Before })
	num("after", "s", func(r RegressionRow) float64 { return r.After })
	num("size", "percentunit", func(r RegressionRow) float64 { return r.Size })
	num("size_lower", "percentunit", func(r RegressionRow) float64 { return r.Lower })
	num("size_upper", "percentunit", func(r RegressionRow) float64 { return r.Upper })
	num("windows_before", "short", func(r RegressionRow) float64 { return float64(r.KeptBefore) })
	num("windows_after", "short", func(r RegressionRow) float64 { return float64(r.KeptAfter) })
	num("windows_with_requests_before", "short", func(r RegressionRow) float64 { return float64(r.WindowsBefore) })
	num("windows_with_requests_after", "short", func(r RegressionRow) float64 { return float64(r.WindowsAfter) })
	num("running_before", "short", func(r RegressionRow) float64 { return r.RunningBefore })
	num("running_after", "short", func(r RegressionRow) float64 { return r.RunningAfter })
	str("verdict", func(r RegressionRow) string { return r.Verdict.Verdict })
	num("verdict_value", "short", func(r RegressionRow) float64 { return r.Value() })
	str("controlled_for", func(r RegressionRow) string { return r.Controlled })
	str("reason", func(r RegressionRow) string { return r.Reason })
	return withMeta(f, m)
}

// RegressionAnnotations is one annotation per verdict: time and timeEnd
// (the change, an instant), title ("TTFT regressed +35% after restart"),
// text (the reason and what was controlled for), tags (verdict, stage,
// target, change kind).
func RegressionAnnotations(rows []RegressionRow, m Meta) data.Frames {
	n := len(rows)
	at := make([]time.Time, n)
	title, text, tags := make([]string, n), make([]string, n), make([]string, n)
	for i, r := range rows {
		at[i] = r.Time
		size := ""
		if r.Verdict.Verdict == regress.Regressed || r.Verdict.Verdict == regress.Improved {
			size = fmt.Sprintf(" %+.0f%%", 100*r.Size)
		}
		title[i] = fmt.Sprintf("%s %s%s after %s on %s", strings.ToUpper(r.Stage), r.Verdict.Verdict, size, r.Change, r.Target)
		text[i] = r.Reason + "; controlled for " + r.Controlled
		tags[i] = strings.Join([]string{strings.ReplaceAll(r.Verdict.Verdict, " ", "_"), r.Stage, r.Target, r.Change}, ",")
	}
	f := data.NewFrame("regression",
		data.NewField("time", nil, at),
		data.NewField("timeEnd", nil, at),
		data.NewField("title", nil, title),
		data.NewField("text", nil, text),
		data.NewField("tags", nil, tags),
	)
	return withMeta(f, m)
}

// RegressionNumeric is the alert rules' form: for each target × stage the
// verdict_value (1 regressed, −1 improved, 0 otherwise) of the latest change
// in the range, labelled target and stage.
func RegressionNumeric(rows []RegressionRow, m Meta) data.Frames {
	latest := map[[2]string]RegressionRow{}
	var order [][2]string
	for _, r := range rows {
		k := [2]string{r.Target, r.Stage}
		prev, ok := latest[k]
		if !ok {
			order = append(order, k)
		}
		if !ok || !r.Time.Before(prev.Time) {
			latest[k] = r
		}
	}
	labels := make([]data.Labels, 0, len(order))
	values := make([]float64, 0, len(order))
	for _, k := range order {
		labels = append(labels, data.Labels{"target": k[0], "stage": k[1]})
		values = append(values, latest[k].Value())
	}
	return numericMulti("regression", "verdict", labels, values, m)
}
