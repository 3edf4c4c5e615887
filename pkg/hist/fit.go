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
// The search stops when the optimum it predicts is within fitTol in
// ln(spread) (0.4 % of the spread) of its best point; see maximise.
const (
	spreadMin     = 0.02
	spreadMax     = 5.0
	spreadPrior   = 0.7
	spreadPriorW  = 0.8                // standard deviation of ln(spread) in the prior
	weibullK      = 1.2825498301618641 // π/√6: Weibull k·sd(ln x)
	dataWeight    = 200
	fitTol        = 0.004 // stopping step in ln(spread)
	startStepLN   = 0.3   // first step of the log-normal search, in ln(spread)
	startStepW    = 0.15  // first step of the Weibull search
	weibullOffset = 0.2   // Weibull search start: the log-normal optimum plus this, in ln(spread)
	maxEvals      = 40    // objective evaluations per stage of one search, a safety limit
	// A search is cut short when the parabola through its bracket (a, c)
	// peaks more than skipMargin + skipCubic·(c−a)³ below the other shape's
	// best value, for brackets at most 1 wide in ln(spread); see maximise.
	skipMargin = 1.0
	skipCubic  = 30.0
	minMass    = 1e-9 // fitted bucket probability below which we give up
	minProb    = 1e-300
)

var (
	lnSpreadMin   = math.Log(spreadMin)
	lnSpreadMax   = math.Log(spreadMax)
	lnSpreadPrior = math.Log(spreadPrior)
	lnMinProb     = math.Log(minProb)
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
	t0      float64   // starting guess for ln(spread), see init
	x, tail []float64 // scratch per edge, see objective
	evals   int       // objective evaluations so far (tests and tuning)

	edgeBuf, pBuf, xBuf, tailBuf [48]float64
	loBuf, hiBuf                 [48]int
}

// objective is the penalised log-likelihood of fam's member with spread
// exp(t): dataWeight · Σ p_i ln P_i − ((t − ln 0.7)/0.8)²/2, where P_i is
// the member's probability of bucket i, floored at 1e-300. Per-edge terms
// are computed once and shared by the two buckets that meet there.
func (fp *fitProblem) objective(fam family, t float64) float64 {
	fp.evals++
	d := shapeFor(fam, t, fp.lnMean)
	ll := 0.0
	if fam == familyWeibull {
		// edge i: x = (v/lambda)^k, so P(X > v) = exp(-x) and
		// ln P(l < X <= u) = -x_l + ln(1 - exp(x_l - x_u)): one exp per
		// edge, and no underflow of the survival probability.
		for i, e := range fp.lnEdges {
			fp.x[i] = math.Exp(d.b * (e - d.a))
		}
		for i, p := range fp.p {
			xl, xu := fp.x[fp.lo[i]], fp.x[fp.hi[i]]
			lm := math.Log(-math.Expm1(xl-xu)) - xl
			if !(lm > lnMinProb) { // also catches NaN (both edges at +Inf)
				lm = lnMinProb
			}
			ll += p * lm
		}
	} else {
		// edge i: x = z-score, tail = P(Z beyond |z|) on z's side.
		inv := 1 / d.b
		for i, e := range fp.lnEdges {
			z := (e - d.a) * inv
			fp.x[i], fp.tail[i] = z, 0.5*math.Erfc(math.Abs(z)*(1/math.Sqrt2))
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
			ll += p * math.Log(math.Max(m, minProb))
		}
	}
	z := (t - lnSpreadPrior) / spreadPriorW
	return dataWeight*ll - z*z/2
}

