package settings

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestBaselinesSettings(t *testing.T) {
	s, err := Load([]byte(`{}`), nil)
	require.NoError(t, err)
	require.Len(t, s.ExpectedPerformance, 4, "the published table by default")
	assert.Equal(t, 800.0, s.ExpectedPerformance[0].TokensPerSecond)
	assert.Equal(t, 64, s.BaselinesQuotaMiB, "the default upload quota")
	assert.Equal(t, 100, s.BaselinesMaxFiles)

	s, err = Load([]byte(`{"baselinesPath":"/var/lib/grafana/baselines","expectedPerformance":[{"model":"Llama-3-8B","gpu":"1xH100","tokensPerSecond":1500,"ttftP95":0.3,"itlP95":0.03,"gpuUtilisation":0.8}]}`), nil)
	require.NoError(t, err)
	assert.Equal(t, "/var/lib/grafana/baselines", s.BaselinesPath)
	require.Len(t, s.ExpectedPerformance, 1, "a list replaces the table")

	for in, want := range map[string]string{
		`{"baselinesPath":"rel/dir"}`:                      `baselinesPath: "rel/dir" must be an absolute directory path`,
		`{"baselinesPath":"/var/lib/grafana/b/../../etc"}`: `baselinesPath: "/var/lib/grafana/b/../../etc" must not contain '..'`,
		`{"baselinesQuotaMiB":-1}`:                         "baselinesQuotaMiB: -1 must be between 1 and 16384",
		`{"baselinesMaxFiles":1000000}`:                    "baselinesMaxFiles: 1000000 must be between 1 and 100000",
		`{"expectedPerformance":[{"model":"m","gpu":"1xA100","tokensPerSecond":1,"ttftP95":-1,"itlP95":1,"gpuUtilisation":0.5}]}`:                                                                                   "expectedPerformance[0].ttftP95: -1 must be a positive number",
		`{"expectedPerformance":[{"model":"m","gpu":"g","tokensPerSecond":1,"ttftP95":1,"itlP95":1,"gpuUtilisation":0.5},{"model":"m","gpu":"g","tokensPerSecond":2,"ttftP95":1,"itlP95":1,"gpuUtilisation":0.5}]}`: "expectedPerformance[1]: m on g is already in expectedPerformance[0]",
	} {
		_, err := Load([]byte(in), nil)
		if assert.Error(t, err, in) {
			assert.Contains(t, err.Error(), want)
		}
	}
}
