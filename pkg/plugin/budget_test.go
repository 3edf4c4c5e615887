package plugin

import (
	"context"
	"testing"
	"time"

	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/inferscope/inferscope-llm-datasource/pkg/queries"
	"github.com/inferscope/inferscope-llm-datasource/pkg/source"
)

// fakeRange answers every range query with 3 series of one point per step.
type fakeRange struct{ calls int }

func (f *fakeRange) Query(context.Context, string, time.Time) (model.Value, error) {
	f.calls++
	return model.Vector{{}, {}}, nil
}

func (f *fakeRange) QueryRange(_ context.Context, _ string, start, end time.Time, step time.Duration) (model.Matrix, error) {
	f.calls++
	n := int(end.Sub(start)/step) + 1
	m := model.Matrix{}
	for s := 0; s < 3; s++ {
		m = append(m, &model.SampleStream{Values: make([]model.SamplePair, n)})
	}
	return m, nil
}

func (f *fakeRange) MetricNames(context.Context, string, time.Time, time.Time) ([]string, error) {
	f.calls++
	return []string{"a"}, nil
}

func (f *fakeRange) LabelValues(context.Context, string, string, time.Time, time.Time) ([]string, error) {
	f.calls++
	return []string{"a", "b"}, nil
}

// TestBudget: 3 series × 100 points = 300 points × series; a budget of 500
// takes one such range query and refuses the second with a sentence; a range
// of 1,000 steps is refused before it is evaluated; a canceled request
// evaluates nothing; without a budget nothing is counted.
func TestBudget(t *testing.T) {
	f := &fakeRange{}
	q := budgetQuerier{f}
	t0 := time.Unix(0, 0)
	ctx := withBudget(context.Background(), 500)
	_, err := q.QueryRange(ctx, "x", t0, t0.Add(99*time.Second), time.Second)
	require.NoError(t, err)
	_, err = q.QueryRange(ctx, "x", t0, t0.Add(99*time.Second), time.Second)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "this request reads more than 500 points × series")
	assert.True(t, queries.IsBadQuery(err), "a 400 from downstream, like any query over a limit")

	f.calls = 0
	_, err = q.QueryRange(withBudget(context.Background(), 500), "x", t0, t0.Add(999*time.Second), time.Second)
	require.Error(t, err)
	assert.Zero(t, f.calls, "refused before evaluating")

	cctx, cancel := context.WithCancel(withBudget(context.Background(), 500))
	cancel()
	_, err = q.Query(cctx, "x", t0)
	assert.ErrorIs(t, err, context.Canceled)
	_, err = q.LabelValues(cctx, "x", "", t0, t0)
	assert.ErrorIs(t, err, context.Canceled)
	assert.Zero(t, f.calls)

	for k := 0; k < 10; k++ {
		_, err = q.QueryRange(context.Background(), "x", t0, t0.Add(999*time.Second), time.Second)
		require.NoError(t, err, "no budget in the context: health checks, resources")
	}
}

// fakeBatch is fakeRange that also answers batches (source.RangeBatcher), counting batches.
type fakeBatch struct {
	fakeRange
	batches int
}

func (f *fakeBatch) QueryRanges(ctx context.Context, qs []string, start, end time.Time, step time.Duration) ([]model.Matrix, error) {
	f.batches++
	out := make([]model.Matrix, len(qs))
	for k, q := range qs {
		out[k], _ = f.QueryRange(ctx, q, start, end, step)
	}
	return out, nil
}

// TestBudgetKeepsBatches: a store that answers batches keeps that ability behind the budget
// (a remote one does not get it), and a batch counts like its queries: two queries of 3 series
// × 100 points (600) are over a budget of 500, and a batch whose first series alone would be
// over it is refused before it is evaluated.
func TestBudgetKeepsBatches(t *testing.T) {
	_, ok := budgeted(&fakeRange{}).(source.RangeBatcher)
	assert.False(t, ok, "no batches where the store has none")
	f := &fakeBatch{}
	b, ok := budgeted(f).(source.RangeBatcher)
	require.True(t, ok)
	t0 := time.Unix(0, 0)
	ms, err := b.QueryRanges(withBudget(context.Background(), 1000), []string{"x", "y"}, t0, t0.Add(99*time.Second), time.Second)
	require.NoError(t, err)
	assert.Len(t, ms, 2)
	_, err = b.QueryRanges(withBudget(context.Background(), 500), []string{"x", "y"}, t0, t0.Add(99*time.Second), time.Second)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "this request reads more than 500 points × series")
	assert.Equal(t, 2, f.batches)
	_, err = b.QueryRanges(withBudget(context.Background(), 500), []string{"x", "y", "z", "w", "v", "u"}, t0, t0.Add(99*time.Second), time.Second)
	require.Error(t, err)
	assert.Equal(t, 2, f.batches, "refused before evaluating")
}
