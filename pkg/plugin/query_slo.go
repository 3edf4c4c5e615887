package plugin

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
	"github.com/inferscope/inferscope-llm-datasource/pkg/analysis/slo"
	"github.com/inferscope/inferscope-llm-datasource/pkg/catalog"
	"github.com/inferscope/inferscope-llm-datasource/pkg/frames"
	"github.com/inferscope/inferscope-llm-datasource/pkg/hist"
	"github.com/inferscope/inferscope-llm-datasource/pkg/settings"
)

// SLO query types.
const (
	QueryTypeSLO      = "slo"
	QueryTypeBurnRate = "burn_rate"
	QueryTypeGoodput  = "goodput"
	QueryTypeBuckets  = "buckets"
)

// SLOQuery holds the fields of the SLO query types, embedded in Query (its
// keys sit at the top level of the query JSON).
type SLOQuery struct {
	// Profile names an SLO profile from the data-source settings. slo and
	// burn_rate use every profile when empty; goodput needs one; latency
	// draws the profile's thresholds on its stages; buckets adds the
	// profile's thresholds to Thresholds.
	Profile string `json:"profile,omitempty"`
	// Objectives restricts the profile to these objective names (empty: all).
	Objectives []string `json:"objectives,omitempty"`
	// Thresholds (seconds) to place in the bucket layout (buckets query).
	Thresholds []float64 `json:"thresholds,omitempty"`
}

// selected is one objective chosen by a query, with the plan narrowed to the
// objective's targets and models.
type selected struct {
	profile string
	obj     settings.Objective
	sub     *plan
}

func (s selected) spec() slo.Spec {
	th := s.obj.Threshold
	if s.obj.Kind == settings.KindErrorRatio {
		th = math.NaN()
	}
	return slo.Spec{Profile: s.profile, Objective: s.obj.Name, Kind: s.obj.Kind, Signal: s.obj.Signal,
		Threshold: th, Target: s.obj.Target, Period: s.obj.Period}
}

func (s selected) signal() catalog.Signal {
	if s.obj.Kind == settings.KindErrorRatio {
		return catalog.RequestsFinished
	}
	return catalog.Signal(s.obj.Signal)
}

