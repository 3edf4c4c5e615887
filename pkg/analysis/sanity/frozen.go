package sanity

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
	"time"
)

// FrozenInput is one target's history on the step grid (Steps ascending, every slice the same
// length, NaN where a step has no data).
type FrozenInput struct {
	Steps []time.Time
	// Gauges are the engine's request gauges by name (requests_running, requests_waiting,
	// kv_cache_usage): the values that should move while requests are being served.
	Gauges map[string][]float64
	// Activity are per-second rates, each over a window ending at the step, of the counters
	// that move whenever a request arrives, produces a token or finishes (prompt tokens,
	// generation tokens, finished requests). A step counts as idle when every activity series
	// with a value there reads 0 and at least one has a value.
	Activity [][]float64
	// MinDuration is how long the gauges must stay unchanged, with no activity, before they
	// are called frozen (the saturation query uses 10 scrape intervals).
	MinDuration time.Duration
}

// FrozenSpan is a stretch of steps in which the request gauges did not change although at
// least one of them said work was in progress (running or waiting above zero) and no request
// arrived, produced a token or finished. A live engine cannot do that: running requests
// produce tokens every step. vLLM leaves running, waiting and KV usage frozen after a mass
// cancel, so such values are not load; a diagnosis must not read them as a stall or as KV
// pressure.
type FrozenSpan struct {
	// Since is the first step at which the gauges held their frozen values (the last time
	// they changed, or the first step of the range); Until the last step of the span.
	Since, Until time.Time
	// ToEnd is true when the span reaches the last step of the range.
	ToEnd bool
	// Values are the frozen gauge values, by gauge name.
	Values map[string]float64
}

// Frozen finds the spans in which the gauges are frozen (see FrozenSpan): a run of steps in
// which every gauge with data keeps exactly the value it had at the run's first step, some
// gauge in {requests_running, requests_waiting} (or any gauge when neither is given) is above
// zero, and the activity is idle (see FrozenInput), lasting at least MinDuration from Since.
// Since reaches back over preceding steps whose gauge values were already the frozen ones
// (the gauges stopped moving then, even if counters still moved for a window's length). An
// idle engine whose gauges read zero is not frozen; nor is a busy one whose gauges are steady
// while tokens flow. Spans that overlap (a later run's Since reaching back into an earlier
// span) are merged into one. Spans are returned in time order.
func Frozen(in FrozenInput) []FrozenSpan {
	n := len(in.Steps)
	if n == 0 || len(in.Gauges) == 0 {
		return nil
	}
	names := sortedKeys(in.Gauges)
	same := func(i, j int) bool { // every gauge with data at i has the same value at j
		any := false
		for _, k := range names {
			a, b := in.Gauges[k][i], in.Gauges[k][j]
			if math.IsNaN(a) != math.IsNaN(b) {
				return false
			}
			if math.IsNaN(a) {
				continue
			}
			if a != b {
				return false
			}
			any = true
		}
		return any
	}
	busy := func(i int) bool {
		load := []string{"requests_running", "requests_waiting"}
		has := false
		for _, k := range load {
			if _, ok := in.Gauges[k]; ok {
				has = true
			}
		}
		if !has {
			load = names
		}
		for _, k := range load {
			if v, ok := in.Gauges[k]; ok && v[i] > 0 {
				return true
			}
		}
		return false
	}
	idle := func(i int) bool {
		seen := false
		for _, a := range in.Activity {
			if len(a) <= i || math.IsNaN(a[i]) {
				continue
			}
			if a[i] != 0 {
				return false
			}
			seen = true
		}
		return seen
	}
	var out []FrozenSpan
	for i := 0; i < n; {
		if !busy(i) || !idle(i) {
			i++
			continue
		}
		j := i
		for j+1 < n && same(i, j+1) && idle(j+1) {
			j++
		}
		since := i
		for since > 0 && same(i, since-1) {
			since--
		}
		if in.Steps[j].Sub(in.Steps[since]) >= in.MinDuration {
			vals := map[string]float64{}
			for _, k := range names {
				if v := in.Gauges[k][i]; !math.IsNaN(v) {
					vals[k] = v
				}
			}
			sp := FrozenSpan{Since: in.Steps[since], Until: in.Steps[j], ToEnd: j == n-1, Values: vals}
			// A span whose Since reaches back into the previous one (the same frozen values,
			// with a moment of activity between) is the same freeze: one span, said once.
			if k := len(out) - 1; k >= 0 && !sp.Since.After(out[k].Until) {
				out[k].Until, out[k].ToEnd = sp.Until, sp.ToEnd
			} else {
				out = append(out, sp)
			}
		}
		i = j + 1
	}
	return out
}

// Text renders a span as a notice sentence for target.
func (s FrozenSpan) Text(target string) string {
	var vals []string
	for _, k := range sortedKeys(s.Values) {
		vals = append(vals, fmt.Sprintf("%s %s", k, formatValue(s.Values[k])))
	}
	when := "since " + s.Since.UTC().Format("2006-01-02 15:04:05 UTC")
	if !s.ToEnd {
		when = "from " + s.Since.UTC().Format("2006-01-02 15:04:05") + " to " + s.Until.UTC().Format("15:04:05 UTC")
	}
	return fmt.Sprintf("target %s: request gauges frozen %s (%s) while no request arrived, produced a token or finished: the engine stopped updating them (vLLM does after a mass cancel), so they are not live load",
		target, when, strings.Join(vals, ", "))
}

func sortedKeys[V any](m map[string]V) []string { return slices.Sorted(maps.Keys(m)) }
