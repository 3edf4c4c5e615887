package fetch

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"math"
	"slices"
	"time"

	"github.com/prometheus/common/model"

	"github.com/inferscope/inferscope-llm-datasource/pkg/analysis"
	"github.com/inferscope/inferscope-llm-datasource/pkg/analysis/sanity"
	"github.com/inferscope/inferscope-llm-datasource/pkg/catalog"
	"github.com/inferscope/inferscope-llm-datasource/pkg/hist"
)

// HistogramQueries returns the PromQL for a latency stage over the query's
// targets. Each target reads the metrics its detection provides for the
// stage (catalog.Assess: e.g. vLLM V0 TPOT from the per-step histogram),
// narrowed to the names stored for it in the queried range, so a target
// renamed inside the range reads both names (joined with `or`) and a
// homogeneous fleet gets one query without `or` branches for names it does
// not have. Targets sharing a metric list share a query; targets whose
// engine is unknown use the catalogue's query over every engine. Every
// target is in exactly one partition, so the partitions' series add up per
// group.
//
// extraBy adds canonical groups (e.g. "target") to the query's own.
func (r *Run) HistogramQueries(ctx context.Context, stage catalog.Signal, window time.Duration, extraBy ...string) ([]catalog.HistogramQueries, error) {
	hqs, _, err := r.histogramParts(ctx, stage, window, false, extraBy...)
	return hqs, err
}

// histogramParts is HistogramQueries that also returns, for each query, the targets it reads;
// with finite, the queries leave non-finite rates out (catalog.Scope.Finite).
func (r *Run) histogramParts(ctx context.Context, stage catalog.Signal, window time.Duration, finite bool, extraBy ...string) ([]catalog.HistogramQueries, [][]string, error) {

	type part struct {
		metrics []catalog.Metric
		targets []string
	}
	var parts []part
	var rest []string
	for _, v := range r.Views(ctx) {
		if !v.OK {
			if len(v.Names) > 0 {
				rest = append(rest, v.Name)
			}
			continue
		}
		a := v.Assess(stage)
		if !a.Exported() {
			continue // absent or not seen, not zero: ScopeNotices says so
		}
		var metrics []catalog.Metric
		for _, m := range a.Metrics {
			if m.Kind == catalog.KindHistogram && m.Scale == 1 {
				metrics = append(metrics, m)
			}
		}
		if len(metrics) == 0 {
			continue
		}
		placed := false
		for k := range parts {
			if sameMetrics(parts[k].metrics, metrics) {
				parts[k].targets = append(parts[k].targets, v.Name)
				placed = true
				break
			}
		}
		if !placed {
			parts = append(parts, part{metrics: metrics, targets: []string{v.Name}})
		}
	}
	var out []catalog.HistogramQueries
	var targets [][]string
	if len(rest) > 0 {
		sc := r.Plan.Scope
		sc.By = append(slices.Clone(sc.By), extraBy...)
		sc.Targets = rest
		sc.Finite = finite
		hq, err := catalog.HistogramPromQL(stage, sc, window)
		if err != nil {
			return nil, nil, err
		}
		out = append(out, hq)
		targets = append(targets, rest)
	}
	for _, pt := range parts {
		sc := r.Plan.Scope
		sc.By = append(slices.Clone(sc.By), extraBy...)
		sc.Targets = pt.targets
		sc.Finite = finite
		hq, err := catalog.HistogramPromQLFor(pt.metrics, sc, window)
		if err != nil {
			return nil, nil, err
		}
		out = append(out, hq)
		targets = append(targets, pt.targets)
	}
	return out, targets, nil
}

func sameMetrics(a, b []catalog.Metric) bool {
	if len(a) != len(b) {
		return false
	}
	for k := range a {
		if a[k].Name != b[k].Name || a[k].Scale != b[k].Scale || a[k].Match != b[k].Match {
			return false
		}
	}
	return true
}

