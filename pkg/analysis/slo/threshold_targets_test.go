package slo

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/inferscope/inferscope-llm-datasource/pkg/hist"
)

// TestThresholdNoticesNameTargets: a 3 s objective over three targets: a and c use vLLM's
// TTFT layout (…, 2.5, 5, …: 3 s lies between), b a layout with a 3 s bound. The notice names
// a and c, not b, and says b has the bound; with only b nothing is said.
func TestThresholdNoticesNameTargets(t *testing.T) {
	vllm := []hist.Bucket{{UpperBound: 1}, {UpperBound: 2.5}, {UpperBound: 5}, {UpperBound: math.Inf(1)}}
	own := []hist.Bucket{{UpperBound: 1}, {UpperBound: 3}, {UpperBound: 10}, {UpperBound: math.Inf(1)}}
	got := ThresholdNotices(3, map[string][]hist.Bucket{"a": vllm, "b": own, "c": vllm})
	assert.Equal(t, []string{"targets a, c: 3 s is not a bucket bound: it lies between le=2.5 and le=5, so attainment is interpolated between the exact fractions at those bounds (it is a bound for b)"}, got)
	assert.Empty(t, ThresholdNotices(3, map[string][]hist.Bucket{"b": own}))
	assert.Equal(t, []string{"target a: 3 s is not a bucket bound: it lies between le=2.5 and le=5, so attainment is interpolated between the exact fractions at those bounds"},
		ThresholdNotices(3, map[string][]hist.Bucket{"a": vllm}))
}
