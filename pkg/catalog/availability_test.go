package catalog

import (
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Stored names of the case page vllm-v1-scheduler-gauges-only.prom: three gauges.
var gaugesOnly = []string{"vllm:num_requests_running", "vllm:num_requests_waiting", "vllm:kv_cache_usage_perc", "up"}

func TestAssessGaugesOnlyPage(t *testing.T) {
	d, ok := DetectStored(gaugesOnly, "")
	require.True(t, ok)
	require.Equal(t, EngineVLLM, d.Engine)
	got := map[Signal]State{}
	for _, a := range AssessAll(d, gaugesOnly) {
		got[a.Signal] = a.State
	}
	// By hand: the page carries exactly these three families.
	for _, s := range []Signal{RequestsRunning, RequestsWaiting, KVCacheUsage} {
		assert.Equal(t, StateExported, got[s], s)
	}
	for _, s := range []Signal{TTFT, E2E, ITL, QueueTime, PromptTokens, GenerationTokens, RequestsFinished, Preemptions} {
		assert.Equal(t, StateNotSeen, got[s], s)
	}
	for _, s := range []Signal{GPUUtil, Power} {
		assert.Equal(t, StateAbsent, got[s], s)
	}
	ttft := Assess(d, gaugesOnly, TTFT)
	assert.Equal(t, []string{"vllm:time_to_first_token_seconds_bucket", "ray_vllm:time_to_first_token_seconds_bucket"}, ttft.LookedFor)
	assert.Empty(t, ttft.Metrics)
	assert.Equal(t, "target a (vllm): ttft not seen in the queried range: none of vllm:time_to_first_token_seconds_bucket, ray_vllm:time_to_first_token_seconds_bucket is stored for it (no data, not zero)", ttft.NotSeenSentence("a", EngineVLLM))
}

// Order of names never matters: a multi-process page lists _sum lines first. (The family is a
// detection marker whose buckets no signal reads; issue 33 made request_generation_tokens,
// the family used here before, the generation_length signal, buckets stored.)
func TestDetectStoredOrderFree(t *testing.T) {
	page := []string{"vllm:request_prefill_kv_computed_tokens_sum", "vllm:request_prefill_kv_computed_tokens_count", "vllm:request_prefill_kv_computed_tokens_bucket"}
	stored := StoredNames(page)
	assert.Equal(t, []string{"vllm:request_prefill_kv_computed_tokens_sum", "vllm:request_prefill_kv_computed_tokens_count"}, stored, "unused buckets are not stored")
	for _, names := range [][]string{stored, {stored[1], stored[0]}} {
		d, ok := DetectStored(names, "")
		assert.True(t, ok)
		assert.Equal(t, EngineVLLM, d.Engine)
	}
	// Every catalogue signal is not seen on that page, none exported.
	d, _ := DetectStored(stored, "")
	for _, a := range AssessAll(d, stored) {
		assert.False(t, a.Exported(), a.Signal)
	}
}

func TestAssessRenamesAndOverride(t *testing.T) {
	// Both ITL names stored (a rename inside the range): both are read, newest first.
	names := []string{"vllm:inter_token_latency_seconds_bucket", "vllm:time_per_output_token_seconds_bucket", "vllm:e2e_request_latency_seconds_bucket"}
	d, _ := DetectStored(names, "")
	a := Assess(d, names, ITL)
	require.Equal(t, StateExported, a.State)
	var got []string
	for _, m := range a.Metrics {
		got = append(got, m.Name)
	}
	assert.Equal(t, []string{"vllm:inter_token_latency_seconds", "vllm:time_per_output_token_seconds"}, got)

	// An override naming another engine keeps only the engine.
	d, ok := DetectStored(names, EngineSGLang)
	assert.True(t, ok)
	assert.Equal(t, Detection{Engine: EngineSGLang, Evidence: []string{"engine set in the target's settings"}}, d)
	assert.Equal(t, StateNotSeen, Assess(d, names, TTFT).State)
	assert.Equal(t, StateAbsent, Assess(d, names, PrefillTime).State, "SGLang never exports prefill")
	// Unknown engine: nothing is claimed.
	d, ok = DetectStored([]string{"up", "go_goroutines"}, "")
	assert.False(t, ok)
	assert.True(t, slices.IndexFunc(AssessAll(d, nil), func(a TargetSignal) bool { return a.State != StateAbsent }) < 0)
}

func TestSameSoftware(t *testing.T) {
	v := func(gen, ver string) Detection { return Detection{Engine: EngineVLLM, Generation: gen, Version: ver} }
	assert.True(t, SameSoftware(v("v1", "0.9+"), v("v1", "0.11-0.12")), "narrowing is no change")
	assert.False(t, SameSoftware(v("v1", "0.10"), v("v1", "0.13+")), "an upgrade")
	assert.False(t, SameSoftware(v("v0", ""), v("v1", "")))
	assert.True(t, SameSoftware(v("", ""), v("v1", "0.13+")))
	assert.False(t, SameSoftware(v("v1", ""), Detection{Engine: EngineSGLang}))
}

// TestMissingNow: a vLLM target that had TTFT (new name) and ITL under the old name in the
// range, and whose latest scrape carries only the ITL family under its new name and the KV
// gauge: TTFT is missing, ITL is not (a rename is not a loss), KV is not, and signals it never
// had are not listed.
func TestMissingNow(t *testing.T) {
	inRange := []string{"vllm:time_to_first_token_seconds_bucket", "vllm:time_per_output_token_seconds_bucket",
		"vllm:inter_token_latency_seconds_bucket", "vllm:kv_cache_usage_perc"}
	d, ok := DetectStored(inRange, "")
	require.True(t, ok)
	got := MissingNow(AssessAll(d, inRange), []string{"vllm:inter_token_latency_seconds_bucket", "vllm:kv_cache_usage_perc"})
	bySignal := map[Signal]Missing{}
	for _, m := range got {
		bySignal[m.Signal] = m
	}
	require.Len(t, got, 3)
	require.True(t, bySignal[TTFT].Missing)
	require.Equal(t, []string{"vllm:time_to_first_token_seconds_bucket"}, bySignal[TTFT].Had)
	require.False(t, bySignal[ITL].Missing)
	require.False(t, bySignal[KVCacheUsage].Missing)
	_, listed := bySignal[E2E]
	require.False(t, listed, "a signal never exported is not missing")
}
