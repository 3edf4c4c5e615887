package plugin

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/prometheus/common/model"

	"github.com/inferscope/inferscope-llm-datasource/pkg/analysis"
	"github.com/inferscope/inferscope-llm-datasource/pkg/analysis/latency"
	"github.com/inferscope/inferscope-llm-datasource/pkg/analysis/saturation"
	"github.com/inferscope/inferscope-llm-datasource/pkg/catalog"
	"github.com/inferscope/inferscope-llm-datasource/pkg/hist"
)

// counterMeanTargets returns the targets in scope whose engine reads stage
// only from cumulative counters (llama.cpp's processing seconds and tokens,
// Triton's microsecond counters): they have no histogram, so no quantile, but
// their mean is rate(time counter) / rate(event counter).
func (r *run) counterMeanTargets(ctx context.Context, stage catalog.Signal) []string {
	var out []string
	for _, v := range r.views(ctx) {
		if !v.OK {
			continue
		}
		a := v.assess(stage)
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
func (r *run) counterMeans(ctx context.Context, stage catalog.Signal, wantMean, wantQuantiles bool) ([]analysis.Series, error) {
	targets := r.counterMeanTargets(ctx, stage)
	if len(targets) == 0 {
		return nil, nil
	}
	if wantQuantiles {
		r.mu.Lock()
		r.notes.Add(analysis.Info, fmt.Sprintf("%s: %s export only cumulative counters, so no quantile exists for them; ask for the mean", stage, strings.Join(targets, ", ")))
		r.mu.Unlock()
	}
	if !wantMean {
		return nil, nil
	}
	sc := r.p.scope
	sc.Targets = targets
	if !slices.Contains(sc.By, "target") {
		sc.By = append(slices.Clone(sc.By), "target")
	}
	q, err := catalog.MeanPromQL(stage, sc, r.p.window)
	if err != nil {
		return nil, err
	}
	m, err := r.rangeQuery(ctx, q)
	if err != nil {
		return nil, err
	}
	r.mu.Lock()
	r.notes.Add(analysis.Info, fmt.Sprintf("%s mean of %s comes from cumulative counters (rate of seconds / rate of events: per token for llama.cpp, per request for Triton), shown per target and never added to histogram means", stage, strings.Join(targets, ", ")))
	r.mu.Unlock()
	return latency.CounterMeans(stage, m, r.steps), nil
}

// prefixHitRateGauge fills in.PrefixHitRatio for the vLLM targets in scope
// that export only V0's prefix-cache hit-rate gauge (vllm:gpu_prefix_cache_hit_rate;
// catalog.Assess: not exported on V1 and 0.11+), averaged like KV usage with the
// −1 "caching off" sentinel dropped. saturation.Compute shows it for groups
// without hit and query counters; a notice says where a group mixes both.
func (r *run) prefixHitRateGauge(ctx context.Context, in *saturation.Input) error {
	var v0 []string
	note := ""
	for _, v := range r.views(ctx) {
		if !v.OK || v.Det.Engine != catalog.EngineVLLM {
			continue
		}
		if a := v.assess(catalog.PrefixCacheHitRate); a.Exported() {
			v0 = append(v0, v.Name)
			note = a.Note
		}
	}
	if len(v0) == 0 {
		return nil
	}
	sc := r.p.scope
	sc.Targets = v0
	q, err := catalog.GaugePromQL(catalog.PrefixCacheHitRate, sc, "avg")
	if err != nil {
		return err
	}
	if in.PrefixHitRatio, err = r.rangeQuery(ctx, q); err != nil {
		return err
	}
	if note == "" {
		note = catalog.Lookup(catalog.EngineVLLM, catalog.PrefixCacheHitRate).Note
	}
	r.notes.Add(analysis.Info, fmt.Sprintf("prefix-cache hit ratio of %s is vLLM V0's gauge: %s", strings.Join(v0, ", "), note))
	if len(in.PrefixQueries) > 0 && !slices.Contains(r.p.scope.By, "target") {
		r.notes.Add(analysis.Warning, fmt.Sprintf("prefix-cache hit ratio: %s report only V0's hit-rate gauge while other targets report hit and query counters; a group holding both shows the counters' ratio only (group by target to see each)", strings.Join(v0, ", ")))
	}
	return nil
}

// layoutSplit returns "job" when the targets in scope store the histogram of
// stage with different bucket layouts over the queried range (so a query not
// grouped by target must keep them apart, see latency.Input.SplitBy), and ""
// when they share one layout or the query is grouped by target. It reads
// each target's distinct le values of the stage's bucket series in the range
// (and one window before it) from the index, without reading samples.
func (r *run) layoutSplit(ctx context.Context, stage catalog.Signal) (string, error) {
	if slices.Contains(r.p.scope.By, "target") {
		return "", nil
	}
	if len(r.views(ctx)) < 2 {
		return "", nil
	}
	names := map[string]bool{}
	var jobs []string
	for _, v := range r.views(ctx) {
		jobs = append(jobs, v.Name)
		var ms []catalog.Metric
		if v.OK {
			ms = v.assess(stage).Metrics
		} else {
			for _, e := range catalog.Engines {
				ms = append(ms, catalog.Lookup(e, stage).Metrics...)
			}
		}
		for _, m := range ms {
			if m.Kind == catalog.KindHistogram {
				names[m.Name+"_bucket"] = true
			}
		}
	}
	if len(names) == 0 {
		return "", nil
	}
	sel := fmt.Sprintf("__name__=~%q", alternation(slices.Sorted(maps.Keys(names))))
	bounds := map[string][]float64{}
	for _, job := range jobs {
		les, err := r.i.querier.LabelValues(ctx, model.BucketLabel, "{"+sel+", job="+strconv.Quote(job)+"}", r.p.start.Add(-r.p.window), r.p.end)
		if err != nil {
			return "", fmt.Errorf("bucket bounds of %s: %w", job, err)
		}
		for _, l := range les {
			if le, err := hist.ParseLe(l); err == nil {
				bounds[job] = append(bounds[job], le)
			}
		}
	}
	var first []float64
	for _, job := range slices.Sorted(maps.Keys(bounds)) {
		b := bounds[job]
		slices.Sort(b)
		b = slices.Compact(b)
		if first == nil {
			first = b
			continue
		}
		if !slices.Equal(first, b) {
			return "job", nil
		}
	}
	return "", nil
}

// withoutResets returns m without the samples of steps at which the series'
// group (its labels without le) had resets > 0 in the resets matrix.
func withoutResets(m, resets model.Matrix) model.Matrix {
	bad := map[string]map[model.Time]bool{}
	for _, s := range resets {
		k, _ := analysis.Key(s.Metric)
		for _, p := range s.Values {
			if p.Value > 0 {
				if bad[k] == nil {
					bad[k] = map[model.Time]bool{}
				}
				bad[k][p.Timestamp] = true
			}
		}
	}
	if len(bad) == 0 {
		return m
	}
	out := make(model.Matrix, 0, len(m))
	for _, s := range m {
		k, _ := analysis.Key(s.Metric, model.BucketLabel)
		b := bad[k]
		if b == nil {
			out = append(out, s)
			continue
		}
		kept := &model.SampleStream{Metric: s.Metric}
		for _, p := range s.Values {
			if !b[p.Timestamp] {
				kept.Values = append(kept.Values, p)
			}
		}
		out = append(out, kept)
	}
	return out
}
