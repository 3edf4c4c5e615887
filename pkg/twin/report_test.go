package twin

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/inferscope/inferscope-llm-datasource/pkg/sim"
)

// The report on a simulator's scraped history says which parameters came from the data and
// which are defaults, finds a knee above the load it served without trouble, and fills the
// what-if table.
func TestReportOnAScrapedHistory(t *testing.T) {
	if testing.Short() {
		t.Skip("simulates minutes of load")
	}
	cfg := sim.DefaultConfig()
	cfg.ClientTimeout = 0
	q, end := history(t, cfg, 4, 30*time.Minute)
	rep, err := Report(context.Background(), q, "vllm", end, 30*time.Minute, Known{}, []Profile{chat}, 0.8)
	require.NoError(t, err)
	src := map[string]Source{}
	for _, p := range rep.Params {
		src[p.Name] = p.Source
	}
	assert.Equal(t, FromData, src["arrival rate (req/s)"])
	assert.Equal(t, FromData, src["KV blocks"])
	assert.Equal(t, FromData, src["prefix-cache hit ratio"])
	assert.Equal(t, FromFit, src["decode bandwidth efficiency"])
	assert.Equal(t, FromDefault, src["max_num_seqs"])
	assert.InDelta(t, 4, rep.Load, 0.4, "the served load: 4 req/s")
	require.Len(t, rep.Profiles, 1)
	assert.Greater(t, rep.Profiles[0].Knee, rep.Load)
	assert.Greater(t, rep.Profiles[0].Headroom, 1.0)
	assert.GreaterOrEqual(t, rep.Profiles[0].Replicas, 1)
	require.Len(t, rep.WhatIfs, 5)
	var b bytes.Buffer
	require.NoError(t, rep.Write(&b))
	assert.Contains(t, b.String(), "+1 replica")
	assert.Contains(t, b.String(), "prompts x2")
}

// Advice quotes the change and its predicted p99s with the range of true values the band
// allows: |v − truth| ≤ b·truth, so truth in [v/(1+b), v/(1−b)]; TTFT 1.2 s with the
// max-num-seqs band 0.57 gives [1.2 / 1.57 = 764 ms, 1.2 / 0.43 = 2.79 s], E2E 10 s with 0.10
// [10 / 1.10 = 9.09 s, 10 / 0.90 = 11.1 s]; a band of 1 or more has no upper bound (load ×2,
// TTFT band 15.35·ln 2 = 10.64: 1.2 / 11.64 = 103 ms); E2E at load ×2 0.68·ln 2 = 0.471:
// [10 / 1.471 = 6.8 s, 10 / 0.529 = 18.9 s].
func TestAdviceQuotesThePredictionWithItsBand(t *testing.T) {
	cur := sim.DefaultConfig()
	o := Outcome{P99: map[string]float64{"ttft": 1.2, "e2e": 10}}
	assert.Equal(t, "raise --max-num-seqs to 512: TTFT p99 predicted 1.2 s [764 ms, 2.79 s], E2E p99 predicted 10 s [9.09 s, 11.1 s]",
		Advice(Change{MaxNumSeqs: 512}, cur, o))
	assert.Contains(t, Advice(Change{MaxNumSeqs: 64}, cur, o), "lower --max-num-seqs to 64")
	assert.Contains(t, Advice(Change{LoadScale: 2}, cur, o), "at load ×2: TTFT p99 predicted 1.2 s [103 ms, ∞], E2E p99 predicted 10 s [6.8 s, 18.9 s]")
	assert.Empty(t, Advice(Change{Name: "current"}, cur, o))
}
