package fetch

import (
	"context"
	"slices"
	"strings"
	"time"

	"github.com/prometheus/common/model"

	"github.com/inferscope/inferscope-llm-datasource/pkg/analysis"
	"github.com/inferscope/inferscope-llm-datasource/pkg/analysis/sanity"
	"github.com/inferscope/inferscope-llm-datasource/pkg/analysis/slo"
	"github.com/inferscope/inferscope-llm-datasource/pkg/settings"
)

// This file plans the reads of the slo, burn_rate and goodput queries over their objectives
// (Objective): which windows, which buckets, which verdict and coverage queries, at which
// instants or steps.

// ObjectiveWindows is what the slo query reads of one objective at one instant: per window
// (the range's, the budget window, every burn window: slo.Windows) its queries' answers
// joined, the range window's _sum and _count rates (the histogram's sanity verdict, latency
// only) and the sample count over its period (CoveredQuery).
type ObjectiveWindows struct {
	ByWindow     map[time.Duration]model.Vector
	Sums, Counts model.Vector
	Covered      model.Vector
}

// windowPlan is the PromQL of one objective's ObjectiveWindows.
type windowPlan struct {
	byWindow     map[time.Duration][]string
	sums, counts []string
	covered      string
}

// SLOReads reads every objective's windows at instant at, all queries at once (InstantAll).
// The range window rangeW reads every bucket (the slo table's quantile); the budget and burn
// windows only the buckets around the threshold, united over the objectives on the same stage
// and selection (several profiles usually hold TTFT and ITL objectives over the same targets).
// On source probe the probe's histograms are read as they are: the engine's sanity verdicts
// judge the engine's own histograms.
func (r *Run) SLOReads(ctx context.Context, objs []Objective, rangeW time.Duration, at time.Time) ([]ObjectiveWindows, error) {
	les := r.sharedLe(ctx, objs, at)
	plans := make([]windowPlan, len(objs))
	var all []string
	for k, o := range objs {
		pl := windowPlan{byWindow: map[time.Duration][]string{}}
		windows := append([]time.Duration{rangeW, o.BudgetWindow(at)}, slo.Windows...)
		for i, w := range windows {
			if _, done := pl.byWindow[w]; done {
				continue
			}
			filter := les[k]
			if i == 0 {
				filter = nil
			}
			qs, err := r.ObjectiveQueries(ctx, o, w, filter)
			if err != nil {
				return nil, err
			}
			pl.byWindow[w] = qs
			all = append(all, qs...)
		}
		var err error
		if o.Probes == nil {
			if pl.sums, pl.counts, err = r.VerdictQueries(ctx, o, rangeW); err != nil {
				return nil, err
			}
			all = append(append(all, pl.sums...), pl.counts...)
		}
		if pl.covered, err = o.CoveredQuery(); err != nil {
			return nil, err
		}
		all = append(all, pl.covered)
		plans[k] = pl
	}
	vs, err := r.InstantAll(ctx, all, at)
	if err != nil {
		return nil, err
	}
	out := make([]ObjectiveWindows, len(objs))
	for k, pl := range plans {
		out[k] = ObjectiveWindows{ByWindow: map[time.Duration]model.Vector{}, Sums: concat(vs, pl.sums), Counts: concat(vs, pl.counts), Covered: vs[pl.covered]}
		for w, qs := range pl.byWindow {
			out[k].ByWindow[w] = concat(vs, qs)
		}
	}
	return out, nil
}

