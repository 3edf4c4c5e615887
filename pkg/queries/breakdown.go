package queries

import (
	"context"
	"slices"

	"github.com/grafana/grafana-plugin-sdk-go/data"

	"github.com/inferscope/inferscope-llm-datasource/pkg/analysis"
	"github.com/inferscope/inferscope-llm-datasource/pkg/analysis/latency"
	"github.com/inferscope/inferscope-llm-datasource/pkg/catalog"
	"github.com/inferscope/inferscope-llm-datasource/pkg/fetch"
	"github.com/inferscope/inferscope-llm-datasource/pkg/frames"
)

// Breakdown is the breakdown query: mean queue, prefill, decode and overhead per window, or
// (format table) over the whole range with E2E and the number of requests.
type Breakdown struct {
	Common
	// Format is timeseries (default) or table.
	Format string `json:"format,omitempty"`
}

var breakdownEnums = map[string][]string{"format": {"timeseries", "table"}}

// breakdownSignals are the histograms whose means make up the breakdown.
var breakdownSignals = []catalog.Signal{catalog.QueueTime, catalog.PrefillTime, catalog.DecodeTime, catalog.InferenceTime, catalog.E2E}

func runBreakdown(ctx context.Context, env *fetch.Env, p fetch.Plan, q *Breakdown) (data.Frames, error) {
	// Every part of a row must average the same requests: unless grouped
	// by target, series keep their target (job) so latency.BreakdownBy sums
	// each group over the targets that have every part.
	split := ""
	if !slices.Contains(p.Scope.By, "target") {
		split = "job"
		p.Scope.By = append(slices.Clone(p.Scope.By), "target")
	}
	r := fetch.NewRun(ctx, env, p)
	p.Scope = r.ReExportScope(ctx, p.Scope) // a gateway's copies of configured engines count once
	r.ScopeNotices(ctx, breakdownSignals)
	if err := r.IdleNotices(ctx, breakdownSignals); err != nil {
		return nil, err
	}
	if err := r.ChangeNotices(ctx); err != nil {
		return nil, err
	}
	r.Notes.Add(analysis.Info, "breakdown shows mean time per stage (rate of _sum over rate of _count); quantiles do not add, see the latency query for tails. overhead = E2E − queue − inference: frontend time in vLLM V1, zero by identity in V0")
	switch q.Format {
	case "", "timeseries":
		in := map[catalog.Signal]latency.MeanInput{}
		for _, s := range breakdownSignals {
			hq, err := catalog.HistogramPromQL(s, p.Scope, p.Window)
			if err != nil {
				return nil, err
			}
			mi := latency.MeanInput{Scale: 1}
			if mi.Sum, err = r.Range(ctx, hq.Sum); err != nil {
				return nil, err
			}
			if mi.Count, err = r.Range(ctx, hq.Count); err != nil {
				return nil, err
			}
			in[s] = mi
		}
		series := latency.BreakdownBy(in, r.Steps, split, &r.Notes)
		return frames.TimeSeries(series, meta(r, nil)), nil
	case "table":
		// The table covers the whole selected range, evaluated at its real
		// end (not the step-aligned one, which can leave out the last step).
		window := p.To.Sub(p.From)
		if window < p.Window {
			window = p.Window
		}
		in := map[catalog.Signal]latency.InstantMean{}
		for _, s := range breakdownSignals {
			hq, err := catalog.HistogramPromQL(s, p.Scope, window)
			if err != nil {
				return nil, err
			}
			im := latency.InstantMean{Scale: 1}
			if im.Sum, err = r.Instant(ctx, hq.Sum, p.To); err != nil {
				return nil, err
			}
			if im.Count, err = r.Instant(ctx, hq.Count, p.To); err != nil {
				return nil, err
			}
			in[s] = im
		}
		rows := latency.BreakdownTableBy(in, window, split, &r.Notes)
		return frames.BreakdownTable(rows, meta(r, nil)), nil
	}
	return nil, badQueryf("format: %q is neither timeseries nor table", q.Format)
}
