package frames

import (
	"math"
	"testing"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/data"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/inferscope/inferscope-llm-datasource/pkg/analysis/latency"
)

func TestHeatmapRowsFrame(t *testing.T) {
	at := []time.Time{time.Unix(60, 0), time.Unix(75, 0)}
	fr := HeatmapRows([]string{"ttft"}, []latency.Heatmap{{
		Bounds: []float64{0.1, 2.5, math.Inf(1)},
		Rates:  [][]float64{{1, 3}, {2, math.NaN()}, {1, 0}},
		Steps:  at,
	}}, Meta{Queries: []string{"q"}})
	require.Len(t, fr, 1)
	f := fr[0]
	assert.Equal(t, FrameTypeHeatmapRows, f.Meta.Type)
	assert.Equal(t, "ttft", f.Name)
	require.Len(t, f.Fields, 4)
	assert.Equal(t, []string{"time", "0.1", "2.5", "+Inf"}, []string{f.Fields[0].Name, f.Fields[1].Name, f.Fields[2].Name, f.Fields[3].Name})
	assert.Equal(t, "reqps", f.Fields[1].Config.Unit)
	assert.Equal(t, data.Labels{"le": "+Inf"}, f.Fields[3].Labels)
	v, ok := f.Fields[2].ConcreteAt(1)
	assert.False(t, ok, "NaN is a null, got %v", v)
	v, ok = f.Fields[1].ConcreteAt(1)
	assert.True(t, ok)
	assert.Equal(t, 3.0, v)
}
