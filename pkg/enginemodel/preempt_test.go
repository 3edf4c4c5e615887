package enginemodel

import (
	"fmt"
	"math"
	"strings"
	"testing"
)

// The scheduler under each preemption policy, step by step, on cases small
// enough to follow by hand: KV blocks of 4 tokens, 6 blocks in all (24
// tokens), three requests A, B, C arriving together, 8 output tokens each.
// A step is written as the scheduled requests with their token counts ("p"
// for a prefill) and, first, "-X" for each request preempted while the step
// was formed; a formation that preempted and scheduled nothing is the "-X"
// alone.

// schedCase builds the engine with the prompts (A, B, C) and the policy,
// the requests queued in that order at time 0.
func schedCase(t *testing.T, prompts []int, p Preemption) (*engine, []*Request) {
	t.Helper()
	cfg := DefaultConfig()
	cfg.Rate = 0
	cfg.BlockSize = 4
	cfg.NumGPUBlocks = 6
	cfg.PrefixCaching = false
	cfg.MaxNumSeqs = 8
	cfg.MaxNumBatchedTokens = 64
	cfg.Prompt = LengthDist{Kind: "const", Mean: 8}
	cfg.Output = LengthDist{Kind: "const", Mean: 8}
	cfg.ClientTimeout = 0
	cfg.Preemption = p
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	e := newEngine(cfg, newVLLMStats(cfg.Version, cfg.Model.MaxModelLen), newGPUModel(cfg.GPU))
	var rs []*Request
	for _, n := range prompts {
		r := e.newRequest(n, 8, cfg.MaxTokens, 0)
		r.state = stateWaiting
		e.waiting.pushBack(r)
		rs = append(rs, r)
	}
	return e, rs
}

// schedRun forms and runs steps until no work is left, returning each
// formation written as above and the duration of each step that ran.
func schedRun(t *testing.T, e *engine, rs []*Request) (steps []string, durations []float64) {
	t.Helper()
	name := func(r *Request) string { return string(rune('A' + int(r.ID) - 1)) }
	for k := 0; e.hasWork(); k++ {
		if k > 100 {
			t.Fatal("the scheduler did not finish the three requests in 100 formations")
		}
		before := make([]int, len(rs))
		for i, r := range rs {
			before[i] = r.Preemptions
		}
		e.startStep()
		var parts []string
		for i, r := range rs {
			if r.Preemptions > before[i] {
				parts = append(parts, "-"+name(r))
			}
		}
		if e.stepping {
			for _, s := range e.batch {
				p := ""
				if s.prefill {
					p = "p"
				}
				parts = append(parts, fmt.Sprintf("%s%d%s", name(s.r), s.n, p))
			}
			durations = append(durations, e.stepEnd-e.stepStart)
			e.finishStep()
		}
		steps = append(steps, strings.Join(parts, " "))
	}
	for _, r := range rs {
		if r.FinishReason != ReasonLength && r.FinishReason != ReasonStop {
			t.Fatalf("request %s did not finish (%q)", name(r), r.FinishReason)
		}
	}
	return steps, durations
}

func TestSchedulerPreemptionHandCases(t *testing.T) {
	// Steps 1–5 of every case with prompts of 4: A, B and C admitted (1 block
	// each), their second block taken at step 2 (token 5), 0 blocks free after
	// it; at step 6 A needs its third block (token 9) and none is free.
	first5 := []string{"A4p B4p C4p", "A1 B1 C1", "A1 B1 C1", "A1 B1 C1", "A1 B1 C1"}
	cases := []struct {
		name    string
		prompts []int
		p       Preemption
		want    []string
	}{{
		// vLLM's: C (newest) preempted, its 2 blocks give A and B theirs; A and
		// B finish at step 8 (token 8); C, recomputed, prefills its prompt and
		// its 5 tokens (9) at step 9 and finishes at step 11.
		name: "recompute, newest", prompts: []int{4, 4, 4}, p: Preemption{},
		want: append(first5, "-C A1 B1", "A1 B1", "A1 B1", "C9p", "C1", "C1"),
	}, {
		// A (oldest) is the victim and the one asking: it is preempted and the
		// formation stops (nothing runs); the next one runs B and C on A's 2
		// blocks; A, recomputed, resumes once B and C finish.
		name: "recompute, oldest", prompts: []int{4, 4, 4}, p: Preemption{Victim: VictimOldest},
		want: append(first5, "-A", "B1 C1", "B1 C1", "B1 C1", "A9p", "A1", "A1"),
	}, {
		// B's prompt of 8 holds 2 blocks from step 1 (2 left free). Step 2: A
		// takes 1 (token 5), B its third (token 9), C finds none: B holds the
		// most (3), is preempted out of the batch it was scheduled in, and C
		// gets a block. B (9 tokens to recompute, 3 blocks) waits for A and C
		// to finish (step 8), prefills at step 9 and finishes at step 15.
		name: "recompute, largest", prompts: []int{4, 8, 4}, p: Preemption{Victim: VictimLargest},
		want: []string{"A4p B8p C4p", "-B A1 C1", "A1 C1", "A1 C1", "A1 C1", "A1 C1", "A1 C1", "A1 C1",
			"B9p", "B1", "B1", "B1", "B1", "B1", "B1"},
	}, {
		// Swap: C keeps its 8 computed tokens in host memory and resumes at
		// step 9 with a one-token decode (no prefill), finishing at step 11.
		name: "swap, newest", prompts: []int{4, 4, 4}, p: Preemption{Mode: PreemptSwap, SwapBandwidth: 25e9},
		want: append(first5, "-C A1 B1", "A1 B1", "A1 B1", "C1", "C1", "C1"),
	}, {
		// Swap space of one block: C's 2 blocks do not fit, C is recomputed.
		name: "swap, space too small", prompts: []int{4, 4, 4},
		p:    Preemption{Mode: PreemptSwap, SwapBandwidth: 25e9, SwapBytes: 4 * 131072},
		want: append(first5, "-C A1 B1", "A1 B1", "A1 B1", "C9p", "C1", "C1"),
	}}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e, rs := schedCase(t, c.prompts, c.p)
			got, _ := schedRun(t, e, rs)
			if strings.Join(got, " | ") != strings.Join(c.want, " | ") {
				t.Fatalf("steps\n got %s\nwant %s", strings.Join(got, " | "), strings.Join(c.want, " | "))
			}
			var pre int
			for _, r := range rs {
				pre += r.Preemptions
			}
			if pre != 1 || e.stats.Preemptions != 1 {
				t.Fatalf("preemptions: %d on the requests, %v counted; want 1", pre, e.stats.Preemptions)
			}
		})
	}
}

