package queries

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/backend"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/inferscope/inferscope-llm-datasource/pkg/enginemodel"
)

// Every bad field of a capacity query gets a sentence naming it, as a BadQuery.
func TestCapacityBadInputNamesTheField(t *testing.T) {
	s := testSettings(t)
	to := time.Unix(1_800_000_000, 0)
	for js, want := range map[string]string{
		`{"format":"graph"}`:                                        "format:",
		`{"utilisation":0}`:                                         "utilisation:",
		`{"utilisation":1.2}`:                                       "utilisation:",
		`{"profiles":["nope"]}`:                                     `profiles: "nope"`,
		`{"groupBy":"model"}`:                                       "groupBy:",
		`{"models":["m"]}`:                                          "models:",
		`{"maxNumSeqs":-1}`:                                         "maxNumSeqs:",
		`{"maxNumSeqs":128,"maxNumBatchedTokens":64}`:               "maxNumBatchedTokens:",
		`{"whatIf":{"addReplicas":1}}`:                              "whatIf: a change is predicted only with format whatif",
		`{"format":"whatif","whatIf":{}}`:                           "whatIf: set at least one",
		`{"format":"whatif","whatIf":{"promptScale":40}}`:           "whatIf.promptScale:",
		`{"format":"whatif","whatIf":{"prefixCachingPercent":120}}`: "whatIf.prefixCachingPercent:",
		`{"format":"whatif","whatIf":{"maxNumSeqs":-4}}`:            "whatIf.maxNumSeqs:",
		`{"format":"whatif","whatIf":{"addReplicas":-1}}`:           "whatIf.addReplicas:",
		`{"format":"whatif","whatIf":{"loadScale":-2}}`:             "whatIf.loadScale:",
	} {
		_, err := Decode("capacity", backend.DataQuery{RefID: "A", JSON: json.RawMessage(js), Interval: time.Minute, MaxDataPoints: 100,
			TimeRange: backend.TimeRange{From: to.Add(-time.Hour), To: to}}, &s)
		require.Error(t, err, js)
		assert.Contains(t, err.Error(), want, js)
		assert.IsType(t, BadQuery{}, err, js)
	}
	d, err := Decode("capacity", backend.DataQuery{RefID: "A", JSON: json.RawMessage(`{"format":"whatif","whatIf":{"maxNumSeqs":32,"addReplicas":1,"replicas":3,"promptScale":2,"prefixCachingPercent":40}}`),
		Interval: time.Minute, MaxDataPoints: 100, TimeRange: backend.TimeRange{From: to.Add(-time.Hour), To: to}}, &s)
	require.NoError(t, err)
	q := d.Req.(*Capacity)
	assert.Equal(t, 0.8, q.utilisation, "the default utilisation")
	c := q.WhatIf.change()
	assert.Equal(t, "max-num-seqs 32, +1 replica(s), 4 in all, prompts x2, prefix caching 40%", c.Name)
	assert.Equal(t, 0.4, c.PrefixHitRatio)
	_, rate := c.Apply(enginemodel.DefaultConfig(), 8)
	assert.Equal(t, 6.0, rate, "3 replicas' load spread over 4: 8 × 3/4")
	w := CapacityWhatIf{LoadScale: 2}
	c = w.change()
	assert.Equal(t, "load x2 on the same replicas", c.Name)
	_, rate = c.Apply(enginemodel.DefaultConfig(), 8)
	assert.Equal(t, 16.0, rate)
}

// The cache computes a key once for concurrent requests, serves it until capacityTTL, drops
// a failed computation, and lets a waiter leave when its context ends.
func TestCapacityCacheComputesOnce(t *testing.T) {
	c := &ttlCache{entries: map[string]*ttlEntry{}}
	now := time.Unix(1_800_000_000, 0)
	var calls atomic.Int32
	release := make(chan struct{})
	slow := func(context.Context) (any, error) { calls.Add(1); <-release; return 42, nil }
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			v, err := c.get(context.Background(), "k", now, slow)
			assert.NoError(t, err)
			assert.Equal(t, 42, v)
		}()
	}
	time.Sleep(50 * time.Millisecond)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := c.get(ctx, "k", now, slow)
	assert.ErrorIs(t, err, context.Canceled, "a waiter whose request ended leaves")
	close(release)
	wg.Wait()
	assert.Equal(t, int32(1), calls.Load(), "one computation for concurrent requests")
	v, _ := c.get(context.Background(), "k", now.Add(capacityTTL-time.Second), slow)
	assert.Equal(t, 42, v)
	assert.Equal(t, int32(1), calls.Load(), "served from the cache before the TTL")
	_, _ = c.get(context.Background(), "k", now.Add(capacityTTL), slow)
	assert.Equal(t, int32(2), calls.Load(), "computed again at the TTL")
	_, err = c.get(context.Background(), "bad", now, func(context.Context) (any, error) { return nil, errors.New("no") })
	require.Error(t, err)
	_, err = c.get(context.Background(), "bad", now, func(context.Context) (any, error) { return 1, nil })
	assert.NoError(t, err, "a failed computation is not kept")
}

// A detached computation outlives the query whose answer deadline ended: that query gets
// the deadline's error at once, the computation finishes on its own context, and the next
// query finds its value; a query whose request is cancelled does not cancel it either.
// A panic in it is an error, not the end of the plugin.
func TestCapacityCacheDetachedOutlivesTheWait(t *testing.T) {
	c := &ttlCache{entries: map[string]*ttlEntry{}}
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
	wait, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err := c.getDetached(wait, "k", now, slow)
	assert.ErrorIs(t, err, context.DeadlineExceeded)
	assert.True(t, capacityPending(context.Background(), err), "the request goes on: pending")
	assert.Less(t, time.Since(start), 5*time.Second, "the query answers at its deadline")
	gone, cancelGone := context.WithCancel(context.Background())
	cancelGone()
	_, err = c.getDetached(gone, "k", now, slow)
	assert.ErrorIs(t, err, context.Canceled)
	assert.False(t, capacityPending(gone, err), "a cancelled request is no pending row")
	close(release)
	v, err := c.getDetached(context.Background(), "k", now, func(context.Context) (any, error) { return 0, errors.New("computed twice") })
	require.NoError(t, err)
	assert.Equal(t, 7, v, "the next query finds the detached value")
	assert.False(t, sawCancel.Load(), "neither the deadline nor the cancelled request stopped it")

	_, err = c.getDetached(context.Background(), "boom", now, func(context.Context) (any, error) { panic("bad twin") })
	require.Error(t, err)
	assert.Contains(t, err.Error(), "bad twin")
}
