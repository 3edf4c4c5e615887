package sim

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/inferscope/inferscope-llm-datasource/pkg/enginemodel"
)

// Bottleneck labels of the randomized workloads (GenerateWorkload) that the
// scenario table has no label for.
const (
	BottleneckPowerCap    = "gpu-power-cap"    // enforced power limit far below the board's: SM clock lowered under load
	BottleneckStaleGauges = "stale-gauges"     // mass cancel: the page answers, every series frozen, nothing arrives
	BottleneckNoGPUData   = "no-gpu-data"      // a GPU fault on a target without a GPU agent: the cause cannot be decided
	BottleneckTokenBudget = "prefill-overload" // prompts arrive faster than prefill can compute them (the token budget fills)
)

// Workload is one randomized workload with its ground truth: the
// configuration that produces it, scrape-level faults, whether the GPU
// agent is scraped, and the causes it injects. Causes are Bottleneck*
// labels; a workload with several injects a combination (any of them is a
// correct diagnosis). Onset is when the causes start (0: from the start);
// before it the workload is what Before says (BottleneckNone or
// BottleneckIdle).
type Workload struct {
	Seed     uint64
	Family   string // generator family, e.g. "queue", "thermal", "healthy-busy"
	Causes   []string
	Before   string
	Onset    time.Duration
	Config   Config
	Faults   Faults
	GPUAgent bool
	// LlamaCpp: the engine's page is a llama.cpp server's (Sim.ExposeLlamaCpp), not vLLM's.
	LlamaCpp bool
	// Predicted figures from the generator's roofline (see predict), for the
	// report: mean running requests, decode step (ITL) in seconds, share of
	// the GPU's compute spent on prefill, and KV blocks in use over those
	// available. Above 1 a resource is oversubscribed.
	Predicted Prediction
	// SLO is the objective the workload is held to: the 99th percentile of
	// TTFT and of the per-token latency, in seconds (the chat profile, 3 s
	// and 50 ms, unless the family needs a tighter one). The evaluation
	// holds the per-token objective as a TPOT p99 objective, which its
	// ground truth (each request's decode time per token) measures.
	SLO     SLO
	Summary string
	// World is the world the workload was drawn in (Worlds; WorldRoofline
	// for GenerateFamily).
	World string
}

// SLO is a pair of 99th-percentile latency objectives, in seconds.
type SLO struct {
	TTFT, ITL float64
}

// Prediction is the generator's steady-state estimate of a configuration
// (predict): Running requests (Little's law), ITL seconds per decode step,
// PrefillLoad (prompt tokens/s × compute seconds per token, 0..), KVLoad
// (blocks needed over blocks available) and SeatLoad (running over
// MaxNumSeqs).
type Prediction struct {
	Running, ITL, PrefillLoad, KVLoad, SeatLoad float64
}

// Faults are changes made to what a scrape stores rather than to the
// engine (FaultAppender applies them).
type Faults struct {
	// FreezeAt, when > 0, holds every sample of the vLLM target at its last
	// value before this time (a page that keeps answering with frozen
	// series, as vLLM after a mass cancel).
	FreezeAt time.Duration
	// StuckGPU holds the named GPU-agent series at StuckValue from StuckAt
	// on (a profiling counter that stopped updating), e.g. the SM activity.
	StuckGPU   []string
	StuckValue float64
	StuckAt    time.Duration
	// DropAbortSeries leaves the vLLM target's finished_reason="abort" series off the page (an
	// engine version that exports no abort counter, vLLM #55634).
	DropAbortSeries bool
}

