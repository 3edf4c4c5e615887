package catalog

import (
	"errors"
	"fmt"
	"math"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/common/model"
)

// Scope narrows and groups a query.
type Scope struct {
	// Targets are job names (settings Target.Name / GPUAgent.Name); empty means all.
	Targets []string
	// Models are model names as the engines report them; empty means all. See the package
	// documentation for engines without a model label.
	Models []string
	// By lists canonical group names: "target", "model", "engine" ("none" or "" are ignored).
	By []string
	// Finite makes the rate builders (CounterRatePromQL, MeanPromQL, HistogramPromQL and
	// HistogramPromQLFor, SeriesRatePromQL, HistogramSeriesPromQL) drop each stored series'
	// rate or increase in the windows where it is NaN or ±Inf, before any aggregation (see
	// finite; for histogram buckets the whole stored histogram, see finiteSet). It costs about
	// as much again as the query itself, so callers set it only where a result held a
	// non-finite value: a clean history needs no filter.
	Finite bool
	// User includes engine "custom" (a target's own metrics mapped in its settings, stored
	// under UserMetricPrefix) in the builders; set when a target in scope has such a map, so
	// the PromQL of every other query is unchanged.
	User bool
	// Gateway includes the gateway engines (IsGateway: "llm-d-epp", the llm-d router's endpoint
	// picker; "litellm"; "otel-genai") in the builders; set when a target in scope is one (fetch decides it from the targets' detection), so the
	// PromQL of every other query is unchanged.
	Gateway bool
	// Fresh, when positive, makes the gauge builders (GaugePromQL, GaugePromQLBy) count a stored
	// series at a step only if it has a sample within Fresh before the step:
	// `(x and last_over_time(x[Fresh]))` instead of x. PromQL's 5-minute lookback otherwise keeps
	// a series that stopped being scraped without a staleness marker (a target relabelled or
	// moved, a re-created Prometheus target, a remote store fed by a server that was restarted)
	// "present" next to its successor, and every sum of a gauge counts it twice. About 2.5 scrape
	// intervals is right: a series scraped on time always has a sample in the window, a stopped
	// one leaves the sums one or two scrapes after its last sample. Staleness markers are still
	// honoured (the `x` side). Zero keeps the plain selector (the lookback alone decides).
	Fresh time.Duration
	// Upstreams are the URLs (or host:port) of the targets in the settings. A series carrying a
	// ReExportLabels label whose value names one of them (a gateway's copy of that target's
	// series) is left out by every builder, so the engine counts once, from its own page;
	// copies of engines that are not targets stay. Empty: nothing is left out.
	Upstreams []string
}

// GroupLabel maps a canonical group name to the stored label: "target" → "job", "model" →
// "model_name", "engine" → "engine" (vLLM's data-parallel engine index), "tenant" →
// "fairness_id" and "priority" → "priority" (the llm-d router's request labels: the
// x-llm-d-inference-fairness-id header and the objective's priority), "provider" → "provider"
// (a gateway's upstream provider, copied from each engine's provider labels), DimensionPrefix+"x" →
// "x". Anything else → "".
func GroupLabel(canonical string) string {
	switch canonical {
	case "target":
		return "job"
	case "model":
		return "model_name"
	case "engine":
		return "engine"
	case "tenant":
		return TenantLabel
	case "priority":
		return "priority"
	case "provider":
		return HostedProviderLabel
	}
	if l, ok := strings.CutPrefix(canonical, DimensionPrefix); ok && l != "" {
		return l
	}
	return ""
}

// DimensionPrefix marks a group that is a stored label of a target's own metrics (settings
// Target.Metrics keeps their labels), e.g. "label:dtype" groups by dtype.
const DimensionPrefix = "label:"

