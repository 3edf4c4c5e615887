package queries

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/backend"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/inferscope/inferscope-llm-datasource/pkg/enginemodel"
)

// Every bad field of a capacity query gets a sentence naming it, as a BadQuery.
func TestCapacityBadInputNamesTheField(t *testing.T) {
	s := testSettings(t)
	to := time.Unix(1_800_000_000, 0)
	for js, want := range map[string]string{
		`{"format":"graph"}`:                                        "format:",
		`{"utilisation":0}`:                                         "utilisation:",
		`{"utilisation":1.2}`:                                       "utilisation:",
		`{"profiles":["nope"]}`:                                     `profiles: "nope"`,
		`{"groupBy":"model"}`:                                       "groupBy:",
		`{"models":["m"]}`:                                          "models:",
		`{"maxNumSeqs":-1}`:                                         "maxNumSeqs:",
		`{"maxNumSeqs":128,"maxNumBatchedTokens":64}`:               "maxNumBatchedTokens:",
		`{"whatIf":{"addReplicas":1}}`:                              "whatIf: a change is predicted only with format whatif",
		`{"format":"whatif","whatIf":{}}`:                           "whatIf: set at least one",
		`{"format":"whatif","whatIf":{"promptScale":40}}`:           "whatIf.promptScale:",
		`{"format":"whatif","whatIf":{"prefixCachingPercent":120}}`: "whatIf.prefixCachingPercent:",
		`{"format":"whatif","whatIf":{"maxNumSeqs":-4}}`:            "whatIf.maxNumSeqs:",
		`{"format":"whatif","whatIf":{"addReplicas":-1}}`:           "whatIf.addReplicas:",
		`{"format":"whatif","whatIf":{"loadScale":-2}}`:             "whatIf.loadScale:",
	} {
		_, err := Decode("capacity", backend.DataQuery{RefID: "A", JSON: json.RawMessage(js), Interval: time.Minute, MaxDataPoints: 100,
			TimeRange: backend.TimeRange{From: to.Add(-time.Hour), To: to}}, &s)
		require.Error(t, err, js)
		assert.Contains(t, err.Error(), want, js)
		assert.IsType(t, BadQuery{}, err, js)
	}
	d, err := Decode("capacity", backend.DataQuery{RefID: "A", JSON: json.RawMessage(`{"format":"whatif","whatIf":{"maxNumSeqs":32,"addReplicas":1,"replicas":3,"promptScale":2,"prefixCachingPercent":40}}`),
		Interval: time.Minute, MaxDataPoints: 100, TimeRange: backend.TimeRange{From: to.Add(-time.Hour), To: to}}, &s)
	require.NoError(t, err)
	q := d.Req.(*Capacity)
	assert.Equal(t, 0.8, q.utilisation, "the default utilisation")
	c := q.WhatIf.change()
	assert.Equal(t, "max-num-seqs 32, +1 replica(s), 4 in all, prompts x2, prefix caching 40%", c.Name)
	assert.Equal(t, 0.4, c.PrefixHitRatio)
	_, rate := c.Apply(enginemodel.DefaultConfig(), 8)
	assert.Equal(t, 6.0, rate, "3 replicas' load spread over 4: 8 × 3/4")
	w := CapacityWhatIf{LoadScale: 2}
	c = w.change()
	assert.Equal(t, "load x2 on the same replicas", c.Name)
	_, rate = c.Apply(enginemodel.DefaultConfig(), 8)
	assert.Equal(t, 16.0, rate)
}
