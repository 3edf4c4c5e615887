package catalog

import (
	"maps"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/common/model"
)

// The PromQL text the read layer needs besides the signal builders (CounterRatePromQL,
// HistogramPromQL and their kin): regex alternations, exact selectors, the `up` queries, the le filter of the SLO
// queries and the raw selectors of the events and sanity scans. Every function is pure text.

// Alternation renders names as a PromQL regex alternation with every name quoted literally
// (regexp.QuoteMeta), for a `job=~"…"` matcher (PromQL anchors it). No name gives "$^", which
// matches nothing rather than everything.
func Alternation(names []string) string {
	var out strings.Builder // linear in the names (+= was quadratic)
	for i, n := range names {
		if i > 0 {
			out.WriteByte('|')
		}
		out.WriteString(regexp.QuoteMeta(n))
	}
	if out.Len() == 0 {
		return "$^"
	}
	return out.String()
}

// NameAlternation renders metric names as a PromQL regex alternation, each name once (first
// occurrence kept), quoted literally and escaped for a double-quoted PromQL string.
func NameAlternation(names []string) string {
	parts := make([]string, 0, len(names))
	seen := map[string]bool{}
	for _, n := range names {
		if seen[n] {
			continue
		}
		seen[n] = true
		parts = append(parts, regexp.QuoteMeta(n))
	}
	return EscapeLabel(strings.Join(parts, "|"))
}

// EscapeLabel escapes backslashes and double quotes for a double-quoted PromQL label value.
func EscapeLabel(s string) string {
	out := make([]rune, 0, len(s))
	for _, r := range s {
		if r == '\\' || r == '"' {
			out = append(out, '\\')
		}
		out = append(out, r)
	}
	return string(out)
}

// JobSelector is the selector of every series of one target: `{job="<name>"}`.
func JobSelector(name string) string { return `{job="` + EscapeLabel(name) + `"}` }

// JobsSelector is the selector of every series of the given targets: `{job=~"a|b"}`.
func JobsSelector(jobs []string) string { return `{job=~"` + EscapeLabel(Alternation(jobs)) + `"}` }

// ExactSelector renders a series' full label set as a PromQL selector, labels sorted:
// `name{a="1", b="2"}`.
func ExactSelector(m model.Metric) string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		if k == model.MetricNameLabel {
			continue
		}
		parts = append(parts, string(k)+"="+strconv.Quote(string(m[k])))
	}
	return string(m[model.MetricNameLabel]) + "{" + strings.Join(parts, ", ") + "}"
}

// HistogramRawSelector selects the raw _bucket and _count samples of one stored histogram
// (name without suffix, labels without le) over rng: the candidates of a backwards scan.
func HistogramRawSelector(name string, labels model.Metric, rng time.Duration) string {
	var ms []string
	for _, ln := range slices.Sorted(maps.Keys(labels)) {
		ms = append(ms, string(ln)+"="+strconv.Quote(string(labels[ln])))
	}
	return `{__name__=~"` + regexp.QuoteMeta(name) + `_(bucket|count)", ` + strings.Join(ms, ", ") + "}[" + model.Duration(rng).String() + "]"
}

// BucketNamesSelector selects the _bucket series of the given histogram names (sorted
// alternation) of one job, for reading their stored le values: `{__name__=~"…", job="…"}`.
func BucketNamesSelector(bucketNames []string, job string) string {
	return "{__name__=~" + strconv.Quote(Alternation(bucketNames)) + ", job=" + strconv.Quote(job) + "}"
}

// LeSelector selects the _bucket series of the given histogram metrics (names without
// suffix) of one job, unsorted alternation as given: the thresholdLe look-up of SLO queries.
func LeSelector(names []string, job string) string {
	quoted := make([]string, len(names))
	for k, n := range names {
		quoted[k] = regexp.QuoteMeta(n + "_bucket")
	}
	return `{__name__=~"` + strings.Join(quoted, "|") + `", job="` + EscapeLabel(job) + `"}`
}

var (
	bucketSelWithMatchers = regexp.MustCompile(`(_bucket)\{`)
	bucketSelBare         = regexp.MustCompile(`(_bucket)\[`)
)

// WithLe adds an le matcher selecting exactly the given stored values to every _bucket
// selector of a catalogue bucket-rate query (`rate(x_bucket{…}[w])` or `rate(x_bucket[w])`).
func WithLe(q string, les []string) string {
	quoted := make([]string, len(les))
	for k, s := range les {
		quoted[k] = regexp.QuoteMeta(s)
	}
	m := `le=~` + strconv.Quote(strings.Join(quoted, "|"))
	q = bucketSelWithMatchers.ReplaceAllString(q, "${1}{"+strings.ReplaceAll(m, "$", "$$")+", ")
	return bucketSelBare.ReplaceAllString(q, "${1}{"+strings.ReplaceAll(m, "$", "$$")+"}[")
}

// UpMaxPromQL is the highest `up` per target over the last w: 1 when any scrape of the
// window succeeded.
func UpMaxPromQL(jobs []string, w time.Duration) string {
	return "max by (job) (max_over_time(up{job=~" + strconv.Quote(Alternation(jobs)) + "}[" + model.Duration(w).String() + "]))"
}

