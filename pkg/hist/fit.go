package hist

import (
	"fmt"
	"math"
)

// Tuning of the refined fit. Shapes are searched through the log-normal's
// sigma (the standard deviation of ln x) in [0.02, 5]: 0.02 is a
// near-constant latency, 5 a spread over many orders of magnitude. A Weibull
// with shape k has sd(ln x) = π/(k·√6) ≈ 1.28/k, so its k is searched over
// the same spreads. The prior is a weak penalty pulling the spread towards
// 0.7 (typical of serving latencies) when the buckets cannot identify it,
// e.g. when nearly every request is in vLLM's first request-phase bucket
// [0, 0.3 s]; dataWeight makes the bucket fractions count as 200
// observations against it whatever the histogram's scale (counts or rates).
const (
	spreadMin    = 0.02
	spreadMax    = 5.0
	spreadPrior  = 0.7
	spreadPriorW = 0.8                // standard deviation of ln(spread) in the prior
	weibullK     = 1.2825498301618641 // π/√6: Weibull k·sd(ln x)
	dataWeight   = 200
	gridPoints   = 10
	goldenSteps  = 16
	minMass      = 1e-9 // fitted bucket probability below which we give up
)

// family is a two-parameter shape whose mean is pinned to the observed one,
// leaving one free spread parameter.
type family int

const (
	familyLogNormal family = iota // ln x ~ Normal(mu, sigma²)
	familyWeibull                 // P(X > x) = exp(-(x/lambda)^k)
)

// shape is a fitted distribution: for familyLogNormal (a, b) = (mu, sigma),
// for familyWeibull (a, b) = (ln lambda, k).
type shape struct {
	fam  family
	a, b float64
}

// shapeFor returns the member of fam with spread sd(ln x) = exp(t) and
// mean exp(lnMean).
func shapeFor(fam family, t, lnMean float64) shape {
	s := math.Exp(t)
	if fam == familyWeibull {
		k := weibullK / s
		lg, _ := math.Lgamma(1 + 1/k)
		return shape{fam: fam, a: lnMean - lg, b: k}
	}
	return shape{fam: fam, a: lnMean - s*s/2, b: s}
}

