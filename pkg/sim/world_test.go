package sim

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/inferscope/inferscope-llm-datasource/pkg/enginemodel"
)

// Every family draws in every world (GenerateFamilyWorld panics after 2000
// tries otherwise), the roofline world is GenerateFamily's, and the other
// worlds carry their law.
func TestEveryFamilyDrawsInEveryWorld(t *testing.T) {
	fams := map[string]bool{}
	for _, f := range WorkloadFamilies {
		fams[f] = true
	}
	for _, wn := range Worlds {
		for f := range fams {
			for seed := uint64(1); seed <= 3; seed++ {
				w := GenerateFamilyWorld(seed, f, 40*time.Minute, wn)
				require.NoError(t, w.Config.Validate(), "%s %s %d", wn, f, seed)
				assert.Equal(t, wn, w.World)
				switch wn {
				case WorldRoofline:
					assert.Equal(t, enginemodel.LawRoofline, w.Config.StepLaw.Kind)
					assert.Equal(t, GenerateFamily(seed, f, 40*time.Minute).Summary, w.Summary)
				case WorldPerSequence:
					assert.Equal(t, enginemodel.LawPerSequence, w.Config.StepLaw.Kind)
				case WorldMemoryFloor:
					assert.Equal(t, enginemodel.LawMemoryFloor, w.Config.StepLaw.Kind)
				case WorldScheduler:
					assert.Equal(t, enginemodel.LawRoofline, w.Config.StepLaw.Kind)
					assert.NoError(t, w.Config.Preemption.Validate())
				}
			}
		}
	}
}

// The laws by hand: one decode step of 100 sequences reading 100 000
// context tokens on the default configuration (Llama-3.1-8B bf16 on an
// H100 SXM), at the full clock.
func TestStepLawsByHand(t *testing.T) {
	c := DefaultConfig()
	g, m := c.GPU, c.Model
	bw := g.MemBandwidth * g.BWEfficiency
	weights := m.Params * m.BytesPerParam / bw
	kv := m.KVBytesPerToken * 1e5 / bw
	compute := 2 * m.Params * 100 / (g.PeakFLOPS * g.MFU)
	w := enginemodel.StepWork{DecodeSeqs: 100, Ctx: 1e5}
	roof := c.StepOverhead + max(compute, weights+kv) + 0.1*min(compute, weights+kv)
	assert.InDelta(t, roof, enginemodel.StepSeconds(&c, w, 1), 1e-12)
	c.StepLaw = enginemodel.StepLaw{Kind: enginemodel.LawPerSequence, PerSeqDecode: 1e-4}
	assert.InDelta(t, roof+100*1e-4, enginemodel.StepSeconds(&c, w, 1), 1e-12)
	c.StepLaw = enginemodel.StepLaw{Kind: enginemodel.LawMemoryFloor, FloorBatch: 100}
	floor := 2*weights + kv
	assert.InDelta(t, c.StepOverhead+max(compute, floor)+0.3*min(compute, floor), enginemodel.StepSeconds(&c, w, 1), 1e-12)
	// a prefill of 1000 tokens at positions 0…999 under context-quadratic attention
	c.StepLaw = enginemodel.StepLaw{Kind: enginemodel.LawPerSequence, AttnQuad: 1e-9}
	p := enginemodel.StepWork{PrefillTokens: 1000, Ctx: 1000, PrefillPositions: 999 * 1000 / 2}
	pc := 2*m.Params*1000/(g.PeakFLOPS*g.MFU) + 1e-9*999*1000/2
	assert.InDelta(t, c.StepOverhead+max(pc, weights+m.KVBytesPerToken*1000/bw)+0.1*min(pc, weights+m.KVBytesPerToken*1000/bw), enginemodel.StepSeconds(&c, p, 1), 1e-12)
	require.Error(t, (&enginemodel.StepLaw{Kind: "cubic"}).Validate())
	require.Error(t, (&enginemodel.StepLaw{Kind: enginemodel.LawMemoryFloor}).Validate())
}

// The scheduler world draws every preemption mode and victim policy and
// budgets off the other worlds' list, and keeps the roofline's law.
func TestSchedulerWorldDrawsPolicies(t *testing.T) {
	modes, victims := map[string]bool{}, map[string]bool{}
	offList := false
	for seed := uint64(1); seed <= 40; seed++ {
		w := GenerateFamilyWorld(seed, "healthy-busy", 40*time.Minute, WorldScheduler)
		p := w.Config.Preemption
		modes[p.Mode], victims[p.Victim] = true, true
		if p.Mode == enginemodel.PreemptSwap {
			assert.Positive(t, p.SwapBandwidth)
			assert.Positive(t, p.SwapBytes)
		}
		b := w.Config.MaxNumBatchedTokens
		assert.GreaterOrEqual(t, b, w.Config.MaxNumSeqs)
		if b&(b-1) != 0 {
			offList = true // not a power of two: not one of 512 … 16 384
		}
	}
	assert.Len(t, modes, 2)
	assert.Len(t, victims, 3)
	assert.True(t, offList)
	// ApplyWorldLaw takes the law alone: the scheduler world leaves vLLM's preemption
	c := DefaultConfig()
	ApplyWorldLaw(&c, 1, WorldScheduler)
	assert.Equal(t, enginemodel.Preemption{}, c.Preemption)
	assert.Equal(t, DefaultConfig().MaxNumBatchedTokens, c.MaxNumBatchedTokens)
}
