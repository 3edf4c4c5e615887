// Package latency computes stage-decomposed latency statistics (mean and any
// quantile, with the bucket bounds each quantile fell in) from windowed
// histogram rates, and the mean-per-stage breakdown of where request time
// goes. Inputs are PromQL range results; nothing here does I/O.
package latency

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/common/model"

	"github.com/inferscope/inferscope-llm-datasource/pkg/analysis"
	"github.com/inferscope/inferscope-llm-datasource/pkg/catalog"
	"github.com/inferscope/inferscope-llm-datasource/pkg/hist"
)

// Stat is one statistic of a latency distribution: the mean (Quantile NaN),
// the quantile Quantile in (0, 1), named like "p99" or "p99.9", or the max
// (Quantile 1: the upper bound of the highest occupied bucket of the window,
// histogram_quantile(1, …), with that bucket's lower bound as its lower
// bound; the slowest request of the window lies between them).
type Stat struct {
	Name     string
	Quantile float64
}

// IsMean reports whether s is the mean.
func (s Stat) IsMean() bool { return math.IsNaN(s.Quantile) }

// DefaultStats are the statistics shown when a query names none.
var DefaultStats = []string{"mean", "p50", "p90", "p95", "p99"}

// ParseStat parses "mean", "max" or "p<percent>" (p50, p99, p99.9). The
// percent must lie strictly between 0 and 100. Errors name the bad value.
func ParseStat(s string) (Stat, error) {
	s = strings.TrimSpace(strings.ToLower(s))
	if s == "mean" || s == "avg" {
		return Stat{Name: "mean", Quantile: math.NaN()}, nil
	}
	if s == "max" {
		return Stat{Name: "max", Quantile: 1}, nil
	}
	if !strings.HasPrefix(s, "p") {
		return Stat{}, fmt.Errorf("stat %q is neither mean, max nor a percentile such as p99", s)
	}
	pct, err := strconv.ParseFloat(s[1:], 64)
	if err != nil || !(pct > 0 && pct < 100) {
		return Stat{}, fmt.Errorf("stat %q: percentile must be a number between 0 and 100 (exclusive)", s)
	}
	return Stat{Name: s, Quantile: pct / 100}, nil
}

// Input is the PromQL result for one stage over one range: windowed per-second
// rates of the histogram buckets (grouped by le and the group labels), of
// _sum and of _count, on the same step grid. A nil Count is taken from the
// le="+Inf" bucket series, which classic histograms define as equal to _count. Scale converts the metric's
// unit to seconds (bucket bounds and sums are multiplied by it).
type Input struct {
	Stage   catalog.Signal
	Buckets model.Matrix
	Sum     model.Matrix
	Count   model.Matrix
	Scale   float64
	// SplitBy, when set, is a stored label (e.g. "job") that the bucket
	// series carry but the groups do not: the histograms of one group are
	// kept apart by it, added when they share a bucket layout and merged as
	// distributions (hist.QuantilesMerged) when they do not. Sum and Count
	// series may carry it too; they are added across it.
	SplitBy string
	// Increases, when set, are the windowed increases of the same bucket
	// series (delta(x_bucket[w]), grouped like Buckets). rate() extrapolates
	// each bucket series by its own factor (its zero-point clamp depends on
	// the series' value), so the buckets of one histogram can disagree near a
	// process start or a bucket's first hit, and a rank can land in the wrong
	// bucket. delta() extrapolates all series sampled at the same instants by
	// one factor, so Compute takes rank fractions from Increases and scales
	// every bucket of one histogram (group × SplitBy value) and window by one
	// factor, Count / increase of the +Inf bucket: the histogram's bucket
	// rates then end at its _count rate. Count must then carry SplitBy too.
	Increases model.Matrix
	// Resets is resets(x_count[w]) grouped like Count (with SplitBy). Where
	// it is above 0 a counter reset (restart) falls in the window, delta is
	// not an increase, and that histogram's Buckets (rate) are used instead,
	// with a notice: the bound guarantee does not hold there.
	Resets model.Matrix
	// Window is the rate window, used to turn increases into rates when a
	// histogram has no Count series.
	Window time.Duration
}

