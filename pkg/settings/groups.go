package settings

import (
	"fmt"
	"reflect"
	"slices"
	"strings"

	"github.com/prometheus/common/model"
)

// DefaultGroupTargetLabels are the labels that name one discovered target of
// a target group when the group names none: a Kubernetes pod, as
// kube-prometheus-stack's ServiceMonitors and PodMonitors label its series.
var DefaultGroupTargetLabels = []string{"namespace", "pod"}

// DefaultGroupMaxTargets is how many discovered targets a target group lists
// when it sets no maxTargets; MaxGroupMaxTargets is the most it may set.
const (
	DefaultGroupMaxTargets = 100
	MaxGroupMaxTargets     = 1000
)

// TargetGroup is a remote-mode fleet of targets that follows the series on
// the server instead of a list kept by hand (jsonData "targetGroups"): every
// series Selector matches belongs to the group, and each distinct
// combination of TargetLabels among them is one discovered target (a pod).
// Targets appear and disappear as their series do; autoscaled or restarted
// pods under new names need no edit of the data source.
//
// The group is also a target of its own, named Name: every query type,
// template variable and alert rule selects it like a configured target and
// aggregates over all of its pods, so a pod replaced under a new name
// continues the group's history and alerts. groupBy may name any of
// TargetLabels (one series per discovered target, e.g. groupBy "pod") or
// GroupLabels (e.g. "deployment", or a label kube-prometheus copies from the
// pod such as "app_kubernetes_io_name").
type TargetGroup struct {
	// Name is the group's target name (the stored job label of its series
	// in the plugin's PromQL), under the same rule as a target's name.
	Name string `json:"name"`
	// Selector picks the group's series on the server, e.g.
	// {namespace="llm", job="vllm"}; the rules of ParseSelector apply.
	Selector string `json:"selector"`
	// TargetLabels name one discovered target; default DefaultGroupTargetLabels.
	TargetLabels []string `json:"targetLabels,omitempty"`
	// GroupLabels are labels that group the discovered targets (deployment,
	// service); they may be named in groupBy like TargetLabels.
	GroupLabels []string `json:"groupLabels,omitempty"`
	// MaxTargets caps the discovered targets listed per group (Save & test,
	// GET /members); beyond it a notice names how many were left out.
	// Default DefaultGroupMaxTargets, at most MaxGroupMaxTargets.
	MaxTargets int `json:"maxTargets,omitempty"`
	// Engine optionally overrides engine detection for the whole group.
	Engine string `json:"engine,omitempty"`
}

// Labels returns the group's target labels followed by its group labels.
func (g TargetGroup) Labels() []string {
	return append(slices.Clone(g.TargetLabels), g.GroupLabels...)
}

// reservedGroupLabels may not be a group's target or group label: job is
// replaced by the group's name on the server's answers, le and quantile are
// the histograms' and summaries' bounds, model_name is groupBy "model", and
// the rest are the plugin's own output labels.
var reservedGroupLabels = []string{"job", "le", "quantile", "model_name", "target", "model", "stage", "stat", "bound", "signal", "source"}

