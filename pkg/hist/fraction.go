package hist

import "math"

// FractionEstimate is the fraction (0..1) of observations less than or equal
// to a threshold, with its honest bounds.
//
// Value is what Prometheus's histogram_fraction(-Inf, T, ...) returns for a
// classic histogram. Lower and Upper are the exact fractions at the bucket
// bounds just below and just above T (0 below the lowest bound), so the true
// fraction is guaranteed to lie in [Lower, Upper]. Exact is true when T is
// itself a bucket bound (or ±Inf): Value is then the exact fraction and
// Lower == Value == Upper. All three are NaN when the fraction is undefined
// (no bucket, no +Inf bucket, zero total count, or T NaN).
type FractionEstimate struct {
	Value, Lower, Upper float64
	Exact               bool
}

// FractionBelow returns the fraction of observations <= threshold (same unit
// as the bounds, seconds for latencies), e.g. the share of requests meeting
// a TTFT objective. Value equals promql.BucketFraction(-Inf, threshold, b)
// (Prometheus v0.316): buckets are sorted and equal bounds merged (no
// monotonicity fix-up, as in Prometheus), the cumulative count is
// interpolated linearly inside the bucket containing threshold, the lowest
// bucket starts at 0 when its bound is > 0 (so a threshold below 0 gives 0),
// a lowest bucket with bound <= 0 is counted whole, and nothing of the +Inf
// bucket is counted below a finite threshold. b is not modified.
func FractionBelow(threshold float64, b []Bucket) FractionEstimate {
	nan := math.NaN()
	undefined := FractionEstimate{Value: nan, Lower: nan, Upper: nan}
	nb := make([]Bucket, 0, len(b))
	for _, x := range b {
		if !math.IsNaN(x.UpperBound) {
			nb = append(nb, x)
		}
	}
	if len(nb) == 0 {
		return undefined
	}
	sortBuckets(nb)
	if !math.IsInf(nb[len(nb)-1].UpperBound, 1) {
		return undefined
	}
	nb = coalesce(nb)
	count := nb[len(nb)-1].Count
	if count == 0 || math.IsNaN(threshold) {
		return undefined
	}
	if math.IsInf(threshold, -1) {
		return FractionEstimate{Value: 0, Lower: 0, Upper: 0, Exact: true}
	}

	// Prometheus's upper-rank search with lower = -Inf (its lower rank is
	// then always 0).
	upperRank, set := 0.0, false
	rank := 0.0
	lowerBound := 0.0
	if nb[0].UpperBound <= 0 {
		lowerBound = math.Inf(-1)
	}
	// j is the first bucket whose bound is >= threshold: its cumulative
	// count and the one before it bracket the true fraction.
	j := len(nb) - 1
	for i, x := range nb {
		if i > 0 {
			lowerBound = nb[i-1].UpperBound
		}
		if !set && lowerBound >= threshold {
			upperRank, set = rank, true
		}
		if !set && lowerBound < threshold && x.UpperBound > threshold {
			if math.IsInf(lowerBound, -1) {
				upperRank = x.Count
			} else {
				upperRank = rank + (x.Count-rank)*(threshold-lowerBound)/(x.UpperBound-lowerBound)
			}
			set = true
		}
		if x.UpperBound >= threshold && i < j {
			j = i
		}
		if set && j <= i {
			break
		}
		rank = x.Count
	}
	if !set || upperRank > count {
		upperRank = count
	}
	// Prometheus's lower rank (lower = -Inf) is 0, clamped to the count like
	// the upper one: with a negative total count both ranks become the
	// count and the fraction is (count − count)/count = −0, not 1.
	lowerRank := 0.0
	if lowerRank > count {
		lowerRank = count
	}
	value := (upperRank - lowerRank) / count

	capped := func(c float64) float64 { return math.Min(c, count) / count }
	below := 0.0
	if j > 0 {
		below = capped(nb[j-1].Count)
	}
	above := capped(nb[j].Count)
	// A NaN count leaves that side unknown: fall back to the trivial
	// bound.
	if math.IsNaN(below) {
		below = 0
	}
	if math.IsNaN(above) {
		above = 1
	}
	if nb[j].UpperBound == threshold {
		return FractionEstimate{Value: value, Lower: value, Upper: value, Exact: true}
	}
	lo, hi := math.Min(below, above), math.Max(below, above)
	// Only inconsistent input (negative or non-monotonic counts) can put
	// Prometheus's value outside the bracket; widen rather than lie.
	if !math.IsNaN(value) {
		lo, hi = math.Min(lo, value), math.Max(hi, value)
	}
	return FractionEstimate{Value: value, Lower: lo, Upper: hi}
}
