package queries

import (
	"context"

	"github.com/grafana/grafana-plugin-sdk-go/data"
	"github.com/prometheus/common/model"

	"github.com/inferscope/inferscope-llm-datasource/pkg/analysis/throughput"
	"github.com/inferscope/inferscope-llm-datasource/pkg/catalog"
	"github.com/inferscope/inferscope-llm-datasource/pkg/fetch"
	"github.com/inferscope/inferscope-llm-datasource/pkg/frames"
)

// Throughput is the throughput query: finished requests/s by finish reason, prompt and
// generation tokens/s. It has only the common fields.
type Throughput struct{ Common }

func runThroughput(ctx context.Context, env *fetch.Env, p fetch.Plan, q *Throughput) (data.Frames, error) {
	r := fetch.NewRun(ctx, env, p)
	p.Scope = r.ReExportScope(ctx, p.Scope) // a gateway's copies of configured engines count once
	r.ScopeNotices(ctx, []catalog.Signal{catalog.RequestsFinished, catalog.PromptTokens, catalog.GenerationTokens})
	if err := r.IdleNotices(ctx, []catalog.Signal{catalog.RequestsFinished}); err != nil {
		return nil, err
	}
	if err := r.ChangeNotices(ctx); err != nil {
		return nil, err
	}
	var in throughput.Input
	// A counter that went backwards without a restart is left out of the windows that hold
	// it; NaN and ±Inf samples are named and left out where they reach the rate.
	for _, c := range []struct {
		s     catalog.Signal
		dst   *model.Matrix
		extra []string
	}{{catalog.RequestsFinished, &in.Finished, []string{"finished_reason"}}, {catalog.PromptTokens, &in.PromptTokens, nil}, {catalog.GenerationTokens, &in.GenerationTokens, nil}} {
		m, sc, err := r.CounterRate(ctx, c.s, p.Scope, p.Window, c.extra...)
		if err != nil {
			return nil, err
		}
		*c.dst = m
		if err := r.LeaveOutBackwards(ctx, c.s, sc, p.Window, m, c.extra...); err != nil {
			r.Skipped("the check for "+string(c.s)+" counters going backwards", err)
		}
	}
	return frames.TimeSeries(throughput.Compute(in, r.Steps), meta(r, nil)), nil
}
