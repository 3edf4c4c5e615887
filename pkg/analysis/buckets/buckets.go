// Package buckets advises on histogram bucket layouts: where a quantile or
// an SLO threshold falls in a histogram's buckets, how wide that bucket is
// relative to the value (the worst-case error of any estimate read from
// it), whether the value is clamped at the layout's edge, and which extra
// bounds would bring that error under MaxError, written as the JSON that
// vLLM's --custom-histogram-buckets option takes. Pure functions on
// hist.Bucket slices.
package buckets

import (
	"encoding/json"
	"math"
	"slices"
	"strconv"

	"github.com/inferscope/inferscope-llm-datasource/pkg/hist"
)

// MaxError is the relative bucket width advice aims under: 10 % of the value.
const MaxError = 0.10

// ratio is the step of the geometric ladder of extra bounds: consecutive
// bounds 8 % apart keep the bucket holding the value under MaxError wide
// even after rounding bounds to three significant digits.
const ratio = 1.08

// Kinds of Advice.
const (
	KindQuantile  = "quantile"
	KindThreshold = "threshold"
)

// Advice is where one quantile or threshold sits in a bucket layout.
type Advice struct {
	// Kind is KindQuantile or KindThreshold; Requested the quantile (0..1) or
	// the threshold (in the histogram's unit, seconds for latencies).
	Kind      string
	Requested float64
	// Value is the quantile estimate (Prometheus histogram_quantile) or the threshold.
	Value float64
	// Lower and Upper are the edges of the bucket Value falls in (Upper may be +Inf).
	Lower, Upper float64
	// RelativeWidth is (Upper − Lower) / Value: the worst-case relative error
	// of a value read from this bucket; 0 for a threshold that is a bound, +Inf
	// when the bucket is unbounded. NaN when Value is undefined.
	RelativeWidth float64
	// Clamp is "high" when the value lies beyond the highest finite bound
	// (the quantile is clamped there; a threshold's attainment cannot be
	// bracketed from above), "low" for a quantile clamped at a bound ≤ 0.
	Clamp hist.Clamp
	// Exact is true for a threshold equal to a bound.
	Exact bool
	// Extra are the bounds to add (sorted, three significant digits); Bounds
	// the finite bounds of the layout with them added.
	Extra, Bounds []float64
}

// finite returns the sorted distinct finite bounds of b.
func finite(b []hist.Bucket) []float64 {
	var out []float64
	for _, x := range b {
		if !math.IsInf(x.UpperBound, 0) && !math.IsNaN(x.UpperBound) {
			out = append(out, x.UpperBound)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// ForQuantile advises on quantile q of the cumulative buckets b.
func ForQuantile(q float64, b []hist.Bucket) Advice {
	e := hist.Quantile(q, b)
	a := Advice{Kind: KindQuantile, Requested: q, Value: e.Value, Lower: e.Lower, Upper: e.Upper, Clamp: e.Clamp, Bounds: finite(b)}
	a.RelativeWidth = width(a.Lower, a.Upper, a.Value)
	if math.IsNaN(a.Value) {
		return a
	}
	switch {
	case e.Clamp == hist.ClampedHigh:
		// The true value is above the highest bound: extend the layout to
		// twice that bound in steps of 8 %.
		a.Extra = ladder(a.Value, 2*a.Value, a.Value, a.Bounds)
	case e.Clamp == hist.ClampedLow:
		a.Extra = nil
	case a.RelativeWidth >= MaxError:
		lo := math.Max(a.Lower, a.Value/1.3)
		hi := math.Min(a.Upper, a.Value*1.3)
		a.Extra = ladder(lo, hi, a.Value, a.Bounds)
	}
	a.Bounds = merged(a.Bounds, a.Extra)
	return a
}

// ForThreshold advises on a threshold t (an SLO objective) in buckets b:
// exact when t is a bound; otherwise the neighbouring bounds and, as the
// extra bound, t itself, which makes attainment exact.
func ForThreshold(t float64, b []hist.Bucket) Advice {
	a := Advice{Kind: KindThreshold, Requested: t, Value: t, Bounds: finite(b), Lower: 0, Upper: math.Inf(1)}
	for _, u := range a.Bounds {
		switch {
		case u == t:
			a.Exact = true
		case u < t:
			a.Lower = u
		case u > t && math.IsInf(a.Upper, 1):
			a.Upper = u
		}
	}
	if a.Exact {
		a.Lower, a.Upper, a.RelativeWidth = t, t, 0
		return a
	}
	a.RelativeWidth = width(a.Lower, a.Upper, t)
	if math.IsInf(a.Upper, 1) {
		a.Clamp = hist.ClampedHigh
	}
	a.Extra = []float64{t}
	a.Bounds = merged(a.Bounds, a.Extra)
	return a
}

func width(lo, hi, v float64) float64 {
	if math.IsNaN(v) || math.IsNaN(lo) || math.IsNaN(hi) {
		return math.NaN()
	}
	if math.IsInf(hi, 1) || math.IsInf(lo, -1) {
		return math.Inf(1)
	}
	if v == 0 {
		return math.Inf(1)
	}
	return (hi - lo) / math.Abs(v)
}

// ladder returns bounds v·1.08^k (three significant digits) strictly inside
// (lo, hi), not already in have.
func ladder(lo, hi, v float64, have []float64) []float64 {
	var out []float64
	for k := -20; k <= 20; k++ {
		x := round3(v * math.Pow(ratio, float64(k)))
		if x <= lo || x >= hi || slices.Contains(have, x) || slices.Contains(out, x) {
			continue
		}
		out = append(out, x)
	}
	slices.Sort(out)
	return out
}

func round3(x float64) float64 {
	f, _ := strconv.ParseFloat(strconv.FormatFloat(x, 'g', 3, 64), 64)
	return f
}

func merged(a, b []float64) []float64 {
	out := append(slices.Clone(a), b...)
	slices.Sort(out)
	return slices.Compact(out)
}

// VLLMFamily names the --custom-histogram-buckets family of vLLM that holds
// a latency stage's histogram: time_to_first_token, inter_token_latency
// (ITL and per-request TPOT share it) or request_latency (E2E, queue,
// prefill, decode, inference). "" for other signals.
func VLLMFamily(signal string) string {
	switch signal {
	case "ttft":
		return "time_to_first_token"
	case "itl", "tpot":
		return "inter_token_latency"
	case "e2e", "queue_time", "prefill_time", "decode_time", "inference_time":
		return "request_latency"
	}
	return ""
}

// CustomBucketsJSON renders bounds as vLLM's --custom-histogram-buckets
// value for one family, e.g. {"time_to_first_token":[0.001,0.005,…]}.
func CustomBucketsJSON(family string, bounds []float64) string {
	if family == "" {
		return ""
	}
	b, _ := json.Marshal(map[string][]float64{family: bounds})
	return string(b)
}

// Row is one row of the buckets query: a stage's advice for one group
// (labels target/model/engine), with the --custom-histogram-buckets JSON
// ("" for stages vLLM has no family for).
type Row struct {
	Signal        string
	Group         map[string]string
	Advice        Advice
	CustomBuckets string
}

// LiesIn is the cue a reader needs where a quantile's bucket is wide: "p99
// lies in 250–500 ms" for a quantile whose RelativeWidth is above MaxError
// (the value read off the bucket can be off by more than 10 %), "p99 lies
// above 10 s" when it falls in the +Inf bucket; "" for a threshold, an
// undefined value or a bucket narrow enough to trust. The quantile is named
// p followed by 100 × Requested (0.99 → p99, 0.999 → p99.9); the bounds are
// in ms below one second, in s from one second on.
func LiesIn(a Advice) string {
	if a.Kind != KindQuantile || math.IsNaN(a.Value) || math.IsNaN(a.RelativeWidth) || a.RelativeWidth <= MaxError {
		return ""
	}
	name := "p" + strconv.FormatFloat(math.Round(a.Requested*1e4)/1e2, 'f', -1, 64)
	if math.IsInf(a.Upper, 1) {
		return name + " lies above " + seconds(a.Lower) + " (the highest finite bound)"
	}
	switch {
	case a.Upper < 1: // "250–500 ms"
		return name + " lies in " + number(a.Lower, true) + "–" + number(a.Upper, true) + " ms"
	case a.Lower >= 1 || a.Lower == 0: // "2.5–5 s", "0–2.5 s"
		return name + " lies in " + number(a.Lower, false) + "–" + number(a.Upper, false) + " s"
	default: // "500 ms–1 s"
		return name + " lies in " + seconds(a.Lower) + "–" + seconds(a.Upper)
	}
}

// Requested names what a row of advice places, with its unit: "p99" for a quantile (p
// followed by 100 × Requested, 0.999 → p99.9), "threshold 3 s" or "threshold 50 ms" for a
// threshold of Requested seconds (issue 33: the table showed a threshold as a bare "3"
// beside quantiles as 0.99).
func Requested(a Advice) string {
	if a.Kind == KindThreshold {
		return "threshold " + seconds(a.Requested)
	}
	return "p" + strconv.FormatFloat(math.Round(a.Requested*1e4)/1e2, 'f', -1, 64)
}

// seconds renders v seconds as "250 ms" (below one second) or "2.5 s".
func seconds(v float64) string {
	s := number(v, v < 1)
	if v < 1 {
		return s + " ms"
	}
	return s + " s"
}

// number renders v seconds as a number of ms (ms set) or s, to three
// significant digits.
func number(v float64, ms bool) string {
	if ms {
		v *= 1000
	}
	return strconv.FormatFloat(v, 'g', 3, 64)
}
