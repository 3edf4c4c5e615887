package plugin

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Item 9: llama.cpp exports only cumulative seconds and token counters. Per
// 15 s scrape its prompt processing grows by 0.2 s over 100 prompt tokens
// (2 ms per token) and its generation by 1.5 s over 50 tokens (30 ms per
// token): the means of prefill, decode, ITL and TPOT are served from them, per
// target, next to a vLLM target's histogram mean (ITL 0.02 s) that they are
// never added to; quantiles of llama.cpp say why they are missing.
func TestLlamaCppMeansFromCounters(t *testing.T) {
	h := newHandHistory(t)
	t0 := time.Unix(1_700_000_100, 0)
	itl := newHandHist(0.01, 0.025, 0.05)
	for i := 0; i <= 40; i++ {
		ts := t0.Add(time.Duration(i) * 15 * time.Second)
		n := float64(i)
		h.sample(ts, "llama", "llamacpp:prompt_seconds_total", nil, 0.2*n)
		h.sample(ts, "llama", "llamacpp:prompt_tokens_total", nil, 100*n)
		h.sample(ts, "llama", "llamacpp:tokens_predicted_seconds_total", nil, 1.5*n)
		h.sample(ts, "llama", "llamacpp:tokens_predicted_total", nil, 50*n)
		h.sample(ts, "llama", "llamacpp:requests_processing", nil, 1)
		if i > 0 {
			itl.observe(0.02, 10)
		}
		h.scrape(ts, "vllm", "vllm:inter_token_latency_seconds", map[string]string{"model_name": "m"}, itl)
	}
	inst := h.instance(histTarget("llama"), histTarget("vllm"))
	from, to := t0.Add(5*time.Minute), t0.Add(10*time.Minute)
	dr := runHistQuery(t, inst, from, to, time.Minute, map[string]any{"queryType": "latency",
		"stages": []string{"prefill_time", "decode_time", "itl", "tpot"}, "stats": []string{"mean", "p90"}, "window": "5m"})
	require.NoError(t, dr.Error)
	requireFinite(t, dr, "llama.cpp means")
	f := fieldsBy(dr, "stage", "stat", "target", "bound")
	for key, want := range map[string]float64{
		"prefill_time/mean/llama/": 0.002, "decode_time/mean/llama/": 0.03, "itl/mean/llama/": 0.03, "tpot/mean/llama/": 0.03,
		"itl/mean//": 0.02, // the vLLM histogram's mean (groupBy none), llama.cpp not added in
	} {
		require.NotNil(t, f[key], key)
		v, at := lastFloat(f[key])
		require.NotNil(t, at, key)
		assert.InDelta(t, want, v, 1e-9, key)
	}
	assert.Nil(t, f["prefill_time/p90/llama/"], "no distribution, no quantile")
	notes := strings.Join(responseNotices(dr), "\n")
	assert.Contains(t, notes, "prefill_time mean of llama comes from cumulative counters")
	assert.Contains(t, notes, "prefill_time: llama exports only cumulative counters, so no quantile exists for them")
	assert.Contains(t, dr.Frames[0].Meta.ExecutedQueryString, "rate(llamacpp:prompt_seconds_total")
}

// Item 9: vLLM V0's prefix-cache hit-rate gauge is served by the saturation
// query (0.4 on a V0 target); a target with caching off reports −1, which is
// absent, not a ratio.
func TestVLLMV0PrefixCacheHitRateGauge(t *testing.T) {
	h := newHandHistory(t)
	t0 := time.Unix(1_700_000_100, 0)
	m := map[string]string{"model_name": "m"}
	for i := 0; i <= 40; i++ {
		ts := t0.Add(time.Duration(i) * 15 * time.Second)
		for job, rate := range map[string]float64{"v0": 0.4, "v0-off": -1} {
			h.sample(ts, job, "vllm:gpu_prefix_cache_hit_rate", m, rate)
			h.sample(ts, job, "vllm:gpu_cache_usage_perc", m, 0.5)
			h.sample(ts, job, "vllm:num_requests_swapped", m, 0)
			h.sample(ts, job, "vllm:num_requests_running", m, 2)
		}
	}
	inst := h.instance(histTarget("v0"), histTarget("v0-off"))
	dr := runHistQuery(t, inst, t0.Add(5*time.Minute), t0.Add(10*time.Minute), time.Minute, map[string]any{"queryType": "saturation", "groupBy": "target"})
	require.NoError(t, dr.Error)
	requireFinite(t, dr, "saturation")
	f := fieldsBy(dr, "signal", "target")
	require.NotNil(t, f["prefix_cache_hit_ratio/v0"])
	v, _ := lastFloat(f["prefix_cache_hit_ratio/v0"])
	assert.InDelta(t, 0.4, v, 1e-12)
	assert.Nil(t, f["prefix_cache_hit_ratio/v0-off"], "caching off (−1) is absent")
	assert.Contains(t, strings.Join(responseNotices(dr), "\n"), "prefix-cache hit ratio of v0, v0-off is vLLM V0's gauge")
}
