package frames

import (
	"math"
	"strconv"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/data"

	"github.com/inferscope/inferscope-llm-datasource/pkg/analysis/latency"
)

// FrameTypeHeatmapRows is Grafana's "heatmap-rows" frame type
// (@grafana/data DataFrameType.HeatmapRows), which the plugin SDK does not
// name: a time field and one number field per bucket.
const FrameTypeHeatmapRows data.FrameType = "heatmap-rows"

// HeatmapRows is the latency query's heatmap format as Grafana's
// "heatmap-rows" frames, which the heatmap panel draws without calculating
// (cell layout "le"): one frame per stage (named by names[k]), a time field,
// then one number field per bucket named by its upper bound in seconds as
// Prometheus writes le ("0.1", "+Inf"), labelled le, valued in requests per
// second (unit reqps), NaN as null. The notices go on the first frame; a
// stage without buckets is a frame with only its time field.
func HeatmapRows(names []string, hs []latency.Heatmap, m Meta) data.Frames {
	return HeatmapRowsUnit(names, hs, "reqps", m)
}

// HeatmapRowsUnit is HeatmapRows with the unit of the bucket fields given (the tokens query's
// per-step histogram counts engine steps per second, not requests: unit "short").
func HeatmapRowsUnit(names []string, hs []latency.Heatmap, unit string, m Meta) data.Frames {
	units := make([]string, len(hs))
	for i := range units {
		units[i] = unit
	}
	return HeatmapRowsUnits(names, hs, units, m)
}

// HeatmapRowsUnits is HeatmapRows with one unit per frame (units[k] for hs[k]; the tokens
// query's prompt and generation lengths count requests/s, its tokens per step engine steps/s).
func HeatmapRowsUnits(names []string, hs []latency.Heatmap, units []string, m Meta) data.Frames {
	out := make(data.Frames, 0, len(hs))
	for k, h := range hs {
		times := append([]time.Time{}, h.Steps...)
		f := data.NewFrame(names[k], data.NewField("time", nil, times))
		for i, le := range h.Bounds {
			bound := strconv.FormatFloat(le, 'g', -1, 64)
			if math.IsInf(le, 1) {
				bound = "+Inf"
			}
			vals := make([]*float64, len(times))
			for j := range times {
				if v := h.Rates[i][j]; !math.IsNaN(v) && !math.IsInf(v, 0) {
					vals[j] = &v
				}
			}
			fld := data.NewField(bound, data.Labels{"le": bound}, vals)
			fld.Config = &data.FieldConfig{Unit: units[k], DisplayNameFromDS: bound}
			f.Fields = append(f.Fields, fld)
		}
		f.Meta = m.frameMeta(FrameTypeHeatmapRows)
		out = append(out, f)
	}
	if len(out) == 0 {
		f := data.NewFrame("", data.NewField("time", nil, []time.Time{}))
		f.Meta = m.frameMeta(FrameTypeHeatmapRows)
		out = append(out, f)
	}
	out[0].Meta.Notices = notices(m.Notices)
	return m.seal(out)
}
