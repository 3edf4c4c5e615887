package queries

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/data"
	"github.com/prometheus/common/model"

	"github.com/inferscope/inferscope-llm-datasource/pkg/analysis"
	"github.com/inferscope/inferscope-llm-datasource/pkg/analysis/client"
	"github.com/inferscope/inferscope-llm-datasource/pkg/analysis/sanity"
	"github.com/inferscope/inferscope-llm-datasource/pkg/analysis/slo"
	"github.com/inferscope/inferscope-llm-datasource/pkg/catalog"
	"github.com/inferscope/inferscope-llm-datasource/pkg/fetch"
	"github.com/inferscope/inferscope-llm-datasource/pkg/frames"
	"github.com/inferscope/inferscope-llm-datasource/pkg/settings"
)

// SLO is the slo query: one table row per objective × group.
type SLO struct {
	Common
	// Profile names an SLO profile of the settings (empty: every profile).
	Profile string `json:"profile,omitempty"`
	// Objectives restricts the profile to these objective names (empty: all).
	Objectives []string `json:"objectives,omitempty"`
	// Source is engine (default) or probe: the objectives are evaluated on the
	// targets' client-side probes (latency objectives on ttft, itl, tpot, e2e
	// from the probe's histograms; error-ratio objectives on the probe's failed
	// requests, an availability SLI). Rows carry target, probe and source="probe".
	Source string `json:"source,omitempty"`
}

var sloEnums = map[string][]string{"source": sources}

func (q *SLO) lists() []namedList { return []namedList{{"objectives", &q.Objectives}} }

func (q *SLO) validate(*settings.Settings) error { return checkSource(q.Source) }

// sloProbe holds, for source probe, each objective's probes (by the index of
// the objective) and every probe's target; nil for source engine.
type sloProbe struct {
	names  [][]string
	target map[string]string
}

// windowQueries is the package's windowQueries, or for source probe the
// probe's bucket rates (latency) or outcome rates (error ratio).
func (sp *sloProbe) windowQueries(ctx context.Context, r *fetch.Run, k int, s selected, w time.Duration, les []string) ([]string, error) {
	if sp == nil {
		return windowQueries(ctx, r, s, w, les)
	}
	by := s.sub.Scope.By
	if s.obj.Kind == settings.KindErrorRatio {
		return []string{catalog.ProbeSuccessPromQL(sp.names[k], s.sub.Scope.Models, by, w)}, nil
	}
	return []string{catalog.ProbeHistogramPromQL(catalog.ProbeStageHistograms[s.signal()], sp.names[k], s.sub.Scope.Models, by, w).Buckets}, nil
}

// kindCounts is the package's kindCounts, or for source probe (an error-ratio
// objective) countsByGroup over the probe's outcome rates, which carry a
// finished_reason label (catalog.ProbeSuccessPromQL).
func (sp *sloProbe) kindCounts(env *fetch.Env, s selected, v model.Vector, seconds float64, notes *analysis.Notices) (map[string]slo.Counts, map[string]slo.Layered, []slo.Group) {
	if sp != nil && s.obj.Kind == settings.KindErrorRatio {
		out, _, groups := countsByGroup(s, v, seconds, notes)
		return out, nil, groups
	}
	return kindCounts(env, s, v, seconds, notes)
}

