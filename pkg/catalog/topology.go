package catalog

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
)

// LabelRole says what the values of one label on an engine's series stand for, and so how the
// series that differ only in that label combine into one number.
type LabelRole string

// Label roles.
const (
	// Partition: each value holds a disjoint share of the work (a data-parallel engine).
	// Counts, queue lengths and rates add up across the values; ratios (KV usage) are averaged.
	// The label survives into the outer aggregation (sum or avg).
	Partition LabelRole = "partition"
	// Replica: each value repeats the same number (the tensor- or context-parallel ranks of one
	// scheduler all export its gauges and counters; SGLang's pipeline stages each schedule the
	// same requests). Counted once: max without (label) over the copies, before any sum or
	// average.
	Replica LabelRole = "replica"
	// ProcessSplit: Python prometheus_client multiprocess mode wrote a gauge once per process
	// (label pid). For a gauge one process holds the engine's value and the others a zero or
	// stale copy, so gauges take the one value (max without (pid)); counters and histograms
	// are per-process shares (each API-server process counts the requests it served) and add
	// up, as prometheus_client's own multiprocess collector adds them.
	ProcessSplit LabelRole = "process-split"
)

// RankLabel is one label an engine puts on its series to tell parallel ranks or processes
// apart, with its role and the first release known to carry it.
type RankLabel struct {
	Label string
	Role  LabelRole
	// Since is the first release known to carry the label ("" = every release), as a minor
	// version number of 0.x (vLLM 0.9 → 9). Pages of older releases never carry it; the PromQL
	// applies the rule to every version, which is harmless where the label is missing.
	Since int
	// Why says in a few words where the label comes from.
	Why string
}

// rankLabels is the catalogue of rank and process labels per engine. Sources: vLLM V1's
// PrometheusStatLogger labels every engine-core series with `engine` (the data-parallel
// index; corpus pages vllm-0.10-…, vllm-0.11-…), and with --api-server-count > 1 the API
// servers run prometheus_client in multiprocess mode, whose gauges carry `pid`
// (vllm-project/vllm#28792). SGLang's SchedulerMetricsCollector labels scheduler series with
// tp_rank and pp_rank (corpus sglang-0.5.1-pp_rank-issue13485.prom), dp_rank with data
// parallelism, moe_ep_rank (corpus sglang-reexported-by-smg-router-underscored-pr813.prom),
// and with --enable-metrics-for-all-schedulers every tensor/context-parallel rank exports the
// same scheduler numbers (sgl-project/sglang#31896). Engines not listed carry no such labels.
//
// SGLang pp_rank is a replica, not a partition: under pipeline parallelism every stage runs a
// scheduler of its own over the same requests. Each stage receives the requests from the
// previous one, adds them to its own waiting queue and forwards them, and every stage runs
// the same microbatches in the same order (sglang python/sglang/srt/managers/
// scheduler_pp_mixin.py, event_loop_pp: "each stage runs in the same order and is notified by
// the previous stage"); the scheduler whose attention-TP rank is 0 logs metrics on every stage
// (SchedulerMetricsReporter: is_stats_logging_rank = attn_tp_rank == 0, pp_rank not
// consulted). So num_running_reqs, num_queue_reqs and token_usage (the same requests' tokens
// in each stage's pool for its own layers) repeat across stages, and so do the scheduler's
// counters; summing them counted a PP=4 engine's queue four times. The catalogue reads no
// SGLang series that a stage holds a disjoint share of, so the role is the same for every
// signal. (Under PP, num_running_reqs counts the one microbatch slot being logged, not all of
// them, sgl-project/sglang#32158: with PP the running count is a lower bound whatever the
// aggregation.)
var rankLabels = map[Engine][]RankLabel{
	EngineVLLM: {
		{Label: "engine", Role: Partition, Since: 9, Why: "data-parallel engine index (V1)"},
		{Label: "pid", Role: ProcessSplit, Since: 10, Why: "API-server process of a multiprocess split (--api-server-count > 1)"},
	},
	EngineSGLang: {
		{Label: "dp_rank", Role: Partition, Since: 4, Why: "data-parallel scheduler"},
		{Label: "tp_rank", Role: Replica, Since: 5, Why: "tensor-parallel rank of one scheduler"},
		{Label: "pp_rank", Role: Replica, Since: 5, Why: "pipeline-parallel stage: every stage schedules the same requests"},
		{Label: "cp_rank", Role: Replica, Since: 5, Why: "context-parallel rank of one scheduler"},
		{Label: "attn_tp_rank", Role: Replica, Since: 5, Why: "attention tensor-parallel rank of one scheduler"},
		{Label: "attn_cp_rank", Role: Replica, Since: 5, Why: "attention context-parallel rank of one scheduler"},
		{Label: "moe_ep_rank", Role: Replica, Since: 5, Why: "expert-parallel rank of one scheduler"},
	},
}

