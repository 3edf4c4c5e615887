package sim

import "time"

// Bottleneck labels of the scenarios added for the diagnosis query.
const (
	BottleneckFrontend = "frontend-overhead" // time goes to tokenisation and output processing, the GPU is not busy
	BottleneckIdle     = "under-utilised"    // little load on a whole GPU
)

// diagnosisScenarios complete the scenario table with a case for each
// diagnosis class the original scenarios did not cover.
var diagnosisScenarios = []Scenario{
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
}

func init() { Scenarios = append(Scenarios, diagnosisScenarios...) }
