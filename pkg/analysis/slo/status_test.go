package slo

import (
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/inferscope/inferscope-llm-datasource/pkg/hist"
)

const day = 24 * time.Hour

// outageHistory is n one-minute steps of 1000 requests each, every request
// good except the last 5 minutes, where every request is over the threshold
// (a total TTFT failure).
func outageHistory(n int) History {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	h := History{Resolution: time.Minute, Times: make([]time.Time, n), Counts: make([]Counts, n)}
	for i := range n {
		h.Times[i] = t0.Add(time.Duration(i+1) * time.Minute)
		good := 1000.0
		if i >= n-5 {
			good = 0
		}
		h.Counts[i] = Counts{Good: good, GoodLower: good, GoodUpper: good, Total: 1000}
	}
	return h
}

func burnAt(h History, i int, target float64) (map[time.Duration]float64, map[time.Duration]float64) {
	fav, pess := map[time.Duration]float64{}, map[time.Duration]float64{}
	for _, w := range Windows {
		fav[w], pess[w] = BurnBracket(h.Window(w)[i], target)
	}
	return fav, pess
}

func TestBurnRowsNeedTheirLongWindowInTheStore(t *testing.T) {
	// 1000 requests/min, target 0.99, a 5-minute total failure at the end.
	const target = 0.99
	month := 30 * day

	// One hour of history. By hand at the last minute: 5m 5000/5000 bad →
	// burn 100; 30m 5000/30000 → 16.7; 1h 5000/60000 → 8.33; 2h, 6h, 1d
	// and 3d hold the same hour → 8.33. Read as if the store held them, the
	// 6h/30m row (8.33 > 6 and 16.7 > 6) pages; the budget over the hour is
	// 1 − 8.33 = −7.33 (−733 %).
	h := outageHistory(60)
	last := len(h.Counts) - 1
	fav, pess := burnAt(h, last, target)
	assert.InDelta(t, 100, fav[5*time.Minute], 1e-9)
	assert.InDelta(t, 100.0/6, fav[30*time.Minute], 1e-9)
	assert.InDelta(t, 100.0/12, fav[time.Hour], 1e-9)
	assert.InDelta(t, 100.0/12, fav[6*time.Hour], 1e-9)
	old, _ := Evaluate(fav, month)
	assert.Equal(t, Page, old, "read as if the store held 6 h")
	assert.InDelta(t, 1-100.0/12, BudgetRemaining(h.Window(month)[last], target).Remaining, 1e-9)
	e := EvaluateBracket(fav, pess, month, target, h.Covered())
	assert.Equal(t, OK, e.Status, e.Reason)
	assert.Equal(t, []string{"page 6h/30m", "ticket 1d/2h", "ticket 3d/6h"}, e.NotEvaluated)
	assert.Contains(t, e.Reason, "not evaluated (the store holds 1h")
	st := h.StatusSeries(target, month, 0)
	assert.Equal(t, OK, st[last])
	_, oldSeries := h.BurnSeries(target, month)
	assert.Equal(t, Page, oldSeries[last])

	// Thirty days of history, same outage: 6h 5000/360000 → 1.39, 1d → 0.347,
	// 3d → 0.116; 1h 8.33 < 14.4. Every row evaluated, none fires. Budget:
	// 5000 of 43,200,000 bad against 1 % allowed → 1 − 0.01157 = 98.84 %.
	h = outageHistory(30 * 24 * 60)
	last = len(h.Counts) - 1
	fav, pess = burnAt(h, last, target)
	assert.InDelta(t, 5000.0/360000/0.01, fav[6*time.Hour], 1e-9)
	assert.InDelta(t, 5000.0/1440000/0.01, fav[day], 1e-9)
	e = EvaluateBracket(fav, pess, month, target, h.Covered())
	assert.Equal(t, OK, e.Status)
	assert.Empty(t, e.NotEvaluated)
	assert.InDelta(t, 1-5000.0/43200000/0.01, BudgetRemaining(h.Window(month)[last], target).Remaining, 1e-12)
}

