package hist

import (
	"maps"
	"math"
	"slices"
)

// Layout is one histogram's bucket bounds in ascending order, +Inf last.
// Two histograms share a layout when their bounds are numerically equal.
type Layout []float64

func layoutOf(nb []Bucket) Layout {
	l := make(Layout, len(nb))
	for i, b := range nb {
		l[i] = b.UpperBound
	}
	return l
}

// MergeResult is the outcome of QuantilesMerged: one Estimate per quantile
// and the distinct bucket layouts among the histograms that had observations.
type MergeResult struct {
	Estimates []Estimate
	Layouts   []Layout
}

// QuantilesMerged returns the quantiles qs of the observations of several
// histograms together (for example the same latency stage of several
// targets), each given as its own buckets, counts or per-second rates over
// the same window. sum and count are the merged _sum and _count (for the
// refined estimator; NaN when unknown).
//
// When every histogram with observations has the same bucket bounds, their
// buckets are added and the result is exactly QuantilesWith on the sum (what
// histogram_quantile(sum by (le) (…)) returns). When the layouts differ, a
// sum of buckets is not a histogram (a bound one layout lacks would count
// none of that layout's observations below it), so the layouts are merged as
// distributions:
//
//   - Each layout's cumulative count at a bound u it lacks is bracketed by
//     its counts at its own neighbouring bounds p < u < n: [C(p), C(n)]
//     (C = 0 at 0 below its lowest bound), and placed by linear
//     interpolation between them, the assumption histogram_quantile makes
//     inside a bucket (at or above its highest finite bound, where there is
//     no finite n, at C(p): those observations are taken to lie above u).
//   - The value is QuantilesWith on the merged interpolated cumulative counts
//     at the union of all bounds. Since each layout's interpolated CDF is
//     linear between consecutive union bounds, this is exactly the inverse
//     of the mixture of the layouts' own piecewise-linear CDFs.
//   - The bounds use the brackets: with R = q·N, Upper is the smallest union
//     bound whose lowest possible merged count is ≥ R, Lower the largest
//     whose highest possible merged count is < R (0 if none, as for the
//     lowest bucket; -Inf if the lowest bound is <= 0). The true quantile
//     (the ⌈q·N⌉-th smallest observation) lies in [Lower, Upper] whatever
//     the distribution inside each layout's buckets, and the value does too.
//     Upper is +Inf when no finite bound is certain to hold R observations.
//
// Histograms without observations are ignored (an idle target does not widen
// anyone's bounds); a histogram without a +Inf bucket makes every estimate
// NaN, as it does for a single histogram. It never panics and does not modify
// its arguments.
func QuantilesMerged(e Estimator, qs []float64, parts [][]Bucket, sum, count float64) MergeResult {
	var layouts []Layout
	var byLayout [][]Bucket
	for _, p := range parts {
		nb := Normalize(p)
		if len(nb) == 0 {
			continue
		}
		if !math.IsInf(nb[len(nb)-1].UpperBound, 1) {
			return MergeResult{Estimates: QuantilesWith(e, qs, nb, sum, count)} // NaN: incomplete histogram
		}
		if !(nb[len(nb)-1].Count > 0) {
			continue
		}
		l := layoutOf(nb)
		k := slices.IndexFunc(layouts, func(x Layout) bool { return slices.Equal(x, l) })
		if k < 0 {
			layouts = append(layouts, l)
			byLayout = append(byLayout, slices.Clone(nb))
			continue
		}
		for i := range nb {
			byLayout[k][i].Count += nb[i].Count
		}
	}
	switch len(layouts) {
	case 0:
		// No observations anywhere: the ordinary rules give NaN (or ±Inf for q outside [0, 1]).
		var all []Bucket
		for _, p := range parts {
			all = append(all, p...)
		}
		return MergeResult{Estimates: QuantilesWith(e, qs, all, sum, count)}
	case 1:
		return MergeResult{Estimates: QuantilesWith(e, qs, byLayout[0], sum, count), Layouts: layouts}
	}

	union := map[float64]bool{}
	for _, l := range layouts {
		for _, u := range l {
			union[u] = true
		}
	}
	bounds := slices.Sorted(maps.Keys(union))
	mid := make([]Bucket, len(bounds))
	lo := make([]float64, len(bounds))
	hi := make([]float64, len(bounds))
	total := 0.0
	for _, nb := range byLayout {
		total += nb[len(nb)-1].Count
		for j, u := range bounds {
			l, m, h := bracket(nb, u)
			lo[j] += l
			hi[j] += h
			mid[j].Count += m
		}
	}
	for j, u := range bounds {
		mid[j].UpperBound = u
	}
	ests := QuantilesWith(e, qs, mid, sum, count)
	for i, q := range qs {
		est := &ests[i]
		if math.IsNaN(est.Value) || q < 0 || q > 1 || math.IsNaN(q) {
			continue
		}
		r := q * total
		est.Upper = math.Inf(1)
		for j, u := range bounds {
			if lo[j] >= r {
				est.Upper = u
				break
			}
		}
		est.Lower = math.NaN()
		for j := len(bounds) - 1; j >= 0; j-- {
			if hi[j] < r {
				est.Lower = bounds[j]
				break
			}
		}
		est.InLowestBucket = false
		if math.IsNaN(est.Lower) {
			if bounds[0] > 0 {
				est.Lower, est.InLowestBucket = 0, true
			} else {
				est.Lower = math.Inf(-1)
			}
		}
	}
	return MergeResult{Estimates: ests, Layouts: layouts}
}

// bracket returns the lowest possible, interpolated and highest possible
// cumulative count of normalised buckets nb (last bound +Inf) at bound u.
func bracket(nb []Bucket, u float64) (lo, mid, hi float64) {
	i, found := slices.BinarySearchFunc(nb, u, func(b Bucket, t float64) int {
		switch {
		case b.UpperBound < t:
			return -1
		case b.UpperBound > t:
			return 1
		}
		return 0
	})
	if found {
		c := nb[i].Count
		return c, c, c
	}
	// nb[i] is the first bound above u (i < len(nb) because the last is +Inf).
	pBound, pCount := 0.0, 0.0
	if i > 0 {
		pBound, pCount = nb[i-1].UpperBound, nb[i-1].Count
	} else if u <= 0 {
		// Below a lowest bound <= 0 nothing is known about where observations lie.
		return 0, 0, nb[0].Count
	}
	next := nb[i]
	if math.IsInf(next.UpperBound, 1) {
		return pCount, pCount, next.Count
	}
	m := pCount + (next.Count-pCount)*(u-pBound)/(next.UpperBound-pBound)
	return pCount, m, next.Count
}