// mass returns P(l < X <= u) given ln l and ln u (±Inf allowed).
func (d shape) mass(lnL, lnU float64) float64 {
	if d.fam == familyWeibull {
		al := math.Exp(d.b * (lnL - d.a))
		au := math.Exp(d.b * (lnU - d.a))
		// exp(-al) - exp(-au), accurate in both tails.
		return math.Exp(-al) * -math.Expm1(al-au)
	}
	return normalMass((lnL-d.a)/d.b, (lnU-d.a)/d.b)
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
// shape's probability mass inside [lower, upper]; ok is false when the shape
// gives that interval (almost) no mass.
func (d shape) placeInBucket(lower, upper, f float64) (float64, bool) {
	lnL, lnU := math.Log(lower), math.Log(upper)
	if !(d.mass(lnL, lnU) >= minMass) {
		return 0, false
	}
	var v float64
	if d.fam == familyWeibull {
		al := math.Exp(d.b * (lnL - d.a))
		au := math.Exp(d.b * (lnU - d.a))
		var a float64 // (v/lambda)^k at the target
		if al > 1 {
			// Upper tail: interpolate survival probabilities.
			sl, su := math.Exp(-al), math.Exp(-au)
			a = -math.Log(sl - f*(sl-su))
		} else {
			fl, fu := -math.Expm1(-al), -math.Expm1(-au)
			a = -math.Log1p(-(fl + f*(fu-fl)))
		}
		v = math.Exp(d.a + math.Log(a)/d.b)
	} else {
		zl, zu := (lnL-d.a)/d.b, (lnU-d.a)/d.b
		var z float64
		if zl > 0 {
			sl := 0.5 * math.Erfc(zl/math.Sqrt2)
			su := 0.5 * math.Erfc(zu/math.Sqrt2)
			z = math.Sqrt2 * math.Erfcinv(2*(sl-f*(sl-su)))
		} else {
			fl := 0.5 * math.Erfc(-zl/math.Sqrt2)
			fu := 0.5 * math.Erfc(-zu/math.Sqrt2)
			z = -math.Sqrt2 * math.Erfcinv(2*(fl+f*(fu-fl)))
		}
		v = math.Exp(d.a + d.b*z)
	}
	if math.IsNaN(v) {
		return 0, false
	}
	return v, true
}

// fitProblem holds the non-empty buckets of a histogram as probabilities
// between edge indices into lnEdges.
type fitProblem struct {
	lnEdges []float64 // ln of every bucket edge used, -Inf for 0, +Inf for +Inf
	lo, hi  []int     // per non-empty bucket: indices into lnEdges
	p       []float64 // per non-empty bucket: fraction of observations
	lnMean  float64
}

// objective is the penalised log-likelihood of fam's member with spread
// exp(t): dataWeight · Σ p_i ln P_i − ((t − ln 0.7)/0.8)²/2.
func (fp *fitProblem) objective(fam family, t float64) float64 {
	d := shapeFor(fam, t, fp.lnMean)
	ll := 0.0
	for i, p := range fp.p {
		m := d.mass(fp.lnEdges[fp.lo[i]], fp.lnEdges[fp.hi[i]])
		ll += p * math.Log(math.Max(m, 1e-300))
	}
	z := (t - math.Log(spreadPrior)) / spreadPriorW
	return dataWeight*ll - z*z/2
}

// maximise finds the spread maximising the objective for fam: a coarse grid
// over ln(spread), then golden-section search around the best grid point.
// ok is false when the optimum is at the edge of the range or not finite.
func (fp *fitProblem) maximise(fam family) (t, val float64, ok bool) {
	a, c := math.Log(spreadMin), math.Log(spreadMax)
	step := (c - a) / (gridPoints - 1)
	best, bestVal := -1, math.Inf(-1)
	for i := 0; i < gridPoints; i++ {
		v := fp.objective(fam, a+float64(i)*step)
		if v > bestVal {
			best, bestVal = i, v
		}
	}
	if best < 0 {
		return 0, math.NaN(), false
	}
	lo := a + float64(max(best-1, 0))*step
	hi := a + float64(min(best+1, gridPoints-1))*step
	const invPhi = 0.6180339887498949
	x1 := hi - invPhi*(hi-lo)
	x2 := lo + invPhi*(hi-lo)
	f1, f2 := fp.objective(fam, x1), fp.objective(fam, x2)
	for i := 0; i < goldenSteps; i++ {
		if f1 < f2 {
			lo, x1, f1 = x1, x2, f2
			x2 = lo + invPhi*(hi-lo)
			f2 = fp.objective(fam, x2)
		} else {
			hi, x2, f2 = x2, x1, f1
			x1 = hi - invPhi*(hi-lo)
			f1 = fp.objective(fam, x1)
		}
	}
	t = (lo + hi) / 2
	val = math.Max(f1, f2)
	if math.IsNaN(val) || math.IsInf(val, 0) || t <= a+step/4 || t >= c-step/4 {
		return t, val, false
	}
	return t, val, true
}

// fitShape fits a log-normal and a Weibull, each with mean exactly m, to
// normalised buckets nb (last bound +Inf) and returns the one with the
// higher penalised likelihood. It returns a non-empty reason when neither
// can be used.
func fitShape(nb []Bucket, m float64) (shape, string) {
	if math.IsNaN(m) || math.IsInf(m, 0) {
		return shape{}, "mean not available"
	}
	if m <= 0 {
		return shape{}, "mean not positive"
	}
	if nb[0].UpperBound <= 0 {
		return shape{}, "a bucket bound is not positive"
	}
	total := nb[len(nb)-1].Count
	if !(total > 0) || math.IsInf(total, 0) {
		return shape{}, "total count not positive and finite"
	}
	var fp fitProblem
	// Backing arrays sized for the usual bucket counts so a fit does not
	// allocate.
	var edgeBuf [48]float64
	var loBuf, hiBuf [48]int
	var pBuf [48]float64
	fp.lnEdges, fp.lo, fp.hi, fp.p = edgeBuf[:0], loBuf[:0], hiBuf[:0], pBuf[:0]
	fp.lnMean = math.Log(m)

	minMean, maxMean := 0.0, 0.0
	prevCount, prevBound := 0.0, 0.0
	lastEdge := -1 // index in lnEdges of prevBound, -1 when not yet added
	for _, x := range nb {
		if math.IsNaN(x.Count) || math.IsInf(x.Count, 0) || x.Count < 0 {
			return shape{}, "a bucket count is negative or not finite"
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
		return shape{}, fmt.Sprintf("mean %g outside the range [%g, %g] the buckets allow", m, minMean, maxMean)
	}

	tLN, vLN, okLN := fp.maximise(familyLogNormal)
	tW, vW, okW := fp.maximise(familyWeibull)
	switch {
	case okLN && (!okW || vLN >= vW):
		return shapeFor(familyLogNormal, tLN, fp.lnMean), ""
	case okW:
		return shapeFor(familyWeibull, tW, fp.lnMean), ""
	}
	return shape{}, "fit did not converge (spread at the edge of its range)"
}
