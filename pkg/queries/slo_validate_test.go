package queries

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/backend"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/inferscope/inferscope-llm-datasource/pkg/settings"
)

// TestSLOFamilyFieldsCheckedWhileDecoding: the slo, burn_rate, goodput and diagnosis queries'
// own fields (profile, objectives, format, classes, source) are refused by Decode (their
// validate methods), as BadQuery sentences naming the field, before anything is read.
func TestSLOFamilyFieldsCheckedWhileDecoding(t *testing.T) {
	s, err := settings.Load([]byte(`{"targets":[{"name":"vllm-a","url":"http://a:8000/metrics"}],
		"sloProfiles":[{"name":"chat","objectives":[{"name":"ttft-1s","signal":"ttft","threshold":1,"target":0.95}]}]}`), nil)
	require.NoError(t, err)
	none, err := settings.Load([]byte(`{"targets":[{"name":"vllm-a","url":"http://a:8000/metrics"}],"sloProfiles":[]}`), nil)
	require.NoError(t, err)
	to := time.Unix(1_800_000_000, 0)
	for _, c := range []struct {
		name, queryType, js, want string
		noProfiles                bool
	}{
		{"slo: unknown profile", "slo", `{"profile":"batch"}`, `profile: "batch" is not an SLO profile of this data source (profiles: chat)`, false},
		{"slo: unknown objective", "slo", `{"objectives":["e2e"]}`, `objectives: "e2e" is not an objective of the selected profile(s)`, false},
		{"slo: unknown source", "slo", `{"source":"client"}`, "source", false},
		{"slo: no profile in the settings", "slo", `{}`, "profile: this data source has no SLO profile; add one in its settings", true},
		{"burn_rate: unknown format", "burn_rate", `{"format":"table"}`, `format: "table" is not timeseries`, false},
		{"burn_rate: unknown profile", "burn_rate", `{"profile":"x"}`, `profile: "x" is not an SLO profile`, false},
		{"goodput: profile required", "goodput", `{}`, "profile: this query type needs an SLO profile (profiles: chat)", false},
		{"diagnosis: unknown format", "diagnosis", `{"format":"graph"}`, `format: "graph" is not one of table, annotations, timeline, numeric`, false},
		{"diagnosis: unknown class", "diagnosis", `{"classes":["slow"]}`, `classes: "slow" is not a diagnosis class`, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			st := &s
			if c.noProfiles {
				st = &none
			}
			_, err := Decode(c.queryType, backend.DataQuery{RefID: "A", JSON: json.RawMessage(c.js), Interval: time.Minute, MaxDataPoints: 100,
				TimeRange: backend.TimeRange{From: to.Add(-time.Hour), To: to}}, st)
			require.Error(t, err)
			assert.True(t, IsBadQuery(err), "%v", err)
			assert.Contains(t, err.Error(), c.want)
		})
	}
	for _, qt := range []string{"slo", "burn_rate", "goodput", "diagnosis"} {
		t.Run(qt+": valid query decodes", func(t *testing.T) {
			_, err := Decode(qt, backend.DataQuery{RefID: "A", JSON: json.RawMessage(`{"profile":"chat","format":""}`), Interval: time.Minute, MaxDataPoints: 100,
				TimeRange: backend.TimeRange{From: to.Add(-time.Hour), To: to}}, &s)
			assert.NoError(t, err)
		})
	}
}
