package diagnose

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/inferscope/inferscope-llm-datasource/pkg/settings"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func steps(n int, step time.Duration) []time.Time {
	out := make([]time.Time, n)
	for i := range out {
		out[i] = t0.Add(time.Duration(i) * step)
	}
	return out
}

func constant(n int, v float64) []float64 {
	out := make([]float64, n)
	for i := range out {
		out[i] = v
	}
	return out
}

// scrapeCounters simulates what a 15 s scrape stores for a stalling engine
// and derives the stall-window signals by hand, as PromQL would: progress
// is the rate over the last 2.5 scrape intervals (the samples at i−2, i−1,
// i), up_min the lowest up over them, waiting_span max − min of waiting.
func stallInput(n, stallAt, resumeAt int, running float64) TargetInput {
	gen := make([]float64, n) // cumulative generation tokens at each scrape
	waiting := make([]float64, n)
	for i := 1; i < n; i++ {
		gen[i] = gen[i-1]
		waiting[i] = 0
		if i < stallAt || i >= resumeAt {
			gen[i] += 500
		} else {
			waiting[i] = float64(i-stallAt+1) * 3 // arrivals pile up
		}
	}
	progress := make([]float64, n)
	span := make([]float64, n)
	for i := range progress {
		lo := max(0, i-2)
		progress[i] = (gen[i] - gen[lo]) / (float64(i-lo) * 15)
		mn, mx := waiting[lo], waiting[lo]
		for k := lo; k <= i; k++ {
			mn, mx = math.Min(mn, waiting[k]), math.Max(mx, waiting[k])
		}
		span[i] = mx - mn
	}
	run := constant(n, 6)
	for i := stallAt; i < resumeAt && i < n; i++ {
		run[i] = running
	}
	return TargetInput{Name: "a", Engine: "vllm", Generation: "v1", Values: map[Signal][]float64{
		Up: constant(n, 1), UpMin: constant(n, 1), Running: run, Waiting: waiting,
		WaitingSpan: span, Progress: progress,
	}, NoGPU: "no GPU agent is configured"}
}

func TestStallFiresWithinThreeScrapesAndClears(t *testing.T) {
	th := settings.DefaultDiagnosis()
	for _, running := range []float64{0, 4} {
		const n, stallAt, resumeAt = 40, 10, 25
		in := Input{Steps: steps(n, 15*time.Second), StallWindow: 37500 * time.Millisecond, Window: time.Minute,
			Targets: []TargetInput{stallInput(n, stallAt, resumeAt, running)}}
		res := Diagnose(in, th)
		p := res.Targets[0].Primary
		first := -1
		for i, c := range p {
			if c == Stalled {
				first = i
				break
			}
		}
		require.GreaterOrEqual(t, first, stallAt, "running=%v: never before the stall: %v", running, p)
		// the last progress happened in the interval ending at scrape stallAt−1
		assert.LessOrEqual(t, first-(stallAt-1), 3, "running=%v: within 3 scrape intervals: %v", running, p)
		for i := first; i < resumeAt; i++ {
			assert.Equal(t, Stalled, p[i], "running=%v step %d", running, i)
		}
		for i := resumeAt; i < n; i++ {
			assert.NotEqual(t, Stalled, p[i], "running=%v: cleared once progress resumes, step %d", running, i)
		}
		var f *Finding
		for k := range res.Targets[0].Findings {
			if res.Targets[0].Findings[k].Class == Stalled {
				f = &res.Targets[0].Findings[k]
			}
		}
		require.NotNil(t, f)
		assert.Equal(t, Critical, f.Severity)
		assert.Equal(t, in.Steps[first], f.Start)
		assert.Equal(t, in.Steps[resumeAt-1], f.End)
		assert.False(t, f.Current)
		assert.Contains(t, f.Text(), "progress 0 /s = 0")
		assert.Contains(t, f.Recommendation, "restart")
	}
}

func TestIdleStaleGaugesIsNotAStall(t *testing.T) {
	const n = 10
	// vLLM after a mass cancel: running stays at 7, nothing arrives, nothing finishes.
	ti := TargetInput{Name: "a", Values: map[Signal][]float64{
		Up: constant(n, 1), UpMin: constant(n, 1), Running: constant(n, 7), Waiting: constant(n, 0),
		WaitingSpan: constant(n, 0), Progress: constant(n, 0),
	}}
	res := Diagnose(Input{Steps: steps(n, 15*time.Second), StallWindow: 37500 * time.Millisecond, Window: time.Minute, Targets: []TargetInput{ti}}, settings.DefaultDiagnosis())
	for _, c := range res.Targets[0].Primary {
		assert.Equal(t, IdleStaleGauges, c)
	}
	cur := res.Targets[0].Current()
	require.Len(t, cur, 1)
	assert.Equal(t, Info, cur[0].Severity)
	assert.Contains(t, cur[0].Summary, "Not a stall")
}

