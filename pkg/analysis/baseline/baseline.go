// Package baseline compares production with a benchmark baseline at
// comparable load: it keeps the windows whose request rate (or requests in
// flight) is near the baseline's, merges their latency histograms, reads
// p50/p90/p99 of TTFT, TPOT, ITL and E2E with their bucket bounds, and sets
// them and the throughput beside the baseline's figures with the gap as a
// ratio and a verdict per metric. Pure functions; no I/O and no SDK.
//
// Merging windows sums bucket rates per bound (the windows are equally long,
// so rates add like counts); quantiles are Prometheus's
// histogram_quantile interpolation (hist.Quantile) with the bucket holding
// the quantile as bounds; targets whose bucket layouts differ are merged as
// distributions (hist.QuantilesMerged).
package baseline

import (
	"fmt"
	"math"
	"sort"
	"time"

	"github.com/inferscope/inferscope-llm-datasource/pkg/bench"
	"github.com/inferscope/inferscope-llm-datasource/pkg/hist"
)

// Window is one step of production over the selection: RequestRate in
// finished requests/s, Running the mean requests in flight (running gauge),
// OutputTokens in generated tokens/s, and per stage (bench.Stages names) and
// target the cumulative bucket rates of the window (targets apart: their
// bucket layouts may differ). NaN or absent where not measured.
type Window struct {
	At           time.Time
	RequestRate  float64
	Running      float64
	OutputTokens float64
	Buckets      map[string]map[string][]hist.Bucket
}

// Basis names the load measure windows were matched on.
type Basis string

// Bases of comparable load.
const (
	// ByRequestRate: the baseline ran at a finite request rate; windows
	// whose finished-request rate is within the tolerance of it are kept.
	ByRequestRate Basis = "request_rate"
	// ByConcurrency: the baseline ran at a fixed concurrency (or reports its
	// mean concurrency); windows whose mean running requests are within the
	// tolerance of it are kept.
	ByConcurrency Basis = "concurrency"
	// ByNone: the baseline records no usable load (a burst without a
	// concurrency cap): every window with requests is kept.
	ByNone Basis = "none"
)

// Selection says which windows were compared and why.
type Selection struct {
	Basis Basis
	// Target is the baseline's load on Basis (req/s or requests in flight).
	Target float64
	// Tolerance is the relative distance accepted (0.25: ±25 %).
	Tolerance float64
	// Keep marks the windows kept, parallel to the windows given.
	Keep []bool
	// Kept and WithRequests count the windows kept and those that had any request.
	Kept, WithRequests int
	// Description is one sentence for the table and the notices.
	Description string
}

// Select keeps the windows at comparable load: on the request rate when the
// baseline ran at a finite rate, else on concurrency (the mean the tool
// measured, else the cap it ran with), else every window with requests.
// A window with no request is never kept.
func Select(ws []Window, b bench.Baseline, tolerance float64) Selection {
	s := Selection{Tolerance: tolerance, Keep: make([]bool, len(ws))}
	switch {
	case b.RequestRate > 0 && !math.IsInf(b.RequestRate, 0):
		s.Basis, s.Target = ByRequestRate, b.RequestRate
	case b.MeanConcurrency > 0:
		s.Basis, s.Target = ByConcurrency, b.MeanConcurrency
	case b.Concurrency > 0:
		s.Basis, s.Target = ByConcurrency, b.Concurrency
	default:
		s.Basis = ByNone
	}
	for i, w := range ws {
		if !(w.RequestRate > 0) {
			continue
		}
		s.WithRequests++
		var v float64
		switch s.Basis {
		case ByRequestRate:
			v = w.RequestRate
		case ByConcurrency:
			v = w.Running
		default:
			s.Keep[i] = true
			s.Kept++
			continue
		}
		if !math.IsNaN(v) && math.Abs(v-s.Target) <= tolerance*s.Target {
			s.Keep[i] = true
			s.Kept++
		}
	}
	switch s.Basis {
	case ByRequestRate:
		s.Description = fmt.Sprintf("windows whose request rate is within ±%.0f%% of the baseline's %g req/s: %d of %d with requests", 100*tolerance, s.Target, s.Kept, s.WithRequests)
	case ByConcurrency:
		s.Description = fmt.Sprintf("windows whose mean running requests are within ±%.0f%% of the baseline's concurrency %.3g: %d of %d with requests", 100*tolerance, s.Target, s.Kept, s.WithRequests)
	default:
		s.Description = fmt.Sprintf("the baseline records no request rate or concurrency (%s): all %d windows with requests are compared", b.Load(), s.Kept)
	}
	return s
}