// HistogramQueries are the three instant/range queries that carry everything about a latency
// signal over a window: per-second bucket rates by `le` (cumulative, Prometheus classic
// histogram semantics), and the per-second rates of _sum and _count (mean = Sum/Count).
//
// Increases and Resets serve quantiles whose rank fractions must not depend on rate()'s
// per-series extrapolation: Increases is the same sum over delta(x_bucket[w]) (delta
// extrapolates every series sampled at the same instants by one common factor, with no
// zero-point clamp), Resets the sum of resets(x_count[w]) (delta is only an increase when this
// is 0).
// SumIncrease and CountIncrease are delta(x_sum[w]) and delta(x_count[w]), on the same footing
// as Increases (for consistency checks between a histogram's buckets, _sum and _count).
type HistogramQueries struct {
	Buckets, Sum, Count, Increases, Resets string
	SumIncrease, CountIncrease             string
}

var labelNameRE = regexp.MustCompile(`^[a-zA-Z_][a-zA-Z0-9_]*$`)

// groupLabels turns Scope.By plus extra raw label names into stored label names, deduplicated
// in first-seen order.
func groupLabels(sc Scope, extra []string) ([]string, error) {
	var out []string
	for _, b := range sc.By {
		if b == "" || b == "none" {
			continue
		}
		l := GroupLabel(b)
		if l == "" {
			return nil, fmt.Errorf("catalog: unknown group %q (want target, model, engine, tenant, priority or provider)", b)
		}
		if !slices.Contains(out, l) {
			out = append(out, l)
		}
	}
	for _, l := range extra {
		if !labelNameRE.MatchString(l) {
			return nil, fmt.Errorf("catalog: %q is not a valid label name", l)
		}
		if !slices.Contains(out, l) {
			out = append(out, l)
		}
	}
	return out, nil
}

// anyOf builds an anchored-by-Prometheus regex matching exactly the given values, quoted as a
// PromQL string literal.
func anyOf(what string, vals []string) (string, error) {
	parts := make([]string, 0, len(vals))
	for _, v := range vals {
		if v == "" {
			return "", fmt.Errorf("catalog: empty %s name in scope", what)
		}
		parts = append(parts, regexp.QuoteMeta(v))
	}
	return strconv.Quote(strings.Join(parts, "|")), nil
}

func windowString(w time.Duration) (string, error) {
	if w < time.Millisecond {
		return "", fmt.Errorf("catalog: window %v is too short (want at least 1ms)", w)
	}
	return model.Duration(w).String(), nil
}

func aggregate(agg string, groups []string, inner string) string {
	if len(groups) == 0 {
		return agg + " (" + inner + ")"
	}
	return agg + " by (" + strings.Join(groups, ", ") + ") (" + inner + ")"
}

func formatScale(f float64) string { return strconv.FormatFloat(f, 'f', -1, 64) }

// rateArgs checks what the rate builders share: a known signal s, a window of at least 1 ms
// (w: its PromQL duration) and valid group labels (the scope's, then extraBy).
func rateArgs(s Signal, sc Scope, window time.Duration, extraBy []string) (w string, groups []string, err error) {
	if err := checkSignal(s); err != nil {
		return "", nil, err
	}
	if w, err = windowString(window); err != nil {
		return "", nil, err
	}
	if groups, err = groupLabels(sc, extraBy); err != nil {
		return "", nil, err
	}
	return w, groups, nil
}

// scaledRate is rate(sel[w]) of the instant selector sel, times scale when it is not 1
// (Metric.Scale: a stored unit converted to the signal's).
func scaledRate(sel, w string, scale float64) string {
	r := "rate(" + sel + "[" + w + "])"
	if scale != 1 {
		r = "(" + r + " * " + formatScale(scale) + ")"
	}
	return r
}

// engineIndex maps every stored name in the table to its engine (built by buildEngineIndex).
var engineIndex = map[string]Engine{}

// buildEngineIndex fills engineIndex from the finished table (called last by buildCatalogue).
func buildEngineIndex() {
	for e, sigs := range table {
		for _, en := range sigs {
			for _, m := range en.metrics {
				engineIndex[m.Name] = e
			}
		}
	}
}

