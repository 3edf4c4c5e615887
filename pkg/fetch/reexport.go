package fetch

import (
	"context"
	"slices"

	"github.com/prometheus/common/model"

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
	shape := r.reExportShapes(ctx)
	for n := range shape {
		if kinds[n] == "" {
			kinds[n] = catalog.ReExporterGateway
			names = append(names, n)
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
	for n, u := range shape {
		if len(upstreams[n]) == 0 {
			upstreams[n] = u
		}
	}
	slices.Sort(names)
	for _, n := range names {
		r.Notes.Add(analysis.Info, catalog.ReExporterSentence(n, kinds[n], upstreams[n]))
	}
	return sc
}

// reExportShapes finds the targets in scope that re-export other servers' engine series by the
// shape of their labels (catalog.ReExportersByShape: a server, worker_addr, endpoint, backend or
// upstream label whose URL names another configured target, or another server on series
// without the engine's own labels), whatever their families' names. It is a detection probe,
// one instant query at the range's end, not recorded among the query's PromQL: a history
// without re-exporters reads as before. Only with two configured targets or more (a single
// target counts nothing twice). A failed probe finds none.
func (r *Run) reExportShapes(ctx context.Context) map[string][]string {
	if len(r.Env.Settings.Targets) < 2 {
		return nil // one target counts nothing twice
	}
	var scope []string
	for _, v := range r.Views(ctx) {
		if v.OK {
			scope = append(scope, v.Name)
		}
	}
	if len(scope) == 0 {
		return nil
	}
	q, err := catalog.ReExportShapePromQL(catalog.Scope{Targets: scope})
	if err != nil {
		return nil
	}
	v, err := r.Exec(ctx, Query{PromQL: q, To: r.Plan.End, Unrecorded: true})
	vec, ok := v.(model.Vector)
	if err != nil || !ok || len(vec) == 0 {
		return nil
	}
	urls := map[string]string{}
	for _, t := range r.Env.Settings.Targets {
		urls[t.Name] = t.URL
	}
	return catalog.ReExportersByShape(vec, urls)
}
