package gpu

import (
	"testing"
	"time"

	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/inferscope/inferscope-llm-datasource/pkg/analysis"
)

func stream(m model.Metric, t0 time.Time, vals ...float64) *model.SampleStream {
	s := &model.SampleStream{Metric: m}
	for i, v := range vals {
		s.Values = append(s.Values, model.SamplePair{Timestamp: model.TimeFromUnixNano(t0.Add(time.Duration(i) * time.Minute).UnixNano()), Value: model.SampleValue(v)})
	}
	return s
}

func TestThrottleStatesPerReasonAndBitmask(t *testing.T) {
	t0 := time.Unix(1_700_000_000, 0)
	st := analysis.Steps(t0, t0.Add(2*time.Minute), time.Minute)
	per := model.Matrix{
		stream(model.Metric{"job": "agent", "gpu": "0", "reason": "sw_thermal"}, t0, 0, 1, 1),
		stream(model.Metric{"job": "agent", "gpu": "0", "reason": "power_cap"}, t0, 0, 0, 1),
	}
	// DCGM bitmask: 0x4 (power cap) | 0x40 (hw thermal) = 68; then 0; then no sample.
	mask := model.Matrix{stream(model.Metric{"job": "dcgm", "gpu": "1"}, t0, 68, 0)}
	states := ThrottleStates(per, mask, st)
	require.Len(t, states, 2)
	got := map[string][]string{}
	for _, s := range states {
		got[s.Labels["target"]] = s.Values
	}
	assert.Equal(t, []string{"none", "sw_thermal", "power_cap, sw_thermal"}, got["agent"])
	assert.Equal(t, []string{"hw_thermal, power_cap", "none", ""}, got["dcgm"])
}

func TestSaturationPrefersSMActive(t *testing.T) {
	t0 := time.Unix(1_700_000_000, 0)
	st := analysis.Steps(t0, t0, time.Minute)
	sm := model.Matrix{stream(model.Metric{"job": "a", "gpu": "0"}, t0, 0.4)}
	util := model.Matrix{stream(model.Metric{"job": "a", "gpu": "0"}, t0, 1), stream(model.Metric{"job": "a", "gpu": "1"}, t0, 0.7)}
	var notes analysis.Notices
	out := Saturation(sm, util, st, &notes)
	require.Len(t, out, 2)
	assert.Equal(t, "sm_active", out[0].Labels["source"])
	assert.Equal(t, 0.4, out[0].Values[0])
	assert.Equal(t, "gpu_util", out[1].Labels["source"])
	assert.Equal(t, 0.7, out[1].Values[0])
	require.Len(t, notes.List(), 1)
	assert.Contains(t, notes.List()[0].Text, "a/gpu 1")
}
