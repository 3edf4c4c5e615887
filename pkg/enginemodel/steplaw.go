package enginemodel

import (
	"fmt"
	"math"
)

// Step-time laws other than the roofline of gpuModel.stepTime (issue 35: the
// diagnosis evaluation and the twin's validation draw worlds whose physics
// the rules and the twin were not built from). A law is chosen by
// Config.StepLaw; its zero value is the roofline, unchanged.

// Step-time law kinds (StepLaw.Kind).
const (
	// LawRoofline is gpuModel.stepTime: StepOverhead + max(compute, memory)
	// + 10 % of the shorter, compute = 2·params·tokens / (PeakFLOPS·MFU·clock),
	// memory = (weights + KV bytes of every context token) / (bandwidth·efficiency).
	LawRoofline = ""
	// LawPerSequence adds to the roofline's overlap of compute and memory a
	// per-sequence decode cost (PerSeqDecode seconds per decoding sequence
	// per step at the full clock: sampling, per-sequence kernels and
	// bookkeeping, which neither reads DRAM at full rate nor fills the SMs)
	// and attention that grows with context: each prefilled token at
	// position p costs AttnQuad·p seconds more at the full clock (prefill
	// is context-quadratic).
	LawPerSequence = "per-sequence"
	// LawMemoryFloor makes the memory side a floor that moves with the
	// batch: reading the weights takes (weights / (bandwidth·efficiency)) ×
	// (1 + decoding sequences / FloorBatch) (the weight reads are re-issued
	// as the batch's activations outgrow the caches), plus the KV reads;
	// compute and memory overlap at 30 % of the shorter.
	LawMemoryFloor = "memory-floor"
)

// StepLaws lists the law kinds, the roofline first.
var StepLaws = []string{LawRoofline, LawPerSequence, LawMemoryFloor}

// StepLaw selects and parameterises the step-time law (see the Law*
// kinds). Zero: the roofline.
type StepLaw struct {
	Kind         string
	PerSeqDecode float64 // seconds per decoding sequence per step (LawPerSequence)
	AttnQuad     float64 // seconds per prefilled token per context token before it (LawPerSequence)
	FloorBatch   float64 // decoding sequences at which the weight-read floor doubles (LawMemoryFloor), > 0
}

// Validate checks the law's kind and parameters.
func (l StepLaw) Validate() error {
	switch l.Kind {
	case LawRoofline:
		return nil
	case LawPerSequence:
		if l.PerSeqDecode < 0 || l.AttnQuad < 0 || math.IsNaN(l.PerSeqDecode+l.AttnQuad) {
			return fmt.Errorf("stepLaw: perSeqDecode and attnQuad must be ≥ 0")
		}
		return nil
	case LawMemoryFloor:
		if !(l.FloorBatch > 0) {
			return fmt.Errorf("stepLaw: floorBatch must be > 0 for %s", LawMemoryFloor)
		}
		return nil
	}
	return fmt.Errorf("stepLaw: kind %q is not one of %q, %q, %q", l.Kind, LawRoofline, LawPerSequence, LawMemoryFloor)
}

// StepWork is what one engine step computes: prefilled tokens, decoding
// sequences (one token each), context tokens whose KV is read (every
// scheduled request's), and, for the prefilled tokens, the sum over them of
// their position in their prompt (the context attention reads before each).
type StepWork struct {
	PrefillTokens, DecodeSeqs float64
	Ctx                       float64
	PrefillPositions          float64
}

// StepSeconds is the duration of a step doing w at SM clock factor clock
// (SM clock over its maximum) under cfg's law, without the GPU's state: what
// the generators' steady-state predictions use.
func StepSeconds(cfg *Config, w StepWork, clock float64) float64 {
	d, _ := lawStep(cfg, w, clock)
	return d
}

// lawStep is the step time and GPU load of w under cfg.StepLaw at clock.
func lawStep(cfg *Config, w StepWork, clock float64) (float64, stepLoad) {
	g := cfg.GPU
	law := cfg.StepLaw
	tokens := w.PrefillTokens + w.DecodeSeqs
	compute := 2 * cfg.Model.Params * tokens / (g.PeakFLOPS * g.MFU * clock)
	bw := g.MemBandwidth * g.BWEfficiency
	weights := cfg.Model.Params * cfg.Model.BytesPerParam / bw
	kv := cfg.Model.KVBytesPerToken * w.Ctx / bw
	switch law.Kind {
	case LawPerSequence:
		compute += law.AttnQuad * w.PrefillPositions / clock
		mem := weights + kv
		per := law.PerSeqDecode * w.DecodeSeqs / clock
		kernel := math.Max(compute, mem) + 0.1*math.Min(compute, mem)
		d := cfg.StepOverhead + kernel + per
		l := stepLoad{
			util:   (kernel + 0.8*per + 0.5*cfg.StepOverhead) / d,
			sm:     math.Min(1, (compute+0.45*math.Max(0, mem-compute)+0.3*per)/d),
			dram:   math.Min(1, g.BWEfficiency*(mem+0.25*math.Max(0, compute-mem)+0.1*per)/d),
			tensor: math.Min(1, 0.9*compute/d),
		}
		return d, l
	case LawMemoryFloor:
		floor := weights*(1+w.DecodeSeqs/law.FloorBatch) + kv
		read := weights + kv // the bytes actually moved once
		kernel := math.Max(compute, floor) + 0.3*math.Min(compute, floor)
		d := cfg.StepOverhead + kernel
		l := stepLoad{
			util:   (kernel + 0.5*cfg.StepOverhead) / d,
			sm:     math.Min(1, (compute+0.5*math.Max(0, floor-compute))/d),
			dram:   math.Min(1, g.BWEfficiency*(read+0.25*math.Max(0, compute-floor))/d),
			tensor: math.Min(1, 0.9*compute/d),
		}
		return d, l
	}
	// the roofline (gpuModel.stepTime's formula)
	mem := weights + kv
	kernel := math.Max(compute, mem) + 0.1*math.Min(compute, mem)
	d := cfg.StepOverhead + kernel
	l := stepLoad{
		util:   (kernel + 0.5*cfg.StepOverhead) / d,
		sm:     math.Min(1, (compute+0.45*math.Max(0, mem-compute))/d),
		dram:   math.Min(1, g.BWEfficiency*(mem+0.25*math.Max(0, compute-mem))/d),
		tensor: math.Min(1, 0.9*compute/d),
	}
	return d, l
}

// stepTimeWork is gpuModel.stepTime for a step doing w: the roofline
// exactly as before for the zero law, else the law's time and load at the
// GPU's current clock.
func (g *gpuModel) stepTimeWork(cfg *Config, w StepWork) (float64, stepLoad) {
	if cfg.StepLaw.Kind == LawRoofline {
		return g.stepTime(cfg, int(w.PrefillTokens+w.DecodeSeqs), int(w.Ctx))
	}
	return lawStep(cfg, w, g.clockFactor())
}
