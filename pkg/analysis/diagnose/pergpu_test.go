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
	clk1[8] = 0.905 // within the hysteresis band (0.9 + 0.1 × (1 − 0.9) = 0.91): still throttled
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
	const n = 1 // one step: no hysteresis, the evidence shows the plain thresholds
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

// holInput is a target with a long-prompt tail: median prompt 300 tokens,
// 99th percentile p99 tokens; 15,000 prompt tokens/s over 8 finished
// requests/s (1,875 tokens per request); mean TTFT 0.2 s against mean
// prefill 0.1 s; 30 running of a configured 256; KV usage 0.3.
func holInput(n int, p99 float64) TargetInput {
	return TargetInput{Name: "h", Engine: "vllm", Generation: "v1", RunningCeiling: 256, Values: map[Signal][]float64{
		Up: constant(n, 1), UpMin: constant(n, 1), Running: constant(n, 30), Waiting: constant(n, 0.5),
		WaitingSpan: constant(n, 1), Progress: constant(n, 1000), KVUsage: constant(n, 0.3),
		PromptTok: constant(n, 15000), GenTok: constant(n, 1500), Finished: constant(n, 8),
		TTFTMean: constant(n, 0.2), PrefillMean: constant(n, 0.1), QueueMean: constant(n, 0.1),
		PromptP50: constant(n, 300), PromptP99: constant(n, p99),
	}, NoGPU: "no GPU agent is configured"}
}

// TestHeadOfLineFromPromptTail: the rule holds with a long tail (p99 27,000
// ≥ 8,000 tokens and 90× the median ≥ 10), TTFT / prefill = 2 ≥ 1.5 and
// prefill per prompt token 0.1 / 1,875 = 5.3e-5 s ≤ 2e-4 s; it does not with a
// short tail (p99 5,000 < 8,000) or a flat one (p99 2,700 = 9× the median),
// nor without the prompt-length histogram, which it then says it could not read.
func TestHeadOfLineFromPromptTail(t *testing.T) {
	th := settings.DefaultDiagnosis()
	run := func(in TargetInput) TargetResult {
		return Diagnose(Input{Steps: steps(3, time.Minute), Window: 5 * time.Minute, Targets: []TargetInput{in}}, th).Targets[0]
	}
	r := run(holInput(3, 27000))
	assert.Equal(t, []Class{HeadOfLine, HeadOfLine, HeadOfLine}, r.Primary)
	f := r.Current()[0]
	assert.Equal(t, HeadOfLine, f.Class)
	assert.Equal(t, High, f.Confidence)
	txt := EvidenceText(f.Evidence)
	// The finding held at the previous step: its evidence prints the
	// thresholds actually used, relaxed by the 10 % hysteresis
	// (8000 × 0.9 = 7200, 10 × 0.9 = 9, 1.5 × 0.9 = 1.35).
	assert.Contains(t, txt, "prompt_tokens_p99 27000 tokens ≥ 7200")
	assert.Contains(t, txt, "prompt_tail_ratio 90 ≥ 9 (99th percentile 27000 tokens, median 300 tokens per prompt)")
	assert.Contains(t, txt, "ttft_over_prefill 2 ≥ 1.35")
	assert.Contains(t, txt, "prefill_per_prompt_token 5.33e-05 s ≤ 0.0002")
	// V1 always chunks prefills: the advice names the partial-prefill flags
	// (issue 20, point 11); a V0 engine is told to enable chunked prefill.
	assert.Contains(t, f.Recommendation, "--max-num-partial-prefills")
	assert.NotContains(t, f.Recommendation, "--enable-chunked-prefill")
	v0 := holInput(3, 27000)
	v0.Generation = "v0"
	assert.Contains(t, run(v0).Current()[0].Recommendation, "--enable-chunked-prefill")

	for _, p99 := range []float64{5000, 2700} {
		assert.NotContains(t, run(holInput(3, p99)).Primary, HeadOfLine, "p99 %v", p99)
	}
	in := holInput(3, 27000)
	delete(in.Values, PromptP50)
	delete(in.Values, PromptP99)
	in.Absent = map[Signal]string{PromptP99: "not exported by sglang"}
	r = run(in)
	assert.NotContains(t, r.Primary, HeadOfLine)
	assert.Contains(t, r.Current()[0].NotChecked, "prompt_tokens_p99: not exported by sglang")
}