// Options selects the statistics of Compute.
type Options struct {
	Stats     []Stat
	Estimator hist.Estimator
	// Bounds adds, for each quantile, series labelled bound="lower" and
	// bound="upper": the edges of the bucket the quantile fell in.
	Bounds bool
}

// Compute returns, for each group (labels other than le) and each stat, a
// series in seconds labelled stage and stat (and bound for the band). Means
// are rate(_sum)/rate(_count) (a request-weighted mean over the window);
// quantiles come from hist.QuantileWith on the bucket rates, which for the
// prometheus estimator is exactly PromQL's histogram_quantile. Steps with no
// requests in the window are NaN (no quantile or mean exists). A bound that
// is ±Inf (the open edge of a quantile clamped into the +Inf bucket, or below
// a lowest bound <= 0) is NaN too: never ±Inf in a series. Notices report
// clamped quantiles, bands wider than the value, and buckets with
// unparsable le labels.
func Compute(in Input, steps []time.Time, opt Options, notes *analysis.Notices) []analysis.Series {
	scale := in.Scale
	if scale == 0 {
		scale = 1
	}
	var drop []string
	if in.SplitBy != "" {
		drop = []string{in.SplitBy}
	}
	partsByGroup, groupLabels, badLe := alignBuckets(in.Buckets, steps, scale, in.SplitBy)
	sums, _ := analysis.Align(in.Sum, steps, drop...)
	countMatrix := in.Count
	if countMatrix == nil {
		// A classic histogram's _count equals its +Inf bucket, so the
		// bucket query already carries the observation rate.
		countMatrix = infBuckets(in.Buckets)
	}
	counts, countLabels := analysis.Align(countMatrix, steps, drop...)
	restarted := map[string]int{}
	if in.Increases != nil {
		var incLabels map[string]map[string]string
		var bad int
		partsByGroup, incLabels, restarted, bad = consistentParts(in, steps, scale, partsByGroup)
		badLe += bad
		for k, l := range incLabels {
			if _, ok := groupLabels[k]; !ok {
				groupLabels[k] = l
			}
		}
	}

	if badLe > 0 {
		notes.Add(analysis.Warning, fmt.Sprintf("%s: %d bucket series had an le label that is not a number and were ignored", in.Stage, badLe))
	}
	// Groups come from buckets and counts (a group may have _count but no buckets only if the page is broken).
	for k, l := range countLabels {
		if _, ok := groupLabels[k]; !ok {
			groupLabels[k] = l
		}
	}
	keys := slices.Sorted(maps.Keys(groupLabels))

	var qs []float64
	for _, st := range opt.Stats {
		if !st.IsMean() {
			qs = append(qs, st.Quantile)
		}
	}
	var out []analysis.Series
	for _, key := range keys {
		gl := groupLabels[key]
		gp := partsByGroup[key]
		gpKeys := slices.Sorted(maps.Keys(gp))
		sum, cnt := sums[key], counts[key]
		// All quantiles of one step share one normalisation and, for the
		// refined estimator, one fit (hist.QuantilesWith).
		est := make([][]hist.Estimate, len(steps))
		mixed := map[string]bool{} // layouts seen at steps where they differ
		mixedSteps := 0
		for i := range steps {
			if len(gp) == 0 || len(qs) == 0 {
				continue
			}
			s, c := math.NaN(), math.NaN()
			if sum != nil && cnt != nil {
				s, c = sum[i]*scale, cnt[i]
			}
			b, merge, layouts := combine(gp, gpKeys, i)
			if b == nil && merge == nil {
				continue // no buckets at this step
			}
			if merge == nil {
				est[i] = hist.QuantilesWith(opt.Estimator, qs, b, s, c)
				continue
			}
			est[i] = hist.QuantilesMerged(opt.Estimator, qs, merge, s, c).Estimates
			mixedSteps++
			for _, l := range layouts {
				mixed[l] = true
			}
		}
		if n := restarted[key]; n > 0 {
			notes.Add(analysis.Warning, fmt.Sprintf("%s%s: a counter reset (a restart) falls in the window of %d of %d steps; there the quantile comes from rate()'s per-bucket extrapolation, as in histogram_quantile, and its bounds are not guaranteed (see docs/quantiles.md)",
				in.Stage, describe(gl), n, len(steps)))
		}
		if mixedSteps > 0 {
			g := describe(gl)
			by := in.SplitBy
			if n, ok := analysis.GroupLabels[by]; ok {
				by = n
			}
			notes.Add(analysis.Warning, fmt.Sprintf("%s%s: bucket layouts differ across %s (%s) in %d of %d steps; there the quantiles merge the layouts as distributions instead of adding buckets, and the bounds are widened so they still hold (see docs/quantiles.md)",
				in.Stage, g, by, strings.Join(slices.Sorted(maps.Keys(mixed)), "; "), mixedSteps, len(steps)))
		}
		qi := -1
		for _, st := range opt.Stats {
			if st.IsMean() {
				vals := make([]float64, len(steps))
				for i := range steps {
					vals[i] = math.NaN()
					if sum != nil && cnt != nil {
						vals[i] = hist.Mean(sum[i]*scale, cnt[i])
					}
				}
				out = append(out, series(in.Stage, st.Name, "", gl, steps, vals))
				continue
			}
			qi++
			vals := make([]float64, len(steps))
			lo := make([]float64, len(steps))
			hi := make([]float64, len(steps))
			var clampedHigh, clampedLow, wide, fallback int
			for i := range steps {
				vals[i], lo[i], hi[i] = math.NaN(), math.NaN(), math.NaN()
				if est[i] == nil {
					continue
				}
				e := est[i][qi]
				vals[i], lo[i], hi[i] = e.Value, finite(e.Lower), finite(e.Upper)
				if math.IsNaN(e.Value) {
					continue
				}
				switch e.Clamp {
				case hist.ClampedHigh:
					clampedHigh++
				case hist.ClampedLow:
					clampedLow++
				}
				if strings.HasPrefix(e.Method, "linear-fallback") {
					fallback++
				}
				if !math.IsInf(e.Upper, 1) && e.Upper-e.Lower > e.Value {
					wide++
				}
			}
			g := describe(gl)
			if noInf := missingInf(gp, len(steps)); noInf > 0 && qi == 0 {
				notes.Add(analysis.Warning, fmt.Sprintf("%s%s: in %d of %d steps the histogram has no +Inf bucket, so no quantile can be computed (the page is incomplete or relabelled)", in.Stage, g, noInf, len(steps)))
			}
			if clampedHigh > 0 {
				notes.Add(analysis.Warning, fmt.Sprintf("%s %s%s: in %d of %d steps the quantile fell in the +Inf bucket and is clamped at the highest finite bound; the true value is higher, and its upper bound is unknown (null)", in.Stage, st.Name, g, clampedHigh, len(steps)))
			}
			if clampedLow > 0 {
				notes.Add(analysis.Warning, fmt.Sprintf("%s %s%s: in %d of %d steps the quantile is clamped at the lowest bucket bound, and its lower bound is unknown (null)", in.Stage, st.Name, g, clampedLow, len(steps)))
			}
			if wide > 0 {
				notes.Add(analysis.Info, fmt.Sprintf("%s %s%s: in %d of %d steps the bucket holding the quantile is wider than the value itself; see the lower/upper bound series", in.Stage, st.Name, g, wide, len(steps)))
			}
			if fallback > 0 && opt.Estimator == hist.EstimatorRefined {
				notes.Add(analysis.Info, fmt.Sprintf("%s %s%s: the refined estimator fell back to linear interpolation in %d of %d steps", in.Stage, st.Name, g, fallback, len(steps)))
			}
			out = append(out, series(in.Stage, st.Name, "", gl, steps, vals))
			if opt.Bounds {
				out = append(out, series(in.Stage, st.Name, "lower", gl, steps, lo))
				out = append(out, series(in.Stage, st.Name, "upper", gl, steps, hi))
			}
		}
	}
	return out
}

