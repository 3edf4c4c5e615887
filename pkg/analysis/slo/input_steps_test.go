package slo

import (
	"strconv"
	"testing"
	"time"

	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/require"
)

// Samples land on the step of their timestamp whatever the order of the steps and samples:
// off-grid samples are left out, a repeated step gets its last index, samples out of order
// are found. Hand-built: two buckets (le 1 and +Inf) of one group, rates 1/s and 2/s at a
// resolution of 10 s (10 and 20 requests per step), threshold 1 s (all good).
func TestLatencyHistoryStepLookup(t *testing.T) {
	t0 := time.Unix(1000, 0)
	at := func(s int) model.Time {
		return model.TimeFromUnixNano(t0.Add(time.Duration(s) * time.Second).UnixNano())
	}
	series := func(le string, v float64, secs ...int) *model.SampleStream {
		s := &model.SampleStream{Metric: model.Metric{"le": model.LabelValue(le), "job": "a"}}
		for _, x := range secs {
			s.Values = append(s.Values, model.SamplePair{Timestamp: at(x), Value: model.SampleValue(v)})
		}
		return s
	}
	// le 1: at 0, 5 (off grid), 20, then 10 (out of order); +Inf at 0, 10, 20.
	m := model.Matrix{series("1", 1, 0, 5, 20, 10), series("+Inf", 2, 0, 10, 20)}
	for name, steps := range map[string][]time.Time{
		"ascending": {t0, t0.Add(10 * time.Second), t0.Add(20 * time.Second)},
		"unordered": {t0.Add(20 * time.Second), t0, t0.Add(10 * time.Second)},
	} {
		groups, hs, _ := LatencyHistory(m, steps, 10*time.Second, 1)
		require.Len(t, groups, 1, name)
		h := hs[groups[0].Key]
		require.Len(t, h.Counts, 3, name)
		for i := range steps {
			require.InDelta(t, 20, h.Counts[i].Total, 1e-9, "%s step %d", name, i)
			require.InDelta(t, 10, h.Counts[i].Good, 1e-9, "%s step %d", name, i)
		}
	}
}

// BenchmarkLatencyHistory is a diagnosis objective's read at the overview's size: 10 targets
// × 20 buckets × 6 h at 15 s.
func BenchmarkLatencyHistory(b *testing.B) {
	t0 := time.Unix(1_700_000_000, 0)
	steps := make([]time.Time, 6*240)
	for i := range steps {
		steps[i] = t0.Add(time.Duration(i) * 15 * time.Second)
	}
	var m model.Matrix
	for j := 0; j < 10; j++ {
		for k := 0; k < 20; k++ {
			le := "+Inf"
			if k < 19 {
				le = strconv.FormatFloat(0.01*float64(int(1)<<k), 'g', -1, 64)
			}
			s := &model.SampleStream{Metric: model.Metric{"le": model.LabelValue(le), "job": model.LabelValue("vllm-" + strconv.Itoa(j))}}
			for i, t := range steps {
				s.Values = append(s.Values, model.SamplePair{Timestamp: model.TimeFromUnixNano(t.UnixNano()), Value: model.SampleValue(float64(k*i%97) + float64(k))})
			}
			m = append(m, s)
		}
	}
	for b.Loop() {
		LatencyHistory(m, steps, 15*time.Second, 0.5)
	}
}

// BenchmarkLatencyHistorySparse: hourly points (an SLO period's resolution) on a grid of
// 30 d at 1 m, 10 targets × 20 buckets.
func BenchmarkLatencyHistorySparse(b *testing.B) {
	t0 := time.Unix(1_700_000_000, 0)
	steps := make([]time.Time, 30*24*60)
	for i := range steps {
		steps[i] = t0.Add(time.Duration(i) * time.Minute)
	}
	var m model.Matrix
	for j := 0; j < 10; j++ {
		for k := 0; k < 20; k++ {
			le := "+Inf"
			if k < 19 {
				le = strconv.FormatFloat(0.01*float64(int(1)<<k), 'g', -1, 64)
			}
			s := &model.SampleStream{Metric: model.Metric{"le": model.LabelValue(le), "job": model.LabelValue("vllm-" + strconv.Itoa(j))}}
			for i := 0; i < len(steps); i += 60 {
				s.Values = append(s.Values, model.SamplePair{Timestamp: model.TimeFromUnixNano(steps[i].UnixNano()), Value: model.SampleValue(float64(k*i%97) + float64(k))})
			}
			m = append(m, s)
		}
	}
	for b.Loop() {
		LatencyHistory(m, steps, time.Hour, 0.5)
	}
}
