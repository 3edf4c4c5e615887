// Package bench reads benchmark results as baselines: the JSON that
// `vllm bench serve --save-result` writes, GuideLLM's report JSON and
// genai-perf's profile export (profile_export_genai_perf.json). All three
// become one Baseline: per-stage latency statistics in seconds, throughput,
// the request rate and concurrency the benchmark ran at, and the tool.
//
// It also holds the expected-performance table (model × GPU → tokens/s,
// P95 TTFT, P95 ITL, GPU utilisation) with the usual published figures as
// defaults that the data source's settings may replace.
//
// The package is a leaf: pure parsing, no I/O beyond what the caller hands
// in, no SDK, no other package of the module (so settings may embed its
// types). A malformed file gets an error that is one sentence naming what is
// wrong; nothing here panics on any input (FuzzParse).
package bench

import (
	"fmt"
	"math"
	"sort"
	"strings"
)

// Tools that write the formats Parse reads.
const (
	ToolVLLM     = "vllm"       // vllm bench serve --save-result (or benchmarks/benchmark_serving.py)
	ToolGuideLLM = "guidellm"   // guidellm benchmark --output-path report.json
	ToolGenAI    = "genai-perf" // genai-perf profile: artifacts/…/profile_export_genai_perf.json
)

// Stages are the latency stages a baseline may hold, by the plugin's stage
// names: TTFT, TPOT (per request: (E2E − TTFT)/(output tokens − 1)), ITL (per
// token gap) and E2E.
var Stages = []string{"ttft", "tpot", "itl", "e2e"}

// Percentile is one reported percentile: P in percent (99 for P99), Value in seconds.
type Percentile struct {
	P     float64
	Value float64
}

// Metric is what a benchmark reports about one latency stage, in seconds:
// Mean, Median and Std (NaN when the tool did not report them) and the
// percentiles it reported, sorted by P with no duplicate P. A median is also
// listed as P50 when the tool gives no separate P50.
type Metric struct {
	Mean, Median, Std float64
	Percentiles       []Percentile
}

// Empty reports whether the metric holds no statistic at all.
func (m Metric) Empty() bool {
	return math.IsNaN(m.Mean) && math.IsNaN(m.Median) && len(m.Percentiles) == 0
}

// At returns the reported value at percentile p (percent), and whether the
// benchmark reported exactly that percentile.
func (m Metric) At(p float64) (float64, bool) {
	for _, x := range m.Percentiles {
		if x.P == p {
			return x.Value, true
		}
	}
	return math.NaN(), false
}

// Bracket returns the nearest reported percentiles around p (percent):
// below has the largest P ≤ p and above the smallest P ≥ p (both equal p
// when reported exactly). A side with no reported percentile has P NaN.
// Because a latency's quantile function is non-decreasing, the true value at
// p lies in [below.Value, above.Value] whenever both sides exist.
func (m Metric) Bracket(p float64) (below, above Percentile) {
	nan := math.NaN()
	below, above = Percentile{nan, nan}, Percentile{nan, nan}
	for _, x := range m.Percentiles {
		if x.P <= p {
			below = x
		}
		if x.P >= p && math.IsNaN(above.P) {
			above = x
		}
	}
	return below, above
}

// Baseline is one benchmark run read from a result file.
type Baseline struct {
	// Name is the baseline's name (the file's name without its extension when
	// read from a directory; a GuideLLM report with several benchmarks gives
	// one baseline per benchmark, named "<name>#<index>").
	Name string
	// Tool is ToolVLLM, ToolGuideLLM or ToolGenAI.
	Tool string
	// Model is the served model's name as the tool recorded it ("" if not).
	Model string
	// Stages by stage name (Stages); a stage the tool did not report is absent.
	Stages map[string]Metric
	// RequestThroughput is completed requests per second; OutputThroughput
	// output tokens per second; TotalThroughput input + output tokens per
	// second. NaN when not reported.
	RequestThroughput, OutputThroughput, TotalThroughput float64
	// RequestRate is the offered arrival rate in requests/s: +Inf for a burst
	// ("inf" in vLLM, GuideLLM's throughput strategy), NaN when not set
	// (a fixed-concurrency run).
	RequestRate float64
	// Concurrency is the maximum number of requests in flight the benchmark
	// allowed (vLLM --max-concurrency, GuideLLM concurrent streams, genai-perf
	// --concurrency); NaN when unlimited or not reported.
	Concurrency float64
	// MeanConcurrency is the mean number of requests in flight measured by the
	// tool (GuideLLM request_concurrency); NaN when not reported.
	MeanConcurrency float64
	// Completed is the number of successful requests, Failed the number of
	// requests that ended in an error (vLLM: num_prompts − completed;
	// GuideLLM: request_totals.errored); Duration the benchmark's length in
	// seconds. NaN when not reported.
	Completed, Failed, Duration float64
	// MeanInputTokens and MeanOutputTokens are the mean prompt and output
	// lengths in tokens per request; NaN when not reported.
	MeanInputTokens, MeanOutputTokens float64
}

