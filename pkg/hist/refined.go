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

// Tuning of the refined fit. The search range bounds the log-normal's
// shape sigma (the standard deviation of ln x): 0.02 is a near-constant
// latency, 5 a spread of many orders of magnitude. The prior is a weak
// penalty (about what priorWeight observations would say) pulling sigma
// towards typical serving-latency spreads (0.3..1.5) when the buckets
// cannot identify it, e.g. when nearly every request is in vLLM's first
// request-phase bucket [0, 0.3 s].
const (
	sigmaMin    = 0.02
	sigmaMax    = 5.0
	sigmaPrior  = 0.7
	sigmaPriorW = 0.8 // standard deviation of ln(sigma) in the prior
	dataWeight  = 200 // pseudo-observations the bucket fractions count as
	gridPoints  = 10
	goldenSteps = 18
	minMass     = 1e-9 // fitted bucket probability below which we give up
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
	fit, reason := fitLogNormal(loc.buckets, Mean(sum, count))
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

// logNormal is LN(mu, sigma): ln x ~ Normal(mu, sigma²).
type logNormal struct{ mu, sigma float64 }

// fitProblem holds the non-empty buckets of a histogram as probabilities
// between edge indices into lnEdges.
type fitProblem struct {
	lnEdges []float64 // ln of every bucket edge used, -Inf for 0, +Inf for +Inf
	lo, hi  []int     // per non-empty bucket: indices into lnEdges
	p       []float64 // per non-empty bucket: fraction of observations
	lnMean  float64
	zs      []float64 // scratch: standardised edges
}

// fitLogNormal fits LN(mu, sigma) with mean exactly m to normalised buckets
// nb (last bound +Inf). It returns a non-empty reason when it cannot.
func fitLogNormal(nb []Bucket, m float64) (logNormal, string) {
	if math.IsNaN(m) || math.IsInf(m, 0) {
		return logNormal{}, "mean not available"
	}
	if m <= 0 {
		return logNormal{}, "mean not positive"
	}
	if nb[0].UpperBound <= 0 {
		return logNormal{}, "a bucket bound is not positive"
	}
	total := nb[len(nb)-1].Count
	if !(total > 0) || math.IsInf(total, 0) {
		return logNormal{}, "total count not positive and finite"
	}
	var fp fitProblem
	// Backing arrays sized for the common case so a fit does not allocate
	// per bucket.
	var edgeBuf [48]float64
	var loBuf, hiBuf [48]int
	var pBuf, zBuf [48]float64
	fp.lnEdges, fp.lo, fp.hi, fp.p, fp.zs = edgeBuf[:0], loBuf[:0], hiBuf[:0], pBuf[:0], zBuf[:0]
	fp.lnMean = math.Log(m)

	minMean, maxMean := 0.0, 0.0
	prevCount, prevBound := 0.0, 0.0
	lastEdge := -1 // index in lnEdges of prevBound, -1 when not yet added
	for _, x := range nb {
		if math.IsNaN(x.Count) || math.IsInf(x.Count, 0) || x.Count < 0 {
			return logNormal{}, "a bucket count is negative or not finite"
		}
		n := x.Count - prevCount
		if n > 0 {
			p := n / total
			minMean += p * prevBound
			maxMean += p * x.UpperBound
			if lastEdge < 0 {
				fp.lnEdges = append(fp.lnEdges, math.Log(prevBound))
				lastEdge = len(fp.lnEdges) - 1
			}
			fp.lnEdges = append(fp.lnEdges, math.Log(x.UpperBound))
			fp.lo = append(fp.lo, lastEdge)
			fp.hi = append(fp.hi, len(fp.lnEdges)-1)
			fp.p = append(fp.p, p)
			lastEdge = len(fp.lnEdges) - 1
		} else {
			lastEdge = -1
		}
		prevCount, prevBound = x.Count, x.UpperBound
	}
	const slack = 1e-9
	if m < minMean*(1-slack) || m > maxMean*(1+slack) {
		return logNormal{}, fmt.Sprintf("mean %g outside the range [%g, %g] the buckets allow", m, minMean, maxMean)
	}
	fp.zs = fp.zs[:len(fp.lnEdges)]

	// Coarse grid over ln(sigma), then golden-section search around the
	// best grid point (the objective is smooth and, in practice, unimodal
	// near its maximum).
	a, c := math.Log(sigmaMin), math.Log(sigmaMax)
	step := (c - a) / (gridPoints - 1)
	best, bestVal := 0, math.Inf(-1)
	for i := 0; i < gridPoints; i++ {
		v := fp.objective(a + float64(i)*step)
		if v > bestVal {
			best, bestVal = i, v
		}
	}
	lo := a + float64(max(best-1, 0))*step
	hi := a + float64(min(best+1, gridPoints-1))*step
	const invPhi = 0.6180339887498949
	x1 := hi - invPhi*(hi-lo)
	x2 := lo + invPhi*(hi-lo)
	f1, f2 := fp.objective(x1), fp.objective(x2)
	for i := 0; i < goldenSteps; i++ {
		if f1 < f2 {
			lo, x1, f1 = x1, x2, f2
			x2 = lo + invPhi*(hi-lo)
			f2 = fp.objective(x2)
		} else {
			hi, x2, f2 = x2, x1, f1
			x1 = hi - invPhi*(hi-lo)
			f1 = fp.objective(x1)
		}
	}
	t := (lo + hi) / 2
	if math.IsNaN(f1) || math.IsNaN(f2) {
		return logNormal{}, "fit did not converge"
	}
	if t <= a+step/4 || t >= c-step/4 {
		return logNormal{}, "fit did not converge (sigma at the edge of its range)"
	}
	s := math.Exp(t)
	return logNormal{mu: fp.lnMean - s*s/2, sigma: s}, ""
}

// objective is the penalised log-likelihood of sigma = exp(t).
func (fp *fitProblem) objective(t float64) float64 {
	s := math.Exp(t)
	mu := fp.lnMean - s*s/2
	for i, e := range fp.lnEdges {
		fp.zs[i] = (e - mu) / s
	}
	ll := 0.0
	for i, p := range fp.p {
		mass := normalMass(fp.zs[fp.lo[i]], fp.zs[fp.hi[i]])
		ll += p * math.Log(math.Max(mass, 1e-300))
	}
	d := (t - math.Log(sigmaPrior)) / sigmaPriorW
	return dataWeight*ll - d*d/2
}

// normalMass is P(zl < Z <= zu) for a standard normal Z, computed from the
// nearer tail so that buckets far from the median keep their precision.
func normalMass(zl, zu float64) float64 {
	if zl > 0 {
		return 0.5 * (math.Erfc(zl/math.Sqrt2) - math.Erfc(zu/math.Sqrt2))
	}
	return 0.5 * (math.Erfc(-zu/math.Sqrt2) - math.Erfc(-zl/math.Sqrt2))
}

// placeInBucket returns the point a fraction f of the way through the
// fitted probability mass inside [lower, upper]; ok is false when the fit
// gives that interval (almost) no mass.
func (d logNormal) placeInBucket(lower, upper, f float64) (float64, bool) {
	zl := (math.Log(lower) - d.mu) / d.sigma
	zu := (math.Log(upper) - d.mu) / d.sigma
	if normalMass(zl, zu) < minMass {
		return 0, false
	}
	var z float64
	if zl > 0 {
		// Upper tail: work with survival probabilities.
		sl := 0.5 * math.Erfc(zl/math.Sqrt2)
		su := 0.5 * math.Erfc(zu/math.Sqrt2)
		st := sl - f*(sl-su)
		z = math.Sqrt2 * math.Erfcinv(2*st)
	} else {
		fl := 0.5 * math.Erfc(-zl/math.Sqrt2)
		fu := 0.5 * math.Erfc(-zu/math.Sqrt2)
		ft := fl + f*(fu-fl)
		z = -math.Sqrt2 * math.Erfcinv(2*ft)
	}
	v := math.Exp(d.mu + d.sigma*z)
	if math.IsNaN(v) {
		return 0, false
	}
	return v, true
}
