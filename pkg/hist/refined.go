package hist

import (
	"fmt"
	"math"
)

// Estimator selects how a quantile is placed inside its bucket.
type Estimator string

const (
	// EstimatorPrometheus interpolates linearly inside the bucket, exactly
	// as histogram_quantile does (see Quantile). It is the default.
	EstimatorPrometheus Estimator = "prometheus"
	// EstimatorRefined places the quantile inside the same bucket using a
	// log-normal shape fitted to the bucket counts and the exact mean (see
	// QuantileWith).
	EstimatorRefined Estimator = "refined"
)

// QuantileWith returns the q-quantile of the observations in b using
// estimator e. sum and count are the histogram's _sum and _count over the
// same window (or their rates), used by EstimatorRefined only, through the
// exact mean sum/count. An empty estimator means EstimatorPrometheus.
//
// EstimatorPrometheus returns Quantile(q, b) unchanged.
//
// EstimatorRefined keeps Prometheus's bucket choice and bounds (so Lower,
// Upper, Clamp and InLowestBucket are those of Quantile) and only changes
// where inside [Lower, Upper] the value is placed:
//
//  1. Fit a log-normal LN(mu, sigma) whose mean exp(mu + sigma²/2) equals
//     sum/count exactly, choosing sigma by maximising the multinomial
//     log-likelihood of the bucket fractions (weighted as 200
//     pseudo-observations) plus a weak log-normal prior on sigma centred on
//     0.7; a 10-point grid over sigma in [0.02, 5] on a log scale followed
//     by golden-section refinement.
//  2. If the rank is a fraction f of the way through its bucket's count,
//     return the fitted distribution's point a fraction f of the way
//     through its probability mass inside the bucket:
//     F⁻¹(F(Lower) + f·(F(Upper) − F(Lower))). This is the histogram's own
//     count-matching rule with the uniform within-bucket density replaced
//     by the fitted one, so the value is always in [Lower, Upper].
//
// The assumption is that, inside one bucket, latencies are shaped like a
// log-normal that matches the whole histogram and its mean; it helps most
// where buckets are coarse (vLLM's request-phase buckets start at 0.3 s) and
// where the mean carries information the counts do not. The estimator uses
// only fractions, so counts and per-second rates give the same answer; it
// therefore applies no minimum number of observations.
//
// It falls back to the Prometheus value with Method
// "linear-fallback: <reason>" when the quantile is undefined (NaN), the
// rank is in the +Inf bucket or a lowest bucket with bound <= 0 (no finite
// interval to place it in), a bound is <= 0, a count is negative or not
// finite, the mean is missing, not positive, or outside the range the bucket
// counts allow (e.g. _sum and _bucket disagree after a counter reset), the
// fitted sigma ends at the search range's edge (the fit did not converge to
// an interior optimum), or the fit gives the bucket no probability mass.
// An unknown estimator falls back the same way. It never panics.
func QuantileWith(e Estimator, q float64, b []Bucket, sum, count float64) Estimate {
	switch e {
	case EstimatorPrometheus, "":
		return Quantile(q, b)
	case EstimatorRefined:
	default:
		return fallback(Quantile(q, b), fmt.Sprintf("unknown estimator %q", string(e)))
	}
	loc := locate(q, b)
	est := loc.est
	switch {
	case loc.idx < 0 || math.IsNaN(est.Value):
		return fallback(est, "quantile undefined")
	case est.Clamp == ClampedHigh:
		return fallback(est, "quantile in the +Inf bucket")
	case est.Clamp == ClampedLow:
		return fallback(est, "lowest bucket bound is not positive")
	}
	fit, reason := fitShape(loc.buckets, Mean(sum, count))
	if reason != "" {
		return fallback(est, reason)
	}
	v, ok := fit.placeInBucket(est.Lower, est.Upper, loc.frac)
	if !ok {
		return fallback(est, "fit puts no mass in the bucket")
	}
	est.Value = math.Min(math.Max(v, est.Lower), est.Upper)
	est.Method = MethodRefined
	return est
}

func fallback(e Estimate, reason string) Estimate {
	e.Method = methodFallback + reason
	return e
}
