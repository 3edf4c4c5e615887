package slo

import (
	"fmt"
	"math"
	"strings"

	"github.com/inferscope/inferscope-llm-datasource/pkg/analysis"
	"github.com/inferscope/inferscope-llm-datasource/pkg/analysis/sanity"
	"github.com/inferscope/inferscope-llm-datasource/pkg/catalog"
	"github.com/inferscope/inferscope-llm-datasource/pkg/settings"
)

// ObjectiveHistory is what the goodput query reads of one objective: its groups, their
// counts per step (per-second rates over the query's rate window) and, for a latency
// objective, its histogram's sanity verdicts per group and step (sanity.JudgeHistogram).
type ObjectiveHistory struct {
	Groups   []Group
	Hists    map[string]History
	Verdicts sanity.Verdicts
}

// GoodputGroup is one group's goodput bounds and request rate (requests/s per step, NaN where
// unknown).
type GoodputGroup struct {
	Key                    string
	Labels                 map[string]string
	Lower, Upper, Requests []float64
}

// perToken lists the latency signals observed once per output token rather than once per
// request.
var perToken = map[string]bool{string(catalog.ITL): true}

// GoodputGroups computes, per group of the request-rate objective, the Fréchet bounds of the
// requests/s meeting every objective at once at each of n steps: lower = max(0, Σ aᵢ − (n −
// 1)) × request rate, upper = min aᵢ × request rate (GoodputBounds of the objectives' counts),
// the request rate being that of the first objective counted per request. A step a latency
// objective's histogram disproves draws no value; a group some objective has no data for is
// left out. hs holds each objective's reads, in the order of objs (not empty).
func GoodputGroups(objs []Objective, hs []ObjectiveHistory, n int, notes *analysis.Notices) []GoodputGroup {
	rateFrom := goodputRateFrom(objs, notes)
	var out []GoodputGroup
	if len(hs[rateFrom].Groups) == 0 {
		notes.Add(analysis.Info, fmt.Sprintf("goodput: no %s data in scope over the range (not exported, or no requests)", objs[rateFrom].ReadSignal()))
	}
	for _, g := range hs[rateFrom].Groups {
		complete := true
		for k := range objs {
			if _, ok := hs[k].Hists[g.Key]; !ok {
				complete = false
			}
		}
		if !complete {
			notes.Add(analysis.Info, fmt.Sprintf("goodput%s: not every objective has data for this group", DescribeGroup(g.Labels)))
			continue
		}
		out = append(out, goodputGroup(objs, hs, g, rateFrom, n, notes))
	}
	return out
}

// goodputRateFrom returns the index of the objective whose request rate goodput is drawn
// from (the first counted per request; the first when none is), with the warnings on
// per-token objectives and the notice saying what the bounds are.
func goodputRateFrom(objs []Objective, notes *analysis.Notices) int {
	rateFrom := -1
	var names []string
	for k, s := range objs {
		names = append(names, s.Name)
		if s.Kind == settings.KindErrorRatio || !perToken[s.Signal] {
			if rateFrom < 0 {
				rateFrom = k
			}
		} else {
			notes.Add(analysis.Warning, fmt.Sprintf("objective %s: %s is observed per output token, not per request; goodput treats its attainment as the share of requests meeting it (use tpot for a per-request objective)", s.Name, s.Signal))
		}
	}
	if rateFrom < 0 {
		rateFrom = 0
		notes.Add(analysis.Warning, "no objective of the profile is counted per request: the rate shown is of inter-token gaps, not requests")
	}
	notes.Add(analysis.Info, fmt.Sprintf("goodput of profile %s (%s at once) is known only within bounds from separate histograms: lower = max(0, Σ attainment − (n − 1)) × request rate, upper = min attainment × request rate (Fréchet bounds); the true value lies between the two series", objs[0].Profile, strings.Join(names, ", ")))
	return rateFrom
}

// goodputGroup is GoodputGroups for group g, which every objective has data for.
func goodputGroup(objs []Objective, hs []ObjectiveHistory, g Group, rateFrom, n int, notes *analysis.Notices) GoodputGroup {
	lo := make([]float64, n)
	hi := make([]float64, n)
	for t := range n {
		cs := make([]Counts, len(objs))
		for k := range objs {
			cs[k] = hs[k].Hists[g.Key].Counts[t]
		}
		b := GoodputBounds(cs)
		rate := cs[rateFrom].Total
		lo[t], hi[t] = b.Lower*rate, b.Upper*rate
		if math.IsNaN(b.Lower) {
			lo[t], hi[t] = math.NaN(), math.NaN()
		}
		for k := range objs {
			if v, ok := hs[k].Verdicts.Find(g.Labels); ok && v.Disproved(t) {
				lo[t], hi[t] = math.NaN(), math.NaN()
				notes.Add(analysis.Warning, fmt.Sprintf("objective %s: %s", objs[k].Name, v.Sentence()))
			}
		}
	}
	reqs := make([]float64, n)
	for t := range n {
		reqs[t] = math.NaN()
		if c := hs[rateFrom].Hists[g.Key].Counts[t]; c.Total > 0 {
			reqs[t] = c.Total
		}
	}
	return GoodputGroup{Key: g.Key, Labels: g.Labels, Lower: lo, Upper: hi, Requests: reqs}
}
