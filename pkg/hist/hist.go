package hist

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// Bucket is one cumulative bucket of a classic Prometheus histogram: Count
// observations (or a per-second rate of them, as returned by
// rate(x_bucket[w])) were less than or equal to UpperBound (the `le` label,
// in the metric's unit, seconds for latencies). The highest bucket of a
// complete histogram has UpperBound +Inf.
type Bucket struct {
	UpperBound float64
	Count      float64
}

// smallDeltaTolerance is the relative difference below which two successive
// cumulative counts are treated as equal, absorbing floating-point noise from
// rate() sums. Same value and rule as Prometheus v0.316's promql package
// (its smallDeltaTolerance).
const smallDeltaTolerance = 1e-12

// ErrEmptyLe is returned by ParseLe for an empty `le` label value.
var ErrEmptyLe = errors.New("empty le label")

// ParseLe parses the value of a histogram's `le` label ("0.5", "1", "1.0",
// "1e-3", "+Inf") into a bucket upper bound. Spellings of the same number
// ("1" and "1.0") parse to the same float64, so Normalize merges their
// buckets. Surrounding spaces are ignored. It returns ErrEmptyLe for an
// empty string and an error for text that is not a number or is NaN (a NaN
// bound cannot be ordered).
func ParseLe(s string) (float64, error) {
	t := strings.TrimSpace(s)
	if t == "" {
		return 0, ErrEmptyLe
	}
	v, err := strconv.ParseFloat(t, 64)
	if err != nil {
		return 0, fmt.Errorf("le label %q is not a number: %w", s, err)
	}
	if math.IsNaN(v) {
		return 0, fmt.Errorf("le label %q is NaN, which is not a valid bucket bound", s)
	}
	return v, nil
}

// Normalize returns a cleaned copy of b, leaving b untouched: buckets with a
// NaN bound are dropped, the rest are sorted by UpperBound, buckets with
// numerically equal bounds (le="1" and le="1.0") are merged by adding their
// counts, and the cumulative counts are made monotonic exactly as Prometheus
// v0.316 does before histogram_quantile (coalesceBuckets followed by
// ensureMonotonicAndIgnoreSmallDeltas): a count whose relative difference to
// the last accepted count is below 1e-12 is set to that count, and any
// decrease is replaced by the last accepted count (running maximum).
// It returns nil for an input with no usable bucket.
func Normalize(b []Bucket) []Bucket {
	out := make([]Bucket, 0, len(b))
	for _, x := range b {
		if !math.IsNaN(x.UpperBound) {
			out = append(out, x)
		}
	}
	return NormalizeInPlace(out)
}

// NormalizeInPlace is Normalize of buckets that hold no NaN bound, done in b's own array
// (no copy): b is sorted (stably, where it is not sorted already), coalesced and made
// monotonic, and the result is a prefix of b. It returns nil for an empty b. For callers
// that build a step's buckets in a buffer of their own and read them once.
func NormalizeInPlace(b []Bucket) []Bucket {
	if len(b) == 0 {
		return nil
	}
	sortBuckets(b)
	b = coalesce(b)
	makeMonotonic(b)
	return b
}