// collapseLabels lists the labels of engine e whose copies are counted once, for a gauge
// (gauge true) or a counter or histogram: replicas always; process splits for gauges only.
func collapseLabels(e Engine, gauge bool) []string {
	var out []string
	for _, r := range rankLabels[e] {
		if r.Role == Replica || (gauge && r.Role == ProcessSplit) {
			out = append(out, r.Label)
		}
	}
	return out
}

// collapse wraps an engine's vector expression so that replicas count once:
// `max without (tp_rank, cp_rank, …) (inner)`. The maximum of identical copies is the value;
// of a process split's one real value and zero copies, the real one. Series without those
// labels pass through unchanged (max over a group of one), so a page that carries rank
// labels and one that does not give the same answer. Engines without such labels get inner
// back as is.
func collapse(e Engine, gauge bool, inner string) string {
	ls := collapseLabels(e, gauge)
	if len(ls) == 0 {
		return inner
	}
	return "max without (" + strings.Join(ls, ", ") + ") (" + inner + ")"
}

// ratioSignals are the gauges that are fractions 0..1 by definition.
var ratioSignals = map[Signal]bool{
	KVCacheUsage: true, PrefixCacheHitRate: true, GPUUtil: true, SMActive: true,
	DRAMActive: true, TensorActive: true, GREngineActive: true,
}

// ValueRange returns the interval a gauge signal's value (in SI units, after Scale) can take:
// [0, 1] for ratios (KV usage, hit rates, GPU activity), finite values ≥ 0 (hi = +Inf, itself
// excluded) for the other gauges (queue lengths, bytes, watts, hertz, °C, the throttle
// bitmask: none of the catalogue's gauges can be negative). A sample outside it, NaN or ±Inf
// cannot be true. ok is false for signals no engine reads from a gauge.
func ValueRange(s Signal) (lo, hi float64, ok bool) {
	switch {
	case ratioSignals[s]:
		return 0, 1, true
	}
	for _, e := range Engines {
		for _, m := range Lookup(e, s).Metrics {
			if m.Kind == KindGauge {
				return 0, math.Inf(1), true
			}
		}
	}
	return 0, 0, false
}

// PartitionAgg is how a gauge signal combines across partitions (data-parallel engines,
// pipeline stages, targets): "avg" for ratios, which are never summed, "sum" for counts.
func PartitionAgg(s Signal) string {
	if ratioSignals[s] {
		return "avg"
	}
	return "sum"
}

// ImpossiblePromQL selects, unaggregated and with every stored label kept, the samples of a
// gauge signal that GaugePromQL leaves out because they cannot be true (outside ValueRange,
// NaN or ±Inf), after sentinels are dropped and Scale applied:
//
//	(vllm:kv_cache_usage_perc{job=~"a"} unless (vllm:kv_cache_usage_perc{job=~"a"} >= 0 <= 1)) or …
//
// The result labels are the stored ones (job, model_name, engine, …); the metric name is
// dropped where Scale is not 1. Errors as for GaugePromQL.
func ImpossiblePromQL(s Signal, sc Scope) (string, error) {
	if err := checkSignal(s); err != nil {
		return "", err
	}
	order, per := collect(s, sc, func(m Metric) bool { return m.Kind == KindGauge })
	if len(order) == 0 {
		return "", fmt.Errorf("catalog: signal %q is not read from a gauge by any engine", s)
	}
	parts := make([]string, 0, len(order))
	for _, e := range order {
		c, err := chain(e, per[e], sc, false, func(m Metric, sel string) string {
			t := gaugeTerm(m, sel)
			return "(" + t + " unless (" + t + rangeFilter(s) + "))"
		})
		if err != nil {
			return "", err
		}
		parts = append(parts, c)
	}
	return strings.Join(parts, " or "), nil
}

// CounterScanSelectors returns instant-vector selectors (no range, no aggregation) that
// together select every stored series of a counter signal in scope, for checks on raw samples
// such as sanity.CounterBackwards: metrics without extra matchers share one selector on
// __name__, the others get one each. A model filter matches model_name only. Errors: unknown
// signal, empty names in scope, or a signal no engine exports as a counter.
func CounterScanSelectors(s Signal, sc Scope) ([]string, error) {
	if err := checkSignal(s); err != nil {
		return nil, err
	}
	order, per := collect(s, sc, func(m Metric) bool { return m.Kind == KindCounter })
	if len(order) == 0 {
		return nil, fmt.Errorf("catalog: signal %q is not read from a counter by any engine", s)
	}
	base, err := scanMatchers(sc)
	if err != nil {
		return nil, err
	}
	var plain []string
	var out []string
	for _, e := range order {
		for _, m := range per[e] {
			if m.Match == "" {
				plain = append(plain, m.Name)
				continue
			}
			out = append(out, selector(m.Name, strings.Join(append(slices.Clone(base), m.Match), ", ")))
		}
	}
	if len(plain) > 0 {
		re, err := anyOf("metric", plain)
		if err != nil {
			return nil, err
		}
		out = append([]string{"{" + strings.Join(append([]string{"__name__=~" + re}, base...), ", ") + "}"}, out...)
	}
	return out, nil
}

