package analysis

import (
	"slices"
	"time"

	"github.com/prometheus/common/model"
)

// StepIndex finds the step a sample's timestamp falls on: the index i with
// steps[i].UnixMilli() equal to the timestamp, or none. It answers what a map
// from each step's milliseconds to its index answers (for steps given twice,
// the later index), without the map's hashing per sample: a query's steps
// ascend, and so do a series' samples, so the next sample is almost always on
// the step after the previous one (Walk tries that step first, then a binary
// search). Steps that do not ascend strictly fall back to the map. Walk keeps
// its cursor per call, so one index serves any number of series and goroutines.
type StepIndex struct {
	ms  []int64
	idx map[int64]int // only when the steps do not ascend strictly
}

// NewStepIndex indexes steps.
func NewStepIndex(steps []time.Time) *StepIndex {
	x := &StepIndex{ms: make([]int64, len(steps))}
	for i, t := range steps {
		x.ms[i] = t.UnixMilli()
		if i > 0 && x.ms[i] <= x.ms[i-1] && x.idx == nil {
			x.idx = map[int64]int{}
		}
	}
	if x.idx != nil {
		for i, ms := range x.ms {
			x.idx[ms] = i
		}
	}
	return x
}

// Walk calls fn with the step index and value of each sample of values that
// falls on a step, in the samples' order.
func (x *StepIndex) Walk(values []model.SamplePair, fn func(i int, v model.SampleValue)) {
	if x.idx != nil {
		for _, p := range values {
			if i, ok := x.idx[int64(p.Timestamp)]; ok {
				fn(i, p.Value)
			}
		}
		return
	}
	next := 0
	for _, p := range values {
		ts := int64(p.Timestamp)
		i := next
		if i >= len(x.ms) || x.ms[i] != ts {
			var found bool
			if i, found = slices.BinarySearch(x.ms, ts); !found {
				continue
			}
		}
		fn(i, p.Value)
		next = i + 1
	}
}
