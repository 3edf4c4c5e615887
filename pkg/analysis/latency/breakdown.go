package latency

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/prometheus/common/model"

	"github.com/inferscope/inferscope-llm-datasource/pkg/analysis"
	"github.com/inferscope/inferscope-llm-datasource/pkg/catalog"
	"github.com/inferscope/inferscope-llm-datasource/pkg/hist"
)

// BreakdownStages are the stages of the "where does the time go" view, in
// stacking order. Overhead is E2E − queue − inference: frontend time
// (tokenisation, IPC, detokenisation) in vLLM V1, 0 by identity in V0.
var BreakdownStages = []string{"queue", "prefill", "decode", "overhead"}

// BreakdownParts are the histograms every breakdown row needs, in the order
// notices name them.
var BreakdownParts = []catalog.Signal{catalog.QueueTime, catalog.PrefillTime, catalog.DecodeTime, catalog.InferenceTime, catalog.E2E}

// MeanInput is the windowed rate of a stage histogram's _sum and _count
// (grouped by the group labels) on the step grid, in the metric's unit;
// Scale converts it to seconds.
type MeanInput struct {
	Sum, Count model.Matrix
	Scale      float64
}

// BreakdownRow is the mean time per stage of one group over a window, in
// seconds. Overhead is E2E − Queue − Inference; Total equals the mean E2E.
type BreakdownRow struct {
	Labels                           map[string]string
	Queue, Prefill, Decode, Overhead float64
	Total                            float64
	// Requests is the number of requests finished in the window (rate × window).
	Requests float64
}

// Breakdown is BreakdownBy without a split label: every group is one
// population (a group missing a part yields NaN for the parts that need it).
func Breakdown(in map[catalog.Signal]MeanInput, steps []time.Time) []analysis.Series {
	return BreakdownBy(in, steps, "", nil)
}

// BreakdownBy computes mean stage times per group and step. Quantiles do not
// add, so the stacked view uses means: rate(_sum)/rate(_count) per stage over
// the same window, all observed when requests finish.
//
// Every part of a row must average the same requests: an overhead of
// E2E − queue − inference with E2E from two targets and inference from one
// is no one's overhead. So when split names a stored label (e.g. "job") that
// the series carry beyond the group labels, each group's parts are summed
// only over the split values (targets) that have all of BreakdownParts at
// that step (a series present, even with no requests); the others are left
// out of every part, and notes (when not nil) names them and what they lack.
// Without split, a group missing a part yields NaN for the parts needing it.
// Series are labelled stage ∈ BreakdownStages, in seconds.
func BreakdownBy(in map[catalog.Signal]MeanInput, steps []time.Time, split string, notes *analysis.Notices) []analysis.Series {
	sums, counts, groups, keys := alignBreakdown(in, steps, split)
	var out []analysis.Series
	for _, k := range keys {
		mean := map[catalog.Signal][]float64{}
		for _, sig := range BreakdownParts {
			mean[sig] = analysis.NaNs(len(steps))
		}
		left := map[string]*leftOut{}
		for i := range steps {
			tot := population(in, sums, counts, k, func(v []float64) float64 { return v[i] }, split != "", left)
			for _, sig := range BreakdownParts {
				if t, ok := tot[sig]; ok {
					mean[sig][i] = hist.Mean(t[0], t[1])
				}
			}
		}
		noteLeftOut(notes, groups[k], split, left, len(steps))
		overhead := make([]float64, len(steps))
		for i := range steps {
			overhead[i] = mean[catalog.E2E][i] - mean[catalog.QueueTime][i] - mean[catalog.InferenceTime][i]
		}
		for _, st := range []struct {
			name string
			v    []float64
		}{{"queue", mean[catalog.QueueTime]}, {"prefill", mean[catalog.PrefillTime]}, {"decode", mean[catalog.DecodeTime]}, {"overhead", overhead}} {
			l := map[string]string{"stage": st.name}
			for lk, lv := range groups[k] {
				l[lk] = lv
			}
			out = append(out, analysis.Series{Name: st.name, Labels: l, Unit: "s", Times: steps, Values: st.v})
		}
	}
	return out
}

// leftOut records why a split value was left out of a group's rows.
type leftOut struct {
	missing map[catalog.Signal]bool
	steps   int
}

// population sums, for group k at one step (at picks the step's value), each
// part's scaled _sum and _count over the split values that have every part;
// the result maps a part to {sum in seconds, count}. With requireAll false
// (no split) every part is summed over whatever it has.
func population(in map[catalog.Signal]MeanInput, sums, counts map[catalog.Signal]map[string]map[string][]float64, k string, at func([]float64) float64, requireAll bool, left map[string]*leftOut) map[catalog.Signal][2]float64 {
	parts := map[string]bool{}
	for _, sig := range BreakdownParts {
		for p := range counts[sig][k] {
			parts[p] = true
		}
	}
	tot := map[catalog.Signal][2]float64{}
	for _, p := range slices.Sorted(maps.Keys(parts)) {
		var missing []catalog.Signal
		present := 0
		for _, sig := range BreakdownParts {
			c, s := counts[sig][k][p], sums[sig][k][p]
			if c == nil || s == nil || !isFinite(at(c)) || !isFinite(at(s)) {
				missing = append(missing, sig)
				continue
			}
			present++
		}
		if present == 0 {
			continue // this target has no series of the stage at this step
		}
		if requireAll && len(missing) > 0 {
			lo := left[p]
			if lo == nil {
				lo = &leftOut{missing: map[catalog.Signal]bool{}}
				left[p] = lo
			}
			lo.steps++
			for _, m := range missing {
				lo.missing[m] = true
			}
			continue
		}
		for _, sig := range BreakdownParts {
			c, s := counts[sig][k][p], sums[sig][k][p]
			if c == nil || s == nil || !isFinite(at(c)) || !isFinite(at(s)) {
				continue
			}
			scale := in[sig].Scale
			if scale == 0 {
				scale = 1
			}
			t := tot[sig]
			t[0] += at(s) * scale
			t[1] += at(c)
			tot[sig] = t
		}
	}
	return tot
}

