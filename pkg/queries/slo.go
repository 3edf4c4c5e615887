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

// validate checks the source, the profile and the objective names.
func (q *SLO) validate(s *settings.Settings) error {
	if err := checkSource(q.Source); err != nil {
		return err
	}
	_, err := objectiveProfiles(&s.SLOSettings, q.Profile, q.Objectives, true)
	return err
}

// runSLO answers the slo query: one table row per objective × group, from each objective's
// windows read at the range's end (fetch.Run.SLOReads: the range, the budget window and every
// burn window) counted per group (sloRows).
func runSLO(ctx context.Context, env *fetch.Env, p fetch.Plan, q *SLO) (data.Frames, error) {
	r := fetch.NewRun(ctx, env, p)
	objs, err := selectObjectives(env, p, q.Profile, q.Objectives, true, &r.Notes)
	if err != nil {
		return nil, err
	}
	c := sloCount{probe: q.Source == "probe"}
	if c.probe {
		objs, c.probeTarget = sloProbes(env, r, objs)
	}
	var signals []catalog.Signal
	for _, s := range objs {
		if s.Kind != settings.KindAvailability && !slices.Contains(signals, s.ReadSignal()) {
			signals = append(signals, s.ReadSignal())
		}
		if !c.probe {
			r.ErrorNotices(ctx, s)
		}
	}
	r.ScopeNotices(ctx, signals)
	c.rangeW = max(p.To.Sub(p.From), p.Window)
	reads, err := r.SLOReads(ctx, objs, c.rangeW, p.To)
	if err != nil {
		return nil, err
	}
	var rows []slo.Report
	for k, s := range objs {
		rs, err := c.rows(ctx, r, s, reads[k])
		if err != nil {
			return nil, err
		}
		rows = append(rows, rs...)
	}
	return frames.SLOTable(rows, meta(r, nil)), nil
}

// sloProbes keeps, for source probe, the objectives the targets' client-side probes can
// evaluate, each with its probes (fetch.Objective.Probes), and returns every probe's target;
// the others get a notice saying why.
func sloProbes(env *fetch.Env, r *fetch.Run, objs []fetch.Objective) ([]fetch.Objective, map[string]string) {
	target := map[string]string{}
	kept := objs[:0]
	for _, s := range objs {
		if s.Kind == settings.KindAvailability {
			r.Notes.Add(analysis.Info, fmt.Sprintf("objective %s/%s: an availability objective reads the targets' up series, not a probe; use source engine (on source probe an error_ratio objective is the availability SLI)", s.Profile, s.Name))
			continue
		}
		if _, ok := catalog.ProbeStageHistograms[s.ReadSignal()]; s.Kind == settings.KindLatency && !ok {
			r.Notes.Add(analysis.Info, fmt.Sprintf("objective %s/%s: the probe does not measure %s (it is inside the engine); use source engine", s.Profile, s.Name, s.Signal))
			continue
		}
		ps := probesOf(env, s.Sub)
		if len(ps.names) == 0 {
			r.Notes.Add(analysis.Info, fmt.Sprintf("objective %s/%s: no client-side probe is configured for its targets (settings probes[])", s.Profile, s.Name))
			continue
		}
		for n, t := range ps.target {
			target[n] = t
		}
		s.Probes = ps.names
		kept = append(kept, s)
	}
	r.Notes.Add(analysis.Info, "source probe: objectives evaluated on the client-side probes' own requests (latency as users see it; error ratio = failed probe requests, an availability SLI); see docs/probe.md")
	return kept, target
}

// sloCount is how the slo query counts its objectives' windows: the range window, and for
// source probe every probe's target (rows are labelled with both).
type sloCount struct {
	probe       bool
	probeTarget map[string]string
	rangeW      time.Duration
}

// counts is slo.Objective.WindowCounts, or for source probe and an error-ratio objective
// ReasonCounts over the probe's outcome rates (catalog.ProbeSuccessPromQL carries a
// finished_reason label).
func (c sloCount) counts(s fetch.Objective, v model.Vector, seconds float64, notes *analysis.Notices) (map[string]slo.Counts, map[string]slo.Layered, []slo.Group) {
	if c.probe && s.Kind == settings.KindErrorRatio {
		out, groups := s.ReasonCounts(v, seconds, notes)
		return out, nil, groups
	}
	return s.WindowCounts(v, seconds, notes)
}

// sloWindows is one objective's windows counted per group.
type sloWindows struct {
	rangeCounts, periodCounts   map[string]slo.Counts
	rangeLayered, periodLayered map[string]slo.Layered
	burn                        map[time.Duration]map[string]slo.Counts
	// verdicts judge each group's histogram over the range window (engine latency
	// objectives); disproved is each group's first self-contradiction's sentence.
	verdicts  sanity.Verdicts
	disproved map[string]string
}

