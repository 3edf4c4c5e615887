package fetch

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/prometheus/common/model"

	"github.com/inferscope/inferscope-llm-datasource/pkg/analysis/inventory"
	"github.com/inferscope/inferscope-llm-datasource/pkg/analysis/sanity"
	"github.com/inferscope/inferscope-llm-datasource/pkg/catalog"
	"github.com/inferscope/inferscope-llm-datasource/pkg/source"
)

// shownURL is what the targets table shows as a target's address: its URL, or in remote mode
// its selector on the server.
func (e *Env) shownURL(url, selector string) string {
	if e.Settings.IsRemote() {
		return selector
	}
	return url
}

// ProbeEngine is what the targets table shows as the engine of a client-side probe.
const ProbeEngine catalog.Engine = "inferscope-probe"

// Inventory gathers what the collector and the store know about every target and agent
// (the last hour of stored names and models).
func (e *Env) Inventory(ctx context.Context) []inventory.Row {
	statuses := e.statuses()
	var obs []inventory.Observed
	add := func(name, kind, url, override string) {
		st := statuses[name]
		o := inventory.Observed{Name: name, Kind: kind, URL: url, EngineOverride: override, Up: st.Up,
			LastScrape: st.LastScrape, LastDuration: st.LastDuration, Series: st.Series, LastError: SanitizeError(st.LastError),
			Now: e.now(), StaleAfter: inventory.StaleAfter(e.Settings.ScrapeInterval)}
		if e.Querier != nil {
			now := e.now()
			v := e.ViewOf(ctx, name, now.Add(-Lookback), now)
			o.MetricNames, o.Detection = v.Names, v.Det
			o.Models, _ = e.Querier.LabelValues(ctx, "model_name", catalog.JobSelector(name), now.Add(-Lookback), now)
			if kind == "probe" {
				// A probe is no engine: it is shown as the probe, with the models it asks for.
				o.Models, _ = e.Querier.LabelValues(ctx, "model", catalog.JobSelector(name), now.Add(-Lookback), now)
				if slices.ContainsFunc(v.Names, func(n string) bool { return strings.HasPrefix(n, catalog.ProbePrefix) }) {
					o.Detection = catalog.Detection{Engine: ProbeEngine, Evidence: []string{"inferscope_probe_* families"}}
				}
			}
			if catalog.IsGateway(v.Det.Engine) && len(o.Models) == 0 {
				// A gateway names models in its own labels (LiteLLM requested_model, OpenTelemetry
				// gen_ai_request_model, …): the union of their values.
				seen := map[string]bool{}
				for _, l := range catalog.ModelLabels(v.Det.Engine) {
					vals, _ := e.Querier.LabelValues(ctx, l, catalog.JobSelector(name), now.Add(-Lookback), now)
					for _, m := range vals {
						if !seen[m] {
							seen[m] = true
							o.Models = append(o.Models, m)
						}
					}
				}
				slices.Sort(o.Models)
			}
			o.Models = catalog.WithoutPlaceholders(o.Models) // TensorRT-LLM's "undefined" is no model
		}
		obs = append(obs, o)
	}
	for _, t := range e.Settings.Targets {
		add(t.Name, "target", e.shownURL(t.URL, t.SelectorOrDefault()), t.Engine)
	}
	for _, a := range e.Settings.GPUAgents {
		add(a.Name, "agent", e.shownURL(a.URL, a.SelectorOrDefault()), "")
	}
	for _, p := range e.Settings.Probes {
		add(p.Name, "probe", e.shownURL(p.URL, catalog.JobSelector(p.Name)), "")
	}
	return inventory.Build(obs)
}

// ImpossibleNow returns notice texts naming the samples of gauge signal s, on each series'
// latest scrape at now, that an aggregate left out because they cannot be true
// (catalog.ImpossiblePromQL, sanity.ImpossibleValues), at most maxFindings. A failed check
// yields nothing: the caller's values stand. The live stream uses it.
func ImpossibleNow(ctx context.Context, q source.Querier, s catalog.Signal, now time.Time) []string {
	expr, err := catalog.ImpossiblePromQL(s, catalog.Scope{})
	if err != nil {
		return nil
	}
	v, err := q.Query(ctx, expr, now)
	if err != nil {
		return nil
	}
	vec, _ := v.(model.Vector)
	m := make(model.Matrix, 0, len(vec))
	for _, x := range vec {
		m = append(m, &model.SampleStream{Metric: x.Metric, Values: []model.SamplePair{{Timestamp: x.Timestamp, Value: x.Value}}})
	}
	lo, hi, _ := catalog.ValueRange(s)
	var out []string
	for k, f := range sanity.ImpossibleValues(string(s), m, lo, hi, impossibleEffect(s)) {
		if k == maxFindings {
			out = append(out, fmt.Sprintf("%s: %d more series with values that cannot be true were left out", s, len(m)-maxFindings))
			break
		}
		out = append(out, f.Text())
	}
	return out
}
