package slo

import (
	"maps"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/prometheus/common/model"

	"github.com/inferscope/inferscope-llm-datasource/pkg/analysis"
	"github.com/inferscope/inferscope-llm-datasource/pkg/hist"
)

// Layered is one output group's buckets of one window, kept per bucket
// layout (one part per stored label set other than le, in practice per
// target): Parts[k] are cumulative counts or rates of one histogram.
type Layered struct {
	Group Group
	Parts [][]hist.Bucket
}

// Counts returns the group's counts for a latency threshold in seconds:
// LatencyCounts of each part, added. Good and total counts are additive, so
// the result is exact whatever the parts' layouts; summing the buckets
// first (`sum by (le)` across targets with different bounds) is not: a bound
// one layout lacks counts none of that layout's requests below it, which
// turns a fleet whose requests are all under 2 s into attainment 0.5.
func (l Layered) Counts(threshold float64) Counts {
	var c Counts
	for _, p := range l.Parts {
		c = c.Add(LatencyCounts(threshold, p))
	}
	return c
}

// Locate returns where the threshold sits in the group's layouts: Exact
// only when it is a bound of every part with requests; otherwise the
// neighbouring bounds of the first part where it is not.
func (l Layered) Locate(threshold float64) Threshold {
	first := Threshold{Value: threshold, Exact: true}
	for _, p := range l.Parts {
		t := Locate(threshold, p)
		if !t.Exact {
			return t
		}
	}
	return first
}

// Quantile returns the q-quantile of the group's observations with its
// bucket bounds: hist.QuantilesMerged (the prometheus estimator), exact on
// one layout, bracketed across several.
func (l Layered) Quantile(q float64) hist.Estimate {
	nan := math.NaN()
	r := hist.QuantilesMerged(hist.EstimatorPrometheus, []float64{q}, l.Parts, nan, nan)
	if len(r.Estimates) == 0 {
		return hist.Estimate{Value: nan, Lower: nan, Upper: nan}
	}
	return r.Estimates[0]
}

// Layouts returns how many distinct bucket layouts the group's parts have.
func (l Layered) Layouts() int {
	var seen [][]float64
	for _, p := range l.Parts {
		nb := hist.Normalize(p)
		b := make([]float64, len(nb))
		for i, x := range nb {
			b[i] = x.UpperBound
		}
		if len(b) > 0 && !slices.ContainsFunc(seen, func(s []float64) bool { return slices.Equal(s, b) }) {
			seen = append(seen, b)
		}
	}
	return len(seen)
}

// project reduces a part's labels (analysis.Key names: target, model,
// engine, …) to the output group labels groupBy (user names, such as
// "model"); nil or empty groupBy gives the one empty group.
func project(labels map[string]string, groupBy []string) map[string]string {
	out := map[string]string{}
	for _, g := range groupBy {
		if v, ok := labels[g]; ok {
			out[g] = v
		}
	}
	return out
}

// groupOf is the output group of a part with labels: its labels projected on
// groupBy (project) and their key (analysis.LabelsKey).
func groupOf(labels map[string]string, groupBy []string) Group {
	l := project(labels, groupBy)
	return Group{Key: analysis.LabelsKey(l), Labels: l}
}

// LayeredVector splits an instant result of bucket rates summed by le, the
// target (job) and the output group labels (`sum by (le, job, model_name)
// (rate(x_bucket[w]))`) into one part per label set other than le, and
// gathers the parts by the output groups groupBy (user label names:
// "target", "model", "engine"; empty for one group). Groups are sorted by
// key; bad counts samples whose le is not a number.
func LayeredVector(v model.Vector, groupBy []string) ([]Layered, int) {
	groups, buckets, bad := BucketVector(v)
	return gather(groups, buckets, groupBy), bad
}

func gather(parts []Group, buckets map[string][]hist.Bucket, groupBy []string) []Layered {
	by := map[string]*Layered{}
	for _, p := range parts {
		og := groupOf(p.Labels, groupBy)
		g, ok := by[og.Key]
		if !ok {
			g = &Layered{Group: og}
			by[og.Key] = g
		}
		g.Parts = append(g.Parts, buckets[p.Key])
	}
	out := make([]Layered, 0, len(by))
	for _, k := range slices.Sorted(maps.Keys(by)) {
		out = append(out, *by[k])
	}
	return out
}

// LayeredHistory is LatencyHistory exact across bucket layouts: the range
// result m holds bucket rates by le, the target and the output group labels;
// each part (label set other than le) gets its own History for threshold,
// and the parts' counts are added step by step within each output group of
// groupBy. Also returns, per group, the parts' bucket layouts seen (for
// Locate).
func LayeredHistory(m model.Matrix, steps []time.Time, resolution time.Duration, threshold float64, groupBy []string) ([]Group, map[string]History, map[string]Layered) {
	parts, hs, layouts := LatencyHistory(m, steps, resolution, threshold)
	outH := map[string]History{}
	outL := map[string]Layered{}
	var groups []Group
	for _, p := range parts {
		g := groupOf(p.Labels, groupBy)
		k := g.Key
		h, ok := outH[k]
		if !ok {
			h = History{Times: steps, Resolution: resolution, Counts: make([]Counts, len(steps))}
			groups = append(groups, g)
		}
		for i, c := range hs[p.Key].Counts {
			h.Counts[i] = h.Counts[i].Add(c)
		}
		outH[k] = h
		ly := outL[k]
		ly.Group = g
		if b := layouts[p.Key]; b != nil {
			ly.Parts = append(ly.Parts, b)
		}
		outL[k] = ly
	}
	slices.SortFunc(groups, func(a, b Group) int { return strings.Compare(a.Key, b.Key) })
	return groups, outH, outL
}
