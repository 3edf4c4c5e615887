package catalog

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The increase queries use the same `or` chain, scope and grouping as the
// rate queries, with delta() (buckets, _sum, _count) and resets() (_count).
func TestHistogramIncreaseQueries(t *testing.T) {
	hq, err := HistogramPromQLFor([]Metric{{Name: "vllm:time_to_first_token_seconds", Kind: KindHistogram, Scale: 1}},
		Scope{Targets: []string{"a"}, By: []string{"target"}}, 5*time.Minute)
	require.NoError(t, err)
	assert.Equal(t, strings.ReplaceAll(hq.Buckets, "rate(", "delta("), hq.Increases)
	assert.Equal(t, strings.ReplaceAll(hq.Count, "rate(", "resets("), hq.Resets)
	assert.Equal(t, strings.ReplaceAll(hq.Sum, "rate(", "delta("), hq.SumIncrease)
	assert.Equal(t, strings.ReplaceAll(hq.Count, "rate(", "delta("), hq.CountIncrease)
	assert.Contains(t, hq.Increases, `delta(vllm:time_to_first_token_seconds_bucket{job=~"a"}[5m])`)
	assert.True(t, strings.HasPrefix(hq.Increases, "sum by (le, job) ("), hq.Increases)
}