func TestPageNotAnsweringCannotTell(t *testing.T) {
	const n = 5
	ti := TargetInput{Name: "a", Values: map[Signal][]float64{Up: {1, 1, 0, 0, 1}, UpMin: {1, 1, 0, 0, 0},
		Running: {1, 1, math.NaN(), math.NaN(), 1}, Waiting: constant(n, 0), Progress: {5, 5, math.NaN(), math.NaN(), 5}}}
	res := Diagnose(Input{Steps: steps(n, time.Minute), Window: time.Minute, StallWindow: 30 * time.Second, Targets: []TargetInput{ti}}, settings.DefaultDiagnosis())
	p := res.Targets[0].Primary
	assert.Equal(t, Unknown, p[2])
	assert.Equal(t, Unknown, p[3])
	assert.NotEqual(t, Stalled, p[4])
}

// TestEvidenceValuesAndThresholds checks the KV rule's evidence against the
// inputs and the documented thresholds, and that an approximate signal
// lowers the confidence with the engine's reason.
func TestEvidenceValuesAndThresholds(t *testing.T) {
	const n = 1 // one step: no hysteresis, the evidence shows the plain thresholds
	ti := TargetInput{Name: "sg", Engine: "sglang", Values: map[Signal][]float64{
		Up: constant(n, 1), UpMin: constant(n, 1), Running: constant(n, 20), Waiting: constant(n, 0), WaitingSpan: constant(n, 0),
		Progress: constant(n, 100), KVUsage: constant(n, 0.95), Preemptions: constant(n, 0.2),
	}, Approximate: map[Signal]string{Preemptions: "SGLang counts retractions"}, NoGPU: "no GPU agent is configured"}
	res := Diagnose(Input{Steps: steps(n, time.Minute), Window: 5 * time.Minute, StallWindow: 30 * time.Second, Targets: []TargetInput{ti}}, settings.DefaultDiagnosis())
	cur := res.Targets[0].Current()
	require.NotEmpty(t, cur)
	f := cur[0]
	assert.Equal(t, KVPressure, f.Class)
	assert.Equal(t, Medium, f.Confidence)
	assert.Contains(t, strings.Join(f.ConfidenceWhy, " "), "SGLang counts retractions")
	require.Len(t, f.Evidence, 2)
	assert.Equal(t, Evidence{Signal: "kv_cache_usage", Value: 0.95, Op: ">=", Threshold: 0.9, Unit: "ratio"}, f.Evidence[0])
	assert.Equal(t, Evidence{Signal: "preemptions", Value: 0.2, Op: ">=", Threshold: 0.001, Unit: "/s"}, f.Evidence[1])
	assert.Equal(t, "kv_cache_usage 0.95 ≥ 0.9", f.Evidence[0].String())
	assert.Contains(t, f.Recommendation, "--max-num-seqs")
	assert.Contains(t, f.Recommendation, "--kv-cache-dtype fp8")
}

// TestWithoutGPUSaysWhatItCouldNotCheck: throttling cannot be diagnosed
// without GPU data and healthy says so; decode-bound evidence from the
// engine alone is not guessed (issue 20, point 5): insufficient_data names
// the class it could not decide and the missing DRAM signal.
func TestWithoutGPUSaysWhatItCouldNotCheck(t *testing.T) {
	const n = 3
	base := func() map[Signal][]float64 {
		return map[Signal][]float64{Up: constant(n, 1), UpMin: constant(n, 1), Running: constant(n, 10), Waiting: constant(n, 0),
			WaitingSpan: constant(n, 0), Progress: constant(n, 100), KVUsage: constant(n, 0.1), Preemptions: constant(n, 0)}
	}
	in := Input{Steps: steps(n, time.Minute), Window: 5 * time.Minute, StallWindow: 30 * time.Second, Targets: []TargetInput{
		{Name: "ok", Values: base(), NoGPU: "no GPU agent is configured for this target"},
	}}
	dec := base()
	dec[RunningAvg] = constant(n, 200)
	dec[ITLMean] = constant(n, 0.03)
	in.Targets = append(in.Targets, TargetInput{Name: "dec", Values: dec, NoGPU: "no GPU agent is configured for this target"})
	res := Diagnose(in, settings.DefaultDiagnosis())
	h := res.Targets[0].Current()
	require.Len(t, h, 1)
	assert.Equal(t, Healthy, h[0].Class)
	assert.Equal(t, Medium, h[0].Confidence)
	nc := strings.Join(h[0].NotChecked, "; ")
	assert.Contains(t, nc, "slowdown: no GPU agent is configured for this target")
	assert.Contains(t, nc, "sm_clock_ratio: no GPU agent")
	d := res.Targets[1].Current()
	require.NotEmpty(t, d)
	assert.Equal(t, InsufficientData, d[0].Class)
	assert.Contains(t, d[0].Summary, "decode_memory_bound")
	assert.Contains(t, EvidenceText(d[0].Evidence), "dram_active: no GPU agent")
	assert.Contains(t, strings.Join(d[0].NotChecked, ";"), "dram_active: no GPU agent")
}

