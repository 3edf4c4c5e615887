package fetch

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/prometheus/common/model"

	"github.com/inferscope/inferscope-llm-datasource/pkg/analysis"
	"github.com/inferscope/inferscope-llm-datasource/pkg/catalog"
)

// GatewayPlan returns p ready for the signal builders when a gateway (catalog.IsGateway: the
// llm-d router's endpoint picker, the LiteLLM proxy, OpenTelemetry GenAI instruments; detected
// from the stored names or set in the target's settings) is among the targets in scope. The router measures the same requests as the engines behind it,
// from the gateway's side, so:
//
//   - a query over all targets (no targets named) leaves the routers out of its scope when
//     engines remain (each request would otherwise count twice), with a notice saying how to
//     read the router's view; Plan.Gateways still lists them (the breakdown's gateway row);
//   - a query naming a router reads it (Scope.Gateway), with a notice when it also names engines
//     and is not grouped by target (the two views are then combined);
//   - groupBy tenant or priority says which targets cannot be split by it.
//
// Without a router in scope p is returned as is (apart from the groupBy notice) and the PromQL
// of every query is unchanged.
func GatewayPlan(ctx context.Context, env *Env, p Plan) Plan {
	byTenant := slices.Contains(p.Scope.By, "tenant")
	byPriority := slices.Contains(p.Scope.By, "priority")
	var epp, legacy, others []string
	hosted := false
	from := p.Start.Add(-p.Window)
	for _, t := range env.Targets(p.Scope.Targets) {
		v := env.ViewOf(ctx, t.Name, from, p.End)
		if catalog.IsGateway(v.Det.Engine) {
			epp = append(epp, t.Name)
			hosted = hosted || v.Det.Engine != catalog.EngineLLMDEPP
			if v.Det.Generation == catalog.EPPGenerationLegacy {
				legacy = append(legacy, t.Name)
			}
			continue
		}
		others = append(others, t.Name)
	}
	add := func(text string) { p.Notes = append(p.Notes, analysis.Notice{Severity: analysis.Info, Text: text}) }
	if (byTenant || byPriority) && len(epp) == 0 {
		add(noteNoTenantLabel)
		return p
	}
	if len(epp) == 0 {
		return p
	}
	p.Gateways = epp
	if len(p.Scope.Targets) == 0 && len(others) > 0 {
		p.Scope.Targets = others
		who := "the llm-d router's endpoint picker"
		if hosted {
			who = "a gateway (the llm-d router's endpoint picker, a LiteLLM proxy, OpenTelemetry GenAI instruments)"
		}
		add(fmt.Sprintf("%s: %s measures the engines' requests again from the gateway's side, so a query over all targets leaves it out (each request would count twice); name it in targets to read its view, or see the breakdown's gateway row", strings.Join(epp, ", "), who))
		if byTenant || byPriority {
			add(noteNoTenantLabel)
		}
		return p
	}
	p.Scope.Gateway = true
	if byTenant {
		p.TenantCutoff = tenantCutoff(ctx, env, epp, from, p.End)
	}
	if len(others) > 0 && !slices.Contains(p.Scope.By, "target") {
		add(fmt.Sprintf("the gateway-side view of %s and the engines' own view of %s are combined; group by target to tell them apart", strings.Join(epp, ", "), strings.Join(others, ", ")))
	}
	if byTenant && len(legacy) > 0 {
		add(fmt.Sprintf("groupBy tenant: %s export the router's deprecated inference_* names, whose request families carry no fairness_id: their series fall in one group with an empty tenant", strings.Join(legacy, ", ")))
	}
	return p
}

// noteNoTenantLabel is the notice of groupBy tenant or priority over targets none of which is an
// llm-d router.
const noteNoTenantLabel = "groupBy tenant/priority: only the llm-d router's endpoint picker labels requests by tenant (fairness_id) and priority; no target in scope does, so the series are not split"

