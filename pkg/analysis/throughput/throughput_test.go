package throughput

import (
	"testing"
	"time"

	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestPromptTokensBySource (issue 33): vLLM's prompt tokens by source come
// out as one tok/s series per source, named so that a "tokens/s" field
// pattern does not take them for the prompt rate. Input: two sources at 30
// and 10 tokens/s over two steps.
func TestPromptTokensBySource(t *testing.T) {
	t0 := time.Unix(1_700_000_000, 0)
	steps := []time.Time{t0, t0.Add(time.Minute)}
	series := func(src string, v float64) *model.SampleStream {
		return &model.SampleStream{Metric: model.Metric{"source": model.LabelValue(src)}, Values: []model.SamplePair{
			{Timestamp: model.TimeFromUnixNano(steps[0].UnixNano()), Value: model.SampleValue(v)},
			{Timestamp: model.TimeFromUnixNano(steps[1].UnixNano()), Value: model.SampleValue(v)},
		}}
	}
	out := Compute(Input{PromptTokensBySource: model.Matrix{series("local_compute", 30), series("local_cache_hit", 10)}}, steps)
	require.Len(t, out, 2)
	got := map[string]float64{}
	for _, s := range out {
		assert.Equal(t, UnitTokensPerSecond, s.Unit)
		assert.Equal(t, "prompt_tokens_by_source", s.Labels["signal"])
		assert.Contains(t, []string{"local_compute", "local_cache_hit"}, s.Labels["token_source"])
		assert.NotContains(t, s.Name, "tokens/s")
		require.Len(t, s.Values, 2)
		got[s.Name] = s.Values[1]
	}
	assert.Equal(t, map[string]float64{"prompt tokens by source: local_compute": 30, "prompt tokens by source: local_cache_hit": 10}, got)
}
