package frames

import (
	"github.com/grafana/grafana-plugin-sdk-go/data"
)

// TelemetryRow is one signal of one target checked against its latest
// scrape (see catalog.MissingNow): Missing is 1 when the target exported the
// signal in the queried range and its latest scrape no longer carries it,
// else 0.
type TelemetryRow struct {
	Target  string
	Signal  string
	Missing float64
}

// Telemetry is a numeric-multi response for alert rules: one frame per
// target and signal, one number field "missing" labelled target and signal
// (1 missing, 0 present). Label sets are unique when the rows are. Without
// rows one empty frame carries the notices.
func Telemetry(rows []TelemetryRow, m Meta) data.Frames {
	labels := make([]data.Labels, len(rows))
	values := make([]float64, len(rows))
	for k, r := range rows {
		labels[k] = data.Labels{"target": r.Target, "signal": r.Signal}
		values[k] = r.Missing
	}
	return numericMulti("telemetry", "missing", labels, values, m)
}
