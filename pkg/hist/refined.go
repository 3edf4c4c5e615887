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
	// shape fitted to the bucket counts and the exact mean (see
	// QuantileWith).
	EstimatorRefined Estimator = "refined"
)

// QuantileWith returns the q-quantile of the observations in b using
// estimator e. sum and count are the histogram's _sum and _count over the
// same window (or their rates), used by EstimatorRefined only, through the
// exact mean sum/count (seconds for latencies). An empty estimator means
// EstimatorPrometheus.
//
// EstimatorPrometheus returns Quantile(q, b) unchanged.
//
// EstimatorRefined keeps Prometheus's bucket choice and bounds (Lower,
// Upper, Clamp, InLowestBucket and Count are those of Quantile) and only
// changes where inside [Lower, Upper] the value is placed:
//
//  1. Fit two one-parameter shapes whose mean equals sum/count exactly: a
//     log-normal (mean exp(mu + sigma²/2)) and a Weibull (mean
//     lambda·Γ(1 + 1/k)). Each spread is chosen by maximising the
//     multinomial log-likelihood of the bucket fractions (weighted as 200
//     pseudo-observations) plus a weak prior on the spread sd(ln x)
//     centred on 0.7 (log-normal sigma; Weibull k ≈ 1.28/spread), over
//     spreads in [0.02, 5]. Search: safeguarded parabolic interpolation on
//     ln(spread) (Brent-style), started at the spread of the bucket
//     midpoints' logs for the log-normal and just above the log-normal's
//     optimum for the Weibull, stopped within 0.4 % of the optimal
//     spread; the Weibull search stops early once a parabola close to its
//     optimum shows it trailing the log-normal by a safe margin, since it
//     cannot win then. About 13 likelihood evaluations per histogram on
//     average (8–24). The shape with the higher penalised likelihood is
//     kept.
//  2. If the rank is a fraction f of the way through its bucket's count,
//     return the fitted shape's point a fraction f of the way through its
//     probability mass inside the bucket:
//     F⁻¹(F(Lower) + f·(F(Upper) − F(Lower))). This is the histogram's own
//     count-matching rule with the uniform within-bucket density replaced
//     by the fitted one, so the value is always in [Lower, Upper] and the
//     bucket counts are respected exactly.
//
// Assumption: inside one bucket, latencies are shaped like a unimodal
// right-skewed distribution (log-normal or Weibull) matching the whole
// histogram and its mean. It helps most where buckets are coarse (vLLM's
// request-phase buckets start at 0.3 s, so a 20 ms median queue time is
// invisible to linear interpolation) and where the mean carries information
// the counts do not. It helps little, and can be worse than linear, on
// bimodal mixtures whose modes share a bucket. The estimator uses only
// fractions, so counts and per-second rates give the same answer; it
// therefore cannot tell how many observations there are and applies no
// minimum sample size (the mean of a small window is still that window's
// exact mean).
//
// It falls back to the Prometheus value with Method
// "linear-fallback: <reason>" when the quantile is undefined (NaN), the
// rank is in the +Inf bucket or in a lowest bucket with bound <= 0 (no
// finite interval to place it in), the lowest bound is <= 0, a count is
// negative or not finite, the mean is missing, not positive, or outside the
// range the bucket counts allow (e.g. _sum and _bucket disagree after a
// counter reset), the best spread is at the edge of the search range for
// both shapes (no converged fit), or the fit gives the bucket no
// probability mass. An unknown estimator falls back the same way. It never
// panics.
func QuantileWith(e Estimator, q float64, b []Bucket, sum, count float64) Estimate {
	switch e {
	case EstimatorPrometheus, "":
		return Quantile(q, b)
	case EstimatorRefined:
	default:
		return fallback(Quantile(q, b), fmt.Sprintf("unknown estimator %q", string(e)))
	}
	r := refiner{mean: Mean(sum, count)}
	return r.refine(locate(q, b))
}

// QuantilesWith returns QuantileWith(e, qs[i], b, sum, count) for every
// qs[i], in the same order (an empty slice for no qs), computing what the
// quantiles share once: b is normalised once and, for EstimatorRefined, the
// shape is fitted once (at the first quantile that needs it) and reused to
// place every quantile. Each result is identical to the corresponding
// QuantileWith call; the saving is one fit per extra quantile, which
// dominates refined's cost (see the package README's benchmarks). Use it
// when a panel shows several quantiles (p50, p90, p99) of the same buckets
// at the same step. It never panics and does not modify b or qs.
func QuantilesWith(e Estimator, qs []float64, b []Bucket, sum, count float64) []Estimate {
	out := make([]Estimate, len(qs))
	var nb []Bucket
	normalised := false
	r := refiner{mean: Mean(sum, count)}
	for i, q := range qs {
		var loc located
		if math.IsNaN(q) || q < 0 || q > 1 {
			loc = locateIn(q, nil)
		} else {
			if !normalised {
				nb, normalised = Normalize(b), true
			}
			loc = locateIn(q, nb)
		}
		switch e {
		case EstimatorPrometheus, "":
			out[i] = loc.est
		case EstimatorRefined:
			out[i] = r.refine(loc)
		default:
			out[i] = fallback(loc.est, fmt.Sprintf("unknown estimator %q", string(e)))
		}
	}
	return out
}

// refiner applies EstimatorRefined to located quantiles of one histogram,
// fitting its shape at most once.
type refiner struct {
	mean   float64 // sum/count, NaN when unknown
	fitted bool    // fit and reason are set
	fit    shape
	reason string // why no shape could be fitted; "" when fit is usable
}

// refine returns loc's estimate with its value placed by the fitted shape,
// or the Prometheus estimate with a linear-fallback method.
func (r *refiner) refine(loc located) Estimate {
	est := loc.est
	switch {
	case loc.idx < 0 || math.IsNaN(est.Value):
		return fallback(est, "quantile undefined")
	case est.Clamp == ClampedHigh:
		return fallback(est, "quantile in the +Inf bucket")
	case est.Clamp == ClampedLow:
		return fallback(est, "lowest bucket bound is not positive")
	}
	if !r.fitted {
		r.fit, r.reason = fitShape(loc.buckets, r.mean)
		r.fitted = true
	}
	if r.reason != "" {
		return fallback(est, r.reason)
	}
	v, ok := r.fit.placeInBucket(est.Lower, est.Upper, loc.frac)
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