// applyTargetGroups validates jsonData "targetGroups", fills their defaults
// and appends one Target per group (Group set), so that the rest of the
// plugin treats a group as a target whose selector is the group's. Groups
// exist in remote mode only: in embedded mode a target is a URL.
func (s *Settings) applyTargetGroups() error {
	if len(s.TargetGroups) == 0 {
		return nil
	}
	if s.Mode != ModeRemote {
		return fmt.Errorf("targetGroups: target groups follow the series of a remote server; set mode to %q (in embedded mode list the targets' URLs)", ModeRemote)
	}
	used := map[string]string{}
	own := map[string]int{} // a group's own target from an earlier load of these settings
	adopted := map[string]bool{}
	for i, t := range s.Targets {
		used[t.Name] = fmt.Sprintf("targets[%d]", i)
		own[t.Name] = i
	}
	for i, a := range s.GPUAgents {
		used[a.Name] = fmt.Sprintf("gpuAgents[%d]", i)
	}
	for i := range s.TargetGroups {
		g := &s.TargetGroups[i]
		f := fmt.Sprintf("targetGroups[%d]", i)
		if !nameRE.MatchString(g.Name) {
			return fmt.Errorf("%s.name: %q must be 1-63 letters, digits, '_', '.', ':' or '-'", f, g.Name)
		}
		if prev, dup := used[g.Name]; dup {
			// Settings encoded after a load carry each group's own target too: loading them
			// again adopts it instead of refusing the name (a round trip changes nothing).
			if k, ok := own[g.Name]; !ok || !reflect.DeepEqual(s.Targets[k], Target{Name: g.Name, Selector: g.Selector, Engine: g.Engine}) {
				return fmt.Errorf("%s.name: %q is already used by %s", f, g.Name, prev)
			}
			adopted[g.Name] = true
		}
		used[g.Name] = f
		if strings.TrimSpace(g.Selector) == "" {
			return fmt.Errorf("%s.selector: a target group needs the label selector of its series, such as {namespace=\"llm\", job=\"vllm\"}", f)
		}
		if _, err := ParseSelector(g.Selector); err != nil {
			return fmt.Errorf("%s.selector: %v", f, err)
		}
		if len(g.TargetLabels) == 0 {
			g.TargetLabels = slices.Clone(DefaultGroupTargetLabels)
		}
		seen := map[string]bool{}
		for _, field := range []struct {
			name string
			ls   []string
		}{{"targetLabels", g.TargetLabels}, {"groupLabels", g.GroupLabels}} {
			for k, l := range field.ls {
				ff := fmt.Sprintf("%s.%s[%d]", f, field.name, k)
				if !model.LabelName(l).IsValidLegacy() || strings.HasPrefix(l, "__") {
					return fmt.Errorf("%s: %q is not a label name such as pod or deployment", ff, l)
				}
				if slices.Contains(reservedGroupLabels, l) {
					return fmt.Errorf("%s: %q cannot name or group targets (job becomes the group's name; model_name is groupBy model; le, quantile and the plugin's output labels are taken)", ff, l)
				}
				if seen[l] {
					return fmt.Errorf("%s: %q is named twice", ff, l)
				}
				seen[l] = true
			}
		}
		switch {
		case g.MaxTargets == 0:
			g.MaxTargets = DefaultGroupMaxTargets
		case g.MaxTargets < 0 || g.MaxTargets > MaxGroupMaxTargets:
			return fmt.Errorf("%s.maxTargets: %d is not between 1 and %d", f, g.MaxTargets, MaxGroupMaxTargets)
		}
		if g.Engine != "" && !slices.Contains(Engines, g.Engine) {
			return fmt.Errorf("%s.engine: %q is not one of %s", f, g.Engine, strings.Join(Engines, ", "))
		}
	}
	for i := range s.TargetGroups {
		g := s.TargetGroups[i]
		if adopted[g.Name] {
			s.Targets[own[g.Name]].Group = &s.TargetGroups[i]
			continue
		}
		s.Targets = append(s.Targets, Target{Name: g.Name, Selector: g.Selector, Engine: g.Engine, Group: &s.TargetGroups[i]})
	}
	return nil
}

// GroupLabelsInScope returns the target and group labels of the target
// groups among targets (all targets when targets is empty): the labels a
// query may name in groupBy besides the canonical groups.
func (s *Settings) GroupLabelsInScope(targets []string) []string {
	var out []string
	for _, t := range s.Targets {
		if t.Group == nil || (len(targets) > 0 && !slices.Contains(targets, t.Name)) {
			continue
		}
		for _, l := range t.Group.Labels() {
			if !slices.Contains(out, l) {
				out = append(out, l)
			}
		}
	}
	return out
}
