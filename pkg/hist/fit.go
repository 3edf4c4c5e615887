package hist

import (
	"fmt"
	"math"
	"sync"
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
	gridPoints   = 8
	refineRounds = 2
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
	x, tail []float64 // scratch per edge, see objective

	edgeBuf, pBuf, xBuf, tailBuf [48]float64
	loBuf, hiBuf                 [48]int
}

// objective is the penalised log-likelihood of fam's member with spread
// exp(t): dataWeight · Σ p_i ln P_i − ((t − ln 0.7)/0.8)²/2. Tail
// probabilities are computed once per edge and shared by the two buckets
// that meet there.
func (fp *fitProblem) objective(fam family, t float64) float64 {
	d := shapeFor(fam, t, fp.lnMean)
	ll := 0.0
	if fam == familyWeibull {
		// edge i: x = (v/lambda)^k, tail = exp(-x) = P(X > v).
		for i, e := range fp.lnEdges {
			x := math.Exp(d.b * (e - d.a))
			fp.x[i], fp.tail[i] = x, math.Exp(-x)
		}
		for i, p := range fp.p {
			l, u := fp.lo[i], fp.hi[i]
			m := fp.tail[l] * -math.Expm1(fp.x[l]-fp.x[u])
			ll += p * math.Log(math.Max(m, 1e-300))
		}
	} else {
		// edge i: x = z-score, tail = P(Z beyond |z|) on z's side.
		for i, e := range fp.lnEdges {
			z := (e - d.a) / d.b
			fp.x[i], fp.tail[i] = z, 0.5*math.Erfc(math.Abs(z)/math.Sqrt2)
		}
		for i, p := range fp.p {
			l, u := fp.lo[i], fp.hi[i]
			var m float64
			switch {
			case fp.x[l] > 0: // both edges above the median: S(l) - S(u)
				m = fp.tail[l] - fp.tail[u]
			case fp.x[u] <= 0: // both below: F(u) - F(l)
				m = fp.tail[u] - fp.tail[l]
			default: // straddles the median
				m = 1 - fp.tail[l] - fp.tail[u]
			}
			ll += p * math.Log(math.Max(m, 1e-300))
		}
	}
	z := (t - math.Log(spreadPrior)) / spreadPriorW
	return dataWeight*ll - z*z/2
}

// maximise finds the spread maximising the objective for fam: a coarse
// grid over ln(spread), then two rounds of successive parabolic
// interpolation (the vertex of the parabola through three points), the
// second on a four times finer spacing. The objective is smooth, so this
// reaches the optimum to about 1% in sigma with 14 evaluations. ok is false
// when the best grid point is at the edge of the range (no interior
// optimum) or the objective is not finite.
func (fp *fitProblem) maximise(fam family) (t, val float64, ok bool) {
	a, c := math.Log(spreadMin), math.Log(spreadMax)
	h := (c - a) / (gridPoints - 1)
	var f [gridPoints]float64
	best := 0
	for i := range f {
		f[i] = fp.objective(fam, a+float64(i)*h)
		if f[i] > f[best] {
			best = i
		}
	}
	if best == 0 || best == gridPoints-1 || math.IsNaN(f[best]) || math.IsInf(f[best], 0) {
		return 0, math.NaN(), false
	}
	t, val = a+float64(best)*h, f[best]
	fl, fr := f[best-1], f[best+1]
	for round := 0; round < refineRounds; round++ {
		t = vertex(t, h, fl, val, fr)
		h /= 4
		fl, val, fr = fp.objective(fam, t-h), fp.objective(fam, t), fp.objective(fam, t+h)
	}
	if fl > val || fr > val {
		// Take the better neighbour rather than extrapolate.
		if fl > fr {
			t, val = t-h, fl
		} else {
			t, val = t+h, fr
		}
	} else {
		t = vertex(t, h, fl, val, fr)
		val = fp.objective(fam, t)
	}
	if math.IsNaN(val) || math.IsInf(val, 0) {
		return t, val, false
	}
	return t, val, true
}

// vertex returns the abscissa of the maximum of the parabola through
// (t−h, fl), (t, fm), (t+h, fr), limited to [t−h, t+h]; t when the three
// points are not concave.
func vertex(t, h, fl, fm, fr float64) float64 {
	den := fl - 2*fm + fr
	if !(den < 0) {
		return t
	}
	off := h * (fl - fr) / (2 * den)
	return t + math.Max(-h, math.Min(h, off))
}

// fitPool recycles fit scratch space: a fitProblem points into its own
// arrays, so it would otherwise be allocated on the heap for every quantile.
var fitPool = sync.Pool{New: func() any { return new(fitProblem) }}

// fitShape fits a log-normal and a Weibull, each with mean exactly m, to
// normalised buckets nb (last bound +Inf) and returns the one with the
// higher penalised likelihood. It returns a non-empty reason when neither
// can be used.
func fitShape(nb []Bucket, m float64) (shape, string) {
	fp := fitPool.Get().(*fitProblem)
	defer fitPool.Put(fp)
	if reason := fp.init(nb, m); reason != "" {
		return shape{}, reason
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

// init fills fp from normalised buckets nb and mean m, or returns why the
// histogram cannot be fitted.
func (fp *fitProblem) init(nb []Bucket, m float64) string {
	if math.IsNaN(m) || math.IsInf(m, 0) {
		return "mean not available"
	}
	if m <= 0 {
		return "mean not positive"
	}
	if nb[0].UpperBound <= 0 {
		return "a bucket bound is not positive"
	}
	total := nb[len(nb)-1].Count
	if !(total > 0) || math.IsInf(total, 0) {
		return "total count not positive and finite"
	}
	// Backing arrays sized for the usual bucket counts so a fit does not
	// allocate per bucket.
	fp.lnEdges, fp.lo, fp.hi, fp.p = fp.edgeBuf[:0], fp.loBuf[:0], fp.hiBuf[:0], fp.pBuf[:0]
	fp.lnMean = math.Log(m)

	minMean, maxMean := 0.0, 0.0
	prevCount, prevBound := 0.0, 0.0
	lastEdge := -1 // index in lnEdges of prevBound, -1 when not yet added
	for _, x := range nb {
		if math.IsNaN(x.Count) || math.IsInf(x.Count, 0) || x.Count < 0 {
			return "a bucket count is negative or not finite"
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
		return fmt.Sprintf("mean %g outside the range [%g, %g] the buckets allow", m, minMean, maxMean)
	}
	n := len(fp.lnEdges)
	if n <= len(fp.xBuf) {
		fp.x, fp.tail = fp.xBuf[:n], fp.tailBuf[:n]
	} else {
		fp.x, fp.tail = make([]float64, n), make([]float64, n)
	}
	return ""
}
