package queries

import (
	"context"

	"github.com/grafana/grafana-plugin-sdk-go/data"
	"github.com/prometheus/common/model"

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

func runSaturation(ctx context.Context, env *fetch.Env, p fetch.Plan, q *Saturation) (data.Frames, error) {
	r := fetch.NewRun(ctx, env, p)
	p.Scope = r.ReExportScope(ctx, p.Scope) // a gateway's copies of configured engines count once
	r.ScopeNotices(ctx, []catalog.Signal{catalog.RequestsRunning, catalog.RequestsWaiting, catalog.KVCacheUsage, catalog.Preemptions, catalog.PrefixCacheHits})
	if err := r.ChangeNotices(ctx); err != nil {
		return nil, err
	}
	var in saturation.Input
	steps := []struct {
		dst  *model.Matrix
		expr func() (string, error)
	}{
		{&in.Running, func() (string, error) { return catalog.GaugePromQL(catalog.RequestsRunning, p.Scope, "sum") }},
		{&in.Waiting, func() (string, error) { return catalog.GaugePromQL(catalog.RequestsWaiting, p.Scope, "sum") }},
		// A usage ratio is averaged across engines and targets, never summed
		// (catalog.PartitionAgg); replicas and process splits count once.
		{&in.KVUsage, func() (string, error) { return catalog.GaugePromQL(catalog.KVCacheUsage, p.Scope, "avg") }},
	}
	for _, s := range steps {
		q, err := s.expr()
		if err != nil {
			return nil, err
		}
		if *s.dst, err = r.Range(ctx, q); err != nil {
			return nil, err
		}
	}
	// A counter that went backwards without a restart is left out of the windows that hold
	// it; NaN and ±Inf samples are named and left out where they reach the rate.
	for _, c := range []struct {
		s   catalog.Signal
		dst *model.Matrix
	}{{catalog.Preemptions, &in.Preemptions}, {catalog.PrefixCacheHits, &in.PrefixHits}, {catalog.PrefixCacheQueries, &in.PrefixQueries}} {
		m, sc, err := r.CounterRate(ctx, c.s, p.Scope, p.Window)
		if err != nil {
			return nil, err
		}
		*c.dst = m
		if err := r.LeaveOutBackwards(ctx, c.s, sc, p.Window, m); err != nil {
			r.Skipped("the check for "+string(c.s)+" counters going backwards", err)
		}
	}
	// The newer vLLM families, read only where a target in scope exports them.
	for _, s := range r.OptionalNotices(ctx, []catalog.Signal{catalog.RequestsWaitingByReason, catalog.PromptTokensCached, catalog.LoRARequestsInfo, catalog.LoRAAdaptersLoaded,
		catalog.EndpointQueue, catalog.PoolQueueStdDev, catalog.PoolKVStdDev}) {
		switch s {
		case catalog.EndpointQueue, catalog.PoolQueueStdDev, catalog.PoolKVStdDev:
			// the llm-d router's pool: per endpoint, and the pools' standard deviations
			by := []string{"name"}
			if s == catalog.EndpointQueue {
				by = append(by, "model_server_endpoint", "model_server_pod")
			}
			q, err := catalog.GaugePromQLBy(s, p.Scope, "sum", by...)
			if err != nil {
				return nil, err
			}
			m, err := r.Range(ctx, q)
			if err != nil {
				return nil, err
			}
			switch s {
			case catalog.EndpointQueue:
				in.EndpointQueue = m
			case catalog.PoolQueueStdDev:
				in.PoolQueueStdDev = m
			default:
				in.PoolKVStdDev = m
			}
		case catalog.LoRARequestsInfo:
			q, err := catalog.GaugePromQLBy(s, p.Scope, "max", "running_lora_adapters", "waiting_lora_adapters", "max_lora")
			if err != nil {
				return nil, err
			}
			if in.LoRAInfo, err = r.Range(ctx, q); err != nil {
				return nil, err
			}
		case catalog.LoRAAdaptersLoaded:
			q, err := catalog.GaugePromQLBy(s, p.Scope, "sum", "level")
			if err != nil {
				return nil, err
			}
			if in.LoRALoaded, err = r.Range(ctx, q); err != nil {
				return nil, err
			}
		case catalog.RequestsWaitingByReason:
			q, err := catalog.GaugePromQLBy(s, p.Scope, "sum", "reason")
			if err != nil {
				return nil, err
			}
			if in.WaitingByReason, err = r.Range(ctx, q); err != nil {
				return nil, err
			}
		case catalog.PromptTokensCached:
			var err error
			if in.PromptCached, err = optionalRate(ctx, r, p, s); err != nil {
				return nil, err
			}
			if in.PromptTokens, err = optionalRate(ctx, r, p, catalog.PromptTokens); err != nil {
				return nil, err
			}
		}
	}
	if err := r.PrefixHitRateGauge(ctx, &in); err != nil {
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