func TestAbortedTrafficSaysHowMany(t *testing.T) {
	const n = 2
	ti := TargetInput{Name: "a", Values: map[Signal][]float64{Up: constant(n, 1), UpMin: constant(n, 1), Running: constant(n, 5),
		Waiting: constant(n, 0), WaitingSpan: constant(n, 0), Progress: constant(n, 50), Finished: constant(n, 2), Aborted: constant(n, 0.5)}}
	res := Diagnose(Input{Steps: steps(n, time.Minute), Window: 5 * time.Minute, StallWindow: 30 * time.Second, Targets: []TargetInput{ti}}, settings.DefaultDiagnosis())
	cur := res.Targets[0].Current()
	require.NotEmpty(t, cur)
	assert.Equal(t, AbortedTraffic, cur[0].Class)
	// 0.5 aborted requests/s over a 5-minute window = 150 requests.
	assert.Contains(t, cur[0].Summary, "about 150 requests in the last 5m did not")
	assert.InDelta(t, 0.25, cur[0].Evidence[0].Value, 1e-12)
}

func TestHysteresisKeepsAFindingAtTheThreshold(t *testing.T) {
	kv := []float64{0.95, 0.88, 0.95, 0.85, 0.95}
	n := len(kv)
	ti := TargetInput{Name: "a", Values: map[Signal][]float64{Up: constant(n, 1), UpMin: constant(n, 1), Running: constant(n, 5),
		Waiting: constant(n, 0), WaitingSpan: constant(n, 0), Progress: constant(n, 50), KVUsage: kv, Preemptions: constant(n, 0.1)}}
	res := Diagnose(Input{Steps: steps(n, time.Minute), Window: 5 * time.Minute, StallWindow: 30 * time.Second, Targets: []TargetInput{ti}}, settings.DefaultDiagnosis())
	// 0.88 ≥ 0.9 × (1 − 0.1) = 0.81 keeps it; so does 0.85.
	assert.Equal(t, []Class{KVPressure, KVPressure, KVPressure, KVPressure, KVPressure}, res.Targets[0].Primary)
}

// TestNoPanicOnArbitraryInputs feeds random, short, NaN and infinite series.
func TestNoPanicOnArbitraryInputs(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	all := []Signal{Up, UpMin, Running, Waiting, RunningAvg, WaitingAvg, WaitingSpan, KVUsage, Preemptions, Finished, Aborted,
		PromptTok, GenTok, Progress, QueueMean, PrefillMean, InferenceMean, E2EMean, TTFTMean, ITLMean, SMActive, DRAMActive,
		TensorActive, GPUUtil, ClockRatio, Slowdown}
	pick := []float64{0, 1, -1, 0.5, 1e9, math.NaN(), math.Inf(1), math.Inf(-1), 300, 0.01}
	for trial := 0; trial < 300; trial++ {
		n := r.IntN(6)
		ti := TargetInput{Name: "x", Values: map[Signal][]float64{}, SlowdownReasons: make([]string, r.IntN(4))}
		for _, s := range all {
			if r.IntN(3) == 0 {
				continue
			}
			v := make([]float64, r.IntN(n+2))
			for i := range v {
				v[i] = pick[r.IntN(len(pick))]
			}
			ti.Values[s] = v
		}
		ti.RunningCeiling = pick[r.IntN(len(pick))]
		res := Diagnose(Input{Steps: steps(n, time.Minute), Targets: []TargetInput{ti}}, settings.DefaultDiagnosis())
		require.Len(t, res.Targets, 1)
		for _, f := range res.Targets[0].Findings {
			_ = f.Text()
		}
	}
}