// foldTenants bounds the tenant groups of a result: every value of catalog.TenantLabel after
// cutoff in name order (the TenantBound-th of the run's tenants, Plan.TenantCutoff) is folded
// into catalog.OverflowTenant, its samples summed per timestamp with the series it then shares
// a label set with (bucket rates, counter rates, sums and counts add up). A ratio (ratio true:
// the PromQL divides, as MeanPromQL does) cannot be summed: its folded series are left out
// instead. An empty cutoff folds nothing. It returns the result, the number of tenants folded
// and whether OverflowTenant is among the groups.
func foldTenants(v model.Value, cutoff string, ratio bool) (model.Value, int, bool) {
	folded := map[model.LabelValue]bool{}
	other := false
	see := func(m model.Metric) {
		t, ok := m[catalog.TenantLabel]
		switch {
		case !ok:
		case t == catalog.OverflowTenant:
			other = true
		case cutoff != "" && string(t) > cutoff:
			folded[t] = true
		}
	}
	switch x := v.(type) {
	case model.Matrix:
		for _, s := range x {
			see(s.Metric)
		}
	case model.Vector:
		for _, s := range x {
			see(s.Metric)
		}
	default:
		return v, 0, false
	}
	if len(folded) == 0 {
		return v, 0, other
	}
	relabel := func(m model.Metric) (model.Metric, bool) {
		if !folded[m[catalog.TenantLabel]] {
			return m, false
		}
		c := m.Clone()
		c[catalog.TenantLabel] = catalog.OverflowTenant
		return c, true
	}
	switch x := v.(type) {
	case model.Matrix:
		out := model.Matrix{}
		idx := map[model.Fingerprint]int{}
		for _, s := range x {
			m, moved := relabel(s.Metric)
			if moved && ratio {
				continue
			}
			fp := m.Fingerprint()
			k, ok := idx[fp]
			if !ok {
				idx[fp] = len(out)
				out = append(out, &model.SampleStream{Metric: m, Values: slices.Clone(s.Values)})
				continue
			}
			out[k].Values = addSamples(out[k].Values, s.Values)
		}
		sort.Sort(out)
		return out, len(folded), !ratio || other
	case model.Vector:
		out := model.Vector{}
		idx := map[model.Fingerprint]int{}
		for _, s := range x {
			m, moved := relabel(s.Metric)
			if moved && ratio {
				continue
			}
			fp := m.Fingerprint()
			if k, ok := idx[fp]; ok {
				out[k].Value += s.Value
				continue
			}
			idx[fp] = len(out)
			c := *s
			c.Metric = m
			out = append(out, &c)
		}
		return out, len(folded), !ratio || other
	}
	return v, 0, other
}

// tenantCutoff is the TenantBound-th tenant in name order among the values of TenantLabel
// stored for the targets jobs in [from, to] (OverflowTenant and "" not counted), or "" when
// there are at most TenantBound of them: the Plan.TenantCutoff of a query grouped by tenant.
func tenantCutoff(ctx context.Context, env *Env, jobs []string, from, to time.Time) string {
	vals, err := env.labelValues(ctx, catalog.TenantLabel, catalog.JobsSelector(jobs), from, to)
	if err != nil {
		return ""
	}
	vals = slices.DeleteFunc(slices.Clone(vals), func(v string) bool { return v == "" || v == catalog.OverflowTenant })
	if len(vals) <= catalog.TenantBound {
		return ""
	}
	slices.Sort(vals)
	return vals[catalog.TenantBound-1]
}

// addSamples sums two sample lists by timestamp (both sorted by time).
func addSamples(a, b []model.SamplePair) []model.SamplePair {
	out := make([]model.SamplePair, 0, max(len(a), len(b)))
	i, j := 0, 0
	for i < len(a) || j < len(b) {
		switch {
		case j >= len(b) || (i < len(a) && a[i].Timestamp < b[j].Timestamp):
			out = append(out, a[i])
			i++
		case i >= len(a) || b[j].Timestamp < a[i].Timestamp:
			out = append(out, b[j])
			j++
		default:
			out = append(out, model.SamplePair{Timestamp: a[i].Timestamp, Value: a[i].Value + b[j].Value})
			i++
			j++
		}
	}
	return out
}

// boundTenants applies foldTenants to a result of a query grouped by tenant and adds, once per
// run, the notices naming the overflow. Safe for concurrent use (it locks the run).
func (r *Run) boundTenants(q string, v model.Value) model.Value {
	if !slices.Contains(r.Plan.Scope.By, "tenant") {
		return v
	}
	ratio := strings.Contains(q, " / ")
	out, folded, other := foldTenants(v, r.Plan.TenantCutoff, ratio)
	if !other && folded == 0 {
		return out
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if other {
		r.Notes.Add(analysis.Info, fmt.Sprintf("tenant %q is the llm-d router's overflow, not a tenant: the router labels at most %d tenants (x-llm-d-inference-fairness-id values) over its life and counts every later one under %q", catalog.OverflowTenant, catalog.TenantBound, catalog.OverflowTenant))
	}
	if folded > 0 && !ratio {
		r.Notes.Add(analysis.Warning, fmt.Sprintf("more than %d tenants in scope (routers that each label their own first %d): the tenants after the first %d in name order are folded into %q (their rates and counts summed)", catalog.TenantBound, catalog.TenantBound, catalog.TenantBound, catalog.OverflowTenant))
	}
	if folded > 0 && ratio {
		r.Notes.Add(analysis.Warning, fmt.Sprintf("more than %d tenants in scope: the means of the tenants after the first %d in name order are left out (a mean cannot be summed into %q)", catalog.TenantBound, catalog.TenantBound, catalog.OverflowTenant))
	}
	return out
}
