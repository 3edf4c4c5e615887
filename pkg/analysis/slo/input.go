package slo

import (
	"maps"
	"math"
	"slices"
	"time"

	"github.com/prometheus/common/model"

	"github.com/inferscope/inferscope-llm-datasource/pkg/analysis"
	"github.com/inferscope/inferscope-llm-datasource/pkg/hist"
)

// Group is one group of a result (labels target/model/engine after
// analysis.GroupLabels renaming; empty for groupBy none).
type Group struct {
	Key    string
	Labels map[string]string
}

// BucketVector groups an instant result of `sum by (le, …) (rate(x_bucket[w]))`
// by its labels other than le: per group, the buckets (bounds parsed with
// hist.ParseLe, so le="2" and le="2.0" are one bound; rates of equal bounds
// add). Groups are returned sorted by key. bad counts samples whose le is
// not a number (ignored).
func BucketVector(v model.Vector) (groups []Group, buckets map[string][]hist.Bucket, bad int) {
	buckets = map[string][]hist.Bucket{}
	labels := map[string]map[string]string{}
	for _, s := range v {
		le, err := hist.ParseLe(string(s.Metric[model.BucketLabel]))
		if err != nil {
			bad++
			continue
		}
		key, l := analysis.Key(s.Metric, model.BucketLabel)
		labels[key] = l
		buckets[key] = append(buckets[key], hist.Bucket{UpperBound: le, Count: float64(s.Value)})
	}
	for _, k := range slices.Sorted(maps.Keys(labels)) {
		groups = append(groups, Group{Key: k, Labels: labels[k]})
	}
	return groups, buckets, bad
}

// ReasonVector groups an instant result of finished-request rates
// `sum by (finished_reason, …) (rate(…[w]))` into error Counts per group:
// bad = reasons "abort" and "error", total = every reason. Series without
// a finish reason (engines that do not report one) are left out, never
// counted as good; noReason says how many there were.
func ReasonVector(v model.Vector) (groups []Group, counts map[string]Counts, noReason int) {
	bad, total := map[string]float64{}, map[string]float64{}
	labels := map[string]map[string]string{}
	for _, s := range v {
		if s.Metric["finished_reason"] == "" {
			noReason++
			continue
		}
		key, l := analysis.Key(s.Metric, "finished_reason")
		labels[key] = l
		val := float64(s.Value)
		if math.IsNaN(val) {
			continue
		}
		total[key] += val
		if IsErrorReason(string(s.Metric["finished_reason"])) {
			bad[key] += val
		}
	}
	counts = map[string]Counts{}
	for _, k := range slices.Sorted(maps.Keys(labels)) {
		groups = append(groups, Group{Key: k, Labels: labels[k]})
		counts[k] = ErrorCounts(bad[k], total[k])
	}
	return groups, counts, noReason
}

// IsErrorReason reports whether a finish reason counts against an
// error-ratio objective: vLLM's "abort" (client or engine abort) and
// "error" (engine error, vLLM ≥ 0.10).
func IsErrorReason(r string) bool { return r == "abort" || r == "error" }

// LatencyHistory builds one History per group from a range result of
// bucket rates over windows of resolution at steps of resolution
// (`sum by (le, …) (rate(x_bucket[R]))` evaluated every R), for a latency
// threshold in seconds. Counts are rates × R (requests per step). Also
// returns, per group, one bucket layout seen (for Locate). Steps are the
// evaluation instants.
func LatencyHistory(m model.Matrix, steps []time.Time, resolution time.Duration, threshold float64) ([]Group, map[string]History, map[string][]hist.Bucket) {
	at := analysis.NewStepIndex(steps)
	// One pass to count each group's bucket series, so that a group's buckets at a step get
	// their room once, carved from slabs (appending per step and point was most of this
	// function's time and of a diagnosis query's allocation); steps without a point get none.
	type bucketSeries struct {
		s   *model.SampleStream
		le  float64
		key string
	}
	series := make([]bucketSeries, 0, len(m))
	width := map[string]int{}
	labels := map[string]map[string]string{}
	for _, s := range m {
		le, err := hist.ParseLe(string(s.Metric[model.BucketLabel]))
		if err != nil {
			continue
		}
		key, l := analysis.Key(s.Metric, model.BucketLabel)
		if _, ok := labels[key]; !ok {
			labels[key] = l
		}
		width[key]++
		series = append(series, bucketSeries{s: s, le: le, key: key})
	}
	const slabSteps = 64
	per := make(map[string][][]hist.Bucket, len(width))
	slabs := make(map[string][]hist.Bucket, len(width))
	for _, bs := range series {
		b, ok := per[bs.key]
		if !ok {
			b = make([][]hist.Bucket, len(steps))
			per[bs.key] = b
		}
		n := width[bs.key]
		at.Walk(bs.s.Values, func(i int, v model.SampleValue) {
			if b[i] == nil {
				slab := slabs[bs.key]
				if len(slab) < n {
					slab = make([]hist.Bucket, slabSteps*n)
				}
				b[i], slabs[bs.key] = slab[:0:n], slab[n:]
			}
			b[i] = append(b[i], hist.Bucket{UpperBound: bs.le, Count: float64(v)})
		})
	}
	sec := resolution.Seconds()
	hs := map[string]History{}
	layouts := map[string][]hist.Bucket{}
	var groups []Group
	for _, k := range slices.Sorted(maps.Keys(labels)) {
		groups = append(groups, Group{Key: k, Labels: labels[k]})
		h := History{Times: steps, Resolution: resolution, Counts: make([]Counts, len(steps))}
		for i, b := range per[k] {
			if len(b) == 0 {
				continue
			}
			if layouts[k] == nil {
				layouts[k] = b
			}
			c := LatencyCounts(threshold, b)
			h.Counts[i] = Counts{Good: c.Good * sec, GoodLower: c.GoodLower * sec, GoodUpper: c.GoodUpper * sec, Total: c.Total * sec}
		}
		hs[k] = h
	}
	return groups, hs, layouts
}
