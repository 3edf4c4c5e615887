package sim

import (
	"fmt"
	"math"
	"math/rand/v2"

	"github.com/inferscope/inferscope-llm-datasource/pkg/enginemodel"
)

// Worlds of the randomized workloads (issue 35): the roofline world the
// rules and the twin were built on, and worlds with an independently
// structured step-time law (enginemodel.StepLaw) and scheduler.
const (
	// WorldRoofline is GenerateFamily's world: the simulator's roofline.
	WorldRoofline = "roofline"
	// WorldPerSequence: a per-sequence decode cost of 40–120 µs per
	// decoding sequence per step, and context-quadratic prefill (a token at
	// position p costs 0.3–1 × the linear per-token cost × p / 8192 more);
	// token budgets down to 512 (small chunked-prefill budgets).
	WorldPerSequence = "per-sequence"
	// WorldMemoryFloor: the weight-read floor grows with the decode batch
	// (doubling at 64–256 sequences), compute and memory overlap less; token
	// budgets down to 512.
	WorldMemoryFloor = "memory-floor"
	// WorldScheduler: the roofline's physics under another scheduler:
	// preemption by swap (host space 4 or 16 GiB at 25 or 50 GB/s, recompute
	// when it is full) or recompute, of the newest, the oldest or the
	// largest running request (enginemodel.Preemption), and a chunked-prefill
	// token budget drawn log-uniformly from 256 to 16 384 tokens (at least
	// max_num_seqs) for every candidate.
	WorldScheduler = "scheduler"
)

// Worlds lists the worlds, the roofline first.
var Worlds = []string{WorldRoofline, WorldPerSequence, WorldMemoryFloor, WorldScheduler}

// world is one seed's draw of a world's law and scheduler (drawWorld).
type world struct {
	name          string
	perSeq, attnK float64
	floorBatch    float64
	budgets       []int
	preempt       enginemodel.Preemption
	// randomBudget: the token budget is drawn log-uniformly for each
	// candidate (WorldScheduler) instead of picked from budgets
	randomBudget bool
	r            *rand.Rand
}

// drawWorld draws the parameters of the named world for seed from a stream
// of its own (the roofline world draws nothing: GenerateFamily's workloads
// are unchanged). It panics on an unknown world.
func drawWorld(seed uint64, name string) *world {
	wd := &world{name: name}
	switch name {
	case WorldRoofline:
		return wd
	case WorldPerSequence:
		wd.r = enginemodel.NewRand(seed, 9)
		wd.perSeq = uniform(wd.r, 40e-6, 120e-6)
		wd.attnK = uniform(wd.r, 0.3, 1)
	case WorldMemoryFloor:
		wd.r = enginemodel.NewRand(seed, 10)
		wd.floorBatch = uniform(wd.r, 64, 256)
	case WorldScheduler:
		wd.r = enginemodel.NewRand(seed, 11)
		wd.preempt.Mode = pick(wd.r, []string{enginemodel.PreemptRecompute, enginemodel.PreemptSwap})
		wd.preempt.Victim = pick(wd.r, []string{enginemodel.VictimNewest, enginemodel.VictimOldest, enginemodel.VictimLargest})
		if wd.preempt.Mode == enginemodel.PreemptSwap {
			wd.preempt.SwapBandwidth = pick(wd.r, []float64{25e9, 50e9})
			wd.preempt.SwapBytes = pick(wd.r, []float64{4 << 30, 16 << 30})
		}
		wd.randomBudget = true
		return wd
	default:
		panic("sim: unknown world " + name)
	}
	wd.budgets = []int{512, 1024, 2048, 4096, 8192}
	return wd
}

// apply sets the world's law and token budget on c (after the model and
// GPU are drawn: the attention cost scales with them).
func (wd *world) apply(c *Config) {
	switch wd.name {
	case WorldPerSequence:
		cT := 2 * c.Model.Params / (c.GPU.PeakFLOPS * c.GPU.MFU)
		c.StepLaw = enginemodel.StepLaw{Kind: enginemodel.LawPerSequence, PerSeqDecode: wd.perSeq, AttnQuad: wd.attnK * cT / 8192}
	case WorldMemoryFloor:
		c.StepLaw = enginemodel.StepLaw{Kind: enginemodel.LawMemoryFloor, FloorBatch: wd.floorBatch}
	case WorldScheduler:
		c.Preemption = wd.preempt
	}
	if wd.randomBudget {
		b := int(math.Round(math.Exp(uniform(wd.r, math.Log(256), math.Log(16384)))))
		c.MaxNumBatchedTokens = max(b, c.MaxNumSeqs)
	} else if len(wd.budgets) > 0 {
		c.MaxNumBatchedTokens = pick(wd.r, wd.budgets)
	}
}

// label prefixes a workload's summary with its world ("" for the roofline).
func (wd *world) label() string {
	switch wd.name {
	case WorldPerSequence:
		return fmt.Sprintf("[%s: %.0f µs per sequence, attention ×%.2f at 8k] ", wd.name, 1e6*wd.perSeq, wd.attnK)
	case WorldMemoryFloor:
		return fmt.Sprintf("[%s: floor doubles at %.0f sequences] ", wd.name, wd.floorBatch)
	case WorldScheduler:
		mode, victim := "recompute", "newest"
		if wd.preempt.Mode != "" {
			mode = fmt.Sprintf("%s (%.0f GiB at %.0f GB/s)", wd.preempt.Mode, wd.preempt.SwapBytes/(1<<30), wd.preempt.SwapBandwidth/1e9)
		}
		if wd.preempt.Victim != "" {
			victim = wd.preempt.Victim
		}
		return fmt.Sprintf("[%s: preempt by %s, victim %s, random budget] ", wd.name, mode, victim)
	}
	return ""
}

// ApplyWorldLaw sets on c the step-time law the named world draws for seed
// (its parameters from the world's own stream, scaled to c's model and
// GPU; WorldScheduler's law is the roofline), without the world's scheduler
// (budget, preemption policy): for validating a model (the
// capacity twin) against a world's physics alone. It panics on an unknown
// world.
func ApplyWorldLaw(c *Config, seed uint64, name string) {
	wd := drawWorld(seed, name)
	wd.budgets, wd.randomBudget, wd.preempt = nil, false, enginemodel.Preemption{}
	wd.apply(c)
}
