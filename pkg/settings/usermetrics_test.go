package settings

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestUserMetricsValidation: each bad targets[].metrics or modelLabel is one sentence naming
// the field; a good map loads.
func TestUserMetricsValidation(t *testing.T) {
	good := `{"targets":[{"name":"svc","url":"http://a:8000/metrics","modelLabel":"model","metrics":{"ttft":"llm_ttft_seconds","tpot":"llm_tpot_seconds","queue_time":"llm_queue_seconds","prompt_tokens":"llm_prompt_tokens_total"}}]}`
	s, err := Load([]byte(good), nil)
	require.NoError(t, err)
	assert.Equal(t, "llm_ttft_seconds", s.Targets[0].Metrics["ttft"])
	assert.Equal(t, "model", s.Targets[0].ModelLabel)

	for js, want := range map[string]string{
		`{"targets":[{"name":"svc","url":"http://a/m","metrics":{"latency":"x"}}]}`:                                     `targets[0].metrics: "latency" is not a signal that can be mapped`,
		`{"targets":[{"name":"svc","url":"http://a/m","metrics":{"ttft":"llm-ttft"}}]}`:                                 `targets[0].metrics.ttft: "llm-ttft" is not a metric name`,
		`{"targets":[{"name":"svc","url":"http://a/m","metrics":{"ttft":"llm_ttft_seconds_bucket"}}]}`:                  `give the histogram's base name`,
		`{"targets":[{"name":"svc","url":"http://a/m","metrics":{"ttft":"x","e2e":"x"}}]}`:                              `is already mapped to`,
		`{"targets":[{"name":"svc","url":"http://a/m","modelLabel":"model"}]}`:                                          `targets[0].modelLabel: set only with targets[0].metrics`,
		`{"targets":[{"name":"svc","url":"http://a/m","modelLabel":"le","metrics":{"ttft":"x"}}]}`:                      `targets[0].modelLabel: "le" is not a usable label name`,
		`{"targets":[{"name":"svc","url":"http://a/m","engine":"vllm","metrics":{"ttft":"x"}}]}`:                        `leave targets[0].engine empty`,
		`{"mode":"remote","targets":[{"name":"svc","selector":"{job=\"svc\"}","metrics":{"ttft":"llm_ttft_seconds"}}]}`: `works in embedded mode only`,
	} {
		_, err := Load([]byte(js), nil)
		if assert.Error(t, err, js) {
			assert.Contains(t, err.Error(), want, js)
		}
	}
}
