package fetch

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

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
