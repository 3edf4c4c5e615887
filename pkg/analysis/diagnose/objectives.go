package diagnose

import (
	"math"
	"slices"
	"time"

	"github.com/prometheus/common/model"

	"github.com/inferscope/inferscope-llm-datasource/pkg/analysis"
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
// arithmetic; interpolated inside the bucket holding the threshold), NaN
// where the window saw no request.
func ObjectiveInputs(o settings.Objective, m model.Matrix, steps []time.Time, window time.Duration) map[string]ObjectiveInput {
	groups, hs, _ := slo.LatencyHistory(m, steps, window, o.Threshold)
	out := map[string]ObjectiveInput{}
	for _, g := range groups {
		h := hs[g.Key]
		good := make([]float64, len(steps))
		n := make([]float64, len(steps))
		for i := range good {
			good[i], n[i] = math.NaN(), math.NaN()
			if i < len(h.Counts) {
				good[i], _, _ = h.Counts[i].Attainment()
				n[i] = h.Counts[i].Total
			}
		}
		out[g.Labels["target"]] = ObjectiveInput{Name: o.Name, Signal: o.Signal, Threshold: o.Threshold, Target: o.Target, Good: good, Count: n}
	}
	return out
}

// ObjectiveStages lists, sorted and once each, the latency stages
// ("ttft", "itl", …) of the anchor objectives of any of targets: the
// histograms whose windowed bucket rates the input assembly fetches (one
// `sum by (le, target) (rate(x_bucket[window]))` per stage, the
// catalogue's HistogramPromQL Buckets) for AttachObjectives.
func ObjectiveStages(profiles []settings.Profile, profile string, targets, models []string) []string {
	var out []string
	for _, t := range targets {
		for _, o := range AnchorObjectives(profiles, profile, t, models) {
			if !slices.Contains(out, o.Signal) {
				out = append(out, o.Signal)
			}
		}
	}
	slices.Sort(out)
	return out
}

// TPOTGaps is the key of buckets (AttachObjectives) holding the windowed
// bucket rates of the per-token gap histogram (catalog ITL) at the TPOT
// objectives' thresholds: the reading of a TPOT objective on a target that
// exports no per-request TPOT histogram (vLLM before 0.11).
const TPOTGaps = "tpot:gaps"

// AttachObjectives sets each target's Objectives in in: its anchor
// objectives (AnchorObjectives) with their compliance per step computed
// from buckets, the windowed bucket rates per stage (ObjectiveStages). A
// TPOT objective with no per-request TPOT series for the target is read
// from buckets[TPOTGaps], the gap histogram, and marked PerGap (never
// judged breached on it). An objective whose stage was not fetched, or
// with no series for the target, is attached without data (NaN at every
// step): it cannot be judged, so its target's objectives are never all
// met (the SLO gate stays open).
func AttachObjectives(in *Input, profiles []settings.Profile, profile string, models []string, buckets map[string]model.Matrix) {
	for k := range in.Targets {
		t := &in.Targets[k]
		for _, o := range AnchorObjectives(profiles, profile, t.Name, models) {
			oi, ok := ObjectiveInputs(o, buckets[o.Signal], in.Steps, in.Window)[t.Name]
			if !ok && o.Signal == "tpot" {
				oi, ok = ObjectiveInputs(o, buckets[TPOTGaps], in.Steps, in.Window)[t.Name]
				oi.PerGap = ok
			}
			if !ok {
				oi = ObjectiveInput{Name: o.Name, Signal: o.Signal, Threshold: o.Threshold, Target: o.Target, Good: analysis.NaNs(len(in.Steps))}
			}
			t.Objectives = append(t.Objectives, oi)
		}
	}
}