// Model and GPU catalogue of the generator (public figures: model cards
// for layers and KV heads, NVIDIA datasheets for dense bf16 FLOP/s, HBM
// bandwidth, memory, clocks and board power).
var (
	workloadModels = []ModelSpec{
		{Name: "meta-llama/Llama-3.1-8B-Instruct", Params: 8.03e9, BytesPerParam: 2, KVBytesPerToken: 131072, MaxModelLen: 32768},
		{Name: "Qwen/Qwen2.5-14B-Instruct", Params: 14.7e9, BytesPerParam: 2, KVBytesPerToken: 196608, MaxModelLen: 32768},
		{Name: "Qwen/Qwen2.5-32B-Instruct-FP8", Params: 32.5e9, BytesPerParam: 1, KVBytesPerToken: 262144, MaxModelLen: 32768},
		{Name: "meta-llama/Llama-3.1-70B-Instruct-FP8", Params: 70.6e9, BytesPerParam: 1, KVBytesPerToken: 327680, MaxModelLen: 32768},
	}
	workloadGPUs = []GPUSpec{
		DefaultConfig().GPU,
		{Name: "NVIDIA H200", PeakFLOPS: 989e12, MFU: 0.55, MemBandwidth: 4.8e12, BWEfficiency: 0.8, MemoryBytes: 141e9,
			SMClockMaxHz: 1980e6, PowerLimitW: 700, IdlePowerW: 75, MaxPowerW: 690, AmbientC: 28, ThermalResCW: 0.075,
			ThermalTauS: 25, SlowdownTempC: 87, HWSlowdownC: 92},
		{Name: "NVIDIA A100-SXM4-80GB", PeakFLOPS: 312e12, MFU: 0.6, MemBandwidth: 2.039e12, BWEfficiency: 0.8, MemoryBytes: 80 * (1 << 30),
			SMClockMaxHz: 1410e6, PowerLimitW: 400, IdlePowerW: 55, MaxPowerW: 395, AmbientC: 28, ThermalResCW: 0.13,
			ThermalTauS: 25, SlowdownTempC: 85, HWSlowdownC: 90},
		{Name: "NVIDIA L40S", PeakFLOPS: 362e12, MFU: 0.5, MemBandwidth: 0.864e12, BWEfficiency: 0.8, MemoryBytes: 48 * (1 << 30),
			SMClockMaxHz: 2520e6, PowerLimitW: 350, IdlePowerW: 35, MaxPowerW: 345, AmbientC: 28, ThermalResCW: 0.15,
			ThermalTauS: 25, SlowdownTempC: 87, HWSlowdownC: 92},
	}
)

// WorkloadFamilies lists the generator's families, each drawn with equal
// probability by GenerateWorkload.
var WorkloadFamilies = []string{
	"healthy-busy", "healthy-busy", "healthy-light", "idle", "queue", "queue", "prefill-overload", "prefill-long",
	"kv", "kv", "decode", "thermal", "power-cap", "stall", "stall-low-traffic", "stale-gauges", "client-aborts",
	"frontend", "hol", "stuck-sm-counter", "thermal-no-agent", "queue-and-thermal",
}

// ExtraFamilies are generator families outside GenerateWorkload's draw (so its seeds keep
// their workloads), evaluated with seeds of their own: aborted streams on an engine without
// an abort counter (issue 39) and a busy llama.cpp server whose counters move at request end
// or first token (issue 40).
var ExtraFamilies = []string{"client-aborts-uncounted", "llamacpp-busy"}

// GenerateWorkload draws one workload from seed: a family, a model and GPU
// that fit, a vLLM version, an arrival trace (Poisson with bursts, ramps
// or a daily-like swing), prompt and output mixes, scheduler limits and
// faults, chosen so that the family's cause holds by the generator's
// roofline (predict) and healthy families stay well inside every limit and
// the SLO (ITL ≤ 50 ms). span is the simulated duration the trace covers.
// Equal seeds give equal workloads.
func GenerateWorkload(seed uint64, span time.Duration) Workload {
	r := enginemodel.NewRand(seed, 7)
	return GenerateFamily(seed, WorkloadFamilies[r.IntN(len(WorkloadFamilies))], span)
}

