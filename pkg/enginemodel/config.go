package enginemodel

import (
	"errors"
	"fmt"
	"math"
	"time"
)

// Version is a simulated vLLM release line. It selects metric names, labels,
// HELP texts and default buckets (vLLM sources; see the engine notes in ../shared/reference/engines.md §1).
type Version string

// Supported versions.
const (
	// V06 is vLLM 0.6.x, V0 engine: V0 names (gpu_cache_usage_perc,
	// num_requests_swapped, cpu_cache_usage_perc, gpu_prefix_cache_hit_rate, …),
	// label model_name only, lazily bound series, short bucket lists.
	V06 Version = "0.6"
	// V010 is vLLM 0.10.x, V1 engine: engine="0" label, both the deprecated
	// gpu_cache_usage_perc / gpu_prefix_cache_* and the new kv_cache_usage_perc /
	// prefix_cache_* families (deprecated in 0.9, still shown in 0.10, as in the
	// real 0.10 page of the corpus), time_per_output_token_seconds (ITL data).
	V010 Version = "0.10"
	// V011 is vLLM 0.11.x: kv_cache_usage_perc only; time_per_output_token_seconds,
	// inter_token_latency_seconds and request_time_per_output_token_seconds side by side.
	V011 Version = "0.11"
	// V013 is vLLM 0.13.x: only the new names (no time_per_output_token_seconds),
	// plus prompt_tokens_by_source, prompt_tokens_cached, prompt_tokens_recomputed,
	// request_prefill_kv_computed_tokens and engine_sleep_state.
	V013 Version = "0.13"
)

// Versions lists the supported versions, oldest first.
var Versions = []Version{V06, V010, V011, V013}

// ParseVersion accepts "0.6", "0.10", "0.11", "0.13" (a patch suffix such as
// "0.11.2" is accepted and dropped). Other values give an error naming the
// supported ones.
func ParseVersion(s string) (Version, error) {
	for _, v := range Versions {
		if s == string(v) || (len(s) > len(v) && s[:len(v)] == string(v) && s[len(v)] == '.') {
			return v, nil
		}
	}
	return "", fmt.Errorf("sim: unsupported vLLM version %q (supported: 0.6, 0.10, 0.11, 0.13)", s)
}

// V1 reports whether the version runs the V1 engine (frontend + engine core).
func (v Version) V1() bool { return v != V06 }

// LengthDist is a token-length distribution. Kind "const" always yields Mean;
// "uniform" yields integers in [Min, Max]; "lognormal" yields
// round(exp(N(ln(Mean) − Sigma²/2, Sigma))) (so the mean is Mean before
// clamping), clamped to [Min, Max]. Min ≥ 1.
type LengthDist struct {
	Kind  string  // "const", "uniform" or "lognormal"
	Mean  float64 // tokens
	Sigma float64 // lognormal shape (log-space standard deviation)
	Min   int     // tokens, ≥ 1
	Max   int     // tokens, ≥ Min
}

func (d LengthDist) validate(what string) error {
	switch d.Kind {
	case "const":
		if d.Mean < 1 {
			return fmt.Errorf("sim: %s: const length must be ≥ 1, got %v", what, d.Mean)
		}
	case "uniform":
		if d.Min < 1 || d.Max < d.Min {
			return fmt.Errorf("sim: %s: uniform needs 1 ≤ Min ≤ Max, got [%d, %d]", what, d.Min, d.Max)
		}
	case "lognormal":
		if d.Mean < 1 || d.Sigma < 0 || d.Min < 1 || d.Max < d.Min || math.IsNaN(d.Sigma) {
			return fmt.Errorf("sim: %s: lognormal needs Mean ≥ 1, Sigma ≥ 0, 1 ≤ Min ≤ Max", what)
		}
	default:
		return fmt.Errorf("sim: %s: unknown distribution kind %q (const, uniform, lognormal)", what, d.Kind)
	}
	return nil
}

