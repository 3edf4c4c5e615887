package queries

import (
	"context"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/data"
	"github.com/prometheus/common/model"

	"github.com/inferscope/inferscope-llm-datasource/pkg/analysis"
	"github.com/inferscope/inferscope-llm-datasource/pkg/analysis/slo"
	"github.com/inferscope/inferscope-llm-datasource/pkg/catalog"
	"github.com/inferscope/inferscope-llm-datasource/pkg/fetch"
	"github.com/inferscope/inferscope-llm-datasource/pkg/frames"
	"github.com/inferscope/inferscope-llm-datasource/pkg/settings"
)

// BurnRate is the burn_rate query: per objective × group, one series per burn-rate window and
// a status series.
type BurnRate struct {
	Common
	// Profile names an SLO profile of the settings (empty: every profile).
	Profile string `json:"profile,omitempty"`
	// Objectives restricts the profile to these objective names (empty: all).
	Objectives []string `json:"objectives,omitempty"`
	// Format is timeseries (default), status (the status series only),
	// sustained (the burn rate over the last 2 minutes on the bound of the
	// attainment bracket that favours the service, for a "for 5m" rule) or
	// budget (the burn-down: budget remaining over the period at each step).
	Format string `json:"format,omitempty"`
}

func (q *BurnRate) lists() []namedList { return []namedList{{"objectives", &q.Objectives}} }

var burnRateEnums = map[string][]string{"format": {"timeseries", "status", "sustained", "budget"}}

// validate checks the format, the profile and the objective names.
func (q *BurnRate) validate(s *settings.Settings) error {
	switch q.Format {
	case "", "timeseries", "status", "sustained", "budget":
	default:
		return badQueryf("format: %q is not timeseries (burn rates and status), status (the status series only, for alert rules), sustained (the burn rate over the last 2 minutes on the bound in the service's favour, for a 'for 5m' rule) or budget (the budget remaining over the period at each step)", q.Format)
	}
	_, err := objectiveProfiles(&s.SLOSettings, q.Profile, q.Objectives, true)
	return err
}

// runBurnRate answers the burn_rate query: per objective and group, one
// series per burn-rate window (labels profile, objective, window and the
// group) and one status series (0 ok, 0.5 possible, 1 ticket, 2 page), each a frame of
// its own with a unique label set, so a Grafana-managed alert rule can
// reduce and threshold them directly. With format "status" only the status
// series come back (an alert rule then thresholds the status alone).
//
// Method: one range query per objective asks the bucket (or finish-reason)
// rates over windows of resolution R at steps of R, from the range start
// minus the longest window (3 d) to its end (fetch.NewBurnGrid); every burn window is then a
// sum of consecutive R-steps (slo.History), so seven windows cost one
// query. R (slo.BurnResolution) divides 5 minutes, so every window is its
// true length whatever the panel step; the series are shown at the step.
func runBurnRate(ctx context.Context, env *fetch.Env, p fetch.Plan, q *BurnRate) (data.Frames, error) {
	r := fetch.NewRun(ctx, env, p)
	objs, err := selectObjectives(env, p, q.Profile, q.Objectives, true, &r.Notes)
	if err != nil {
		return nil, err
	}
	g := fetch.NewBurnGrid(p, env.Settings.ScrapeInterval, q.Format == "sustained")
	var series []analysis.Series
	for _, s := range objs {
		ss, err := burnObjective(ctx, r, s, q.Format, g)
		if err != nil {
			return nil, err
		}
		series = append(series, ss...)
	}
	r.Notes.Add(analysis.Info, fmt.Sprintf("burn rate = error ratio / (1 − target) over 5m … 3d, from request counts summed over %s steps; status 0 ok, 0.5 possible, 1 ticket, 2 page by the multi-window rule (page: 1h and 5m above 14.4, or 6h and 30m above 6; ticket: 1d and 2h above 3, or 3d and 6h above 1; factors for a 30d period, scaled for others) on the attainment bracket (page only when even the bound in the service's favour fires; possible otherwise), each row only once the stored history covers its long window", model.Duration(g.Res)))
	return frames.TimeSeries(series, meta(r, nil)), nil
}