// GenerateFamily draws one workload of the named family (one of
// WorkloadFamilies) from seed, as GenerateWorkload does after its draw of
// the family. It panics on an unknown family.
func GenerateFamily(seed uint64, fam string, span time.Duration) Workload {
	return GenerateFamilyWorld(seed, fam, span, WorldRoofline)
}

// GenerateFamilyWorld is GenerateFamily in the named world (one of Worlds):
// WorldRoofline is GenerateFamily's; the others draw, from a stream of their
// own, a step-time law other than the roofline with its parameters and the
// scheduler's token budget (drawWorld), and hold the family's cause by that
// law's prediction. It panics on an unknown family or world.
func GenerateFamilyWorld(seed uint64, fam string, span time.Duration, world string) Workload {
	r := enginemodel.NewRand(seed, 8)
	wd := drawWorld(seed, world)
	for try := 0; ; try++ {
		w, ok := drawWorkload(r, fam, span, wd)
		if !ok && try >= 2000 {
			panic(fmt.Sprintf("sim: workload family %s: no draw satisfied its cause in 2000 tries (seed %d)", fam, seed))
		}
		if ok {
			w.Seed = seed
			w.Family = fam
			w.Config.Seed = seed
			w.World = world
			w.Summary = wd.label() + fmt.Sprintf("%s: %s on %s, vLLM %s, %.3g req/s, prompt ~%.0f, output ~%.0f, max_num_seqs %d, "+
				"budget %d, agent %v; predicted running %.0f, ITL %.1f ms, prefill load %.2f, KV load %.2f",
				fam, w.Config.Model.Name, w.Config.GPU.Name, w.Config.Version, w.Config.Rate, w.Config.Prompt.Mean,
				w.Config.Output.Mean, w.Config.MaxNumSeqs, w.Config.MaxNumBatchedTokens, w.GPUAgent,
				w.Predicted.Running, 1000*w.Predicted.ITL, w.Predicted.PrefillLoad, w.Predicted.KVLoad)
			return w
		}
	}
}

func uniform(r *rand.Rand, a, b float64) float64 { return a + (b-a)*r.Float64() }

func pick[T any](r *rand.Rand, xs []T) T { return xs[r.IntN(len(xs))] }