// ModelSpec describes the served model for the step-time model.
type ModelSpec struct {
	Name            string  // served model name (label model_name, /v1/models id)
	Params          float64 // parameter count, e.g. 8e9
	BytesPerParam   float64 // 2 for bf16
	KVBytesPerToken float64 // KV-cache bytes per token (all layers), e.g. 131072 for Llama-3.1-8B bf16
	MaxModelLen     int     // tokens; sets the 1-2-5 token-Histogram buckets
}

// GPUSpec describes the simulated GPU (defaults: H100 SXM 80 GB, see
// gpu-slo-bench.md §1 and NVIDIA's datasheet figures).
type GPUSpec struct {
	Name         string  // product name, label name
	UUID         string  // label uuid
	Hostname     string  // label hostname
	Index        int     // label gpu
	PeakFLOPS    float64 // dense bf16 FLOP/s at the maximum SM clock
	MFU          float64 // achievable fraction of PeakFLOPS in prefill (0..1)
	MemBandwidth float64 // HBM bytes/s
	BWEfficiency float64 // achievable fraction of MemBandwidth in decode (0..1)
	MemoryBytes  float64 // framebuffer bytes
	SMClockMaxHz float64 // hertz
	PowerLimitW  float64 // enforced power limit, watts
	// DefaultPowerLimitW is the board's default power limit in watts (what
	// nvidia-smi -pl resets to); 0 means PowerLimitW (no cap set).
	DefaultPowerLimitW float64
	IdlePowerW         float64 // watts at idle
	MaxPowerW          float64 // watts a fully busy GPU would draw at the maximum clock, before capping
	AmbientC           float64 // inlet/ambient temperature, °C
	ThermalResCW       float64 // steady-state °C per watt above ambient
	ThermalTauS        float64 // thermal time constant, seconds
	SlowdownTempC      float64 // software thermal slowdown threshold, °C
	HWSlowdownC        float64 // hardware thermal slowdown threshold, °C
}

// Config is the whole simulator configuration. Times are seconds unless typed
// time.Duration. Build one with DefaultConfig, then ApplyScenario, then adjust.
type Config struct {
	Version Version   // vLLM version line to imitate (metric names, buckets, timing semantics)
	Seed    uint64    // seed of every random stream; equal seeds give equal runs
	Model   ModelSpec // served model
	GPU     GPUSpec   // simulated GPU

	// Arrivals. Rate is requests/s of a Poisson process, modulated as
	// Rate·(1 + RateAmplitude·sin(2πt/RatePeriod)) when RateAmplitude > 0.
	// A non-empty Trace replaces the Poisson process.
	Rate          float64
	RateAmplitude float64 // 0..1
	RatePeriod    float64 // seconds
	Trace         []TraceEntry

	Prompt LengthDist // prompt tokens
	Output LengthDist // output tokens the model would generate before EOS
	// LongPromptShare is the share (0..1) of generated requests whose prompt
	// is drawn from LongPrompt instead of Prompt: a mix of short prompts with
	// occasional very long ones. 0 = never (LongPrompt is then ignored).
	LongPromptShare float64
	LongPrompt      LengthDist
	// CancelShare is the share (0..1) of generated requests whose client
	// closes the stream before the request finishes, CancelAfter seconds
	// after arrival on average (exponentially distributed). vLLM then ends
	// the request with finished_reason "abort": its prompt tokens are
	// counted once prefilled, its latency histograms never see it.
	CancelShare float64
	CancelAfter float64
	// MaxTokens is the max_tokens request parameter of generated load; an output
	// reaching it finishes with reason "length", otherwise "stop".
	MaxTokens int

	// Scheduler.
	MaxNumSeqs          int  // max running requests
	MaxNumBatchedTokens int  // token budget per engine step
	ChunkedPrefill      bool // split prompts across steps; V1 always chunks
	BlockSize           int  // tokens per KV block
	NumGPUBlocks        int  // KV blocks; 0 = derive from GPU memory
	GPUMemoryUtil       float64
	PrefixCaching       bool
	PrefixHitRatio      float64 // share of each prompt found in the prefix cache (0..1)

	// Overheads (V1 frontend): tokenisation before the engine sees a request and
	// output processing after it emits tokens. Ignored for V0 metric timing.
	InputOverhead         float64 // seconds per request
	InputOverheadPerToken float64 // seconds per prompt token
	OutputOverhead        float64 // seconds per output batch
	StepOverhead          float64 // fixed seconds per engine step (scheduling, launch)
	// StepLaw is the step-time law; zero: the roofline.
	StepLaw StepLaw
	// Preemption is the preemption mode and victim policy;
	// zero: vLLM V1's recompute of the most recently admitted request.
	Preemption    Preemption
	ClientTimeout float64 // generated load aborts a request still waiting after this long (0 = never)

	// Scenario events.
	RestartEvery     time.Duration // 0 = never
	RestartDowntime  time.Duration
	StallAt          time.Duration // 0 = never
	StallDropRunning bool
	FlakyErrorRatio  float64 // share of /metrics requests answered with 500
	FlakyStallRatio  float64 // share of /metrics requests that stall for FlakyStall
	FlakyStall       time.Duration

	// APIFaults are injected by the OpenAI-compatible endpoints only (the
	// client-side probe's test bed); the engine, its metrics and /metrics never
	// see them.
	APIFaults APIFaults
}

