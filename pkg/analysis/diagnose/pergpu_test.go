package diagnose

import (
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/inferscope/inferscope-llm-datasource/pkg/settings"
)

// TestThrottlingPerGPU: a target with two GPUs where only GPU 1 is
// throttled (sw_thermal, SM clock at 0.7 of its maximum) from step 4 to
// step 7 and again from step 10 on, GPU 0 never. The finding names GPU 1
// and its UUID, one finding per run; GPU 0 gets none; the target's primary
// class follows GPU 1. Hysteresis is per GPU: GPU 1's clock recovering to
// 0.95 (above 0.9 but under 0.9 × 1.1 = 0.99) keeps it throttled at step 8.
func TestThrottlingPerGPU(t *testing.T) {
	const n = 14
	th := settings.DefaultDiagnosis()
	slow1, clk1 := constant(n, 0), constant(n, 1)
	for i := 4; i < n; i++ {
		if i == 9 {
			continue // cleared: no slowdown reason, full clock
		}
		slow1[i], clk1[i] = 1, 0.7
	}
	clk1[8] = 0.95 // within the hysteresis band: still throttled
	reasons1 := make([]string, n)
	for i := range reasons1 {
		if slow1[i] == 1 {
			reasons1[i] = "sw_thermal on gpu 1"
		}
	}
	gpus := []GPUInput{
		{GPURef: GPURef{GPU: "0", UUID: "GPU-aaa"}, Values: map[Signal][]float64{Slowdown: constant(n, 0), ClockRatio: constant(n, 1), SMActive: constant(n, 0.3)}},
		{GPURef: GPURef{GPU: "1", UUID: "GPU-bbb"}, Values: map[Signal][]float64{Slowdown: slow1, ClockRatio: clk1, SMActive: constant(n, 0.3)}, SlowdownReasons: reasons1},
	}
	tgt := TargetInput{Name: "a", Engine: "vllm", Generation: "v1", GPUs: gpus, Values: map[Signal][]float64{
		Up: constant(n, 1), UpMin: constant(n, 1), Running: constant(n, 8), Waiting: constant(n, 0),
		WaitingSpan: constant(n, 0), Progress: constant(n, 100),
		// target-level reductions as the plugin computes them: any slowdown, lowest clock
		Slowdown: slow1, ClockRatio: clk1,
	}}
	res := Diagnose(Input{Steps: steps(n, time.Minute), StallWindow: 37500 * time.Millisecond, Window: 5 * time.Minute,
		Targets: []TargetInput{tgt}}, th)
	r := res.Targets[0]
	assert.Equal(t, []GPURef{{"0", "GPU-aaa"}, {"1", "GPU-bbb"}}, r.GPUs)
	want := []bool{false, false, false, false, true, true, true, true, true, false, true, true, true, true}
	assert.Equal(t, want, r.GPUActive["1"])
	assert.Equal(t, make([]bool, n), r.GPUActive["0"])
	for i, w := range want {
		if w {
			assert.Equal(t, GPUThrottled, r.Primary[i], "step %d", i)
		} else {
			assert.NotEqual(t, GPUThrottled, r.Primary[i], "step %d", i)
		}
	}
	var thr []Finding
	for _, f := range r.Findings {
		if f.Class == GPUThrottled {
			thr = append(thr, f)
		}
	}
	require.Len(t, thr, 2, "two runs on GPU 1")
	for _, f := range thr {
		assert.Equal(t, []GPURef{{"1", "GPU-bbb"}}, f.GPUs)
		assert.Contains(t, EvidenceText(f.Evidence), "sw_thermal on gpu 1")
	}
	assert.Equal(t, t0.Add(4*time.Minute), thr[0].Start)
	assert.Equal(t, t0.Add(8*time.Minute), thr[0].End)
	assert.False(t, thr[0].Current)
	assert.Equal(t, t0.Add(10*time.Minute), thr[1].Start)
	assert.True(t, thr[1].Current)
	g, u := thr[1].GPUList()
	assert.Equal(t, "1", g)
	assert.Equal(t, "GPU-bbb", u)
}

// TestGPUFindingsNameTheirGPUs: decode memory-bound on a two-GPU target
// whose DRAM activity is 0.9 on GPU 0 and 0.5 on GPU 1 (mean 0.7 ≥ 0.6):
// the finding names GPU 0 only, and its evidence lists each GPU's value.
func TestGPUFindingsNameTheirGPUs(t *testing.T) {
	const n = 3
	th := settings.DefaultDiagnosis()
	tgt := TargetInput{Name: "d", Engine: "vllm", Generation: "v1", Values: map[Signal][]float64{
		Up: constant(n, 1), UpMin: constant(n, 1), Running: constant(n, 200), Waiting: constant(n, 0),
		WaitingSpan: constant(n, 0), Progress: constant(n, 1000), ITLMean: constant(n, 0.03),
		DRAMActive: constant(n, 0.7), SMActive: constant(n, 0.4),
	}, GPUs: []GPUInput{
		{GPURef: GPURef{GPU: "0", UUID: "GPU-aaa"}, Values: map[Signal][]float64{DRAMActive: constant(n, 0.9), SMActive: constant(n, 0.4)}},
		{GPURef: GPURef{GPU: "1"}, Values: map[Signal][]float64{DRAMActive: constant(n, 0.5), SMActive: constant(n, math.NaN())}},
	}}
	res := Diagnose(Input{Steps: steps(n, time.Minute), Window: 5 * time.Minute, Targets: []TargetInput{tgt}}, th)
	var dec *Finding
	for k, f := range res.Targets[0].Findings {
		if f.Class == DecodeMemory {
			dec = &res.Targets[0].Findings[k]
		}
	}
	require.NotNil(t, dec, "%+v", res.Targets[0].Findings)
	assert.Equal(t, []GPURef{{"0", "GPU-aaa"}}, dec.GPUs)
	assert.Contains(t, EvidenceText(dec.Evidence), "dram_active 0.7 ≥ 0.6 (per GPU: gpu 0 0.9, gpu 1 0.5)")
}
