package slo

import (
	"math"
	"math/rand"
	"testing"
	"time"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/promql"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/inferscope/inferscope-llm-datasource/pkg/hist"
)

// small is the histogram of the reference notes' oracle run: 100 requests,
// 10 ≤ 0.1 s, 60 ≤ 0.5 s, 90 ≤ 1 s.
var small = []hist.Bucket{bk(0.1, 10), bk(0.5, 60), bk(1, 90), bk(math.Inf(1), 100)}

func bk(le, c float64) hist.Bucket { return hist.Bucket{UpperBound: le, Count: c} }

func TestAttainmentByHand(t *testing.T) {
	cases := []struct {
		threshold, value, lower, upper float64
		exact                          bool
		below, above                   float64
	}{
		// On a bound: exact, 60 of 100.
		{0.5, 0.6, 0.6, 0.6, true, 0, 0},
		// 0.3 lies halfway between 0.1 and 0.5: 10 + (60−10)·0.5 = 35 → 0.35,
		// and the truth is between the exact 10/100 and 60/100.
		{0.3, 0.35, 0.1, 0.6, false, 0.1, 0.5},
		// Under the lowest bound: interpolated from 0 → 0.05 in [0, 0.1].
		{0.05, 0.05, 0, 0.1, false, 0, 0.1},
		// Above the highest finite bound: nothing of +Inf is counted, 0.9,
		// but the truth may be anything up to 1.
		{2, 0.9, 0.9, 1, false, 1, math.Inf(1)},
	}
	for _, c := range cases {
		cs := LatencyCounts(c.threshold, small)
		assert.Equal(t, 100.0, cs.Total)
		v, lo, hi := cs.Attainment()
		assert.InDelta(t, c.value, v, 1e-12, "value at %v", c.threshold)
		assert.InDelta(t, c.lower, lo, 1e-12, "lower at %v", c.threshold)
		assert.InDelta(t, c.upper, hi, 1e-12, "upper at %v", c.threshold)
		th := Locate(c.threshold, small)
		assert.Equal(t, c.exact, th.Exact, "exact at %v", c.threshold)
		if !c.exact {
			assert.Equal(t, c.below, th.Below)
			assert.Equal(t, c.above, th.Above)
			assert.Contains(t, th.String(), "is not a bucket bound")
		}
	}
	assert.Equal(t, "3 s is not a bucket bound: it lies between le=2.5 and le=5, so attainment is interpolated between the exact fractions at those bounds",
		Locate(3, []hist.Bucket{bk(1, 0), bk(2.5, 0), bk(5, 0), bk(math.Inf(1), 0)}).String())
}

func TestBudgetAndBurnByHand(t *testing.T) {
	// At 1 s, 90 of 100 are good: error ratio 0.1.
	c := LatencyCounts(1, small)
	// Target 0.99 allows 1 bad in 100: burn 0.1/0.01 = 10; 10 bad of 1
	// allowed leaves 1 − 10 = −9 (overspent nine times).
	assert.InDelta(t, 10, BurnRate(c, 0.99), 1e-9)
	b := BudgetRemaining(c, 0.99)
	assert.InDelta(t, -9, b.Remaining, 1e-9)
	// Target 0.8 allows 20 bad: 10 spent, half the budget left; burn 0.5.
	assert.InDelta(t, 0.5, BudgetRemaining(c, 0.8).Remaining, 1e-12)
	assert.InDelta(t, 0.5, BurnRate(c, 0.8), 1e-12)
	// At 0.3 s (interpolated 35 good) with target 0.5: 65 bad of 50 allowed
	// → 1 − 1.3 = −0.3; bounds from 10 good (−0.8) and 60 good (0.2).
	b = BudgetRemaining(LatencyCounts(0.3, small), 0.5)
	assert.InDelta(t, -0.3, b.Remaining, 1e-12)
	assert.InDelta(t, -0.8, b.Lower, 1e-12)
	assert.InDelta(t, 0.2, b.Upper, 1e-12)
	// Error-ratio objective: 3 aborted of 200 finished, target 0.99 → ratio
	// 0.015, burn 1.5, budget 1 − 3/2 = −0.5.
	e := ErrorCounts(3, 200)
	assert.InDelta(t, 1.5, BurnRate(e, 0.99), 1e-12)
	assert.InDelta(t, -0.5, BudgetRemaining(e, 0.99).Remaining, 1e-12)
}