// drawWorkload draws one candidate of family fam; ok is false when the
// draw does not produce the family's cause (the caller draws again).
func drawWorkload(r *rand.Rand, fam string, span time.Duration, wd *world) (Workload, bool) {
	c := DefaultConfig()
	c.Model = pick(r, workloadModels)
	c.GPU = pick(r, workloadGPUs)
	c.GPU.UUID = fmt.Sprintf("GPU-%08x-0000-4000-8000-%012x", r.Uint32(), r.Uint64()&0xffffffffffff)
	c.Version = pick(r, []Version{V010, V011, V011, V013, V06})
	c.MaxNumSeqs = pick(r, []int{128, 256, 256, 512})
	c.MaxNumBatchedTokens = pick(r, []int{2048, 4096, 8192, 8192, 16384})
	wd.apply(&c)
	c.PrefixHitRatio = uniform(r, 0, 0.5)
	c.ClientTimeout = 0
	if c.Version == V06 {
		c.ChunkedPrefill = r.IntN(2) == 0
	}
	if !c.ChunkedPrefill {
		c.MaxNumBatchedTokens = max(c.MaxNumBatchedTokens, c.Model.MaxModelLen)
	}
	w := Workload{Causes: []string{BottleneckNone}, Before: BottleneckNone, GPUAgent: r.Float64() < 0.8, SLO: SLO{TTFT: 3, ITL: 0.05}}
	c.Prompt = LengthDist{Kind: "lognormal", Mean: uniform(r, 100, 1500), Sigma: uniform(r, 0.3, 1), Min: 8, Max: 8000}
	c.Output = LengthDist{Kind: "lognormal", Mean: uniform(r, 50, 600), Sigma: uniform(r, 0.3, 0.9), Min: 1, Max: 2000}
	c.MaxTokens = 2048
	arrivals := arrivalShape{rampFrom: 1, rampTo: 1}
	// load is the offered load relative to the family's limit, set below.
	healthy := func(p Prediction) bool {
		return p.SeatLoad < 0.5 && p.KVLoad < 0.5 && p.PrefillLoad < 0.4 && p.ITL < 0.03
	}
	var cond func(p Prediction) bool
	switch fam {
	case "healthy-busy", "stuck-sm-counter":
		c.Rate = uniform(r, 2, 40)
		arrivals = randomShape(r, 1.5)
		cond = func(p Prediction) bool { return healthy(p) && p.Running >= 8 }
		if fam == "stuck-sm-counter" {
			w.GPUAgent = true
			w.Faults = Faults{StuckGPU: []string{GPUSMActive}, StuckValue: 0}
		}
	case "healthy-light":
		c.Rate = uniform(r, 0.3, 3)
		arrivals = randomShape(r, 1.5)
		cond = func(p Prediction) bool { return healthy(p) && p.Running >= 1.5 }
	case "idle":
		c.Rate = uniform(r, 0.005, 0.05)
		c.Output.Mean = uniform(r, 20, 200)
		w.Causes, w.Before = []string{BottleneckIdle}, BottleneckIdle
		cond = func(p Prediction) bool { return p.Running < 0.3 }
	case "queue", "queue-and-thermal":
		c.MaxNumSeqs = pick(r, []int{4, 8, 16, 24, 32, 48, 64, 96})
		c.Rate = uniform(r, 0.5, 30)
		c.ClientTimeout = pick(r, []float64{0, 120, 300})
		arrivals = randomShape(r, 3)
		w.Causes = []string{BottleneckQueue}
		cond = func(p Prediction) bool { return p.SeatLoad > 1.4 && p.KVLoad < 0.7 && p.PrefillLoad < 0.5 }
		if fam == "queue-and-thermal" {
			w.GPUAgent = true
			hot(r, &c)
			w.Causes = []string{BottleneckQueue, BottleneckThermal}
		}
	case "prefill-overload":
		c.Prompt = LengthDist{Kind: "lognormal", Mean: uniform(r, 800, 2500), Sigma: uniform(r, 0.2, 0.5), Min: 64, Max: 8000}
		c.Output = LengthDist{Kind: "lognormal", Mean: uniform(r, 20, 150), Sigma: 0.5, Min: 1, Max: 1024}
		c.PrefixHitRatio = 0
		c.MaxNumBatchedTokens = pick(r, []int{2048, 4096, 8192})
		c.ChunkedPrefill = true
		c.Rate = uniform(r, 1, 60)
		w.GPUAgent = true
		w.Causes = []string{BottleneckTokenBudget}
		cond = func(p Prediction) bool { return p.PrefillLoad > 1.2 && p.PrefillLoad < 3 }
	case "prefill-long":
		c.Prompt = LengthDist{Kind: "lognormal", Mean: uniform(r, 3000, 8000), Sigma: uniform(r, 0.2, 0.4), Min: 512, Max: 24000}
		c.Output = LengthDist{Kind: "lognormal", Mean: uniform(r, 10, 120), Sigma: 0.5, Min: 1, Max: 1024}
		c.PrefixHitRatio = uniform(r, 0, 0.2)
		c.Rate = uniform(r, 0.2, 20)
		w.GPUAgent = true
		w.Causes = []string{BottleneckPrefillCompute}
		cond = func(p Prediction) bool { return p.PrefillLoad > 0.95 && p.PrefillLoad < 1.4 }
	case "kv":
		c.Prompt = LengthDist{Kind: "lognormal", Mean: uniform(r, 1500, 5000), Sigma: 0.4, Min: 128, Max: 12000}
		c.Output = LengthDist{Kind: "lognormal", Mean: uniform(r, 600, 2000), Sigma: 0.4, Min: 32, Max: 6000}
		c.MaxTokens = 6000
		c.PrefixHitRatio = 0
		c.GPUMemoryUtil = uniform(r, 0.5, 0.9)
		c.Rate = uniform(r, 0.1, 6)
		w.Causes = []string{BottleneckKVCache}
		cond = func(p Prediction) bool { return p.KVLoad > 1.3 && p.SeatLoad < 0.8 && p.PrefillLoad < 0.6 }
	case "decode":
		c.Prompt = LengthDist{Kind: "lognormal", Mean: uniform(r, 50, 400), Sigma: 0.5, Min: 8, Max: 2000}
		c.Output = LengthDist{Kind: "lognormal", Mean: uniform(r, 600, 2000), Sigma: 0.3, Min: 64, Max: 4000}
		c.MaxTokens = 4096
		c.MaxNumSeqs = 512
		c.Rate = uniform(r, 0.5, 20)
		w.GPUAgent = true
		w.Causes = []string{BottleneckDecodeMemory}
		w.SLO.ITL = pick(r, []float64{0.02, 0.025, 0.03})
		cond = func(p Prediction) bool {
			return p.ITL > 1.4*w.SLO.ITL && p.ITL < 0.2 && p.SeatLoad < 0.6 && p.KVLoad < 0.6 && p.PrefillLoad < 0.3
		}
	case "thermal", "thermal-no-agent":
		hot(r, &c)
		c.Prompt.Mean = uniform(r, 1500, 3000)
		c.Rate = uniform(r, 2, 20)
		w.GPUAgent = fam == "thermal"
		w.Causes = []string{BottleneckThermal}
		if fam == "thermal-no-agent" {
			w.Causes = []string{BottleneckNoGPUData}
		}
		cond = func(p Prediction) bool {
			return p.PrefillLoad > 0.35 && p.PrefillLoad < 0.8 && p.SeatLoad < 0.6 && p.KVLoad < 0.6
		}
	case "power-cap":
		c.GPU.DefaultPowerLimitW = c.GPU.PowerLimitW
		c.GPU.PowerLimitW = math.Round(c.GPU.MaxPowerW * uniform(r, 0.35, 0.5))
		c.Prompt.Mean = uniform(r, 1000, 3000)
		c.Rate = uniform(r, 2, 20)
		w.GPUAgent = true
		w.Causes = []string{BottleneckPowerCap}
		cond = func(p Prediction) bool {
			return p.PrefillLoad > 0.3 && p.PrefillLoad < 0.6 && p.SeatLoad < 0.6 && p.KVLoad < 0.6
		}
	case "stall", "stall-low-traffic":
		c.Rate = uniform(r, 1, 20)
		if fam == "stall-low-traffic" {
			c.Rate = uniform(r, 1.0/120, 1.0/30)
			w.Before = BottleneckIdle
		}
		c.StallAt = time.Duration(uniform(r, 0.3, 0.5) * float64(span))
		c.StallDropRunning = r.IntN(2) == 0
		w.Onset = c.StallAt
		w.Causes = []string{BottleneckStalled}
		cond = func(p Prediction) bool { return healthy(p) }
	case "stale-gauges":
		c.Rate = uniform(r, 2, 20)
		w.Faults.FreezeAt = time.Duration(uniform(r, 0.3, 0.5) * float64(span))
		w.Onset = w.Faults.FreezeAt
		w.Causes = []string{BottleneckStaleGauges}
		arrivals.stopAt = w.Faults.FreezeAt.Seconds()
		cond = func(p Prediction) bool { return healthy(p) && p.Running >= 2 }
	case "client-aborts":
		c.Rate = uniform(r, 1, 20)
		c.CancelShare = uniform(r, 0.3, 1)
		c.CancelAfter = uniform(r, 1, 4)
		w.Causes = []string{BottleneckAborted}
		cond = func(p Prediction) bool { return healthy(p) }
	case "client-aborts-uncounted":
		// Every client closes its stream a second or few in (vLLM #55634, #31503): prompts are
		// processed, almost nothing is generated, no request finishes, and the page has no
		// abort counter.
		c.Version = pick(r, []Version{V011, V013})
		c.Rate = uniform(r, 1, 20)
		c.CancelShare = 1
		c.CancelAfter = uniform(r, 1, 3)
		c.Output = LengthDist{Kind: "lognormal", Mean: uniform(r, 300, 800), Sigma: 0.3, Min: 64, Max: 2000}
		w.Faults.DropAbortSeries = true
		w.Causes = []string{BottleneckAborted}
		cond = func(p Prediction) bool { return healthy(p) }
	case "llamacpp-busy":
		// A llama.cpp server with a few slots, every one busy, answers of a minute or more and
		// requests deferred (issue 40: 4 slots, 12 clients): most stall windows see no request
		// end, so only the decode-step counter moves. Slots full with requests deferred is a queue.
		c.Version = V011
		c.MaxNumSeqs = pick(r, []int{4, 8})
		c.Output = LengthDist{Kind: "lognormal", Mean: uniform(r, 4000, 8000), Sigma: 0.1, Min: 2000, Max: 10000}
		c.MaxTokens = 10000
		c.Rate = uniform(r, 0.05, 1)
		w.LlamaCpp = true
		w.Causes = []string{BottleneckQueue}
		cond = func(p Prediction) bool { return p.SeatLoad > 1.4 && p.KVLoad < 0.5 && p.PrefillLoad < 0.4 }
	case "frontend":
		c.Version = pick(r, []Version{V010, V011, V013})
		c.InputOverhead = uniform(r, 0.8, 3)
		c.OutputOverhead = uniform(r, 0.002, 0.006)
		c.Rate = uniform(r, 0.5, 8)
		w.Causes = []string{BottleneckFrontend}
		cond = func(p Prediction) bool { return healthy(p) }
	case "hol":
		c.Prompt = LengthDist{Kind: "lognormal", Mean: uniform(r, 150, 500), Sigma: 0.5, Min: 8, Max: 2000}
		c.LongPromptShare = uniform(r, 0.02, 0.06)
		c.LongPrompt = LengthDist{Kind: "lognormal", Mean: uniform(r, 16000, 28000), Sigma: 0.05, Min: 12000, Max: 30000}
		c.ChunkedPrefill = false
		c.MaxNumBatchedTokens = 32768
		c.Output.Mean = uniform(r, 80, 300)
		c.Rate = uniform(r, 2, 12)
		c.Version = pick(r, []Version{V06, V011})
		w.GPUAgent = true
		w.Causes = []string{BottleneckHOL}
		cond = func(p Prediction) bool {
			return p.PrefillLoad > 0.3 && p.PrefillLoad < 0.8 && p.SeatLoad < 0.5 && p.KVLoad < 0.5
		}
	default:
		panic("sim: unknown workload family " + fam)
	}
	if c.Version.V1() {
		c.ChunkedPrefill = true
		if fam == "hol" {
			c.ChunkedPrefill = false // the simulator's knob; V1 always chunks, the budget is what blocks
		}
	}
	c.NumGPUBlocks = 0
	if err := c.Validate(); err != nil {
		return w, false
	}
	// GPU faults slow compute: their families are checked at the clock a
	// throttled or capped GPU runs at (about 0.65 of its maximum in the
	// simulator), so the fault does not cascade into KV or queue saturation.
	clock := 1.0
	if slices.Contains([]string{"thermal", "thermal-no-agent", "power-cap"}, fam) {
		clock = 0.65
	}
	peak := arrivals.peak(r)
	p := predict(&c, c.Rate*peak, clock)
	w.Predicted = predict(&c, c.Rate, clock)
	if !cond(p) || !cond(w.Predicted) {
		return w, false
	}
	c.Trace = arrivals.trace(r, &c, span)
	if len(c.Trace) == 0 {
		c.Rate = 0
	}
	w.Config = c
	return w, c.Validate() == nil
}

