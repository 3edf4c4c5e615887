package queries

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/prometheus/common/model"

	"github.com/inferscope/inferscope-llm-datasource/pkg/analysis"
	"github.com/inferscope/inferscope-llm-datasource/pkg/analysis/sanity"
	"github.com/inferscope/inferscope-llm-datasource/pkg/analysis/slo"
	"github.com/inferscope/inferscope-llm-datasource/pkg/catalog"
	"github.com/inferscope/inferscope-llm-datasource/pkg/fetch"
	"github.com/inferscope/inferscope-llm-datasource/pkg/hist"
	"github.com/inferscope/inferscope-llm-datasource/pkg/settings"
)

// This file holds the SLO query types' handling of the objective kinds
// (issue 19): latency objectives counted per target and then added (exact
// across bucket layouts), error_ratio from the inference handlers' HTTP
// answers, engine error finishes and admission rejections
// (catalog.ErrorSLIPromQL, slo.ErrorRatioCounts), availability from the
// serving state (catalog.ServingPromQL, slo.AvailabilityVector), calendar
// months, and the self-contradicting-histogram check.

// maxHistogramWarnings caps the inconsistent-histogram warnings per query.
const maxHistogramWarnings = 5

// groupBy returns the user's group labels of the objective's plan
// ("target", "model", "engine"; empty for none).
func (s selected) groupBy() []string { return groupByOf(s.sub) }

func groupByOf(p fetch.Plan) []string {
	var out []string
	for _, b := range p.Scope.By {
		if b != "" && b != "none" {
			// A dimension of a target's own metrics (catalog.DimensionPrefix) is
			// grouped by its stored label name.
			out = append(out, strings.TrimPrefix(b, catalog.DimensionPrefix))
		}
	}
	return out
}

// availabilityRes is the resolution of the serving-state subquery over
// window w: the scrape interval, coarsened so that a window holds at most
// 10,000 samples (30 d at a 15 s scrape: 4m20s; each sample stands for that
// much time).
func availabilityRes(env *fetch.Env, w time.Duration) time.Duration {
	res := env.Settings.ScrapeInterval
	if res <= 0 {
		res = settings.DefaultScrapeInterval
	}
	if min := w / 10000; res < min {
		res = min.Truncate(time.Second) + time.Second
	}
	return res
}

// kindQueries returns the PromQL of an error_ratio or availability
// objective over window w; ok is false for latency objectives.
func kindQueries(env *fetch.Env, s selected, w time.Duration) (qs []string, ok bool, err error) {
	switch s.obj.Kind {
	case settings.KindErrorRatio:
		q, err := catalog.ErrorSLIPromQL(s.sub.Scope, w)
		if err != nil {
			return nil, true, err
		}
		return []string{q.HTTP, q.Finishes, q.Rejections}, true, nil
	case settings.KindAvailability:
		q, err := catalog.AvailabilityStatPromQL(catalog.Scope{Targets: availabilityTargets(env, s.sub.Scope.Targets)}, w, availabilityRes(env, w))
		return []string{q}, true, err
	}
	return nil, false, nil
}

// splitErrorInputs separates the concatenated results of ErrorSLIPromQL's
// three queries by their labels: status (HTTP), finished_reason (finishes),
// neither (rejections).
func splitErrorInputs(v model.Vector) slo.ErrorInputs {
	var in slo.ErrorInputs
	for _, s := range v {
		switch {
		case s.Metric["status"] != "":
			in.HTTP = append(in.HTTP, s)
		case s.Metric["finished_reason"] != "":
			in.Finishes = append(in.Finishes, s)
		default:
			in.Rejections = append(in.Rejections, s)
		}
	}
	return in
}

func splitStat(v model.Vector) (good, known model.Vector) {
	for _, s := range v {
		m := s.Metric.Clone()
		delete(m, "stat")
		c := &model.Sample{Metric: m, Value: s.Value, Timestamp: s.Timestamp}
		if s.Metric["stat"] == "good" {
			good = append(good, c)
		} else {
			known = append(known, c)
		}
	}
	return good, known
}