func TestStatusFromTheBracket(t *testing.T) {
	month := 30 * day
	// The default objectives off a bucket bound: TTFT 3 s (between 2.5 and 5
	// in vLLM's layout), TPOT/ITL 30 ms (between 25 and 50 ms), TTFT 30 s
	// (between 20 and 40).
	itl := []hist.Bucket{bk(0.01, 0), bk(0.025, 0), bk(0.05, 0), bk(0.075, 0), bk(math.Inf(1), 0)}
	ttft := make([]hist.Bucket, 0, len(vllmTTFT08)+1)
	for _, b := range vllmTTFT08 {
		ttft = append(ttft, bk(b, 0))
	}
	ttft = append(ttft, bk(math.Inf(1), 0))
	for _, c := range []struct {
		th           float64
		layout       []hist.Bucket
		below, above float64
	}{{3, ttft, 2.5, 5}, {0.03, itl, 0.025, 0.05}, {30, ttft, 20, 40}} {
		loc := Locate(c.th, c.layout)
		assert.False(t, loc.Exact)
		assert.Equal(t, []float64{c.below, c.above}, []float64{loc.Below, loc.Above})
	}

	// All requests at 2.6 s, threshold 3 s: interpolated (3 − 2.5)/2.5 = 0.2,
	// bracket [0, 1] (truth 1.0). Burn at target 0.99: point 0.8/0.01 = 80,
	// favourable 0, pessimistic 100. The point pages; the bracket says
	// "possible" (value 0.5), never page.
	c := LatencyCounts(3, []hist.Bucket{bk(2.5, 0), bk(5, 1000), bk(math.Inf(1), 1000)})
	v, lo, hi := c.Attainment()
	assert.InDelta(t, 0.2, v, 1e-12)
	assert.Equal(t, []float64{0, 1}, []float64{lo, hi})
	f, p := BurnBracket(c, 0.99)
	assert.InDelta(t, 0, f, 1e-12)
	assert.InDelta(t, 100, p, 1e-9)
	all := func(x float64) map[time.Duration]float64 {
		m := map[time.Duration]float64{}
		for _, w := range Windows {
			m[w] = x
		}
		return m
	}
	point, _ := Evaluate(all(BurnRate(c, 0.99)), month)
	assert.Equal(t, Page, point)
	e := EvaluateBracket(all(f), all(p), month, 0.99, month)
	assert.Equal(t, Possible, e.Status)
	assert.Equal(t, Page, e.Worst)
	assert.Equal(t, 0.5, e.Status.Value())
	assert.Contains(t, e.Reason, "possible page")

	// Half at or under 2.5 s, half in (2.5, 5]: bracket [0.5, 1] → burns 0
	// and 50: possible. All in (5, 7.5]: bracket [0, 0] → burn 100 on both
	// bounds: page.
	f, p = BurnBracket(LatencyCounts(3, []hist.Bucket{bk(2.5, 500), bk(5, 1000), bk(math.Inf(1), 1000)}), 0.99)
	assert.Equal(t, []float64{0, 50}, []float64{f, math.Round(p*1e9) / 1e9})
	assert.Equal(t, Possible, EvaluateBracket(all(f), all(p), month, 0.99, month).Status)
	f, p = BurnBracket(LatencyCounts(3, []hist.Bucket{bk(2.5, 0), bk(5, 0), bk(7.5, 1000), bk(math.Inf(1), 1000)}), 0.99)
	assert.Equal(t, Page, EvaluateBracket(all(f), all(p), month, 0.99, month).Status)
	// Ticket on the favourable bound, page on the other: ticket, with the page named.
	e = EvaluateBracket(all(4), all(20), month, 0.99, month)
	assert.Equal(t, Ticket, e.Status)
	assert.Equal(t, Page, e.Worst)
	assert.Contains(t, e.Reason, "a page is possible")
}

func TestFactorScalingForOtherPeriods(t *testing.T) {
	// factor = budget share × period / long window (Workbook, Sloth);
	// page rows unfloored, ticket rows held at 1.
	raw := func(p []RowPlan) []float64 {
		var out []float64
		for _, r := range p {
			out = append(out, math.Round(r.Raw*1e4)/1e4)
		}
		return out
	}
	fac := func(p []RowPlan) []float64 {
		var out []float64
		for _, r := range p {
			out = append(out, math.Round(r.Factor*1e4)/1e4)
		}
		return out
	}
	// 7 d = 168 h: 0.02·168 = 3.36, 0.05·168/6 = 1.4, 0.1·168/24 = 0.7 → 1, 0.1·168/72 = 0.2333 → 1.
	p7 := PlanRows(7*day, 0.99)
	assert.Equal(t, []float64{3.36, 1.4, 0.7, 0.2333}, raw(p7))
	assert.Equal(t, []float64{3.36, 1.4, 1, 1}, fac(p7))
	// 28 d = 672 h: 13.44, 5.6, 2.8, 0.9333 → 1.
	p28 := PlanRows(28*day, 0.99)
	assert.Equal(t, []float64{13.44, 5.6, 2.8, 1}, fac(p28))
	// 90 d = 2160 h: 43.2 (14.4×3), 18, 9, 3.
	p90 := PlanRows(90*day, 0.99)
	assert.Equal(t, []float64{43.2, 18, 9, 3}, fac(p90))
	for _, r := range append(append(p7, p28...), p90...) {
		assert.Empty(t, r.Never, "target 0.99 allows burns up to 100")
	}
	// Highest possible burn 1/(1 − target): 0.977 → 43.48 > 43.2 (fires);
	// 0.976 → 41.67, 0.97 → 33.3: the 90 d page 1h/5m row can never fire.
	// At 0.9 (max 10) the 6h/30m row (18) cannot either; 9 still can.
	assert.Empty(t, PlanRows(90*day, 0.977)[0].Never)
	for _, target := range []float64{0.976, 0.97} {
		assert.Contains(t, PlanRows(90*day, target)[0].Never, "can never fire")
	}
	p := PlanRows(90*day, 0.9)
	assert.NotEmpty(t, p[0].Never)
	assert.NotEmpty(t, p[1].Never)
	assert.Empty(t, p[2].Never)
	e := EvaluateBracket(map[time.Duration]float64{}, map[time.Duration]float64{}, 90*day, 0.97, 90*day)
	require.Len(t, e.Never, 1)
	assert.Contains(t, e.Never[0], "row page 1h/5m can never fire for a 90d period at target 0.97: its factor 43.2")

	// Below 5 d the 6h/30m page row's factor is under 1 (3 d: 0.6, 4 d:
	// 0.8) and is off: no burn above 1 pages through it. At 5 d it is 1.
	for _, days := range []int{3, 4} {
		r := PlanRows(time.Duration(days)*day, 0.99)[1]
		assert.Contains(t, r.Never, "is off", "%d days", days)
	}
	assert.Empty(t, PlanRows(5*day, 0.99)[1].Never)
	// 3 d, burn 1.3 on every window: the 1h/5m factor is 0.02·72 = 1.44, the
	// 6h/30m row is off: ticket only (never page) for any burn in (1, 1.44].
	for _, b := range []float64{1.01, 1.3, 1.44} {
		m := map[time.Duration]float64{}
		for _, w := range Windows {
			m[w] = b
		}
		assert.Equal(t, Ticket, EvaluateBracket(m, m, 3*day, 0.99, 3*day).Status, "burn %v", b)
	}
}

