package collect

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestPageFaultsNamed: the page writes vllm:num_requests_running twice (3, then 0) and its TTFT
// buckets read 20, 45, 40, 50 for le 0.1, 0.25, 0.5, +Inf (45 > 40 cannot be cumulative). The
// E2E histogram (30, 50) is fine. The real 0.11 page has neither fault.
func TestPageFaultsNamed(t *testing.T) {
	var res ProbeResult
	require.NoError(t, parsePage([]byte(readPage(t, "testdata/vllm-duplicate-and-nonmonotonic.prom")), "text/plain; version=0.0.4", 0, &res))
	assert.Equal(t, []string{
		`vllm:num_requests_running{engine="0", model_name="m"} appears twice (3, then 0): only the first value is stored`,
		`vllm:time_to_first_token_seconds_bucket{engine="0", model_name="m"}: the bucket le="0.5" holds 40 but le="0.25" below it holds 45; cumulative buckets cannot decrease, so its quantiles are not trusted`,
	}, res.Faults)

	var clean ProbeResult
	require.NoError(t, parsePage([]byte(readPage(t, page011)), "text/plain; version=0.0.4", 0, &clean))
	assert.Empty(t, clean.Faults)
}

// TestProbeNamesUpstreams: the production-stack router page re-exports two engines (server
// label); an engine's own page none.
func TestProbeNamesUpstreams(t *testing.T) {
	var router ProbeResult
	require.NoError(t, parsePage([]byte(readPage(t, "testdata/vllm-production-stack-router.prom")), "text/plain; version=0.0.4", 0, &router))
	assert.Equal(t, []string{"http://10.0.0.1:8000", "http://10.0.0.2:8000"}, router.Upstreams)
	var engine ProbeResult
	require.NoError(t, parsePage([]byte(readPage(t, page011)), "text/plain; version=0.0.4", 0, &engine))
	assert.Empty(t, engine.Upstreams)
}
