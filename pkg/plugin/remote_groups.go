package plugin

import (
	"context"
	"fmt"
	"net/url"
	"regexp"
	"slices"
	"sort"
	"strings"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"

	"github.com/inferscope/inferscope-llm-datasource/pkg/catalog"
	"github.com/inferscope/inferscope-llm-datasource/pkg/fetch"
	"github.com/inferscope/inferscope-llm-datasource/pkg/queries"
	"github.com/inferscope/inferscope-llm-datasource/pkg/settings"
)

// GroupMember is one discovered target of a target group: the values of the
// group's target labels (e.g. namespace and pod) and group labels (e.g.
// deployment) its series carry.
type GroupMember struct {
	Labels map[string]string `json:"labels"`
}

// GroupMembers is one target group's answer in GET /members: its discovered
// targets in the last hour (those whose series exist now or did within the
// hour), sorted by their target labels, at most the group's maxTargets.
type GroupMembers struct {
	Group        string        `json:"group"`
	Selector     string        `json:"selector"`
	TargetLabels []string      `json:"targetLabels"`
	GroupLabels  []string      `json:"groupLabels,omitempty"`
	Members      []GroupMember `json:"members"`
	// Total counts the discovered targets before the cap.
	Total int `json:"total"`
	// Notice says how many targets the cap left out, or that the group's
	// series carry none of its target labels; empty otherwise.
	Notice string `json:"notice,omitempty"`
}

// engineMarkers maps the metric names that mark a series as an inference
// engine's or GPU exporter's (each engine's running-requests gauge, the llm-d
// router's pool gauge, the GPU exporters' utilisation) to the engine.
func engineMarkers() map[string]catalog.Engine {
	marker := map[string]catalog.Engine{}
	for _, e := range catalog.Engines {
		for _, m := range catalog.LookupFor(catalog.Detection{Engine: e}, catalog.RequestsRunning).Metrics {
			marker[m.Name] = e
		}
	}
	// The llm-d router's endpoint picker exports no running gauge: its pool's ready-endpoint
	// gauge (one series per pool), under the current and the deprecated name.
	marker["llm_d_epp_ready_endpoints"] = catalog.EngineLLMDEPP
	marker["inference_pool_ready_pods"] = catalog.EngineLLMDEPP
	marker["DCGM_FI_DEV_GPU_UTIL"] = catalog.EngineDCGM
	marker[catalog.AgentUtilizationRatio] = catalog.EngineInferscopeGPU
	return marker
}

// membersQuery is the instant PromQL listing a group's discovered targets:
// one series per combination of its target and group labels among the
// engine series its selector matches in the last window.
func membersQuery(g settings.TargetGroup, window model.Duration) (string, error) {
	ms, err := settings.ParseSelector(g.Selector)
	if err != nil {
		return "", fmt.Errorf("targetGroups %s: %w", g.Name, err)
	}
	var names []string
	for n := range engineMarkers() {
		names = append(names, regexp.QuoteMeta(n))
	}
	sort.Strings(names)
	parts := []string{labels.MustNewMatcher(labels.MatchRegexp, model.MetricNameLabel, strings.Join(names, "|")).String()}
	for _, m := range ms {
		parts = append(parts, m.String())
	}
	return fmt.Sprintf("count by (%s) (last_over_time({%s}[%s]))", strings.Join(g.Labels(), ", "), strings.Join(parts, ", "), window), nil
}

// members lists the discovered targets of every target group (or of the
// one named group), capped at each group's maxTargets with a notice beyond.
// Remote mode reads them from the server's series; embedded mode lists the
// targets each group's discovery found, by instance.
func (i *Instance) members(ctx context.Context, group string) ([]GroupMembers, error) {
	if i.remote == nil {
		return i.embeddedMembers(group)
	}
	out := []GroupMembers{}
	found := false
	now := i.now()
	for _, g := range i.settings.TargetGroups {
		if group != "" && g.Name != group {
			continue
		}
		found = true
		q, err := membersQuery(g, model.Duration(fetch.Lookback))
		if err != nil {
			return nil, err
		}
		v, err := i.remote.server.Query(ctx, q, now)
		if err != nil {
			return nil, err
		}
		vec, _ := v.(model.Vector)
		gm := GroupMembers{Group: g.Name, Selector: g.Selector, TargetLabels: g.TargetLabels, GroupLabels: g.GroupLabels, Members: []GroupMember{}}
		seen := map[string]bool{}
		var all []GroupMember
		unnamed := 0
		for _, s := range vec {
			m := GroupMember{Labels: map[string]string{}}
			named := false
			var key []string
			for _, l := range g.Labels() {
				val := string(s.Metric[model.LabelName(l)])
				if val != "" {
					m.Labels[l] = val
				}
				if val != "" && containsString(g.TargetLabels, l) {
					named = true
				}
			}
			for _, l := range g.TargetLabels {
				key = append(key, m.Labels[l])
			}
			if !named {
				unnamed++
				continue
			}
			k := strings.Join(key, "\x00")
			if seen[k] {
				continue // one target under several group-label values (a relabelled deployment)
			}
			seen[k] = true
			all = append(all, m)
		}
		sort.Slice(all, func(a, b int) bool {
			for _, l := range g.TargetLabels {
				if all[a].Labels[l] != all[b].Labels[l] {
					return all[a].Labels[l] < all[b].Labels[l]
				}
			}
			return false
		})
		gm.Total = len(all)
		if len(all) > g.MaxTargets {
			gm.Notice = fmt.Sprintf("target group %s: %d targets (%s) in the last %s, more than its maxTargets %d: the first %d are listed; queries of the group still read all of them",
				g.Name, len(all), strings.Join(g.TargetLabels, ", "), fetch.Lookback, g.MaxTargets, g.MaxTargets)
			all = all[:g.MaxTargets]
		} else if len(all) == 0 && unnamed > 0 {
			gm.Notice = fmt.Sprintf("target group %s: its series carry none of its target labels (%s): name the labels that tell its targets apart, such as instance",
				g.Name, strings.Join(g.TargetLabels, ", "))
		}
		if all != nil {
			gm.Members = all
		}
		out = append(out, gm)
	}
	if group != "" && !found {
		return nil, queries.Badf("group: %q is not a target group of this data source", group)
	}
	return out, nil
}

