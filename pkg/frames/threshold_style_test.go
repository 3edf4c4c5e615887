package frames

import (
	"testing"

	"github.com/grafana/grafana-plugin-sdk-go/data"
)

// TestObjectiveThresholdIsDashed: the objective threshold a latency series carries is drawn
// as Grafana's dashed line at the threshold, in red: the dashboards' titles say "dashed red",
// and a solid line ("line" mode, which the data source's field config imposed over the
// panels' dashed default) contradicted them (issue 33, review 33-8 D7).
func TestObjectiveThresholdIsDashed(t *testing.T) {
	v := data.NewField("value", nil, []float64{1})
	threshold(v, 3)
	st, _ := v.Config.Custom["thresholdsStyle"].(map[string]any)
	if st["mode"] != "dashed" {
		t.Errorf("thresholdsStyle %v, want mode dashed", st)
	}
	steps := v.Config.Thresholds.Steps
	if len(steps) != 2 || float64(steps[1].Value) != 3 || steps[1].Color != "red" {
		t.Errorf("threshold steps %+v, want red from 3", steps)
	}
}
