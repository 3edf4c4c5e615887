package fetch

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/prometheus/common/model"

	"github.com/inferscope/inferscope-llm-datasource/pkg/analysis"
	"github.com/inferscope/inferscope-llm-datasource/pkg/analysis/sanity"
	"github.com/inferscope/inferscope-llm-datasource/pkg/analysis/slo"
	"github.com/inferscope/inferscope-llm-datasource/pkg/catalog"
	"github.com/inferscope/inferscope-llm-datasource/pkg/settings"
)

// This file holds the reads of the SLO query types (slo, burn_rate, goodput): the objectives a
// query selects, their PromQL per window and kind, and the notices those reads give.

// maxHistogramWarnings caps the inconsistent-histogram warnings per objective read.
const maxHistogramWarnings = 5

// Objective is one objective chosen by an SLO query: what the analysis counts (slo.Objective),
// the query's plan narrowed to the objective's targets and models, and for source probe the
// client-side probes it is evaluated on (nil: the engines' own histograms and counters).
type Objective struct {
	slo.Objective
	Sub    Plan
	Probes []string
}

// SelectObjectives returns the objectives of profiles (only those named in names, when not
// empty) whose targets and models meet p's scope, each with p narrowed to them; the others get
// a notice. scrape is the data source's scrape interval.
func SelectObjectives(p Plan, profiles []settings.Profile, names []string, scrape time.Duration, notes *analysis.Notices) []Objective {
	var out []Objective
	for _, pr := range profiles {
		for _, o := range pr.Objectives {
			if len(names) > 0 && !slices.Contains(names, o.Name) {
				continue
			}
			sub, ok := narrow(p, o)
			if !ok {
				notes.Add(analysis.Info, fmt.Sprintf("objective %s/%s covers targets %s, none of which this query selects", pr.Name, o.Name, strings.Join(o.Targets, ", ")))
				continue
			}
			out = append(out, Objective{Objective: slo.Objective{Profile: pr.Name, Objective: o, GroupBy: groupByOf(sub), Scrape: scrape}, Sub: sub})
		}
	}
	return out
}

// groupByOf returns the user's group labels of a plan ("target", "model", "engine", a
// dimension of a target's own metrics (catalog.DimensionPrefix) by its stored label name;
// empty for none).
func groupByOf(p Plan) []string {
	var out []string
	for _, b := range p.Scope.By {
		if b != "" && b != "none" {
			out = append(out, strings.TrimPrefix(b, catalog.DimensionPrefix))
		}
	}
	return out
}

// narrow returns p restricted to the objective's targets and models (intersected with the
// query's own); ok is false when the two target selections do not meet.
func narrow(p Plan, o settings.Objective) (Plan, bool) {
	targets := intersect(p.Scope.Targets, o.Targets)
	models := intersect(p.Scope.Models, o.Models)
	if (len(p.Scope.Targets) > 0 && len(o.Targets) > 0 && len(targets) == 0) ||
		(len(p.Scope.Models) > 0 && len(o.Models) > 0 && len(models) == 0) {
		return p, false
	}
	return p.Narrow(targets, models), true
}

// intersect returns a ∩ b where an empty list means "all".
func intersect(a, b []string) []string {
	switch {
	case len(a) == 0:
		return slices.Clone(b)
	case len(b) == 0:
		return slices.Clone(a)
	}
	var out []string
	for _, x := range a {
		if slices.Contains(b, x) {
			out = append(out, x)
		}
	}
	return out
}

// What names what an objective reads, for notices.
func (o Objective) What() string {
	switch o.Kind {
	case settings.KindAvailability:
		return "scrape (up)"
	case settings.KindErrorRatio:
		return "HTTP, finished-request or admission"
	}
	return string(o.ReadSignal())
}