// burnObjective reads one objective's history over the grid g (fetch.Run.BurnHistory),
// counts it per group (slo.Objective.HistoryOf) and returns the series of format for each
// group, with the objective's notices: error-SLI coverage, a histogram contradicting itself
// over the range, no data, a threshold that is not a bucket bound.
func burnObjective(ctx context.Context, r *fetch.Run, s fetch.Objective, format string, g fetch.BurnGrid) ([]analysis.Series, error) {
	p := r.Plan
	if s.Kind != settings.KindAvailability {
		r.ScopeNotices(ctx, []catalog.Signal{s.ReadSignal()})
	}
	r.ErrorNotices(ctx, s)
	m, err := r.BurnHistory(ctx, s, g)
	if err != nil {
		return nil, err
	}
	groups, hs, layouts := s.HistoryOf(m, g.Steps, g.Res, &r.Notes)
	// The latency query's warning when the histogram contradicts itself over the range.
	if _, err := r.DisprovedGroups(ctx, s, p.End.Sub(p.Start)+g.Res, p.End); err != nil {
		return nil, err
	}
	if len(groups) == 0 {
		r.Notes.Add(analysis.Info, fmt.Sprintf("objective %s/%s: no %s data in scope over the range and the 3d before it (not exported, or no requests)", s.Profile, s.Name, s.What()))
		return nil, nil
	}
	shown := every(g.Steps[g.Out:], g.Show)
	// The budget remaining over the period at every shown step (the burn-down).
	var budgets map[string][]float64
	if format == "budget" {
		if budgets, err = budgetSeries(ctx, r, s, shown, time.Duration(g.Show)*g.Res); err != nil {
			return nil, err
		}
	}
	r.ThresholdNotice(ctx, s, layouts[groups[0].Key], p.Start, p.End, &r.Notes)
	verdicts, err := r.RangeVerdicts(ctx, s, p)
	if err != nil {
		return nil, err
	}
	var series []analysis.Series
	for _, grp := range groups {
		s.LayeredNotice(layouts[grp.Key], &r.Notes)
		b := burnGroup{obj: s, group: grp, h: hs[grp.Key], grid: g, shown: shown, format: format}
		if v, ok := verdicts.Find(grp.Labels); ok && v.Disproved(0) {
			b.disproved, b.why = true, v.Sentence()
		}
		b.budget, b.hasBudget = budgets[grp.Key]
		series = append(series, b.series(r)...)
	}
	return series, nil
}

// burnGroup is one group of one objective of the burn_rate query: its history over the grid,
// the instants shown, the format asked, the remaining budget at those instants (format budget,
// where the group has one) and whether its histogram contradicts itself over the range (why:
// the verdict's sentence).
type burnGroup struct {
	obj       fetch.Objective
	group     slo.Group
	h         slo.History
	grid      fetch.BurnGrid
	shown     []time.Time
	format    string
	budget    []float64
	hasBudget bool
	disproved bool
	why       string
}

