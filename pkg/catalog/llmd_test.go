package catalog

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestLLMDRouterDetectedBothGenerations: the three router pages of testdata (current names
// with their deprecated twins, current names only, deprecated names only) are the llm-d
// router's endpoint picker, each with its generation; the collector stores the families the
// catalogue reads (unused _bucket samples are dropped, their _sum and _count kept for
// detection); the gateway-side latency signals are exported, and the legacy page's ITL and
// pool standard deviations are absent (they came with the llm_d_epp_ names).
func TestLLMDRouterDetectedBothGenerations(t *testing.T) {
	for file, gen := range map[string]string{
		"llm-d-epp-dual-emission-1000-tenants-other.prom":        EPPGenerationDual,
		"llm-d-epp-current-names-second-router-200-tenants.prom": EPPGenerationCurrent,
		"llm-d-epp-legacy-inference-objective-names.prom":        EPPGenerationLegacy,
	} {
		names := storedSamples(t, file)
		d := Detect(names)
		assert.Equal(t, EngineLLMDEPP, d.Engine, file)
		assert.Equal(t, gen, d.Generation, "%s: %v", file, d.Evidence)
		for _, s := range []Signal{TTFT, TPOT, E2E, RequestsFinished, PromptTokens, GatewayErrors, SLOViolations, EndpointQueue} {
			if gen == EPPGenerationCurrent && s == SLOViolations {
				continue // the second router has no predicted-latency plugin
			}
			assert.True(t, Assess(d, names, s).Exported(), "%s: %s readable", file, s)
		}
		itl := Assess(d, names, ITL)
		std := Assess(d, names, PoolQueueStdDev)
		if gen == EPPGenerationLegacy {
			assert.Equal(t, StateAbsent, itl.State, file)
			assert.Equal(t, StateAbsent, std.State, file)
			assert.Contains(t, std.Note, "deprecated inference_* names")
		} else {
			assert.Equal(t, StateApproximate, itl.State, "%s: chunk gaps, not token gaps", file)
			assert.Equal(t, StateExported, std.State, file)
		}
	}
	names := storedSamples(t, "llm-d-epp-dual-emission-1000-tenants-other.prom")
	assert.Contains(t, names, "llm_d_epp_request_ttft_seconds_bucket")
	assert.Contains(t, names, "inference_objective_request_ttft_seconds_bucket")
	assert.NotContains(t, names, "inference_extension_scheduler_e2e_duration_seconds_bucket", "a family the catalogue does not read keeps only _sum and _count")
	assert.Contains(t, names, "inference_extension_scheduler_e2e_duration_seconds_count")
	// The first Gateway API inference extension names (inference_model_*) are the same engine.
	d := Detect([]string{"inference_model_request_total", "inference_model_request_duration_seconds_bucket", "inference_pool_average_kv_cache_utilization"})
	assert.Equal(t, EngineLLMDEPP, d.Engine)
	assert.Equal(t, EPPGenerationLegacy, d.Generation)
}

// TestLLMDRouterPromQL: the router's names enter the builders only with Scope.Gateway, so the
// PromQL of queries over engines is unchanged; a deprecated name is read only for targets
// without its current twin (unless on (job)); the router's TTFT leaves non-streaming requests
// out; groupBy tenant and priority are the router's fairness_id and priority labels.
func TestLLMDRouterPromQL(t *testing.T) {
	plain, err := HistogramPromQL(TTFT, Scope{By: []string{"target"}}, 5*time.Minute)
	require.NoError(t, err)
	assert.NotContains(t, plain.Buckets, "llm_d_epp")
	assert.NotContains(t, plain.Buckets, "inference_objective")

	gw, err := HistogramPromQL(TTFT, Scope{Targets: []string{"epp"}, By: []string{"tenant", "priority"}, Gateway: true}, 5*time.Minute)
	require.NoError(t, err)
	assert.Contains(t, gw.Buckets, `rate(llm_d_epp_request_ttft_seconds_bucket{job=~"epp", streaming!="false"}[5m])`)
	assert.Contains(t, gw.Buckets, `(rate(inference_objective_request_ttft_seconds_bucket{job=~"epp"}[5m]) unless on (job) rate(llm_d_epp_request_ttft_seconds_bucket{job=~"epp"}[5m]))`)
	assert.True(t, strings.HasPrefix(gw.Buckets, "sum by (le, fairness_id, priority) ("), gw.Buckets)

	rq, err := CounterRatePromQL(RequestsFinished, Scope{Gateway: true}, time.Minute)
	require.NoError(t, err)
	for _, old := range []string{"inference_objective_request_total", "inference_model_request_total"} {
		assert.Contains(t, rq, "(rate("+old+"[1m]) unless on (job) rate(llm_d_epp_request_total[1m]))")
	}
	assert.Equal(t, "fairness_id", GroupLabel("tenant"))
	assert.Equal(t, "priority", GroupLabel("priority"))
}