func TestNewObjectiveStartsAtFullBudget(t *testing.T) {
	// No bad request: exactly 100 %, for any target.
	good := []hist.Bucket{bk(1, 500), bk(2, 500), bk(math.Inf(1), 500)}
	for _, target := range []float64{0.9, 0.99, 0.999, 0.99999} {
		assert.Equal(t, 1.0, BudgetRemaining(LatencyCounts(2, good), target).Remaining)
	}
	// No request at all: nothing spent.
	assert.Equal(t, Budget{1, 1, 1}, BudgetRemaining(LatencyCounts(2, []hist.Bucket{bk(1, 0), bk(math.Inf(1), 0)}), 0.99))
	assert.Equal(t, Budget{1, 1, 1}, BudgetRemaining(Counts{}, 0.99))
	// Changing the ratio or the threshold gives a finite budget at once,
	// computed from the same increases (no recorded ratio to roll over).
	for _, target := range []float64{0.5, 0.95, 0.999} {
		for _, th := range []float64{0.1, 0.25, 1, 7} {
			b := BudgetRemaining(LatencyCounts(th, small), target)
			assert.False(t, math.IsInf(b.Remaining, 0) || math.IsNaN(b.Remaining), "target %v threshold %v: %v", target, th, b)
		}
	}
}

func TestFractionMatchesPrometheusOracle(t *testing.T) {
	rng := rand.New(rand.NewSource(11))
	for n := 0; n < 500; n++ {
		var b []hist.Bucket
		var pb promql.Buckets
		bound, count := 0.0, 0.0
		for k := 0; k < 3+rng.Intn(10); k++ {
			bound += 0.01 + rng.Float64()
			count += float64(rng.Intn(50))
			b = append(b, hist.Bucket{UpperBound: bound, Count: count})
			pb = append(pb, promql.Bucket{UpperBound: bound, Count: count})
		}
		count += float64(1 + rng.Intn(20))
		b = append(b, hist.Bucket{UpperBound: math.Inf(1), Count: count})
		pb = append(pb, promql.Bucket{UpperBound: math.Inf(1), Count: count})
		th := rng.Float64() * (bound + 1)
		if n%5 == 0 {
			th = b[rng.Intn(len(b)-1)].UpperBound
		}
		c := LatencyCounts(th, b)
		v, lo, hi := c.Attainment()
		want := promql.BucketFraction(math.Inf(-1), th, pb)
		assert.InDelta(t, want, v, 1e-12, "threshold %v", th)
		assert.LessOrEqual(t, lo, v+1e-12)
		assert.GreaterOrEqual(t, hi, v-1e-12)
	}
}

// vec builds an instant vector of bucket rates with the given le spellings.
func vec(job string, le map[string]float64) model.Vector {
	var v model.Vector
	for l, c := range le {
		v = append(v, &model.Sample{Metric: model.Metric{"job": model.LabelValue(job), "le": model.LabelValue(l)}, Value: model.SampleValue(c)})
	}
	return v
}

func TestThresholdMatchesLeSpelling(t *testing.T) {
	// A page spelling its bound le="2.0" (Prometheus 3 storage) against an
	// objective of 2 s: the bound is found numerically, exact, 80 of 100.
	groups, b, bad := BucketVector(vec("a", map[string]float64{"1.0": 50, "2.0": 80, "+Inf": 100}))
	require.Len(t, groups, 1)
	assert.Zero(t, bad)
	assert.Equal(t, "a", groups[0].Labels["target"])
	th := Locate(2, b[groups[0].Key])
	assert.True(t, th.Exact)
	v, lo, hi := LatencyCounts(2, b[groups[0].Key]).Attainment()
	assert.Equal(t, []float64{0.8, 0.8, 0.8}, []float64{v, lo, hi})

	// le="1" from one target and le="1.0" from another (Prometheus 2 and 3
	// stores summed together) are one bound: 30 + 20 of 100 + 100.
	v2 := append(vec("a", map[string]float64{"1": 30, "+Inf": 100}), vec("a", map[string]float64{"1.0": 20, "+Inf": 100})...)
	groups, b, _ = BucketVector(v2)
	require.Len(t, groups, 1)
	c := LatencyCounts(1, b[groups[0].Key])
	assert.Equal(t, 200.0, c.Total)
	assert.InDelta(t, 0.25, c.Good/c.Total, 1e-12)
	assert.True(t, Locate(1, b[groups[0].Key]).Exact)
}