// histFetch holds one histogram query's results (catalog.HistogramQueries): bucket
// increases, _count resets, bucket rates (only where a reset asks for them), _sum and _count
// rates and increases.
type histFetch struct {
	inc, resets, rates, sum, count, sumInc, cntInc model.Matrix
}

// fetchHistograms runs every query of each HistogramQueries.
//
// The six reads of every part go out as one batch (Run.Ranges): over the embedded TSDB the
// one-pass evaluator (source.QueryRanges) selects the stage's bucket, _sum and _count series
// once for the range and computes their delta, rate and resets per step in Go, with the
// engine's arithmetic, so the matrices are those the engine returns for the same PromQL (the
// PromQL recorded for the frames' executed query); in remote mode they are the same queries,
// sent at most parallelReads at a time.
func (r *Run) fetchHistograms(ctx context.Context, hqs []catalog.HistogramQueries) ([]histFetch, error) {
	out := make([]histFetch, len(hqs))
	type read struct {
		q   string
		dst *model.Matrix
	}
	batch := func(reads []read) error {
		qs := make([]string, len(reads))
		for k, rd := range reads {
			qs[k] = rd.q
		}
		ms, err := r.Ranges(ctx, qs)
		if err != nil {
			return err
		}
		for k, rd := range reads {
			*rd.dst = ms[k]
		}
		return nil
	}
	var reads []read
	for j, hq := range hqs {
		f := &out[j]
		reads = append(reads, read{hq.Increases, &f.inc}, read{hq.Resets, &f.resets}, read{hq.Sum, &f.sum},
			read{hq.Count, &f.count}, read{hq.SumIncrease, &f.sumInc}, read{hq.CountIncrease, &f.cntInc})
	}
	if err := batch(reads); err != nil {
		return nil, err
	}
	// Compute falls back to rate()'s buckets in windows holding a counter reset.
	reads = reads[:0]
	for j, hq := range hqs {
		if anyAbove(out[j].resets, 0) {
			reads = append(reads, read{hq.Buckets, &out[j].rates})
		}
	}
	if err := batch(reads); err != nil {
		return nil, err
	}
	return out, nil
}

// parallelReads is how many reads of one part of a query go out at once: enough to overlap
// a remote server's round trips, few enough that one panel does not flood it.
const parallelReads = 6

// parallelReads runs fn(0..n-1), up to parallelReads at a time, and returns the first error
// in index order (a panic becomes an error, as in Parallel).
func (r *Run) parallelReads(n int, fn func(k int) error) error {
	if n <= 1 {
		if n == 1 {
			return fn(0)
		}
		return nil
	}
	return r.parallelN(n, parallelReads, fn)
}

// nonFiniteIn reports whether any fetched histogram result holds NaN or ±Inf.
func nonFiniteIn(fs []histFetch) bool {
	for _, f := range fs {
		for _, m := range []model.Matrix{f.inc, f.rates, f.sum, f.count, f.sumInc, f.cntInc} {
			if hasNonFinite(m) {
				return true
			}
		}
	}
	return false
}

// hasNonFinite reports whether any sample of m is NaN or ±Inf.
func hasNonFinite(m model.Matrix) bool {
	for _, s := range m {
		for _, p := range s.Values {
			if v := float64(p.Value); math.IsNaN(v) || math.IsInf(v, 0) {
				return true
			}
		}
	}
	return false
}

