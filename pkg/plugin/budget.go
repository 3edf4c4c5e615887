package plugin

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/prometheus/common/model"

	"github.com/inferscope/inferscope-llm-datasource/pkg/queries"
	"github.com/inferscope/inferscope-llm-datasource/pkg/source"
)

// DefaultQueryBudget is the most points × series one QueryData request may
// read from the store or the remote server, all its queries and their
// sub-queries together: 5,000,000 (about 200 MB of decoded samples). A
// dashboard panel over 7 days at its usual interval reads a few hundred
// thousand. INFERSCOPE_QUERY_BUDGET overrides it.
const DefaultQueryBudget = 5_000_000

const envQueryBudget = "INFERSCOPE_QUERY_BUDGET"

// queryBudget is the process's per-request budget.
var queryBudget = int64(envInt(envQueryBudget, DefaultQueryBudget))

type budgetKey struct{}

// budget is what a request may still read.
type budget struct {
	limit int64
	used  atomic.Int64
}

// withBudget gives the request carried by ctx a budget of limit points ×
// series.
func withBudget(ctx context.Context, limit int64) context.Context {
	return context.WithValue(ctx, budgetKey{}, &budget{limit: limit})
}

// spend counts n points × series against ctx's budget (none: no limit),
// and refuses with a sentence once the request is over it.
func spend(ctx context.Context, n int64) error {
	b, _ := ctx.Value(budgetKey{}).(*budget)
	if b == nil || n <= 0 {
		return nil
	}
	if used := b.used.Add(n); used > b.limit {
		return queries.Badf("this request reads more than %d points × series (the plugin's budget per request, %s; points are the steps of the time range, series the matching series): narrow the time range, raise the interval or select fewer targets", b.limit, envQueryBudget)
	}
	return nil
}

// budgetQuerier is the query path's Querier: it checks the context before
// every sub-query (a viewer who gave up stops the rest of the query) and
// counts what each returns against the request's budget.
type budgetQuerier struct{ q source.Querier }

func (b budgetQuerier) Query(ctx context.Context, query string, ts time.Time) (model.Value, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	v, err := b.q.Query(ctx, query, ts)
	if err != nil {
		return v, err
	}
	switch x := v.(type) {
	case model.Vector:
		err = spend(ctx, int64(len(x)))
	case model.Matrix:
		err = spend(ctx, matrixPoints(x))
	}
	if err != nil {
		return nil, err
	}
	return v, nil
}

func (b budgetQuerier) QueryRange(ctx context.Context, query string, start, end time.Time, step time.Duration) (model.Matrix, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	// One series of the range at least: refuse before evaluating when even
	// that is over the budget.
	if step > 0 && end.After(start) {
		if err := checkAhead(ctx, int64(end.Sub(start)/step)+1); err != nil {
			return nil, err
		}
	}
	m, err := b.q.QueryRange(ctx, query, start, end, step)
	if err != nil {
		return m, err
	}
	if err := spend(ctx, matrixPoints(m)); err != nil {
		return nil, err
	}
	return m, nil
}

func (b budgetQuerier) MetricNames(ctx context.Context, matchers string, start, end time.Time) ([]string, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	out, err := b.q.MetricNames(ctx, matchers, start, end)
	if err == nil {
		err = spend(ctx, int64(len(out)))
	}
	return out, err
}

func (b budgetQuerier) LabelValues(ctx context.Context, name, matchers string, start, end time.Time) ([]string, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	out, err := b.q.LabelValues(ctx, name, matchers, start, end)
	if err == nil {
		err = spend(ctx, int64(len(out)))
	}
	return out, err
}

// checkAhead refuses when n more points would go over ctx's budget, without
// spending them.
func checkAhead(ctx context.Context, n int64) error {
	b, _ := ctx.Value(budgetKey{}).(*budget)
	if b == nil || b.used.Load()+n <= b.limit {
		return nil
	}
	return spend(ctx, n)
}

// matrixPoints is the points of every series of m (floats and histograms).
func matrixPoints(m model.Matrix) int64 {
	var n int64
	for _, s := range m {
		n += int64(len(s.Values) + len(s.Histograms))
	}
	return n
}

// String names the budget for logs.
func (b *budget) String() string { return fmt.Sprintf("%d of %d", b.used.Load(), b.limit) }

// budgeted wraps q in the request's budget (budgetQuerier); a store that evaluates range
// queries in batches (source.RangeBatcher: the embedded TSDB's one-pass evaluator) keeps
// that ability, with the same checks per query of the batch.
func budgeted(q source.Querier) source.Querier {
	if b, ok := q.(source.RangeBatcher); ok {
		return budgetBatcher{budgetQuerier{q}, b}
	}
	return budgetQuerier{q}
}

// budgetBatcher is budgetQuerier over a source.RangeBatcher.
type budgetBatcher struct {
	budgetQuerier
	b source.RangeBatcher
}

// QueryRanges implements source.RangeBatcher: refused before evaluating when one series of
// each query is already over the budget, and every matrix returned counted against it.
func (b budgetBatcher) QueryRanges(ctx context.Context, queries []string, start, end time.Time, step time.Duration) ([]model.Matrix, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if step > 0 && end.After(start) {
		if err := checkAhead(ctx, int64(len(queries))*(int64(end.Sub(start)/step)+1)); err != nil {
			return nil, err
		}
	}
	ms, err := b.b.QueryRanges(ctx, queries, start, end, step)
	if err != nil {
		return nil, err
	}
	for _, m := range ms {
		if err := spend(ctx, matrixPoints(m)); err != nil {
			return nil, err
		}
	}
	return ms, nil
}