// sharedLe returns, per objective, the le values its budget and burn windows read (nil: every
// bucket): the union of the values each latency threshold on the same stage and selection
// needs (ObjectiveLe over the objective's budget window ending at at), sorted.
func (r *Run) sharedLe(ctx context.Context, objs []Objective, at time.Time) [][]string {
	shared := map[string][]string{}
	keyOf := make([]string, len(objs))
	for k, o := range objs {
		les := r.ObjectiveLe(ctx, o, at.Add(-o.BudgetWindow(at)), at)
		if les == nil {
			continue
		}
		key := o.Signal + "|" + strings.Join(o.Sub.Scope.Targets, ",") + "|" + strings.Join(o.Sub.Scope.Models, ",")
		for _, le := range les {
			if !slices.Contains(shared[key], le) {
				shared[key] = append(shared[key], le)
			}
		}
		keyOf[k] = key
	}
	out := make([][]string, len(objs))
	for k, key := range keyOf {
		if key != "" {
			slices.Sort(shared[key])
			out[k] = shared[key]
		}
	}
	return out
}

// BurnGrid is the time grid of the burn_rate query: a history at resolution Res (dividing
// every burn window, 5m … 3d, so every window is its true length whatever the panel step:
// slo.BurnResolution) over Steps, from the first shown step minus the longest window (or
// minus Spike for the sustained format) to End; the series are shown from step Out at every
// Show-th step (the panel step when coarser than Res).
type BurnGrid struct {
	Res, Spike  time.Duration
	From, First time.Time
	End         time.Time
	Steps       []time.Time
	Out, Show   int
}

// NewBurnGrid is the burn-rate grid of plan p at the data source's scrape interval. Spike is
// 2 minutes rounded up to whole steps (the sustained format's burn rate, which needs no 3-day
// history: a rule holding it for 5 minutes tells sustained degradation from a spike).
func NewBurnGrid(p Plan, scrape time.Duration, sustained bool) BurnGrid {
	g := BurnGrid{Res: slo.BurnResolution(p.Step, scrape), Show: 1}
	if p.Step > g.Res {
		g.Show = int(p.Step / g.Res)
	}
	g.End = AlignToStep(p.End, g.Res)
	g.First = AlignToStep(p.Start, g.Res)
	if g.First.Before(p.Start) {
		g.First = g.First.Add(g.Res)
	}
	if g.End.Before(g.First) {
		g.End = g.First
	}
	g.From = g.First.Add(-slo.Windows[len(slo.Windows)-1])
	g.Spike = (2*time.Minute + g.Res - 1) / g.Res * g.Res
	if sustained {
		g.From = g.First.Add(-g.Spike)
	}
	g.Steps = analysis.Steps(g.From, g.End, g.Res)
	g.Out = int(g.First.Sub(g.From) / g.Res)
	return g
}

// BurnHistory reads an objective's rates over windows of the grid's resolution at its steps
// (one chunked range query per partition, only the buckets around a latency threshold).
func (r *Run) BurnHistory(ctx context.Context, o Objective, g BurnGrid) (model.Matrix, error) {
	qs, err := r.ObjectiveQueries(ctx, o, g.Res, r.ObjectiveLe(ctx, o, g.From, g.End))
	if err != nil {
		return nil, err
	}
	return r.chunkedAll(ctx, qs, g.From, g.End, g.Res)
}

// BudgetHistory reads what an objective's budget remaining at each shown instant needs, and
// returns it with its steps and window: for a rolling period one range query whose window is
// the period, at the shown instants; for a calendar month the counts at the display step from
// the 1st of the first shown instant's month to the last shown instant (slo.History.BurnDown
// sums them from each instant's 1st).
func (r *Run) BudgetHistory(ctx context.Context, o Objective, shown []time.Time, step time.Duration) (model.Matrix, []time.Time, time.Duration, error) {
	first, last := shown[0], shown[len(shown)-1]
	steps, window := shown, o.Period
	if o.CalendarMonth {
		n := int(last.Sub(slo.PeriodStart(first, 0, true))/step) + 1
		steps = make([]time.Time, n)
		for i := range steps {
			steps[i] = last.Add(-time.Duration(n-1-i) * step)
		}
		window = step
	}
	qs, err := r.ObjectiveQueries(ctx, o, window, nil)
	if err != nil {
		return nil, nil, 0, err
	}
	m, err := r.chunkedAll(ctx, qs, steps[0], last, step)
	return m, steps, window, err
}

