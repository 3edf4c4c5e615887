package slo

import (
	"math"
	"time"
)

// History is one objective's request counts on a regular grid: Counts[i]
// are the requests observed in (Times[i] − Resolution, Times[i]] (from a
// PromQL range query of bucket rates over a Resolution window at a
// Resolution step, multiplied by Resolution, or rates: only ratios are
// taken). A step with no data has zero Counts.
type History struct {
	Times      []time.Time
	Resolution time.Duration
	Counts     []Counts
}

// prefix returns the running sums of h.Counts: p[i] = Σ Counts[:i].
func (h History) prefix() []Counts {
	p := make([]Counts, len(h.Counts)+1)
	for i, c := range h.Counts {
		p[i+1] = p[i].Add(c)
	}
	return p
}

// Window returns, for every step, the counts of the window of length w
// ending at that step: the sum of the last w/Resolution steps (fewer at the
// start of the history, where the window covers what exists). w is rounded
// down to whole steps, at least one.
func (h History) Window(w time.Duration) []Counts {
	p := h.prefix()
	k := 1
	if h.Resolution > 0 {
		k = int(w / h.Resolution)
	}
	if k < 1 {
		k = 1
	}
	out := make([]Counts, len(h.Counts))
	for i := range h.Counts {
		lo := i + 1 - k
		if lo < 0 {
			lo = 0
		}
		out[i] = p[i+1].Sub(p[lo])
	}
	return out
}

// BurnSeries returns, per window of Windows, the burn rate at every step
// (NaN where the window holds no request), and the status at every step by
// Evaluate over those burn rates.
func (h History) BurnSeries(target float64, period time.Duration) (map[time.Duration][]float64, []Status) {
	burn := make(map[time.Duration][]float64, len(Windows))
	for _, w := range Windows {
		cs := h.Window(w)
		vals := make([]float64, len(cs))
		for i, c := range cs {
			vals[i] = BurnRate(c, target)
		}
		burn[w] = vals
	}
	status := make([]Status, len(h.Counts))
	at := make(map[time.Duration]float64, len(Windows))
	for i := range h.Counts {
		for _, w := range Windows {
			at[w] = burn[w][i]
		}
		status[i] = StatusOf(at, period)
	}
	return burn, status
}

// Covered returns how long the history holds data: from the start of the
// first step with requests (Times[i] − Resolution) to the last step. Zero
// when no step has requests.
func (h History) Covered() time.Duration {
	for i, c := range h.Counts {
		if c.Total > 0 && !math.IsNaN(c.Total) {
			return h.Times[len(h.Times)-1].Sub(h.Times[i].Add(-h.Resolution))
		}
	}
	return 0
}

// BurnResolution is the step of a burn-rate history: the largest divisor of
// 5 minutes (in whole seconds) that is at most the panel step and at least
// four scrape intervals (5m when four scrape intervals exceed it). It divides
// every window of Windows, so History.Window sums exactly the true window,
// never one rounded to a coarse panel step (at 100 points over 4 days a step
// of about 58 minutes would turn the 5m window into 58 minutes).
func BurnResolution(step, scrape time.Duration) time.Duration {
	lo := 4 * scrape
	hi := max(step, lo)
	for d := 300; d >= 1; d-- {
		r := time.Duration(d) * time.Second
		if 300%d == 0 && r <= hi && r >= lo {
			return r
		}
	}
	return 5 * time.Minute
}