// APIFaults are client-visible faults of /v1/completions and
// /v1/chat/completions, each drawn per request (shares 0..1, independent
// draws in this order: 429, 5xx, then cut, stall and slow for streams).
// Server.Streams records which fault each request got (its ground truth).
type APIFaults struct {
	TooManyShare float64 // answered 429 before reaching the engine (a rate-limiting gateway)
	ErrorShare   float64 // answered ErrorCode (default 503) before reaching the engine
	ErrorCode    int     // 5xx status of ErrorShare; 0 = 503
	CutShare     float64 // streams closed (connection dropped) after CutAfter tokens, without [DONE]
	CutAfter     int     // tokens sent before a cut, ≥ 1
	StallShare   float64 // streams in which token StallToken is held back for Stall (one-token stall)
	StallToken   int     // 1-based index of the stalled token, ≥ 2 (a gap, not TTFT)
	Stall        time.Duration
	SlowShare    float64       // streams whose every token is held back SlowPerToken more (a slow stream)
	SlowPerToken time.Duration // added before each token of a slow stream
}

func (f APIFaults) validate() error {
	for _, x := range []float64{f.TooManyShare, f.ErrorShare, f.CutShare, f.StallShare, f.SlowShare} {
		if !(x >= 0 && x <= 1) {
			return errors.New("sim: API fault shares must be between 0 and 1")
		}
	}
	if f.ErrorCode != 0 && (f.ErrorCode < 500 || f.ErrorCode > 599) {
		return fmt.Errorf("sim: API error code %d is not a 5xx status", f.ErrorCode)
	}
	if f.CutShare > 0 && f.CutAfter < 1 {
		return errors.New("sim: API cut needs CutAfter ≥ 1 token")
	}
	if f.StallShare > 0 && (f.StallToken < 2 || f.Stall <= 0) {
		return errors.New("sim: API stall needs StallToken ≥ 2 and a positive Stall")
	}
	if f.SlowShare > 0 && f.SlowPerToken <= 0 {
		return errors.New("sim: API slow streams need a positive SlowPerToken")
	}
	return nil
}

// TraceEntry is one request of an arrival trace: At seconds after start.
type TraceEntry struct {
	At           float64
	PromptTokens int
	OutputTokens int
}