// maximise finds the log-spread t in [ln 0.02, ln 5] maximising fam's
// objective, starting from the guess t0 with step h (a Brent-style
// safeguarded parabolic search):
//
//  1. Bracket: evaluate t0−h, t0, t0+h and, while an outer point is the
//     best, walk uphill with doubling steps until the middle point is the
//     highest of three. Reaching a range edge while the objective still
//     rises there means there is no interior optimum: ok is false.
//  2. Refine: evaluate the vertex of the parabola through the bracketing
//     points a < b < c (a golden-section step into the larger half when
//     the vertex is unusable, a probe fitTol/2 away when it nearly
//     coincides with the best point b), keep the best point and its two
//     neighbours, and stop when the vertex is within fitTol of b and a
//     neighbour is within fitTol too (so the parabola's slope and
//     curvature there are local). The vertex is returned: parabolic
//     interpolation converges superlinearly on this smooth objective, so
//     it is within a small fraction of fitTol of the optimum.
//  3. Give up early (ok false) when the bracket is at most 1 wide and its
//     parabola peaks more than skipMargin + skipCubic·(c−a)³ below beat:
//     this shape cannot beat the one that scored beat. The cubic term
//     covers the parabola's underestimate of the true peak, which grows
//     like the cube of the bracket width; the worst measured over the
//     accuracy scenarios was about 10·(c−a)³ (0.75 at width 0.4, 9 at 1),
//     a third of the allowance. TestFitMatchesExhaustiveSearch checks
//     that the shape chosen is the exhaustive search's. Pass beat = −Inf
//     to always search fully.
//
// val is the objective at the best point evaluated, which differs from
// the value at t by O(fitTol²). ok is false when there is no interior
// optimum, a value is not finite, the search gave up against beat, or
// maxEvals evaluations per stage did not settle it.
func (fp *fitProblem) maximise(fam family, t0, h, beat float64) (t, val float64, ok bool) {
	lo, hi := lnSpreadMin, lnSpreadMax
	t0 = math.Max(lo+h, math.Min(hi-h, t0))
	a, b, c := t0-h, t0, t0+h
	fa, fb, fc := fp.objective(fam, a), fp.objective(fam, b), fp.objective(fam, c)
	for n := 3; !(fb >= fa && fb >= fc); n++ {
		if n >= maxEvals || math.IsNaN(fa) || math.IsNaN(fb) || math.IsNaN(fc) {
			return b, math.NaN(), false
		}
		if fc > fa { // uphill to the right
			if c >= hi {
				return c, fc, false
			}
			next := math.Min(hi, c+2*(c-b))
			a, fa, b, fb = b, fb, c, fc
			c, fc = next, fp.objective(fam, next)
		} else {
			if a <= lo {
				return a, fa, false
			}
			next := math.Max(lo, a-2*(b-a))
			c, fc, b, fb = b, fb, a, fa
			a, fa = next, fp.objective(fam, next)
		}
	}
	if math.IsInf(fb, 0) {
		return b, fb, false
	}
	for n := 0; n < maxEvals; n++ {
		u, peak := parabola(a, fa, b, fb, c, fc)
		if w := c - a; w <= 1 && peak < beat-(skipMargin+skipCubic*w*w*w) {
			return u, peak, false
		}
		if !(u > a && u < c) {
			// Golden-section step into the larger half.
			if c-b > b-a {
				u = b + 0.381966*(c-b)
			} else {
				u = b - 0.381966*(b-a)
			}
		}
		step := u - b
		if math.Abs(step) <= fitTol && math.Min(b-a, c-b) <= fitTol {
			return u, fb, true
		}
		if math.Abs(step) < fitTol/2 {
			// Too close to tell apart from b: probe fitTol/2 away, on the
			// side the vertex points to (or the larger half).
			if step > 0 || (step == 0 && c-b > b-a) {
				u = b + fitTol/2
			} else {
				u = b - fitTol/2
			}
		}
		fu := fp.objective(fam, u)
		if math.IsNaN(fu) {
			return u, fu, false
		}
		if fu > fb {
			if u < b {
				c, fc = b, fb
			} else {
				a, fa = b, fb
			}
			b, fb = u, fu
		} else if u < b {
			a, fa = u, fu
		} else {
			c, fc = u, fu
		}
	}
	return b, fb, false
}

// parabola returns the abscissa u and value peak of the vertex of the
// parabola through (a, fa), (b, fb), (c, fc) with a < b < c; u is NaN when
// the points are collinear.
func parabola(a, fa, b, fb, c, fc float64) (u, peak float64) {
	p := (b - a) * (fb - fc)
	q := (b - c) * (fb - fa)
	den := p - q
	if den == 0 {
		return math.NaN(), math.NaN()
	}
	u = b - 0.5*((b-a)*p-(b-c)*q)/den
	// f(t) = curv·(t − u)² + peak, curv the second divided difference.
	curv := ((fc-fb)/(c-b) - (fb-fa)/(b-a)) / (c - a)
	return u, fb - curv*(b-u)*(b-u)
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
	tLN, vLN, okLN := fp.maximise(familyLogNormal, fp.t0, startStepLN, math.Inf(-1))
	// Both families are indexed by the same spread sd(ln x), and their
	// optima are close, the Weibull's usually somewhat wider: start it
	// just above the log-normal's.
	tW0 := fp.t0
	if okLN {
		tW0 = tLN + weibullOffset
	}
	beat := math.Inf(-1)
	if okLN {
		beat = vLN
	}
	tW, vW, okW := fp.maximise(familyWeibull, tW0, startStepW, beat)
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
	fp.t0 = fp.startGuess()
	n := len(fp.lnEdges)
	if n <= len(fp.xBuf) {
		fp.x, fp.tail = fp.xBuf[:n], fp.tailBuf[:n]
	} else {
		fp.x, fp.tail = make([]float64, n), make([]float64, n)
	}
	return ""
}

// startGuess returns a starting ln(spread) for the search: the log of the
// standard deviation of ln x over the buckets, each bucket's observations
// put at the middle of its log range with the variance of a uniform spread
// over that range (the open-ended lowest and +Inf buckets count as half a
// unit of ln x beyond their finite edge). The prior's centre when only one
// bucket has observations.
func (fp *fitProblem) startGuess() float64 {
	if len(fp.p) < 2 {
		return lnSpreadPrior
	}
	var s1, s2, w float64
	for i, p := range fp.p {
		l, u := fp.lnEdges[fp.lo[i]], fp.lnEdges[fp.hi[i]]
		var c, v float64
		switch {
		case math.IsInf(l, -1):
			c, v = u-0.5, 0.25
		case math.IsInf(u, 1):
			c, v = l+0.5, 0.25
		default:
			c, v = (l+u)/2, (u-l)*(u-l)/12
		}
		s1 += p * c
		s2 += p * c * c
		w += p * v
	}
	variance := s2 - s1*s1 + w
	if !(variance > 0) {
		return lnSpreadPrior
	}
	return math.Max(lnSpreadMin, math.Min(lnSpreadMax, 0.5*math.Log(variance)))
}