// runSLO answers the slo query: one table row per objective × group.
func runSLO(ctx context.Context, env *fetch.Env, p fetch.Plan, q *SLO) (data.Frames, error) {
	r := fetch.NewRun(ctx, env, p)
	objs, err := selectObjectives(env, p, q.Profile, q.Objectives, true, &r.Notes)
	if err != nil {
		return nil, err
	}
	var sp *sloProbe
	if q.Source == "probe" {
		sp = &sloProbe{target: map[string]string{}}
		kept := objs[:0]
		for _, s := range objs {
			if s.obj.Kind == settings.KindAvailability {
				r.Notes.Add(analysis.Info, fmt.Sprintf("objective %s/%s: an availability objective reads the targets' up series, not a probe; use source engine (on source probe an error_ratio objective is the availability SLI)", s.profile, s.obj.Name))
				continue
			}
			if _, ok := catalog.ProbeStageHistograms[s.signal()]; s.obj.Kind == settings.KindLatency && !ok {
				r.Notes.Add(analysis.Info, fmt.Sprintf("objective %s/%s: the probe does not measure %s (it is inside the engine); use source engine", s.profile, s.obj.Name, s.obj.Signal))
				continue
			}
			ps := probesOf(env, s.sub)
			if len(ps.names) == 0 {
				r.Notes.Add(analysis.Info, fmt.Sprintf("objective %s/%s: no client-side probe is configured for its targets (settings probes[])", s.profile, s.obj.Name))
				continue
			}
			for n, t := range ps.target {
				sp.target[n] = t
			}
			sp.names = append(sp.names, ps.names)
			kept = append(kept, s)
		}
		objs = kept
		r.Notes.Add(analysis.Info, "source probe: objectives evaluated on the client-side probes' own requests (latency as users see it; error ratio = failed probe requests, an availability SLI); see docs/probe.md")
	}
	var signals []catalog.Signal
	for _, s := range objs {
		if s.obj.Kind != settings.KindAvailability && !slices.Contains(signals, s.signal()) {
			signals = append(signals, s.signal())
		}
		if sp == nil {
			errorNotices(ctx, r, s)
		}
	}
	r.ScopeNotices(ctx, signals)
	rangeW := p.To.Sub(p.From)
	if rangeW < p.Window {
		rangeW = p.Window
	}
	type objQueries struct {
		byWindow map[time.Duration][]string
		covered  string
		// sums and counts are the range window's _sum and _count rates of a latency
		// objective's histogram, for its sanity verdict (with the range's full buckets).
		sums, counts []string
	}
	plans := make([]objQueries, len(objs))
	var all []string
	// Objectives on the same stage and selection share their bucket queries:
	// the union of the le values each threshold needs (several profiles
	// usually hold TTFT and ITL objectives over the same targets).
	shared := map[string][]string{}
	leOf := make([][]string, len(objs))
	for k, s := range objs {
		var les []string
		if sp == nil {
			les = objectiveLe(ctx, r, s, p.To.Add(-budgetWindow(s, p.To)), p.To)
		}
		if les == nil {
			continue
		}
		key := s.obj.Signal + "|" + strings.Join(s.sub.Scope.Targets, ",") + "|" + strings.Join(s.sub.Scope.Models, ",")
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
		obj := k
		windows := append([]time.Duration{rangeW, budgetWindow(s, p.To)}, slo.Windows...)
		for k, w := range windows {
			if _, done := oq.byWindow[w]; done {
				continue
			}
			filter := les
			if k == 0 {
				filter = nil
			}
			qs, err := sp.windowQueries(ctx, r, obj, s, w, filter)
			if err != nil {
				return nil, err
			}
			oq.byWindow[w] = qs
			all = append(all, qs...)
		}
		if sp != nil {
			// The probe's histograms are read as they are: the engine's sanity
			// verdicts judge the engine's own histograms.
			oq.covered = catalog.ProbeSampleCountPromQL(sp.names[obj], s.obj.Period)
		} else {
			if oq.sums, oq.counts, err = verdictQueries(ctx, r, s, rangeW); err != nil {
				return nil, err
			}
			all = append(append(all, oq.sums...), oq.counts...)
			oq.covered, err = coveredQuery(s)
		}
		if err != nil {
			return nil, err
		}
		all = append(all, oq.covered)
		plans[k] = oq
	}
	vs, err := r.InstantAll(ctx, all, p.To)
	if err != nil {
		return nil, err
	}
	var rows []slo.Report
	for k, s := range objs {
		oq := plans[k]
		pw := budgetWindow(s, p.To)
		covered := pw
		if cv := vs[oq.covered]; len(cv) > 0 {
			covered = time.Duration(float64(cv[0].Value) * float64(env.Settings.ScrapeInterval))
		} else {
			covered = 0
		}
		if covered > pw {
			covered = pw
		}
		spec := s.spec()
		spec.Period = factorPeriod(s, p.To)
		rangeCounts, rangeLayered, groups := sp.kindCounts(env, s, concat(vs, oq.byWindow[rangeW]), rangeW.Seconds(), &r.Notes)
		periodCounts, periodLayered, pGroups := sp.kindCounts(env, s, concat(vs, oq.byWindow[pw]), pw.Seconds(), &r.Notes)
		// One verdict per histogram and window: where the range's buckets are disproved by
		// their own _sum or _count, the row draws nothing from them (status unknown).
		var verdicts sanity.Verdicts
		if sp == nil {
			verdicts = sanity.JudgeWindow(s.obj.Signal, concat(vs, oq.byWindow[rangeW]), concat(vs, oq.sums), concat(vs, oq.counts), p.To)
		}
		burn := map[time.Duration]map[string]slo.Counts{}
		for _, w := range slo.Windows {
			burn[w], _, _ = sp.kindCounts(env, s, concat(vs, oq.byWindow[w]), w.Seconds(), &r.Notes)
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
		var disproved map[string]string
		if sp == nil {
			if disproved, err = disprovedGroups(ctx, r, s, rangeW, p.To); err != nil {
				return nil, err
			}
		}
		if len(all) == 0 {
			r.Notes.Add(analysis.Info, fmt.Sprintf("objective %s/%s: no %s data in scope over the last %s (not exported, or no requests)", s.profile, s.obj.Name, kindWhat(s), model.Duration(pw)))
			continue
		}
		layout := rangeLayered[all[0].Key]
		if len(layout.Parts) == 0 {
			layout = periodLayered[all[0].Key]
		}
		if sp == nil {
			thresholdNotice(ctx, r, s, firstPart(layout), p.To.Add(-s.obj.Period), p.To)
		}
		for _, g := range all {
			layout, ok := rangeLayered[g.Key]
			if !ok {
				layout = periodLayered[g.Key]
			}
			layeredThresholdNotice(s, layout, &r.Notes)
			w := slo.Windowed{Range: rangeCounts[g.Key], Period: periodCounts[g.Key], Burn: map[time.Duration]slo.Counts{}, RangeParts: rangeLayered[g.Key].Parts}
			if v, ok := verdicts.Find(g.Labels); ok && v.Disproved(0) {
				w.Disproved = v.Sentence()
				r.Notes.Add(analysis.Warning, fmt.Sprintf("objective %s/%s: %s", s.profile, s.obj.Name, w.Disproved))
			}
			for _, win := range slo.Windows {
				if c, ok := burn[win][g.Key]; ok {
					w.Burn[win] = c
				}
			}
			labels := g.Labels
			if sp != nil {
				labels = client.JoinProbes([]analysis.Series{{Labels: maps.Clone(g.Labels)}}, sp.target)[0].Labels
			}
			row := slo.NewReport(spec, labels, w, covered)
			if why, bad := disproved[g.Key]; bad && row.Status == slo.OK {
				// A histogram that contradicts itself gives no grounds for "ok".
				row.Status, row.Reason = slo.Possible, "the histogram contradicts itself over the range, so no status can be trusted: "+why
			}
			rows = append(rows, row)
		}
		if covered < pw-2*env.Settings.ScrapeInterval {
			r.Notes.Add(analysis.Info, fmt.Sprintf("objective %s/%s: the stored history covers about %s of the %s period; the budget covers what exists", s.profile, s.obj.Name, shortDuration(covered), model.Duration(pw)))
		}
	}
	return frames.SLOTable(rows, meta(r, nil)), nil
}