// RangeVerdicts judges a latency objective's histogram over the query's range as one window
// (sanity.JudgeWindow on every bucket, _sum and _count rate over [Start, End], at least the
// rate window); none for the other kinds.
func (r *Run) RangeVerdicts(ctx context.Context, o Objective, p Plan) (sanity.Verdicts, error) {
	if o.Kind != settings.KindLatency {
		return nil, nil
	}
	w := max(p.End.Sub(p.Start), p.Window)
	bq, err := r.ObjectiveQueries(ctx, o, w, nil)
	if err != nil {
		return nil, err
	}
	sq, cq, err := r.VerdictQueries(ctx, o, w)
	if err != nil {
		return nil, err
	}
	all := append(append(append([]string{}, bq...), sq...), cq...)
	vs, err := r.InstantAll(ctx, all, p.End)
	if err != nil {
		return nil, err
	}
	return sanity.JudgeWindow(o.Signal, concat(vs, bq), concat(vs, sq), concat(vs, cq), p.End), nil
}

// GoodputReads reads every objective's counts per group and step of the run (its rate window
// at each step, resolution 1 s: rates per second) and each latency objective's verdicts,
// concurrently, and adds their notices in objective order: first the threshold notices, then
// the counts' own.
func (r *Run) GoodputReads(ctx context.Context, objs []Objective) ([]slo.ObjectiveHistory, error) {
	p := r.Plan
	out := make([]slo.ObjectiveHistory, len(objs))
	thresholds := make([]analysis.Notices, len(objs))
	local := make([]analysis.Notices, len(objs))
	err := r.Parallel(len(objs), func(k int) error {
		o := objs[k]
		qs, err := r.ObjectiveQueries(ctx, o, p.Window, r.ObjectiveLe(ctx, o, p.Start.Add(-p.Window), p.End))
		if err != nil {
			return err
		}
		m, err := r.rangeAll(ctx, qs)
		if err != nil {
			return err
		}
		h := &out[k]
		var layouts map[string]slo.Layered
		h.Groups, h.Hists, layouts = o.HistoryOf(m, r.Steps, time.Second, &local[k])
		// Per group, as the reads have always been planned (the verdict's reads repeat).
		for _, g := range h.Groups {
			o.LayeredNotice(layouts[g.Key], &local[k])
			if o.Kind == settings.KindLatency {
				if h.Verdicts, err = r.judgeObjective(ctx, o, p.Window); err != nil {
					return err
				}
			}
			r.ThresholdNotice(ctx, o, layouts[h.Groups[0].Key], p.Start.Add(-p.Window), p.End, &thresholds[k])
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	for _, ns := range append(thresholds, local...) {
		for _, n := range ns.List() {
			r.Notes.Add(n.Severity, n.Text)
		}
	}
	return out, nil
}

// judgeObjective returns the sanity verdicts of a latency objective's histogram per group and
// step of r (every bucket with its own _sum and _count rate over window w): a step one of them
// disproves draws no value.
func (r *Run) judgeObjective(ctx context.Context, o Objective, w time.Duration) (sanity.Verdicts, error) {
	sums, counts, err := r.VerdictQueries(ctx, o, w)
	if err != nil {
		return nil, err
	}
	// The verdict needs every bucket (the threshold's two bounds cannot disprove much).
	full, err := r.ObjectiveQueries(ctx, o, w, nil)
	if err != nil {
		return nil, err
	}
	bm, err := r.rangeAll(ctx, full)
	if err != nil {
		return nil, err
	}
	sm, err := r.rangeAll(ctx, sums)
	if err != nil {
		return nil, err
	}
	cm, err := r.rangeAll(ctx, counts)
	if err != nil {
		return nil, err
	}
	return sanity.JudgeHistogram(o.Signal, bm, sm, cm, r.Steps), nil
}
