package diagnose

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/inferscope/inferscope-llm-datasource/pkg/settings"
)

// TestUnderUtilisedNeedsTheGPU: a target with little load (0.5 running on average, none
// waiting) whose work is prefill of long prompts (5000 prompt tokens/s against 100 generated,
// 1 request/s: 5000 tokens per prompt, a 0.98 share), and no GPU agent. It used to be both
// "under-utilised: little load and idle SMs" and "prefill compute-bound … SMs are busy" at the
// same steps, with no SM reading at all. Now: no under-utilised finding (idle SMs not measured),
// and the prefill finding does not claim busy SMs. With SM activity 0.05 and no prompt load the
// under-utilised finding holds and names the SMs.
func TestUnderUtilisedNeedsTheGPU(t *testing.T) {
	const n = 3
	values := func() map[Signal][]float64 {
		return map[Signal][]float64{
			Up: constant(n, 1), UpMin: constant(n, 1), Running: constant(n, 0.5), Waiting: constant(n, 0),
			RunningAvg: constant(n, 0.5), WaitingAvg: constant(n, 0), WaitingSpan: constant(n, 0), Progress: constant(n, 100),
			PromptTok: constant(n, 5000), GenTok: constant(n, 100), Finished: constant(n, 1),
		}
	}
	in := Input{Steps: steps(n, time.Minute), Window: 5 * time.Minute, StallWindow: 30 * time.Second,
		Targets: []TargetInput{{Name: "a", Engine: "vllm", Values: values(), NoGPU: "no GPU agent is configured for this target"}}}
	res := Diagnose(in, settings.DefaultDiagnosis())
	var classes []Class
	for _, f := range res.Targets[0].Current() {
		classes = append(classes, f.Class)
		if f.Class == PrefillCompute {
			assert.NotContains(t, f.Summary, "SMs are busy")
			assert.Contains(t, f.Summary, "not measured")
			assert.Equal(t, Low, f.Confidence)
		}
	}
	// Issue 20: a class that needs missing GPU data is not guessed, so the
	// prefill finding, when raised, claims no busy SMs, and insufficient_data
	// (naming the missing signals) is as good an answer.
	assert.True(t, slices.Contains(classes, PrefillCompute) || slices.Contains(classes, InsufficientData), "classes %v", classes)
	assert.NotContains(t, classes, UnderUtilised)

	idle := values()
	idle[PromptTok] = constant(n, 50)
	idle[SMActive] = constant(n, 0.05)
	in.Targets = []TargetInput{{Name: "a", Engine: "vllm", Values: idle}}
	res = Diagnose(in, settings.DefaultDiagnosis())
	cur := res.Targets[0].Current()
	require.NotEmpty(t, cur)
	assert.Equal(t, UnderUtilised, cur[0].Class)
	assert.True(t, strings.Contains(cur[0].Summary, "idle SMs"))
}
