package fetch

import (
	"context"

	"github.com/prometheus/common/model"

	"github.com/inferscope/inferscope-llm-datasource/pkg/analysis/saturation"
	"github.com/inferscope/inferscope-llm-datasource/pkg/catalog"
)

// saturationOptionals are the saturation query's signals read only where a target in scope
// exports them (OptionalNotices): the newer vLLM families and the llm-d router's pool gauges.
var saturationOptionals = []catalog.Signal{catalog.RequestsWaitingByReason, catalog.PromptTokensCached, catalog.LoRARequestsInfo, catalog.LoRAAdaptersLoaded,
	catalog.EndpointQueue, catalog.PoolQueueStdDev, catalog.PoolKVStdDev}

// SaturationInput reads the saturation query's input over scope sc: the running and waiting
// requests (summed) and the KV-cache usage (averaged across engines and targets, never summed:
// catalog.PartitionAgg), the guarded rates of preemptions and prefix-cache hits and queries
// (GuardedRate), the optional families where a target exports them (saturationOptionals), and
// V0's prefix-cache hit-rate gauge (PrefixHitRateGauge).
func (r *Run) SaturationInput(ctx context.Context, sc catalog.Scope) (saturation.Input, error) {
	var in saturation.Input
	for _, g := range []struct {
		dst *model.Matrix
		s   catalog.Signal
		agg string
	}{{&in.Running, catalog.RequestsRunning, "sum"}, {&in.Waiting, catalog.RequestsWaiting, "sum"}, {&in.KVUsage, catalog.KVCacheUsage, "avg"}} {
		q, err := catalog.GaugePromQL(g.s, sc, g.agg)
		if err != nil {
			return in, err
		}
		if *g.dst, err = r.Range(ctx, q); err != nil {
			return in, err
		}
	}
	for _, c := range []struct {
		s   catalog.Signal
		dst *model.Matrix
	}{{catalog.Preemptions, &in.Preemptions}, {catalog.PrefixCacheHits, &in.PrefixHits}, {catalog.PrefixCacheQueries, &in.PrefixQueries}} {
		m, err := r.GuardedRate(ctx, c.s, sc, r.Plan.Window)
		if err != nil {
			return in, err
		}
		*c.dst = m
	}
	for _, s := range r.OptionalNotices(ctx, saturationOptionals) {
		if err := r.saturationOptional(ctx, s, sc, &in); err != nil {
			return in, err
		}
	}
	return in, r.PrefixHitRateGauge(ctx, &in)
}

// saturationOptional reads one optional signal of SaturationInput into in.
func (r *Run) saturationOptional(ctx context.Context, s catalog.Signal, sc catalog.Scope, in *saturation.Input) error {
	var dst *model.Matrix
	var agg string
	var by []string
	switch s {
	case catalog.EndpointQueue:
		// the llm-d router's pool: per endpoint, and the pools' standard deviations
		dst, agg, by = &in.EndpointQueue, "sum", []string{"name", "model_server_endpoint", "model_server_pod"}
	case catalog.PoolQueueStdDev:
		dst, agg, by = &in.PoolQueueStdDev, "sum", []string{"name"}
	case catalog.PoolKVStdDev:
		dst, agg, by = &in.PoolKVStdDev, "sum", []string{"name"}
	case catalog.LoRARequestsInfo:
		dst, agg, by = &in.LoRAInfo, "max", []string{"running_lora_adapters", "waiting_lora_adapters", "max_lora"}
	case catalog.LoRAAdaptersLoaded:
		dst, agg, by = &in.LoRALoaded, "sum", []string{"level"}
	case catalog.RequestsWaitingByReason:
		dst, agg, by = &in.WaitingByReason, "sum", []string{"reason"}
	case catalog.PromptTokensCached:
		var err error
		if in.PromptCached, err = r.GuardedRate(ctx, s, sc, r.Plan.Window); err != nil {
			return err
		}
		in.PromptTokens, err = r.GuardedRate(ctx, catalog.PromptTokens, sc, r.Plan.Window)
		return err
	default:
		return nil
	}
	q, err := catalog.GaugePromQLBy(s, sc, agg, by...)
	if err != nil {
		return err
	}
	*dst, err = r.Range(ctx, q)
	return err
}