// finite returns v, or NaN (a null in the frame) when v is ±Inf: the
// unbounded edge of a clamped quantile's band is unknown, not infinite, and
// an infinite value would fill a band or scale an axis to infinity.
func finite(v float64) float64 {
	if math.IsInf(v, 0) {
		return math.NaN()
	}
	return v
}

func describe(gl map[string]string) string {
	if len(gl) == 0 {
		return ""
	}
	keys := slices.Sorted(maps.Keys(gl))
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		parts = append(parts, k+"="+gl[k])
	}
	return " (" + strings.Join(parts, ", ") + ")"
}

func series(stage catalog.Signal, stat, bound string, gl map[string]string, steps []time.Time, vals []float64) analysis.Series {
	l := make(map[string]string, len(gl)+3)
	for k, v := range gl {
		l[k] = v
	}
	l["stage"] = string(stage)
	l["stat"] = stat
	name := string(stage) + " " + stat
	if bound != "" {
		l["bound"] = bound
		name += " " + bound
	}
	return analysis.Series{Name: name, Labels: l, Unit: "s", Times: steps, Values: vals}
}

// missingInf counts the steps where a histogram lacks the +Inf bucket.
func missingInf(gp groupParts, steps int) int {
	n := 0
	for i := 0; i < steps; i++ {
		for _, per := range gp {
			if b := per[i]; len(b) > 0 && !slices.ContainsFunc(b, func(x hist.Bucket) bool { return math.IsInf(x.UpperBound, 1) }) {
				n++
				break
			}
		}
	}
	return n
}

