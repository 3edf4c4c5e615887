package fetch

import (
	"context"
	"fmt"
	"strings"

	"github.com/prometheus/common/model"

	"github.com/inferscope/inferscope-llm-datasource/pkg/source"
)

// Ranges runs range queries over the plan's grid (as Range does, one matrix per query, in
// order). Where the store evaluates several queries together (source.RangeBatcher: the
// embedded TSDB, whose one-pass evaluator reads each selector the queries share once and
// computes their rate/delta/resets per step in Go), they go to it as one batch; otherwise
// they run one by one, parallelReads at a time (remote mode: as many round trips at once).
//
// The recorded PromQL is each query's own text, in order, as Range records it: a batch returns
// what the engine returns for that text (source.QueryRanges; a query outside the one-pass shape
// is run by the engine itself). With the panels' shared work (Env.Shared), each query is shared
// under the key Range uses, so a panel reading one of them alone finds it, and a batch computes
// only when one of its queries is missing.
func (r *Run) Ranges(ctx context.Context, qs []string) ([]model.Matrix, error) {
	out := make([]model.Matrix, len(qs))
	b, ok := r.Env.Querier.(source.RangeBatcher)
	if len(qs) == 0 {
		return out, nil
	}
	if !ok {
		err := r.parallelReads(len(qs), func(k int) error {
			m, err := r.Range(ctx, qs[k])
			out[k] = m
			return err
		})
		if err != nil {
			return nil, err
		}
		return out, nil
	}
	batch := func(ctx context.Context) ([]model.Matrix, error) {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		ms, err := b.QueryRanges(ctx, qs, r.Plan.Start, r.Plan.End, r.Plan.Step)
		if err != nil {
			return nil, fmt.Errorf("PromQL %s: %w", strings.Join(qs, "; "), err)
		}
		return ms, nil
	}
	if r.Env.Shared == nil {
		m, err := batch(ctx)
		if err != nil {
			return nil, err
		}
		r.record(qs)
		for k, q := range qs {
			out[k] = r.bounded(q, m[k])
		}
		return out, nil
	}
	// The batch is itself shared (it records no PromQL: each query's entry does), so the
	// panels asking for the same queries at once evaluate it once.
	key := "ranges\x00" + r.rangeKey(strings.Join(qs, "\x00"))
	for k, q := range qs {
		v, err := r.shared(ctx, r.rangeKey(q), func(ctx context.Context, sub *Run) (any, error) {
			m, err := sub.shared(ctx, key, func(ctx context.Context, _ *Run) (any, error) { return batch(ctx) })
			if err != nil {
				return nil, err
			}
			sub.record([]string{q})
			return m.([]model.Matrix)[k], nil
		})
		if err != nil {
			return nil, err
		}
		// The shared answer is unfolded and each caller gets its own copy, as sharedRange.
		out[k] = r.bounded(q, cloneMatrix(v.(model.Matrix)))
	}
	return out, nil
}

// bounded is m with the overflow tenants folded by the run's plan (what Exec does to each
// answer unless the run is unbounded).
func (r *Run) bounded(q string, m model.Matrix) model.Matrix {
	if r.unbounded {
		return m
	}
	folded, _ := AsMatrix(r.boundTenants(q, m), nil)
	return folded
}