// kindCounts is countsByGroup for the three kinds: per-group Counts of one
// window (v: the window's queries' results concatenated; seconds: its
// length), the layouts of a latency objective's groups, and the groups.
func kindCounts(env *fetch.Env, s selected, v model.Vector, seconds float64, notes *analysis.Notices) (map[string]slo.Counts, map[string]slo.Layered, []slo.Group) {
	out := map[string]slo.Counts{}
	var groups []slo.Group
	switch s.obj.Kind {
	case settings.KindErrorRatio:
		bs, ns := slo.ErrorRatioCounts(splitErrorInputs(v), slo.ErrorOptions{Include4xx: s.obj.Include4xx, IncludeAborts: s.obj.IncludeAborts}, s.groupBy())
		for _, n := range ns {
			notes.Add(analysis.Info, fmt.Sprintf("objective %s/%s: %s", s.profile, s.obj.Name, n))
		}
		for _, b := range bs {
			out[b.Group.Key] = scaleCounts(b.Counts, seconds)
			groups = append(groups, b.Group)
			if b.NoHTTP {
				notes.Add(analysis.Info, fmt.Sprintf("objective %s/%s%s: no inference HTTP counter (http_requests_total) for some target, so its 5xx answers are not counted there; the ratio is engine error finishes and admission rejections over finished and rejected requests", s.profile, s.obj.Name, describeGroup(b.Group.Labels)))
			}
		}
		return out, nil, groups
	case settings.KindAvailability:
		good, known := splitStat(v)
		w := time.Duration(seconds * float64(time.Second))
		gs, cs := slo.AvailabilityVector(good, known, availabilityRes(env, w), s.groupBy())
		return cs, nil, gs
	}
	ls, bad := slo.LayeredVector(v, s.groupBy())
	if bad > 0 {
		notes.Add(analysis.Warning, fmt.Sprintf("%s: %d bucket series had an le label that is not a number and were ignored", s.obj.Signal, bad))
	}
	layered := map[string]slo.Layered{}
	for _, l := range ls {
		out[l.Group.Key] = scaleCounts(l.Counts(s.obj.Threshold), seconds)
		layered[l.Group.Key] = l
		groups = append(groups, l.Group)
	}
	return out, layered, groups
}

// kindHistory builds each group's History from a range result of the
// objective's window queries at steps of res (windows of res).
func kindHistory(env *fetch.Env, s selected, m model.Matrix, steps []time.Time, res time.Duration, notes *analysis.Notices) ([]slo.Group, map[string]slo.History, map[string]slo.Layered) {
	if s.obj.Kind == settings.KindLatency {
		return slo.LayeredHistory(m, steps, res, s.obj.Threshold, s.groupBy())
	}
	idx := make(map[int64]int, len(steps))
	for k, t := range steps {
		idx[t.UnixMilli()] = k
	}
	perStep := make([]model.Vector, len(steps))
	for _, ss := range m {
		for _, p := range ss.Values {
			if k, ok := idx[int64(p.Timestamp)]; ok && !math.IsNaN(float64(p.Value)) {
				perStep[k] = append(perStep[k], &model.Sample{Metric: ss.Metric, Value: p.Value})
			}
		}
	}
	hs := map[string]slo.History{}
	var groups []slo.Group
	for k, v := range perStep {
		if len(v) == 0 {
			continue
		}
		cs, _, gs := kindCounts(env, s, v, res.Seconds(), notes)
		for _, g := range gs {
			h, ok := hs[g.Key]
			if !ok {
				h = slo.History{Times: steps, Resolution: res, Counts: make([]slo.Counts, len(steps))}
				groups = append(groups, g)
			}
			h.Counts[k] = cs[g.Key]
			hs[g.Key] = h
		}
	}
	slices.SortFunc(groups, func(a, b slo.Group) int {
		switch {
		case a.Key < b.Key:
			return -1
		case a.Key > b.Key:
			return 1
		}
		return 0
	})
	return groups, hs, nil
}