// CompareBounds orders two bucket upper bounds (le, seconds or tokens,
// +Inf last) for slices.SortFunc: −1 when a < b, 1 when a > b, else 0 (a
// NaN compares equal to everything, unlike cmp.Compare, which puts NaN
// first).
func CompareBounds(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func sortBuckets(b []Bucket) {
	cmp := func(x, y Bucket) int { return CompareBounds(x.UpperBound, y.UpperBound) }
	// Scraped buckets usually arrive sorted already.
	if !slices.IsSortedFunc(b, cmp) {
		slices.SortStableFunc(b, cmp)
	}
}

// coalesce merges sorted buckets with equal bounds in place by summing
// their counts, as promql.coalesceBuckets does.
func coalesce(b []Bucket) []Bucket {
	last := b[0]
	i := 0
	for _, x := range b[1:] {
		if x.UpperBound == last.UpperBound {
			last.Count += x.Count
			continue
		}
		b[i] = last
		last = x
		i++
	}
	b[i] = last
	return b[:i+1]
}

// makeMonotonic is promql.ensureMonotonicAndIgnoreSmallDeltas without the
// diagnostics: "prev" is the last accepted count and is not advanced by an
// ignored small delta or by a decrease.
func makeMonotonic(b []Bucket) {
	prev := b[0].Count
	for i := 1; i < len(b); i++ {
		curr := b[i].Count
		if curr == prev {
			continue
		}
		if almostEqual(prev, curr, smallDeltaTolerance) {
			b[i].Count = prev
			continue
		}
		if curr < prev {
			b[i].Count = prev
			continue
		}
		prev = curr
	}
}

// staleNaNBits is Prometheus's staleness marker (model/value.StaleNaN).
const staleNaNBits uint64 = 0x7ff0000000000002

var minNormal = math.Float64frombits(0x0010000000000000)

// almostEqual is Prometheus's util/almost.Equal: a and b differ by less than
// epsilon times the sum of their magnitudes; two NaNs are equal unless
// exactly one of them is the staleness marker.
func almostEqual(a, b, epsilon float64) bool {
	aStale := math.Float64bits(a) == staleNaNBits
	bStale := math.Float64bits(b) == staleNaNBits
	if aStale || bStale {
		return aStale && bStale
	}
	if math.IsNaN(a) && math.IsNaN(b) {
		return true
	}
	if a == b {
		return true
	}
	absSum := math.Abs(a) + math.Abs(b)
	diff := math.Abs(a - b)
	if a == 0 || b == 0 || absSum < minNormal {
		return diff < epsilon*minNormal
	}
	return diff/math.Min(absSum, math.MaxFloat64) < epsilon
}

// Clamp says whether a quantile was pinned to a bucket bound instead of
// being interpolated.
type Clamp string

const (
	// NotClamped: the value was interpolated inside a bucket with two
	// finite edges.
	NotClamped Clamp = ""
	// ClampedLow: the rank fell in the lowest bucket and its upper bound is
	// <= 0, so (as in Prometheus) that bound itself is returned; the true
	// quantile is at most Value and has no known lower limit (Lower = -Inf).
	ClampedLow Clamp = "low"
	// ClampedHigh: the rank fell in the +Inf bucket, so (as in Prometheus)
	// the highest finite bound is returned; the true quantile is at least
	// Value (Upper = +Inf).
	ClampedHigh Clamp = "high"
)

// Method names reported in Estimate.Method.
const (
	MethodPrometheus = "prometheus"
	MethodRefined    = "refined"
	// methodFallback prefixes a reason: "linear-fallback: <reason>".
	methodFallback = "linear-fallback: "
)

// Estimate is a quantile computed from buckets, with its honest bounds.
//
// Value is the estimate in the buckets' unit (seconds for latencies).
// Lower and Upper are the edges of the bucket the quantile's rank fell in:
// the true quantile of the observations (the ceil(q·N)-th smallest one) is
// guaranteed to lie in [Lower, Upper]. For the lowest bucket Lower is 0 when
// its bound is > 0 (the lower edge is an assumption, see InLowestBucket);
// for the +Inf bucket Lower is the highest finite bound and Upper is +Inf.
// When the result is undefined (q NaN, no observations, fewer than two
// buckets, no +Inf bucket) Value, Lower and Upper are NaN; for q < 0 they are
// all -Inf and for q > 1 all +Inf, as histogram_quantile returns.
//
// Count is the total number (or rate) of observations, the +Inf bucket's
// count after normalisation (NaN when there is no +Inf bucket, or when q is
// NaN or outside [0, 1], since the buckets are not read then).
// Method is "prometheus", "refined", or "linear-fallback: <reason>" when the
// refined estimator could not be applied and the Prometheus value was
// returned instead.
type Estimate struct {
	Value, Lower, Upper float64
	Clamp               Clamp
	// InLowestBucket is true when the rank fell in the lowest bucket and
	// that bucket's bound is > 0: Lower = 0 is then Prometheus's assumption
	// that observations are not negative, not a bucket edge.
	InLowestBucket bool
	Count          float64
	Method         string
}

func nanEstimate(count float64, method string) Estimate {
	nan := math.NaN()
	return Estimate{Value: nan, Lower: nan, Upper: nan, Count: count, Method: method}
}

// located is a quantile rank placed in a normalised histogram.
type located struct {
	buckets []Bucket // normalised, last bound +Inf, len >= 2
	est     Estimate // the Prometheus estimate with bounds
	idx     int      // bucket index the rank fell in; -1 when undefined
	frac    float64  // (rank - count below bucket) / bucket count, in [0, 1]
}

// locate computes the Prometheus quantile and where its rank fell. b is
// normalised only when q is in [0, 1].
func locate(q float64, b []Bucket) located {
	if math.IsNaN(q) || q < 0 || q > 1 {
		return locateIn(q, nil)
	}
	return locateIn(q, Normalize(b))
}

// locateIn is locate on buckets already normalised by Normalize (nil or
// empty when there are none), so that several quantiles of one histogram
// share one normalisation.
func locateIn(q float64, nb []Bucket) located {
	loc := located{idx: -1}
	switch {
	case math.IsNaN(q):
		loc.est = nanEstimate(math.NaN(), MethodPrometheus)
		return loc
	case q < 0:
		v := math.Inf(-1)
		loc.est = Estimate{Value: v, Lower: v, Upper: v, Count: math.NaN(), Method: MethodPrometheus}
		return loc
	case q > 1:
		v := math.Inf(1)
		loc.est = Estimate{Value: v, Lower: v, Upper: v, Count: math.NaN(), Method: MethodPrometheus}
		return loc
	}
	if len(nb) == 0 || !math.IsInf(nb[len(nb)-1].UpperBound, 1) || len(nb) < 2 {
		count := math.NaN()
		if len(nb) > 0 && math.IsInf(nb[len(nb)-1].UpperBound, 1) {
			count = nb[len(nb)-1].Count
		}
		loc.est = nanEstimate(count, MethodPrometheus)
		return loc
	}
	loc.buckets = nb
	n := len(nb)
	observations := nb[n-1].Count
	if observations == 0 {
		loc.est = nanEstimate(observations, MethodPrometheus)
		return loc
	}
	rank := q * observations
	i := sort.Search(n-1, func(i int) bool { return nb[i].Count >= rank })
	loc.idx = i
	e := Estimate{Count: observations, Method: MethodPrometheus}
	switch {
	case i == n-1:
		e.Value = nb[n-2].UpperBound
		e.Lower = nb[n-2].UpperBound
		e.Upper = math.Inf(1)
		e.Clamp = ClampedHigh
	case i == 0 && nb[0].UpperBound <= 0:
		e.Value = nb[0].UpperBound
		e.Lower = math.Inf(-1)
		e.Upper = nb[0].UpperBound
		e.Clamp = ClampedLow
	default:
		var start float64
		end := nb[i].UpperBound
		count := nb[i].Count
		if i > 0 {
			start = nb[i-1].UpperBound
			count -= nb[i-1].Count
			rank -= nb[i-1].Count
		} else {
			e.InLowestBucket = true
		}
		loc.frac = rank / count
		e.Value = start + (end-start)*loc.frac
		e.Lower = start
		e.Upper = end
	}
	loc.est = e
	return loc
}

// Quantile returns the q-quantile (0 <= q <= 1) of the observations in b,
// with exactly the value Prometheus's histogram_quantile computes for
// classic histograms (promql.BucketQuantile, v0.316): b is normalised (see
// Normalize), the rank q·N is located by binary search over the cumulative
// counts, and the value is interpolated linearly inside that bucket; the
// lowest bucket starts at 0 when its bound is > 0, a rank in a lowest bucket
// with bound <= 0 returns that bound (ClampedLow), and a rank in the +Inf
// bucket returns the highest finite bound (ClampedHigh). NaN results: q NaN,
// no bucket, no +Inf bucket, fewer than two distinct bounds, or zero total
// count. q < 0 gives -Inf and q > 1 gives +Inf. b is not modified.
// Estimate.Lower/Upper are the edges of the bucket the rank fell in.
func Quantile(q float64, b []Bucket) Estimate {
	return locate(q, b).est
}

// Mean returns sum/count (the window's mean observation, e.g. seconds per
// request from rate(x_sum)/rate(x_count)). It returns NaN when count is 0,
// negative or NaN, since no mean exists then.
func Mean(sum, count float64) float64 {
	if !(count > 0) {
		return math.NaN()
	}
	return sum / count
}
