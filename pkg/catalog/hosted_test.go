package catalog

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestHostedSourcesDetected: the LiteLLM page and the two OpenTelemetry GenAI pages of testdata
// (written from the documented names, see their headers) are detected as their engines, are
// gateways, and export the signals the catalogue reads from them; LiteLLM's
// latency_per_output_token is not read as TPOT (it is TTFT / output tokens); the collector keeps
// the histograms the catalogue reads and only _sum and _count of the others.
func TestHostedSourcesDetected(t *testing.T) {
	lite := storedSamples(t, "litellm-proxy-documented-names-three-models.prom")
	d := Detect(lite)
	require.Equal(t, EngineLiteLLM, d.Engine, "%v", d.Evidence)
	assert.True(t, IsGateway(d.Engine))
	for _, s := range []Signal{TTFT, E2E, RequestsFinished, PromptTokens, GenerationTokens, RequestErrors, GatewaySpend,
		DeploymentFailures, DeploymentState, RateLimitRemainingRequests, RateLimitRemainingTokens} {
		assert.True(t, Assess(d, lite, s).Exported(), "litellm: %s readable", s)
	}
	tpot := Assess(d, lite, TPOT)
	assert.Equal(t, StateAbsent, tpot.State)
	assert.Contains(t, tpot.Note, "not a time per output token")
	assert.Contains(t, lite, "litellm_llm_api_time_to_first_token_metric_bucket")
	assert.NotContains(t, lite, "litellm_deployment_latency_per_output_token_bucket", "a family the catalogue does not read keeps only _sum and _count")
	assert.Contains(t, lite, "litellm_deployment_latency_per_output_token_count")

	for file, gen := range map[string]string{
		"otel-genai-collector-client-provider-name-and-system.prom": OTelGenAIClient,
		"otel-genai-collector-server-vllm.prom":                     OTelGenAIServer,
	} {
		names := storedSamples(t, file)
		d := Detect(names)
		require.Equal(t, EngineOTelGenAI, d.Engine, "%s: %v", file, d.Evidence)
		assert.Equal(t, gen, d.Generation, file)
		assert.True(t, IsGateway(d.Engine))
		want := []Signal{TTFT, E2E, RequestsFinished, RequestErrors}
		if gen == OTelGenAIClient {
			want = append(want, ITL, PromptTokens, GenerationTokens)
		} else {
			want = append(want, TPOT)
		}
		for _, s := range want {
			assert.True(t, Assess(d, names, s).Exported(), "%s: %s readable", file, s)
		}
	}
	// Both kinds on one page (an application that is also instrumented as a server).
	both := Detect([]string{OTelClientDuration + "_count", OTelServerTTFT + "_bucket"})
	assert.Equal(t, OTelGenAIBoth, both.Generation)
	// An engine page is not a gateway and is not mistaken for one.
	assert.Equal(t, EngineVLLM, Detect(storedSamples(t, "vllm-0.24-v1-new-families.prom")).Engine)
	assert.False(t, IsGateway(EngineVLLM))
}

// TestHostedPromQL: the gateways' names enter the builders only with Scope.Gateway (engine
// queries unchanged); LiteLLM's deprecated request counter and the OpenTelemetry client
// instruments are read only for targets without the current or server twin; models come from
// requested_model / model / litellm_model_name (LiteLLM) and gen_ai_request_model (OTel);
// groupBy provider copies api_provider, then gen_ai_system, then gen_ai_provider_name into one
// provider label, so the older and newer attribute names are read once.
func TestHostedPromQL(t *testing.T) {
	plain, err := HistogramPromQL(TTFT, Scope{By: []string{"model"}}, 5*time.Minute)
	require.NoError(t, err)
	assert.NotContains(t, plain.Buckets, "litellm_")
	assert.NotContains(t, plain.Buckets, "gen_ai_")

	gw, err := HistogramPromQL(TTFT, Scope{Targets: []string{"gw"}, By: []string{"model"}, Gateway: true}, 5*time.Minute)
	require.NoError(t, err)
	assert.Contains(t, gw.Buckets, `label_replace(label_replace(label_replace(rate(litellm_llm_api_time_to_first_token_metric_bucket{job=~"gw"}[5m]), "model_name", "$1", "litellm_model_name", "(.+)"), "model_name", "$1", "model", "(.+)"), "model_name", "$1", "requested_model", "(.+)")`)
	assert.Contains(t, gw.Buckets, `(rate(gen_ai_client_operation_time_to_first_chunk_seconds_bucket{job=~"gw"}[5m]) unless on (job) rate(gen_ai_server_time_to_first_token_seconds_bucket{job=~"gw"}[5m]))`)
	assert.Contains(t, gw.Buckets, `"model_name", "$1", "gen_ai_request_model", "(.+)")`)

	rq, err := CounterRatePromQL(RequestsFinished, Scope{Gateway: true}, time.Minute)
	require.NoError(t, err)
	assert.Contains(t, rq, "(rate(litellm_requests_metric_total[1m]) unless on (job) rate(litellm_proxy_total_requests_metric_total[1m]))")
	assert.Contains(t, rq, "(rate(gen_ai_client_operation_duration_seconds_count[1m]) unless on (job) rate(gen_ai_server_request_duration_seconds_count[1m]))")

	errs, err := CounterRatePromQL(RequestErrors, Scope{Gateway: true, By: []string{"provider"}}, time.Minute, "error_type")
	require.NoError(t, err)
	assert.True(t, strings.HasPrefix(errs, "sum by (provider, error_type) ("), errs)
	assert.Contains(t, errs, `rate(gen_ai_server_request_duration_seconds_count{error_type!=""}[1m])`)
	assert.Contains(t, errs, `label_replace(label_replace(`)
	assert.Contains(t, errs, `"provider", "$1", "gen_ai_system", "(.+)"), "provider", "$1", "gen_ai_provider_name", "(.+)")`)
	assert.Contains(t, errs, `"provider", "$1", "api_provider", "(.+)")`)
	assert.Equal(t, "provider", GroupLabel("provider"))
	assert.Equal(t, []string{"gen_ai_system", "gen_ai_provider_name"}, providerLabels[EngineOTelGenAI])
}

