package fetch

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The cache computes a key once for concurrent requests, serves it until TwinTTL, drops
// a failed computation, and lets a waiter leave when its context ends.
func TestCapacityCacheComputesOnce(t *testing.T) {
	c := NewTwins(time.Hour, nil)
	now := time.Unix(1_800_000_000, 0)
	var calls atomic.Int32
	release := make(chan struct{})
	slow := func(context.Context) (any, error) { calls.Add(1); <-release; return 42, nil }
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			v, err := c.Get(context.Background(), "k", now, slow)
			assert.NoError(t, err)
			assert.Equal(t, 42, v)
		}()
	}
	time.Sleep(50 * time.Millisecond)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := c.Get(ctx, "k", now, slow)
	assert.ErrorIs(t, err, context.Canceled, "a waiter whose request ended leaves")
	close(release)
	wg.Wait()
	assert.Equal(t, int32(1), calls.Load(), "one computation for concurrent requests")
	v, _ := c.Get(context.Background(), "k", now.Add(TwinTTL-time.Second), slow)
	assert.Equal(t, 42, v)
	assert.Equal(t, int32(1), calls.Load(), "served from the cache before the TTL")
	_, _ = c.Get(context.Background(), "k", now.Add(TwinTTL), slow)
	assert.Equal(t, int32(2), calls.Load(), "computed again at the TTL")
	_, err = c.Get(context.Background(), "bad", now, func(context.Context) (any, error) { return nil, errors.New("no") })
	require.Error(t, err)
	_, err = c.Get(context.Background(), "bad", now, func(context.Context) (any, error) { return 1, nil })
	assert.NoError(t, err, "a failed computation is not kept")
}

// A detached computation outlives the query whose answer deadline ended: that query gets
// the deadline's error at once, the computation finishes on its own context, and the next
// query finds its value; a later request that is cancelled does not cancel it either (the
// first one left it for a refresh).
// A panic in it is an error, not the end of the plugin.
func TestCapacityCacheDetachedOutlivesTheWait(t *testing.T) {
	c := NewTwins(time.Hour, nil)
	now := time.Unix(1_800_000_000, 0)
	release := make(chan struct{})
	var sawCancel atomic.Bool
	slow := func(ctx context.Context) (any, error) {
		select {
		case <-release:
		case <-ctx.Done():
			sawCancel.Store(true)
			return nil, ctx.Err()
		}
		return 7, nil
	}
	wait, cancel := answerDeadline(context.Background(), 20*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := c.GetDetached(wait, "k", now, slow)
	assert.ErrorIs(t, err, context.DeadlineExceeded)
	assert.True(t, TwinPending(context.Background(), err), "the request goes on: pending")
	assert.Less(t, time.Since(start), 5*time.Second, "the query answers at its deadline")
	gone, cancelGone := context.WithCancel(context.Background())
	cancelGone()
	_, err = c.GetDetached(gone, "k", now, slow)
	assert.ErrorIs(t, err, context.Canceled)
	assert.False(t, TwinPending(gone, err), "a cancelled request is no pending row")
	close(release)
	v, err := c.GetDetached(context.Background(), "k", now, func(context.Context) (any, error) { return 0, errors.New("computed twice") })
	require.NoError(t, err)
	assert.Equal(t, 7, v, "the next query finds the detached value")
	assert.False(t, sawCancel.Load(), "neither the deadline nor the cancelled request stopped it")

	_, err = c.GetDetached(context.Background(), "boom", now, func(context.Context) (any, error) { panic("bad twin") })
	require.Error(t, err)
	assert.Contains(t, err.Error(), "bad twin")
}

// blockedSim is a detached computation that runs until released or cancelled, counting
// those running and those that saw their context cancelled.
type blockedSim struct {
	release            chan struct{}
	running, cancelled atomic.Int32
}

func (b *blockedSim) compute(ctx context.Context) (any, error) {
	b.running.Add(1)
	defer b.running.Add(-1)
	select {
	case <-b.release:
		return 1, nil
	case <-ctx.Done():
		b.cancelled.Add(1)
		return nil, ctx.Err()
	}
}

// waitFor waits until cond holds: a state, not a duration (the deadline only stops a broken test).
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal(what)
		}
		time.Sleep(time.Millisecond)
	}
}

// 100 capacity requests with different parameters, each cancelled while its simulation
// runs: every simulation nobody waits for is cancelled and its entry dropped, so no work is
// left behind (checked failing before: the 100 went on, up to 10 minutes each, and stayed
// in the cache). A request that was already cancelled starts nothing.
func TestCapacityCacheDropsWorkOfCancelledRequests(t *testing.T) {
	c := NewTwins(time.Hour, nil)
	now := time.Unix(1_800_000_000, 0)
	b := &blockedSim{release: make(chan struct{})}
	defer close(b.release)
	var wg sync.WaitGroup
	cancels := make([]context.CancelFunc, 100)
	for k := range 100 {
		ctx, cancel := context.WithCancel(context.Background())
		cancels[k] = cancel
		wg.Add(1)
		go func() {
			defer wg.Done()
			wait, cw := answerDeadline(ctx, time.Hour)
			defer cw()
			_, err := c.GetDetached(wait, fmt.Sprintf("twin|%d", k), now, b.compute)
			assert.ErrorIs(t, err, context.Canceled)
		}()
	}
	waitFor(t, "100 entries", func() bool { return c.len() == 100 })
	for _, cancel := range cancels {
		cancel()
	}
	wg.Wait()
	waitFor(t, "every simulation stopped", func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		return c.detached == 0
	})
	assert.Equal(t, int32(0), b.running.Load(), "nothing runs that nobody waits for")
	assert.Equal(t, 0, c.len(), "their entries are dropped")

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := c.GetDetached(ctx, "late", now, b.compute)
	assert.ErrorIs(t, err, context.Canceled)
	assert.Equal(t, 0, c.len(), "a request already gone starts no simulation")
}

