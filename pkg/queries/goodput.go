package queries

import (
	"context"

	"github.com/grafana/grafana-plugin-sdk-go/data"

	"github.com/inferscope/inferscope-llm-datasource/pkg/analysis"
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

// validate checks the profile (required) and the objective names against the settings.
func (q *Goodput) validate(s *settings.Settings) error {
	_, err := objectiveProfiles(&s.SLOSettings, q.Profile, q.Objectives, false)
	return err
}

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