// Merge sums, per target, the bucket rates of the kept windows per upper
// bound (bounds compared as numbers), and returns one histogram per target
// in target order; nil when no kept window has the stage. Targets are not
// added bucket by bucket: their layouts may differ (hist.QuantilesMerged
// merges them as distributions).
func Merge(ws []Window, keep []bool, stage string) [][]hist.Bucket {
	sums := map[string]map[float64]float64{}
	for i, w := range ws {
		if i < len(keep) && !keep[i] {
			continue
		}
		for target, bs := range w.Buckets[stage] {
			for _, b := range bs {
				if math.IsNaN(b.Count) || math.IsNaN(b.UpperBound) {
					continue
				}
				if sums[target] == nil {
					sums[target] = map[float64]float64{}
				}
				sums[target][b.UpperBound] += b.Count
			}
		}
	}
	if len(sums) == 0 {
		return nil
	}
	targets := make([]string, 0, len(sums))
	for t := range sums {
		targets = append(targets, t)
	}
	sort.Strings(targets)
	out := make([][]hist.Bucket, 0, len(targets))
	for _, t := range targets {
		part := make([]hist.Bucket, 0, len(sums[t]))
		for le, c := range sums[t] {
			part = append(part, hist.Bucket{UpperBound: le, Count: c})
		}
		sort.Slice(part, func(i, j int) bool { return part[i].UpperBound < part[j].UpperBound })
		out = append(out, part)
	}
	return out
}

// Verdicts of one metric.
const (
	Worse       = "worse"
	Better      = "better"
	AsBenchmark = "as benchmarked"
	NoBaseline  = "not in baseline"
	NoData      = "no production data"
)

// Row is one metric of the comparison: Metric is a stage (ttft, tpot, itl,
// e2e) or output_throughput / request_throughput; Stat is p50, p90, p99 or
// mean; Unit "s" or "short" (tokens/s) / "reqps". Production with its
// bounds (bucket bounds of a quantile; equal to it for throughput),
// Baseline, Ratio = Production / Baseline, and the Verdict with the margin
// it used: a latency is worse when even its lower bound exceeds the baseline
// by more than the margin, better when even its upper bound is under it by
// more than the margin; a throughput is worse when under the baseline by
// more than the margin, better when over it by more.
type Row struct {
	Metric, Stat, Unit                        string
	Production, ProductionLower, ProductionUp float64
	Baseline, Ratio                           float64
	Verdict                                   string
}

// Quantiles are the statistics compared per stage.
var Quantiles = []struct {
	Name string
	Q    float64
}{{"p50", 0.5}, {"p90", 0.9}, {"p99", 0.99}}

// Compare builds the rows over the kept windows: per stage of bench.Stages
// p50, p90, p99; then output and request throughput (means over the kept
// windows).
func Compare(b bench.Baseline, ws []Window, sel Selection, margin float64) []Row {
	var rows []Row
	nan := math.NaN()
	qs := make([]float64, len(Quantiles))
	for i, q := range Quantiles {
		qs[i] = q.Q
	}
	for _, stage := range bench.Stages {
		var est []hist.Estimate
		if parts := Merge(ws, sel.Keep, stage); parts != nil {
			est = hist.QuantilesMerged(hist.EstimatorPrometheus, qs, parts, nan, nan).Estimates
		}
		for k, q := range Quantiles {
			r := Row{Metric: stage, Stat: q.Name, Unit: "s", Production: nan, ProductionLower: nan, ProductionUp: nan, Baseline: nan, Ratio: nan}
			if k < len(est) {
				e := est[k]
				r.Production, r.ProductionLower, r.ProductionUp = e.Value, e.Lower, e.Upper
			}
			if m, ok := b.Stages[stage]; ok {
				if v, ok := m.At(100 * q.Q); ok {
					r.Baseline = v
				}
			}
			r.Ratio, r.Verdict = verdict(r, margin, false)
			rows = append(rows, r)
		}
	}
	mean := func(get func(Window) float64) float64 {
		s, n := 0.0, 0
		for i, w := range ws {
			if !sel.Keep[i] {
				continue
			}
			if v := get(w); !math.IsNaN(v) {
				s += v
				n++
			}
		}
		if n == 0 {
			return nan
		}
		return s / float64(n)
	}
	for _, t := range []struct {
		metric, unit string
		prod, base   float64
	}{
		{"output_throughput", "short", mean(func(w Window) float64 { return w.OutputTokens }), b.OutputThroughput},
		{"request_throughput", "reqps", mean(func(w Window) float64 { return w.RequestRate }), b.RequestThroughput},
	} {
		r := Row{Metric: t.metric, Stat: "mean", Unit: t.unit, Production: t.prod, ProductionLower: t.prod, ProductionUp: t.prod, Baseline: t.base}
		r.Ratio, r.Verdict = verdict(r, margin, true)
		rows = append(rows, r)
	}
	return rows
}

func verdict(r Row, margin float64, higherIsBetter bool) (float64, string) {
	switch {
	case math.IsNaN(r.Baseline):
		return math.NaN(), NoBaseline
	case math.IsNaN(r.Production):
		return math.NaN(), NoData
	}
	ratio := r.Production / r.Baseline
	if r.Baseline == 0 {
		ratio = math.NaN()
	}
	lo, hi := r.ProductionLower, r.ProductionUp
	if math.IsNaN(lo) {
		lo = r.Production
	}
	if math.IsNaN(hi) {
		hi = r.Production
	}
	if higherIsBetter {
		switch {
		case hi < r.Baseline*(1-margin):
			return ratio, Worse
		case lo > r.Baseline*(1+margin):
			return ratio, Better
		}
		return ratio, AsBenchmark
	}
	switch {
	case lo > r.Baseline*(1+margin):
		return ratio, Worse
	case hi < r.Baseline*(1-margin):
		return ratio, Better
	}
	return ratio, AsBenchmark
}