// hot makes the GPU's cooling poor enough to reach its slowdown threshold
// under load (hotter inlet, higher thermal resistance).
func hot(r *rand.Rand, c *Config) {
	c.GPU.AmbientC = uniform(r, 42, 48)
	c.GPU.ThermalResCW = (c.GPU.SlowdownTempC + uniform(r, 8, 20) - c.GPU.AmbientC) / (0.6 * c.GPU.MaxPowerW)
	c.GPU.ThermalTauS = uniform(r, 15, 40)
}

// predict estimates the steady state of c at rate requests/s with the
// simulator's roofline (gpu.stepTime): a decode step reads the weights and
// the KV of every running context; prompt tokens cost 2·params FLOPs each.
// It solves running = rate × (output tokens × step time) (Little's law) by
// fixed-point iteration, capping running at MaxNumSeqs. clock is the SM
// clock over its maximum (1 for a healthy GPU).
func predict(c *Config, rate, clock float64) Prediction {
	g := c.GPU
	cT := 2 * c.Model.Params / (g.PeakFLOPS * g.MFU * clock)
	w := c.Model.Params * c.Model.BytesPerParam / (g.MemBandwidth * g.BWEfficiency)
	kvT := c.Model.KVBytesPerToken / (g.MemBandwidth * g.BWEfficiency)
	prompt := c.Prompt.MeanValue()
	if c.LongPromptShare > 0 {
		prompt = (1-c.LongPromptShare)*prompt + c.LongPromptShare*c.LongPrompt.MeanValue()
	}
	out := math.Min(c.Output.MeanValue(), float64(c.MaxTokens))
	computed := prompt * (1 - c.PrefixHitRatio*b2f(c.PrefixCaching))
	prefillLoad := rate * computed * cT
	if c.StepLaw.Kind == enginemodel.LawPerSequence {
		// context-quadratic prefill: a token at position p costs AttnQuad·p
		// more, AttnQuad·P²/2 for a prompt of P tokens, so the mean of the
		// squares counts (a few long prompts dominate it)
		sq := meanSquare(c.Prompt)
		if c.LongPromptShare > 0 {
			sq = (1-c.LongPromptShare)*sq + c.LongPromptShare*meanSquare(c.LongPrompt)
		}
		hit := 1 - c.PrefixHitRatio*b2f(c.PrefixCaching)
		prefillLoad = rate * (computed*cT + c.StepLaw.AttnQuad*sq*hit*hit/2/clock)
	}
	ctx := prompt + out/2
	var run, step float64
	run = 1
	for k := 0; k < 100; k++ {
		b := math.Min(run, float64(c.MaxNumSeqs))
		compute := cT * b
		mem := w + kvT*b*ctx
		step = c.StepOverhead + math.Max(compute, mem) + 0.1*math.Min(compute, mem)
		if c.StepLaw.Kind != enginemodel.LawRoofline {
			step = enginemodel.StepSeconds(c, enginemodel.StepWork{DecodeSeqs: b, Ctx: b * ctx}, clock)
		}
		// prefill steals step time in proportion to its load
		stretch := 1 / math.Max(0.05, 1-math.Min(prefillLoad, 0.95))
		nr := rate * out * step * stretch
		if math.Abs(nr-run) < 1e-3*run {
			run = nr
			break
		}
		run = 0.5*run + 0.5*nr
	}
	blocks := float64(c.NumGPUBlocks)
	kvLoad := math.Inf(1)
	if blocks > 0 {
		kvLoad = run * (prompt + out/2) / (blocks * float64(c.BlockSize))
	}
	return Prediction{Running: run, ITL: step, PrefillLoad: prefillLoad, KVLoad: kvLoad, SeatLoad: run / float64(c.MaxNumSeqs)}
}

