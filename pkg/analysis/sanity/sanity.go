// Package sanity finds telemetry that cannot be true: gauge samples outside what the quantity
// allows, counters that go backwards without a restart, histograms that contradict their own
// _sum and _count, GPU activity sources that disagree with each other, and request gauges that
// stopped updating. Every check is a pure function from PromQL results (or values already on
// the step grid) to findings with a time, so the saturation query, the GPU query and a later
// diagnosis can share them. Findings become notices through their Text method.
package sanity

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/common/model"

	"github.com/inferscope/inferscope-llm-datasource/pkg/analysis"
)

// Finding is one impossible sample run: which series, the first value that cannot be true and
// when it was first seen, and for how many steps (or samples) it lasted.
type Finding struct {
	// Signal is the canonical signal (kv_cache_usage, requests_running, …) or metric name.
	Signal string
	// Target is the series' job label ("" when it has none).
	Target string
	// Labels are the series' other stored labels (job, instance and __name__ excluded).
	Labels map[string]string
	// Value is the first impossible value seen; At the time of that sample or step.
	Value float64
	At    time.Time
	// Count is how many steps (or samples) of the range carried an impossible value.
	Count int
	// Why says what makes the value impossible ("a ratio outside 0..1", "negative", …).
	Why string
	// Effect says what the query did with it ("left out of the average").
	Effect string
}

// Text renders the finding as one notice sentence naming the target, the labels, the value
// and the time, e.g. `target vllm-a: kv_cache_usage {engine="3", model_name="m"} read
// -0.3875 at 2026-11-30 22:41:05 UTC (5 times in the range): a ratio outside 0..1, left out of the average`.
func (f Finding) Text() string {
	var b strings.Builder
	if f.Target != "" {
		b.WriteString("target " + f.Target + ": ")
	}
	b.WriteString(f.Signal)
	if len(f.Labels) > 0 {
		b.WriteString(" " + FormatLabels(f.Labels))
	}
	fmt.Fprintf(&b, " read %s at %s", formatValue(f.Value), f.At.UTC().Format("2006-01-02 15:04:05 UTC"))
	if f.Count > 1 {
		fmt.Fprintf(&b, " (%d times in the range)", f.Count)
	}
	b.WriteString(": " + f.Why)
	if f.Effect != "" {
		b.WriteString(", " + f.Effect)
	}
	return b.String()
}

// FormatLabels renders labels as `{a="x", b="y"}`, sorted by name.
func FormatLabels(l map[string]string) string {
	parts := make([]string, 0, len(l))
	for _, k := range slices.Sorted(maps.Keys(l)) {
		parts = append(parts, k+"="+strconv.Quote(l[k]))
	}
	return "{" + strings.Join(parts, ", ") + "}"
}

func formatValue(v float64) string {
	switch {
	case math.IsNaN(v):
		return "NaN"
	case math.IsInf(v, 1):
		return "+Inf"
	case math.IsInf(v, -1):
		return "-Inf"
	}
	return strconv.FormatFloat(v, 'g', 6, 64)
}

// splitLabels separates job from the other labels of a series, dropping __name__ and
// instance (the scrape address, one per target).
func splitLabels(m model.Metric) (string, map[string]string) {
	out := map[string]string{}
	for k, v := range m {
		if k == model.MetricNameLabel || k == "job" || k == "instance" {
			continue
		}
		out[string(k)] = string(v)
	}
	return string(m["job"]), out
}

// Why texts for ImpossibleValues.
func why(v, lo, hi float64) string {
	switch {
	case math.IsNaN(v):
		return "not a number"
	case math.IsInf(v, 0):
		return "infinite"
	case lo == 0 && hi == 1:
		return "a ratio outside 0..1"
	case v < lo && lo == 0:
		return "negative, which this quantity cannot be"
	}
	return fmt.Sprintf("outside %s..%s", formatValue(lo), formatValue(hi))
}

// ImpossibleValues turns the result of a range query that selects only impossible samples
// (catalog.ImpossiblePromQL: every sample outside [lo, hi], NaN or ±Inf, unaggregated) into one
// Finding per series: its first value and step, and how many steps carried such a value. The
// allowed range is only used to word the reason. effect says what the aggregate did with the
// samples ("left out of the average"). Findings are sorted by target, then labels.
func ImpossibleValues(signal string, m model.Matrix, lo, hi float64, effect string) []Finding {
	var out []Finding
	for _, s := range m {
		if len(s.Values) == 0 {
			continue
		}
		target, labels := splitLabels(s.Metric)
		first := s.Values[0]
		out = append(out, Finding{
			Signal: signal, Target: target, Labels: labels,
			Value: float64(first.Value), At: first.Timestamp.Time().UTC(), Count: len(s.Values),
			Why: why(float64(first.Value), lo, hi), Effect: effect,
		})
	}
	sortFindings(out)
	return out
}

func sortFindings(f []Finding) {
	sort.SliceStable(f, func(i, j int) bool {
		if f[i].Target != f[j].Target {
			return f[i].Target < f[j].Target
		}
		if f[i].Signal != f[j].Signal {
			return f[i].Signal < f[j].Signal
		}
		return FormatLabels(f[i].Labels) < FormatLabels(f[j].Labels)
	})
}

