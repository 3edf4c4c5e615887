// Package client turns the client-side probe's series (pkg/probe, read through
// catalog's Probe* builders) into results: per-request jitter, errors by class
// with the success ratio (an availability SLI), spike and sustained-breach
// windows, and the join of a probe to the engine target it exercises (the
// "outside the engine" part of TTFT).
package client

import (
	"maps"
	"math"
	"slices"
	"time"

	"github.com/prometheus/common/model"

	"github.com/inferscope/inferscope-llm-datasource/pkg/analysis"
)

// JoinProbes relabels series read from probes: the target label (the probe's
// job) becomes the engine target the probe exercises (probeTarget maps probe →
// target) and the probe's name moves to the probe label; every series gets
// source="probe". Series without a target label (not grouped by target) only
// get the source label.
func JoinProbes(series []analysis.Series, probeTarget map[string]string) []analysis.Series {
	for i := range series {
		l := series[i].Labels
		if l == nil {
			l = map[string]string{}
			series[i].Labels = l
		}
		if p, ok := l["target"]; ok {
			l["probe"] = p
			if t, ok := probeTarget[p]; ok {
				l["target"] = t
			}
		}
		l["source"] = "probe"
	}
	return series
}

// JitterInput holds range results per group (job = probe): the rates of the
// per-request gap-stddev histogram's _sum and _count, and the largest value of
// the last-request max-gap and variance gauges over each window.
type JitterInput struct {
	StddevSum, StddevCount model.Matrix
	MaxGap, MaxVariance    model.Matrix
}

// Jitter returns, per group and step (unit s or s²), series labelled stat:
//   - stddev_mean: the mean over the window's requests of each request's gap
//     standard deviation (rate of _sum / rate of _count), s;
//   - max_gap: the largest single inter-token gap of any request, s;
//   - variance_max: the largest per-request gap variance, s².
//
// max_gap and variance_max are exact per-request values when every request
// was scraped (scrape interval ≤ the probe's interval).
func Jitter(in JitterInput, steps []time.Time) []analysis.Series {
	sums, labels := analysis.Align(in.StddevSum, steps)
	counts, _ := analysis.Align(in.StddevCount, steps)
	var out []analysis.Series
	for _, k := range sortedKeys(sums) {
		v := make([]float64, len(steps))
		for i := range steps {
			v[i] = math.NaN()
			if c, ok := counts[k]; ok && c[i] > 0 {
				v[i] = sums[k][i] / c[i]
			}
		}
		out = append(out, analysis.Series{Name: "gap stddev (mean)", Labels: with(labels[k], "stat", "stddev_mean"), Unit: "s", Times: steps, Values: v})
	}
	out = append(out, analysis.FromMatrix(in.MaxGap, steps, "max gap", "s", map[string]string{"stat": "max_gap"})...)
	out = append(out, analysis.FromMatrix(in.MaxVariance, steps, "gap variance (max)", "s²", map[string]string{"stat": "variance_max"})...)
	return out
}

// ErrorsInput holds range results: the rate of failed requests grouped by
// job, class and code, and the rate of requests sent grouped by job.
type ErrorsInput struct {
	Errors, Requests model.Matrix
}

// Errors returns errors/s per group, class and code (signal errors, unit
// reqps), requests/s per group (signal requests) and the success ratio
// 1 − Σ errors / requests per group (signal success_ratio, 0..1): the probe's
// availability SLI. A group with requests and no error series has ratio 1.
// Error series that stay at 0 over the whole range (the probe creates the
// usual classes at zero) are left out.
func Errors(in ErrorsInput, steps []time.Time) []analysis.Series {
	var out []analysis.Series
	for _, s := range analysis.FromMatrix(in.Errors, steps, "errors/s", "reqps", map[string]string{"signal": "errors"}) {
		if !slices.ContainsFunc(s.Values, func(v float64) bool { return v > 0 }) {
			continue
		}
		s.Name = "errors/s " + s.Labels["class"]
		if c := s.Labels["code"]; c != "" {
			s.Name += " " + c
		}
		out = append(out, s)
	}
	reqs, labels := analysis.Align(in.Requests, steps)
	errsByGroup := map[string][]float64{}
	errVals, errLabels := analysis.Align(in.Errors, steps, "class", "code")
	for k, v := range errVals {
		errsByGroup[analysis.LabelsKey(errLabels[k])] = v
	}
	for _, k := range sortedKeys(reqs) {
		l := labels[k]
		out = append(out, analysis.Series{Name: "requests/s", Labels: with(l, "signal", "requests"), Unit: "reqps", Times: steps, Values: reqs[k]})
		ratio := make([]float64, len(steps))
		e := errsByGroup[analysis.LabelsKey(l)]
		for i := range steps {
			ratio[i] = math.NaN()
			if r := reqs[k][i]; r > 0 {
				bad := 0.0
				if e != nil && !math.IsNaN(e[i]) {
					bad = e[i]
				}
				ratio[i] = math.Max(0, 1-bad/r)
			}
		}
		out = append(out, analysis.Series{Name: "success ratio", Labels: with(l, "signal", "success_ratio"), Unit: "percentunit", Times: steps, Values: ratio})
	}
	return out
}

