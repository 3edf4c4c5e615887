package enginemodel

import (
	"fmt"
	"math"
)

// Preemption policies other than vLLM's (issue 35: the diagnosis evaluation
// draws a scheduler world the rules were not built from). A policy is chosen
// by Config.Preemption; its zero value is vLLM V1's, unchanged: recompute
// preemption of the most recently admitted running request.

// Preemption modes (Preemption.Mode).
const (
	// PreemptRecompute frees the victim's KV blocks and forgets its computed
	// tokens: on resumption its prompt and every token generated so far are
	// prefilled again (vLLM V1; V0's preemption_mode="recompute").
	PreemptRecompute = ""
	// PreemptSwap copies the victim's computed KV to host memory (vLLM V0's
	// preemption_mode="swap", --swap-space): it resumes where it stopped,
	// with no recomputation, after its KV is copied back. Each copy costs
	// tokens × KVBytesPerToken / SwapBandwidth seconds, added to the step in
	// which the swap happens (swaps block the step, as in V0). When the host
	// swap space cannot hold the victim's blocks it is recomputed instead.
	PreemptSwap = "swap"
)

// Victim policies (Preemption.Victim): which running request is preempted
// when a running request needs a KV block and none is free.
const (
	// VictimNewest preempts the most recently (re)admitted running request:
	// vLLM's FCFS policy (the tail of the running queue).
	VictimNewest = ""
	// VictimOldest preempts the running request admitted longest ago (the
	// head of the running queue).
	VictimOldest = "oldest"
	// VictimLargest preempts the running request holding the most KV blocks
	// (frees the most at once); ties go to the most recently admitted.
	VictimLargest = "largest"
)

// Preemption selects the preemption mode and victim policy. Zero: vLLM V1's
// recompute of the newest.
type Preemption struct {
	Mode   string // PreemptRecompute or PreemptSwap
	Victim string // VictimNewest, VictimOldest or VictimLargest
	// SwapBandwidth is the host↔GPU copy rate for PreemptSwap, bytes/s
	// (PCIe: about 25e9 for Gen4 x16, 50e9 for Gen5), > 0 with swap.
	SwapBandwidth float64
	// SwapBytes is the host swap space for PreemptSwap, bytes (vLLM's
	// --swap-space, 4 GiB by default); 0 means unlimited.
	SwapBytes float64
}

// Validate checks the mode, the victim policy and the swap parameters.
func (p Preemption) Validate() error {
	switch p.Mode {
	case PreemptRecompute:
	case PreemptSwap:
		if !(p.SwapBandwidth > 0) || math.IsInf(p.SwapBandwidth, 0) {
			return fmt.Errorf("preemption: swapBandwidth must be > 0 bytes/s for %s", PreemptSwap)
		}
		if !(p.SwapBytes >= 0) || math.IsInf(p.SwapBytes, 0) {
			return fmt.Errorf("preemption: swapBytes must be ≥ 0 (0: unlimited)")
		}
	default:
		return fmt.Errorf("preemption: mode %q is not one of %q (recompute), %q", p.Mode, PreemptRecompute, PreemptSwap)
	}
	switch p.Victim {
	case VictimNewest, VictimOldest, VictimLargest:
		return nil
	}
	return fmt.Errorf("preemption: victim %q is not one of %q (newest), %q, %q", p.Victim, VictimNewest, VictimOldest, VictimLargest)
}

// victimIndex is the index in e.running of the request the policy preempts
// (e.running is not empty).
func (e *engine) victimIndex() int {
	switch e.cfg.Preemption.Victim {
	case VictimOldest:
		return 0
	case VictimLargest:
		j := len(e.running) - 1
		for i := j - 1; i >= 0; i-- {
			if e.running[i].blocks > e.running[j].blocks {
				j = i
			}
		}
		return j
	}
	return len(e.running) - 1
}

// swapBlocksTotal is the host swap space in KV blocks (−1: unlimited).
func (e *engine) swapBlocksTotal() int {
	p := e.cfg.Preemption
	if p.SwapBytes == 0 {
		return -1
	}
	return int(p.SwapBytes / (e.cfg.Model.KVBytesPerToken * float64(e.cfg.BlockSize)))
}

// swapOut moves r's computed KV to host memory when the policy swaps and the
// swap space holds it; it reports whether it did (else r is recomputed).
func (e *engine) swapOut(r *Request) bool {
	if e.cfg.Preemption.Mode != PreemptSwap || r.computed == 0 {
		return false
	}
	b := e.blocksFor(r.computed)
	if e.swapFree >= 0 && b > e.swapFree {
		return false
	}
	if e.swapFree >= 0 {
		e.swapFree -= b
	}
	r.swapBlocks = b
	r.swapped = true
	e.swapped++
	e.swapTokens += r.computed
	return true
}

// swapIn returns r's host blocks as it resumes; the copy back is charged to
// the step being formed.
func (e *engine) swapIn(r *Request) {
	if !r.swapped {
		return
	}
	e.swapTokens += r.computed
	e.dropSwap(r)
}

// dropSwap frees r's host blocks (resumed, aborted or lost in a restart).
func (e *engine) dropSwap(r *Request) {
	if !r.swapped {
		return
	}
	if e.swapFree >= 0 {
		e.swapFree += r.swapBlocks
	}
	r.swapBlocks = 0
	r.swapped = false
	e.swapped--
}

// swapSeconds is the copy time of the tokens swapped out or in since the
// last step started, and resets the count.
func (e *engine) swapSeconds() float64 {
	if e.swapTokens == 0 {
		return 0
	}
	s := float64(e.swapTokens) * e.cfg.Model.KVBytesPerToken / e.cfg.Preemption.SwapBandwidth
	e.swapTokens = 0
	return s
}

// cpuCacheUsage is the share of the host swap space in use (0 when it is
// unlimited or unused).
func (e *engine) cpuCacheUsage() float64 {
	total := e.swapBlocksTotal()
	if total <= 0 || e.swapFree < 0 {
		return 0
	}
	return float64(total-e.swapFree) / float64(total)
}
