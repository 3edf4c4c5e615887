package sim

import (
	"fmt"
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
)

// Worlds lists the worlds, the roofline first.
var Worlds = []string{WorldRoofline, WorldPerSequence, WorldMemoryFloor}

// world is one seed's draw of a world's law and scheduler (drawWorld).
type world struct {
	name          string
	perSeq, attnK float64
	floorBatch    float64
	budgets       []int
	r             *rand.Rand
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
	}
	if len(wd.budgets) > 0 {
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
	}
	return ""
}

// ApplyWorldLaw sets on c the step-time law the named world draws for seed
// (its parameters from the world's own stream, scaled to c's model and
// GPU), without the world's scheduler budget: for validating a model (the
// capacity twin) against a world's physics alone. It panics on an unknown
// world.
func ApplyWorldLaw(c *Config, seed uint64, name string) {
	wd := drawWorld(seed, name)
	wd.budgets = nil
	wd.apply(c)
}
