package diagnose

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// holSlowPrefill is a vLLM V0 target (chunked prefill off) whose prefill is
// slow per prompt token on busy SMs, the signature a context-quadratic
// prefill gives a tail of long prompts: 3 requests finish per second, mean
// prefill `pre` s, mean TTFT three times that, SM activity 0.92, 120 of 256
// seats running, the KV cache at 0.6 without preemptions, 15 waiting with
// queue time 4.8 s of a 30 s E2E (0.16 < 0.3: not a queue for the prefill
// rule). p50 and p99 are the prompt-length histogram's median and 99th
// percentile, prompt the prompt tokens per second.
func holSlowPrefill(n int, p50, p99, prompt, pre float64) TargetInput {
	v := base(n)
	v[Running], v[RunningAvg] = constant(n, 120), constant(n, 120)
	v[Waiting], v[WaitingAvg] = constant(n, 15), constant(n, 15)
	v[PromptP50], v[PromptP99] = constant(n, p50), constant(n, p99)
	v[PromptTok], v[GenTok], v[Finished] = constant(n, prompt), constant(n, 300), constant(n, 3)
	v[PrefillMean], v[TTFTMean] = constant(n, pre), constant(n, 3*pre)
	v[QueueMean], v[E2EMean] = constant(n, 4.8), constant(n, 30)
	v[SMActive], v[KVUsage], v[Preemptions] = constant(n, 0.92), constant(n, 0.6), constant(n, 0)
	return TargetInput{Name: "h", Engine: "vllm", Generation: "v0", Values: v, RunningCeiling: 256}
}

// Issue 35: head-of-line blocking under a context-quadratic prefill stays
// head-of-line blocking. Median prompt 360 tokens, 99th percentile 20 000
// (ratio 55.6 ≥ 10, and ≥ 8 000); 6 000 prompt tokens/s over 3 finished
// requests/s is 2 000 tokens per request, so 1 − 360 / 2 000 = 0.82 of the
// prompt tokens are in excess of the median: the tail's (≥ 0.5). Prefill
// takes 2.4 s per request, 2.4 / 2 000 = 0.0012 s per prompt token
// (> 0.0002) with the SMs at 0.92 (≥ 0.8): before, neither of the rule's
// "prefill is not the bottleneck" conditions held and the window read
// prefill_compute_bound, whose own conditions hold here too (prompt share
// 6 000 / 6 300 = 0.952 ≥ 0.8, 2 000 tokens per request ≥ 2 000, SMs busy).
// TTFT 7.2 s over prefill 2.4 s is 3 ≥ 1.5.
func TestHOLWithQuadraticPrefillStaysHOL(t *testing.T) {
	const n = 3
	r := run1(t, n, time.Minute, 5*time.Minute, holSlowPrefill(n, 360, 20000, 6000, 2.4))
	assert.Equal(t, []Class{HeadOfLine, HeadOfLine, HeadOfLine}, r.Primary)
	assert.True(t, r.Active[PrefillCompute][n-1], "the prefill rule's own conditions hold; head-of-line blocking ranks first")
	var f Finding
	for _, g := range r.Current() {
		if g.Class == HeadOfLine {
			f = g
		}
	}
	require.Equal(t, HeadOfLine, f.Class)
	text := EvidenceText(f.Evidence)
	// The finding held at the step before, so its bars are lowered by the
	// 10 % hysteresis: 0.5 → 0.45, 1.5 → 1.35.
	assert.Contains(t, text, "prompt_tail_token_share 0.82 ≥ 0.45")
	assert.Contains(t, text, "1 − median prompt 360 ÷ 2000 prompt tokens per finished request")
	assert.Contains(t, text, "prefill 0.0012 s per prompt token, SM activity 0.92")
	assert.Contains(t, text, "ttft_over_prefill 3 ≥ 1.35")
	assert.Contains(t, f.Summary, "82 % of the prompt tokens are the long tail's")
	assert.Contains(t, f.Recommendation, "--enable-chunked-prefill")
}

// Issue 35: uniformly slow prefill with a thin tail stays
// prefill_compute_bound. The tail gate holds (99th percentile 20 000 ≥
// 8 000, median 1 800: ratio 11.1 ≥ 10), but 7 200 prompt tokens/s over 3
// requests/s is 2 400 per request (a bulk of about 2 050 tokens on average
// and 1.5 % of prompts near 25 000: 0.985 × 2 050 + 0.015 × 25 000 ≈
// 2 394), so only 1 − 1 800 / 2 400 = 0.25 of the prompt tokens are in
// excess of the median (< 0.5): the bulk carries the prefill work. Prefill
// 2.88 s per request is 2.88 / 2 400 = 0.0012 s per token (> 0.0002) on SMs
// at 0.92 (not < 0.8): head-of-line blocking does not hold, and prefill does
// (prompt share 7 200 / 7 500 = 0.96 ≥ 0.8, 2 400 tokens per request ≥
// 2 000, SMs 0.92 ≥ 0.8).
func TestUniformlySlowPrefillStaysPrefillComputeBound(t *testing.T) {
	const n = 3
	r := run1(t, n, time.Minute, 5*time.Minute, holSlowPrefill(n, 1800, 20000, 7200, 2.88))
	assert.Equal(t, []Class{PrefillCompute, PrefillCompute, PrefillCompute}, r.Primary)
	assert.False(t, activeAnywhere(r, HeadOfLine))
	f := r.Current()[0]
	// held at the step before: bars lowered by the 10 % hysteresis (2 000 → 1 800, 0.8 → 0.72)
	assert.Contains(t, EvidenceText(f.Evidence), "prompt_tokens_per_request 2400 tokens ≥ 1800")
	assert.Contains(t, EvidenceText(f.Evidence), "sm_active 0.92 ≥ 0.72")
}

// tailWorkShare is 1 − median ÷ mean prompt, clamped at 0, NaN without a
// positive mean: 1 − 500 / 2 000 = 0.75; a mean of 400 under a median of
// 500 gives 0.
func TestTailWorkShare(t *testing.T) {
	assert.InDelta(t, 0.75, tailWorkShare(500, 2000), 1e-12)
	assert.Equal(t, 0.0, tailWorkShare(500, 400))
	assert.True(t, isNaN(tailWorkShare(500, 0)))
}

func isNaN(v float64) bool { return v != v }