// engineOf is the engine whose table entries carry stored name name; a name outside the table
// (HistogramPromQLFor takes any metric) is attributed by Detect from its prefix.
func engineOf(name string) Engine {
	if e, ok := engineIndex[name]; ok {
		return e
	}
	return Detect([]string{name}).Engine
}

// term renders one metric as a PromQL vector expression given its label matchers.
type term func(m Metric, matchers string) string

// chain builds, for one engine, `t(m1) or t(m2) …` for each model-label variant, copying
// non-standard model labels into model_name with label_replace when results are grouped by
// model_name (byModel) or filtered by model.
func chain(e Engine, ms []Metric, sc Scope, byModel bool, t term) (string, error) {
	base, err := jobMatchers(sc)
	if err != nil {
		return "", err
	}
	up, err := upstreamMatchers(sc)
	if err != nil {
		return "", err
	}
	base = append(base, up...)
	render := func(extra string) string {
		parts := make([]string, 0, len(ms))
		for _, m := range ms {
			sel := slices.Clone(base)
			if m.Match != "" {
				sel = append(sel, m.Match)
			}
			if extra != "" {
				sel = append(sel, extra)
			}
			r := t(m, strings.Join(sel, ", "))
			if m.Twin != "" {
				// a deprecated name emitted next to its current twin: the twin wins per target
				tw := m
				tw.Name, tw.Match, tw.Twin = m.Twin, "", ""
				r = "(" + r + " unless on (job) " + t(tw, strings.Join(base, ", ")) + ")"
			}
			parts = append(parts, r)
		}
		return strings.Join(parts, " or ")
	}
	labels := modelLabels[e]
	if len(labels) == 0 {
		labels = []string{"model_name"}
	}
	var variants []string
	if len(sc.Models) == 0 {
		inner := render("")
		if byModel {
			for _, l := range labels[1:] {
				inner = labelReplace(inner, l)
			}
		}
		variants = append(variants, inner)
	} else {
		re, err := anyOf("model", sc.Models)
		if err != nil {
			return "", err
		}
		for _, l := range labels {
			inner := render(l + "=~" + re)
			if l != "model_name" {
				inner = labelReplace(inner, l)
			}
			variants = append(variants, inner)
		}
	}
	return strings.Join(variants, " or "), nil
}

func labelReplace(inner, from string) string {
	return `label_replace(` + inner + `, "model_name", "$1", "` + from + `", "(.+)")`
}

func selector(name, matchers string) string {
	if matchers == "" {
		return name
	}
	return name + "{" + matchers + "}"
}

// collect gathers, per engine in Engines order, the metrics of signal s accepted by keep,
// skipping names already taken by an earlier engine.
func collect(s Signal, sc Scope, keep func(Metric) bool) ([]Engine, map[Engine][]Metric) {
	var order []Engine
	per := map[Engine][]Metric{}
	seen := map[string]bool{}
	for _, e := range Engines {
		if (e == EngineCustom && !sc.User) || (IsGateway(e) && !sc.Gateway) {
			continue
		}
		a := Lookup(e, s)
		for _, m := range a.Metrics {
			k := m.Name + "{" + m.Match + "}"
			if seen[k] || !keep(m) {
				continue
			}
			seen[k] = true
			if len(per[e]) == 0 {
				order = append(order, e)
			}
			per[e] = append(per[e], m)
		}
	}
	return order, per
}

// join builds every engine's chain and joins them with `or`. Each engine's chain is first
// collapsed over the labels that only replicate its work (collapse: tensor/context-parallel
// ranks; for gauges also the processes of a multiprocess split), so replicas count once and
// the caller's outer sum or avg runs over partitions (data-parallel engines, targets) only.
func join(order []Engine, per map[Engine][]Metric, sc Scope, groups []string, gauge bool, t term) (string, error) {
	byModel := slices.Contains(groups, "model_name")
	parts := make([]string, 0, len(order))
	for _, e := range order {
		c, err := chain(e, per[e], sc, byModel, t)
		if err != nil {
			return "", err
		}
		if slices.Contains(groups, HostedProviderLabel) {
			for _, l := range providerLabels[e] {
				c = `label_replace(` + c + `, "` + HostedProviderLabel + `", "$1", "` + l + `", "(.+)")`
			}
		}
		c = dropPlaceholders(e, groups, c)
		parts = append(parts, collapse(e, gauge, c))
	}
	return strings.Join(parts, " or "), nil
}

