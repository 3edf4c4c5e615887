package settings

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestModeDefaultsToEmbedded(t *testing.T) {
	s, err := Load([]byte(`{"targets":[{"name":"a","url":"http://10.0.0.5:8000/metrics"}]}`), nil)
	require.NoError(t, err)
	assert.Equal(t, ModeEmbedded, s.Mode)
	assert.False(t, s.IsRemote())
}

func TestRemoteModeLoads(t *testing.T) {
	s, err := LoadWithURL("http://prometheus:9090", false, []byte(`{"mode":"remote","remoteTimeout":"45s",
		"targets":[{"name":"vllm-a","selector":"{job=\"vllm\", pod=~\"vllm-0|vllm-1\"}"},{"name":"vllm-b"}],
		"gpuAgents":[{"name":"node-a","selector":"{job=\"dcgm\", Hostname=\"node-a\"}","kind":"dcgm"}]}`),
		map[string]string{RemoteBearerTokenKey: "s3cret"})
	require.NoError(t, err)
	assert.True(t, s.IsRemote())
	assert.Equal(t, "http://prometheus:9090", s.Remote.URL)
	assert.Equal(t, 45*time.Second, s.Remote.Timeout)
	assert.Equal(t, "s3cret", s.Remote.BearerToken)
	assert.Equal(t, `{job="vllm", pod=~"vllm-0|vllm-1"}`, s.Targets[0].SelectorOrDefault())
	assert.Equal(t, `{job="vllm-b"}`, s.Targets[1].SelectorOrDefault(), "no selector: the server's job is the name")
	b, err := json.Marshal(s)
	require.NoError(t, err)
	assert.NotContains(t, string(b), "s3cret")

	s, err = LoadWithURL("http://prometheus:9090", false, []byte(`{"mode":"remote","targets":[{"name":"a"}]}`), nil)
	require.NoError(t, err)
	assert.Equal(t, DefaultRemoteTimeout, s.Remote.Timeout)
}

func TestRemoteModeErrorsNameTheField(t *testing.T) {
	cases := map[string]struct {
		url, json string
		basic     bool
		secure    map[string]string
	}{
		"url: remote mode needs the server's URL":                        {"", `{"mode":"remote","targets":[{"name":"a"}]}`, false, nil},
		`url: "ftp://x" is not an http(s) URL`:                           {"ftp://x", `{"mode":"remote"}`, false, nil},
		"url: put credentials in the basic-auth fields":                  {"http://u:p@prom:9090", `{"mode":"remote"}`, false, nil},
		`mode: "federated" is neither embedded nor remote`:               {"", `{"mode":"federated"}`, false, nil},
		"remote auth: set either a bearer token or basic auth":           {"http://prom:9090", `{"mode":"remote"}`, true, map[string]string{RemoteBearerTokenKey: "t"}},
		"targets[0].selector: \"job=\\\"x\\\"\" is not a label selector": {"http://prom:9090", `{"mode":"remote","targets":[{"name":"a","selector":"job=\"x\""}]}`, false, nil},
		"names a metric":                                   {"http://prom:9090", `{"mode":"remote","targets":[{"name":"a","selector":"{__name__=\"up\"}"}]}`, false, nil},
		"would match every series on the server":           {"http://prom:9090", `{"mode":"remote","targets":[{"name":"a","selector":"{pod=~\".*\"}"}]}`, false, nil},
		"gpuAgents[0].selector":                            {"http://prom:9090", `{"mode":"remote","gpuAgents":[{"name":"g","selector":"{"}]}`, false, nil},
		`remoteTimeout: "soon" is not a positive duration`: {"http://prom:9090", `{"mode":"remote","remoteTimeout":"soon"}`, false, nil},
		"targets[0].url":                                   {"", `{"targets":[{"name":"a"}]}`, false, nil},
	}
	for want, c := range cases {
		_, err := LoadWithURL(c.url, c.basic, []byte(c.json), c.secure)
		require.Error(t, err, want)
		assert.Contains(t, err.Error(), want)
	}
}

func TestRemoteSizeLimitsValidated(t *testing.T) {
	for in, want := range map[string]string{
		`{"mode":"remote","remoteMaxAnswerMiB":-1,"targets":[{"name":"a"}]}`:                          "remoteMaxAnswerMiB: -1 must be between 1 and 4096",
		`{"mode":"remote","remoteMaxRequestMiB":99999,"targets":[{"name":"a"}]}`:                      "remoteMaxRequestMiB: 99999 must be between 1 and 16384",
		`{"mode":"remote","remoteMaxAnswerMiB":64,"remoteMaxRequestMiB":32,"targets":[{"name":"a"}]}`: "remoteMaxRequestMiB: 32 is less than remoteMaxAnswerMiB 64",
	} {
		_, err := LoadWithURL("http://prometheus:9090", false, []byte(in), nil)
		if assert.Error(t, err, in) {
			assert.Contains(t, err.Error(), want)
		}
	}
	s, err := LoadWithURL("http://prometheus:9090", false, []byte(`{"mode":"remote","remoteMaxAnswerMiB":8,"targets":[{"name":"a"}]}`), nil)
	require.NoError(t, err)
	assert.Equal(t, 8, s.RemoteMaxAnswerMiB)
}
