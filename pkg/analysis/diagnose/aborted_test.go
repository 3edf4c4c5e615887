package diagnose

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/inferscope/inferscope-llm-datasource/pkg/settings"
)

// abortInput is a V1 vLLM target without an abort counter: 4 requests/s get a first token,
// fin finish, 2400 prompt tokens/s, 3 running, nothing waiting, tokens flowing.
func abortInput(n int, fin float64) TargetInput {
	return TargetInput{Name: "v", Engine: "vllm", Generation: "v1", Values: map[Signal][]float64{
		Up: constant(n, 1), UpMin: constant(n, 1), Running: constant(n, 3), Waiting: constant(n, 0),
		Progress: constant(n, 50), GenTok: constant(n, 50), PromptTok: constant(n, 2400),
		Finished: constant(n, fin), FirstTokens: constant(n, 4),
	}, Absent: map[Signal]string{Aborted: `no finished_reason="abort" series is stored: this version exports no abort counter`}}
}

// TestAbortedByTurnover (issue 39): by hand, 4 first tokens/s against 1 finished/s is 75 %
// unfinished, 3 requests/s aborted; against 3 finished/s it is 25 %, under the 0.5 bar: no
// finding (first tokens and finishes of one window are different requests).
func TestAbortedByTurnover(t *testing.T) {
	const n = 10
	in := Input{Steps: steps(n, 15*time.Second), StallWindow: 37500 * time.Millisecond, Window: time.Minute}
	in.Targets = []TargetInput{abortInput(n, 1)}
	res := Diagnose(in, settings.DefaultDiagnosis())
	require.Equal(t, AbortedTraffic, res.Targets[0].Primary[n-1])
	var f Finding
	for _, x := range res.Targets[0].Current() {
		if x.Class == AbortedTraffic {
			f = x
		}
	}
	got := map[string]float64{}
	for _, e := range f.Evidence {
		got[e.Signal] = e.Value
	}
	assert.InDelta(t, 0.75, got["unfinished_share"], 1e-12)
	assert.InDelta(t, 3.0, got["aborted_rate_estimate"], 1e-12)
	assert.Equal(t, Medium, f.Confidence)
	assert.Contains(t, f.Text(), `vllm:request_success_total{finished_reason="abort"} is not exported`)

	in.Targets = []TargetInput{abortInput(n, 3)}
	res = Diagnose(in, settings.DefaultDiagnosis())
	assert.NotContains(t, res.Targets[0].Primary, AbortedTraffic)
}