// TestSchedulerSwapCosts: the swap-out and swap-in copy C's 8 computed
// tokens (8 × 131 072 bytes at 25 GB/s, 41.9 µs) inside the steps that do
// them, and the host space is held in between.
func TestSchedulerSwapCosts(t *testing.T) {
	const copyS = 8 * 131072 / 25e9
	swapE, swapR := schedCase(t, []int{4, 4, 4}, Preemption{Mode: PreemptSwap, SwapBandwidth: 25e9, SwapBytes: 4 * 4 * 131072})
	recE, _ := schedCase(t, []int{4, 4, 4}, Preemption{})
	// run both to the end of step 6 (the preemption) and compare
	var dSwap, dRec []float64
	for k := 0; k < 6; k++ {
		for _, x := range []struct {
			e *engine
			d *[]float64
		}{{swapE, &dSwap}, {recE, &dRec}} {
			x.e.startStep()
			*x.d = append(*x.d, x.e.stepEnd-x.e.stepStart)
			x.e.finishStep()
		}
	}
	for k := 0; k < 5; k++ {
		if dSwap[k] != dRec[k] {
			t.Fatalf("step %d: %v with swap, %v without; want equal before any preemption", k+1, dSwap[k], dRec[k])
		}
	}
	if got := dSwap[5] - dRec[5]; math.Abs(got-copyS) > 1e-12 {
		t.Fatalf("step 6: swap-out adds %v s, want %v", got, copyS)
	}
	// 2 of the 4 host blocks held while C is out; 1 swapped request on the page
	if swapE.swapped != 1 || swapE.cpuCacheUsage() != 0.5 {
		t.Fatalf("after the swap-out: %d swapped, host usage %v; want 1 and 0.5", swapE.swapped, swapE.cpuCacheUsage())
	}
	// steps 7, 8 (A and B finish), then 9: C swapped in, one decode token
	// with a context of 9 tokens, plus the copy back
	for k := 0; k < 3; k++ {
		swapE.startStep()
		if k == 2 {
			cfg := swapE.cfg
			g := cfg.GPU
			compute := 2 * cfg.Model.Params / (g.PeakFLOPS * g.MFU)
			mem := (cfg.Model.Params*cfg.Model.BytesPerParam + cfg.Model.KVBytesPerToken*9) / (g.MemBandwidth * g.BWEfficiency)
			want := cfg.StepOverhead + math.Max(compute, mem) + 0.1*math.Min(compute, mem) + copyS
			if d := swapE.stepEnd - swapE.stepStart; math.Abs(d-want) > 1e-12 {
				t.Fatalf("step 9: %v s, want %v (one decode token at context 9 plus the swap-in)", d, want)
			}
			if len(swapE.batch) != 1 || swapE.batch[0].r != swapR[2] || swapE.batch[0].n != 1 || swapE.batch[0].prefill {
				t.Fatalf("step 9: want C alone decoding one token, got %+v", swapE.batch)
			}
		}
		swapE.finishStep()
	}
	if swapE.swapped != 0 || swapE.cpuCacheUsage() != 0 || swapE.swapFree != 4 {
		t.Fatalf("after the swap-in: %d swapped, host usage %v, %d host blocks free; want 0, 0, 4", swapE.swapped, swapE.cpuCacheUsage(), swapE.swapFree)
	}
}

func TestPreemptionValidate(t *testing.T) {
	for _, p := range []Preemption{{Mode: "lru"}, {Victim: "random"}, {Mode: PreemptSwap}, {Mode: PreemptSwap, SwapBandwidth: 1e9, SwapBytes: -1}} {
		if err := p.Validate(); err == nil || !strings.HasPrefix(err.Error(), "preemption: ") {
			t.Fatalf("%+v: want an error naming the field, got %v", p, err)
		}
	}
	for _, p := range []Preemption{{}, {Victim: VictimOldest}, {Mode: PreemptSwap, SwapBandwidth: 25e9, Victim: VictimLargest}} {
		if err := p.Validate(); err != nil {
			t.Fatalf("%+v: %v", p, err)
		}
	}
}
