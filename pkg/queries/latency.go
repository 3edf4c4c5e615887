package queries

import (
	"context"
	"slices"
	"strings"

	"github.com/grafana/grafana-plugin-sdk-go/data"

	"github.com/inferscope/inferscope-llm-datasource/pkg/analysis"
	"github.com/inferscope/inferscope-llm-datasource/pkg/analysis/client"
	"github.com/inferscope/inferscope-llm-datasource/pkg/analysis/latency"
	"github.com/inferscope/inferscope-llm-datasource/pkg/catalog"
	"github.com/inferscope/inferscope-llm-datasource/pkg/fetch"
	"github.com/inferscope/inferscope-llm-datasource/pkg/frames"
	"github.com/inferscope/inferscope-llm-datasource/pkg/hist"
	"github.com/inferscope/inferscope-llm-datasource/pkg/settings"
)

// Latency is the latency query: one series per group × stage × statistic, in seconds, with
// error bounds per quantile.
type Latency struct {
	Common
	// Stages are latency stages (catalog.LatencyStages); default ttft, itl, e2e.
	Stages []string `json:"stages,omitempty"`
	// Stats are mean, p50, p90, p95, p99 or any pNN.N; default latency.DefaultStats.
	Stats []string `json:"stats,omitempty"`
	// Estimator is prometheus (default) or refined.
	Estimator string `json:"estimator,omitempty"`
	// Bounds adds bound="lower"/"upper" series per quantile (default true).
	Bounds *bool `json:"bounds,omitempty"`
	// Profile names an SLO profile whose latency thresholds are drawn on their stages.
	Profile string `json:"profile,omitempty"`
	// Source is engine (default: the engine's histograms) or probe (the
	// client-side probes of the targets: ttft, itl, tpot and e2e as users see
	// them; series carry target, probe and source="probe").
	Source string `json:"source,omitempty"`
}

func (q *Latency) lists() []namedList {
	return []namedList{{"stages", &q.Stages}, {"stats", &q.Stats}}
}

func (q *Latency) validate(*settings.Settings) error {
	if err := checkSource(q.Source); err != nil {
		return err
	}
	_, err := estimator(q.Estimator)
	return err
}

var latencyEnums = map[string][]string{"stages": signalNames(catalog.LatencyStages), "estimator": {"prometheus", "refined"}, "source": sources}

// sources are the values of the source field of latency and slo.
var sources = []string{"engine", "probe"}

// checkSource validates a source field.
func checkSource(s string) error {
	if s != "" && !slices.Contains(sources, s) {
		return badQueryf("source: %q is neither engine nor probe", s)
	}
	return nil
}

// estimator parses the estimator field.
func estimator(e string) (hist.Estimator, error) {
	switch e {
	case "", string(hist.EstimatorPrometheus):
		return hist.EstimatorPrometheus, nil
	case string(hist.EstimatorRefined):
		return hist.EstimatorRefined, nil
	}
	return "", badQueryf("estimator: %q is neither prometheus nor refined", e)
}

// parseStages parses a stages field (catalog.LatencyStages); def when empty.
func parseStages(names []string, def []catalog.Signal) ([]catalog.Signal, error) {
	if len(names) == 0 {
		return def, nil
	}
	valid := map[string]bool{}
	for _, s := range catalog.LatencyStages {
		valid[string(s)] = true
	}
	out := make([]catalog.Signal, 0, len(names))
	for _, n := range names {
		if !valid[n] {
			all := make([]string, 0, len(catalog.LatencyStages))
			for _, s := range catalog.LatencyStages {
				all = append(all, string(s))
			}
			return nil, badQueryf("stages: %q is not one of %s", n, strings.Join(all, ", "))
		}
		out = append(out, catalog.Signal(n))
	}
	return out, nil
}

// runLatency fetches every stage concurrently (fetch.Run.LatencyStage: histogram partitions,
// counter means, fetch guards), computes them in stage order (latency.Compute), and draws the
// profile's thresholds on their stages.
func runLatency(ctx context.Context, env *fetch.Env, p fetch.Plan, q *Latency) (data.Frames, error) {
	stages, err := parseStages(q.Stages, []catalog.Signal{catalog.TTFT, catalog.ITL, catalog.E2E})
	if err != nil {
		return nil, err
	}
	statNames := q.Stats
	if len(statNames) == 0 {
		statNames = latency.DefaultStats
	}
	est, _ := estimator(q.Estimator) // validated while decoding
	opt := latency.Options{Estimator: est, Bounds: q.Bounds == nil || *q.Bounds}
	if len(statNames) > maxStats {
		return nil, badQueryf("stats: %d statistics asked, at most %d per query", len(statNames), maxStats)
	}
	seenStat := map[string]bool{}
	for _, s := range statNames {
		st, err := latency.ParseStat(s)
		if err != nil {
			return nil, badQueryf("stats: %v", err)
		}
		if seenStat[st.Name] {
			continue
		}
		seenStat[st.Name] = true
		opt.Stats = append(opt.Stats, st)
	}
	if q.Source == "probe" {
		return runLatencyProbe(ctx, env, p, q, stages, opt)
	}
	r := fetch.NewRun(ctx, env, p)
	r.ScopeNotices(ctx, stages)
	// Stages are independent: fetch them concurrently (the PromQL engine
	// runs concurrent queries), then compute in stage order.
	parts := make([]fetch.Stage, len(stages))
	err = r.Parallel(len(stages), func(k int) error {
		var err error
		parts[k], err = r.LatencyStage(ctx, stages[k], needMeanStat(opt.Stats), len(opt.Stats) > 0 && !onlyMean(opt.Stats))
		return err
	})
	if err != nil {
		return nil, err
	}
	var series []analysis.Series
	for _, part := range parts {
		series = append(series, latency.Compute(part.In, r.Steps, opt, &r.Notes)...)
		series = append(series, part.Extra...)
		r.StageNotices(part)
	}
	if err := r.IdleNotices(ctx, stages); err != nil {
		return nil, err
	}
	if err := r.ChangeNotices(ctx); err != nil {
		return nil, err
	}
	th, err := objectiveThresholds(env.Settings, q.Profile)
	if err != nil {
		return nil, err
	}
	return frames.TimeSeries(series, meta(r, th)), nil
}

// needMeanStat reports whether the mean is asked.
func needMeanStat(stats []latency.Stat) bool {
	return slices.ContainsFunc(stats, func(s latency.Stat) bool { return s.IsMean() })
}

// onlyMean reports whether only the mean is asked.
func onlyMean(stats []latency.Stat) bool {
	return !slices.ContainsFunc(stats, func(s latency.Stat) bool { return !s.IsMean() })
}

// maxStats caps the statistics of one latency query.
const maxStats = 20

// runLatencyProbe answers a latency query with source "probe": the stages'
// probe histograms (catalog.ProbeHistogramPromQL) of the targets' probes,
// through the same estimator and bounds as the engine's (latency.Compute),
// joined to the targets (client.JoinProbes).
func runLatencyProbe(ctx context.Context, env *fetch.Env, p fetch.Plan, q *Latency, stages []catalog.Signal, opt latency.Options) (data.Frames, error) {
	r := fetch.NewRun(ctx, env, p)
	for _, s := range stages {
		if _, ok := catalog.ProbeStageHistograms[s]; !ok {
			return nil, badQueryf("stages: the probe measures ttft, itl, tpot and e2e as the client sees them; %s is inside the engine (use source engine)", s)
		}
	}
	ps := probesOf(env, p)
	if len(ps.names) == 0 {
		noProbeNotice(r)
		return frames.TimeSeries(nil, meta(r, nil)), nil
	}
	by := p.Scope.By
	if !slices.Contains(by, "target") && !slices.Contains(by, "model") {
		by = nil
	}
	var series []analysis.Series
	for _, s := range stages {
		h := catalog.ProbeHistogramPromQL(catalog.ProbeStageHistograms[s], ps.names, p.Scope.Models, by, p.Window)
		in := latency.Input{Stage: s, Scale: 1}
		var err error
		if in.Buckets, err = r.Range(ctx, h.Buckets); err != nil {
			return nil, err
		}
		if needMeanStat(opt.Stats) {
			if in.Sum, err = r.Range(ctx, h.Sum); err != nil {
				return nil, err
			}
			if in.Count, err = r.Range(ctx, h.Count); err != nil {
				return nil, err
			}
		}
		series = append(series, latency.Compute(in, r.Steps, opt, &r.Notes)...)
	}
	r.Notes.Add(analysis.Info, "source probe: latency as the client-side probe measured it (API server, tokenizer, gateway and network included), from its own requests only; see docs/probe.md")
	th, err := objectiveThresholds(env.Settings, q.Profile)
	if err != nil {
		return nil, err
	}
	return frames.TimeSeries(client.JoinProbes(series, ps.target), meta(r, th)), nil
}