// CounterBackwards scans raw counter samples (a range-vector selection such as
// `vllm:generation_tokens_total{…}[6h]`, one series per stored series, samples ascending) for
// decreases that are not restarts. A restarted process counts again from zero, so after a
// restart the counter reads at most what it has counted since; a decrease to a value still at
// least half the previous one (and above zero) cannot be a restart: the counter went
// backwards. PromQL's rate() takes every decrease for a restart and adds the whole new value
// as an increase, so such a step inflates every rate window that contains it. One Finding per
// series: the first backwards value and its time, and how many backwards steps there were;
// Value is the new reading and Why gives the previous one.
func CounterBackwards(signal string, m model.Matrix, effect string) []Finding {
	var out []Finding
	for _, s := range m {
		var f *Finding
		for i := 1; i < len(s.Values); i++ {
			prev, cur := float64(s.Values[i-1].Value), float64(s.Values[i].Value)
			if !backwards(prev, cur) {
				continue
			}
			if f == nil {
				target, labels := splitLabels(s.Metric)
				f = &Finding{Signal: signal, Target: target, Labels: labels, Value: cur,
					At: s.Values[i].Timestamp.Time().UTC(), Effect: effect,
					Why: fmt.Sprintf("a counter that went back from %s without a restart", formatValue(prev))}
			}
			f.Count++
		}
		if f != nil {
			out = append(out, *f)
		}
	}
	sortFindings(out)
	return out
}

// NonFinite scans raw samples (one series per stored series, samples ascending: a range
// selection such as `vllm:generation_tokens_total{…}[6h]`) for NaN and ±Inf values, which no
// counter or histogram series can hold: one Finding per series with its first such value and
// time and how many samples were not finite. signal names the series in the notice (a
// canonical signal, or the stored metric name for a histogram's _bucket, _sum or _count);
// effect says what the aggregates did with them. Findings are sorted by target, then labels.
func NonFinite(signal string, m model.Matrix, effect string) []Finding {
	var out []Finding
	for _, s := range m {
		var f *Finding
		for _, p := range s.Values {
			v := float64(p.Value)
			if !math.IsNaN(v) && !math.IsInf(v, 0) {
				continue
			}
			if f == nil {
				target, labels := splitLabels(s.Metric)
				f = &Finding{Signal: signal, Target: target, Labels: labels, Value: v,
					At: p.Timestamp.Time().UTC(), Why: why(v, 0, math.Inf(1)), Effect: effect}
			}
			f.Count++
		}
		if f != nil {
			out = append(out, *f)
		}
	}
	sortFindings(out)
	return out
}

// backwards reports whether a counter step from prev to cur went back without a restart
// (see CounterBackwards).
func backwards(prev, cur float64) bool { return cur < prev && cur > 0 && cur >= prev/2 }

// ResetRule is the one rule by which every query type and the events query class a counter
// (or a histogram's _count or bucket) that decreased, as a sentence for notices and docs. It is
// the rule of IsRestart and IsBackwards.
const ResetRule = "a counter that falls to less than half its previous value, or to 0, is a restart (a restarted process counts again from zero, so it reads at most what it counted since); one that falls by less went backwards without a restart"

// IsRestart reports whether a counter step from prev to cur is a reset, a restart of the
// process by ResetRule: cur < prev, and cur is 0 or below prev/2. It is what PromQL's rate()
// and resets() take for a reset and the latency, throughput and saturation queries keep; the
// events query calls it a restart, with or without process_start_time_seconds on the page.
func IsRestart(prev, cur float64) bool { return cur < prev && !backwards(prev, cur) }

// IsBackwards reports whether a counter step from prev to cur went back without a restart by
// ResetRule: cur < prev, cur > 0 and cur >= prev/2 (CounterBackwards names such steps and the
// queries leave them out of their rates; the events query calls them counter_backwards).
func IsBackwards(prev, cur float64) bool { return backwards(prev, cur) }

// BackwardsAt returns the times of the samples of one raw counter series at which it went
// backwards without a restart (see CounterBackwards), ascending.
func BackwardsAt(s *model.SampleStream) []time.Time {
	var out []time.Time
	for i := 1; i < len(s.Values); i++ {
		if backwards(float64(s.Values[i-1].Value), float64(s.Values[i].Value)) {
			out = append(out, s.Values[i].Timestamp.Time().UTC())
		}
	}
	return out
}

// LeaveOut subtracts, from an aggregated rate result (CounterRatePromQL), the rate of one
// stored series (SeriesRatePromQL, aggregated by the same groups) at every step whose rate
// window (t − window, t] contains one of the times at: the windows in which PromQL took the
// series' backwards step for a restart and counted its whole value as an increase. A group
// that had no other series at that step loses the sample (no data, not zero). It returns the
// number of samples changed. agg is modified in place.
func LeaveOut(agg, series model.Matrix, at []time.Time, window time.Duration) int {
	byKey := map[string]*model.SampleStream{}
	for _, s := range agg {
		k, _ := analysis.Key(s.Metric)
		byKey[k] = s
	}
	changed := 0
	for _, s := range series {
		k, _ := analysis.Key(s.Metric)
		a := byKey[k]
		if a == nil {
			continue
		}
		sub := map[model.Time]float64{}
		for _, p := range s.Values {
			t := p.Timestamp.Time()
			for _, b := range at {
				if b.After(t.Add(-window)) && !b.After(t) {
					sub[p.Timestamp] = float64(p.Value)
					break
				}
			}
		}
		kept := a.Values[:0]
		for _, p := range a.Values {
			d, ok := sub[p.Timestamp]
			if !ok {
				kept = append(kept, p)
				continue
			}
			changed++
			v := float64(p.Value) - d
			if math.Abs(v) <= 1e-9*math.Abs(float64(p.Value)) {
				continue // the series was the group's only one: no data
			}
			kept = append(kept, model.SamplePair{Timestamp: p.Timestamp, Value: model.SampleValue(v)})
		}
		a.Values = kept
	}
	return changed
}