// coveredQuery is the sample count whose product with the scrape interval
// says how much of the period the store holds for the objective.
func coveredQuery(s selected) (string, error) {
	if s.obj.Kind == settings.KindAvailability {
		return catalog.UpSampleCountPromQL(s.sub.Scope, s.obj.Period)
	}
	return catalog.SampleCountPromQL(s.signal(), s.sub.Scope, s.obj.Period)
}

// errorNotices adds, per target in scope, what an error_ratio objective
// can and cannot see on its engine and version (catalog.ErrorSLINotes).
func errorNotices(ctx context.Context, r *fetch.Run, s selected) {
	if s.obj.Kind != settings.KindErrorRatio {
		return
	}
	for _, v := range r.Sub(s.sub).Views(ctx) {
		if !v.OK {
			continue
		}
		for _, n := range catalog.ErrorSLINotes(v.Name, v.Det, s.obj.IncludeAborts) {
			r.Notes.Add(analysis.Info, fmt.Sprintf("objective %s/%s: %s", s.profile, s.obj.Name, n))
		}
	}
	if n := catalog.ModelsNote(s.sub.Scope.Models); n != "" {
		r.Notes.Add(analysis.Info, fmt.Sprintf("objective %s/%s: %s", s.profile, s.obj.Name, n))
	}
}

// layeredThresholdNotice is thresholdNotice over a group's layouts: said
// when the threshold is not a bound of one of them.
func layeredThresholdNotice(s selected, l slo.Layered, notes *analysis.Notices) {
	if s.obj.Kind != settings.KindLatency || len(l.Parts) == 0 {
		return
	}
	// Whether the threshold is a bucket bound, and for which targets, is said
	// once per objective by thresholdNotice; this adds the layouts' note.
	if loc := l.Locate(s.obj.Threshold); loc.Exact {
		return
	}
	if n := l.Layouts(); n > 1 {
		notes.Add(analysis.Info, fmt.Sprintf("objective %s/%s: %d bucket layouts in one group; good and total requests are counted per target and added, which is exact whatever the layouts", s.profile, s.obj.Name, n))
	}
}

// kindWhat names what an objective reads, for notices.
func kindWhat(s selected) string {
	switch s.obj.Kind {
	case settings.KindAvailability:
		return "scrape (up)"
	case settings.KindErrorRatio:
		return "HTTP, finished-request or admission"
	}
	return string(s.signal())
}

// factorPeriod is the period the burn-rate factors scale with at instant
// at: the objective's period, or the length of at's calendar month.
func factorPeriod(s selected, at time.Time) time.Duration {
	if s.obj.CalendarMonth {
		return slo.MonthLength(at)
	}
	return s.obj.Period
}

// budgetWindow is the window the error budget is counted over, ending at
// at: the objective's period, or the time since the 1st of at's month (UTC;
// at least a minute).
func budgetWindow(s selected, at time.Time) time.Duration {
	if !s.obj.CalendarMonth {
		return s.obj.Period
	}
	w := at.Sub(slo.PeriodStart(at, 0, true)).Truncate(time.Minute)
	if w < time.Minute {
		w = time.Minute
	}
	return w
}

// disprovedGroups checks, for a latency objective, whether each target's
// histogram contradicts itself over window w ending at ts (the mean outside
// what the buckets allow, _count against +Inf: sanity.HistogramChecks, the
// latency query's check), adds the same warnings the latency query shows,
// and returns per output group (the objective's groupBy) the first
// finding's sentence. Groups absent from the map are consistent.
func disprovedGroups(ctx context.Context, r *fetch.Run, s selected, w time.Duration, ts time.Time) (map[string]string, error) {
	if s.obj.Kind != settings.KindLatency {
		return nil, nil
	}
	return disprovedFor(ctx, r, s.sub, catalog.Signal(s.obj.Signal), s.groupBy(), w, ts)
}