func TestRuleFactors(t *testing.T) {
	month := 30 * 24 * time.Hour
	want := []float64{14.4, 6, 3, 1}
	for i, r := range Rules {
		assert.InDelta(t, want[i], r.Factor(month), 1e-12)
	}
	// A 7-day period halves nothing by rule of thumb: 0.02·168/1 = 3.36.
	assert.InDelta(t, 3.36, Rules[0].Factor(7*24*time.Hour), 1e-12)
	// 6h/30m over 7 days: 0.05·168/6 = 1.4; the 1d and 3d rows fall under 1
	// (0.7 and 0.233) and are held at 1: a burn under 1 leaves budget at the
	// period's end and must not alert.
	assert.InDelta(t, 1.4, Rules[1].Factor(7*24*time.Hour), 1e-12)
	assert.Equal(t, 1.0, Rules[2].Factor(7*24*time.Hour))
	assert.Equal(t, 1.0, Rules[3].Factor(3*24*time.Hour))
	// The same burn in every window. 3-day period: 0.7 and 0.95 are ok (they
	// were page and ticket before the floor). The 6h/30m page row's factor is
	// 0.05·72/6 = 0.6 < 1: it is off (held at 1 it would page on any burn
	// above 1), so 1.2 is only a ticket (1d/2h and 3d/6h held at 1) and the
	// page needs the 1h/5m row's 0.02·72 = 1.44: 1.5 pages. 7-day period:
	// 1.2 is a ticket (1d and 2h above 1, 6h and 30m under 1.4), 1.5 pages.
	for _, c := range []struct {
		days int
		burn float64
		want Status
	}{{3, 0.7, OK}, {3, 0.95, OK}, {3, 1.2, Ticket}, {3, 1.43, Ticket}, {3, 1.5, Page}, {7, 0.95, OK}, {7, 1.2, Ticket}, {7, 1.5, Page}} {
		burns := map[time.Duration]float64{}
		for _, w := range Windows {
			burns[w] = c.burn
		}
		st, _ := Evaluate(burns, time.Duration(c.days)*24*time.Hour)
		assert.Equal(t, c.want, st, "burn %v over %d days", c.burn, c.days)
	}
	assert.Equal(t, []string{"5m", "30m", "1h", "2h", "6h", "1d", "3d"}, func() []string {
		var s []string
		for _, w := range Windows {
			s = append(s, WindowName(w))
		}
		return s
	}())
}

func TestEvaluate(t *testing.T) {
	month := 30 * 24 * time.Hour
	burn := func(b5m, b30m, b1h, b2h, b6h, b1d, b3d float64) map[time.Duration]float64 {
		v := []float64{b5m, b30m, b1h, b2h, b6h, b1d, b3d}
		out := map[time.Duration]float64{}
		for i, w := range Windows {
			out[w] = v[i]
		}
		return out
	}
	st, why := Evaluate(burn(15, 1, 15, 1, 1, 1, 1), month)
	assert.Equal(t, Page, st)
	assert.Contains(t, why, "over 1h")
	// Both windows of a row must exceed: a 5m spike alone does not page.
	st, _ = Evaluate(burn(100, 1, 14.4, 1, 1, 0.5, 0.5), month)
	assert.Equal(t, OK, st)
	st, _ = Evaluate(burn(1, 7, 1, 1, 7, 1, 1), month)
	assert.Equal(t, Page, st)
	st, why = Evaluate(burn(1, 1, 1, 3.1, 1, 3.1, 0.5), month)
	assert.Equal(t, Ticket, st)
	assert.Contains(t, why, "over 1d")
	st, _ = Evaluate(burn(1, 1, 1, 1, 1.1, 1, 1.1), month)
	assert.Equal(t, Ticket, st)
	st, why = Evaluate(burn(math.NaN(), math.NaN(), math.NaN(), math.NaN(), math.NaN(), math.NaN(), math.NaN()), month)
	assert.Equal(t, OK, st)
	assert.Contains(t, why, "no requests")
	assert.Equal(t, 2.0, Page.Value())
	assert.Equal(t, 1.0, Ticket.Value())
	assert.Equal(t, 0.0, OK.Value())
}

// stepHistory is 4 days of one-minute steps, 1000 requests a minute, with
// 0.1 % over the threshold except minutes [bad, bad+120) with 5 %.
func stepHistory(bad int) History {
	const steps = 4 * 24 * 60
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	h := History{Resolution: time.Minute}
	for i := 0; i < steps; i++ {
		h.Times = append(h.Times, t0.Add(time.Duration(i+1)*time.Minute))
		over := 1.0
		if i >= bad && i < bad+120 {
			over = 50
		}
		// Buckets: le=0.5 holds half, le=2 everything but the slow ones.
		h.Counts = append(h.Counts, LatencyCounts(2, []hist.Bucket{bk(0.5, 500), bk(2, 1000-over), bk(math.Inf(1), 1000)}))
	}
	return h
}