// A data source holds at most its queue's limit of detached simulations waiting or running;
// the next is refused with a sentence naming the limit, another data source (another
// instance's cache, sharing the process's slots) is not affected, and the bound frees as
// they finish (checked failing before: the line grew without bound).
func TestCapacityCacheBoundsEachSource(t *testing.T) {
	slots := NewTwinSlots(4)
	c, other := NewTwins(time.Hour, slots), NewTwins(time.Hour, slots)
	c.queue = 3
	now := time.Unix(1_800_000_000, 0)
	b := &blockedSim{release: make(chan struct{})}
	for k := range 3 {
		wait, cancel := answerDeadline(context.Background(), 0)
		_, err := c.GetDetached(wait, fmt.Sprintf("k%d", k), now, b.compute)
		cancel()
		assert.ErrorIs(t, err, context.DeadlineExceeded, "left for a refresh")
	}
	_, err := c.GetDetached(context.Background(), "k3", now, b.compute)
	require.Error(t, err)
	assert.Equal(t, "capacity: this data source already has 3 twin simulations waiting or running (the limit per data source); retry when they have finished", err.Error())
	wait, cancel := answerDeadline(context.Background(), 0)
	_, err = other.GetDetached(wait, "o1", now, b.compute)
	cancel()
	assert.ErrorIs(t, err, context.DeadlineExceeded, "another data source still starts one")
	close(b.release)
	waitFor(t, "the flood's simulations finish", func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		return c.detached == 0
	})
	v, err := c.GetDetached(context.Background(), "k3", now, func(context.Context) (any, error) { return 9, nil })
	require.NoError(t, err)
	assert.Equal(t, 9, v)
}

// The cap holds with unfinished entries: past max, the oldest computation still running is
// evicted and cancelled (checked failing before: unfinished entries were never evicted and
// the map grew past the cap).
func TestCapacityCacheEvictsUnfinished(t *testing.T) {
	c := NewTwins(time.Hour, nil)
	c.max = 8
	now := time.Unix(1_800_000_000, 0)
	b := &blockedSim{release: make(chan struct{})}
	defer close(b.release)
	for k := range 20 {
		wait, cancel := answerDeadline(context.Background(), 0)
		_, _ = c.GetDetached(wait, fmt.Sprintf("k%02d", k), now.Add(time.Duration(k)*time.Second), b.compute)
		cancel()
		assert.LessOrEqual(t, c.len(), 8)
	}
	waitFor(t, "the evicted 12 end (cancelled running or waiting for a slot)", func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		return c.detached == 8
	})
	c.mu.Lock()
	defer c.mu.Unlock()
	assert.Contains(t, c.entries, "k19", "the newest stay")
	assert.NotContains(t, c.entries, "k00", "the oldest went")
}

// Closing the cache with its instance cancels the simulations left for a refresh (no refresh
// comes to a disposed instance) and drops every finished entry; a simulation a query still
// waits for goes on until that query leaves, then is cancelled even when the query left by
// its answer deadline, which before Close leaves it for a refresh.
func TestTwinsCloseCancelsWorkLeftForARefresh(t *testing.T) {
	c := NewTwins(time.Hour, nil)
	now := time.Unix(1_800_000_000, 0)
	b := &blockedSim{release: make(chan struct{})}
	defer close(b.release)
	_, err := c.Get(context.Background(), "done", now, func(context.Context) (any, error) { return 1, nil })
	require.NoError(t, err)
	wait, cancel := answerDeadline(context.Background(), 0)
	_, err = c.GetDetached(wait, "left", now, b.compute)
	cancel()
	require.True(t, TwinPending(context.Background(), err), "left for a refresh")
	held, leave := context.WithCancelCause(context.Background())
	defer leave(nil)
	errs := make(chan error, 1)
	go func() {
		_, err := c.GetDetached(held, "waited", now, b.compute)
		errs <- err
	}()
	waitFor(t, "both simulations run or wait for a slot", func() bool { return c.len() == 3 })
	c.Close()
	assert.Equal(t, 1, c.len(), "only the simulation a query waits for stays")
	waitFor(t, "the one left for a refresh is cancelled", func() bool { return b.cancelled.Load() >= 1 })
	leave(errAnswerDeadline) // its answer deadline, as Deadline's context ends
	assert.ErrorIs(t, <-errs, context.Canceled)
	waitFor(t, "the waited-for one is cancelled once its query left", func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		return c.detached == 0
	})
}

// len is the number of entries (tests).
func (c *Twins) len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.entries)
}
