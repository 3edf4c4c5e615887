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
// generation tokens/s; where a target in scope exports them, vLLM's admission rejections/s by
// reason (signal rejections), tool-call parser invocations/s by outcome, and the KV transfer
// breakdown (output="kv_transfer": offload bytes/s and transfer seconds/s by transfer type,
// NIXL bytes and seconds per transfer), and speculative decoding (output="spec_decode":
// accepted and draft tok/s, drafts/s, the draft acceptance rate, the mean acceptance length
// and the acceptance rate per draft position; throughput.OutputSpecDecode). It has only the
// common fields.
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
	// The newer vLLM families and the llm-d router's error and SLO-violation counters, read only
	// where a target in scope exports them.
	on := r.OptionalNotices(ctx, []catalog.Signal{catalog.Rejections, catalog.ToolCallInvocations,
		catalog.KVOffloadBytes, catalog.KVOffloadTime, catalog.NIXLTransferBytes, catalog.NIXLTransferTime,
		catalog.GatewayErrors, catalog.SLOViolations, catalog.PromptTokensBySource,
		catalog.SpecDecodeAccepted, catalog.SpecDecodeDraftTokens, catalog.SpecDecodeDrafts, catalog.SpecDecodeAcceptedPerPos})
	for _, s := range on {
		var err error
		switch s {
		case catalog.Rejections:
			in.Rejections, err = optionalRate(ctx, r, p, s, "reason")
		case catalog.ToolCallInvocations:
			in.ToolCalls, err = optionalRate(ctx, r, p, s, "mode", "outcome", "request_type")
		case catalog.GatewayErrors:
			in.GatewayErrors, err = optionalRate(ctx, r, p, s, "error_code")
		case catalog.SLOViolations:
			in.SLOViolations, err = optionalRate(ctx, r, p, s, "type")
		case catalog.PromptTokensBySource:
			in.PromptTokensBySource, err = optionalRate(ctx, r, p, s, "source")
		case catalog.SpecDecodeAccepted:
			in.SpecAccepted, err = optionalRate(ctx, r, p, s)
		case catalog.SpecDecodeDraftTokens:
			in.SpecDraftTokens, err = optionalRate(ctx, r, p, s)
		case catalog.SpecDecodeDrafts:
			in.SpecDrafts, err = optionalRate(ctx, r, p, s)
		case catalog.SpecDecodeAcceptedPerPos:
			in.SpecAcceptedPerPos, err = optionalRate(ctx, r, p, s, "position")
		case catalog.KVOffloadBytes:
			in.KVOffloadBytes, err = optionalRate(ctx, r, p, s, "transfer_type")
		case catalog.KVOffloadTime:
			in.KVOffloadTime, err = optionalRate(ctx, r, p, s, "transfer_type")
		case catalog.NIXLTransferBytes, catalog.NIXLTransferTime:
			var q string
			if q, err = catalog.MeanPromQL(s, p.Scope, p.Window); err == nil {
				m, rerr := r.Range(ctx, q)
				err = rerr
				if s == catalog.NIXLTransferBytes {
					in.NIXLBytesPerTransfer = m
				} else {
					in.NIXLSecondsPerTransfer = m
				}
			}
		}
		if err != nil {
			return nil, err
		}
	}
	return frames.TimeSeries(throughput.Compute(in, r.Steps), meta(r, nil)), nil
}

// optionalRate is the counter rate of an optional signal by the extra labels, with the
// backwards-counter guard of the other counters.
func optionalRate(ctx context.Context, r *fetch.Run, p fetch.Plan, s catalog.Signal, extra ...string) (model.Matrix, error) {
	m, sc, err := r.CounterRate(ctx, s, p.Scope, p.Window, extra...)
	if err != nil {
		return nil, err
	}
	if err := r.LeaveOutBackwards(ctx, s, sc, p.Window, m, extra...); err != nil {
		r.Skipped("the check for "+string(s)+" counters going backwards", err)
	}
	return m, nil
}
