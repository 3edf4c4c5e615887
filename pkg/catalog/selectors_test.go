package catalog

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestWithLeSelectsStoredSpellings(t *testing.T) {
	hq, err := HistogramPromQL(TTFT, Scope{Targets: []string{"a"}}, 5*time.Minute)
	require.NoError(t, err)
	q := WithLe(hq.Buckets, []string{"+Inf", "2.0", "2.5"})
	assert.Contains(t, q, `vllm:time_to_first_token_seconds_bucket{le=~"\\+Inf|2\\.0|2\\.5", job=~"a"}[5m]`)
	assert.NotContains(t, q, `_bucket{job`)
	bare := WithLe(`sum by (le) (rate(x_bucket[1m]))`, []string{"1", "+Inf"})
	assert.Equal(t, `sum by (le) (rate(x_bucket{le=~"1|\\+Inf"}[1m]))`, bare)
}
