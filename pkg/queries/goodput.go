package queries

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/data"
	"github.com/prometheus/common/model"

	"github.com/inferscope/inferscope-llm-datasource/pkg/analysis"
	"github.com/inferscope/inferscope-llm-datasource/pkg/analysis/sanity"
	"github.com/inferscope/inferscope-llm-datasource/pkg/analysis/slo"
	"github.com/inferscope/inferscope-llm-datasource/pkg/catalog"
	"github.com/inferscope/inferscope-llm-datasource/pkg/fetch"
	"github.com/inferscope/inferscope-llm-datasource/pkg/frames"
	"github.com/inferscope/inferscope-llm-datasource/pkg/settings"
)

// Goodput is the goodput query: requests/s meeting every objective of one profile at once,
// as Fréchet bounds.
type Goodput struct {
	Common
	// Profile names the SLO profile (required).
	Profile string `json:"profile,omitempty"`
	// Objectives restricts the profile to these objective names (empty: all).
	Objectives []string `json:"objectives,omitempty"`
}

func (q *Goodput) lists() []namedList { return []namedList{{"objectives", &q.Objectives}} }

// perToken lists the latency signals observed once per output token rather
// than once per request.
var perToken = map[string]bool{string(catalog.ITL): true}

// runGoodput answers the goodput query: requests/s meeting every
// objective of one profile at once, over the query's rate window at each
// step. Separate histograms cannot tell which requests met both objectives,
// so only the Fréchet bounds are returned: series labelled bound=lower
// (max(0, Σ aᵢ − (n − 1)) × request rate) and bound=upper (min aᵢ × request
// rate), per group, where aᵢ are the objectives' attainments (with their
// exact brackets when a threshold is not a bucket bound) and the request
// rate is that of the first per-request objective. A third series
// (stat=requests) is that request rate.
func runGoodput(ctx context.Context, env *fetch.Env, p fetch.Plan, q *Goodput) (data.Frames, error) {
	r := fetch.NewRun(ctx, env, p)
	profile, groups, err := goodputGroups(ctx, env, r, p, q.Profile, q.Objectives)
	if err != nil {
		return nil, err
	}
	var series []analysis.Series
	for _, g := range groups {
		rl := map[string]string{"profile": profile, "stat": "requests"}
		for k, v := range g.Labels {
			rl[k] = v
		}
		series = append(series, analysis.Series{Name: "request rate", Labels: rl, Unit: "reqps", Times: r.Steps, Values: g.Requests})
		for _, bound := range []struct {
			name string
			vals []float64
		}{{"lower", g.Lower}, {"upper", g.Upper}} {
			l := map[string]string{"profile": profile, "stat": "goodput", "bound": bound.name}
			for k, v := range g.Labels {
				l[k] = v
			}
			series = append(series, analysis.Series{Name: "goodput " + bound.name, Labels: l, Unit: "reqps", Times: r.Steps, Values: bound.vals})
		}
	}
	return frames.TimeSeries(series, meta(r, nil)), nil
}

// goodputGroup is one group's goodput bounds and request rate (requests/s per step, NaN where
// unknown).
type goodputGroup struct {
	Key                    string
	Labels                 map[string]string
	Lower, Upper, Requests []float64
}

