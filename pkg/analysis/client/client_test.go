package client

import (
	"math"
	"testing"
	"time"

	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/inferscope/inferscope-llm-datasource/pkg/analysis"
)

func matrix(job string, steps []time.Time, vals ...float64) model.Matrix {
	s := &model.SampleStream{Metric: model.Metric{"job": model.LabelValue(job)}}
	for i, v := range vals {
		if !math.IsNaN(v) {
			s.Values = append(s.Values, model.SamplePair{Timestamp: model.TimeFromUnixNano(steps[i].UnixNano()), Value: model.SampleValue(v)})
		}
	}
	return model.Matrix{s}
}

func byStat(series []analysis.Series) map[string][]float64 {
	out := map[string][]float64{}
	for _, s := range series {
		out[s.Labels["stat"]] = s.Values
	}
	return out
}

// TestSpikes: windows by hand. 20 requests, 0 over: nothing; 1 over: spike;
// 10.4 of 20.8 (extrapolated) over: 10 of 21 after rounding, below a 0.5
// share: spike; 20 of 20: sustained; 1 of 1: not sustained (fewer than 2
// requests), so a spike.
func TestSpikes(t *testing.T) {
	t0 := time.Unix(0, 0)
	steps := []time.Time{t0, t0.Add(time.Minute), t0.Add(2 * time.Minute), t0.Add(3 * time.Minute), t0.Add(4 * time.Minute)}
	in := SpikeInput{
		Total:          matrix("p", steps, 20, 20, 20.8, 20, 1),
		Over:           matrix("p", steps, 0, 1.04, 10.4, 20, 1),
		Max:            matrix("p", steps, 0.02, 0.8, 0.6, 0.6, 0.7),
		SustainedShare: 0.5, MinRequests: 2,
	}
	got := byStat(Spikes(in, steps))
	assert.Equal(t, []float64{20, 20, 21, 20, 1}, got["requests"])
	assert.Equal(t, []float64{0, 1, 10, 20, 1}, got["over"])
	assert.Equal(t, []float64{0, 1, 1, 0, 1}, got["spike"])
	assert.Equal(t, []float64{0, 0, 0, 1, 0}, got["sustained"])
	assert.Equal(t, []float64{0.02, 0.8, 0.6, 0.6, 0.7}, got["max"])
}

// TestErrorsAndOutside: success ratio 1 − errors/requests per group, all-zero
// error series dropped; outside = client − engine, NaN where either is missing.
func TestErrorsAndOutside(t *testing.T) {
	t0 := time.Unix(0, 0)
	steps := []time.Time{t0, t0.Add(time.Minute)}
	errs := model.Matrix{
		{Metric: model.Metric{"job": "p", "class": "http_429", "code": "429"}, Values: []model.SamplePair{{Timestamp: 0, Value: 0.01}, {Timestamp: 60000, Value: 0}}},
		{Metric: model.Metric{"job": "p", "class": "timeout", "code": ""}, Values: []model.SamplePair{{Timestamp: 0, Value: 0}, {Timestamp: 60000, Value: 0}}},
	}
	out := Errors(ErrorsInput{Errors: errs, Requests: matrix("p", steps, 0.2, 0.2)}, steps)
	names := map[string]analysis.Series{}
	for _, s := range out {
		names[s.Name] = s
	}
	require.Contains(t, names, "errors/s http_429 429")
	assert.NotContains(t, names, "errors/s timeout", "a class that stayed at zero is left out")
	assert.InDeltaSlice(t, []float64{0.95, 1}, names["success ratio"].Values, 1e-12)

	o := Outside([]float64{0.12, 0.12, math.NaN()}, []float64{0.025, math.NaN(), 0.02})
	assert.InDelta(t, 0.095, o[0], 1e-12)
	assert.True(t, math.IsNaN(o[1]) && math.IsNaN(o[2]))
}