func checkSignal(s Signal) error {
	if !knownSignal(s) {
		return fmt.Errorf("catalog: unknown signal %q", s)
	}
	return nil
}

// HistogramPromQL builds the queries for a histogram signal across every engine that exports
// it (Exact or Approximate), e.g. for TTFT and Scope{Targets: {"a"}, By: {"target"}}, 5m:
//
//	sum by (le, job) (rate(vllm:time_to_first_token_seconds_bucket{job=~"a"}[5m]) or rate(ray_vllm:…_bucket{job=~"a"}[5m]) or … )
//
// The `or` chain keeps a series from the first name that has it, so a target exposing an old
// and a new name with the same labels is counted once; each engine's chain is then collapsed
// over its replica labels (SGLang tp_rank, …: `max without (…)`), so replicas count once. Only histograms with Scale 1 (already in
// seconds or tokens) are included: `le` bounds cannot be rescaled in PromQL, so scaled histograms
// (Triton's milliseconds) must be queried alone with HistogramPromQLFor. Result labels: le (Buckets
// only) and the stored group labels (job, model_name, engine). Approximate sources (SGLang's
// averaged ITL, TGI's batch durations) are included; show the Notes of the engines present.
// Summing targets whose bucket layouts differ yields a union of `le` values that is not a
// consistent cumulative histogram: group by target and merge layouts as distributions
// (hist.QuantilesMerged), as the latency query does. Errors: unknown signal, unknown
// group, empty target/model name, window under 1ms, or a signal with no histogram.
func HistogramPromQL(s Signal, sc Scope, window time.Duration) (HistogramQueries, error) {
	if err := checkSignal(s); err != nil {
		return HistogramQueries{}, err
	}
	order, per := collect(s, sc, func(m Metric) bool { return m.Kind == KindHistogram && m.Scale == 1 })
	if len(order) == 0 {
		return HistogramQueries{}, fmt.Errorf("catalog: signal %q is not read from a histogram by any engine", s)
	}
	return histogramQueries(order, per, sc, window)
}

// HistogramPromQLFor builds the HistogramPromQL queries over exactly the given histogram metrics
// (for example LookupFor(d, TPOT).Metrics, or Triton's millisecond first-response histogram),
// with the same `or` de-duplication, scoping and grouping. All metrics must be histograms with
// one common Scale; the caller multiplies the parsed `le` bounds and the Sum by that Scale.
func HistogramPromQLFor(metrics []Metric, sc Scope, window time.Duration) (HistogramQueries, error) {
	if len(metrics) == 0 {
		return HistogramQueries{}, errors.New("catalog: no metrics given")
	}
	var order []Engine
	per := map[Engine][]Metric{}
	for _, m := range metrics {
		if m.Kind != KindHistogram {
			return HistogramQueries{}, fmt.Errorf("catalog: %s is a %s, not a histogram", m.Name, m.Kind)
		}
		if m.Scale != metrics[0].Scale {
			return HistogramQueries{}, fmt.Errorf("catalog: %s has scale %v, %s has %v: query them separately", m.Name, m.Scale, metrics[0].Name, metrics[0].Scale)
		}
		if !validName(m.Name) {
			return HistogramQueries{}, fmt.Errorf("catalog: %q is not a valid metric name", m.Name)
		}
		e := engineOf(m.Name)
		if len(per[e]) == 0 {
			order = append(order, e)
		}
		per[e] = append(per[e], m)
	}
	return histogramQueries(order, per, sc, window)
}