// meanSquare is E[X²] of a length distribution: mean²·exp(σ²) for a
// lognormal (no truncation), (min² + min·max + max²)/3 for a uniform one,
// mean² otherwise.
func meanSquare(d LengthDist) float64 {
	switch d.Kind {
	case "lognormal":
		return d.Mean * d.Mean * math.Exp(d.Sigma*d.Sigma)
	case "uniform":
		a, b := float64(d.Min), float64(d.Max)
		return (a*a + a*b + b*b) / 3
	}
	m := d.MeanValue()
	return m * m
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// arrivalShape modulates a Poisson rate over time: a swing
// (1 + amp·sin(2πt/period)), a ramp from rampFrom to rampTo times the rate
// over the span, and bursts (start, length in seconds, factor). Arrivals stop
// at stopAt seconds when > 0.
type arrivalShape struct {
	amp, period      float64
	rampFrom, rampTo float64
	bursts           [][3]float64
	stopAt           float64
	maxBurst         float64
}

// randomShape draws a shape whose peak factor stays at or under maxFactor.
func randomShape(r *rand.Rand, maxFactor float64) arrivalShape {
	s := arrivalShape{rampFrom: 1, rampTo: 1, maxBurst: maxFactor}
	switch r.IntN(4) {
	case 0: // steady
	case 1:
		s.amp, s.period = uniform(r, 0.1, 0.3), uniform(r, 600, 1800)
	case 2:
		s.rampFrom, s.rampTo = uniform(r, 0.5, 0.9), 1
	case 3:
		n := 1 + r.IntN(4)
		for k := 0; k < n; k++ {
			s.bursts = append(s.bursts, [3]float64{-1, uniform(r, 20, 90), uniform(r, 1.3, maxFactor)})
		}
	}
	return s
}

// peak is the highest factor the shape reaches.
func (s arrivalShape) peak(*rand.Rand) float64 {
	p := math.Max(s.rampFrom, s.rampTo) * (1 + s.amp)
	for _, b := range s.bursts {
		p = math.Max(p, b[2])
	}
	return p
}

func (s *arrivalShape) factor(t, span float64) float64 {
	f := (s.rampFrom + (s.rampTo-s.rampFrom)*t/span) * (1 + s.amp*math.Sin(2*math.Pi*t/math.Max(s.period, 1)))
	for _, b := range s.bursts {
		if t >= b[0] && t < b[0]+b[1] {
			f = math.Max(f, b[2])
		}
	}
	return f
}

// trace draws the arrivals (thinning a Poisson process at the peak rate)
// and each request's prompt and output lengths from c's distributions.
func (s *arrivalShape) trace(r *rand.Rand, c *Config, span time.Duration) []TraceEntry {
	sp := span.Seconds()
	for k := range s.bursts {
		s.bursts[k][0] = uniform(r, 0.1*sp, 0.9*sp)
	}
	peak := c.Rate * s.peak(r)
	if peak <= 0 {
		return nil
	}
	end := sp
	if s.stopAt > 0 {
		end = s.stopAt
	}
	var out []TraceEntry
	for t := enginemodel.ExpSample(r, peak); t < end; t += enginemodel.ExpSample(r, peak) {
		if r.Float64()*peak > c.Rate*s.factor(t, sp) {
			continue
		}
		prompt := c.Prompt.Sample(r)
		if c.LongPromptShare > 0 && r.Float64() < c.LongPromptShare {
			prompt = c.LongPrompt.Sample(r)
		}
		out = append(out, TraceEntry{At: t, PromptTokens: prompt, OutputTokens: c.Output.Sample(r)})
	}
	return out
}