// series returns the group's series of the format: the remaining budget (budget), the
// burn rate over the last 2 minutes on the favourable bound (sustained), or the burn rate of
// each window (timeseries) and the status; burn rates are the point values, the status is
// from the attainment bracket, each row only once the history covers its long window
// (slo.History.StatusSeries).
func (b burnGroup) series(r *fetch.Run) []analysis.Series {
	s, h, g, scrape := b.obj, b.h, b.grid, r.Env.Settings.ScrapeInterval
	period := s.FactorPeriod(g.End)
	burn, _ := h.BurnSeries(s.Target, period)
	status := h.StatusSeries(s.Target, period, 2*scrape)
	// The windows' series only (status, sustained and budget formats draw none): the status
	// already counts a row only once the history covers its long window.
	if uncovered := slo.MaskUncovered(burn, h.CoveredAt(), 2*scrape); len(uncovered) > 0 && (b.format == "" || b.format == "timeseries") {
		r.Notes.Add(analysis.Info, fmt.Sprintf("objective %s/%s: burn rates over %s are not drawn where the stored history is shorter than the window (at the range's end it covers about %s): a longer window would read the same requests as a shorter one",
			s.Profile, s.Name, strings.Join(uncovered, ", "), slo.ShortDuration(lastCovered(h.CoveredAt()))))
	}
	if b.disproved {
		// The histogram contradicts itself over the range: no burn rate or status is drawn
		// from it (status value null: an alert rule's no data, never ok).
		r.Notes.Add(analysis.Warning, fmt.Sprintf("objective %s/%s: %s", s.Profile, s.Name, b.why))
		for w := range burn {
			for i := range burn[w] {
				burn[w][i] = math.NaN()
			}
		}
		for i := range status {
			status[i] = slo.Unknown
		}
	}
	switch b.format {
	case "budget":
		if !b.hasBudget {
			return nil
		}
		return []analysis.Series{{Name: "budget remaining", Labels: b.labels(map[string]string{"stat": "budget"}), Unit: "percentunit", Times: b.shown, Values: b.budget}}
	case "sustained":
		vals := make([]float64, 0, len(h.Counts))
		for _, c := range h.Window(g.Spike) {
			f, _ := slo.BurnBracket(c, s.Target)
			vals = append(vals, f)
		}
		name := slo.WindowName(g.Spike)
		return []analysis.Series{{Name: "burn rate " + name + " favourable", Labels: b.labels(map[string]string{"window": name, "bound": "favourable"}),
			Unit: "short", Times: b.shown, Values: every(vals[g.Out:], g.Show)}}
	}
	var out []analysis.Series
	for _, w := range slo.Windows {
		if b.format == "status" {
			break
		}
		name := slo.WindowName(w)
		out = append(out, analysis.Series{Name: "burn rate " + name, Labels: b.labels(map[string]string{"window": name}),
			Unit: "short", Times: b.shown, Values: every(burn[w][g.Out:], g.Show)})
	}
	vals := make([]float64, 0, len(b.shown))
	for _, st := range every(status[g.Out:], g.Show) {
		vals = append(vals, st.Value())
	}
	return append(out, analysis.Series{Name: "status", Labels: b.labels(nil), Unit: "short", Times: b.shown, Values: vals})
}

// labels are the series' labels: profile, objective, the group's and extra.
func (b burnGroup) labels(extra map[string]string) map[string]string {
	l := map[string]string{"profile": b.obj.Profile, "objective": b.obj.Name}
	for k, v := range b.group.Labels {
		l[k] = v
	}
	for k, v := range extra {
		l[k] = v
	}
	return l
}

// every returns every k-th element of xs, the last one included.
func every[T any](xs []T, k int) []T {
	if k <= 1 || len(xs) == 0 {
		return xs
	}
	var out []T
	for j := (len(xs) - 1) % k; j < len(xs); j += k {
		out = append(out, xs[j])
	}
	return out
}

// budgetSeries returns, per group, the error budget remaining over the objective's period at
// each shown instant (slo.BudgetRemaining of the period's counts; 1 where the period holds no
// request), from the reads of fetch.Run.BudgetHistory; for a calendar month the budget burns
// down from each instant's 1st (slo.History.BurnDown).
func budgetSeries(ctx context.Context, r *fetch.Run, s fetch.Objective, shown []time.Time, step time.Duration) (map[string][]float64, error) {
	if len(shown) == 0 {
		return nil, nil
	}
	m, steps, window, err := r.BudgetHistory(ctx, s, shown, step)
	if err != nil {
		return nil, err
	}
	var local analysis.Notices // the burn-rate history already said what these reads would
	groups, hs, _ := s.HistoryOf(m, steps, window, &local)
	out := map[string][]float64{}
	for _, g := range groups {
		h := hs[g.Key]
		var bs []slo.Budget
		if s.CalendarMonth {
			bs = h.BurnDown(s.Target, 0, true)
		} else {
			for _, c := range h.Counts {
				bs = append(bs, slo.BudgetRemaining(c, s.Target))
			}
		}
		vals := make([]float64, 0, len(shown))
		for _, b := range bs[len(bs)-len(shown):] {
			vals = append(vals, b.Remaining)
		}
		out[g.Key] = vals
	}
	return out, nil
}

// lastCovered is the history's coverage at its last step (0 for none).
func lastCovered(cov []time.Duration) time.Duration {
	if len(cov) == 0 {
		return 0
	}
	return cov[len(cov)-1]
}