var metricNameRE = regexp.MustCompile(`^[a-zA-Z_:][a-zA-Z0-9_:]*$`)

func validName(n string) bool { return metricNameRE.MatchString(n) }

func histogramQueries(order []Engine, per map[Engine][]Metric, sc Scope, window time.Duration) (HistogramQueries, error) {
	w, err := windowString(window)
	if err != nil {
		return HistogramQueries{}, err
	}
	groups, err := groupLabels(sc, nil)
	if err != nil {
		return HistogramQueries{}, err
	}
	build := func(suffix string, fn ...string) (string, error) {
		f := "rate"
		if len(fn) > 0 {
			f = fn[0]
		}
		return join(order, per, sc, groups, false, func(m Metric, sel string) string {
			r := f + "(" + selector(m.Name+suffix, sel) + "[" + w + "])"
			switch {
			case !sc.Finite:
				return r
			case suffix == "_bucket":
				return finiteSet(r)
			}
			// _sum and _count leave the windows out where any bucket of the same histogram is
			// not finite, as finiteSet does for the buckets: the three stay one histogram (its
			// sanity verdict compares them).
			b := f + "(" + selector(m.Name+"_bucket", sel) + "[" + w + "])"
			return "(" + finite(r) + " unless ignoring (le) (" + b + " unless " + b + " > -Inf < +Inf))"
		})
	}
	b, err := build("_bucket")
	if err != nil {
		return HistogramQueries{}, err
	}
	sum, err := build("_sum")
	if err != nil {
		return HistogramQueries{}, err
	}
	cnt, err := build("_count")
	if err != nil {
		return HistogramQueries{}, err
	}
	inc, err := build("_bucket", "delta")
	if err != nil {
		return HistogramQueries{}, err
	}
	resets, err := build("_count", "resets")
	if err != nil {
		return HistogramQueries{}, err
	}
	sumInc, err := build("_sum", "delta")
	if err != nil {
		return HistogramQueries{}, err
	}
	cntInc, err := build("_count", "delta")
	if err != nil {
		return HistogramQueries{}, err
	}
	return HistogramQueries{
		Buckets:   aggregate("sum", append([]string{"le"}, groups...), b),
		Sum:       aggregate("sum", groups, sum),
		Count:     aggregate("sum", groups, cnt),
		Increases: aggregate("sum", append([]string{"le"}, groups...), inc),
		Resets:    aggregate("sum", groups, resets),

		SumIncrease:   aggregate("sum", groups, sumInc),
		CountIncrease: aggregate("sum", groups, cntInc),
	}, nil
}

// finite wraps a per-series rate or increase so that a result that is NaN or ±Inf is dropped
// before any aggregation: PromQL's rate() and delta() give NaN when the window's first or last
// sample is NaN, and ±Inf (or NaN) when any sample is infinite, which would turn the whole
// sum into NaN or Inf. A NaN sample inside the window is already skipped by rate(); so the
// series is left out of exactly the windows its non-finite samples spoil, and
// sanity.NonFinite names those samples. Applied where Scope.Finite asks for it.
func finite(expr string) string { return "(" + expr + " > -Inf < +Inf)" }

// finiteIf is finite where the scope asks for it (Scope.Finite), else expr as is.
func finiteIf(sc Scope, expr string) string {
	if sc.Finite {
		return finite(expr)
	}
	return expr
}

// finiteSet is finite for the buckets of a classic histogram: when one bucket of a stored
// histogram (the series that differ only in le) is not finite in a window, every bucket of
// that histogram is left out of the window, so the buckets that remain stay one consistent
// cumulative histogram (a missing share at one le would make the group's sum non-monotonic).
func finiteSet(expr string) string {
	return "(" + expr + " unless ignoring (le) (" + expr + " unless " + expr + " > -Inf < +Inf))"
}

