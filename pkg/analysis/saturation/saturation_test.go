package saturation

import (
	"math"
	"testing"
	"time"

	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/assert"

	"github.com/inferscope/inferscope-llm-datasource/pkg/analysis"
)

func series(job string, t time.Time, vals ...float64) *model.SampleStream {
	s := &model.SampleStream{Metric: model.Metric{"job": model.LabelValue(job)}}
	for i, v := range vals {
		s.Values = append(s.Values, model.SamplePair{Timestamp: model.TimeFromUnixNano(t.Add(time.Duration(i) * time.Minute).UnixNano()), Value: model.SampleValue(v)})
	}
	return s
}

func TestPrefixHitRatioAndGaugeFallback(t *testing.T) {
	t0 := time.Unix(1_700_000_000, 0)
	st := analysis.Steps(t0, t0.Add(time.Minute), time.Minute)
	in := Input{
		PrefixHits:    model.Matrix{series("v1", t0, 30, 0)},
		PrefixQueries: model.Matrix{series("v1", t0, 120, 0)},
		// V0 target only has the hit-rate gauge (sentinel already filtered by PromQL).
		PrefixHitRatio: model.Matrix{series("v0", t0, 0.5, 0.25), series("v1", t0, 0.9, 0.9)},
	}
	got := map[string][]float64{}
	for _, s := range Compute(in, st) {
		if s.Labels["signal"] == "prefix_cache_hit_ratio" {
			got[s.Labels["target"]] = s.Values
			assert.Equal(t, "percentunit", s.Unit)
		}
	}
	assert.Equal(t, 0.25, got["v1"][0]) // 30/120 from counters, gauge ignored where counters exist
	assert.True(t, math.IsNaN(got["v1"][1]), "no queries in the window is no data, not 0")
	assert.Equal(t, []float64{0.5, 0.25}, got["v0"])
}