// ObjectiveQueries returns the PromQL giving an objective's rates over window w: for a
// latency objective the bucket-rate queries of each target partition, by target too (each
// target's histogram is counted on its own layout and the good and total counts added:
// slo.LayeredVector), restricted to the stored le values les when not nil (ObjectiveLe); the
// error-SLI queries (catalog.ErrorSLIPromQL) or the serving-state query
// (catalog.AvailabilityStatPromQL) for the other kinds. On source probe: the probe's bucket
// rates (latency) or outcome rates (error ratio), every bucket.
func (r *Run) ObjectiveQueries(ctx context.Context, o Objective, w time.Duration, les []string) ([]string, error) {
	if o.Probes != nil {
		by := o.Sub.Scope.By
		if o.Kind == settings.KindErrorRatio {
			return []string{catalog.ProbeSuccessPromQL(o.Probes, o.Sub.Scope.Models, by, w)}, nil
		}
		return []string{catalog.ProbeHistogramPromQL(catalog.ProbeStageHistograms[o.ReadSignal()], o.Probes, o.Sub.Scope.Models, by, w).Buckets}, nil
	}
	switch o.Kind {
	case settings.KindErrorRatio:
		q, err := catalog.ErrorSLIPromQL(o.Sub.Scope, w)
		if err != nil {
			return nil, err
		}
		return []string{q.HTTP, q.Finishes, q.Rejections}, nil
	case settings.KindAvailability:
		q, err := catalog.AvailabilityStatPromQL(catalog.Scope{Targets: r.availabilityTargets(o.Sub.Scope.Targets)}, w, slo.AvailabilityResolution(o.Scrape, w))
		return []string{q}, err
	}
	hqs, err := r.Sub(o.Sub).HistogramQueries(ctx, catalog.Signal(o.Signal), w, "target")
	if err != nil {
		return nil, err
	}
	out := make([]string, 0, len(hqs))
	for _, hq := range hqs {
		if les != nil {
			hq.Buckets = catalog.WithLe(hq.Buckets, les)
		}
		out = append(out, hq.Buckets)
	}
	return out, nil
}

// availabilityTargets are the targets an availability objective is measured over: the scope's,
// or every configured engine target. Never the `up` of probes or GPU agents: a probe is a
// client of the service and an agent watches its GPUs; their scrape health is not the
// service's availability.
func (r *Run) availabilityTargets(scope []string) []string {
	if len(scope) > 0 {
		return scope
	}
	var out []string
	for _, t := range r.Env.Targets(nil) {
		out = append(out, t.Name)
	}
	return out
}

// VerdictQueries returns the PromQL of a latency objective's _sum and _count rates over window
// w, per target partition as ObjectiveQueries' buckets (each target is judged on its own
// layout), for the histogram's sanity verdict (sanity.JudgeWindow); none for the other kinds.
func (r *Run) VerdictQueries(ctx context.Context, o Objective, w time.Duration) (sums, counts []string, err error) {
	if o.Kind != settings.KindLatency {
		return nil, nil, nil
	}
	hqs, err := r.Sub(o.Sub).HistogramQueries(ctx, catalog.Signal(o.Signal), w, "target")
	if err != nil {
		return nil, nil, err
	}
	for _, hq := range hqs {
		sums, counts = append(sums, hq.Sum), append(counts, hq.Count)
	}
	return sums, counts, nil
}

// ObjectiveLe is ThresholdLe for a latency objective over [from, to]; nil (read every bucket)
// for the other kinds, on source probe, or for unknown layouts.
func (r *Run) ObjectiveLe(ctx context.Context, o Objective, from, to time.Time) []string {
	if o.Kind != settings.KindLatency || o.Probes != nil {
		return nil
	}
	les, ok := r.Sub(o.Sub).ThresholdLe(ctx, catalog.Signal(o.Signal), o.Threshold, from, to)
	if !ok {
		return nil
	}
	return les
}

// CoveredQuery is the sample count over the objective's period whose product with the scrape
// interval says how much of the period the store holds: of the targets' `up` (availability),
// of the signal's series, or of the probes' requests on source probe.
func (o Objective) CoveredQuery() (string, error) {
	switch {
	case o.Probes != nil:
		return catalog.ProbeSampleCountPromQL(o.Probes, o.Period), nil
	case o.Kind == settings.KindAvailability:
		return catalog.UpSampleCountPromQL(o.Sub.Scope, o.Period)
	}
	return catalog.SampleCountPromQL(o.ReadSignal(), o.Sub.Scope, o.Period)
}

