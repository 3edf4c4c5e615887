package fetch

import (
	"testing"

	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/assert"
)

// TestDecreaseIn: the gate of the histograms-going-backwards scan, on hand-made increases.
func TestDecreaseIn(t *testing.T) {
	bucket := func(job, le string, vals ...float64) *model.SampleStream {
		s := &model.SampleStream{Metric: model.Metric{"job": model.LabelValue(job), "le": model.LabelValue(le)}}
		for k, v := range vals {
			s.Values = append(s.Values, model.SamplePair{Timestamp: model.Time(15000 * k), Value: model.SampleValue(v)})
		}
		return s
	}
	cases := []struct {
		name string
		f    histFetch
		want bool
	}{
		{"cumulative", histFetch{inc: model.Matrix{bucket("a", "+Inf", 10, 20), bucket("a", "0.5", 4, 8), bucket("a", "1", 6, 12)}}, false},
		// At the second step le=1 (5) is below le=0.5 (8): 5 < 8 × 0.99.
		{"a bucket below a lower one", histFetch{inc: model.Matrix{bucket("a", "+Inf", 10, 20), bucket("a", "0.5", 4, 8), bucket("a", "1", 6, 5)}}, true},
		// 7.95 ≥ 8 × 0.99 − 1e-9 = 7.92: within the tolerance.
		{"within the tolerance", histFetch{inc: model.Matrix{bucket("a", "0.5", 4, 8), bucket("a", "1", 6, 7.95)}}, false},
		{"groups are not compared", histFetch{inc: model.Matrix{bucket("a", "0.5", 8), bucket("b", "1", 5)}}, false},
		{"a negative increase", histFetch{inc: model.Matrix{bucket("a", "0.5", 1, -1)}}, true},
		{"a negative increase under an unreadable le is not read", histFetch{inc: model.Matrix{bucket("a", "x", -1)}}, false},
		{"a _count reset", histFetch{resets: model.Matrix{bucket("a", "", 0, 1)}}, true},
		// le="1" and le="1.0" are one bound: sorted by bound, 5 follows 8 (or 9), below 0.99 × it.
		{"two series of one bound, decreasing", histFetch{inc: model.Matrix{bucket("a", "0.5", 8), bucket("a", "1", 5), bucket("a", "1.0", 9)}}, true},
		{"two series of one bound, cumulative", histFetch{inc: model.Matrix{bucket("a", "0.5", 4), bucket("a", "1", 6), bucket("a", "1.0", 6)}}, false},
		// Two samples of one series at one time (4 and 8 under le=0.5): le=1's 6 is below 0.99 × 8.
		{"two samples at one time", histFetch{inc: model.Matrix{{Metric: model.Metric{"job": "a", "le": "0.5"},
			Values: []model.SamplePair{{Timestamp: 0, Value: 4}, {Timestamp: 0, Value: 8}}}, bucket("a", "1", 6)}}, true},
		// Steps are matched by time: the second series starts a step later.
		{"matched by time", histFetch{inc: model.Matrix{bucket("a", "0.5", 4, 8), {Metric: model.Metric{"job": "a", "le": "1"},
			Values: []model.SamplePair{{Timestamp: 15000, Value: 9}, {Timestamp: 30000, Value: 1}}}}}, false},
	}
	for _, c := range cases {
		assert.Equal(t, c.want, decreaseIn([]histFetch{c.f}), c.name)
	}
}