// UpMinPromQL is the lowest `up` per target over the last w: 0 when any scrape of the window
// failed.
func UpMinPromQL(jobs []string, w time.Duration) string {
	return "min by (job) (min_over_time(up{job=~" + strconv.Quote(Alternation(jobs)) + "}[" + model.Duration(w).String() + "]))"
}

// UpRawPromQL is the raw `up` samples of the targets over rng (a range selector).
func UpRawPromQL(jobs []string, rng time.Duration) string {
	return `up{job=~"` + EscapeLabel(Alternation(jobs)) + `"}[` + model.Duration(rng).String() + "]"
}

// RemoteStatusPromQL reads per target, from a server's synthetic scrape series: the lowest up
// (down if any instance is down), the latest scrape time, the longest scrape and the samples
// kept after relabelling, each tagged by the label stat (up, last, duration, series).
const RemoteStatusPromQL = `label_replace(min by (job) (up), "stat", "up", "", "")` +
	` or label_replace(max by (job) (timestamp(up)), "stat", "last", "", "")` +
	` or label_replace(max by (job) (scrape_duration_seconds), "stat", "duration", "", "")` +
	` or label_replace(sum by (job) (scrape_samples_post_metric_relabeling), "stat", "series", "", "")`

// OverTimePromQL wraps a query in <agg>_over_time over window w at subquery resolution res:
// `agg_over_time((q)[w:res])`.
func OverTimePromQL(agg, q string, w time.Duration, res string) string {
	return agg + "_over_time((" + q + ")[" + model.Duration(w).String() + ":" + res + "])"
}

// SpanPromQL is the span (max − min) of a query over the last w at resolution res.
func SpanPromQL(q string, w time.Duration, res string) string {
	sub := "(" + q + ")[" + model.Duration(w).String() + ":" + res + "]"
	return "max_over_time(" + sub + ") - min_over_time(" + sub + ")"
}

// LatestNamesPromQL counts a target's series by metric name at an instant: the families on
// its latest scrape (a family that left the page got staleness markers).
func LatestNamesPromQL(job string) string {
	return `count by (__name__) (` + JobSelector(job) + `)`
}

// ProcessStartPromQL is the raw process_start_time_seconds samples of the targets over rng.
func ProcessStartPromQL(jobs []string, rng time.Duration) string {
	return ProcessStartTime + `{job=~"` + EscapeLabel(Alternation(jobs)) + `"}[` + model.Duration(rng).String() + "]"
}

// RawNamesPromQL is the raw samples of the named series of the targets over rng.
func RawNamesPromQL(jobs, names []string, rng time.Duration) string {
	return `{job=~"` + EscapeLabel(Alternation(jobs)) + `", __name__=~"` + NameAlternation(names) + `"}[` + model.Duration(rng).String() + "]"
}

// ServedModelsPromQL is one series per target and served model name among the named series.
func ServedModelsPromQL(jobs, names []string) string {
	return `group by (job, model_name) ({job=~"` + EscapeLabel(Alternation(jobs)) + `", model_name!="", __name__=~"` + NameAlternation(names) + `"})`
}

// NamesByJobNoBucketsPromQL counts each target's series by metric name (count by (job,
// __name__) of the targets' series), leaving out the classic-histogram `_bucket` series (most of a vLLM page's series: one per
// `le`), whose presence on a page is that of their `_count` series; orphanBuckets are
// `_bucket` names stored without their `_count`, selected on their own.
func NamesByJobNoBucketsPromQL(jobs, orphanBuckets []string) string {
	j := EscapeLabel(Alternation(jobs))
	sel := `{job=~"` + j + `", __name__!~".+_bucket"}`
	if len(orphanBuckets) > 0 {
		sel += ` or {job=~"` + j + `", __name__=~"` + NameAlternation(orphanBuckets) + `"}`
	}
	return `count by (job, __name__) (` + sel + `)`
}

// CacheConfigPromQL is vLLM's cache_config_info gauge of the targets.
func CacheConfigPromQL(jobs []string) string {
	return `vllm:cache_config_info{job=~"` + EscapeLabel(Alternation(jobs)) + `"}`
}

// ResetCandidatesPromQL keeps the series of sel that reset within rng: `sel and (resets(sel[rng]) > 0)`.
func ResetCandidatesPromQL(sel string, rng time.Duration) string {
	r := "[" + model.Duration(rng).String() + "]"
	return sel + " and (resets(" + sel + r + ") > 0)"
}

// RawMetricSelector selects one stored metric by name, restricted to the given jobs and to
// equality matchers (label → value, in sorted label order).
func RawMetricSelector(metric string, jobs []string, matchers map[string]string) string {
	var sel strings.Builder // linear in the matchers (+= was quadratic)
	sel.WriteString(`{__name__=` + strconv.Quote(metric) + `, job=~` + strconv.Quote(Alternation(jobs)))
	for _, k := range slices.Sorted(maps.Keys(matchers)) {
		sel.WriteString(", " + k + "=" + strconv.Quote(matchers[k]))
	}
	sel.WriteString("}")
	return sel.String()
}