// rows returns the objective's rows, one per group seen over the range or the budget window
// (a group idle over the range still has a budget), with the objective's notices.
func (c sloCount) rows(ctx context.Context, r *fetch.Run, s fetch.Objective, w fetch.ObjectiveWindows) ([]slo.Report, error) {
	end, scrape := r.Plan.To, r.Env.Settings.ScrapeInterval
	pw := s.BudgetWindow(end)
	covered := time.Duration(0)
	if len(w.Covered) > 0 {
		covered = min(time.Duration(float64(w.Covered[0].Value)*float64(scrape)), pw)
	}
	var cw sloWindows
	var groups, pGroups []slo.Group
	cw.rangeCounts, cw.rangeLayered, groups = c.counts(s, w.ByWindow[c.rangeW], c.rangeW.Seconds(), &r.Notes)
	cw.periodCounts, cw.periodLayered, pGroups = c.counts(s, w.ByWindow[pw], pw.Seconds(), &r.Notes)
	// One verdict per histogram and window: where the range's buckets are disproved by
	// their own _sum or _count, the row draws nothing from them (status unknown).
	if !c.probe {
		cw.verdicts = sanity.JudgeWindow(s.Signal, w.ByWindow[c.rangeW], w.Sums, w.Counts, end)
	}
	cw.burn = map[time.Duration]map[string]slo.Counts{}
	for _, win := range slo.Windows {
		cw.burn[win], _, _ = c.counts(s, w.ByWindow[win], win.Seconds(), &r.Notes)
	}
	all := unionGroups(groups, pGroups)
	if !c.probe {
		var err error
		if cw.disproved, err = r.DisprovedGroups(ctx, s, c.rangeW, end); err != nil {
			return nil, err
		}
	}
	if len(all) == 0 {
		r.Notes.Add(analysis.Info, fmt.Sprintf("objective %s/%s: no %s data in scope over the last %s (not exported, or no requests)", s.Profile, s.Name, s.What(), model.Duration(pw)))
		return nil, nil
	}
	if !c.probe {
		layout := cw.rangeLayered[all[0].Key]
		if len(layout.Parts) == 0 {
			layout = cw.periodLayered[all[0].Key]
		}
		r.ThresholdNotice(ctx, s, layout, end.Add(-s.Period), end, &r.Notes)
	}
	spec := s.Spec()
	spec.Period = s.FactorPeriod(end)
	rows := make([]slo.Report, 0, len(all))
	for _, g := range all {
		rows = append(rows, c.row(r, s, spec, g, cw, covered))
	}
	if covered < pw-2*scrape {
		r.Notes.Add(analysis.Info, fmt.Sprintf("objective %s/%s: the stored history covers about %s of the %s period; the budget covers what exists", s.Profile, s.Name, slo.ShortDuration(covered), model.Duration(pw)))
	}
	return rows, nil
}

// unionGroups returns the groups of a and b, once each, sorted by key.
func unionGroups(a, b []slo.Group) []slo.Group {
	seen := map[string]bool{}
	var all []slo.Group
	for _, g := range append(a, b...) {
		if !seen[g.Key] {
			seen[g.Key] = true
			all = append(all, g)
		}
	}
	slices.SortFunc(all, func(x, y slo.Group) int { return strings.Compare(x.Key, y.Key) })
	return all
}

// row is group g's row of the objective (slo.NewReport over its windows); a histogram that
// contradicts itself gives no grounds for "ok".
func (c sloCount) row(r *fetch.Run, s fetch.Objective, spec slo.Spec, g slo.Group, cw sloWindows, covered time.Duration) slo.Report {
	layout, ok := cw.rangeLayered[g.Key]
	if !ok {
		layout = cw.periodLayered[g.Key]
	}
	s.LayeredNotice(layout, &r.Notes)
	w := slo.Windowed{Range: cw.rangeCounts[g.Key], Period: cw.periodCounts[g.Key], Burn: map[time.Duration]slo.Counts{}, RangeParts: cw.rangeLayered[g.Key].Parts}
	if v, ok := cw.verdicts.Find(g.Labels); ok && v.Disproved(0) {
		w.Disproved = v.Sentence()
		r.Notes.Add(analysis.Warning, fmt.Sprintf("objective %s/%s: %s", s.Profile, s.Name, w.Disproved))
	}
	for _, win := range slo.Windows {
		if bc, ok := cw.burn[win][g.Key]; ok {
			w.Burn[win] = bc
		}
	}
	labels := g.Labels
	if c.probe {
		labels = client.JoinProbes([]analysis.Series{{Labels: maps.Clone(g.Labels)}}, c.probeTarget)[0].Labels
	}
	row := slo.NewReport(spec, labels, w, covered)
	if why, bad := cw.disproved[g.Key]; bad && row.Status == slo.OK {
		row.Status, row.Reason = slo.Possible, "the histogram contradicts itself over the range, so no status can be trusted: "+why
	}
	return row
}
