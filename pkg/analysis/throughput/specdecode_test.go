package throughput

import (
	"math"
	"testing"
	"time"

	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestSpecDecodeRatios: two steps of one target, worked out by hand. Step 1: accepted 6/s,
// draft tokens 10/s, drafts 4/s → acceptance rate 0.6, mean acceptance length 1 + 6/4 = 2.5;
// position 0 accepted 3/s → 3/4 = 0.75, position 2 2/s → 0.5, position 10 1/s → 0.25. Step 2:
// no draft in the window (0/s) → the ratios are NaN, not 0 or Inf. Positions are ordered
// numerically (2 before 10).
func TestSpecDecodeRatios(t *testing.T) {
	t0 := time.Unix(1000, 0)
	steps := []time.Time{t0, t0.Add(time.Minute)}
	m := func(v1, v2 float64, labels ...string) *model.SampleStream {
		met := model.Metric{"job": "a"}
		for i := 0; i+1 < len(labels); i += 2 {
			met[model.LabelName(labels[i])] = model.LabelValue(labels[i+1])
		}
		return &model.SampleStream{Metric: met, Values: []model.SamplePair{
			{Timestamp: model.TimeFromUnixNano(steps[0].UnixNano()), Value: model.SampleValue(v1)},
			{Timestamp: model.TimeFromUnixNano(steps[1].UnixNano()), Value: model.SampleValue(v2)}}}
	}
	out := specDecode(model.Matrix{m(6, 0)}, model.Matrix{m(10, 0)}, model.Matrix{m(4, 0)},
		model.Matrix{m(3, 0, "position", "0"), m(1, 0, "position", "10"), m(2, 0, "position", "2")}, steps)
	got := map[string][]float64{}
	var order []string
	for _, s := range out {
		got[s.Name] = s.Values
		order = append(order, s.Name)
		assert.Equal(t, OutputSpecDecode, s.Labels["output"], s.Name)
		assert.Equal(t, "a", s.Labels["target"], s.Name)
	}
	want := map[string]float64{
		"spec decode: accepted tok/s": 6, "spec decode: draft tok/s": 10, "spec decode: drafts/s": 4,
		"spec decode: acceptance rate": 0.6, "spec decode: mean acceptance length": 2.5,
		"spec decode: position 0 acceptance rate": 0.75, "spec decode: position 2 acceptance rate": 0.5,
		"spec decode: position 10 acceptance rate": 0.25,
	}
	for name, w := range want {
		v, ok := got[name]
		require.True(t, ok, name)
		assert.InDelta(t, w, v[0], 1e-12, name)
	}
	for _, name := range []string{"spec decode: acceptance rate", "spec decode: mean acceptance length", "spec decode: position 0 acceptance rate"} {
		assert.True(t, math.IsNaN(got[name][1]), "%s with no draft in the window: %v", name, got[name][1])
	}
	assert.Equal(t, []string{"spec decode: position 0 acceptance rate", "spec decode: position 2 acceptance rate", "spec decode: position 10 acceptance rate"}, order[len(order)-3:])
}
