package queries

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/inferscope/inferscope-llm-datasource/pkg/analysis"
	"github.com/inferscope/inferscope-llm-datasource/pkg/analysis/slo"
	"github.com/inferscope/inferscope-llm-datasource/pkg/catalog"
	"github.com/inferscope/inferscope-llm-datasource/pkg/fetch"
	"github.com/inferscope/inferscope-llm-datasource/pkg/settings"
)

// This file holds what the query types reading SLO profiles share (slo, burn_rate, goodput,
// cost's goodput, latency's and buckets' thresholds): the profile and objective fields'
// checks, the objectives a query selects, and goodput per group. Their reads are planned in
// fetch (fetch.Objective), their arithmetic is analysis/slo's.

// objectiveProfiles checks a query's profile and objective names against the settings and
// returns the profiles they select. all allows an empty profile to mean every profile.
func objectiveProfiles(st *settings.SLOSettings, profile string, objectives []string, all bool) ([]settings.Profile, error) {
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
	for _, o := range objectives {
		found := false
		for _, pr := range profiles {
			found = found || slices.ContainsFunc(pr.Objectives, func(x settings.Objective) bool { return x.Name == o })
		}
		if !found {
			return nil, badQueryf("objectives: %q is not an objective of the selected profile(s)", o)
		}
	}
	return profiles, nil
}

// selectObjectives resolves the query's profile and objective names against the settings
// (objectiveProfiles) and returns the objectives whose targets meet the query's
// (fetch.SelectObjectives).
func selectObjectives(env *fetch.Env, p fetch.Plan, profile string, objectives []string, all bool, notes *analysis.Notices) ([]fetch.Objective, error) {
	profiles, err := objectiveProfiles(&env.Settings.SLOSettings, profile, objectives, all)
	if err != nil {
		return nil, err
	}
	return fetch.SelectObjectives(p, profiles, objectives, env.Settings.ScrapeInterval, notes), nil
}

// goodputGroups computes the goodput bounds of a profile (restricted to objectives) per group
// of p's scope, adding the goodput notices to r: the reads of fetch.Run.GoodputReads, the
// bounds of slo.GoodputGroups. It returns the profile's name ("" when no objective applies)
// and the groups that have data for every objective.
func goodputGroups(ctx context.Context, env *fetch.Env, r *fetch.Run, p fetch.Plan, profile string, objectives []string) (string, []slo.GoodputGroup, error) {
	objs, err := selectObjectives(env, p, profile, objectives, false, &r.Notes)
	if err != nil {
		return "", nil, err
	}
	// Goodput counts requests; an availability objective measures time.
	objs = slices.DeleteFunc(objs, func(s fetch.Objective) bool {
		if s.Kind == settings.KindAvailability {
			r.Notes.Add(analysis.Info, fmt.Sprintf("objective %s/%s is time based (availability), not a share of requests: goodput leaves it out", s.Profile, s.Name))
			return true
		}
		return false
	})
	if len(objs) == 0 {
		return "", nil, nil
	}
	var signals []catalog.Signal
	for _, s := range objs {
		signals = append(signals, s.ReadSignal())
	}
	r.ScopeNotices(ctx, signals)
	hs, err := r.GoodputReads(ctx, objs)
	if err != nil {
		return "", nil, err
	}
	// The latency query's warning when a histogram contradicts itself over the range.
	counted := make([]slo.Objective, len(objs))
	for k, s := range objs {
		if _, err := r.DisprovedGroups(ctx, s, p.End.Sub(p.Start)+p.Window, p.End); err != nil {
			return "", nil, err
		}
		counted[k] = s.Objective
	}
	return objs[0].Profile, slo.GoodputGroups(counted, hs, len(r.Steps), &r.Notes), nil
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

// describeGroup renders a group's labels for a notice (slo.DescribeGroup).
func describeGroup(l map[string]string) string { return slo.DescribeGroup(l) }
