package fetch

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/inferscope/inferscope-llm-datasource/pkg/analysis"
	"github.com/inferscope/inferscope-llm-datasource/pkg/analysis/latency"
	"github.com/inferscope/inferscope-llm-datasource/pkg/analysis/saturation"
	"github.com/inferscope/inferscope-llm-datasource/pkg/catalog"
)

// counterMeanTargets returns the targets in scope whose engine reads stage
// only from cumulative counters (llama.cpp's processing seconds and tokens,
// Triton's microsecond counters): they have no histogram, so no quantile, but
// their mean is rate(time counter) / rate(event counter).
func (r *Run) counterMeanTargets(ctx context.Context, stage catalog.Signal) []string {
	var out []string
	for _, v := range r.Views(ctx) {
		if !v.OK {
			continue
		}
		a := v.Assess(stage)
		if !a.Exported() || len(a.Metrics) == 0 {
			continue
		}
		counters := !slices.ContainsFunc(a.Metrics, func(m catalog.Metric) bool { return m.Kind == catalog.KindHistogram })
		if counters {
			out = append(out, v.Name)
		}
	}
	return out
}

// counterMeans serves the mean of stage for targets that only have counters
// (see counterMeanTargets) with catalog.MeanPromQL, one series per target
// (and the query's groups): the mean is per event of the engine's counter
// (llama.cpp: per token; Triton: per request), so it is never added to the
// histogram-based means of other targets. A notice says what it is and that
// these targets have no quantiles.
func (r *Run) counterMeans(ctx context.Context, stage catalog.Signal, wantMean, wantQuantiles bool) ([]analysis.Series, error) {
	targets := r.counterMeanTargets(ctx, stage)
	if len(targets) == 0 {
		return nil, nil
	}
	if wantQuantiles {
		r.mu.Lock()
		verb := "export"
		if len(targets) == 1 {
			verb = "exports"
		}
		r.Notes.Add(analysis.Info, fmt.Sprintf("%s: %s %s only cumulative counters, so no quantile exists for them; ask for the mean", stage, strings.Join(targets, ", "), verb))
		r.mu.Unlock()
	}
	if !wantMean {
		return nil, nil
	}
	sc := r.Plan.Scope
	sc.Targets = targets
	if !slices.Contains(sc.By, "target") {
		sc.By = append(slices.Clone(sc.By), "target")
	}
	q, err := catalog.MeanPromQL(stage, sc, r.Plan.Window)
	if err != nil {
		return nil, err
	}
	m, err := r.Range(ctx, q)
	if err != nil {
		return nil, err
	}
	r.mu.Lock()
	r.Notes.Add(analysis.Info, fmt.Sprintf("%s mean of %s comes from cumulative counters (rate of seconds / rate of events: per token for llama.cpp, per request for Triton), shown per target and never added to histogram means", stage, strings.Join(targets, ", ")))
	r.mu.Unlock()
	return latency.CounterMeans(stage, m, r.Steps), nil
}

// PrefixHitRateGauge fills in.PrefixHitRatio for the vLLM targets in scope
// that export only V0's prefix-cache hit-rate gauge (vllm:gpu_prefix_cache_hit_rate;
// catalog.Assess: not exported on V1 and 0.11+), averaged like KV usage with the
// −1 "caching off" sentinel dropped. saturation.Compute shows it for groups
// without hit and query counters; a notice says where a group mixes both.
func (r *Run) PrefixHitRateGauge(ctx context.Context, in *saturation.Input) error {
	var v0 []string
	note := ""
	for _, v := range r.Views(ctx) {
		if !v.OK || v.Det.Engine != catalog.EngineVLLM {
			continue
		}
		if a := v.Assess(catalog.PrefixCacheHitRate); a.Exported() {
			v0 = append(v0, v.Name)
			note = a.Note
		}
	}
	if len(v0) == 0 {
		return nil
	}
	sc := r.Plan.Scope
	sc.Targets = v0
	q, err := catalog.GaugePromQL(catalog.PrefixCacheHitRate, sc, "avg")
	if err != nil {
		return err
	}
	if in.PrefixHitRatio, err = r.Range(ctx, q); err != nil {
		return err
	}
	if note == "" {
		note = catalog.Lookup(catalog.EngineVLLM, catalog.PrefixCacheHitRate).Note
	}
	r.Notes.Add(analysis.Info, fmt.Sprintf("prefix-cache hit ratio of %s is vLLM V0's gauge: %s", strings.Join(v0, ", "), note))
	if len(in.PrefixQueries) > 0 && !slices.Contains(r.Plan.Scope.By, "target") {
		r.Notes.Add(analysis.Warning, fmt.Sprintf("prefix-cache hit ratio: %s report only V0's hit-rate gauge while other targets report hit and query counters; a group holding both shows the counters' ratio only (group by target to see each)", strings.Join(v0, ", ")))
	}
	return nil
}