// SpikeInput holds, per group and window (the query's window ending at each
// step), the requests a per-request histogram observed (Total), those above
// the threshold (Over: exact, the threshold is a bucket bound), and the
// largest per-request value (Max, from the last-request gauge).
type SpikeInput struct {
	Total, Over, Max model.Matrix
	// SustainedShare is the share of a window's requests above the threshold
	// from which the window is a sustained breach (0 < share ≤ 1).
	SustainedShare float64
	// MinRequests is the fewest requests a window needs to be called sustained.
	MinRequests float64
}

// Spikes classifies each window (per group and step), with counts rounded to
// whole requests (increase() extrapolates to the window's edges):
//   - sustained = 1 when the window holds at least MinRequests requests and at
//     least SustainedShare of them were above the threshold;
//   - spike = 1 when at least one request was above the threshold and the
//     window is not sustained: one slow request in a healthy window.
//
// It returns series labelled stat ∈ {requests, over, max, spike, sustained}.
func Spikes(in SpikeInput, steps []time.Time) []analysis.Series {
	tot, labels := analysis.Align(in.Total, steps)
	over, _ := analysis.Align(in.Over, steps)
	var out []analysis.Series
	for _, k := range sortedKeys(tot) {
		l := labels[k]
		n := len(steps)
		req, ov, spike, sus := analysis.NaNs(n), analysis.NaNs(n), analysis.NaNs(n), analysis.NaNs(n)
		for i := range steps {
			t := tot[k][i]
			if math.IsNaN(t) {
				continue
			}
			req[i] = math.Round(t)
			o := 0.0
			if ovk, ok := over[k]; ok && !math.IsNaN(ovk[i]) {
				o = math.Max(0, math.Round(ovk[i]))
			}
			ov[i] = o
			s := req[i] >= in.MinRequests && req[i] > 0 && o/req[i] >= in.SustainedShare
			sus[i], spike[i] = b2f(s), b2f(o >= 1 && !s)
		}
		out = append(out,
			analysis.Series{Name: "requests", Labels: with(l, "stat", "requests"), Unit: "short", Times: steps, Values: req},
			analysis.Series{Name: "over threshold", Labels: with(l, "stat", "over"), Unit: "short", Times: steps, Values: ov},
			analysis.Series{Name: "spike", Labels: with(l, "stat", "spike"), Unit: "short", Times: steps, Values: spike},
			analysis.Series{Name: "sustained", Labels: with(l, "stat", "sustained"), Unit: "short", Times: steps, Values: sus})
	}
	out = append(out, analysis.FromMatrix(in.Max, steps, "max", "s", map[string]string{"stat": "max"})...)
	return out
}

// Outside returns client − engine per step (NaN where either is missing): the
// part of the client's mean TTFT spent outside the engine (API server,
// tokenizer, gateway, network).
func Outside(client, engine []float64) []float64 {
	out := make([]float64, len(client))
	for i := range client {
		out[i] = math.NaN()
		if i < len(engine) && !math.IsNaN(client[i]) && !math.IsNaN(engine[i]) {
			out[i] = client[i] - engine[i]
		}
	}
	return out
}

// MeanByTarget returns rate(_sum)/rate(_count) per step for each value of the
// target label (after JoinProbes-style mapping by mapTarget, which may be nil),
// summing the _sum and _count of series that map to one target first.
func MeanByTarget(sum, count model.Matrix, steps []time.Time, mapTarget map[string]string) map[string][]float64 {
	return MeanBy(sum, count, steps, "target", mapTarget)
}

// MeanBy is MeanByTarget over any shown label (analysis.GroupLabels names: "target", "model",
// "tenant"): rate(_sum)/rate(_count) per step for each value of label, after mapping the values
// through mapValue (nil: none), summing the _sum and _count of series that map to one value
// first (Σ sum / Σ count, the mean over every request of the value).
func MeanBy(sum, count model.Matrix, steps []time.Time, label string, mapValue map[string]string) map[string][]float64 {
	mapTarget := mapValue
	add := func(m model.Matrix) map[string][]float64 {
		vals, labels := analysis.Align(m, steps)
		out := map[string][]float64{}
		for k, v := range vals {
			t := labels[k][label]
			if mapTarget != nil {
				if mt, ok := mapTarget[t]; ok {
					t = mt
				}
			}
			acc, ok := out[t]
			if !ok {
				acc = analysis.NaNs(len(steps))
				out[t] = acc
			}
			for i, x := range v {
				if math.IsNaN(x) {
					continue
				}
				if math.IsNaN(acc[i]) {
					acc[i] = 0
				}
				acc[i] += x
			}
		}
		return out
	}
	s, c := add(sum), add(count)
	out := map[string][]float64{}
	for t, sv := range s {
		cv := c[t]
		m := analysis.NaNs(len(steps))
		for i := range steps {
			if cv != nil && cv[i] > 0 {
				m[i] = sv[i] / cv[i]
			}
		}
		out[t] = m
	}
	return out
}

func with(l map[string]string, k, v string) map[string]string {
	out := make(map[string]string, len(l)+1)
	for a, b := range l {
		out[a] = b
	}
	out[k] = v
	return out
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

func sortedKeys(m map[string][]float64) []string {
	// keys are LabelsKey strings: sorting them sorts by labels
	return slices.Sorted(maps.Keys(m))
}
