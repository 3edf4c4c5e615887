package catalog

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/common/model"
)

// ProbePrefix starts every metric name the Inferscope client-side probe
// (cmd/inferscope-probe) exposes. Its series carry the labels endpoint and model
// (the model the probe asked for); the job label is the probe's name in the
// settings (settings.Probe), joined to the engine target it exercises.
const ProbePrefix = "inferscope_probe_"

// Probe metric families (see pkg/probe). Histograms are in seconds; the
// per-request histograms hold one observation per successful request.
const (
	ProbeRequestsTotal     = ProbePrefix + "requests_total"                             // counter: requests sent
	ProbeErrorsTotal       = ProbePrefix + "errors_total"                               // counter {class, code}: failed requests
	ProbeOutputTokensTotal = ProbePrefix + "output_tokens_total"                        // counter: tokens received
	ProbeTTFB              = ProbePrefix + "time_to_first_byte_seconds"                 // histogram: response headers
	ProbeTTFT              = ProbePrefix + "time_to_first_token_seconds"                // histogram: first text chunk, client side
	ProbeITL               = ProbePrefix + "inter_token_latency_seconds"                // histogram: every gap between text chunks
	ProbeTPOT              = ProbePrefix + "time_per_output_token_seconds"              // histogram: per request
	ProbeE2E               = ProbePrefix + "e2e_request_latency_seconds"                // histogram: request sent → [DONE]
	ProbeRequestMaxITL     = ProbePrefix + "request_max_inter_token_latency_seconds"    // histogram: per request, its largest gap
	ProbeRequestITLStddev  = ProbePrefix + "request_inter_token_latency_stddev_seconds" // histogram: per request, √variance of its gaps
	ProbeLastTimestamp     = ProbePrefix + "last_request_timestamp_seconds"             // gauge: Unix time of the last request
	ProbeLastSuccess       = ProbePrefix + "last_success"                               // gauge: 1 when the last request succeeded
	ProbeLastTTFT          = ProbePrefix + "last_time_to_first_token_seconds"           // gauge
	ProbeLastMaxITL        = ProbePrefix + "last_max_inter_token_latency_seconds"       // gauge: the last request's largest gap
	ProbeLastITLVariance   = ProbePrefix + "last_inter_token_latency_variance_seconds2" // gauge, s²
	ProbeIntervalSeconds   = ProbePrefix + "interval_seconds"                           // gauge: configured interval
	ProbeMaxTokens         = ProbePrefix + "max_tokens"                                 // gauge: configured max_tokens
	probeLastTTFB          = ProbePrefix + "last_time_to_first_byte_seconds"
	probeLastE2E           = ProbePrefix + "last_e2e_request_latency_seconds"
	probeLastTPOT          = ProbePrefix + "last_time_per_output_token_seconds"
	probeLastOutputTokens  = ProbePrefix + "last_output_tokens"
)

// ProbeStageHistograms maps the latency stages a probe measures to its
// histogram (latency and slo with source "probe").
var ProbeStageHistograms = map[Signal]string{TTFT: ProbeTTFT, ITL: ProbeITL, TPOT: ProbeTPOT, E2E: ProbeE2E}

// ProbeGapBounds are the bucket bounds (s) of the probe's gap histograms
// (ITL, TPOT, per-request max gap and stddev); ProbeLatencyBounds those of TTFB,
// TTFT and E2E. A spike threshold must be one of them, so that the number of
// requests above it is exact. pkg/probe's tests check they match the probe.
var (
	ProbeGapBounds = []float64{0.001, 0.0025, 0.005, 0.0075, 0.01, 0.0125, 0.015, 0.02, 0.025, 0.03, 0.04, 0.05, 0.06, 0.075,
		0.1, 0.125, 0.15, 0.2, 0.25, 0.3, 0.4, 0.5, 0.75, 1, 1.5, 2, 3, 5, 10}
	ProbeLatencyBounds = []float64{0.005, 0.01, 0.015, 0.02, 0.025, 0.03, 0.04, 0.05, 0.06, 0.075, 0.1, 0.125, 0.15, 0.2, 0.25, 0.3,
		0.4, 0.5, 0.75, 1, 1.5, 2, 2.5, 3, 4, 5, 7.5, 10, 15, 20, 30, 60}
)