func noteLeftOut(notes *analysis.Notices, gl map[string]string, split string, left map[string]*leftOut, steps int) {
	if notes == nil || len(left) == 0 {
		return
	}
	by := split
	if n, ok := analysis.GroupLabels[by]; ok {
		by = n
	}
	for _, p := range slices.Sorted(maps.Keys(left)) {
		lo := left[p]
		var miss []string
		for _, sig := range BreakdownParts {
			if lo.missing[sig] {
				miss = append(miss, string(sig))
			}
		}
		when := fmt.Sprintf(" in %d of %d steps", lo.steps, steps)
		if steps == 1 {
			when = ""
		}
		notes.Add(analysis.Warning, fmt.Sprintf("breakdown%s: %s %s is left out of every stage%s because it has no %s; each stage averages the same requests of the %ss that have all of %s",
			describe(gl), by, p, when, strings.Join(miss, ", "), by, joinSignals(BreakdownParts)))
	}
}

func joinSignals(s []catalog.Signal) string {
	out := make([]string, len(s))
	for i, x := range s {
		out[i] = string(x)
	}
	return strings.Join(out, ", ")
}

// BreakdownTable is BreakdownTableBy without a split label.
func BreakdownTable(in map[catalog.Signal]InstantMean, window time.Duration) []BreakdownRow {
	return BreakdownTableBy(in, window, "", nil)
}

// BreakdownTableBy computes one BreakdownRow per group from instant results
// (rate over the whole range) of each stage's _sum and _count, with the same
// population rule as BreakdownBy. window is the range length, used to turn
// the E2E count rate of the included targets into a number of requests.
func BreakdownTableBy(in map[catalog.Signal]InstantMean, window time.Duration, split string, notes *analysis.Notices) []BreakdownRow {
	// One step: an instant vector is a matrix with one sample per series.
	ts := model.Time(0)
	steps := []time.Time{ts.Time()}
	asMatrix := func(v model.Vector) model.Matrix {
		m := make(model.Matrix, 0, len(v))
		for _, s := range v {
			m = append(m, &model.SampleStream{Metric: s.Metric, Values: []model.SamplePair{{Timestamp: ts, Value: s.Value}}})
		}
		return m
	}
	mi := map[catalog.Signal]MeanInput{}
	for sig, im := range in {
		mi[sig] = MeanInput{Sum: asMatrix(im.Sum), Count: asMatrix(im.Count), Scale: im.Scale}
	}
	sums, counts, groups, keys := alignBreakdown(mi, steps, split)
	out := make([]BreakdownRow, 0, len(keys))
	for _, k := range keys {
		left := map[string]*leftOut{}
		tot := population(mi, sums, counts, k, func(v []float64) float64 { return v[0] }, split != "", left)
		noteLeftOut(notes, groups[k], split, left, 1)
		get := func(s catalog.Signal) float64 {
			if t, ok := tot[s]; ok {
				return hist.Mean(t[0], t[1])
			}
			return math.NaN()
		}
		r := BreakdownRow{Labels: groups[k], Queue: get(catalog.QueueTime), Prefill: get(catalog.PrefillTime),
			Decode: get(catalog.DecodeTime), Total: get(catalog.E2E)}
		if t, ok := tot[catalog.E2E]; ok {
			r.Requests = t[1] * window.Seconds()
		}
		r.Overhead = r.Total - r.Queue - get(catalog.InferenceTime)
		out = append(out, r)
	}
	return out
}

// InstantMean is an instant result of a stage's _sum and _count rates.
type InstantMean struct {
	Sum, Count model.Vector
	Scale      float64
}

// alignBreakdown places every part's _sum and _count on the step grid,
// split by the split label when it is set (see alignParts): per signal,
// group key → split value → values; the groups' labels; and the group keys
// sorted.
func alignBreakdown(in map[catalog.Signal]MeanInput, steps []time.Time, split string) (sums, counts map[catalog.Signal]map[string]map[string][]float64, groups map[string]map[string]string, keys []string) {
	sums = map[catalog.Signal]map[string]map[string][]float64{}
	counts = map[catalog.Signal]map[string]map[string][]float64{}
	groups = map[string]map[string]string{}
	var drop []string
	if split != "" {
		drop = []string{split}
	}
	for sig, mi := range in {
		sums[sig] = alignParts(mi.Sum, steps, split)
		counts[sig] = alignParts(mi.Count, steps, split)
		_, labels := analysis.Align(mi.Count, steps, drop...)
		for k, l := range labels {
			groups[k] = l
		}
	}
	return sums, counts, groups, slices.Sorted(maps.Keys(groups))
}

// isFinite reports whether a rate can enter a mean: NaN (no data, or a NaN sample at a window's
// edge) and ±Inf (an infinite sample) are left out of the breakdown's sums, as missing.
func isFinite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }
