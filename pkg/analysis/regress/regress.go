// Package regress gives regression verdicts: per latency stage, whether the
// windows after a change (a restart, a new engine version, model or cache
// configuration, or a range a user picks) are slower or faster than the
// windows before it, once load and the prompt/output length mix are held
// comparable, with a confidence from resampling the windows.
//
// Method (docs/benchmarks.md, "Regression verdicts"):
//
//  1. Each window carries its arrival rate (finished requests/s), mean
//     requests running, mean prompt and output lengths (tokens per request),
//     and per stage the rates of the latency histogram's _sum and _count.
//  2. Load and mix are held comparable by common support: only windows whose
//     arrival rate, prompt length and output length each lie inside the
//     range both sides share ([max of the two minima, min of the two maxima])
//     are compared. When either side keeps fewer than MinWindows windows the
//     stage is "not comparable": the change cannot be told from the load or
//     mix change. Requests running are reported, not held fixed: a slower
//     engine keeps requests longer, so running rises as a consequence of a
//     regression (holding it fixed would hide the regression).
//  3. The size is the ratio of request-weighted mean latencies, after/before −
//     1, with mean = Σ _sum rates / Σ _count rates over the kept windows
//     (equal-length windows, so rates add like counts).
//  4. Confidence: a percentile bootstrap (Efron & Tibshirani, ch. 13) that
//     resamples the kept windows of each side with replacement, Resamples
//     times with a fixed seed, and takes the 2.5 % and 97.5 % quantiles of
//     the size. Regressed when the whole interval lies above +MinEffect,
//     improved when it lies below −MinEffect, otherwise no change.
//
// Pure functions; no I/O and no SDK.
package regress

import (
	"fmt"
	"math"
	"math/rand/v2"
	"sort"
	"strings"
	"time"
)

// Window is one window of production: Arrival (finished requests/s),
// Running (mean requests running), PromptLen and OutputLen (tokens per
// request), and per stage the rates of the latency histogram's _sum (s/s)
// and _count (requests/s). NaN or absent where not measured.
type Window struct {
	At                                  time.Time
	Arrival, Running, PromptLen, OutLen float64
	Sum, Count                          map[string]float64
}

// Options of Compare.
type Options struct {
	// MinEffect is the relative change a verdict must exceed with 95 %
	// confidence (0.05: 5 %).
	MinEffect float64
	// Resamples of the bootstrap (1000) and its Seed (fixed: verdicts are reproducible).
	Resamples int
	Seed      uint64
	// MinWindows is the fewest kept windows per side (5).
	MinWindows int
}

// DefaultOptions are the options the regression query uses.
var DefaultOptions = Options{MinEffect: 0.05, Resamples: 1000, Seed: 25, MinWindows: 5}

// Verdicts.
const (
	Regressed     = "regressed"
	Improved      = "improved"
	NoChange      = "no change"
	NotComparable = "not comparable"
)

// Verdict is one stage's verdict: Before and After are the request-weighted
// mean latencies (s) over the kept windows, Size = After/Before − 1 with its
// 95 % bootstrap interval [Lower, Upper]; KeptBefore/KeptAfter of
// WindowsBefore/WindowsAfter windows with requests were compared;
// RunningBefore/After are the mean requests running of the kept windows;
// Controlled says what was held comparable and Reason explains the verdict.
type Verdict struct {
	Stage                       string
	Before, After               float64
	Size, Lower, Upper          float64
	KeptBefore, KeptAfter       int
	WindowsBefore, WindowsAfter int
	RunningBefore, RunningAfter float64
	Verdict                     string
	Controlled, Reason          string
}

// Value is the verdict as a number for alert rules: 1 regressed, −1 improved, 0 otherwise.
func (v Verdict) Value() float64 {
	switch v.Verdict {
	case Regressed:
		return 1
	case Improved:
		return -1
	}
	return 0
}

// covariate is one quantity held comparable by common support.
type covariate struct {
	name string
	get  func(Window) float64
}

var covariates = []covariate{
	{"arrival rate", func(w Window) float64 { return w.Arrival }},
	{"prompt length", func(w Window) float64 { return w.PromptLen }},
	{"output length", func(w Window) float64 { return w.OutLen }},
}

// Compare gives one Verdict per stage for windows before and after a change.
func Compare(before, after []Window, stages []string, opt Options) []Verdict {
	out := make([]Verdict, 0, len(stages))
	for _, st := range stages {
		out = append(out, compareStage(before, after, st, opt))
	}
	return out
}

func usable(ws []Window, stage string) []Window {
	var out []Window
	for _, w := range ws {
		if w.Count[stage] > 0 && !math.IsNaN(w.Sum[stage]) && w.Arrival > 0 {
			out = append(out, w)
		}
	}
	return out
}