// CounterRatePromQL builds the per-second rate of a counter signal summed by the scope's groups
// plus extraBy (raw label names such as "finished_reason"), across every engine that exports it,
// after each engine's replicas are collapsed (`max without (tp_rank, …)`; a vLLM pid split is
// not collapsed for counters: each process counts its own requests):
//
//	sum by (job, finished_reason) (rate(vllm:request_success_total{…}[5m]) or … or (rate(x_us[5m]) * 0.000001))
//
// Metric.Scale is applied in PromQL (result in SI units per second). Old and new names are
// joined with `or` after rate(), so they are never double counted. With Scope.Finite, a series
// whose rate is NaN or ±Inf in a window (a non-finite sample: see finite) is left out of it. Errors: unknown signal or
// group, invalid extraBy label, empty names in scope, window under 1ms, or a signal no engine
// exports as a counter.
func CounterRatePromQL(s Signal, sc Scope, window time.Duration, extraBy ...string) (string, error) {
	w, groups, err := rateArgs(s, sc, window, extraBy)
	if err != nil {
		return "", err
	}
	order, per := collect(s, sc, func(m Metric) bool { return m.Kind == KindCounter })
	if len(order) == 0 {
		return "", fmt.Errorf("catalog: signal %q is not read from a counter by any engine", s)
	}
	inner, err := join(order, per, sc, groups, false, func(m Metric, sel string) string {
		return finiteIf(sc, scaledRate(selector(m.Name, sel), w, m.Scale))
	})
	if err != nil {
		return "", err
	}
	return aggregate("sum", groups, inner), nil
}

var gaugeAggs = []string{"sum", "avg", "max", "min"}

// GaugePromQL aggregates a gauge signal across engines with agg ("sum", "avg", "max" or
// "min") by the scope's groups. Ratios such as KVCacheUsage must be averaged ("avg"), never
// summed; queue lengths are summed (PartitionAgg says which). Sentinels are dropped before
// aggregation (vLLM V0's −1 prefix-cache hit rate with `>= 0`, DCGM blank values with
// `< 2147483632`), so a target reporting only sentinels has no series (absent), never −1 or 0.
// Scale is applied after the filter, then samples that cannot be true (outside ValueRange,
// NaN, ±Inf; ImpossiblePromQL lists them) are dropped, then each engine's replicas and
// process splits are collapsed to one value (collapse: `max without (…)`), and agg runs over
// what is left, the partitions (data-parallel engines, targets):
//
//	avg by (job) (max without (pid) ((vllm:kv_cache_usage_perc{job=~"a"} >= 0 <= 1) or …) or …)
//
// Errors: unknown signal, group or aggregation, empty names in scope, or a signal no engine
// exports as a gauge.
func GaugePromQL(s Signal, sc Scope, agg string) (string, error) {
	return GaugePromQLBy(s, sc, agg)
}

// GaugePromQLBy is GaugePromQL with extra raw group labels (e.g. "reason"; the labels are those
// of the stored series, not normalised). For per-GPU series use GPUPromQL, which normalises
// dcgm-exporter's identity labels onto the GPU agent's.
func GaugePromQLBy(s Signal, sc Scope, agg string, extraBy ...string) (string, error) {
	if err := checkSignal(s); err != nil {
		return "", err
	}
	if !slices.Contains(gaugeAggs, agg) {
		return "", fmt.Errorf("catalog: aggregation %q not supported (want sum, avg, max or min)", agg)
	}
	groups, err := groupLabels(sc, extraBy)
	if err != nil {
		return "", err
	}
	order, per := collect(s, sc, func(m Metric) bool { return m.Kind == KindGauge })
	if len(order) == 0 {
		return "", fmt.Errorf("catalog: signal %q is not read from a gauge by any engine", s)
	}
	bt := boundedTerm(s)
	if sc.Fresh > 0 {
		w, err := windowString(sc.Fresh)
		if err != nil {
			return "", err
		}
		bt = func(m Metric, sel string) string {
			return "(" + freshGaugeTerm(m, sel, w) + rangeFilter(s) + ")"
		}
	}
	inner, err := join(order, per, sc, groups, true, bt)
	if err != nil {
		return "", err
	}
	return aggregate(agg, groups, inner), nil
}

