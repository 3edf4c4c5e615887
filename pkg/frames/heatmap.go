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

// HeatmapRows is a latency heatmap as Grafana's "heatmap-rows" frame, which
// the heatmap panel draws without calculating (cell layout "le"): a time
// field, then one number field per bucket named by its upper bound in
// seconds as Prometheus writes le ("0.1", "+Inf"), labelled le, valued in
// requests per second (unit reqps), NaN as null. name is the frame name (the
// stage). Without buckets one frame with only the time field carries the
// notices.
func HeatmapRows(name string, h latency.Heatmap, m Meta) data.Frames {
	times := append([]time.Time{}, h.Steps...)
	f := data.NewFrame(name, data.NewField("time", nil, times))
	for i, le := range h.Bounds {
		bound := strconv.FormatFloat(le, 'g', -1, 64)
		if math.IsInf(le, 1) {
			bound = "+Inf"
		}
		vals := make([]*float64, len(times))
		for k := range times {
			if v := h.Rates[i][k]; !math.IsNaN(v) && !math.IsInf(v, 0) {
				vals[k] = &v
			}
		}
		fld := data.NewField(bound, data.Labels{"le": bound}, vals)
		fld.Config = &data.FieldConfig{Unit: "reqps", DisplayNameFromDS: bound}
		f.Fields = append(f.Fields, fld)
	}
	f.Meta = m.frameMeta(FrameTypeHeatmapRows)
	f.Meta.Notices = notices(m.Notices)
	return data.Frames{f}
}
