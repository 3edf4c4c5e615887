package settings

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestLoadDefaultsAndSecrets(t *testing.T) {
	s, err := Load([]byte(`{"targets":[{"name":"vllm-a","url":"http://10.0.0.5:8000/metrics"}],
		"gpuAgents":[{"name":"node-a","url":"http://10.0.0.5:9400/metrics"}]}`),
		map[string]string{"vllm-a.bearerToken": "s3cret", "node-a.bearerToken": "t0k"})
	require.NoError(t, err)
	assert.Equal(t, 15*time.Second, s.ScrapeInterval)
	assert.Equal(t, 10*time.Second, s.ScrapeTimeout)
	assert.Equal(t, 15*24*time.Hour, s.Retention)
	assert.Equal(t, "s3cret", s.Targets[0].BearerToken)
	assert.Equal(t, "inferscope", s.GPUAgents[0].Kind)
	// Secrets never travel back through JSON.
	b, err := json.Marshal(s)
	require.NoError(t, err)
	assert.NotContains(t, string(b), "s3cret")
	assert.NotContains(t, string(b), "t0k")
}

func TestLoadErrorsNameTheField(t *testing.T) {
	cases := map[string]string{
		`{"targets":[{"name":"a","url":"ftp://x"}]}`:                                          "targets[0].url",
		`{"targets":[{"name":"a","url":"http://x/metrics"},{"name":"a","url":"http://y/m"}]}`: "targets[1].name",
		`{"targets":[{"name":"a b","url":"http://x/metrics"}]}`:                               "targets[0].name",
		`{"scrapeInterval":"soon"}`:                                                           "scrapeInterval",
		`{"scrapeInterval":"5s","scrapeTimeout":"10s"}`:                                       "scrapeTimeout",
		`{"retention":"10s"}`:                                                                 "retention",
		`{"targets":[{"name":"a","url":"http://x/m","engine":"foo"}]}`:                        "targets[0].engine",
		`{"targets":[{"name":"a","url":"http://x/m","agent":"nope"}]}`:                        "targets[0].agent",
		`{"targets":[{"name":"a","url":"http://x/m","labels":{"job":"x"}}]}`:                  "targets[0].labels",
		`{"gpuAgents":[{"name":"g","url":"http://x/m","kind":"other"}]}`:                      "gpuAgents[0].kind",
		`{"targets":[{"name":"a","url":"http://u:pw@x/m"}]}`:                                  "targets[0].url",
		`{"targets":[{"name":"a","url":"http://x/m","labels":{"le":"1"}}]}`:                   "targets[0].labels",
		`not json`: "jsonData",
	}
	for in, field := range cases {
		_, err := Load([]byte(in), nil)
		require.Error(t, err, in)
		assert.Contains(t, err.Error(), field, in)
	}
}

// TestFullwidthHostNormalised: a host in fullwidth digits and dots is mapped
// to the ASCII address the network uses (UTS #46, as browsers do), so the
// URL scraped is the URL shown; a host that cannot be mapped is refused with
// a sentence naming the field.
func TestFullwidthHostNormalised(t *testing.T) {
	js := []byte(`{"targets":[{"name":"a","url":"http://１２７．０．０．１:8000/metrics"},{"name":"b","url":"http://ｖｌｌｍ.example/metrics"}]}`)
	s, err := Load(js, nil)
	require.NoError(t, err)
	assert.Equal(t, "http://127.0.0.1:8000/metrics", s.Targets[0].URL)
	assert.Equal(t, "http://vllm.example/metrics", s.Targets[1].URL)
	_, err = Load([]byte(`{"targets":[{"name":"a","url":"http://a\u200b\u0000b.example/metrics"}]}`), nil)
	require.Error(t, err)
	assert.True(t, strings.HasPrefix(err.Error(), "targets[0].url: "), err.Error())
	_, err = Load([]byte(`{"targets":[{"name":"a","url":"http://ex\u2488ample.com/metrics"}]}`), nil)
	require.Error(t, err)
	assert.True(t, strings.HasPrefix(err.Error(), "targets[0].url: "), err.Error())
}