// decreaseIn reports whether fetched histogram results show a series that decreased: a
// _count reset, a negative bucket increase, or a bucket whose increase is below that of a
// lower bucket of the same group at the same step (cumulative buckets cannot do that).
func decreaseIn(fs []histFetch) bool {
	type point struct{ le, v float64 }
	type leSeries struct {
		le float64
		s  *model.SampleStream
	}
	var ts []model.Time
	var off []int
	var cells []point
	// unionTimes appends to dst the ascending timestamps, without repeats, of the series'
	// samples: the first series' own where every series has the same, ascending (the query
	// grid), else all of them sorted.
	unionTimes := func(dst []model.Time, series []leSeries) []model.Time {
		if len(series) == 0 {
			return dst
		}
		first := series[0].s.Values
		same := true
		for i := 1; i < len(first) && same; i++ {
			same = first[i].Timestamp > first[i-1].Timestamp
		}
		for _, x := range series[1:] {
			if !same {
				break
			}
			v := x.s.Values
			if len(v) != len(first) {
				same = false
				break
			}
			for i := range v {
				if v[i].Timestamp != first[i].Timestamp {
					same = false
					break
				}
			}
		}
		if same {
			for _, p := range first {
				dst = append(dst, p.Timestamp)
			}
			return dst
		}
		for _, x := range series {
			for _, p := range x.s.Values {
				dst = append(dst, p.Timestamp)
			}
		}
		slices.Sort(dst)
		return slices.Compact(dst)
	}
	for _, f := range fs {
		if anyAbove(f.resets, 0) {
			return true
		}
		// Each group's bucket series, in the results' order.
		groups := map[string][]leSeries{}
		var order []string
		for _, s := range f.inc {
			le, err := hist.ParseLe(string(s.Metric[model.BucketLabel]))
			if err != nil {
				continue
			}
			for _, p := range s.Values {
				if p.Value < 0 {
					return true
				}
			}
			k, _ := analysis.Key(s.Metric, model.BucketLabel)
			if _, ok := groups[k]; !ok {
				order = append(order, k)
			}
			groups[k] = append(groups[k], leSeries{le, s})
		}
		// Per group and timestamp, the points of its series at that time, laid out in one
		// array (offsets per timestamp), sorted by le and compared. Where the group's bounds
		// are distinct the series are laid out in le order, so every timestamp's points are
		// sorted already (one order only); otherwise in the results' order, sorted per
		// timestamp as before.
		for _, k := range order {
			series := groups[k]
			distinct := true
			byLe := slices.Clone(series)
			slices.SortStableFunc(byLe, func(a, b leSeries) int { return cmp.Compare(a.le, b.le) })
			for i := 1; i < len(byLe); i++ {
				if !(byLe[i].le > byLe[i-1].le) {
					distinct = false
				}
			}
			if distinct {
				series = byLe
			}
			ts = unionTimes(ts[:0], series)
			off = slices.Grow(off[:0], len(ts)+1)[:len(ts)+1]
			clear(off)
			at := func(j int, t model.Time) int {
				if j >= len(ts) || ts[j] != t {
					j, _ = slices.BinarySearch(ts, t)
				}
				return j
			}
			for _, x := range series {
				j := 0
				for _, p := range x.s.Values {
					j = at(j, p.Timestamp)
					off[j+1]++
					j++
				}
			}
			for i := range ts {
				off[i+1] += off[i]
			}
			cells = slices.Grow(cells[:0], off[len(ts)])[:off[len(ts)]]
			fill := slices.Clone(off[:len(ts)])
			for _, x := range series {
				j, prev := 0, -1
				for _, p := range x.s.Values {
					j = at(j, p.Timestamp)
					if j == prev {
						distinct = false // two points of one series at one time: sort as before
					}
					cells[fill[j]] = point{x.le, float64(p.Value)}
					fill[j]++
					prev = j
					j++
				}
			}
			if !distinct && len(byLe) > 0 && &series[0] == &byLe[0] {
				// Laid out in le order but not distinct after all: lay out again in the
				// results' order, as the sort per timestamp expects.
				series = groups[k]
				copy(fill, off[:len(ts)])
				for _, x := range series {
					j := 0
					for _, p := range x.s.Values {
						j = at(j, p.Timestamp)
						cells[fill[j]] = point{x.le, float64(p.Value)}
						fill[j]++
						j++
					}
				}
			}
			for i := range ts {
				ps := cells[off[i]:off[i+1]]
				if !distinct {
					slices.SortFunc(ps, func(a, b point) int { return cmp.Compare(a.le, b.le) })
				}
				for i := 1; i < len(ps); i++ {
					if ps[i].v < ps[i-1].v*(1-sanity.HistogramTolerance)-1e-9 {
						return true
					}
				}
			}
		}
	}
	return false
}

