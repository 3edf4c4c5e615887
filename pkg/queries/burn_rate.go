package queries

import (
	"context"
	"fmt"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/data"
	"github.com/prometheus/common/model"

	"github.com/inferscope/inferscope-llm-datasource/pkg/analysis"
	"github.com/inferscope/inferscope-llm-datasource/pkg/analysis/slo"
	"github.com/inferscope/inferscope-llm-datasource/pkg/catalog"
	"github.com/inferscope/inferscope-llm-datasource/pkg/fetch"
	"github.com/inferscope/inferscope-llm-datasource/pkg/frames"
	"github.com/inferscope/inferscope-llm-datasource/pkg/hist"
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
	// Format is timeseries (default) or status (the status series only).
	Format string `json:"format,omitempty"`
}

func (q *BurnRate) lists() []namedList { return []namedList{{"objectives", &q.Objectives}} }

var burnRateEnums = map[string][]string{"format": {"timeseries", "status"}}

// runBurnRate answers the burn_rate query: per objective and group, one
// series per burn-rate window (labels profile, objective, window and the
// group) and one status series (0 ok, 1 ticket, 2 page), each a frame of
// its own with a unique label set, so a Grafana-managed alert rule can
// reduce and threshold them directly. With format "status" only the status
// series come back (an alert rule then thresholds the status alone).
//
// Method: one range query per objective asks the bucket (or finish-reason)
// rates over windows of resolution R at steps of R, from the range start
// minus the longest window (3 d) to its end; every burn window is then a
// sum of consecutive R-steps (slo.History), so seven windows cost one
// query. R is the query step, at least four scrape intervals.
func runBurnRate(ctx context.Context, env *fetch.Env, p fetch.Plan, q *BurnRate) (data.Frames, error) {
	statusOnly := false
	switch q.Format {
	case "", "timeseries":
	case "status":
		statusOnly = true
	default:
		return nil, badQueryf("format: %q is neither timeseries (burn rates and status) nor status (the status series only, for alert rules)", q.Format)
	}
	r := fetch.NewRun(ctx, env, p)
	objs, err := selectObjectives(env, p, q.Profile, q.Objectives, true, &r.Notes)
	if err != nil {
		return nil, err
	}
	res := p.Step
	if min := 4 * env.Settings.ScrapeInterval; res < min {
		res = min
	}
	res = res.Truncate(time.Second)
	longest := slo.Windows[len(slo.Windows)-1]
	end := fetch.AlignToStep(p.End, res)
	first := fetch.AlignToStep(p.Start, res)
	if first.Before(p.Start) {
		first = first.Add(res)
	}
	if end.Before(first) {
		end = first
	}
	from := first.Add(-longest)
	steps := analysis.Steps(from, end, res)
	out := first.Sub(from) / res // index of the first step shown
	var series []analysis.Series
	for _, s := range objs {
		r.ScopeNotices(ctx, []catalog.Signal{s.signal()})
		qs, err := windowQueries(ctx, r, s, res, objectiveLe(ctx, r, s, from, end))
		if err != nil {
			return nil, err
		}
		var m model.Matrix
		for _, q := range qs {
			part, err := fetch.AsMatrix(r.Exec(ctx, fetch.Query{PromQL: q, From: from, To: end, Step: res, Chunked: true}))
			if err != nil {
				return nil, err
			}
			m = append(m, part...)
		}
		var groups []slo.Group
		var hs map[string]slo.History
		var layouts map[string][]hist.Bucket
		if s.obj.Kind == settings.KindErrorRatio {
			var noReason int
			groups, hs, noReason = slo.ErrorHistory(m, steps, res)
			noReasonNotice(s, noReason, &r.Notes)
		} else {
			groups, hs, layouts = slo.LatencyHistory(m, steps, res, s.obj.Threshold)
		}
		if len(groups) == 0 {
			r.Notes.Add(analysis.Info, fmt.Sprintf("objective %s/%s: no %s data in scope over the range and the 3d before it (not exported, or no requests)", s.profile, s.obj.Name, s.signal()))
			continue
		}
		for _, g := range groups {
			thresholdNotice(s, layouts[g.Key], &r.Notes)
			h := hs[g.Key]
			burn, status := h.BurnSeries(s.obj.Target, s.obj.Period)
			shown := steps[out:]
			labels := func(extra map[string]string) map[string]string {
				l := map[string]string{"profile": s.profile, "objective": s.obj.Name}
				for k, v := range g.Labels {
					l[k] = v
				}
				for k, v := range extra {
					l[k] = v
				}
				return l
			}
			for _, w := range slo.Windows {
				if statusOnly {
					break
				}
				name := slo.WindowName(w)
				series = append(series, analysis.Series{Name: "burn rate " + name, Labels: labels(map[string]string{"window": name}),
					Unit: "short", Times: shown, Values: burn[w][out:]})
			}
			vals := make([]float64, 0, len(shown))
			for _, st := range status[out:] {
				vals = append(vals, st.Value())
			}
			series = append(series, analysis.Series{Name: "status", Labels: labels(nil), Unit: "short", Times: shown, Values: vals})
		}
	}
	r.Notes.Add(analysis.Info, fmt.Sprintf("burn rate = error ratio / (1 − target) over 5m … 3d, from request counts summed over %s steps; status 0 ok, 1 ticket, 2 page by the multi-window rule (page: 1h and 5m above 14.4, or 6h and 30m above 6; ticket: 1d and 2h above 3, or 3d and 6h above 1; factors for a 30d period, scaled for others)", model.Duration(res)))
	return frames.TimeSeries(series, meta(r, nil)), nil
}
