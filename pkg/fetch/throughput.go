package fetch

import (
	"context"

	"github.com/prometheus/common/model"

	"github.com/inferscope/inferscope-llm-datasource/pkg/analysis/throughput"
	"github.com/inferscope/inferscope-llm-datasource/pkg/catalog"
)

// throughputOptionals are the throughput query's signals read only where a target in scope
// exports them (OptionalNotices): the newer vLLM families (admission rejections, tool calls,
// KV transfers, prompt tokens by source, speculative decoding) and the llm-d router's error
// and SLO-violation counters.
var throughputOptionals = []catalog.Signal{catalog.Rejections, catalog.ToolCallInvocations,
	catalog.KVOffloadBytes, catalog.KVOffloadTime, catalog.NIXLTransferBytes, catalog.NIXLTransferTime,
	catalog.GatewayErrors, catalog.SLOViolations, catalog.PromptTokensBySource,
	catalog.SpecDecodeAccepted, catalog.SpecDecodeDraftTokens, catalog.SpecDecodeDrafts, catalog.SpecDecodeAcceptedPerPos}

// throughputRate is where an optional counter of the throughput query goes and the labels
// its rate keeps besides the groups.
type throughputRate struct {
	dst   func(in *throughput.Input) *model.Matrix
	extra []string
}

// throughputRates are the optional counters of throughputOptionals read as guarded rates
// (the NIXL histograms are read as means).
var throughputRates = map[catalog.Signal]throughputRate{
	catalog.Rejections:               {func(in *throughput.Input) *model.Matrix { return &in.Rejections }, []string{"reason"}},
	catalog.ToolCallInvocations:      {func(in *throughput.Input) *model.Matrix { return &in.ToolCalls }, []string{"mode", "outcome", "request_type"}},
	catalog.GatewayErrors:            {func(in *throughput.Input) *model.Matrix { return &in.GatewayErrors }, []string{"error_code"}},
	catalog.SLOViolations:            {func(in *throughput.Input) *model.Matrix { return &in.SLOViolations }, []string{"type"}},
	catalog.PromptTokensBySource:     {func(in *throughput.Input) *model.Matrix { return &in.PromptTokensBySource }, []string{"source"}},
	catalog.SpecDecodeAccepted:       {func(in *throughput.Input) *model.Matrix { return &in.SpecAccepted }, nil},
	catalog.SpecDecodeDraftTokens:    {func(in *throughput.Input) *model.Matrix { return &in.SpecDraftTokens }, nil},
	catalog.SpecDecodeDrafts:         {func(in *throughput.Input) *model.Matrix { return &in.SpecDrafts }, nil},
	catalog.SpecDecodeAcceptedPerPos: {func(in *throughput.Input) *model.Matrix { return &in.SpecAcceptedPerPos }, []string{"position"}},
	catalog.KVOffloadBytes:           {func(in *throughput.Input) *model.Matrix { return &in.KVOffloadBytes }, []string{"transfer_type"}},
	catalog.KVOffloadTime:            {func(in *throughput.Input) *model.Matrix { return &in.KVOffloadTime }, []string{"transfer_type"}},
}

// ThroughputInput reads the throughput query's input over scope sc: the guarded rates
// (GuardedRate) of finished requests by finish reason and of prompt and generation tokens,
// then the optional signals where a target exports them (throughputOptionals): counters as
// guarded rates, the NIXL transfer histograms as windowed means (catalog.MeanPromQL).
func (r *Run) ThroughputInput(ctx context.Context, sc catalog.Scope) (throughput.Input, error) {
	var in throughput.Input
	w := r.Plan.Window
	for _, c := range []struct {
		s     catalog.Signal
		dst   *model.Matrix
		extra []string
	}{{catalog.RequestsFinished, &in.Finished, []string{"finished_reason"}}, {catalog.PromptTokens, &in.PromptTokens, nil}, {catalog.GenerationTokens, &in.GenerationTokens, nil}} {
		m, err := r.GuardedRate(ctx, c.s, sc, w, c.extra...)
		if err != nil {
			return in, err
		}
		*c.dst = m
	}
	for _, s := range r.OptionalNotices(ctx, throughputOptionals) {
		var dst *model.Matrix
		var err error
		switch s {
		case catalog.NIXLTransferBytes, catalog.NIXLTransferTime:
			dst = &in.NIXLSecondsPerTransfer
			if s == catalog.NIXLTransferBytes {
				dst = &in.NIXLBytesPerTransfer
			}
			var q string
			if q, err = catalog.MeanPromQL(s, sc, w); err == nil {
				*dst, err = r.Range(ctx, q)
			}
		default:
			if c, ok := throughputRates[s]; ok {
				*c.dst(&in), err = r.GuardedRate(ctx, s, sc, w, c.extra...)
			}
		}
		if err != nil {
			return in, err
		}
	}
	return in, nil
}
