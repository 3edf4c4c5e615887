package sim

import "time"

// Bottleneck labels of the scenarios added for the diagnosis query.
const (
	BottleneckFrontend = "frontend-overhead" // time goes to tokenisation and output processing, the GPU is not busy
	BottleneckIdle     = "under-utilised"    // little load on a whole GPU
	BottleneckHOL      = "head-of-line"      // long prompts hold whole steps; short requests queue behind them
	BottleneckAborted  = "aborted-traffic"   // clients close streams before their requests finish
)

// diagnosisScenarios complete the scenario table with a case for each
// diagnosis class the original scenarios did not cover.
var diagnosisScenarios = []Scenario{
	{
		Name: "power-capped",
		Description: "The H100's power limit set to 300 W of its 700 W default (nvidia-smi -pl 300) under a busy prefill-leaning load: " +
			"the power_cap reason holds the SM clock near 0.6 of its maximum with no thermal reason; prefill that would take two thirds " +
			"of the GPU at full clock now needs more than all of it, and requests queue (TTFT breaches the chat objective).",
		Bottleneck: BottleneckPowerCap,
		apply: func(c *Config) {
			c.GPU.DefaultPowerLimitW = c.GPU.PowerLimitW
			c.GPU.PowerLimitW = 300
			c.Prompt = LengthDist{Kind: "lognormal", Mean: 2500, Sigma: 0.5, Min: 64, Max: 12000}
			c.Output = LengthDist{Kind: "lognormal", Mean: 200, Sigma: 0.6, Min: 1, Max: 2000}
			c.Rate = 9
		},
	},
	{
		Name: "frontend-bound",
		Description: "Healthy engine behind a slow frontend: 1.2 s of tokenisation per request and 3 ms of output processing " +
			"per output batch; E2E − queue − inference is about half of E2E while the GPU's SMs are mostly idle.",
		Bottleneck: BottleneckFrontend,
		apply: func(c *Config) {
			c.InputOverhead = 1.2
			c.OutputOverhead = 0.003
		},
	},
	{
		Name:        "under-utilised",
		Description: "One request every 20 s on a whole H100: running averages well under one request and SM activity a few percent.",
		Bottleneck:  BottleneckIdle,
		apply: func(c *Config) {
			c.Rate = 0.05
		},
	},
	{
		Name: "stalled-running",
		Description: "As stalled, but the running gauge keeps its last value (the requests stay in the batch): after 5 minutes " +
			"progress counters freeze, waiting grows and running stays above 0.",
		Bottleneck: BottleneckStalled,
		apply: func(c *Config) {
			c.StallAt = 5 * time.Minute
			c.StallDropRunning = false
		},
	},
	{
		Name: "long-prompt-hol",
		Description: "Short prompts (~300 tokens) with 3 % very long ones (~24k) at 8 req/s, chunked prefill off " +
			"(max_num_batched_tokens 32768): each long prefill holds a whole step for most of a second, short requests " +
			"queue behind it although the batch has free seats and prefill speed per token is normal.",
		Bottleneck: BottleneckHOL,
		apply: func(c *Config) {
			c.Prompt = LengthDist{Kind: "lognormal", Mean: 300, Sigma: 0.5, Min: 8, Max: 2000}
			c.LongPromptShare = 0.05
			c.LongPrompt = LengthDist{Kind: "lognormal", Mean: 28000, Sigma: 0.05, Min: 24000, Max: 30000}
			c.ChunkedPrefill = false
			c.MaxNumBatchedTokens = 32768
			c.Rate = 8
		},
	},
	{
		Name: "client-cancels",
		Description: "Healthy load, but a quarter of the clients close their stream about 3 s after sending (exponentially " +
			"distributed): about one request in eight ends with finished_reason=abort, its prompt tokens counted but never " +
			"observed by the latency histograms.",
		Bottleneck: BottleneckAborted,
		apply: func(c *Config) {
			c.CancelShare = 0.25
			c.CancelAfter = 3
		},
	},
}

func init() { Scenarios = append(Scenarios, diagnosisScenarios...) }