// disprovedFor is disprovedGroups for a latency stage over the targets of
// sub, grouped by groupBy.
func disprovedFor(ctx context.Context, r *fetch.Run, sub fetch.Plan, stage catalog.Signal, groupBy []string, w time.Duration, ts time.Time) (map[string]string, error) {
	hqs, err := r.Sub(sub).HistogramQueries(ctx, stage, w, "target")
	if err != nil {
		return nil, err
	}
	point := func(v model.Vector) model.Matrix {
		m := make(model.Matrix, 0, len(v))
		for _, x := range v {
			m = append(m, &model.SampleStream{Metric: x.Metric, Values: []model.SamplePair{{Timestamp: model.TimeFromUnixNano(ts.UnixNano()), Value: x.Value}}})
		}
		return m
	}
	out := map[string]string{}
	for _, hq := range hqs {
		vs, err := r.InstantAll(ctx, []string{hq.Buckets, hq.Sum, hq.Count}, ts)
		if err != nil {
			return nil, err
		}
		fs := sanity.HistogramChecks(string(stage), point(vs[hq.Buckets]), point(vs[hq.Sum]), point(vs[hq.Count]), []time.Time{ts})
		for k, f := range fs {
			if k < maxHistogramWarnings {
				r.Notes.Add(analysis.Warning, f.Text())
			}
			g := analysis.LabelsKey(projectLabels(f.Labels, groupBy))
			if _, seen := out[g]; !seen {
				out[g] = f.Text()
			}
		}
	}
	return out, nil
}

// projectLabels keeps the labels of groupBy (user names).
func projectLabels(l map[string]string, groupBy []string) map[string]string {
	out := map[string]string{}
	for _, g := range groupBy {
		if v, ok := l[g]; ok {
			out[g] = v
		}
	}
	return out
}

// firstPart is the first target's bucket layout of a layered group (nil when
// none), thresholdNotice's fallback when the stored layouts cannot be read.
func firstPart(l slo.Layered) []hist.Bucket {
	if len(l.Parts) == 0 {
		return nil
	}
	return l.Parts[0]
}

// judgeObjective sets *out to the sanity verdicts of a latency objective's
// histogram per group and step of r (every bucket with its own _sum and
// _count rate over window w): a step one of them disproves draws no value.
func judgeObjective(ctx context.Context, r *fetch.Run, s selected, w time.Duration, out *sanity.Verdicts) error {
	sums, counts, err := verdictQueries(ctx, r, s, w)
	if err != nil {
		return err
	}
	// The verdict needs every bucket (the threshold's two bounds cannot disprove much).
	full, err := windowQueries(ctx, r, s, w, nil)
	if err != nil {
		return err
	}
	read := func(qs []string) (model.Matrix, error) {
		var m model.Matrix
		for _, q := range qs {
			part, err := r.Range(ctx, q)
			if err != nil {
				return nil, err
			}
			m = append(m, part...)
		}
		return m, nil
	}
	bm, err := read(full)
	if err != nil {
		return err
	}
	sm, err := read(sums)
	if err != nil {
		return err
	}
	cm, err := read(counts)
	if err != nil {
		return err
	}
	*out = sanity.JudgeHistogram(s.obj.Signal, bm, sm, cm, r.Steps)
	return nil
}

// availabilityTargets are the targets an availability objective is measured over: the scope's,
// or every configured engine target. Never the `up` of probes or GPU agents: a probe is a
// client of the service and an agent watches its GPUs; their scrape health is not the
// service's availability (issue 40 point 2).
func availabilityTargets(env *fetch.Env, scope []string) []string {
	if len(scope) > 0 {
		return scope
	}
	var out []string
	for _, t := range env.Targets(nil) {
		out = append(out, t.Name)
	}
	return out
}
