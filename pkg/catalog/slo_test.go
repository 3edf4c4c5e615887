package catalog

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestSampleCountPromQL(t *testing.T) {
	q, err := SampleCountPromQL(TTFT, Scope{Targets: []string{"a"}, By: []string{"target"}}, 30*24*time.Hour)
	require.NoError(t, err)
	assert.True(t, strings.HasPrefix(q, "max(count_over_time(vllm:time_to_first_token_seconds_count{job=~\"a\"}[30d])"), q)
	assert.NotContains(t, q, "by (")
	q, err = SampleCountPromQL(RequestsFinished, Scope{}, time.Hour)
	require.NoError(t, err)
	assert.Contains(t, q, "count_over_time(vllm:request_success_total[1h])")
	_, err = SampleCountPromQL(KVCacheUsage, Scope{}, time.Hour)
	assert.Error(t, err)
}
