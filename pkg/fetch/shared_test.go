package fetch

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/inferscope/inferscope-llm-datasource/pkg/settings"
	"github.com/inferscope/inferscope-llm-datasource/pkg/source"
)

// TestSharedWorkOnceForOneRefresh: eight panels of one refresh asking for the same key at
// once compute it once, and each records the PromQL it ran; a request after MaxAge, one under
// other settings (another generation) and one after a failure compute again.
func TestSharedWorkOnceForOneRefresh(t *testing.T) {
	s, err := settings.Load([]byte(`{"targets":[{"name":"a","url":"http://a:8000/metrics"}]}`), nil)
	require.NoError(t, err)
	now := time.Unix(1000, 0)
	var mu sync.Mutex
	clock := func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	shared := NewSharedWork(2 * time.Second)
	shared.Now = clock
	env := &Env{Settings: &s, Querier: &countingQuerier{}, Shared: shared, SettingsGeneration: "uid@1"}
	var computed atomic.Int32
	release := make(chan struct{})
	fn := func(ctx context.Context, sub *Run) (any, error) {
		computed.Add(1)
		<-release
		source.NotesFrom(ctx).Add("partial data")
		_, err := sub.Exec(ctx, Query{PromQL: "up", To: now})
		return 42, err
	}
	var wg sync.WaitGroup
	runs := make([]*Run, 8)
	for k := range runs {
		ctx, _ := source.WithNotes(context.Background())
		runs[k] = NewRun(ctx, env, Plan{})
		wg.Add(1)
		go func() {
			defer wg.Done()
			v, err := runs[k].shared(ctx, "k", fn)
			assert.NoError(t, err)
			assert.Equal(t, 42, v)
		}()
	}
	time.Sleep(50 * time.Millisecond)
	close(release)
	wg.Wait()
	assert.EqualValues(t, 1, computed.Load(), "one flight for one refresh")
	for _, r := range runs {
		assert.Equal(t, []string{"up"}, r.Queries(), "every panel's executed PromQL names what it used")
		assert.Equal(t, []string{"partial data"}, r.ServerNotes(), "and shows the server's warnings")
	}

	// Within MaxAge: reused.
	_, err = NewRun(context.Background(), env, Plan{}).shared(context.Background(), "k", fn)
	require.NoError(t, err)
	assert.EqualValues(t, 1, computed.Load())
	// Other settings (the instance is built again with a new generation): never reused.
	other := *env
	other.SettingsGeneration = "uid@2"
	_, err = NewRun(context.Background(), &other, Plan{}).shared(context.Background(), "k", fn)
	require.NoError(t, err)
	assert.EqualValues(t, 2, computed.Load(), "a settings change computes again")
	// After MaxAge: computed again.
	mu.Lock()
	now = now.Add(3 * time.Second)
	mu.Unlock()
	_, err = NewRun(context.Background(), env, Plan{}).shared(context.Background(), "k", fn)
	require.NoError(t, err)
	assert.EqualValues(t, 3, computed.Load(), "a later refresh computes again")
	// A failure is not kept.
	boom := errors.New("boom")
	_, err = NewRun(context.Background(), env, Plan{}).shared(context.Background(), "f", func(context.Context, *Run) (any, error) { computed.Add(1); return nil, boom })
	require.ErrorIs(t, err, boom)
	_, err = NewRun(context.Background(), env, Plan{}).shared(context.Background(), "f", func(context.Context, *Run) (any, error) { computed.Add(1); return 1, nil })
	require.NoError(t, err)
	assert.EqualValues(t, 5, computed.Load())
}

// batchingQuerier answers batches (source.RangeBatcher) with one series per query whose value
// is the query's length, counting batches and the queries in them; single range queries are
// counted by countingQuerier.
type batchingQuerier struct {
	countingQuerier
	mu      sync.Mutex
	batches int
	asked   []string
}

func (b *batchingQuerier) QueryRanges(_ context.Context, qs []string, start, _ time.Time, _ time.Duration) ([]model.Matrix, error) {
	b.mu.Lock()
	b.batches++
	b.asked = append(b.asked, qs...)
	b.mu.Unlock()
	out := make([]model.Matrix, len(qs))
	for k, q := range qs {
		out[k] = model.Matrix{{Metric: model.Metric{"q": model.LabelValue(q)}, Values: []model.SamplePair{{Timestamp: model.TimeFromUnixNano(start.UnixNano()), Value: model.SampleValue(len(q))}}}}
	}
	return out, nil
}

// TestRangesBatchSharedPerQuery: panels asking for the same batch at once evaluate it once;
// each records the batch's PromQL; a later single read of one of its queries (a heatmap's) is
// the shared answer, not a new read; each caller gets its own copy; without shared work the
// batch still goes out as one.
func TestRangesBatchSharedPerQuery(t *testing.T) {
	s, err := settings.Load([]byte(`{"targets":[{"name":"a","url":"http://a:8000/metrics"}]}`), nil)
	require.NoError(t, err)
	q := &batchingQuerier{}
	env := &Env{Settings: &s, Querier: q, Shared: NewSharedWork(time.Minute), SettingsGeneration: "g"}
	p := Plan{Start: time.Unix(600, 0), End: time.Unix(1200, 0), Step: time.Minute}
	qs := []string{"sum(rate(x_sum[5m]))", "sum(rate(x_count[5m]))", "sum(resets(x_count[5m]))"}
	var wg sync.WaitGroup
	runs := make([]*Run, 4)
	got := make([][]model.Matrix, len(runs))
	for k := range runs {
		runs[k] = NewRun(context.Background(), env, p)
		wg.Add(1)
		go func() {
			defer wg.Done()
			var err error
			got[k], err = runs[k].Ranges(context.Background(), qs)
			assert.NoError(t, err)
		}()
	}
	wg.Wait()
	assert.Equal(t, 1, q.batches, "one batch for the panels of one refresh")
	for k, r := range runs {
		assert.Equal(t, qs, r.Queries())
		require.Len(t, got[k], 3)
		assert.EqualValues(t, len(qs[1]), got[k][1][0].Values[0].Value)
	}
	got[0][0][0].Values[0].Value = -1
	assert.EqualValues(t, len(qs[0]), got[1][0][0].Values[0].Value, "each caller has its own copy")

	one := NewRun(context.Background(), env, p)
	m, err := one.Range(context.Background(), qs[2])
	require.NoError(t, err)
	assert.EqualValues(t, len(qs[2]), m[0].Values[0].Value)
	assert.Equal(t, 1, q.batches)
	assert.Zero(t, q.n, "the lone read found the batch's answer")
	assert.Equal(t, []string{qs[2]}, one.Queries())

	alone := NewRun(context.Background(), &Env{Settings: &s, Querier: q}, p)
	_, err = alone.Ranges(context.Background(), qs)
	require.NoError(t, err)
	assert.Equal(t, 2, q.batches)
	assert.Equal(t, qs, alone.Queries())
}
