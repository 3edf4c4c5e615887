package sim

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestGenerateWorkloadFamilies: over 400 seeds every family is drawn, every
// workload validates, equal seeds give equal workloads, and each family's
// prediction satisfies what the family promises (computed here from the
// roofline's definition, not read back from the generator's conditions).
func TestGenerateWorkloadFamilies(t *testing.T) {
	const span = 40 * time.Minute
	seen := map[string]int{}
	for seed := uint64(1); seed <= 400; seed++ {
		w := GenerateWorkload(seed, span)
		seen[w.Family]++
		c := w.Config
		require.NoError(t, c.Validate(), "seed %d %s", seed, w.Summary)
		assert.Equal(t, w.Summary, GenerateWorkload(seed, span).Summary, "seed %d is deterministic", seed)
		p := w.Predicted
		switch w.Family {
		case "queue":
			assert.Greater(t, p.Running, float64(c.MaxNumSeqs), "seed %d: offered concurrency exceeds max_num_seqs: %s", seed, w.Summary)
		case "kv":
			assert.Greater(t, p.Running*(c.Prompt.Mean+c.Output.Mean/2), float64(c.NumGPUBlocks*c.BlockSize), "seed %d: %s", seed, w.Summary)
		case "healthy-busy", "healthy-light":
			assert.Less(t, p.Running, float64(c.MaxNumSeqs)/2, "seed %d: %s", seed, w.Summary)
			assert.Less(t, p.ITL, 0.05, "seed %d: %s", seed, w.Summary)
		}
	}
	for _, f := range WorkloadFamilies {
		assert.NotZero(t, seen[f], "family %s never drawn", f)
	}
	t.Log(seen)
}

// TestFaultAppenderFreezes: after FreezeAt every vLLM series keeps its last
// value while up stays 1; a stuck GPU series reads StuckValue.
func TestFaultAppenderFreezes(t *testing.T) {
	c := DefaultConfig()
	s, err := New(c, Options{})
	require.NoError(t, err)
	st := &memAppendable{}
	app := FaultAppender(st, Faults{FreezeAt: 2 * time.Minute, StuckGPU: []string{GPUSMActive}, StuckValue: 0}, s.Start(), "v", "g")
	_, err = s.FastForward(context.Background(), app, FastForwardOptions{Duration: 4 * time.Minute, ScrapeInterval: 15 * time.Second,
		VLLM: Target{Job: "v", Instance: "v:1"}, GPU: Target{Job: "g", Instance: "g:1"}})
	require.NoError(t, err)
	freeze := s.Start().Add(2 * time.Minute).UnixMilli()
	var gen []float64
	for _, x := range st.samples {
		switch x.l.Get("__name__") {
		case "vllm:generation_tokens_total":
			if x.t >= freeze-15000 {
				gen = append(gen, x.v)
			}
		case "up":
			assert.Equal(t, 1.0, x.v)
		case GPUSMActive:
			assert.Equal(t, 0.0, x.v)
		}
	}
	require.Greater(t, len(gen), 5)
	for _, g := range gen[1:] {
		assert.Equal(t, gen[0], g, "generation tokens frozen at the freeze")
	}
	assert.Greater(t, gen[0], 0.0)
}
