package analysis

import (
	"testing"
	"time"

	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/require"
)

// TestStepIndexAnswersAsTheMap checks Walk against the map from each step's milliseconds to
// its index, for ascending steps, steps given out of order or twice, samples off the grid,
// samples out of order and repeated.
func TestStepIndexAnswersAsTheMap(t *testing.T) {
	at := func(s int64) time.Time { return time.UnixMilli(s * 1000) }
	grids := map[string][]time.Time{
		"ascending": {at(0), at(15), at(30), at(45), at(60)},
		"unordered": {at(30), at(0), at(15)},
		"twice":     {at(0), at(15), at(15), at(30)},
		"empty":     nil,
	}
	samples := []model.SamplePair{
		{Timestamp: 0, Value: 1}, {Timestamp: 15000, Value: 2}, {Timestamp: 20000, Value: 9},
		{Timestamp: 45000, Value: 3}, {Timestamp: 15000, Value: 4}, {Timestamp: 15000, Value: 5},
		{Timestamp: 60000, Value: 6}, {Timestamp: 75000, Value: 7}, {Timestamp: -15000, Value: 8},
		{Timestamp: 30000, Value: 10},
	}
	for name, steps := range grids {
		want := map[int64]int{}
		for i, s := range steps {
			want[s.UnixMilli()] = i
		}
		type hit struct {
			i int
			v model.SampleValue
		}
		var exp, got []hit
		for _, p := range samples {
			if i, ok := want[int64(p.Timestamp)]; ok {
				exp = append(exp, hit{i, p.Value})
			}
		}
		NewStepIndex(steps).Walk(samples, func(i int, v model.SampleValue) { got = append(got, hit{i, v}) })
		require.Equal(t, exp, got, name)
	}
}
