package plugin

import (
	"context"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// waitQueued waits until a holds n waiters: a count, not a duration (the
// deadline only stops a broken test).
func waitQueued(t *testing.T, a *admission, n int) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for a.queued() != n {
		if time.Now().After(deadline) {
			t.Fatalf("%d waiters, want %d", a.queued(), n)
		}
		runtime.Gosched()
		time.Sleep(time.Millisecond)
	}
}

var dsA, dsB = sourceKey{org: 1, uid: "a"}, sourceKey{org: 2, uid: "b"}

// TestAdmission: two slots; a third request waits and gets the slot freed
// while it waits; a fourth that finds none within its wait is told "busy,
// retry" (a zero wait: no clock involved); a canceled request leaves at once.
func TestAdmission(t *testing.T) {
	a := newAdmission(2, 2, time.Hour)
	r1, err := a.acquire(context.Background(), dsA)
	require.NoError(t, err)
	r2, err := a.acquire(context.Background(), dsA)
	require.NoError(t, err)
	got := make(chan error, 1)
	var r3 func()
	go func() {
		var err error
		r3, err = a.acquire(context.Background(), dsA)
		got <- err
	}()
	waitQueued(t, a, 1)
	r1()
	require.NoError(t, <-got, "a slot freed within the wait")

	a.wait = 0
	_, err = a.acquire(context.Background(), dsA)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "Inferscope is busy, retry: no query slot came free for 0s (the plugin computes at most 2 requests at once")
	assert.Equal(t, 0, a.queued(), "a refused request leaves the line")
	a.wait = time.Hour
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = a.acquire(ctx, dsA)
	assert.ErrorIs(t, err, context.Canceled)
	r2()
	r3()
	r3() // a release runs once
	assert.Equal(t, 0, a.inFlight)
	assert.Empty(t, a.bySource)
}

// TestAdmissionFairShare: 20 slots, a flood of 200 concurrent requests on
// data source A (org 1) whose queries never finish by themselves. A holds at
// most its share (15), so a request of data source B (org 2) is admitted at
// once; and when B has to wait (B at its share too), the first slot A frees
// goes to B, ahead of A's 185 earlier waiters. Checked failing before: with
// one shared line B waited behind A's whole flood.
func TestAdmissionFairShare(t *testing.T) {
	a := newAdmission(20, 0, time.Hour)
	require.Equal(t, 15, a.perSource)
	var mu sync.Mutex
	var releasesA []func()
	var order []sourceKey
	var wg sync.WaitGroup
	for range 200 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r, err := a.acquire(context.Background(), dsA)
			if err != nil {
				return
			}
			mu.Lock()
			releasesA = append(releasesA, r)
			order = append(order, dsA)
			mu.Unlock()
		}()
	}
	waitQueued(t, a, 185)
	mu.Lock()
	assert.Len(t, releasesA, 15, "A holds its share, not every slot")
	mu.Unlock()

	// B gets the five slots A cannot take, at once.
	var releasesB []func()
	for range 5 {
		r, err := a.acquire(context.Background(), dsB)
		require.NoError(t, err)
		releasesB = append(releasesB, r)
	}
	// A sixth B request waits: every slot is taken.
	bDone := make(chan func(), 1)
	go func() {
		r, err := a.acquire(context.Background(), dsB)
		if err == nil {
			mu.Lock()
			order = append(order, dsB)
			mu.Unlock()
			bDone <- r
		}
	}()
	waitQueued(t, a, 186)
	mu.Lock()
	before := len(order)
	first := releasesA[0]
	releasesA = releasesA[1:]
	mu.Unlock()
	first() // A frees one slot: B's waiter is the first served
	rb := <-bDone
	mu.Lock()
	assert.Equal(t, dsB, order[before], "the freed slot went to B")
	mu.Unlock()
	assert.Equal(t, 185, a.queued(), "A's waiters still wait")
	assert.Equal(t, 14, a.bySource[dsA])
	assert.Equal(t, 6, a.bySource[dsB])

	// B finishing hands its slots back to A, one A request per slot, never above A's share.
	rb()
	for _, r := range releasesB {
		r()
	}
	waitQueued(t, a, 184)
	assert.Equal(t, 15, a.bySource[dsA])
	assert.Equal(t, 15, a.inFlight)

	// Drain: every A request is admitted in the end.
	for {
		mu.Lock()
		if len(releasesA) == 0 {
			mu.Unlock()
			if a.queued() == 0 && a.inFlight == 0 {
				break
			}
			runtime.Gosched()
			continue
		}
		r := releasesA[0]
		releasesA = releasesA[1:]
		mu.Unlock()
		r()
	}
	wg.Wait()
	assert.Len(t, order, 201)
}

// TestAdmissionOrgFairness: within the slots free, the waiter whose
// organisation computes the fewest requests is served first, although a
// data source of the busy organisation waited longer.
func TestAdmissionOrgFairness(t *testing.T) {
	a := newAdmission(2, 2, time.Hour)
	rA, err := a.acquire(context.Background(), dsA)
	require.NoError(t, err)
	rA2, err := a.acquire(context.Background(), sourceKey{org: 1, uid: "a2"})
	require.NoError(t, err)
	served := make(chan sourceKey, 2)
	go func() {
		if r, err := a.acquire(context.Background(), sourceKey{org: 1, uid: "a3"}); err == nil {
			served <- sourceKey{org: 1, uid: "a3"}
			defer r()
		}
	}()
	waitQueued(t, a, 1)
	go func() {
		if r, err := a.acquire(context.Background(), dsB); err == nil {
			served <- dsB
			defer r()
		}
	}()
	waitQueued(t, a, 2)
	rA()
	assert.Equal(t, dsB, <-served, "org 2 computes nothing: served before org 1's third data source")
	rA2()
	assert.Equal(t, sourceKey{org: 1, uid: "a3"}, <-served)
}

// queued is the number of requests waiting (tests and the queued gauge's check).
func (a *admission) queued() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.queue)
}
