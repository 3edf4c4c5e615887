package diagnose

import (
	"testing"

	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/assert"
)

// max_num_seqs gives the ceiling from its label; an engine gauge wins over
// it; labels that are not positive whole numbers are ignored.
func TestRunningCeilingsFromConfigInfo(t *testing.T) {
	series := func(job, seqs string, v float64) *model.SampleStream {
		m := model.Metric{"job": model.LabelValue(job)}
		if seqs != "" {
			m["max_num_seqs"] = model.LabelValue(seqs)
		}
		return &model.SampleStream{Metric: m, Values: []model.SamplePair{{Timestamp: 0, Value: model.SampleValue(v)}}}
	}
	info := model.Matrix{series("a", "128", 1), series("a", "256", 1), series("b", "x", 1), series("c", "-3", 1), series("d", "64", 1)}
	gauges := model.Matrix{series("d", "", 512)}
	got := runningCeilings(gauges, info)
	assert.Equal(t, 256.0, got["a"].value, "the highest configured value over the range")
	assert.Contains(t, got["a"].source, "max_num_seqs label of a config-info gauge")
	assert.NotContains(t, got, "b")
	assert.NotContains(t, got, "c")
	assert.Equal(t, 512.0, got["d"].value)
}
