package latency

import (
	"math"
	"testing"
	"time"

	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestSpikesMarkWindowsOverTheThreshold(t *testing.T) {
	// Four 1-minute windows of TTFT bucket rates (le 1, 2.5, 5, +Inf),
	// threshold 3 s:
	//   0: 100 requests ≤ 1 s: p99 0.99 s, highest bucket (0, 1]: no spike;
	//   1: 99 ≤ 1 s and 1 in (5, +Inf): p99 = 1 s exactly (rank 99), the
	//      highest occupied bucket starts at 5 ≥ 3: a spike (one slow request);
	//   2: 100 in (2.5, 5]: p99 = 2.5 + 0.99·2.5 = 4.975 > 3: spike;
	//   3: no request: NaN.
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	steps := []time.Time{t0, t0.Add(time.Minute), t0.Add(2 * time.Minute), t0.Add(3 * time.Minute)}
	rates := map[string][]float64{"1": {100, 99, 0, 0}, "2.5": {100, 99, 0, 0}, "5": {100, 99, 100, 0}, "+Inf": {100, 100, 100, 0}}
	var m model.Matrix
	for le, vs := range rates {
		ss := &model.SampleStream{Metric: model.Metric{"job": "a", "le": model.LabelValue(le)}}
		for i, v := range vs {
			ss.Values = append(ss.Values, model.SamplePair{Timestamp: model.TimeFromUnixNano(steps[i].UnixNano()), Value: model.SampleValue(v)})
		}
		m = append(m, ss)
	}
	out := Spikes(Input{Stage: "ttft", Buckets: m}, steps, 3)
	require.Len(t, out, 1)
	assert.Equal(t, "spike", out[0].Labels["stat"])
	assert.Equal(t, "a", out[0].Labels["target"], "group labels as the latency series carry them")
	v := out[0].Values
	assert.Equal(t, []float64{0, 1, 1}, v[:3])
	assert.True(t, math.IsNaN(v[3]))
}
