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