// SeriesRatePromQL is CounterRatePromQL restricted to one stored series of signal s, named
// by its full label set (including __name__): the same rate, Scale and grouping, so its result
// can be subtracted from CounterRatePromQL's group by group (to leave a series that went
// backwards out of the windows that contain the step). Replicas are not collapsed: the caller
// subtracts one stored series. Errors: unknown signal, a name that is not one of the signal's
// counters, invalid group labels, window under 1ms.
func SeriesRatePromQL(s Signal, series map[string]string, sc Scope, window time.Duration, extraBy ...string) (string, error) {
	w, groups, err := rateArgs(s, sc, window, extraBy)
	if err != nil {
		return "", err
	}
	name := series["__name__"]
	order, per := collect(s, sc, func(m Metric) bool { return m.Kind == KindCounter && m.Name == name })
	if len(order) == 0 {
		return "", fmt.Errorf("catalog: %q is not a counter of signal %q", name, s)
	}
	m := per[order[0]][0]
	var ms []string
	for _, k := range slices.Sorted(maps.Keys(series)) {
		if k == "__name__" {
			continue
		}
		if !labelNameRE.MatchString(k) {
			return "", fmt.Errorf("catalog: %q is not a valid label name", k)
		}
		ms = append(ms, k+"="+strconv.Quote(series[k]))
	}
	r := finiteIf(sc, scaledRate(selector(m.Name, strings.Join(ms, ", ")), w, m.Scale))
	if slices.Contains(groups, "model_name") {
		for _, l := range modelLabels[order[0]] {
			if l != "model_name" {
				r = labelReplace(r, l)
			}
		}
	}
	return aggregate("sum", groups, r), nil
}

// ScanMetricLabel is the label NonFiniteScanPromQL puts on each result series to name the
// stored metric it came from (range functions drop the metric name).
const ScanMetricLabel = "inferscope_metric"

// NonFiniteScanPromQL builds one instant query, evaluated at the end of a range rng long,
// that selects every stored series of signal s in scope holding at least one NaN or ±Inf
// sample in that range: the signal's counters, and for histograms every _bucket, _sum and
// _count series. sum_over_time is NaN or ±Inf exactly when some sample is (a finite sum of
// finite counter samples cannot overflow float64 in practice), so a clean history returns
// nothing after reading each sample once. Each result keeps the stored labels (job, engine, le,
// …) and names its metric in ScanMetricLabel:
//
//	label_replace(sum_over_time(x_sum{job=~"a"}[1h]) * 0 != 0, "inferscope_metric", "x_sum", "", "") or …
//
// A model filter matches model_name only. Errors: unknown signal, empty names in scope, rng
// under 1ms, or a signal read from neither a counter nor a histogram.
func NonFiniteScanPromQL(s Signal, sc Scope, rng time.Duration) (string, error) {
	w, base, err := scanArgs(s, sc, rng)
	if err != nil {
		return "", err
	}
	order, per := collect(s, sc, func(m Metric) bool { return m.Kind == KindCounter || m.Kind == KindHistogram })
	var parts []string
	for _, e := range order {
		for _, m := range per[e] {
			names := []string{m.Name}
			if m.Kind == KindHistogram {
				names = []string{m.Name + "_bucket", m.Name + "_sum", m.Name + "_count"}
			}
			ms := slices.Clone(base)
			if m.Match != "" {
				ms = append(ms, m.Match)
			}
			for _, n := range names {
				// v * 0 is 0 for a finite v and NaN for NaN or ±Inf; NaN != 0 keeps the series.
				// One evaluation of the sum, where `unless` over a finite filter needs two.
				sum := "sum_over_time(" + selector(n, strings.Join(ms, ", ")) + "[" + w + "])"
				parts = append(parts, `label_replace(`+sum+` * 0 != 0, "`+ScanMetricLabel+`", "`+n+`", "", "")`)
			}
		}
	}
	if len(parts) == 0 {
		return "", fmt.Errorf("catalog: signal %q is read from no counter or histogram", s)
	}
	return strings.Join(parts, " or "), nil
}