// groupParts holds one group's raw buckets per split value and step:
// parts[value][step].
type groupParts map[string][][]hist.Bucket

// combine prepares one step's histograms of one group (keyed by the split
// label's value). When those with observations share one bucket layout (or
// there is one histogram), their buckets are added and normalised (exactly
// what PromQL's sum by (le) feeds histogram_quantile) and merge is nil.
// Otherwise merge holds every histogram with observations for
// hist.QuantilesMerged, and layouts describes each layout with the split
// values using it, e.g. "a: 0.1, 1". Parts arrive sorted by bound
// (alignBuckets), which keeps this cheap per step.
func combine(gp groupParts, keys []string, step int) (sum []hist.Bucket, merge [][]hist.Bucket, layouts []string) {
	// Fast path: every histogram at this step lists the same bounds (one
	// layout, the usual case): add them bound by bound.
	var first []hist.Bucket
	same := true
	n := 0
	for _, k := range keys {
		b := gp[k][step]
		if len(b) == 0 {
			continue
		}
		n++
		if first == nil {
			first = b
			continue
		}
		if !sameBounds(first, b) {
			same = false
			break
		}
	}
	if n == 0 {
		return nil, nil, nil
	}
	if same {
		if n == 1 {
			return hist.Normalize(first), nil, nil
		}
		total := slices.Clone(first)
		for i := range total {
			total[i].Count = 0
		}
		for _, k := range keys {
			for i, x := range gp[k][step] {
				total[i].Count += x.Count
			}
		}
		return hist.Normalize(total), nil, nil
	}
	parts := make(map[string][]hist.Bucket, len(keys))
	for _, k := range keys {
		if b := gp[k][step]; len(b) > 0 {
			parts[k] = b
		}
	}
	pk := slices.Sorted(maps.Keys(parts))
	var busy []string
	var shapes [][]hist.Bucket // one normalised histogram per distinct layout
	var users [][]string       // split values per layout
	for _, k := range pk {
		nb := hist.Normalize(parts[k])
		if len(nb) == 0 || !(nb[len(nb)-1].Count > 0) {
			continue
		}
		busy = append(busy, k)
		at := slices.IndexFunc(shapes, func(x []hist.Bucket) bool { return sameBounds(x, nb) })
		if at < 0 {
			shapes = append(shapes, nb)
			users = append(users, nil)
			at = len(shapes) - 1
		}
		users[at] = append(users[at], k)
	}
	if len(shapes) <= 1 {
		use := busy
		if len(use) == 0 {
			use = pk
		}
		return addRaw(parts, use), nil, nil
	}
	for _, k := range busy {
		merge = append(merge, parts[k])
	}
	for i, nb := range shapes {
		layouts = append(layouts, strings.Join(users[i], ", ")+": "+layoutString(nb))
	}
	return nil, merge, layouts
}