// boundedTerm is gaugeTerm followed by the signal's ValueRange filter: samples that cannot be
// true (a ratio outside 0..1, a negative count, NaN, ±Inf) are left out before replicas are
// collapsed and partitions aggregated. ImpossiblePromQL selects exactly the samples it drops.
func boundedTerm(s Signal) term {
	return func(m Metric, sel string) string {
		return "(" + gaugeTerm(m, sel) + rangeFilter(s) + ")"
	}
}

// rangeFilter renders ValueRange(s) as PromQL comparison filters (" >= 0 <= 1" or
// " >= 0 < +Inf"); NaN fails every comparison and is dropped too.
func rangeFilter(s Signal) string {
	lo, hi, ok := ValueRange(s)
	if !ok {
		return ""
	}
	f := " >= " + formatScale(lo)
	if math.IsInf(hi, 1) {
		return f + " < +Inf"
	}
	return f + " <= " + formatScale(hi)
}

func gaugeTerm(m Metric, sel string) string { return freshGaugeTerm(m, sel, "") }

// freshGaugeTerm is gaugeTerm with the selector x read as `(x and last_over_time(x[w]))` when w
// is not empty (Scope.Fresh): a series with no sample within w before the step is left out.
func freshGaugeTerm(m Metric, sel, w string) string {
	one := func(name string) string {
		r := selector(name, sel)
		if w != "" {
			r = "(" + r + " and last_over_time(" + r + "[" + w + "]))"
		}
		return r
	}
	r := one(m.Name)
	if m.Over != "" {
		if m.Plus != "" {
			r = "(" + r + " + " + one(m.Plus) + ")"
		}
		r = "(" + r + " / " + one(m.Over) + ")"
	}
	if f, ok := sentinelFilter[m.Name]; ok {
		r = "(" + r + " " + f + ")"
	}
	if m.Scale != 1 {
		r = "(" + r + " * " + formatScale(m.Scale) + ")"
	}
	return r
}

// meanDenominator names, for counter metrics that accumulate time, the counter of events the
// time is spread over (llama.cpp: tokens; Triton: successful requests).
var meanDenominator = map[string]string{ // #nosec G101 -- metric names, not credentials
	"llamacpp:prompt_seconds_total":           "llamacpp:prompt_tokens_total",
	"llamacpp:tokens_predicted_seconds_total": "llamacpp:tokens_predicted_total",
	"nv_inference_queue_duration_us":          "nv_inference_request_success",
	"nv_inference_compute_infer_duration_us":  "nv_inference_request_success",
	"nv_inference_request_duration_us":        "nv_inference_request_success",
}

