package plugin

import (
	"context"
	"encoding/json"
	"sort"
	"strings"
	"testing"

	"github.com/grafana/grafana-plugin-sdk-go/backend"
	"github.com/inferscope/inferscope-llm-datasource/pkg/queries/goldentest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// pageSampleNames returns the distinct sample names of an exposition page, sorted, read line
// by line (comments left out): the names a store holding every sample of the page has.
func pageSampleNames(page string) []string {
	seen := map[string]bool{}
	var out []string
	for _, line := range strings.Split(page, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		name := line[:strings.IndexAny(line, "{ ")]
		if !seen[name] {
			seen[name] = true
			out = append(out, name)
		}
	}
	sort.Strings(out)
	return out
}

// TestMetricNamesResource: GET /metricnames lists the metric names stored for the named
// targets or GPU agents, as the raw editor's metric picker offers them. For the dcgm-lab agent
// of the golden fixture (every sample of goldentest.DCGMLabPage stored at each scrape) the answer is the
// page's sample names; an engine target's names are its own (vLLM's, none of the agent's);
// no name means every target and agent; an unknown name is a 400 naming the field.
func TestMetricNamesResource(t *testing.T) {
	inst, _ := goldenFixture(t)
	call := func(url string) (int, []byte) {
		var s goldenSender
		require.NoError(t, inst.CallResource(context.Background(), &backend.CallResourceRequest{Method: "GET", Path: "metricnames", URL: url}, &s))
		require.Len(t, s.got, 1)
		return s.got[0].Status, s.got[0].Body
	}
	names := func(url string) []string {
		status, body := call(url)
		require.Equal(t, 200, status, string(body))
		var out []string
		require.NoError(t, json.Unmarshal(body, &out))
		return out
	}

	assert.Equal(t, pageSampleNames(goldentest.DCGMLabPage), names("metricnames?target=dcgm-lab"))

	a := names("metricnames?target=vllm-a&target=vllm-a")
	assert.Contains(t, a, "vllm:num_requests_running")
	assert.Contains(t, a, "vllm:time_to_first_token_seconds_bucket")
	for _, n := range a {
		assert.False(t, strings.HasPrefix(n, "DCGM_"), "vllm-a lists the agent's %s", n)
	}
	assert.True(t, sort.StringsAreSorted(a))

	all := names("metricnames")
	for _, n := range append(a, pageSampleNames(goldentest.DCGMLabPage)...) {
		assert.Contains(t, all, n)
	}

	status, body := call("metricnames?target=nope")
	assert.Equal(t, 400, status)
	assert.Contains(t, string(body), `target: \"nope\" is not a target or GPU agent configured in this data source`)
}
