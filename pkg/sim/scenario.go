package sim

import (
	"fmt"
	"strings"
	"time"
)

// Bottleneck labels: the diagnosis each scenario is meant to produce.
const (
	BottleneckNone           = "none"
	BottleneckQueue          = "queue-capacity"          // max_num_seqs reached, requests wait
	BottleneckKVCache        = "kv-cache-capacity"       // KV blocks exhausted, preemptions
	BottleneckPrefillCompute = "prefill-compute"         // long prompts: compute-bound prefill dominates TTFT
	BottleneckDecodeMemory   = "decode-memory-bandwidth" // large decode batches: DRAM bandwidth bounds ITL
	BottleneckThermal        = "gpu-thermal-throttling"  // GPU too hot: SM clock lowered, steps slower
	BottleneckRestart        = "engine-restart"          // counters reset, requests lost
	BottleneckScrape         = "scrape-failures"         // /metrics fails or times out
	BottleneckStalled        = "engine-stalled"          // engine makes no progress while /health answers
)

// Scenario is a named configuration change with the symptom it produces.
type Scenario struct {
	Name        string
	Description string // what is changed and what a user sees
	Bottleneck  string // one of the Bottleneck* labels
	apply       func(c *Config)
}

// Scenarios lists every scenario, healthy first. Apply one with ApplyScenario.
var Scenarios = []Scenario{
	{
		Name:        "healthy",
		Description: "Default load (4 req/s, ~600-token prompts, ~220-token outputs) well under capacity: short queues, KV usage low, no preemptions.",
		Bottleneck:  BottleneckNone,
		apply:       func(*Config) {},
	},
	{
		Name: "queue-saturated",
		Description: "max_num_seqs 16 and 12 req/s: running stays at 16, waiting grows, queue time dominates E2E and TTFT; " +
			"clients give up after 120 s (finished_reason=abort).",
		Bottleneck: BottleneckQueue,
		apply: func(c *Config) {
			c.MaxNumSeqs = 16
			c.Rate = 12
			c.ClientTimeout = 120
		},
	},
	{
		Name: "kv-pressure",
		Description: "KV cache of 1,500 blocks (24k tokens) with long prompts (~3k) and outputs (~1.2k): KV usage ≥ 0.9, " +
			"recompute preemptions, prefill and decode times inflated by recomputation.",
		Bottleneck: BottleneckKVCache,
		apply: func(c *Config) {
			c.NumGPUBlocks = 1500
			c.Prompt = LengthDist{Kind: "lognormal", Mean: 3000, Sigma: 0.4, Min: 256, Max: 9000}
			c.Output = LengthDist{Kind: "lognormal", Mean: 1200, Sigma: 0.4, Min: 64, Max: 4000}
			c.MaxTokens = 4096
			c.Rate = 0.5
			c.PrefixHitRatio = 0
		},
	},
	{
		Name: "prefill-heavy",
		Description: "Long prompts (~6k tokens), short outputs (~24), no prefix-cache hits, 5 req/s: steps are compute-bound " +
			"(SM/tensor activity high), prefill time dominates TTFT and E2E.",
		Bottleneck: BottleneckPrefillCompute,
		apply: func(c *Config) {
			c.Prompt = LengthDist{Kind: "lognormal", Mean: 6000, Sigma: 0.3, Min: 1024, Max: 16000}
			c.Output = LengthDist{Kind: "lognormal", Mean: 24, Sigma: 0.5, Min: 1, Max: 256}
			c.MaxTokens = 256
			c.Rate = 5
			c.PrefixHitRatio = 0
		},
	},
	{
		Name: "decode-bound",
		Description: "Short prompts (~150), long outputs (~1.5k), 8 req/s: ~200 sequences decode together, DRAM bandwidth " +
			"is the limit, inter-token latency and decode time grow.",
		Bottleneck: BottleneckDecodeMemory,
		apply: func(c *Config) {
			c.Prompt = LengthDist{Kind: "lognormal", Mean: 150, Sigma: 0.5, Min: 8, Max: 1024}
			c.Output = LengthDist{Kind: "lognormal", Mean: 1500, Sigma: 0.3, Min: 256, Max: 4000}
			c.MaxTokens = 4096
			c.Rate = 8
		},
	},
	{
		Name: "thermal-throttled",
		Description: "Poor cooling (45 °C inlet, high thermal resistance) under a busy prefill-leaning load: temperature reaches " +
			"the slowdown threshold, sw_thermal throttling lowers the SM clock and compute-bound steps slow down.",
		Bottleneck: BottleneckThermal,
		apply: func(c *Config) {
			c.GPU.AmbientC = 45
			c.GPU.ThermalResCW = 0.11
			c.GPU.ThermalTauS = 20
			c.Prompt = LengthDist{Kind: "lognormal", Mean: 2500, Sigma: 0.5, Min: 64, Max: 12000}
			c.Output = LengthDist{Kind: "lognormal", Mean: 200, Sigma: 0.6, Min: 1, Max: 2000}
			c.Rate = 8
		},
	},
	{
		Name: "restart",
		Description: "Healthy load, but the server restarts every 10 minutes (20 s down): counters and histograms reset, " +
			"process_start_time_seconds changes, in-flight requests are lost, scrapes fail while down.",
		Bottleneck: BottleneckRestart,
		apply: func(c *Config) {
			c.RestartEvery = 10 * time.Minute
			c.RestartDowntime = 20 * time.Second
		},
	},
	{
		Name:        "flaky",
		Description: "Healthy engine, but 15 % of /metrics requests answer HTTP 500 and 10 % stall for 30 s (past any scrape timeout).",
		Bottleneck:  BottleneckScrape,
		apply: func(c *Config) {
			c.FlakyErrorRatio = 0.15
			c.FlakyStallRatio = 0.10
			c.FlakyStall = 30 * time.Second
		},
	},
	{
		Name: "stalled",
		Description: "After 5 minutes the engine stops making progress while /health and /metrics keep answering: waiting " +
			"grows, token and request counters freeze, no histogram moves, the running gauge drops to 0, GPU utilization " +
			"reads 100 % with idle SMs.",
		Bottleneck: BottleneckStalled,
		apply: func(c *Config) {
			c.StallAt = 5 * time.Minute
			c.StallDropRunning = true
		},
	},
}

// ScenarioNames returns the scenario names in table order.
func ScenarioNames() []string {
	n := make([]string, len(Scenarios))
	for i, s := range Scenarios {
		n[i] = s.Name
	}
	return n
}

// LookupScenario finds a scenario by name.
func LookupScenario(name string) (Scenario, error) {
	for _, s := range Scenarios {
		if s.Name == name {
			return s, nil
		}
	}
	return Scenario{}, fmt.Errorf("sim: unknown scenario %q (known: %s)", name, strings.Join(ScenarioNames(), ", "))
}

// ApplyScenario changes c as the named scenario prescribes. Call it on a
// DefaultConfig before applying explicit overrides.
func ApplyScenario(c *Config, name string) error {
	s, err := LookupScenario(name)
	if err != nil {
		return err
	}
	s.apply(c)
	return nil
}
