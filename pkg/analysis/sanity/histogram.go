package sanity

import (
	"cmp"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/prometheus/common/model"

	"github.com/inferscope/inferscope-llm-datasource/pkg/analysis"
	"github.com/inferscope/inferscope-llm-datasource/pkg/hist"
)

// HistogramTolerance is the relative difference below which a histogram's _count and +Inf
// bucket, or its mean and the bounds its buckets allow, are taken to agree. Rates of one
// histogram's series come from the same scrapes, so they agree to rounding; PromQL's rate()
// may extrapolate a young series' buckets a little differently, which stays well below 1 %.
const HistogramTolerance = 0.01

// HistogramFinding is one group's self-contradicting histogram: what disagrees, by how much
// (Off: a relative difference, or for a mean above its bucket bounds the ratio to the bound),
// the first step it was seen and on how many steps.
type HistogramFinding struct {
	Stage  string
	Labels map[string]string // group labels (target, model, …), as the latency series carry them
	Kind   string            // "count" (_count ≠ +Inf bucket), "mean-high", "mean-low", "lowest-bucket"
	// Detail says what disagrees at the first step, in words with the numbers.
	Detail string
	Off    float64
	At     time.Time
	Count  int
}

// Text renders the finding as a notice sentence.
func (f HistogramFinding) Text() string {
	var b strings.Builder
	b.WriteString(f.Stage)
	if len(f.Labels) > 0 {
		b.WriteString(" " + FormatLabels(f.Labels))
	}
	fmt.Fprintf(&b, ": histogram inconsistent at %s", f.At.UTC().Format("2006-01-02 15:04:05 UTC"))
	if f.Count > 1 {
		fmt.Fprintf(&b, " (%d steps)", f.Count)
	}
	b.WriteString(": " + f.Detail + "; quantiles are still computed from the buckets")
	return b.String()
}

// HistogramChecks compares, per group and step, the windowed rates of a histogram's buckets
// (cumulative, grouped by le and the group labels), _sum and _count (nil when not queried)
// with each other, and returns one finding per group and kind of contradiction:
//
//   - count: _count differs from the +Inf bucket (they are the same number by definition);
//   - mean-high / mean-low: the mean _sum/_count lies outside what the bucket counts allow,
//     Σ nᵢ·lowerᵢ / N ≤ mean ≤ Σ nᵢ·upperᵢ / N, with nᵢ the observations of bucket i, its
//     edges lowerᵢ < x ≤ upperᵢ, the lowest bucket starting at 0 (as histogram_quantile
//     assumes) and an upper bound of +Inf for the +Inf bucket;
//   - lowest-bucket: the special case of mean-high in which every observation is in the lowest
//     bucket while the mean lies above its bound (Off = mean / bound).
//
// Differences within HistogramTolerance are agreement. Steps without observations are
// skipped. The mean uses _count where given, else the +Inf bucket.
func HistogramChecks(stage string, buckets, sum, count model.Matrix, steps []time.Time) []HistogramFinding {
	var out []HistogramFinding
	for _, v := range JudgeHistogram(stage, buckets, sum, count, steps) {
		out = append(out, v.Findings...)
	}
	return out
}