// selectObjectives resolves the query's profile and objective names against
// the settings. all allows an empty profile to mean every profile.
func (i *Instance) selectObjectives(p *plan, all bool, notes *analysis.Notices) ([]selected, error) {
	st := &i.settings.SLOSettings
	var profiles []settings.Profile
	switch {
	case p.Profile != "":
		pr, ok := st.Profile(p.Profile)
		if !ok {
			return nil, badQueryf("profile: %q is not an SLO profile of this data source (profiles: %s)", p.Profile, strings.Join(st.ProfileNames(), ", "))
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
	for _, o := range p.Objectives {
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
	for _, o := range p.Objectives {
		if !found[o] {
			return nil, badQueryf("objectives: %q is not an objective of the selected profile(s)", o)
		}
	}
	return out, nil
}

// narrow returns a copy of p restricted to the objective's targets and
// models (intersected with the query's own); ok is false when the two
// target selections do not meet.
func narrow(p *plan, o settings.Objective) (*plan, bool) {
	sub := *p
	sub.Targets = intersect(p.Targets, o.Targets)
	sub.Models = intersect(p.Models, o.Models)
	if (len(p.Targets) > 0 && len(o.Targets) > 0 && len(sub.Targets) == 0) ||
		(len(p.Models) > 0 && len(o.Models) > 0 && len(sub.Models) == 0) {
		return nil, false
	}
	sub.scope.Targets, sub.scope.Models = sub.Targets, sub.Models
	return &sub, true
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
// w: the bucket-rate queries of each target partition for a latency
// objective, or the finished-request rates by reason for an error-ratio one.
// les, when not nil, restricts the buckets to those stored le values
// (thresholdLe).
func (i *Instance) windowQueries(ctx context.Context, s selected, w time.Duration, les []string) ([]string, error) {
	if qs, ok, err := i.kindQueries(s, w); ok {
		return qs, err
	}
	sr := &run{i: i, p: s.sub}
	// By target too: each target's histogram is counted on its own layout
	// and the good and total counts are added (slo.LayeredVector).
	hqs, err := sr.histogramQueries(ctx, catalog.Signal(s.obj.Signal), w, "target")
	if err != nil {
		return nil, err
	}
	out := make([]string, 0, len(hqs))
	for _, hq := range hqs {
		if les != nil {
			hq.Buckets = withLe(hq.Buckets, les)
		}
		out = append(out, hq.Buckets)
	}
	return out, nil
}

// objectiveLe is thresholdLe for a latency objective over [from, to]; nil
// (read every bucket) for error-ratio objectives or unknown layouts.
func (i *Instance) objectiveLe(ctx context.Context, s selected, from, to time.Time) []string {
	if s.obj.Kind != settings.KindLatency {
		return nil
	}
	les, ok := i.thresholdLe(ctx, s.sub, catalog.Signal(s.obj.Signal), s.obj.Threshold, from, to)
	if !ok {
		return nil
	}
	return les
}

// instantAll evaluates every distinct query at ts concurrently.
func (r *run) instantAll(ctx context.Context, queries []string, ts time.Time) (map[string]model.Vector, error) {
	var uniq []string
	seen := map[string]bool{}
	for _, q := range queries {
		if !seen[q] {
			seen[q] = true
			uniq = append(uniq, q)
		}
	}
	res := make([]model.Vector, len(uniq))
	err := r.parallel(len(uniq), func(k int) error {
		v, err := r.instantQuery(ctx, uniq[k], ts)
		res[k] = v
		return err
	})
	if err != nil {
		return nil, err
	}
	out := make(map[string]model.Vector, len(uniq))
	for k, q := range uniq {
		out[q] = res[k]
	}
	return out, nil
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

// thresholdNotice says, once per objective, when its threshold is not a
// bucket bound (naming the neighbouring bounds) — never silently rounded.
func thresholdNotice(s selected, layout []hist.Bucket, notes *analysis.Notices) {
	if s.obj.Kind == settings.KindErrorRatio || len(layout) == 0 {
		return
	}
	loc := slo.Locate(s.obj.Threshold, layout)
	if loc.Exact {
		return
	}
	notes.Add(analysis.Warning, fmt.Sprintf("objective %s/%s: %s; a rule written as le=\"%g\" would select no series", s.profile, s.obj.Name, loc, s.obj.Threshold))
}

// querySLO answers the slo query: one table row per objective × group.
func (i *Instance) querySLO(ctx context.Context, p *plan) (data.Frames, error) {
	r := i.newRun(p)
	objs, err := i.selectObjectives(p, true, &r.notes)
	if err != nil {
		return nil, err
	}
	var signals []catalog.Signal
	for _, s := range objs {
		if s.obj.Kind != settings.KindAvailability && !slices.Contains(signals, s.signal()) {
			signals = append(signals, s.signal())
		}
		r.errorNotices(ctx, s)
	}
	r.scopeNotices(ctx, signals)
	rangeW := p.to.Sub(p.from)
	if rangeW < p.window {
		rangeW = p.window
	}
	type objQueries struct {
		byWindow map[time.Duration][]string
		covered  string
	}
	plans := make([]objQueries, len(objs))
	var all []string
	// Objectives on the same stage and selection share their bucket queries:
	// the union of the le values each threshold needs (several profiles
	// usually hold TTFT and ITL objectives over the same targets).
	shared := map[string][]string{}
	leOf := make([][]string, len(objs))
	for k, s := range objs {
		les := i.objectiveLe(ctx, s, p.to.Add(-budgetWindow(s, p.to)), p.to)
		if les == nil {
			continue
		}
		key := s.obj.Signal + "|" + strings.Join(s.sub.Targets, ",") + "|" + strings.Join(s.sub.Models, ",")
		for _, le := range les {
			if !slices.Contains(shared[key], le) {
				shared[key] = append(shared[key], le)
			}
		}
		leOf[k] = []string{key}
	}
	for key := range shared {
		slices.Sort(shared[key])
	}
	for k, s := range objs {
		oq := objQueries{byWindow: map[time.Duration][]string{}}
		// The range window reads every bucket (for the quantile); the
		// others only the buckets around the threshold.
		var les []string
		if leOf[k] != nil {
			les = shared[leOf[k][0]]
		}
		windows := append([]time.Duration{rangeW, budgetWindow(s, p.to)}, slo.Windows...)
		for k, w := range windows {
			if _, done := oq.byWindow[w]; done {
				continue
			}
			filter := les
			if k == 0 {
				filter = nil
			}
			qs, err := i.windowQueries(ctx, s, w, filter)
			if err != nil {
				return nil, err
			}
			oq.byWindow[w] = qs
			all = append(all, qs...)
		}
		if oq.covered, err = coveredQuery(s); err != nil {
			return nil, err
		}
		all = append(all, oq.covered)
		plans[k] = oq
	}
	vs, err := r.instantAll(ctx, all, p.to)
	if err != nil {
		return nil, err
	}
	var rows []slo.Report
	for k, s := range objs {
		oq := plans[k]
		pw := budgetWindow(s, p.to)
		covered := pw
		if cv := vs[oq.covered]; len(cv) > 0 {
			covered = time.Duration(float64(cv[0].Value) * float64(i.settings.ScrapeInterval))
		} else {
			covered = 0
		}
		if covered > pw {
			covered = pw
		}
		spec := s.spec()
		spec.Period = factorPeriod(s, p.to)
		rangeCounts, rangeLayered, groups := i.kindCounts(s, concat(vs, oq.byWindow[rangeW]), rangeW.Seconds(), &r.notes)
		periodCounts, periodLayered, pGroups := i.kindCounts(s, concat(vs, oq.byWindow[pw]), pw.Seconds(), &r.notes)
		burn := map[time.Duration]map[string]slo.Counts{}
		for _, w := range slo.Windows {
			burn[w], _, _ = i.kindCounts(s, concat(vs, oq.byWindow[w]), w.Seconds(), &r.notes)
		}
		// Groups seen over the range or the period (a group idle over the
		// range still has a budget).
		seen := map[string]bool{}
		var all []slo.Group
		for _, g := range append(groups, pGroups...) {
			if !seen[g.Key] {
				seen[g.Key] = true
				all = append(all, g)
			}
		}
		slices.SortFunc(all, func(a, b slo.Group) int { return strings.Compare(a.Key, b.Key) })
		disproved, err := r.disprovedGroups(ctx, s, rangeW, p.to)
		if err != nil {
			return nil, err
		}
		if len(all) == 0 {
			r.notes.Add(analysis.Info, fmt.Sprintf("objective %s/%s: no %s data in scope over the last %s (not exported, or no requests)", s.profile, s.obj.Name, kindWhat(s), model.Duration(pw)))
			continue
		}
		for _, g := range all {
			layout, ok := rangeLayered[g.Key]
			if !ok {
				layout = periodLayered[g.Key]
			}
			layeredThresholdNotice(s, layout, &r.notes)
			w := slo.Windowed{Range: rangeCounts[g.Key], Period: periodCounts[g.Key], Burn: map[time.Duration]slo.Counts{}, RangeParts: rangeLayered[g.Key].Parts}
			for _, win := range slo.Windows {
				if c, ok := burn[win][g.Key]; ok {
					w.Burn[win] = c
				}
			}
			row := slo.NewReport(spec, g.Labels, w, covered)
			if why, bad := disproved[g.Key]; bad && row.Status == slo.OK {
				// A histogram that contradicts itself gives no grounds for "ok".
				row.Status, row.Reason = slo.Possible, "the histogram contradicts itself over the range, so no status can be trusted: "+why
			}
			rows = append(rows, row)
		}
		if covered < pw-2*i.settings.ScrapeInterval {
			r.notes.Add(analysis.Info, fmt.Sprintf("objective %s/%s: the stored history covers about %s of the %s period; the budget covers what exists", s.profile, s.obj.Name, shortDuration(covered), model.Duration(pw)))
		}
	}
	return frames.SLOTable(rows, r.meta()), nil
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

// withObjectiveThresholds adds the selected profile's latency thresholds
// to the latency frames of their stages (a field-config threshold). With no
// profile it returns the frames unchanged. When a profile holds several
// objectives on one stage, the strictest (lowest) threshold is drawn.
func (i *Instance) withObjectiveThresholds(p *plan, frs data.Frames) (data.Frames, error) {
	if p.Profile == "" {
		return frs, nil
	}
	pr, ok := i.settings.Profile(p.Profile)
	if !ok {
		return nil, badQueryf("profile: %q is not an SLO profile of this data source (profiles: %s)", p.Profile, strings.Join(i.settings.ProfileNames(), ", "))
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
	return frames.WithThresholds(frs, by), nil
}
