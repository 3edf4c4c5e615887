package queries

import (
	"context"
	"slices"
	"strings"

	"github.com/grafana/grafana-plugin-sdk-go/data"

	"github.com/inferscope/inferscope-llm-datasource/pkg/analysis"
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
}

func (q *Latency) lists() []namedList {
	return []namedList{{"stages", &q.Stages}, {"stats", &q.Stats}}
}

func (q *Latency) validate(*settings.Settings) error {
	_, err := estimator(q.Estimator)
	return err
}

var latencyEnums = map[string][]string{"stages": signalNames(catalog.LatencyStages), "estimator": {"prometheus", "refined"}}

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