// JudgeHistogram is HistogramChecks grouped into one Verdict per group (the group labels of the
// bucket series, le dropped) that has data, with the steps at which the histogram contradicts
// itself. Groups are sorted by their labels.
func JudgeHistogram(stage string, buckets, sum, count model.Matrix, steps []time.Time) Verdicts {
	x := analysis.NewStepIndex(steps)
	// Each group's bucket series, sorted by le once (stably: series of one bound keep their
	// order, as sorting each step's buckets would keep them), so each step's buckets are
	// laid out sorted in one array (offsets per step) instead of a slice per step.
	type leSeries struct {
		le float64
		s  *model.SampleStream
	}
	type group struct {
		labels map[string]string
		series []leSeries
	}
	groups := map[string]*group{}
	for _, s := range buckets {
		le, err := hist.ParseLe(string(s.Metric["le"]))
		if err != nil {
			continue
		}
		key, l := analysis.Key(s.Metric, "le")
		g := groups[key]
		if g == nil {
			g = &group{labels: l}
			groups[key] = g
		}
		if !math.IsNaN(le) { // hist.Normalize leaves NaN bounds out
			g.series = append(g.series, leSeries{le, s})
		}
	}
	sums, _ := analysis.Align(sum, steps)
	counts, _ := analysis.Align(count, steps)
	var out Verdicts
	var off []int
	var cells []hist.Bucket
	for _, key := range slices.Sorted(maps.Keys(groups)) {
		g := groups[key]
		slices.SortStableFunc(g.series, func(a, b leSeries) int { return cmp.Compare(a.le, b.le) })
		off = slices.Grow(off[:0], len(steps)+1)[:len(steps)+1]
		clear(off)
		for _, ls := range g.series {
			x.Walk(ls.s.Values, func(i int, _ model.SampleValue) { off[i+1]++ })
		}
		for i := range steps {
			off[i+1] += off[i]
		}
		cells = slices.Grow(cells[:0], off[len(steps)])[:off[len(steps)]]
		fill := slices.Clone(off[:len(steps)])
		for _, ls := range g.series {
			x.Walk(ls.s.Values, func(i int, val model.SampleValue) {
				cells[fill[i]] = hist.Bucket{UpperBound: ls.le, Count: float64(val)}
				fill[i]++
			})
		}
		groupSums, groupCounts := sums[key], counts[key]
		v := Verdict{Stage: stage, Labels: g.labels, Key: key, Bad: make([]bool, len(steps))}
		found := map[string]*HistogramFinding{}
		var order []string
		note := func(kind string, i int, off float64, detail string) {
			v.Bad[i] = true
			f := found[kind]
			if f == nil {
				f = &HistogramFinding{Stage: stage, Labels: g.labels, Kind: kind, Detail: detail, Off: off, At: steps[i].UTC()}
				found[kind] = f
				order = append(order, kind)
			}
			f.Count++
		}
		for i := range steps {
			nb := hist.NormalizeInPlace(cells[off[i]:off[i+1]])
			if len(nb) == 0 || !math.IsInf(nb[len(nb)-1].UpperBound, 1) {
				continue
			}
			inf := nb[len(nb)-1].Count
			n := inf
			if c := valueAt(groupCounts, i); !math.IsNaN(c) {
				if d := math.Abs(c - inf); d > HistogramTolerance*math.Max(c, inf) {
					off := d / math.Max(c, inf)
					note("count", i, off, fmt.Sprintf("_count is %s/s but the +Inf bucket %s/s (%.0f%% apart)", formatValue(c), formatValue(inf), 100*off))
				}
				n = c
			}
			sm := valueAt(groupSums, i)
			if !(n > 0) || !(inf > 0) || math.IsNaN(sm) {
				continue
			}
			mean := sm / n
			lo, hi := meanBounds(nb)
			switch {
			case mean > hi*(1+HistogramTolerance) && nb[0].Count >= inf*(1-HistogramTolerance) && nb[0].UpperBound > 0:
				note("lowest-bucket", i, mean/nb[0].UpperBound, fmt.Sprintf("every observation is in the lowest bucket (≤ %s) but the mean is %s, %.3g× that bound", formatValue(nb[0].UpperBound), formatValue(mean), mean/nb[0].UpperBound))
			case mean > hi*(1+HistogramTolerance):
				note("mean-high", i, mean/hi, fmt.Sprintf("the mean %s is above the most the bucket counts allow (%s), %.3g× it", formatValue(mean), formatValue(hi), mean/hi))
			case lo > 0 && mean < lo*(1-HistogramTolerance):
				note("mean-low", i, (lo-mean)/lo, fmt.Sprintf("the mean %s is below the least the bucket counts allow (%s), by %.0f%%", formatValue(mean), formatValue(lo), 100*(lo-mean)/lo))
			}
		}
		for _, k := range order {
			v.Findings = append(v.Findings, *found[k])
		}
		out = append(out, v)
	}
	return out
}

// valueAt is v's value at step i, NaN where the group has no such series (v nil).
func valueAt(v []float64, i int) float64 {
	if v != nil {
		return v[i]
	}
	return math.NaN()
}

