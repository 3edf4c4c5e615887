package fetch

import (
	"context"
	"slices"
	"sync"

	"github.com/prometheus/common/model"

	"github.com/inferscope/inferscope-llm-datasource/pkg/analysis"
	"github.com/inferscope/inferscope-llm-datasource/pkg/analysis/latency"
	"github.com/inferscope/inferscope-llm-datasource/pkg/analysis/sanity"
	"github.com/inferscope/inferscope-llm-datasource/pkg/catalog"
)

// Stage is what the latency query reads for one stage: the histogram input of
// latency.Compute, the counter-based means of targets without a histogram, the windowed
// increases the consistency checks read, and the fetch guards' findings and skipped checks
// (added to the notices by StageNotices, in stage order: stages are fetched concurrently).
type Stage struct {
	In     latency.Input
	Extra  []analysis.Series
	Checks latency.Input

	stage    catalog.Signal
	findings []sanity.Finding
	skips    []skip
	verdicts *stageVerdicts // Verdicts, judged once per stage (nil: judged at every call)
}

// stageVerdicts holds a stage's verdicts once judged: the latency query reads them twice
// (latency.ApplyVerdicts, then the notices).
type stageVerdicts struct {
	once sync.Once
	v    sanity.Verdicts
}

// skip is a fetch guard that could not run.
type skip struct {
	what string
	err  error
}

// LatencyStage fetches one latency stage over the plan: counter means where a target has
// only counters (wantMean: the mean is asked; wantQuantiles: a notice says those targets have
// none), the histogram partitions (histogramParts) split by target where bucket layouts differ
// (layoutSplit), fetched again with the finite filters when a NaN or ±Inf reached them, and
// with the histograms that went backwards without a restart left out of the windows that hold
// the step. Safe to call concurrently for different stages.
func (r *Run) LatencyStage(ctx context.Context, stage catalog.Signal, wantMean, wantQuantiles bool) (Stage, error) {
	out := Stage{stage: stage, verdicts: &stageVerdicts{}}
	var err error
	p := r.Plan
	if out.Extra, err = r.counterMeans(ctx, stage, wantMean, wantQuantiles); err != nil {
		return out, err
	}
	// Targets whose bucket layouts differ keep their target (job) so
	// latency.Compute adds only histograms of one layout and merges
	// different layouts as distributions; one layout needs no split.
	split, err := r.layoutSplit(ctx, stage)
	if err != nil {
		return out, err
	}
	var extraBy []string
	if split != "" {
		extraBy = []string{"target"}
	}
	hqs, hqTargets, err := r.histogramParts(ctx, stage, p.Window, false, extraBy...)
	if err != nil {
		return out, err
	}
	fetched, err := r.fetchHistograms(ctx, hqs)
	if err != nil {
		return out, err
	}
	// NaN and ±Inf samples reach the aggregates as NaN or ±Inf: name them, and fetch
	// again with the finite filters (catalog.Scope.Finite), which leave each stored
	// histogram out of the windows they spoil. A clean history pays nothing for this.
	finite := false
	if nonFiniteIn(fetched) {
		effect := "left out of the " + string(stage) + " quantiles and mean in the windows that contain it"
		nf, err := r.nonFiniteScan(ctx, stage, p.Scope, p.Window, effect)
		if err != nil {
			out.skips = append(out.skips, skip{"the check for NaN and infinite " + string(stage) + " samples", err})
		}
		out.findings = append(out.findings, nf...)
		finite = true
		if hqs, hqTargets, err = r.histogramParts(ctx, stage, p.Window, true, extraBy...); err != nil {
			return out, err
		}
		if fetched, err = r.fetchHistograms(ctx, hqs); err != nil {
			return out, err
		}
	}
	// Histograms that went backwards without a restart are named and left out of the
	// windows that hold the step. Looked for only where the results show a decrease: a
	// _count reset, or a bucket increase that is negative or below the bucket under it.
	if decreaseIn(fetched) {
		backs, bf, err := r.histogramBackwards(ctx, stage, p.Window, finite, extraBy...)
		if err != nil {
			out.skips = append(out.skips, skip{"the check for " + string(stage) + " histograms going backwards", err})
		}
		out.findings = append(out.findings, bf...)
		for j, f := range fetched {
			for _, b := range backs {
				if !slices.Contains(hqTargets[j], b.job) {
					continue
				}
				if err := r.leaveOutHistogram(ctx, b, p.Window, []model.Matrix{f.inc, f.rates, f.sum, f.count, f.sumInc, f.cntInc}); err != nil {
					return out, err
				}
			}
		}
	}
	in := latency.Input{Stage: stage, Scale: 1, SplitBy: split, Window: p.Window}
	// Partitions cover disjoint targets: their series of one group add
	// up in latency.Compute. Rank fractions come from bucket increases
	// scaled by one factor per histogram (see latency.Input.Increases).
	for _, f := range fetched {
		in.Increases = append(in.Increases, f.inc...)
		in.Resets = append(in.Resets, f.resets...)
		in.Buckets = append(in.Buckets, f.rates...)
		in.Sum = append(in.Sum, f.sum...)
		in.Count = append(in.Count, f.count...)
		// The consistency checks (sanity.HistogramChecks) compare the
		// buckets, _sum and _count on one footing: their delta()
		// increases, which share one extrapolation per target.
		// Windows holding a counter reset are left out (delta is no
		// increase there; rate()'s own extrapolation is what Compute uses).
		out.Checks.Stage = stage
		out.Checks.Buckets = append(out.Checks.Buckets, withoutResets(f.inc, f.resets)...)
		out.Checks.Sum = append(out.Checks.Sum, withoutResets(f.sumInc, f.resets)...)
		out.Checks.Count = append(out.Checks.Count, withoutResets(f.cntInc, f.resets)...)
	}
	out.In = in
	return out, nil
}

// StageNotices adds a stage's consistency warnings, skipped checks and fetch-guard findings
// to the notices, in that order.
func (r *Run) StageNotices(s Stage) {
	r.histogramNotices(s)
	for _, sk := range s.skips {
		r.Skipped(sk.what, sk.err)
	}
	r.addFindings(s.findings, string(s.stage))
}