// addRaw adds the raw buckets of the given parts and normalises the sum.
// Parts listing the same bounds in the same order are added bound by bound;
// otherwise they are concatenated for Normalize to coalesce.
func addRaw(parts map[string][]hist.Bucket, keys []string) []hist.Bucket {
	first := parts[keys[0]]
	sum := slices.Clone(first)
	for _, k := range keys[1:] {
		b := parts[k]
		if !sameBounds(first, b) {
			var all []hist.Bucket
			for _, k := range keys {
				all = append(all, parts[k]...)
			}
			return hist.Normalize(all)
		}
		for i := range b {
			sum[i].Count += b[i].Count
		}
	}
	return hist.Normalize(sum)
}

func sameBounds(a, b []hist.Bucket) bool {
	return slices.EqualFunc(a, b, func(x, y hist.Bucket) bool { return x.UpperBound == y.UpperBound })
}

// layoutString renders the finite bounds of normalised buckets: "0.1, 1".
func layoutString(nb []hist.Bucket) string {
	parts := make([]string, 0, len(nb))
	for _, b := range nb {
		if !math.IsInf(b.UpperBound, 1) {
			parts = append(parts, strconv.FormatFloat(b.UpperBound, 'g', -1, 64))
		}
	}
	return strings.Join(parts, ", ")
}

// infBuckets returns the le="+Inf" series of a bucket matrix without their le label.
func infBuckets(m model.Matrix) model.Matrix {
	var out model.Matrix
	for _, s := range m {
		le, err := hist.ParseLe(string(s.Metric[model.BucketLabel]))
		if err != nil || !math.IsInf(le, 1) {
			continue
		}
		metric := s.Metric.Clone()
		delete(metric, model.BucketLabel)
		out = append(out, &model.SampleStream{Metric: metric, Values: s.Values})
	}
	return out
}

// alignBuckets groups bucket-rate series by their labels without le (and
// without the split label) and returns, per group, per split value ("" when
// split is empty), per step, the raw buckets (bounds scaled to seconds) in
// ascending bound order. Bounds are matched numerically later, so le="1" and
// le="1.0" are one bucket.
func alignBuckets(m model.Matrix, steps []time.Time, scale float64, split string) (map[string]groupParts, map[string]map[string]string, int) {
	at := analysis.NewStepIndex(steps)
	out := map[string]groupParts{}
	labels := map[string]map[string]string{}
	bad := 0
	drop := []string{model.BucketLabel}
	if split != "" {
		drop = append(drop, split)
	}
	// Visit series in ascending le order, so every step's buckets arrive
	// sorted and Normalize need not sort them.
	type byLe struct {
		s  *model.SampleStream
		le float64
	}
	sorted := make([]byLe, 0, len(m))
	for _, s := range m {
		le, err := hist.ParseLe(string(s.Metric[model.BucketLabel]))
		if err != nil {
			bad++
			continue
		}
		sorted = append(sorted, byLe{s, le})
	}
	slices.SortStableFunc(sorted, func(a, b byLe) int { return hist.CompareBounds(a.le, b.le) })
	// Count the bucket series of each group and part first, so each part's
	// steps share one backing array instead of growing a slice per step.
	type slot struct{ key, part string }
	slots := make([]slot, len(sorted))
	width := map[slot]int{}
	for n, x := range sorted {
		key, l := analysis.Key(x.s.Metric, drop...)
		part := ""
		if split != "" {
			part = string(x.s.Metric[model.LabelName(split)])
		}
		slots[n] = slot{key, part}
		width[slots[n]]++
		if _, ok := labels[key]; !ok {
			labels[key] = l
		}
	}
	for n, x := range sorted {
		s, le := x.s, x.le
		if !math.IsInf(le, 1) {
			le *= scale
		}
		key, part := slots[n].key, slots[n].part
		gp, ok := out[key]
		if !ok {
			gp = groupParts{}
			out[key] = gp
		}
		per, ok := gp[part]
		if !ok {
			w := width[slots[n]]
			backing := make([]hist.Bucket, len(steps)*w)
			per = make([][]hist.Bucket, len(steps))
			for i := range per {
				per[i] = backing[i*w : i*w : (i+1)*w]
			}
			gp[part] = per
		}
		at.Walk(s.Values, func(i int, v model.SampleValue) {
			per[i] = append(per[i], hist.Bucket{UpperBound: le, Count: float64(v)})
		})
	}
	return out, labels, bad
}