// DefaultConfig returns a healthy Llama-3.1-8B on one H100 SXM at 4 requests/s,
// vLLM 0.11.
func DefaultConfig() Config {
	return Config{
		Version: V011,
		Seed:    1,
		Model: ModelSpec{
			Name:            "meta-llama/Llama-3.1-8B-Instruct",
			Params:          8.03e9,
			BytesPerParam:   2,
			KVBytesPerToken: 131072, // 2 (K,V) × 32 layers × 8 KV heads × 128 dims × 2 bytes
			MaxModelLen:     32768,
		},
		GPU: GPUSpec{
			Name:          "NVIDIA H100 80GB HBM3",
			UUID:          "GPU-5f1c8a2e-0d4b-4c6e-9a7f-3b2d1e0c9f8a",
			Hostname:      "sim-node-0",
			PeakFLOPS:     989e12,
			MFU:           0.55,
			MemBandwidth:  3.35e12,
			BWEfficiency:  0.8,
			MemoryBytes:   80 * (1 << 30),
			SMClockMaxHz:  1980e6,
			PowerLimitW:   700,
			IdlePowerW:    70,
			MaxPowerW:     690,
			AmbientC:      28,
			ThermalResCW:  0.075,
			ThermalTauS:   25,
			SlowdownTempC: 87,
			HWSlowdownC:   92,
		},
		Rate:                  4,
		RatePeriod:            3600,
		Prompt:                LengthDist{Kind: "lognormal", Mean: 600, Sigma: 0.8, Min: 8, Max: 8000},
		Output:                LengthDist{Kind: "lognormal", Mean: 220, Sigma: 0.7, Min: 1, Max: 2000},
		MaxTokens:             1024,
		MaxNumSeqs:            256,
		MaxNumBatchedTokens:   8192,
		ChunkedPrefill:        true,
		BlockSize:             16,
		GPUMemoryUtil:         0.9,
		PrefixCaching:         true,
		PrefixHitRatio:        0.3,
		InputOverhead:         0.002,
		InputOverheadPerToken: 2e-6,
		OutputOverhead:        0.0005,
		StepOverhead:          0.002,
		ClientTimeout:         600,
		RestartDowntime:       20 * time.Second,
		FlakyStall:            30 * time.Second,
	}
}

