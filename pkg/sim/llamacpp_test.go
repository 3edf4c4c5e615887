package sim

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestLlamaCppExposition (issue 40): a llama.cpp server with 2 slots, answers of ~3500 tokens
// (tens of seconds each) and more requests than slots. Over 10 minutes at 15 s scrapes: the page
// carries only llama.cpp's families, without labels; requests wait (deferred); generated
// tokens are counted only when requests end (the counter grows by whole answers, and stays
// flat over some scrape intervals while 4 slots decode), while n_decode_total grows over
// every interval with a busy slot.
func TestLlamaCppExposition(t *testing.T) {
	cfg := DefaultConfig()
	cfg.MaxNumSeqs = 2
	cfg.Rate = 0.2
	cfg.Output = LengthDist{Kind: "lognormal", Mean: 3500, Sigma: 0.1, Min: 2500, Max: 4000}
	cfg.MaxTokens = 4096
	s, err := New(cfg, Options{})
	require.NoError(t, err)
	require.NoError(t, s.ExposeLlamaCpp())
	app := &memAppendable{}
	_, err = s.FastForward(context.Background(), app, FastForwardOptions{Duration: 10 * time.Minute, ScrapeInterval: 15 * time.Second,
		VLLM: Target{Job: "lc", Instance: "lc:8080"}})
	require.NoError(t, err)
	series := map[string][]float64{}
	for _, smp := range app.samples {
		n := smp.l.Get("__name__")
		if n == "up" || len(n) > 7 && n[:7] == "scrape_" {
			continue
		}
		assert.Regexp(t, `^llamacpp:`, n)
		assert.Equal(t, 3, smp.l.Len(), "name, job and instance only: %s", smp.l)
		series[n] = append(series[n], smp.v)
	}
	for _, n := range []string{"llamacpp:prompt_tokens_total", "llamacpp:prompt_seconds_total", "llamacpp:tokens_predicted_total",
		"llamacpp:tokens_predicted_seconds_total", "llamacpp:n_decode_total", "llamacpp:requests_processing", "llamacpp:requests_deferred"} {
		require.NotEmpty(t, series[n], n)
	}
	assert.NotContains(t, series, "llamacpp:kv_cache_usage_ratio", "a current build")
	assert.Greater(t, slices.Max(series["llamacpp:requests_deferred"]), 0.0, "requests wait for a slot")
	assert.Equal(t, 2.0, slices.Max(series["llamacpp:requests_processing"]))
	gen, dec, busy := series["llamacpp:tokens_predicted_total"], series["llamacpp:n_decode_total"], series["llamacpp:requests_processing"]
	flatBusy, decodeStill := 0, 0
	for k := 8; k < len(gen); k++ { // after two minutes of warm-up
		if busy[k-1] >= 2 && busy[k] >= 2 && gen[k] == gen[k-1] {
			flatBusy++
		}
		if busy[k-1] > 0 && dec[k] == dec[k-1] {
			decodeStill++
		}
		if d := gen[k] - gen[k-1]; d > 0 {
			assert.GreaterOrEqual(t, d, 2500.0, "generated tokens arrive as whole answers (≥ 2500 tokens each)")
		}
	}
	assert.Greater(t, flatBusy, 0, "intervals with every slot busy and no generated token counted")
	assert.Zero(t, decodeStill, "decode steps move in every interval with a busy slot")
}