// anyAbove reports whether any sample of m is above v.
func anyAbove(m model.Matrix, v float64) bool {
	for _, s := range m {
		for _, p := range s.Values {
			if float64(p.Value) > v {
				return true
			}
		}
	}
	return false
}

// layoutSplit returns "job" when the targets in scope store the histogram of
// stage with different bucket layouts over the queried range (so a query not
// grouped by target must keep them apart, see latency.Input.SplitBy), and ""
// when they share one layout or the query is grouped by target. It reads
// each target's distinct le values of the stage's bucket series in the range
// (and one window before it) from the index, without reading samples.
func (r *Run) layoutSplit(ctx context.Context, stage catalog.Signal) (string, error) {
	if slices.Contains(r.Plan.Scope.By, "target") {
		return "", nil
	}
	if len(r.Views(ctx)) < 2 {
		return "", nil
	}
	names := map[string]bool{}
	var jobs []string
	for _, v := range r.Views(ctx) {
		jobs = append(jobs, v.Name)
		var ms []catalog.Metric
		if v.OK {
			ms = v.Assess(stage).Metrics
		} else {
			for _, e := range catalog.Engines {
				ms = append(ms, catalog.Lookup(e, stage).Metrics...)
			}
		}
		for _, m := range ms {
			if m.Kind == catalog.KindHistogram {
				names[m.Name+"_bucket"] = true
			}
		}
	}
	if len(names) == 0 {
		return "", nil
	}
	bucketNames := slices.Sorted(maps.Keys(names))
	bounds := map[string][]float64{}
	for _, job := range jobs {
		les, err := r.Env.labelValues(ctx, model.BucketLabel, catalog.BucketNamesSelector(bucketNames, job), r.Plan.Start.Add(-r.Plan.Window), r.Plan.End)
		if err != nil {
			return "", fmt.Errorf("bucket bounds of %s: %w", job, err)
		}
		for _, l := range les {
			if le, err := hist.ParseLe(l); err == nil {
				bounds[job] = append(bounds[job], le)
			}
		}
	}
	var first []float64
	for _, job := range slices.Sorted(maps.Keys(bounds)) {
		b := bounds[job]
		slices.Sort(b)
		b = slices.Compact(b)
		if first == nil {
			first = b
			continue
		}
		if !slices.Equal(first, b) {
			return "job", nil
		}
	}
	return "", nil
}

// withoutResets returns m without the samples of steps at which the series'
// group (its labels without le) had resets > 0 in the resets matrix.
func withoutResets(m, resets model.Matrix) model.Matrix {
	bad := map[string]map[model.Time]bool{}
	for _, s := range resets {
		k, _ := analysis.Key(s.Metric)
		for _, p := range s.Values {
			if p.Value > 0 {
				if bad[k] == nil {
					bad[k] = map[model.Time]bool{}
				}
				bad[k][p.Timestamp] = true
			}
		}
	}
	if len(bad) == 0 {
		return m
	}
	out := make(model.Matrix, 0, len(m))
	for _, s := range m {
		k, _ := analysis.Key(s.Metric, model.BucketLabel)
		b := bad[k]
		if b == nil {
			out = append(out, s)
			continue
		}
		kept := &model.SampleStream{Metric: s.Metric}
		for _, p := range s.Values {
			if !b[p.Timestamp] {
				kept.Values = append(kept.Values, p)
			}
		}
		out = append(out, kept)
	}
	return out
}
