package queries

import (
	"context"
	"fmt"
	"maps"
	"slices"

	"github.com/grafana/grafana-plugin-sdk-go/data"
	"github.com/prometheus/common/model"

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
	// Format is timeseries (default: the statistics as series) or heatmap: per stage, the
	// requests per second in each histogram bucket over time (latency.HeatmapRows), as a
	// heatmap-rows frame for Grafana's heatmap panel; stats, estimator and bounds are unused.
	Format string `json:"format,omitempty"`
}

func (q *Latency) lists() []namedList {
	return []namedList{{"stages", &q.Stages}, {"stats", &q.Stats}}
}

func (q *Latency) validate(*settings.Settings) error {
	if err := checkSource(q.Source); err != nil {
		return err
	}
	if q.Format != "" && q.Format != "timeseries" && q.Format != "heatmap" {
		return badQueryf("format: %q is neither timeseries nor heatmap", q.Format)
	}
	if q.Format == "heatmap" && q.Source == "probe" {
		return badQueryf("format: heatmap reads the engine's histograms; with source probe use timeseries")
	}
	if _, err := estimator(q.Estimator); err != nil {
		return err
	}
	stages, err := q.stages()
	if err != nil {
		return err
	}
	if _, err := q.stats(); err != nil {
		return err
	}
	if q.Source == "probe" {
		for _, s := range stages {
			if _, ok := catalog.ProbeStageHistograms[s]; !ok {
				return badQueryf("stages: the probe measures ttft, itl, tpot and e2e as the client sees them; %s is inside the engine (use source engine)", s)
			}
		}
	}
	return nil
}

// stages returns the asked stages, default ttft, itl and e2e.
func (q *Latency) stages() ([]catalog.Signal, error) {
	return parseStages(q.Stages, []catalog.Signal{catalog.TTFT, catalog.ITL, catalog.E2E})
}

// stats returns the asked statistics (default latency.DefaultStats), each once, at most
// maxStats of them.
func (q *Latency) stats() ([]latency.Stat, error) {
	statNames := q.Stats
	if len(statNames) == 0 {
		statNames = latency.DefaultStats
	}
	if len(statNames) > maxStats {
		return nil, badQueryf("stats: %d statistics asked, at most %d per query", len(statNames), maxStats)
	}
	var out []latency.Stat
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
		out = append(out, st)
	}
	return out, nil
}

// options returns the computation's options: estimator, bounds and statistics (validated
// while decoding).
func (q *Latency) options() latency.Options {
	est, _ := estimator(q.Estimator)
	stats, _ := q.stats()
	return latency.Options{Estimator: est, Bounds: q.Bounds == nil || *q.Bounds, Stats: stats}
}

var latencyEnums = map[string][]string{"stages": signalNames(catalog.LatencyStages), "estimator": {"prometheus", "refined"}, "source": sources, "format": {"timeseries", "heatmap"}}

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

// runLatency fetches every stage concurrently (fetch.Run.LatencyStage: histogram partitions,
// counter means, fetch guards), computes them in stage order (latency.Compute), and draws the
// profile's thresholds on their stages.
func runLatency(ctx context.Context, env *fetch.Env, p fetch.Plan, q *Latency) (data.Frames, error) {
	stages, _ := q.stages() // validated while decoding
	opt := q.options()
	if q.Source == "probe" {
		return runLatencyProbe(ctx, env, p, q, stages, opt)
	}
	if q.Format == "heatmap" {
		return runLatencyHeatmap(ctx, env, p, stages)
	}
	r := fetch.NewRun(ctx, env, p)
	p.Scope = r.ReExportScope(ctx, p.Scope) // a gateway's copies of configured engines count once
	r.ScopeNotices(ctx, stages)
	// Stages are independent: fetch them concurrently (the PromQL engine
	// runs concurrent queries), then compute in stage order.
	parts := make([]fetch.Stage, len(stages))
	err := r.Parallel(len(stages), func(k int) error {
		var err error
		parts[k], err = r.LatencyStage(ctx, stages[k], needMeanStat(opt.Stats), len(opt.Stats) > 0 && !onlyMean(opt.Stats))
		return err
	})
	if err != nil {
		return nil, err
	}
	var series []analysis.Series
	for _, part := range parts {
		st := latency.Compute(part.In, r.Steps, opt, &r.Notes)
		latency.ApplyVerdicts(st, r.Verdicts(part)) // no quantile or bound the histogram disproves
		series = append(series, st...)
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
	series = append(series, latencySpikes(r, parts, th, q.Profile)...)
	return frames.TimeSeries(series, meta(r, th)), nil
}

// latencySpikes marks, with a profile, the windows in which a stage crossed its objective's
// threshold (stat="spike", latency.Spikes): shown, not paged.
func latencySpikes(r *fetch.Run, parts []fetch.Stage, th map[string]float64, profile string) []analysis.Series {
	var series []analysis.Series
	spiked := false
	for _, part := range parts {
		if t, ok := th[string(part.In.Stage)]; ok && (part.In.Buckets != nil || part.In.Increases != nil) {
			series = append(series, latency.Spikes(part.In, r.Steps, t)...)
			spiked = true
		}
	}
	if spiked {
		r.Notes.Add(analysis.Info, fmt.Sprintf("spike series (stat=spike): 1 in the windows where the stage's p99 is above profile %s's threshold or its highest occupied bucket lies wholly above it; a spike is shown, not paged (the sustained rule pages after 5 minutes out of the objective)", profile))
	}
	return series
}

// runLatencyHeatmap answers the heatmap format: per stage, the bucket rates latency.Compute
// would read (fetch.Run.LatencyStage, with its fetch guards; heatmapRates), de-accumulated into requests per second per bucket (latency.HeatmapRows). Groups
// are added: a heatmap panel draws one frame per stage. Targets with different bucket layouts
// are de-accumulated apart and their buckets added by upper bound, with a notice.
func runLatencyHeatmap(ctx context.Context, env *fetch.Env, p fetch.Plan, stages []catalog.Signal) (data.Frames, error) {
	r := fetch.NewRun(ctx, env, p)
	r.ScopeNotices(ctx, stages)
	parts := make([]fetch.Stage, len(stages))
	err := r.Parallel(len(stages), func(k int) error {
		var err error
		parts[k], err = r.LatencyStage(ctx, stages[k], false, true)
		return err
	})
	if err != nil {
		return nil, err
	}
	names := make([]string, len(stages))
	hs := make([]latency.Heatmap, len(stages))
	for k, part := range parts {
		names[k] = string(stages[k])
		rates := heatmapRates(part.In)
		layouts := []model.Matrix{rates}
		if split := part.In.SplitBy; split != "" {
			byValue := map[model.LabelValue]model.Matrix{}
			for _, s := range rates {
				v := s.Metric[model.LabelName(split)]
				byValue[v] = append(byValue[v], s)
			}
			layouts = layouts[:0]
			for _, v := range slices.Sorted(maps.Keys(byValue)) {
				layouts = append(layouts, byValue[v])
			}
		}
		hs[k] = latency.HeatmapRows(layouts, r.Steps)
		if hs[k].Layouts > 1 {
			r.Notes.Add(analysis.Info, fmt.Sprintf("%s: the selected targets use %d different bucket layouts; each target's buckets are counted in the row of their own upper bound", stages[k], hs[k].Layouts))
		}
		r.StageNotices(part)
	}
	if err := r.IdleNotices(ctx, stages); err != nil {
		return nil, err
	}
	if err := r.ChangeNotices(ctx); err != nil {
		return nil, err
	}
	return frames.HeatmapRows(names, hs, meta(r, nil)), nil
}

// heatmapRates returns the per-second rates of a stage's bucket series as latency.Compute
// reads them: the windowed increases (delta, one extrapolation per histogram) divided by the
// window, and rate()'s buckets in the windows that hold a counter reset (delta is no increase
// there), matched by the bucket's labels without le.
func heatmapRates(in latency.Input) model.Matrix {
	w := in.Window.Seconds()
	if w <= 0 {
		return nil
	}
	reset := map[string]map[model.Time]bool{}
	for _, s := range in.Resets {
		for _, v := range s.Values {
			if v.Value > 0 {
				k := s.Metric.String()
				if reset[k] == nil {
					reset[k] = map[model.Time]bool{}
				}
				reset[k][v.Timestamp] = true
			}
		}
	}
	rate := map[string]map[model.Time]model.SampleValue{}
	for _, s := range in.Buckets {
		k := s.Metric.String()
		rate[k] = map[model.Time]model.SampleValue{}
		for _, v := range s.Values {
			rate[k][v.Timestamp] = v.Value
		}
	}
	out := make(model.Matrix, 0, len(in.Increases))
	for _, s := range in.Increases {
		noLE := s.Metric.Clone()
		delete(noLE, model.BucketLabel)
		resets, rates := reset[noLE.String()], rate[s.Metric.String()]
		r := &model.SampleStream{Metric: s.Metric, Values: make([]model.SamplePair, 0, len(s.Values))}
		for _, v := range s.Values {
			if resets[v.Timestamp] {
				if x, ok := rates[v.Timestamp]; ok {
					r.Values = append(r.Values, model.SamplePair{Timestamp: v.Timestamp, Value: x})
				}
				continue
			}
			r.Values = append(r.Values, model.SamplePair{Timestamp: v.Timestamp, Value: v.Value / model.SampleValue(w)})
		}
		out = append(out, r)
	}
	return out
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