// ProbeMetricNames are every stored sample name of the probe (histograms with
// their _bucket, _sum and _count samples); the collector keeps them.
var ProbeMetricNames = func() []string {
	var out []string
	for _, h := range []string{ProbeTTFB, ProbeTTFT, ProbeITL, ProbeTPOT, ProbeE2E, ProbeRequestMaxITL, ProbeRequestITLStddev} {
		out = append(out, h+"_bucket", h+"_sum", h+"_count")
	}
	return append(out, ProbeRequestsTotal, ProbeErrorsTotal, ProbeOutputTokensTotal, ProbeLastTimestamp, ProbeLastSuccess,
		ProbeLastTTFT, ProbeLastMaxITL, ProbeLastITLVariance, ProbeIntervalSeconds, ProbeMaxTokens, probeLastTTFB, probeLastE2E,
		probeLastTPOT, probeLastOutputTokens)
}()

// probeGroups maps canonical groups to the probe's stored labels: "target" →
// job (the probe's name; callers map it to its target), "model" → model.
func probeGroups(by []string) []string {
	var g []string
	for _, b := range by {
		switch b {
		case "target":
			g = append(g, "job")
		case "model":
			g = append(g, "model")
		}
	}
	return g
}

// probeSelector selects a family of the given probes (job names), models and
// extra matchers.
func probeSelector(name string, probes, models []string, extra ...string) string {
	m := []string{`job=~"` + EscapeLabel(Alternation(probes)) + `"`}
	if len(models) > 0 {
		m = append(m, `model=~"`+EscapeLabel(Alternation(models))+`"`)
	}
	m = append(m, extra...)
	return name + "{" + strings.Join(m, ", ") + "}"
}

// renameModel moves the probe's model label to model_name (the label every
// Inferscope result uses for the model) when the groups hold it: each group
// is one series, so the sum without model only drops the label.
func renameModel(groups []string, q string) string {
	for _, g := range groups {
		if g == "model" {
			return `sum without (model) (label_replace(` + q + `, "model_name", "$1", "model", "(.+)"))`
		}
	}
	return q
}

// ProbeHistogram is the PromQL of one probe histogram over a window, grouped:
// Buckets = sum by (groups, le) (rate(<h>_bucket[w])), Sum and Count the
// same over _sum and _count. Groups hold job (the probe) for "target" and
// model_name (copied from model) for "model".
type ProbeHistogram struct{ Buckets, Sum, Count string }

// ProbeHistogramPromQL builds the reads of histogram h (one of the Probe*
// histogram names) for probes and models over window.
func ProbeHistogramPromQL(h string, probes, models, by []string, window time.Duration) ProbeHistogram {
	g := probeGroups(by)
	w := "[" + model.Duration(window).String() + "]"
	rate := func(suffix string, extraGroups ...string) string {
		return renameModel(g, aggregate("sum", append(append([]string{}, g...), extraGroups...), "rate("+probeSelector(h+suffix, probes, models)+w+")"))
	}
	return ProbeHistogram{Buckets: rate("_bucket", "le"), Sum: rate("_sum"), Count: rate("_count")}
}

// ProbeCounterRatePromQL is sum by (groups, extra) (rate(counter[window])) of a
// probe counter (ProbeRequestsTotal, ProbeErrorsTotal: extra class, code).
func ProbeCounterRatePromQL(counter string, probes, models, by []string, window time.Duration, extra ...string) string {
	g := append(probeGroups(by), extra...)
	return renameModel(g, aggregate("sum", g, "rate("+probeSelector(counter, probes, models)+"["+model.Duration(window).String()+"])"))
}

