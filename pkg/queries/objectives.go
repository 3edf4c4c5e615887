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
	"github.com/inferscope/inferscope-llm-datasource/pkg/analysis/slo"
	"github.com/inferscope/inferscope-llm-datasource/pkg/catalog"
	"github.com/inferscope/inferscope-llm-datasource/pkg/fetch"
	"github.com/inferscope/inferscope-llm-datasource/pkg/hist"
	"github.com/inferscope/inferscope-llm-datasource/pkg/settings"
)

// This file holds what the SLO query types (slo, burn_rate, goodput, buckets) and latency's
// thresholds share: objectives chosen from the settings' profiles, their PromQL per window,
// and their notices.

// selected is one objective chosen by a query, with the plan narrowed to the
// objective's targets and models.
type selected struct {
	profile string
	obj     settings.Objective
	sub     fetch.Plan
}

func (s selected) spec() slo.Spec {
	th := s.obj.Threshold
	if s.obj.Kind == settings.KindErrorRatio {
		th = math.NaN()
	}
	period := model.Duration(s.obj.Period).String()
	if s.obj.CalendarMonth {
		period = settings.PeriodCalendarMonth
	}
	return slo.Spec{Profile: s.profile, Objective: s.obj.Name, Kind: s.obj.Kind, Signal: s.obj.Signal,
		Threshold: th, Target: s.obj.Target, Period: s.obj.Period, PeriodName: period}
}

func (s selected) signal() catalog.Signal {
	if s.obj.Kind == settings.KindErrorRatio {
		return catalog.RequestsFinished
	}
	return catalog.Signal(s.obj.Signal)
}

// selectObjectives resolves the query's profile and objective names against
// the settings. all allows an empty profile to mean every profile.
func selectObjectives(env *fetch.Env, p fetch.Plan, profile string, objectives []string, all bool, notes *analysis.Notices) ([]selected, error) {
	st := &env.Settings.SLOSettings
	var profiles []settings.Profile
	switch {
	case profile != "":
		pr, ok := st.Profile(profile)
		if !ok {
			return nil, badQueryf("profile: %q is not an SLO profile of this data source (profiles: %s)", profile, strings.Join(st.ProfileNames(), ", "))
		}
		profiles = []settings.Profile{pr}
	case all:
		profiles = st.Profiles
	default:
		return nil, badQueryf("profile: this query type needs an SLO profile (profiles: %s)", strings.Join(st.ProfileNames(), ", "))
	}
	if len(profiles) == 0 {
		return nil, badQueryf("profile: this data source has no SLO profile; add one in its settings")
	}
	want := map[string]bool{}
	for _, o := range objectives {
		want[o] = true
	}
	var out []selected
	found := map[string]bool{}
	for _, pr := range profiles {
		for _, o := range pr.Objectives {
			if len(want) > 0 && !want[o.Name] {
				continue
			}
			found[o.Name] = true
			sub, ok := narrow(p, o)
			if !ok {
				notes.Add(analysis.Info, fmt.Sprintf("objective %s/%s covers targets %s, none of which this query selects", pr.Name, o.Name, strings.Join(o.Targets, ", ")))
				continue
			}
			out = append(out, selected{profile: pr.Name, obj: o, sub: sub})
		}
	}
	for _, o := range objectives {
		if !found[o] {
			return nil, badQueryf("objectives: %q is not an objective of the selected profile(s)", o)
		}
	}
	return out, nil
}