// consistentParts turns in.Increases into bucket rates with one scale per
// histogram (group × split value) and step: Count / increase of its +Inf
// bucket (1/Window where Count is missing). Where in.Resets is above 0 the
// histogram's rate buckets (from in.Buckets) are used instead and the step is
// counted in restarted (per group). The increases are scaled in place.
func consistentParts(in Input, steps []time.Time, scale float64, rates map[string]groupParts) (map[string]groupParts, map[string]map[string]string, map[string]int, int) {
	inc, labels, bad := alignBuckets(in.Increases, steps, scale, in.SplitBy)
	counts := alignParts(in.Count, steps, in.SplitBy)
	resets := alignParts(in.Resets, steps, in.SplitBy)
	perSecond := math.NaN()
	if in.Window > 0 {
		perSecond = 1 / in.Window.Seconds()
	}
	restarted := map[string]int{}
	for key, gp := range inc {
		reset := make([]bool, len(steps))
		for part, per := range gp {
			r, c := resets[key][part], counts[key][part]
			for i, b := range per {
				if len(b) == 0 {
					// No increase at this step (delta() saw fewer than two samples of the
					// histogram in the window, e.g. the last, partial step after a model's series
					// were relabelled) while rate() may have the buckets: use those, as the mean
					// (from the _sum and _count rates) does.
					if rp := rates[key][part]; rp != nil && len(rp[i]) > 0 {
						per[i] = rp[i]
					}
					continue
				}
				if r != nil && r[i] > 0 {
					reset[i] = true
					per[i] = nil
					if rp := rates[key][part]; rp != nil {
						per[i] = rp[i]
					}
					continue
				}
				inf := 0.0
				for _, x := range b {
					if math.IsInf(x.UpperBound, 1) {
						inf += x.Count
					}
				}
				f := perSecond
				if c != nil && !math.IsNaN(c[i]) {
					switch {
					case inf > 0:
						f = c[i] / inf
					case inf == 0:
						f = 0 // no requests: every increase is 0 anyway
					}
				}
				for j := range b {
					b[j].Count *= f
				}
			}
		}
		for _, r := range reset {
			if r {
				restarted[key]++
			}
		}
	}
	// Groups only the rate query saw (none in practice: both read the same series) keep their rates.
	for key, gp := range rates {
		if _, ok := inc[key]; !ok {
			inc[key] = gp
		}
	}
	return inc, labels, restarted, bad
}

// alignParts places a matrix on the step grid per group (labels without
// split) and per value of the split label ("" when split is empty).
func alignParts(m model.Matrix, steps []time.Time, split string) map[string]map[string][]float64 {
	var drop []string
	if split != "" {
		drop = []string{split}
	}
	out := map[string]map[string][]float64{}
	for _, s := range m {
		part := ""
		if split != "" {
			part = string(s.Metric[model.LabelName(split)])
		}
		vals, _ := analysis.Align(model.Matrix{s}, steps, drop...)
		for key, v := range vals {
			if out[key] == nil {
				out[key] = map[string][]float64{}
			}
			if prev := out[key][part]; prev != nil {
				for i := range v {
					switch {
					case math.IsNaN(prev[i]):
						prev[i] = v[i]
					case !math.IsNaN(v[i]):
						prev[i] += v[i]
					}
				}
				continue
			}
			out[key][part] = v
		}
	}
	return out
}

// CounterMeans labels a PromQL result that already is a mean in seconds
// (catalog.MeanPromQL: rate of a time counter over rate of an event counter)
// as the stage's "mean" series, one per result series, NaN where the window
// had no events.
func CounterMeans(stage catalog.Signal, m model.Matrix, steps []time.Time) []analysis.Series {
	vals, labels := analysis.Align(m, steps)
	out := make([]analysis.Series, 0, len(vals))
	for _, k := range slices.Sorted(maps.Keys(vals)) {
		v := vals[k]
		for i := range v {
			if math.IsInf(v[i], 0) {
				v[i] = math.NaN()
			}
		}
		out = append(out, series(stage, "mean", "", labels[k], steps, v))
	}
	return out
}