// ProbeIncreasePromQL is sum by (groups) (increase(<h>_count[window])): the
// requests a per-request histogram observed in the window.
func ProbeIncreasePromQL(h string, probes, models, by []string, window time.Duration) string {
	g := probeGroups(by)
	return renameModel(g, aggregate("sum", g, "increase("+probeSelector(h+"_count", probes, models)+"["+model.Duration(window).String()+"])"))
}

// ProbeOverPromQL counts, per group, the requests of per-request histogram h
// whose value was above bound in the window: increase of _count minus
// increase of the bucket le=bound. bound must be one of the histogram's
// bounds (the count is then exact); the le matcher accepts both spellings a
// store may hold ("1" and "1.0").
func ProbeOverPromQL(h string, probes, models, by []string, bound float64, window time.Duration) string {
	g := probeGroups(by)
	w := "[" + model.Duration(window).String() + "]"
	total := aggregate("sum", g, "increase("+probeSelector(h+"_count", probes, models)+w+")")
	le := aggregate("sum", g, "increase("+probeSelector(h+"_bucket", probes, models, `le=~"`+EscapeLabel(LeRegex(bound))+`"`)+w+")")
	return renameModel(g, total+" - "+le)
}

// ProbeMaxPromQL is the largest value of a probe's last-request gauge (e.g.
// ProbeLastMaxITL) over the window: max by (groups) (max_over_time(g[w])). It
// is the exact per-request maximum when the scrape interval is at most the
// probe's interval (every request's value is scraped once).
func ProbeMaxPromQL(gauge string, probes, models, by []string, window time.Duration) string {
	g := probeGroups(by)
	return renameModel(g, aggregate("max", g, "max_over_time("+probeSelector(gauge, probes, models)+"["+model.Duration(window).String()+"])"))
}

// LeRegex is a regular expression (RE2, not yet escaped for a PromQL string)
// matching the spellings of bucket bound v in an le label: the Go client's
// shortest form ("0.1", "1") and Prometheus 3's normalised one ("1.0").
func LeRegex(v float64) string {
	s := strconv.FormatFloat(v, 'f', -1, 64)
	if strings.Contains(s, ".") {
		return regexp.QuoteMeta(s) + "0*"
	}
	return regexp.QuoteMeta(s) + `(\.0+)?`
}

// IsProbeBound reports whether v is one of bounds.
func IsProbeBound(v float64, bounds []float64) bool {
	for _, b := range bounds {
		if b == v {
			return true
		}
	}
	return false
}

// FormatBounds renders bounds for an error sentence.
func FormatBounds(bounds []float64) string {
	parts := make([]string, len(bounds))
	for i, b := range bounds {
		parts[i] = fmt.Sprint(b)
	}
	return strings.Join(parts, ", ")
}

// ProbeSuccessPromQL is the probe's request outcome rates per group in the
// shape of a finished-requests read (a finished_reason label): successful
// requests/s as finished_reason="stop" and failed ones as
// finished_reason="error", so an error-ratio objective counts the probe's
// failures against everything it sent (an availability SLI; the probe sends at
// a fixed interval, so the share of failed requests is the share of time the
// endpoint failed its users).
func ProbeSuccessPromQL(probes, models, by []string, window time.Duration) string {
	g := probeGroups(by)
	w := "[" + model.Duration(window).String() + "]"
	errs := aggregate("sum", g, "rate("+probeSelector(ProbeErrorsTotal, probes, models)+w+")")
	reqs := aggregate("sum", g, "rate("+probeSelector(ProbeRequestsTotal, probes, models)+w+")")
	return renameModel(g, `label_replace(`+errs+`, "finished_reason", "error", "", "") or label_replace(`+reqs+` - `+errs+`, "finished_reason", "stop", "", "")`)
}

// ProbeSampleCountPromQL is the number of stored scrapes of the probes'
// request counter over window (max over series), the probe's counterpart of
// SampleCountPromQL.
func ProbeSampleCountPromQL(probes []string, window time.Duration) string {
	return "max(count_over_time(" + probeSelector(ProbeRequestsTotal, probes, nil) + "[" + model.Duration(window).String() + "]))"
}
