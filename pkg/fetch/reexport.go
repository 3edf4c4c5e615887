package fetch

import (
	"context"
	"slices"

	"github.com/inferscope/inferscope-llm-datasource/pkg/analysis"
	"github.com/inferscope/inferscope-llm-datasource/pkg/catalog"
)

// ReExportScope returns sc ready for the signal builders when a target in the query's scope
// is a re-exporter (a gateway serving other servers' engine series, Detection.ReExporter: the
// vLLM production-stack router, the smg router): Upstreams lists every configured target's URL,
// so the gateway's copies of a configured engine are left out of every aggregate and each
// engine counts once, from its own page (copies of engines that are not targets stay, under
// the gateway). Each re-exporter is named in a notice with the upstreams it re-exports
// (catalog.ReExportPromQL, one instant query). The run's plan takes the same Upstreams, so
// its own reads (latency stages, availability) agree. Without a re-exporter in scope sc is returned
// as is and nothing is queried.
func (r *Run) ReExportScope(ctx context.Context, sc catalog.Scope) catalog.Scope {
	kinds := map[string]string{}
	var names []string
	for _, v := range r.Views(ctx) {
		if v.Det.ReExporter != "" {
			kinds[v.Name] = v.Det.ReExporter
			names = append(names, v.Name)
		}
	}
	if len(names) == 0 {
		return sc
	}
	for _, t := range r.Env.Settings.Targets {
		if !slices.Contains(sc.Upstreams, t.URL) {
			sc.Upstreams = append(sc.Upstreams, t.URL)
		}
	}
	r.Plan.Scope.Upstreams = sc.Upstreams // the run's own reads (latency stages, notices) too
	upstreams := map[string][]string{}
	if q, err := catalog.ReExportPromQL(catalog.Scope{Targets: names}); err == nil {
		if v, err := r.Instant(ctx, q, r.Plan.End); err == nil {
			upstreams = catalog.ReExporters(v)
		} else {
			r.Skipped("listing the servers the re-exporters copy", err)
		}
	}
	slices.Sort(names)
	for _, n := range names {
		r.Notes.Add(analysis.Info, catalog.ReExporterSentence(n, kinds[n], upstreams[n]))
	}
	return sc
}