func compareStage(before, after []Window, stage string, opt Options) Verdict {
	nan := math.NaN()
	v := Verdict{Stage: stage, Before: nan, After: nan, Size: nan, Lower: nan, Upper: nan, RunningBefore: nan, RunningAfter: nan}
	b, a := usable(before, stage), usable(after, stage)
	v.WindowsBefore, v.WindowsAfter = len(b), len(a)
	var controlled, shifted []string
	for _, c := range covariates {
		if !known(b, c.get) || !known(a, c.get) {
			continue
		}
		loB, hiB := span(b, c.get)
		loA, hiA := span(a, c.get)
		lo, hi := math.Max(loB, loA), math.Min(hiB, hiA)
		controlled = append(controlled, fmt.Sprintf("%s %s–%s", c.name, num(lo), num(hi)))
		if lo > hi {
			shifted = append(shifted, fmt.Sprintf("%s %s–%s before, %s–%s after", c.name, num(loB), num(hiB), num(loA), num(hiA)))
			b, a = nil, nil
			continue
		}
		b, a = within(b, c.get, lo, hi), within(a, c.get, lo, hi)
	}
	v.KeptBefore, v.KeptAfter = len(b), len(a)
	v.Controlled = "common support of " + strings.Join(controlled, ", ")
	if len(controlled) == 0 {
		v.Controlled = "nothing: no arrival rate or length mix was measured"
	}
	v.RunningBefore, v.RunningAfter = meanOf(b, func(w Window) float64 { return w.Running }), meanOf(a, func(w Window) float64 { return w.Running })
	if len(shifted) > 0 {
		v.Verdict = NotComparable
		v.Reason = "load or mix changed with no overlap (" + strings.Join(shifted, "; ") + "): the change cannot be told from it"
		return v
	}
	if len(b) < opt.MinWindows || len(a) < opt.MinWindows {
		v.Verdict = NotComparable
		v.Reason = fmt.Sprintf("only %d windows before and %d after at comparable load and mix (at least %d each needed)", len(b), len(a), opt.MinWindows)
		return v
	}
	v.Before, v.After = weightedMean(b, stage), weightedMean(a, stage)
	v.Size = v.After/v.Before - 1
	rng := rand.New(rand.NewPCG(opt.Seed, uint64(len(stage)))) // #nosec G404 -- seeded bootstrap resampling, reproducible by design; no secret
	sizes := make([]float64, 0, opt.Resamples)
	rb, ra := make([]Window, len(b)), make([]Window, len(a))
	for k := 0; k < opt.Resamples; k++ {
		for i := range rb {
			rb[i] = b[rng.IntN(len(b))]
		}
		for i := range ra {
			ra[i] = a[rng.IntN(len(a))]
		}
		if s := weightedMean(ra, stage)/weightedMean(rb, stage) - 1; !math.IsNaN(s) && !math.IsInf(s, 0) {
			sizes = append(sizes, s)
		}
	}
	sort.Float64s(sizes)
	if len(sizes) == 0 {
		v.Verdict, v.Reason = NotComparable, "no resample gave a finite size"
		return v
	}
	v.Lower, v.Upper = quantile(sizes, 0.025), quantile(sizes, 0.975)
	switch {
	case v.Lower > opt.MinEffect:
		v.Verdict = Regressed
	case v.Upper < -opt.MinEffect:
		v.Verdict = Improved
	default:
		v.Verdict = NoChange
	}
	v.Reason = fmt.Sprintf("mean %s %s → %s (%+.1f%%, 95%% interval %+.1f%% to %+.1f%%, threshold ±%.0f%%) over %d and %d windows",
		stage, sec(v.Before), sec(v.After), 100*v.Size, 100*v.Lower, 100*v.Upper, 100*opt.MinEffect, len(b), len(a))
	return v
}

func known(ws []Window, get func(Window) float64) bool {
	if len(ws) == 0 {
		return false
	}
	for _, w := range ws {
		if math.IsNaN(get(w)) {
			return false
		}
	}
	return true
}

func span(ws []Window, get func(Window) float64) (lo, hi float64) {
	lo, hi = math.Inf(1), math.Inf(-1)
	for _, w := range ws {
		lo, hi = math.Min(lo, get(w)), math.Max(hi, get(w))
	}
	return lo, hi
}

func within(ws []Window, get func(Window) float64, lo, hi float64) []Window {
	var out []Window
	for _, w := range ws {
		if x := get(w); x >= lo && x <= hi {
			out = append(out, w)
		}
	}
	return out
}

func meanOf(ws []Window, get func(Window) float64) float64 {
	s, n := 0.0, 0
	for _, w := range ws {
		if x := get(w); !math.IsNaN(x) {
			s += x
			n++
		}
	}
	if n == 0 {
		return math.NaN()
	}
	return s / float64(n)
}

func weightedMean(ws []Window, stage string) float64 {
	s, c := 0.0, 0.0
	for _, w := range ws {
		s += w.Sum[stage]
		c += w.Count[stage]
	}
	if !(c > 0) {
		return math.NaN()
	}
	return s / c
}

// quantile is the linear-interpolation quantile (type 7) of sorted xs.
func quantile(xs []float64, q float64) float64 {
	h := q * float64(len(xs)-1)
	i := int(math.Floor(h))
	if i+1 >= len(xs) {
		return xs[len(xs)-1]
	}
	return xs[i] + (h-float64(i))*(xs[i+1]-xs[i])
}

func num(v float64) string { return fmt.Sprintf("%.3g", v) }

func sec(v float64) string {
	if v < 1 {
		return fmt.Sprintf("%.3g ms", 1000*v)
	}
	return fmt.Sprintf("%.3g s", v)
}