// MeanPromQL builds the windowed mean of a latency (or other histogram) signal in SI units
// across every engine: sum(rate(_sum)) / sum(rate(_count)) for histograms (any Scale: _sum is
// rescaled in PromQL), and rate(time counter) / rate(event counter) for engines that only
// export cumulative time counters (llama.cpp per token, Triton per request; see their Notes):
//
//	sum by (job) (rate(a_sum[5m]) or … or (rate(nv_inference_queue_duration_us[5m]) * 0.000001))
//	  / sum by (job) (rate(a_count[5m]) or … or rate(nv_inference_request_success[5m]))
//
// A group with no events in the window gives NaN (0/0), like hist.Mean. The time counters'
// rates are always filtered with finite (a NaN or ±Inf sample leaves that series out of the
// windows it spoils); histogram terms only with Scope.Finite. Errors as for HistogramPromQL.
func MeanPromQL(s Signal, sc Scope, window time.Duration) (string, error) {
	w, groups, err := rateArgs(s, sc, window, nil)
	if err != nil {
		return "", err
	}
	order, per := collect(s, sc, func(m Metric) bool {
		return m.Kind == KindHistogram || (m.Kind == KindCounter && meanDenominator[m.Name] != "")
	})
	if len(order) == 0 {
		return "", fmt.Errorf("catalog: signal %q has no histogram or time counter in any engine", s)
	}
	num, err := join(order, per, sc, groups, false, func(m Metric, sel string) string {
		name := m.Name
		if m.Kind == KindHistogram {
			name += "_sum"
		}
		r := scaledRate(selector(name, sel), w, m.Scale)
		if m.Kind == KindCounter {
			// Time counters (llama.cpp, Triton) are few series and no caller re-asks for them
			// with Scope.Finite: a series whose time or event rate is NaN or ±Inf is always left
			// out, of the numerator and the denominator alike (`and` pairs them by labels).
			return "(" + finite(r) + " and " + finite("rate("+selector(meanDenominator[m.Name], sel)+"["+w+"])") + ")"
		}
		return finiteIf(sc, r)
	})
	if err != nil {
		return "", err
	}
	den, err := join(order, per, sc, groups, false, func(m Metric, sel string) string {
		if m.Kind == KindHistogram {
			return finiteIf(sc, "rate("+selector(m.Name+"_count", sel)+"["+w+"])")
		}
		return "(" + finite("rate("+selector(meanDenominator[m.Name], sel)+"["+w+"])") + " and " + finite("rate("+selector(m.Name, sel)+"["+w+"])") + ")"
	})
	if err != nil {
		return "", err
	}
	return aggregate("sum", groups, num) + " / " + aggregate("sum", groups, den), nil
}

// keepNames returns, sorted, every stored sample name the catalogue reads or Detect uses as
// evidence: histogram families with their _bucket, _sum and _count samples, counters and gauges
// by name, the GPU agent's names, and the Ray / smg exposure variants. Detection-only families
// keep just the name, its _count and its _total sample (enough to see the family).
var keepNames = sync.OnceValue(buildKeepNames)

var keepRegex = sync.OnceValue(func() string {
	names := keepNames()
	parts := make([]string, len(names))
	for i, n := range names {
		parts[i] = regexp.QuoteMeta(n)
	}
	return strings.Join(parts, "|")
})

func buildKeepNames() []string {
	set := map[string]bool{}
	add := func(ns ...string) {
		for _, n := range ns {
			set[n] = true
		}
	}
	for _, sigs := range table {
		for _, en := range sigs {
			for _, m := range en.metrics {
				if m.Kind == KindHistogram {
					add(m.Name+"_bucket", m.Name+"_sum", m.Name+"_count")
				} else {
					add(m.Name)
				}
				if m.Over != "" {
					add(m.Over)
					if m.Plus != "" {
						add(m.Plus)
					}
				}
			}
		}
	}
	for _, d := range meanDenominator {
		add(d)
	}
	add(AgentMetricNames...)
	add(ProbeMetricNames...)
	evidence := func(n string) { add(n, n+"_count", strings.TrimSuffix(n, "_total")+"_total") }
	for _, m := range vllmMarkers {
		b := strings.TrimPrefix(m.name, "vllm:")
		for _, n := range vllmNames(b) {
			evidence(n)
		}
	}
	for _, m := range sglangMarkers {
		for _, n := range sglangNames(strings.TrimPrefix(m.name, "sglang:")) {
			evidence(n)
		}
	}
	for _, n := range sglangPrerelease {
		for _, v := range sglangNames(strings.TrimPrefix(n, "sglang:")) {
			evidence(v)
		}
	}
	add("llamacpp:kv_cache_usage_ratio")
	add(ErrorSLINames()...)
	// V0's time_per_output_token_seconds is read through LookupFor (TPOT on old vLLM).
	out := make([]string, 0, len(set))
	for n := range set {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// KeepMetricRegex returns a regular expression (RE2, unanchored text; Prometheus relabelling
// anchors it as ^(?:…)$) matching exactly the catalogue's stored names (keepNames), for a metric_relabel_configs `keep`
// rule on __name__. `up` and `scrape_*` need not match: Prometheus adds them after relabelling.
func KeepMetricRegex() string { return keepRegex() }