// Validate checks the configuration and fills NumGPUBlocks when it is 0
// (KV memory = MemoryBytes·GPUMemoryUtil − weights − 4 GiB activations).
func (c *Config) Validate() error {
	if _, err := ParseVersion(string(c.Version)); err != nil {
		return err
	}
	if c.Model.Name == "" {
		return errors.New("sim: model name is empty")
	}
	if c.Model.Params <= 0 || c.Model.BytesPerParam <= 0 || c.Model.KVBytesPerToken <= 0 || c.Model.MaxModelLen < 16 {
		return errors.New("sim: model spec needs Params, BytesPerParam, KVBytesPerToken > 0 and MaxModelLen ≥ 16")
	}
	if err := c.StepLaw.Validate(); err != nil {
		return err
	}
	if err := c.Preemption.Validate(); err != nil {
		return err
	}
	g := c.GPU
	if g.PeakFLOPS <= 0 || g.MFU <= 0 || g.MFU > 1 || g.MemBandwidth <= 0 || g.BWEfficiency <= 0 || g.BWEfficiency > 1 ||
		g.MemoryBytes <= 0 || g.SMClockMaxHz <= 0 || g.PowerLimitW <= 0 || g.IdlePowerW < 0 || g.MaxPowerW <= g.IdlePowerW ||
		g.ThermalResCW <= 0 || g.ThermalTauS <= 0 || g.HWSlowdownC < g.SlowdownTempC {
		return errors.New("sim: GPU spec has a non-positive or inconsistent field")
	}
	if len(c.Trace) == 0 && (c.Rate < 0 || math.IsNaN(c.Rate) || math.IsInf(c.Rate, 0)) {
		return fmt.Errorf("sim: rate must be ≥ 0 requests/s, got %v", c.Rate)
	}
	if c.RateAmplitude < 0 || c.RateAmplitude > 1 || (c.RateAmplitude > 0 && c.RatePeriod <= 0) {
		return errors.New("sim: rate amplitude must be in [0, 1] with a positive period")
	}
	for i, e := range c.Trace {
		if e.At < 0 || e.PromptTokens < 1 || e.OutputTokens < 1 || (i > 0 && e.At < c.Trace[i-1].At) {
			return fmt.Errorf("sim: trace entry %d: needs At ≥ 0 (non-decreasing) and token counts ≥ 1", i)
		}
	}
	if err := c.Prompt.validate("prompt"); err != nil {
		return err
	}
	if err := c.Output.validate("output"); err != nil {
		return err
	}
	if c.MaxTokens < 1 || c.MaxNumSeqs < 1 || c.BlockSize < 1 {
		return errors.New("sim: MaxTokens, MaxNumSeqs and BlockSize must be ≥ 1")
	}
	if c.MaxNumBatchedTokens < c.MaxNumSeqs {
		return fmt.Errorf("sim: max_num_batched_tokens (%d) must be ≥ max_num_seqs (%d)", c.MaxNumBatchedTokens, c.MaxNumSeqs)
	}
	if !c.ChunkedPrefill && c.MaxNumBatchedTokens < c.Model.MaxModelLen {
		return fmt.Errorf("sim: without chunked prefill max_num_batched_tokens (%d) must be ≥ max_model_len (%d)", c.MaxNumBatchedTokens, c.Model.MaxModelLen)
	}
	if c.PrefixHitRatio < 0 || c.PrefixHitRatio > 1 || c.GPUMemoryUtil <= 0 || c.GPUMemoryUtil > 1 {
		return errors.New("sim: prefix hit ratio and GPU memory utilisation must be in [0, 1]")
	}
	if c.LongPromptShare < 0 || c.LongPromptShare > 1 || c.CancelShare < 0 || c.CancelShare > 1 {
		return errors.New("sim: long-prompt and cancel shares must be between 0 and 1")
	}
	if c.LongPromptShare > 0 {
		if err := c.LongPrompt.validate("long prompt"); err != nil {
			return err
		}
	}
	if c.CancelShare > 0 && !(c.CancelAfter > 0) {
		return errors.New("sim: cancel_after must be > 0 seconds when cancel_share is set")
	}
	if c.InputOverhead < 0 || c.InputOverheadPerToken < 0 || c.OutputOverhead < 0 || c.StepOverhead < 0 || c.ClientTimeout < 0 {
		return errors.New("sim: overheads and client timeout must be ≥ 0")
	}
	if c.RestartEvery < 0 || c.RestartDowntime < 0 || c.StallAt < 0 || c.FlakyStall < 0 ||
		c.FlakyErrorRatio < 0 || c.FlakyStallRatio < 0 || c.FlakyErrorRatio+c.FlakyStallRatio > 1 {
		return errors.New("sim: scenario timings must be ≥ 0 and flaky ratios in [0, 1] with a sum ≤ 1")
	}
	if c.RestartEvery > 0 && c.RestartDowntime >= c.RestartEvery {
		return errors.New("sim: restart downtime must be shorter than the restart period")
	}
	if err := c.APIFaults.validate(); err != nil {
		return err
	}
	if c.NumGPUBlocks == 0 {
		kv := g.MemoryBytes*c.GPUMemoryUtil - c.Model.Params*c.Model.BytesPerParam - 4*(1<<30)
		c.NumGPUBlocks = int(kv / (c.Model.KVBytesPerToken * float64(c.BlockSize)))
	}
	if c.NumGPUBlocks < 1 {
		return errors.New("sim: no KV-cache blocks left (model too large for the GPU memory)")
	}
	// A request must fit into the cache on its own, or it could never run.
	maxLen := c.Prompt.maxValue() + min(c.Output.maxValue(), c.MaxTokens)
	for _, e := range c.Trace {
		maxLen = max(maxLen, e.PromptTokens+min(e.OutputTokens, c.MaxTokens))
	}
	if maxLen > c.Model.MaxModelLen {
		return fmt.Errorf("sim: longest request (%d tokens) exceeds max_model_len %d", maxLen, c.Model.MaxModelLen)
	}
	if (maxLen+c.BlockSize-1)/c.BlockSize > c.NumGPUBlocks {
		return fmt.Errorf("sim: longest request (%d tokens) does not fit in %d KV blocks", maxLen, c.NumGPUBlocks)
	}
	return nil
}

func (d LengthDist) maxValue() int {
	if d.Kind == "const" {
		return int(d.Mean)
	}
	return d.Max
}

// DefaultPowerLimit is the board's default power limit in watts:
// DefaultPowerLimitW, or PowerLimitW when it is not set.
func (g GPUSpec) DefaultPowerLimit() float64 {
	if g.DefaultPowerLimitW > 0 {
		return g.DefaultPowerLimitW
	}
	return g.PowerLimitW
}
