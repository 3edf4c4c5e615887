package queries

import (
	"context"

	"github.com/grafana/grafana-plugin-sdk-go/data"

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

// runThroughput reads the throughput input (fetch.Run.ThroughputInput: guarded counter rates,
// the optional families where a target exports them) and computes the series
// (throughput.Compute).
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
	in, err := r.ThroughputInput(ctx, p.Scope)
	if err != nil {
		return nil, err
	}
	return frames.TimeSeries(throughput.Compute(in, r.Steps), meta(r, nil)), nil
}
