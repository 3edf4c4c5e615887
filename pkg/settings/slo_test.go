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
	assert.Equal(t, []string{"interactive-chat", "code-completion", "batch-analysis", "service"}, s.ProfileNames())
	// The mission's defaults: TTFT and per-request TPOT at p99 for the three
	// workloads (chat 3 s / 50 ms, code 500 ms / 30 ms, batch 30 s / 200 ms).
	want := map[string][2]float64{"interactive-chat": {3, 0.050}, "code-completion": {0.5, 0.030}, "batch-analysis": {30, 0.2}}
	for name, th := range want {
		p, ok := s.Profile(name)
		require.True(t, ok, name)
		require.Len(t, p.Objectives, 2)
		assert.Equal(t, "ttft", p.Objectives[0].Signal)
		assert.Equal(t, th[0], p.Objectives[0].Threshold)
		assert.Equal(t, "tpot", p.Objectives[1].Signal)
		assert.Equal(t, "tpot-p99", p.Objectives[1].Name)
		assert.Equal(t, th[1], p.Objectives[1].Threshold)
		for _, o := range p.Objectives {
			assert.Equal(t, 0.99, o.Target)
			assert.Equal(t, 30*24*time.Hour, o.Period)
			assert.Equal(t, KindLatency, o.Kind)
		}
	}
	// The service as a whole: TTFT p95 ≤ 2 s, ITL p95 ≤ 100 ms, error ratio
	// ≤ 2 % (target 0.98), availability ≥ 99.9 %.
	svc, ok := s.Profile("service")
	require.True(t, ok)
	type o struct {
		name, kind, signal string
		threshold, target  float64
	}
	var got []o
	for _, x := range svc.Objectives {
		got = append(got, o{x.Name, x.Kind, x.Signal, x.Threshold, x.Target})
		assert.Equal(t, 30*24*time.Hour, x.Period)
	}
	assert.Equal(t, []o{
		{"ttft-p95", KindLatency, "ttft", 2, 0.95},
		{"itl-p95", KindLatency, "itl", 0.1, 0.95},
		{"error-ratio", KindErrorRatio, "", 0, 0.98},
		{"availability", KindAvailability, "", 0, 0.999},
	}, got)
	// An explicit empty list means no profiles.
	s, err = Load([]byte(`{"sloProfiles":[]}`), nil)
	require.NoError(t, err)
	assert.Empty(t, s.Profiles)
}

func TestSLOProfilesRoundTrip(t *testing.T) {
	in := `{"targets":[{"name":"a","url":"http://x/metrics"}],"sloProfiles":[{"name":"p","objectives":[
		{"name":"e2e","signal":"e2e","threshold":2,"target":0.995,"period":"7d","targets":["a"],"models":["m"]},
		{"name":"errors","kind":"error_ratio","target":0.999,"include4xx":true,"includeAborts":true},
		{"name":"up","kind":"availability","target":0.999,"period":"month"}]}]}`
	s, err := Load([]byte(in), nil)
	require.NoError(t, err)
	p, ok := s.Profile("p")
	require.True(t, ok)
	assert.True(t, p.Objectives[1].Include4xx && p.Objectives[1].IncludeAborts)
	assert.Equal(t, KindAvailability, p.Objectives[2].Kind)
	assert.True(t, p.Objectives[2].CalendarMonth)
	assert.False(t, p.Objectives[0].CalendarMonth)
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
		obj(`{"name":"o","kind":"uptime","target":0.9}`):                                                              "sloProfiles[0].objectives[0].kind",
		obj(`{"name":"o","kind":"availability","signal":"ttft","target":0.9}`):                                        "sloProfiles[0].objectives[0].signal",
		obj(`{"name":"o","kind":"availability","threshold":2,"target":0.9}`):                                          "sloProfiles[0].objectives[0].threshold",
		obj(`{"name":"o","kind":"availability","include4xx":true,"target":0.9}`):                                      "sloProfiles[0].objectives[0].include4xx",
		obj(`{"name":"o","signal":"ttft","threshold":1,"includeAborts":true,"target":0.9}`):                           "sloProfiles[0].objectives[0].includeAborts",
		obj(`{"name":"o","kind":"error_ratio","signal":"ttft","target":0.9}`):                                         "sloProfiles[0].objectives[0].signal",
		obj(`{"name":"o","signal":"ttft","threshold":1,"target":0.9},{"name":"o","kind":"error_ratio","target":0.9}`): "sloProfiles[0].objectives[1].name",
	}
	for in, field := range cases {
		_, err := Load([]byte(in), nil)
		require.Error(t, err, in)
		assert.Contains(t, err.Error(), field+":", in)
	}
}