// HistogramResetScanPromQL builds one instant query, evaluated at the end of a range rng long,
// that selects every stored _bucket and _count series of histogram signal s in scope that
// decreased at least once in that range (resets() > 0): the candidates for a histogram that
// went backwards without a restart (sanity.HistogramBackwards decides from the raw samples).
// Only histograms with Scale 1 are scanned, as HistogramPromQL reads them. Each result keeps
// the stored labels and names its metric in ScanMetricLabel:
//
//	label_replace(resets(x_bucket{job=~"a"}[1h]) > 0, "inferscope_metric", "x_bucket", "", "") or …
//
// A model filter matches model_name only. Errors: unknown signal, empty names in scope, rng
// under 1ms, or a signal read from no histogram.
func HistogramResetScanPromQL(s Signal, sc Scope, rng time.Duration) (string, error) {
	w, base, err := scanArgs(s, sc, rng)
	if err != nil {
		return "", err
	}
	order, per := collect(s, sc, func(m Metric) bool { return m.Kind == KindHistogram && m.Scale == 1 })
	var parts []string
	for _, e := range order {
		for _, m := range per[e] {
			ms := slices.Clone(base)
			if m.Match != "" {
				ms = append(ms, m.Match)
			}
			for _, n := range []string{m.Name + "_bucket", m.Name + "_count"} {
				parts = append(parts, `label_replace(resets(`+selector(n, strings.Join(ms, ", "))+"["+w+`]) > 0, "`+ScanMetricLabel+`", "`+n+`", "", "")`)
			}
		}
	}
	if len(parts) == 0 {
		return "", fmt.Errorf("catalog: signal %q is not read from a histogram by any engine", s)
	}
	return strings.Join(parts, " or "), nil
}

// jobMatchers renders a scope's targets as a matcher on job (none without targets). Errors:
// an empty target name.
func jobMatchers(sc Scope) ([]string, error) {
	if len(sc.Targets) == 0 {
		return nil, nil
	}
	re, err := anyOf("target", sc.Targets)
	if err != nil {
		return nil, err
	}
	return []string{"job=~" + re}, nil
}

// scanArgs checks what the raw-sample scans share: a known signal s, a range of at least 1 ms
// (w: its PromQL duration) and the scope's scanMatchers.
func scanArgs(s Signal, sc Scope, rng time.Duration) (w string, base []string, err error) {
	if err := checkSignal(s); err != nil {
		return "", nil, err
	}
	if w, err = windowString(rng); err != nil {
		return "", nil, err
	}
	if base, err = scanMatchers(sc); err != nil {
		return "", nil, err
	}
	return w, base, nil
}

// scanMatchers renders a scope's targets and models as matchers on job and model_name.
func scanMatchers(sc Scope) ([]string, error) {
	base, err := jobMatchers(sc)
	if err != nil {
		return nil, err
	}
	if len(sc.Models) > 0 {
		re, err := anyOf("model", sc.Models)
		if err != nil {
			return nil, err
		}
		base = append(base, "model_name=~"+re)
	}
	return base, nil
}

// HistogramSeriesPromQL is HistogramPromQLFor restricted to one stored histogram: metric name
// (without suffix) and its labels (le and __name__ excluded; job among them), with the scope's
// groups plus extraBy, so each of its results can be subtracted group by group from the
// aggregate's (sanity.LeaveOut) to leave that histogram out of some windows. Errors: a name
// that is no Scale-1 histogram of signal s, invalid label names, or those of HistogramPromQLFor.
func HistogramSeriesPromQL(s Signal, name string, labels map[string]string, sc Scope, window time.Duration, extraBy ...string) (HistogramQueries, error) {
	if err := checkSignal(s); err != nil {
		return HistogramQueries{}, err
	}
	order, per := collect(s, sc, func(m Metric) bool { return m.Kind == KindHistogram && m.Scale == 1 && m.Name == name })
	if len(order) == 0 {
		return HistogramQueries{}, fmt.Errorf("catalog: %q is not a histogram of signal %q", name, s)
	}
	m := per[order[0]][0]
	var ms []string
	if m.Match != "" {
		ms = append(ms, m.Match)
	}
	for _, k := range slices.Sorted(maps.Keys(labels)) {
		if k == "__name__" || k == "le" || k == "job" {
			continue
		}
		if !labelNameRE.MatchString(k) {
			return HistogramQueries{}, fmt.Errorf("catalog: %q is not a valid label name", k)
		}
		ms = append(ms, k+"="+strconv.Quote(labels[k]))
	}
	m.Match = strings.Join(ms, ", ")
	sc.By = append(slices.Clone(sc.By), extraBy...)
	sc.Targets = []string{labels["job"]}
	return HistogramPromQLFor([]Metric{m}, sc, window)
}
