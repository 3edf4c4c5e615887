package frames

import (
	"math"
	"testing"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/data"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/inferscope/inferscope-llm-datasource/pkg/analysis"
)

func TestTimeSeriesBandAndNulls(t *testing.T) {
	ts := []time.Time{time.Unix(0, 0), time.Unix(15, 0)}
	l := func(bound string) map[string]string {
		m := map[string]string{"target": "a", "stage": "ttft", "stat": "p99"}
		if bound != "" {
			m["bound"] = bound
		}
		return m
	}
	fr := TimeSeries([]analysis.Series{
		{Name: "ttft p99", Labels: l(""), Unit: "s", Times: ts, Values: []float64{0.4, math.NaN()}},
		{Name: "ttft p99 lower", Labels: l("lower"), Unit: "s", Times: ts, Values: []float64{0.25, math.NaN()}},
		{Name: "ttft p99 upper", Labels: l("upper"), Unit: "s", Times: ts, Values: []float64{0.5, math.NaN()}},
	}, Meta{Queries: []string{"q1"}, Notices: []analysis.Notice{{Severity: analysis.Warning, Text: "w"}}})
	require.Len(t, fr, 3)
	assert.Equal(t, data.FrameTypeTimeSeriesMulti, fr[0].Meta.Type)
	assert.Equal(t, "q1", fr[0].Meta.ExecutedQueryString)
	require.Len(t, fr[0].Meta.Notices, 1)
	assert.Equal(t, data.NoticeSeverityWarning, fr[0].Meta.Notices[0].Severity)
	// NaN (no data) is a null, never 0.
	v, ok := fr[0].Fields[1].ConcreteAt(1)
	assert.False(t, ok, "got %v", v)
	assert.Equal(t, "s", fr[0].Fields[1].Config.Unit)
	// The upper bound fills down to the lower bound's display name.
	lowerName := fr[1].Fields[1].Config.DisplayNameFromDS
	assert.Equal(t, "ttft p99 lower · target=a", lowerName)
	assert.Equal(t, lowerName, fr[2].Fields[1].Config.Custom["fillBelowTo"])
	assert.Nil(t, fr[0].Fields[1].Config.Custom)
}

func TestTimeSeriesEmptyStillCarriesNotices(t *testing.T) {
	fr := TimeSeries(nil, Meta{Queries: []string{"q"}, Notices: []analysis.Notice{{Severity: analysis.Info, Text: "target x does not export ttft"}}})
	require.Len(t, fr, 1)
	assert.Equal(t, "target x does not export ttft", fr[0].Meta.Notices[0].Text)
}
