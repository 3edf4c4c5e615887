package latency

import (
	"math"
	"testing"
	"time"

	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func bucketSeries(le string, at []time.Time, v ...float64) *model.SampleStream {
	s := &model.SampleStream{Metric: model.Metric{model.BucketLabel: model.LabelValue(le)}}
	for k, x := range v {
		s.Values = append(s.Values, model.SamplePair{Timestamp: model.TimeFromUnixNano(at[k].UnixNano()), Value: model.SampleValue(x)})
	}
	return s
}

// Hand-computed: cumulative rates 1, 3, 4 req/s at le 0.1, 0.5, +Inf are
// 1, 2 and 1 req/s in the three buckets; a cumulative rate that dips below
// its neighbour (2.5 after 3) counts 0 in its bucket, as histogram_quantile's
// monotonic fix does.
func TestHeatmapRowsDeaccumulates(t *testing.T) {
	at := []time.Time{time.Unix(60, 0), time.Unix(75, 0)}
	h := HeatmapRows([]model.Matrix{{
		bucketSeries("+Inf", at, 4, 3),
		bucketSeries("0.1", at, 1, 3),
		bucketSeries("0.5", at, 3, 2.5),
	}}, at)
	require.Equal(t, []float64{0.1, 0.5, math.Inf(1)}, h.Bounds)
	assert.Equal(t, 1, h.Layouts)
	assert.Equal(t, []float64{1, 3}, h.Rates[0])
	assert.Equal(t, []float64{2, 0}, h.Rates[1])
	assert.Equal(t, []float64{1, 0}, h.Rates[2])
}

// Two layouts: rows of the same upper bound add; a bound only one layout has
// gets only that layout's bucket; a step without samples stays NaN.
func TestHeatmapRowsMergesLayouts(t *testing.T) {
	at := []time.Time{time.Unix(60, 0), time.Unix(75, 0)}
	a := model.Matrix{bucketSeries("0.1", at, 1, 1), bucketSeries("+Inf", at, 2, 2)}
	b := model.Matrix{bucketSeries("0.25", at[:1], 5), bucketSeries("+Inf", at[:1], 6)}
	h := HeatmapRows([]model.Matrix{a, b}, at)
	require.Equal(t, []float64{0.1, 0.25, math.Inf(1)}, h.Bounds)
	assert.Equal(t, 2, h.Layouts)
	assert.Equal(t, []float64{1, 1}, h.Rates[0])
	assert.Equal(t, 5.0, h.Rates[1][0])
	assert.True(t, math.IsNaN(h.Rates[1][1]))
	assert.Equal(t, []float64{1 + 1, 1}, h.Rates[2])
}