func newBaseline(tool string) Baseline {
	nan := math.NaN()
	return Baseline{Tool: tool, Stages: map[string]Metric{},
		RequestThroughput: nan, OutputThroughput: nan, TotalThroughput: nan,
		RequestRate: nan, Concurrency: nan, MeanConcurrency: nan, Completed: nan, Failed: nan, Duration: nan,
		MeanInputTokens: nan, MeanOutputTokens: nan}
}

func newMetric() Metric {
	nan := math.NaN()
	return Metric{Mean: nan, Median: nan, Std: nan}
}

// finish sorts and deduplicates percentiles, lists the median as P50 when
// missing, and drops stages with nothing in them.
func (b *Baseline) finish() {
	for k, m := range b.Stages {
		sort.SliceStable(m.Percentiles, func(i, j int) bool { return m.Percentiles[i].P < m.Percentiles[j].P })
		out := m.Percentiles[:0]
		for _, p := range m.Percentiles {
			if len(out) > 0 && out[len(out)-1].P == p.P {
				continue
			}
			out = append(out, p)
		}
		m.Percentiles = out
		if _, ok := m.At(50); !ok && !math.IsNaN(m.Median) {
			m.Percentiles = append(m.Percentiles, Percentile{50, m.Median})
			sort.Slice(m.Percentiles, func(i, j int) bool { return m.Percentiles[i].P < m.Percentiles[j].P })
		}
		if m.Empty() {
			delete(b.Stages, k)
			continue
		}
		b.Stages[k] = m
	}
}

// Load describes the load a baseline ran at in a few words, e.g.
// "request rate 8 req/s, concurrency ≤ 32" or "burst (request rate inf), concurrency ≤ 64".
func (b Baseline) Load() string {
	var parts []string
	switch {
	case math.IsInf(b.RequestRate, 1):
		parts = append(parts, "burst (request rate inf)")
	case !math.IsNaN(b.RequestRate):
		parts = append(parts, fmt.Sprintf("request rate %g req/s", b.RequestRate))
	}
	if !math.IsNaN(b.Concurrency) {
		parts = append(parts, fmt.Sprintf("concurrency ≤ %g", b.Concurrency))
	}
	if !math.IsNaN(b.MeanConcurrency) {
		parts = append(parts, fmt.Sprintf("mean concurrency %.3g", b.MeanConcurrency))
	}
	if len(parts) == 0 {
		return "load not recorded"
	}
	return strings.Join(parts, ", ")
}

// Summary is one sentence saying what was read, for the upload resource and
// the CLI: tool, model, requests, load, and the stages with their percentiles.
func (b Baseline) Summary() string {
	var st []string
	for _, s := range Stages {
		m, ok := b.Stages[s]
		if !ok {
			continue
		}
		var ps []string
		for _, p := range m.Percentiles {
			ps = append(ps, "p"+trimP(p.P))
		}
		if !math.IsNaN(m.Mean) {
			ps = append([]string{"mean"}, ps...)
		}
		st = append(st, fmt.Sprintf("%s (%s)", strings.ToUpper(s), strings.Join(ps, ", ")))
	}
	model := b.Model
	if model == "" {
		model = "an unnamed model"
	}
	req := ""
	if !math.IsNaN(b.Completed) {
		req = fmt.Sprintf("%g requests, ", b.Completed)
	}
	thr := ""
	if !math.IsNaN(b.OutputThroughput) {
		thr = fmt.Sprintf(", output %.4g tok/s", b.OutputThroughput)
	}
	return fmt.Sprintf("%s result for %s: %s%s%s; %s", b.Tool, model, req, b.Load(), thr, strings.Join(st, "; "))
}

func trimP(p float64) string { return strings.TrimSuffix(fmt.Sprintf("%g", p), ".0") }