func TestBurnWindowsIndependentOfPanelStep(t *testing.T) {
	// 100 points over 4 days: a panel step of 57.6 minutes. The history is
	// kept at 5m (15 s scrapes), so the 5m window is 5 minutes.
	assert.Equal(t, 5*time.Minute, BurnResolution(4*day/100, 15*time.Second))
	assert.Equal(t, time.Minute, BurnResolution(time.Minute, 15*time.Second))
	assert.Equal(t, 100*time.Second, BurnResolution(2*time.Minute, 15*time.Second))
	assert.Equal(t, 4*time.Second, BurnResolution(time.Second, time.Second))
	assert.Equal(t, 5*time.Minute, BurnResolution(time.Hour, 2*time.Minute))
	for _, w := range Windows {
		for _, r := range []time.Duration{4 * time.Second, 15 * time.Second, 100 * time.Second, time.Minute, 5 * time.Minute} {
			assert.Zero(t, w%r, "%s divides %s", r, w)
		}
	}
	// Two days of 1000 requests a minute, every request bad in a
	// 10-minute outage that ends 30 minutes before the last step; target 0.99.
	// At 5m resolution, at the last step: 5m burn 0, 1h burn 10000/60000/0.01
	// = 16.7: the 1h/5m page row does not fire (30 minutes after the outage
	// nothing alerts). A history at the panel step (57.6 min, rounded to whole
	// steps: every window of an hour or less is one step) reads the "5m"
	// window as the last step, which holds the outage: 16.7 over "5m" and
	// "1h", a page for an outage that has ended.
	build := func(res time.Duration) History {
		t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
		n := int(2 * day / res)
		h := History{Resolution: res}
		outageEnd := t0.Add(2*day - 30*time.Minute)
		for i := range n {
			end := t0.Add(time.Duration(i+1) * res)
			start := end.Add(-res)
			// Bad minutes of (start, end]: overlap with the outage (outageEnd − 10m, outageEnd].
			lo, hi := maxTime(start, outageEnd.Add(-10*time.Minute)), minTime(end, outageEnd)
			bad := 0.0
			if hi.After(lo) {
				bad = 1000 * hi.Sub(lo).Minutes()
			}
			total := 1000 * res.Minutes()
			h.Times = append(h.Times, end)
			h.Counts = append(h.Counts, ErrorCounts(bad, total))
		}
		return h
	}
	fine := build(5 * time.Minute)
	last := len(fine.Counts) - 1
	fav, pess := burnAt(fine, last, 0.99)
	assert.InDelta(t, 0, fav[5*time.Minute], 1e-9)
	assert.InDelta(t, 10000.0/60000/0.01, fav[time.Hour], 1e-9)
	assert.Equal(t, OK, EvaluateBracket(fav, pess, 30*day, 0.99, fine.Covered()).Status)
	coarse := build(48 * time.Minute) // a panel step the old code used as the history's resolution
	last = len(coarse.Counts) - 1
	fav, _ = burnAt(coarse, last, 0.99)
	assert.InDelta(t, 10000.0/48000/0.01, fav[5*time.Minute], 1e-9, "the '5m' window is the last 48 minutes")
	st, _ := Evaluate(fav, 30*day)
	assert.Equal(t, Page, st)
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

func minTime(a, b time.Time) time.Time {
	if a.Before(b) {
		return a
	}
	return b
}
