package queries

import (
	"context"
	"math"

	"github.com/grafana/grafana-plugin-sdk-go/data"

	"github.com/inferscope/inferscope-llm-datasource/pkg/analysis"
	"github.com/inferscope/inferscope-llm-datasource/pkg/analysis/baseline"
	"github.com/inferscope/inferscope-llm-datasource/pkg/bench"
	"github.com/inferscope/inferscope-llm-datasource/pkg/catalog"
	"github.com/inferscope/inferscope-llm-datasource/pkg/fetch"
	"github.com/inferscope/inferscope-llm-datasource/pkg/frames"
	"github.com/inferscope/inferscope-llm-datasource/pkg/settings"
)

// Benchmark is the benchmark query: production's p50/p90/p99 TTFT, TPOT,
// ITL and E2E and its throughput over the windows at comparable load, next
// to a baseline's (a result file in the settings' baselinesPath), with the
// gap as a ratio and a verdict per metric (docs/benchmarks.md).
type Benchmark struct {
	Common
	// Baseline is the baseline's name: its file name without .json ("<name>#<i>" for one
	// benchmark of a GuideLLM sweep).
	Baseline string `json:"baseline"`
	// Tolerance is how far (relative) a window's load may be from the baseline's to be
	// compared; default 0.25 (±25 %).
	Tolerance *float64 `json:"tolerance,omitempty"`
	// Margin is the relative gap under which a metric is "as benchmarked"; default 0.1.
	Margin *float64 `json:"margin,omitempty"`
}

// Defaults of the benchmark query.
const (
	defaultBenchTolerance = 0.25
	defaultBenchMargin    = 0.1
)

func (q *Benchmark) validate(*settings.Settings) error {
	if !bench.NameRE.MatchString(q.Baseline) && !baselineSweepName(q.Baseline) {
		return badQueryf("baseline: %q is not a baseline name (a file name in baselinesPath without .json)", q.Baseline)
	}
	if q.Tolerance != nil && !(*q.Tolerance > 0 && *q.Tolerance <= 1) {
		return badQueryf("tolerance: %v must be a ratio in (0, 1], such as 0.25 for ±25 %%", *q.Tolerance)
	}
	if q.Margin != nil && !(*q.Margin >= 0 && *q.Margin < 1) {
		return badQueryf("margin: %v must be a ratio in [0, 1), such as 0.1", *q.Margin)
	}
	if q.GroupBy != "" && q.GroupBy != "none" {
		return badQueryf("groupBy: the benchmark query compares the whole selection with one baseline; narrow it with targets and models")
	}
	return nil
}

// baselineSweepName accepts "<name>#<i>".
func baselineSweepName(s string) bool {
	for i := len(s) - 1; i > 0; i-- {
		if s[i] == '#' {
			return bench.NameRE.MatchString(s[:i]) && i < len(s)-1
		}
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return false
}

func orDefault(p *float64, d float64) float64 {
	if p == nil {
		return d
	}
	return *p
}

// runBenchmark reads the baseline, the windows of the range (fetch.Run.Windows), keeps
// those at comparable load (baseline.Select) and compares (baseline.Compare).
func runBenchmark(ctx context.Context, env *fetch.Env, p fetch.Plan, q *Benchmark) (data.Frames, error) {
	b, err := env.Baseline(q.Baseline)
	if err != nil {
		return nil, badQueryf("baseline: %v", err)
	}
	r := fetch.NewRun(ctx, env, p)
	stages := []catalog.Signal{catalog.TTFT, catalog.TPOT, catalog.ITL, catalog.E2E}
	r.ScopeNotices(ctx, stages)
	reads, err := r.Windows(ctx, bench.Stages, p.Scope, p.Window, p.Start, p.End)
	if err != nil {
		return nil, err
	}
	tol, margin := orDefault(q.Tolerance, defaultBenchTolerance), orDefault(q.Margin, defaultBenchMargin)
	sel := baseline.Select(reads.Windows, b, tol)
	r.Notes.Add(analysis.Info, "Compared with "+b.Name+" ("+b.Tool+", "+b.Load()+"): "+sel.Description+".")
	if sel.Kept == 0 {
		r.Notes.Add(analysis.Warning, "No window of the range ran at the baseline's load: production cannot be compared with this baseline here; widen the range or the tolerance.")
	}
	if n := len(reads.Windows); sel.Kept > 0 && n > 0 && p.Window > p.Step {
		r.Notes.Add(analysis.Info, "The rate window is longer than the step: neighbouring windows overlap, each request is counted in several of them (quantiles are unaffected when the load is steady).")
	}
	if !math.IsNaN(b.MeanInputTokens) {
		var sum float64
		var n int
		for i, keep := range sel.Keep {
			if keep && !math.IsNaN(reads.PromptLength[i]) {
				sum += reads.PromptLength[i]
				n++
			}
		}
		if n > 0 {
			prod := sum / float64(n)
			if math.Abs(prod-b.MeanInputTokens) > 0.5*b.MeanInputTokens {
				r.Notes.Add(analysis.Warning, "Production's mean prompt length differs from the baseline's by more than half: latencies are not like for like.")
			}
		}
	}
	rows := baseline.Compare(b, reads.Windows, sel, margin)
	return frames.BenchmarkTable(b.Name, rows, sel, meta(r, nil)), nil
}