// suggestGroup is the target group a job-level discovery candidate becomes
// when added ("Discover targets" creates groups, not pods): the job's
// selector, named by namespace and pod where its series carry them (else by
// instance), grouped by the Kubernetes labels its series carry.
func suggestGroup(job string, present map[string]bool) *settings.TargetGroup {
	g := &settings.TargetGroup{Name: job, Selector: fmt.Sprintf("{job=%q}", job)}
	switch {
	case present["pod"] && present["namespace"]:
		g.TargetLabels = []string{"namespace", "pod"}
	case present["pod"]:
		g.TargetLabels = []string{"pod"}
	default:
		g.TargetLabels = []string{"instance"}
	}
	for _, l := range groupLabelCandidates {
		if present[l] {
			g.GroupLabels = append(g.GroupLabels, l)
		}
	}
	return g
}

// groupLabelCandidates are labels that commonly group the pods of one
// deployment on a Prometheus fed by Kubernetes service discovery
// (kube-prometheus-stack's ServiceMonitor adds service; relabelling often
// copies app, app_kubernetes_io_name or a deployment label).
var groupLabelCandidates = []string{"service", "deployment", "app_kubernetes_io_name", "app"}

// groupsHealth is the health check's sentence per target group: how many
// targets it discovered in the last hour and by which labels, with the
// cap's notice.
func (i *Instance) groupsHealth(ctx context.Context) string {
	if i.remote == nil {
		var parts []string
		for _, g := range i.settings.TargetGroups {
			n := 0
			if i.collector != nil {
				n = len(i.collector.DiscoveredURLs(g.Name))
			}
			parts = append(parts, fmt.Sprintf("Target group %s: %d discovered targets.", g.Name, n))
		}
		return strings.Join(parts, " ")
	}
	ms, err := i.members(ctx, "")
	if err != nil {
		return "Target groups: their targets could not be listed: " + i.scrub.sanitize(err.Error()) + "."
	}
	var parts []string
	for _, g := range ms {
		p := fmt.Sprintf("Target group %s: %d discovered targets by %s in the last %s", g.Group, g.Total, strings.Join(g.TargetLabels, ", "), fetch.Lookback)
		if g.Notice != "" {
			p += " (" + g.Notice + ")"
		}
		parts = append(parts, p+".")
	}
	return strings.Join(parts, " ")
}

// withTargetURL returns cfg with target name scraped at url with the given
// bearer token: how an embedded-mode target group's health check probes one
// of its discovered targets.
func withTargetURL(cfg settings.Settings, name, url, bearer string) settings.Settings {
	ts := slices.Clone(cfg.Targets)
	for k := range ts {
		if ts[k].Name == name {
			ts[k].URL, ts[k].BearerToken = url, bearer
		}
	}
	cfg.Targets = ts
	return cfg
}

// embeddedMembers is members in embedded mode: the addresses each group's
// discovery found and the scrape manager scrapes, as instance.
func (i *Instance) embeddedMembers(group string) ([]GroupMembers, error) {
	out := []GroupMembers{}
	found := false
	for _, g := range i.settings.TargetGroups {
		if group != "" && g.Name != group {
			continue
		}
		found = true
		gm := GroupMembers{Group: g.Name, TargetLabels: []string{"instance"}, Members: []GroupMember{}}
		var urls []string
		if i.collector != nil {
			urls = i.collector.DiscoveredURLs(g.Name)
		}
		gm.Total = len(urls)
		if len(urls) > g.MaxTargets {
			gm.Notice = fmt.Sprintf("target group %s: %d discovered targets, more than its maxTargets %d: the first %d are listed; all are scraped", g.Name, len(urls), g.MaxTargets, g.MaxTargets)
			urls = urls[:g.MaxTargets]
		}
		for _, u := range urls {
			host := u
			if p, err := url.Parse(u); err == nil {
				host = p.Host
			}
			gm.Members = append(gm.Members, GroupMember{Labels: map[string]string{"instance": host}})
		}
		out = append(out, gm)
	}
	if group != "" && !found {
		return nil, queries.Badf("group: %q is not a target group of this data source", group)
	}
	return out, nil
}