func TestStepHistoryBurnAndStatus(t *testing.T) {
	// Target 0.998 allows 0.2 % bad: 0.1 % burns at 0.5, 5 % at 25.
	const target = 0.998
	month := 30 * 24 * time.Hour
	B := 3*24*60 + 60 // the bad two hours start after 3 d 1 h of healthy history
	h := stepHistory(B)
	burn, status := h.BurnSeries(target, month)

	// Hand-computed burn rates at known instants (window of k minutes
	// ending at step i holds steps i−k+1..i).
	at := func(w time.Duration, i int) float64 { return burn[w][i] }
	assert.InDelta(t, 0.5, at(5*time.Minute, B-1), 1e-9)
	assert.InDelta(t, 25, at(time.Hour, B+59), 1e-9)
	// 6h at B+59: 60 minutes at 25 and 300 at 0.5 → (1500+150)/360.
	assert.InDelta(t, (60*25+300*0.5)/360.0, at(6*time.Hour, B+59), 1e-9)
	// 3d after the bad period: 120 at 25, 4200 at 0.5 → 7100/4320.
	assert.InDelta(t, (120*25+4200*0.5)/4320.0, at(72*time.Hour, B+200), 1e-9)
	// 5m at B+2: 3 bad of 5 → (75 + 1)/5.
	assert.InDelta(t, (3*25+2*0.5)/5.0, at(5*time.Minute, B+2), 1e-9)

	// Page row 1 needs 1h > 14.4: 25k/60 + 0.5(60−k)/60 > 14.4 ⇔ k ≥ 35
	// bad minutes, first at B+34. Page holds until the 6h/30m row lets go:
	// 30m > 6 ⇔ ≥ 7 bad minutes in it, last at B+142. Then the 3d/6h ticket
	// row (6h ≥ 8 bad minutes, 3d holds all 120 → 1.18 > 1) until B+471.
	want := func(i int) Status {
		switch {
		case i >= B+34 && i <= B+142:
			return Page
		case i >= B+143 && i <= B+471:
			return Ticket
		}
		return OK
	}
	for i := range status {
		if status[i] != want(i) {
			t.Fatalf("step %d (B%+d): status %s, want %s (burn 5m %.3f 30m %.3f 1h %.3f 6h %.3f 1d %.3f 3d %.3f)", i, i-B, status[i], want(i),
				at(5*time.Minute, i), at(30*time.Minute, i), at(time.Hour, i), at(6*time.Hour, i), at(24*time.Hour, i), at(72*time.Hour, i))
		}
	}
	// No flapping: ok → page → ticket → ok, three changes in four days.
	changes := 0
	for i := 1; i < len(status); i++ {
		if status[i] != status[i-1] {
			changes++
		}
	}
	assert.Equal(t, 3, changes)
	assert.Equal(t, h.Times[len(h.Times)-1].Sub(h.Times[0].Add(-time.Minute)), h.Covered())
}

func TestGoodputBounds(t *testing.T) {
	// a = 0.9, b = 0.8: joint in [0.7, 0.8].
	a := Counts{Good: 90, GoodLower: 90, GoodUpper: 90, Total: 100}
	b := Counts{Good: 80, GoodLower: 80, GoodUpper: 80, Total: 100}
	g := GoodputBounds([]Counts{a, b})
	assert.InDelta(t, 0.7, g.Lower, 1e-12)
	assert.InDelta(t, 0.8, g.Upper, 1e-12)
	// a = 0.3, b = 0.4: lower clamps at 0.
	g = GoodputBounds([]Counts{{30, 30, 30, 100}, {40, 40, 40, 100}})
	assert.Equal(t, 0.0, g.Lower)
	assert.InDelta(t, 0.3, g.Upper, 1e-12)
	// Interpolated attainment widens with its bracket: a ∈ [0.85, 0.95].
	g = GoodputBounds([]Counts{{90, 85, 95, 100}, b})
	assert.InDelta(t, 0.65, g.Lower, 1e-12)
	assert.InDelta(t, 0.8, g.Upper, 1e-12)
	g = GoodputBounds([]Counts{a, {}})
	assert.True(t, math.IsNaN(g.Lower) && math.IsNaN(g.Upper))
}

func TestReasonVector(t *testing.T) {
	v := model.Vector{
		{Metric: model.Metric{"job": "a", "finished_reason": "stop"}, Value: 1.5},
		{Metric: model.Metric{"job": "a", "finished_reason": "length"}, Value: 0.4},
		{Metric: model.Metric{"job": "a", "finished_reason": "abort"}, Value: 0.1},
		// An engine without finish reasons: left out, not counted as good.
		{Metric: model.Metric{"job": "tgi"}, Value: 5},
	}
	groups, cs, noReason := ReasonVector(v)
	require.Len(t, groups, 1)
	assert.Equal(t, 1, noReason)
	c := cs[groups[0].Key]
	assert.InDelta(t, 2.0, c.Total, 1e-12)
	assert.InDelta(t, 1.9, c.Good, 1e-12)
}