// narrow returns p restricted to the objective's targets and models (intersected with the
// query's own); ok is false when the two target selections do not meet.
func narrow(p fetch.Plan, o settings.Objective) (fetch.Plan, bool) {
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

// windowQueries returns the PromQL giving an objective's rates over window
// w: the bucket-rate queries of each target partition, by target, for a
// latency objective; the error-SLI or serving-state queries for the other
// kinds (kindQueries).
// les, when not nil, restricts the buckets to those stored le values
// (thresholdLe).
func windowQueries(ctx context.Context, r *fetch.Run, s selected, w time.Duration, les []string) ([]string, error) {
	if qs, ok, err := kindQueries(r.Env, s, w); ok {
		return qs, err
	}
	// By target too: each target's histogram is counted on its own layout
	// and the good and total counts are added (slo.LayeredVector).
	hqs, err := r.Sub(s.sub).HistogramQueries(ctx, catalog.Signal(s.obj.Signal), w, "target")
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

// verdictQueries returns the PromQL of a latency objective's _sum and _count rates over window
// w, per target partition as windowQueries' buckets, for the histogram's sanity verdict
// (sanity.JudgeWindow); none for error-ratio objectives.
func verdictQueries(ctx context.Context, r *fetch.Run, s selected, w time.Duration) (sums, counts []string, err error) {
	if s.obj.Kind != settings.KindLatency {
		return nil, nil, nil
	}
	// By target too, as windowQueries' buckets: each target is judged on its own layout.
	hqs, err := r.Sub(s.sub).HistogramQueries(ctx, catalog.Signal(s.obj.Signal), w, "target")
	if err != nil {
		return nil, nil, err
	}
	for _, hq := range hqs {
		sums, counts = append(sums, hq.Sum), append(counts, hq.Count)
	}
	return sums, counts, nil
}

// objectiveLe is fetch.Run.ThresholdLe for a latency objective over [from, to]; nil
// (read every bucket) for error-ratio objectives or unknown layouts.
func objectiveLe(ctx context.Context, r *fetch.Run, s selected, from, to time.Time) []string {
	if s.obj.Kind != settings.KindLatency {
		return nil
	}
	les, ok := r.Sub(s.sub).ThresholdLe(ctx, catalog.Signal(s.obj.Signal), s.obj.Threshold, from, to)
	if !ok {
		return nil
	}
	return les
}

// countsByGroup turns the rates of one window (vectors of the partitions'
// queries concatenated) into per-group Counts (rates × seconds), and the
// bucket layouts of a latency objective.
func countsByGroup(s selected, v model.Vector, seconds float64, notes *analysis.Notices) (map[string]slo.Counts, map[string][]hist.Bucket, []slo.Group) {
	out := map[string]slo.Counts{}
	if s.obj.Kind == settings.KindErrorRatio {
		groups, cs, noReason := slo.ReasonVector(v)
		noReasonNotice(s, noReason, notes)
		for k, c := range cs {
			out[k] = scaleCounts(c, seconds)
		}
		return out, nil, groups
	}
	groups, buckets, bad := slo.BucketVector(v)
	if bad > 0 {
		notes.Add(analysis.Warning, fmt.Sprintf("%s: %d bucket series had an le label that is not a number and were ignored", s.obj.Signal, bad))
	}
	for k, b := range buckets {
		out[k] = scaleCounts(slo.LatencyCounts(s.obj.Threshold, b), seconds)
	}
	return out, buckets, groups
}

// noReasonNotice says that finished-request series without a finish reason
// were left out of an error-ratio objective (never counted as good).
func noReasonNotice(s selected, n int, notes *analysis.Notices) {
	if n > 0 {
		notes.Add(analysis.Warning, fmt.Sprintf("objective %s/%s: %d finished-request series carry no finish reason (the engine does not report one) and are left out of the error ratio", s.profile, s.obj.Name, n))
	}
}

func scaleCounts(c slo.Counts, f float64) slo.Counts {
	return slo.Counts{Good: c.Good * f, GoodLower: c.GoodLower * f, GoodUpper: c.GoodUpper * f, Total: c.Total * f}
}

func concat(vs map[string]model.Vector, qs []string) model.Vector {
	var out model.Vector
	for _, q := range qs {
		out = append(out, vs[q]...)
	}
	return out
}

// thresholdNotice says, once per objective, for which targets its threshold is not a bucket
// bound (naming the neighbouring bounds in each target's own layout, and the targets for which
// it is one): never silently rounded. layout is the group's buckets, used when the targets'
// stored layouts cannot be read.
func thresholdNotice(ctx context.Context, r *fetch.Run, s selected, layout []hist.Bucket, from, to time.Time) {
	if s.obj.Kind != settings.KindLatency {
		return
	}
	suffix := fmt.Sprintf("; a rule written as le=\"%g\" would select no series", s.obj.Threshold)
	layouts := r.Sub(s.sub).ThresholdLayouts(ctx, catalog.Signal(s.obj.Signal), from, to)
	if len(layouts) == 0 {
		if len(layout) == 0 {
			return
		}
		if loc := slo.Locate(s.obj.Threshold, layout); !loc.Exact {
			r.Notes.Add(analysis.Warning, fmt.Sprintf("objective %s/%s: %s%s", s.profile, s.obj.Name, loc, suffix))
		}
		return
	}
	for _, t := range slo.ThresholdNotices(s.obj.Threshold, layouts) {
		r.Notes.Add(analysis.Warning, fmt.Sprintf("objective %s/%s: %s%s", s.profile, s.obj.Name, t, suffix))
	}
}

// shortDuration renders d rounded to a readable precision ("2h10m", "45s").
func shortDuration(d time.Duration) string {
	switch {
	case d >= time.Hour:
		d = d.Round(time.Minute)
	case d >= time.Minute:
		d = d.Round(time.Second)
	default:
		d = d.Round(time.Second)
	}
	return model.Duration(d).String()
}

// objectiveThresholds returns the latency thresholds of a profile by stage, for the latency
// frames of those stages (frames.Meta.Thresholds); nil with no profile. When a profile holds
// several objectives on one stage, the strictest (lowest) threshold is drawn.
func objectiveThresholds(s *settings.Settings, profile string) (map[string]float64, error) {
	if profile == "" {
		return nil, nil
	}
	pr, ok := s.Profile(profile)
	if !ok {
		return nil, badQueryf("profile: %q is not an SLO profile of this data source (profiles: %s)", profile, strings.Join(s.ProfileNames(), ", "))
	}
	by := map[string]float64{}
	for _, o := range pr.Objectives {
		if o.Kind != settings.KindLatency {
			continue
		}
		if cur, ok := by[o.Signal]; !ok || o.Threshold < cur {
			by[o.Signal] = o.Threshold
		}
	}
	return by, nil
}

func describeGroup(l map[string]string) string {
	if len(l) == 0 {
		return ""
	}
	return " (" + strings.TrimSuffix(analysis.LabelsKey(l), ",") + ")"
}