// meanBounds returns the least and the most mean a normalised cumulative histogram allows:
// every observation at the lower (upper) edge of its bucket. The lowest bucket starts at 0
// when its bound is positive (at −Inf otherwise); the +Inf bucket's upper edge is +Inf, so hi
// is +Inf whenever that bucket holds observations.
func meanBounds(nb []hist.Bucket) (lo, hi float64) {
	total := nb[len(nb)-1].Count
	prevBound, prevCount := math.Inf(-1), 0.0
	if nb[0].UpperBound > 0 {
		prevBound = 0
	}
	var sLo, sHi float64
	for _, b := range nb {
		n := b.Count - prevCount
		if n > 0 {
			sLo += n * prevBound
			sHi += n * b.UpperBound
		}
		prevBound, prevCount = b.UpperBound, b.Count
	}
	return sLo / total, sHi / total
}

// HistogramBackwards scans the raw samples of one stored classic histogram (its _bucket series,
// label le, and its _count series; samples ascending, scraped together) for series that went
// backwards without a restart. A restarted process counts again from zero, so every series
// of the histogram falls at the same scrape and its total (_count and the +Inf bucket) falls
// with it. A bucket or _count that decreases while a total series of the same histogram does
// not decrease at that scrape (the others keep growing) therefore went backwards; so does one
// that decreases to at least half its previous value (the counter rule of CounterBackwards),
// whatever the totals did. signal names the histogram in the notices (a stage such as ttft);
// effect says what the aggregates did. It returns one Finding per series that went backwards
// (Signal is the stored metric name, le among the labels; Value the new reading, At its time,
// Count the number of backwards steps) and every time at which the histogram went backwards,
// ascending and without repeats: the windows that contain one of them must leave the whole
// histogram out, since PromQL took the decrease for a restart there.
func HistogramBackwards(signal string, set model.Matrix, effect string) ([]Finding, []time.Time) {
	// Times at which a total series (_count, +Inf bucket) went down or had no comparable sample.
	totalUp := map[model.Time]bool{}
	for _, s := range set {
		if !isTotal(s.Metric) {
			continue
		}
		for i := 1; i < len(s.Values); i++ {
			if s.Values[i].Value >= s.Values[i-1].Value {
				totalUp[s.Values[i].Timestamp] = true
			}
		}
	}
	var out []Finding
	times := map[model.Time]bool{}
	for _, s := range set {
		var f *Finding
		for i := 1; i < len(s.Values); i++ {
			prev, cur := float64(s.Values[i-1].Value), float64(s.Values[i].Value)
			ts := s.Values[i].Timestamp
			if !(cur < prev) || !(backwards(prev, cur) || totalUp[ts]) {
				continue
			}
			times[ts] = true
			if f == nil {
				target, labels := splitLabels(s.Metric)
				f = &Finding{Signal: string(s.Metric[model.MetricNameLabel]), Target: target, Labels: labels, Value: cur,
					At: ts.Time().UTC(), Effect: effect,
					Why: fmt.Sprintf("a histogram series of %s that went back from %s without a restart", signal, formatValue(prev))}
				if totalUp[ts] {
					f.Why = fmt.Sprintf("a histogram series of %s that went back from %s while the histogram's count did not fall (not a restart)", signal, formatValue(prev))
				}
			}
			f.Count++
		}
		if f != nil {
			out = append(out, *f)
		}
	}
	sortFindings(out)
	at := make([]time.Time, 0, len(times))
	for _, ts := range slices.Sorted(maps.Keys(times)) {
		at = append(at, ts.Time().UTC())
	}
	return out, at
}

// isTotal reports whether a stored histogram series counts every observation: its _count, or
// its +Inf bucket.
func isTotal(m model.Metric) bool {
	if strings.HasSuffix(string(m[model.MetricNameLabel]), "_count") {
		return true
	}
	le, ok := m[model.BucketLabel]
	if !ok {
		return false
	}
	v, err := hist.ParseLe(string(le))
	return err == nil && math.IsInf(v, 1)
}
