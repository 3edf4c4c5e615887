package plugin

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The latency query's heatmap format (issue 21): per 15 s scrape a vLLM target
// observes 3 requests at 0.2 s TTFT (bucket (0.1, 0.5]) and 1 at 2 s (bucket
// (1, +Inf)), so over any 5m window the heatmap rows are 0 req/s for
// le=0.1, 3/15 = 0.2 req/s for le=0.5, 0 for le=1 and 1/15 ≈ 0.0667 req/s
// for +Inf (hand-computed from the observation pattern, not from the code).
func TestLatencyHeatmapRows(t *testing.T) {
	h := newHandHistory(t)
	t0 := time.Unix(1_700_000_100, 0)
	ttft := newHandHist(0.1, 0.5, 1)
	for i := 0; i <= 40; i++ {
		ts := t0.Add(time.Duration(i) * 15 * time.Second)
		if i > 0 {
			ttft.observe(0.2, 3)
			ttft.observe(2, 1)
		}
		h.scrape(ts, "vllm", "vllm:time_to_first_token_seconds", map[string]string{"model_name": "m"}, ttft)
	}
	inst := h.instance(histTarget("vllm"))
	dr := runHistQuery(t, inst, t0.Add(5*time.Minute), t0.Add(10*time.Minute), time.Minute, map[string]any{
		"queryType": "latency", "stages": []string{"ttft"}, "format": "heatmap", "window": "5m"})
	require.NoError(t, dr.Error)
	require.Len(t, dr.Frames, 1)
	f := dr.Frames[0]
	assert.Equal(t, "ttft", f.Name)
	assert.EqualValues(t, "heatmap-rows", f.Meta.Type)
	require.Len(t, f.Fields, 5)
	want := map[string]float64{"0.1": 0, "0.5": 0.2, "1": 0, "+Inf": 1.0 / 15}
	for _, fld := range f.Fields[1:] {
		w, ok := want[fld.Name]
		require.True(t, ok, "unexpected bucket %q", fld.Name)
		assert.Equal(t, "reqps", fld.Config.Unit)
		v, ok := fld.ConcreteAt(fld.Len() - 1)
		require.True(t, ok, fld.Name)
		assert.InDelta(t, w, v.(float64), 1e-9, fld.Name)
	}

	dr = runHistQuery(t, inst, t0.Add(5*time.Minute), t0.Add(10*time.Minute), time.Minute, map[string]any{
		"queryType": "latency", "stages": []string{"ttft"}, "format": "histogram"})
	require.Error(t, dr.Error)
	assert.Contains(t, dr.Error.Error(), `format: "histogram" is neither timeseries nor heatmap`)
}
