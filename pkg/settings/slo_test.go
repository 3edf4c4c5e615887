package settings

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestSLODefaultProfiles(t *testing.T) {
	s, err := Load([]byte(`{"targets":[{"name":"a","url":"http://x/metrics"}]}`), nil)
	require.NoError(t, err)
	assert.Equal(t, []string{"interactive-chat", "code-completion", "batch-analysis"}, s.ProfileNames())
	// The field's defaults, as the issue and vLLM bench practice state them.
	want := map[string][2]float64{"interactive-chat": {3, 0.050}, "code-completion": {0.5, 0.030}, "batch-analysis": {30, 0.2}}
	for name, th := range want {
		p, ok := s.Profile(name)
		require.True(t, ok, name)
		require.Len(t, p.Objectives, 2)
		assert.Equal(t, "ttft", p.Objectives[0].Signal)
		assert.Equal(t, th[0], p.Objectives[0].Threshold)
		assert.Equal(t, "itl", p.Objectives[1].Signal)
		assert.Equal(t, th[1], p.Objectives[1].Threshold)
		for _, o := range p.Objectives {
			assert.Equal(t, 0.99, o.Target)
			assert.Equal(t, 30*24*time.Hour, o.Period)
			assert.Equal(t, KindLatency, o.Kind)
		}
	}
	// An explicit empty list means no profiles.
	s, err = Load([]byte(`{"sloProfiles":[]}`), nil)
	require.NoError(t, err)
	assert.Empty(t, s.Profiles)
}

func TestSLOProfilesRoundTrip(t *testing.T) {
	in := `{"targets":[{"name":"a","url":"http://x/metrics"}],"sloProfiles":[{"name":"p","objectives":[
		{"name":"e2e","signal":"e2e","threshold":2,"target":0.995,"period":"7d","targets":["a"],"models":["m"]},
		{"name":"errors","kind":"error_ratio","target":0.999}]}]}`
	s, err := Load([]byte(in), nil)
	require.NoError(t, err)
	p, ok := s.Profile("p")
	require.True(t, ok)
	assert.Equal(t, 7*24*time.Hour, p.Objectives[0].Period)
	assert.Equal(t, 2.0, p.Objectives[0].Threshold)
	assert.Equal(t, KindErrorRatio, p.Objectives[1].Kind)
	assert.Equal(t, DefaultSLOPeriod, p.Objectives[1].Period)
	b, err := json.Marshal(s)
	require.NoError(t, err)
	assert.Contains(t, string(b), `"sloProfiles":[{"name":"p"`)
}

func TestSLOErrorsNameTheField(t *testing.T) {
	obj := func(o string) string {
		return `{"targets":[{"name":"a","url":"http://x/m"}],"sloProfiles":[{"name":"p","objectives":[` + o + `]}]}`
	}
	cases := map[string]string{
		`{"sloProfiles":[{"name":"bad name","objectives":[{"name":"o","signal":"ttft","threshold":1,"target":0.9}]}]}`: "sloProfiles[0].name",
		`{"sloProfiles":[{"name":"p","objectives":[]}]}`:                                                               "sloProfiles[0].objectives",
		`{"sloProfiles":[{"name":"p","objectives":[{"name":"o","signal":"ttft","threshold":1,"target":0.9}]},{"name":"p","objectives":[{"name":"o","signal":"ttft","threshold":1,"target":0.9}]}]}`: "sloProfiles[1].name",
		obj(`{"name":"o","signal":"latency","threshold":1,"target":0.9}`):                                             "sloProfiles[0].objectives[0].signal",
		obj(`{"name":"o","signal":"ttft","threshold":0,"target":0.9}`):                                                "sloProfiles[0].objectives[0].threshold",
		obj(`{"name":"o","signal":"ttft","threshold":-1,"target":0.9}`):                                               "sloProfiles[0].objectives[0].threshold",
		obj(`{"name":"o","signal":"ttft","threshold":1,"target":1}`):                                                  "sloProfiles[0].objectives[0].target",
		obj(`{"name":"o","signal":"ttft","threshold":1,"target":0}`):                                                  "sloProfiles[0].objectives[0].target",
		obj(`{"name":"o","signal":"ttft","threshold":1,"target":99}`):                                                 "sloProfiles[0].objectives[0].target",
		obj(`{"name":"o","signal":"ttft","threshold":1,"target":0.9,"period":"1h"}`):                                  "sloProfiles[0].objectives[0].period",
		obj(`{"name":"o","signal":"ttft","threshold":1,"target":0.9,"period":"soon"}`):                                "sloProfiles[0].objectives[0].period",
		obj(`{"name":"o","signal":"ttft","threshold":1,"target":0.9,"targets":["zz"]}`):                               "sloProfiles[0].objectives[0].targets",
		obj(`{"name":"o","signal":"ttft","threshold":1,"target":0.9,"models":[" "]}`):                                 "sloProfiles[0].objectives[0].models",
		obj(`{"name":"o","kind":"availability","target":0.9}`):                                                        "sloProfiles[0].objectives[0].kind",
		obj(`{"name":"o","kind":"error_ratio","signal":"ttft","target":0.9}`):                                         "sloProfiles[0].objectives[0].signal",
		obj(`{"name":"o","signal":"ttft","threshold":1,"target":0.9},{"name":"o","kind":"error_ratio","target":0.9}`): "sloProfiles[0].objectives[1].name",
	}
	for in, field := range cases {
		_, err := Load([]byte(in), nil)
		require.Error(t, err, in)
		assert.Contains(t, err.Error(), field+":", in)
	}
}