// goodputGroups computes the goodput bounds of a profile (restricted to objectives) per group
// of p's scope, adding the goodput notices to r. It returns the profile's name ("" when no
// objective applies) and the groups that have data for every objective.
func goodputGroups(ctx context.Context, env *fetch.Env, r *fetch.Run, p fetch.Plan, profile string, objectives []string) (string, []goodputGroup, error) {
	objs, err := selectObjectives(env, p, profile, objectives, false, &r.Notes)
	if err != nil {
		return "", nil, err
	}
	// Goodput counts requests; an availability objective measures time.
	objs = slices.DeleteFunc(objs, func(s selected) bool {
		if s.obj.Kind == settings.KindAvailability {
			r.Notes.Add(analysis.Info, fmt.Sprintf("objective %s/%s is time based (availability), not a share of requests: goodput leaves it out", s.profile, s.obj.Name))
			return true
		}
		return false
	})
	if len(objs) == 0 {
		return "", nil, nil
	}
	var signals []catalog.Signal
	for _, s := range objs {
		signals = append(signals, s.signal())
	}
	r.ScopeNotices(ctx, signals)
	// Counts per objective, group and step (rates: resolution 1 s keeps them per second).
	hists := make([]map[string]slo.History, len(objs))
	groupsOf := make([][]slo.Group, len(objs))
	// Notices per objective, merged in objective order after the parallel reads.
	local := make([]analysis.Notices, len(objs))
	// verdicts: each latency objective's histogram judged per group and step (its buckets with
	// their own _sum and _count): no goodput is drawn at a step one of them disproves.
	verdicts := make([]sanity.Verdicts, len(objs))
	err = r.Parallel(len(objs), func(k int) error {
		s := objs[k]
		qs, err := windowQueries(ctx, r, s, p.Window, objectiveLe(ctx, r, s, p.Start.Add(-p.Window), p.End))
		if err != nil {
			return err
		}
		var m model.Matrix
		for _, q := range qs {
			part, err := r.Range(ctx, q)
			if err != nil {
				return err
			}
			m = append(m, part...)
		}
		var layouts map[string]slo.Layered
		groupsOf[k], hists[k], layouts = kindHistory(env, s, m, r.Steps, time.Second, &local[k])
		for _, g := range groupsOf[k] {
			layeredThresholdNotice(s, layouts[g.Key], &local[k])
			if s.obj.Kind == settings.KindLatency {
				if err := judgeObjective(ctx, r, s, p.Window, &verdicts[k]); err != nil {
					return err
				}
			}
			if len(groupsOf[k]) > 0 {
				thresholdNotice(ctx, r, s, firstPart(layouts[groupsOf[k][0].Key]), p.Start.Add(-p.Window), p.End)
			}
		}
		return nil
	})
	if err != nil {
		return "", nil, err
	}
	for k := range local {
		for _, n := range local[k].List() {
			r.Notes.Add(n.Severity, n.Text)
		}
	}
	// The latency query's warning when a histogram contradicts itself over the range.
	for _, s := range objs {
		if _, err := disprovedGroups(ctx, r, s, p.End.Sub(p.Start)+p.Window, p.End); err != nil {
			return "", nil, err
		}
	}
	// The request rate comes from the first objective counted per request.
	rateFrom := -1
	var names []string
	for k, s := range objs {
		names = append(names, s.obj.Name)
		if s.obj.Kind == settings.KindErrorRatio || !perToken[s.obj.Signal] {
			if rateFrom < 0 {
				rateFrom = k
			}
		} else {
			r.Notes.Add(analysis.Warning, fmt.Sprintf("objective %s: %s is observed per output token, not per request; goodput treats its attainment as the share of requests meeting it (use tpot for a per-request objective)", s.obj.Name, s.obj.Signal))
		}
	}
	if rateFrom < 0 {
		rateFrom = 0
		r.Notes.Add(analysis.Warning, "no objective of the profile is counted per request: the rate shown is of inter-token gaps, not requests")
	}
	r.Notes.Add(analysis.Info, fmt.Sprintf("goodput of profile %s (%s at once) is known only within bounds from separate histograms: lower = max(0, Σ attainment − (n − 1)) × request rate, upper = min attainment × request rate (Fréchet bounds); the true value lies between the two series", objs[0].profile, strings.Join(names, ", ")))
	var out []goodputGroup
	if len(groupsOf[rateFrom]) == 0 {
		r.Notes.Add(analysis.Info, fmt.Sprintf("goodput: no %s data in scope over the range (not exported, or no requests)", objs[rateFrom].signal()))
	}
	for _, g := range groupsOf[rateFrom] {
		lo := make([]float64, len(r.Steps))
		hi := make([]float64, len(r.Steps))
		complete := true
		for k := range objs {
			if _, ok := hists[k][g.Key]; !ok {
				complete = false
			}
		}
		if !complete {
			r.Notes.Add(analysis.Info, fmt.Sprintf("goodput%s: not every objective has data for this group", describeGroup(g.Labels)))
			continue
		}
		for t := range r.Steps {
			cs := make([]slo.Counts, len(objs))
			for k := range objs {
				cs[k] = hists[k][g.Key].Counts[t]
			}
			b := slo.GoodputBounds(cs)
			rate := cs[rateFrom].Total
			lo[t], hi[t] = b.Lower*rate, b.Upper*rate
			if math.IsNaN(b.Lower) {
				lo[t], hi[t] = math.NaN(), math.NaN()
			}
			for k := range objs {
				if v, ok := verdicts[k].Find(g.Labels); ok && v.Disproved(t) {
					lo[t], hi[t] = math.NaN(), math.NaN()
					r.Notes.Add(analysis.Warning, fmt.Sprintf("objective %s: %s", objs[k].obj.Name, v.Sentence()))
				}
			}
		}
		reqs := make([]float64, len(r.Steps))
		for t := range r.Steps {
			reqs[t] = math.NaN()
			if c := hists[rateFrom][g.Key].Counts[t]; c.Total > 0 {
				reqs[t] = c.Total
			}
		}
		out = append(out, goodputGroup{Key: g.Key, Labels: g.Labels, Lower: lo, Upper: hi, Requests: reqs})
	}
	return objs[0].profile, out, nil
}