// TestClassifyError: the five classes from LiteLLM's exception classes and statuses,
// OpenTelemetry error_type values, the probe's classes and finish_reason content_filter (the
// table of docs/gateways.md, each row here).
func TestClassifyError(t *testing.T) {
	for _, c := range []struct {
		labels map[string]string
		want   ErrorClass
	}{
		{map[string]string{"exception_class": "Openai.RateLimitError", "exception_status": "429"}, ErrRateLimit},
		{map[string]string{"exception_class": "Openai.Timeout", "exception_status": "408"}, ErrAPITimeout},
		{map[string]string{"exception_class": "Azure.APITimeoutError", "exception_status": "408"}, ErrAPITimeout},
		{map[string]string{"exception_class": "Openai.ContentPolicyViolationError", "exception_status": "400"}, ErrContentFilter},
		{map[string]string{"exception_class": "Openai.BadRequestError", "exception_status": "400"}, ErrClientError},
		{map[string]string{"exception_class": "Anthropic.ContextWindowExceededError", "exception_status": "400"}, ErrClientError},
		{map[string]string{"exception_class": "AuthenticationError", "exception_status": "401"}, ErrClientError},
		{map[string]string{"exception_class": "BudgetExceededError", "exception_status": "400"}, ErrClientError},
		{map[string]string{"exception_class": "Anthropic.InternalServerError", "exception_status": "500"}, ErrModelError},
		{map[string]string{"exception_class": "Anthropic.APIConnectionError", "exception_status": "500"}, ErrModelError},
		{map[string]string{"exception_class": "Vertex_ai.ServiceUnavailableError", "exception_status": "503"}, ErrModelError},
		{map[string]string{"exception_status": "504"}, ErrAPITimeout},
		{map[string]string{"exception_status": "418"}, ErrClientError},
		{map[string]string{"error_type": "timeout"}, ErrAPITimeout},
		{map[string]string{"error_type": "httpx.ReadTimeout"}, ErrAPITimeout},
		{map[string]string{"error_type": "429"}, ErrRateLimit},
		{map[string]string{"error_type": "openai.RateLimitError"}, ErrRateLimit},
		{map[string]string{"error_type": "openai.BadRequestError"}, ErrClientError},
		{map[string]string{"error_type": "400"}, ErrClientError},
		{map[string]string{"error_type": "500"}, ErrModelError},
		{map[string]string{"error_type": "_OTHER"}, ErrModelError},
		{map[string]string{"error_type": "content_filter"}, ErrContentFilter},
		{map[string]string{"class": "timeout"}, ErrAPITimeout},
		{map[string]string{"class": "connect"}, ErrAPITimeout},
		{map[string]string{"class": "http_429", "code": "429"}, ErrRateLimit},
		{map[string]string{"class": "http_4xx", "code": "400"}, ErrClientError},
		{map[string]string{"class": "http_5xx", "code": "502"}, ErrModelError},
		{map[string]string{"class": "http_5xx", "code": "504"}, ErrAPITimeout},
		{map[string]string{"class": "stream_cut"}, ErrModelError},
		{map[string]string{"class": "bad_response"}, ErrModelError},
		{map[string]string{"finish_reason": "content_filter"}, ErrContentFilter},
		{map[string]string{"class": "content_filter"}, ErrContentFilter},
		{map[string]string{}, ErrModelError},
	} {
		assert.Equal(t, c.want, ClassifyError(c.labels), "%v", c.labels)
	}
	assert.NoError(t, CheckErrorClass("rate_limit"))
	assert.ErrorContains(t, CheckErrorClass("oops"), "api_timeout, rate_limit, content_filter, model_error, client_error")
	// The requirements' allowed shares.
	assert.Equal(t, map[ErrorClass]float64{"api_timeout": 0.01, "rate_limit": 0.005, "content_filter": 0.01, "model_error": 0.001, "client_error": 0.005}, DefaultAllowedShare)
}
