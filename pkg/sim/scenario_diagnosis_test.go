package sim

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// successByReason reads vllm:request_success_total for one finished_reason.
func successByReason(t *testing.T, s *Sim, reason string) float64 {
	t.Helper()
	mfs, err := s.Registry().Gather()
	require.NoError(t, err)
	for _, mf := range mfs {
		if mf.GetName() != "vllm:request_success_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "finished_reason" && l.GetValue() == reason {
					return m.GetCounter().GetValue()
				}
			}
		}
	}
	return 0
}

// TestLongPromptMix: in long-prompt-hol, 5 % of generated prompts come from
// the long distribution (24k–30k tokens), the others stay under 2k; with
// chunked prefill off, a long prompt is prefilled in one step. Over 15
// minutes at 8 req/s (~7,200 requests) the long share is 5 % ± 1 point
// (about five binomial standard deviations).
func TestLongPromptMix(t *testing.T) {
	s := newSim(t, "long-prompt-hol", nil, Options{RecordTruth: true})
	s.AdvanceTo(900)
	fin := s.Finished()
	require.Greater(t, len(fin), 5000)
	long := 0
	for _, r := range fin {
		switch {
		case r.PromptTokens >= 24000:
			assert.LessOrEqual(t, r.PromptTokens, 30000)
			long++
		default:
			assert.LessOrEqual(t, r.PromptTokens, 2000, "short prompts")
		}
	}
	share := float64(long) / float64(len(fin))
	assert.InDelta(t, 0.05, share, 0.01, "long prompts: %d of %d", long, len(fin))
}

// TestClientCancels: in client-cancels a quarter of the clients close their
// stream (exponential, mean 3 s after arrival). Requests whose client closed
// before they finished end with finished_reason="abort", counted on the page
// exactly as the recorded requests say, with no latency truth (they never
// reach the latency histograms); the others finish normally. A request
// that would have finished before its client closed is not aborted, so the
// abort share is below the cancel share.
func TestClientCancels(t *testing.T) {
	s := newSim(t, "client-cancels", nil, Options{RecordTruth: true})
	s.AdvanceTo(900)
	fin := s.Finished()
	require.Greater(t, len(fin), 3000)
	aborted := 0
	for _, r := range fin {
		if r.FinishReason != ReasonAbort {
			continue
		}
		aborted++
		assert.GreaterOrEqual(t, r.Finished, r.CancelAt(), "aborted only once its client closed")
		assert.Less(t, r.Generated, r.OutputTokens, "an aborted request did not complete its output")
		_, ok := r.Truth(V011)
		assert.False(t, ok, "no latency truth for an aborted request")
	}
	share := float64(aborted) / float64(len(fin))
	assert.Greater(t, share, 0.05, "above the diagnosis's default abort share")
	assert.Less(t, share, 0.25, "below the share of clients that close")
	assert.Equal(t, float64(aborted), successByReason(t, s, ReasonAbort), "the page counts every abort")
}

// TestCancelConfigErrors: shares outside 0..1, a cancel share without a
// delay, or an invalid long-prompt distribution are rejected.
func TestCancelConfigErrors(t *testing.T) {
	for i, m := range []func(*Config){
		func(c *Config) { c.CancelShare = 1.5; c.CancelAfter = 1 },
		func(c *Config) { c.CancelShare = 0.1 },
		func(c *Config) { c.LongPromptShare = -0.1 },
		func(c *Config) { c.LongPromptShare = 0.1; c.LongPrompt = LengthDist{Kind: "zipf"} },
	} {
		cfg := DefaultConfig()
		m(&cfg)
		_, err := New(cfg, Options{})
		assert.Error(t, err, "case %d", i)
	}
}
