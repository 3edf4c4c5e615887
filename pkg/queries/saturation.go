package queries

import (
	"context"

	"github.com/grafana/grafana-plugin-sdk-go/data"

	"github.com/inferscope/inferscope-llm-datasource/pkg/analysis/saturation"
	"github.com/inferscope/inferscope-llm-datasource/pkg/catalog"
	"github.com/inferscope/inferscope-llm-datasource/pkg/fetch"
	"github.com/inferscope/inferscope-llm-datasource/pkg/frames"
)

// Saturation is the saturation query: running and waiting requests, KV-cache usage,
// preemptions/s and the prefix-cache hit ratio; where a target exports them (vLLM 0.13+), the
// waiting requests split by reason (capacity, deferred) and the token-weighted prefix-cache
// hit ratio next to the block-level one. It has only the common fields.
type Saturation struct{ Common }

// runSaturation reads the saturation input (fetch.Run.SaturationInput), adds the sanity
// notices of the request gauges and computes the series (saturation.Compute).
func runSaturation(ctx context.Context, env *fetch.Env, p fetch.Plan, q *Saturation) (data.Frames, error) {
	r := fetch.NewRun(ctx, env, p)
	p.Scope = r.ReExportScope(ctx, p.Scope) // a gateway's copies of configured engines count once
	r.ScopeNotices(ctx, []catalog.Signal{catalog.RequestsRunning, catalog.RequestsWaiting, catalog.KVCacheUsage, catalog.Preemptions, catalog.PrefixCacheHits})
	if err := r.ChangeNotices(ctx); err != nil {
		return nil, err
	}
	in, err := r.SaturationInput(ctx, p.Scope)
	if err != nil {
		return nil, err
	}
	if err := r.ImpossibleNotices(ctx, []catalog.Signal{catalog.RequestsRunning, catalog.RequestsWaiting, catalog.KVCacheUsage}); err != nil {
		r.Skipped("naming the gauge values that cannot be true", err)
	}
	if err := r.FrozenNotices(ctx); err != nil {
		r.Skipped("the frozen-gauge check", err)
	}
	return frames.TimeSeries(saturation.Compute(in, r.Steps), meta(r, nil)), nil
}
