package slo

import (
	"maps"
	"math"
	"slices"
	"time"

	"github.com/prometheus/common/model"

	"github.com/inferscope/inferscope-llm-datasource/pkg/analysis"
)

// Availability objectives are time-based: Counts hold seconds, Total the
// time whose state is known (a scrape was attempted: `up` has a sample) and
// Good the time the target answered its scrape and was serving (not
// stalled: no request pending without progress, catalog.ServingPromQL). A
// target that is down has up = 0 and spends budget for every second of it;
// it never reads as "no traffic". Time with no sample at all (the collector
// itself not running) is unknown and left out.

// AvailabilityVector turns two instant results of one window, per target
// (job) and output labels, into Counts per output group (groupBy as in
// LayeredVector): good = `sum_over_time(serving[w:res])` (samples serving,
// each 0 or 1) and known = `count_over_time(serving[w:res])` (samples with
// a state); each sample stands for res of time.
func AvailabilityVector(good, known model.Vector, res time.Duration, groupBy []string) ([]Group, map[string]Counts) {
	sec := res.Seconds()
	g := map[string]float64{}
	for _, s := range good {
		k, _ := analysis.Key(s.Metric)
		if v := float64(s.Value); !math.IsNaN(v) && v > 0 {
			g[k] += v
		}
	}
	out := map[string]Counts{}
	labels := map[string]map[string]string{}
	for _, s := range known {
		k, l := analysis.Key(s.Metric)
		n := float64(s.Value)
		if math.IsNaN(n) || n <= 0 {
			continue
		}
		good := math.Min(g[k], n)
		pl := project(l, groupBy)
		gk := analysis.LabelsKey(pl)
		labels[gk] = pl
		out[gk] = out[gk].Add(Counts{Good: good * sec, GoodLower: good * sec, GoodUpper: good * sec, Total: n * sec})
	}
	var groups []Group
	for _, k := range slices.Sorted(maps.Keys(labels)) {
		groups = append(groups, Group{Key: k, Labels: labels[k]})
	}
	return groups, out
}

// AvailabilityHistory builds one History per output group from a range
// result of the serving state (0 or 1 per target, catalog.ServingPromQL)
// evaluated at steps of resolution: each step with a sample adds
// resolution seconds of known time, good when the value is 1. Targets of
// one group add.
func AvailabilityHistory(m model.Matrix, steps []time.Time, resolution time.Duration, groupBy []string) ([]Group, map[string]History) {
	x := analysis.NewStepIndex(steps)
	sec := resolution.Seconds()
	hs := map[string]History{}
	labels := map[string]map[string]string{}
	for _, s := range m {
		_, l := analysis.Key(s.Metric)
		pl := project(l, groupBy)
		gk := analysis.LabelsKey(pl)
		h, ok := hs[gk]
		if !ok {
			h = History{Times: steps, Resolution: resolution, Counts: make([]Counts, len(steps))}
			labels[gk] = pl
		}
		x.Walk(s.Values, func(i int, pv model.SampleValue) {
			v := float64(pv)
			if math.IsNaN(v) {
				return
			}
			g := 0.0
			if v >= 1 {
				g = sec
			}
			h.Counts[i] = h.Counts[i].Add(Counts{Good: g, GoodLower: g, GoodUpper: g, Total: sec})
		})
		hs[gk] = h
	}
	var groups []Group
	for _, k := range slices.Sorted(maps.Keys(labels)) {
		groups = append(groups, Group{Key: k, Labels: labels[k]})
	}
	return groups, hs
}
