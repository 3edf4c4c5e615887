package diagnose

import (
	"math"
	"slices"
	"time"

	"github.com/prometheus/common/model"

	"github.com/inferscope/inferscope-llm-datasource/pkg/analysis/slo"
	"github.com/inferscope/inferscope-llm-datasource/pkg/settings"
)

// AnchorObjectives returns the latency objectives that anchor the
// diagnosis of target (serving models): those of the profile named name
// (the first profile when name is empty) whose Targets and Models
// selectors include the target and one of its models (an empty selector
// includes all). Error-ratio objectives are left out: the error_surge rule
// reads errors directly.
func AnchorObjectives(profiles []settings.Profile, name, target string, models []string) []settings.Objective {
	var p *settings.Profile
	for k := range profiles {
		if (name == "" && k == 0) || profiles[k].Name == name {
			p = &profiles[k]
			break
		}
	}
	if p == nil {
		return nil
	}
	var out []settings.Objective
	for _, o := range p.Objectives {
		if o.Kind == settings.KindErrorRatio || (len(o.Targets) > 0 && !slices.Contains(o.Targets, target)) {
			continue
		}
		if len(o.Models) > 0 && !slices.ContainsFunc(models, func(m string) bool { return slices.Contains(o.Models, m) }) {
			continue
		}
		out = append(out, o)
	}
	return out
}

// ObjectiveInputs computes, per target, latency objective o's compliance
// at each step from m, the windowed bucket rates of its latency stage's
// histogram grouped by target (`sum by (le, target) (rate(x_bucket[window]))`
// on the step grid, the catalogue's HistogramPromQL Buckets): Good is the
// share of the window's requests at or under o.Threshold, by
// slo.LatencyCounts (Prometheus's histogram_fraction, the slo query's own
// arithmetic), NaN where the window saw no request.
func ObjectiveInputs(o settings.Objective, m model.Matrix, steps []time.Time, window time.Duration) map[string]ObjectiveInput {
	groups, hs, _ := slo.LatencyHistory(m, steps, window, o.Threshold)
	out := map[string]ObjectiveInput{}
	for _, g := range groups {
		h := hs[g.Key]
		good := make([]float64, len(steps))
		for i := range good {
			good[i] = math.NaN()
			if i < len(h.Counts) {
				good[i], _, _ = h.Counts[i].Attainment()
			}
		}
		out[g.Labels["target"]] = ObjectiveInput{Name: o.Name, Signal: o.Signal, Threshold: o.Threshold, Target: o.Target, Good: good}
	}
	return out
}