// ErrorNotices adds, per target in scope, what an error_ratio objective can and cannot see on
// its engine and version (catalog.ErrorSLINotes), and what its model selection leaves out.
func (r *Run) ErrorNotices(ctx context.Context, o Objective) {
	if o.Kind != settings.KindErrorRatio {
		return
	}
	for _, v := range r.Sub(o.Sub).Views(ctx) {
		if !v.OK {
			continue
		}
		for _, n := range catalog.ErrorSLINotes(v.Name, v.Det, o.IncludeAborts) {
			r.Notes.Add(analysis.Info, fmt.Sprintf("objective %s/%s: %s", o.Profile, o.Name, n))
		}
	}
	if n := catalog.ModelsNote(o.Sub.Scope.Models); n != "" {
		r.Notes.Add(analysis.Info, fmt.Sprintf("objective %s/%s: %s", o.Profile, o.Name, n))
	}
}

// ThresholdNotice says, once per latency objective, for which targets its threshold is not a
// bucket bound (naming the neighbouring bounds in each target's own layout stored in
// [from, to], and the targets for which it is one: slo.ThresholdNotices): never silently
// rounded. The group l's first layout stands in when the stored layouts cannot be read.
func (r *Run) ThresholdNotice(ctx context.Context, o Objective, l slo.Layered, from, to time.Time, notes *analysis.Notices) {
	if o.Kind != settings.KindLatency {
		return
	}
	suffix := fmt.Sprintf("; a rule written as le=\"%g\" would select no series", o.Threshold)
	layouts := r.Sub(o.Sub).ThresholdLayouts(ctx, catalog.Signal(o.Signal), from, to)
	if len(layouts) == 0 {
		layout := l.FirstLayout()
		if len(layout) == 0 {
			return
		}
		if loc := slo.Locate(o.Threshold, layout); !loc.Exact {
			notes.Add(analysis.Warning, fmt.Sprintf("objective %s/%s: %s%s", o.Profile, o.Name, loc, suffix))
		}
		return
	}
	for _, t := range slo.ThresholdNotices(o.Threshold, layouts) {
		notes.Add(analysis.Warning, fmt.Sprintf("objective %s/%s: %s%s", o.Profile, o.Name, t, suffix))
	}
}

// DisprovedGroups checks, for a latency objective, whether each target's histogram
// contradicts itself over window w ending at ts (the mean outside what the buckets allow,
// _count against +Inf: sanity.HistogramChecks, the latency query's check), adds the same
// warnings the latency query shows (at most maxHistogramWarnings per partition), and returns
// per output group (the objective's GroupBy) the first finding's sentence. Groups absent from
// the map are consistent; nil for the other kinds.
func (r *Run) DisprovedGroups(ctx context.Context, o Objective, w time.Duration, ts time.Time) (map[string]string, error) {
	if o.Kind != settings.KindLatency {
		return nil, nil
	}
	stage := catalog.Signal(o.Signal)
	hqs, err := r.Sub(o.Sub).HistogramQueries(ctx, stage, w, "target")
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
			g := analysis.LabelsKey(projectLabels(f.Labels, o.GroupBy))
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

// concat joins the vectors of the queries qs from an InstantAll answer, in the order of qs.
func concat(vs map[string]model.Vector, qs []string) model.Vector {
	var out model.Vector
	for _, q := range qs {
		out = append(out, vs[q]...)
	}
	return out
}

// rangeAll runs each query of qs as a range query over the plan's range (Range) and joins
// their series, in the order of qs.
func (r *Run) rangeAll(ctx context.Context, qs []string) (model.Matrix, error) {
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

// chunkedAll runs each query of qs as a range query over [from, to] at step, in pieces of at
// most MaxRangePoints steps (Query.Chunked), and joins their series in the order of qs.
func (r *Run) chunkedAll(ctx context.Context, qs []string, from, to time.Time, step time.Duration) (model.Matrix, error) {
	var m model.Matrix
	for _, q := range qs {
		part, err := AsMatrix(r.Exec(ctx, Query{PromQL: q, From: from, To: to, Step: step, Chunked: true}))
		if err != nil {
			return nil, err
		}
		m = append(m, part...)
	}
	return m, nil
}
