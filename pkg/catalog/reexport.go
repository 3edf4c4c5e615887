package catalog

import (
	"regexp"
	"slices"
	"strconv"
	"strings"

	"github.com/prometheus/common/model"
)

// Re-exporters: gateways that scrape inference engines and serve the engines' series again,
// under the engines' own names, with a label naming the engine each copy came from. Summed
// with the engines themselves (when those are targets too), every such series counts twice:
// a vLLM production-stack router in front of two engines running 3 and 2 requests serves
// vllm:num_requests_running{server="http://10.0.0.1:8000"} 3 and {server="http://10.0.0.2:8000"} 2,
// and a sum over the three targets reads 10 against a truth of 5.

// ReExportLabels are the labels by which a gateway names the server a re-exported series came
// from, with a URL as value:
//
//   - `server`: the vLLM production-stack router (src/vllm_router/services/metrics_service:
//     every gauge is declared with labelnames ["server"], the engine's URL);
//
//   - `worker_addr`: the smg router re-exporting SGLang (`sglang_…{worker_addr="grpc://…"}`,
//     corpus page sglang-reexported-by-smg-router-underscored-pr813.prom).
//
//   - `endpoint`, `backend`, `upstream`: the names other re-exporting proxies and gateways give
//     the same label (issue 39), recognised by shape (ReExportersByShape).
//
// An engine never sets these labels on its own series with a URL value; a user's extra target
// label of the same name with another value (server="gpu-node-1") is not taken for one.
var ReExportLabels = []string{"server", "worker_addr", "endpoint", "backend", "upstream"}

// upstreamURL matches a label value that names another server: scheme://host[:port][/path].
const upstreamURL = `[A-Za-z][A-Za-z0-9+.-]*://.+`

// Names of re-exporters, Detection.ReExporter.
const (
	ReExporterProductionStack = "vLLM production-stack router"
	ReExporterSMG             = "smg router"
	ReExporterGateway         = "gateway"
)

// productionStackRouterFamilies are the families only the vLLM production-stack router exports
// (src/vllm_router/services/metrics_service: current_qps, avg_decoding_length,
// num_prefill_requests, num_decoding_requests, healthy_pods_total, avg_latency, avg_itl). The
// router also serves vllm:num_requests_running/waiting, vllm:num_requests_swapped and the V0
// prefix-cache gauges, which made such a page look like a vLLM V0 0.6-0.7 engine.
var productionStackRouterFamilies = []string{
	"vllm:current_qps", "vllm:avg_decoding_length", "vllm:num_prefill_requests",
	"vllm:num_decoding_requests", "vllm:healthy_pods_total", "vllm:avg_latency", "vllm:avg_itl",
}

// detectReExporter sets d.ReExporter from the names of a page: a production-stack router page
// (any of productionStackRouterFamilies) is no engine release, so its generation and version
// are cleared and the evidence says why; an smg re-export (sglang_ names) keeps the SGLang
// version its names tell.
func detectReExporter(ns nameSet, d *Detection) {
	if d.Engine == EngineVLLM {
		for _, n := range productionStackRouterFamilies {
			if ns.present(n) {
				d.ReExporter = ReExporterProductionStack
				d.Generation, d.Version = "", ""
				d.Evidence = []string{n + " present: exported only by the vLLM production-stack router, which re-exports its engines' gauges with a server label; a re-exporter, not an engine (no generation or version)"}
				return
			}
		}
	}
	if d.Engine == EngineSGLang && ns.smgRaw {
		d.ReExporter = ReExporterSMG
	}
}

// ReExportPromQL lists, as an instant query over the scope's targets, every re-exported engine
// series by target and upstream: one sample per (job, label value) for each ReExportLabels
// label whose value is a URL, on any LLM engine family (the prefixes the collector stores):
//
//	group by (job, server) ({__name__=~"(?:vllm:|…).+", server=~"[A-Za-z]…://.+"}) or group by (job, worker_addr) (…)
//
// ReExporters reads the result. Errors: an empty target name in scope.
func ReExportPromQL(sc Scope) (string, error) {
	names := make([]string, len(llmPrefixes))
	for i, p := range llmPrefixes {
		names[i] = regexp.QuoteMeta(p)
	}
	base := `__name__=~` + strconv.Quote("(?:"+strings.Join(names, "|")+").+")
	job, err := jobMatchers(sc)
	if err != nil {
		return "", err
	}
	for _, m := range job {
		base += ", " + m
	}
	parts := make([]string, 0, len(ReExportLabels))
	for _, l := range ReExportLabels {
		parts = append(parts, "group by (job, "+l+") ({"+base+", "+l+"=~"+strconv.Quote(upstreamURL)+"})")
	}
	return strings.Join(parts, " or "), nil
}

// ReExporters reads ReExportPromQL's result: per target (job), the sorted upstream URLs it
// re-exports series of. A target absent from the map re-exports nothing.
func ReExporters(v model.Vector) map[string][]string {
	out := map[string][]string{}
	for _, s := range v {
		job := string(s.Metric[model.JobLabel])
		for _, l := range ReExportLabels {
			if u := string(s.Metric[model.LabelName(l)]); u != "" && !slices.Contains(out[job], u) {
				out[job] = append(out[job], u)
			}
		}
	}
	for j := range out {
		slices.Sort(out[j])
	}
	return out
}

// upstreamMatchers renders Scope.Upstreams as one negative matcher per ReExportLabels label:
// a series whose label names one of the upstreams (with any scheme and path) is left out.
// Empty when the scope names none.
func upstreamMatchers(sc Scope) ([]string, error) {
	if len(sc.Upstreams) == 0 {
		return nil, nil
	}
	hosts := make([]string, 0, len(sc.Upstreams))
	for _, u := range sc.Upstreams {
		h := UpstreamHost(u)
		if h == "" {
			continue
		}
		if q := regexp.QuoteMeta(h); !slices.Contains(hosts, q) {
			hosts = append(hosts, q)
		}
	}
	if len(hosts) == 0 {
		return nil, nil
	}
	re := strconv.Quote(`(?:[A-Za-z][A-Za-z0-9+.-]*://)?(?:` + strings.Join(hosts, "|") + `)(?:/.*)?`)
	out := make([]string, 0, len(ReExportLabels))
	for _, l := range ReExportLabels {
		out = append(out, l+"!~"+re)
	}
	return out, nil
}

// UpstreamHost is the host[:port] of a URL or of a bare host:port ("http://10.0.0.1:8000/metrics"
// and "10.0.0.1:8000" both give "10.0.0.1:8000"), lower-cased; "" for an empty value.
func UpstreamHost(u string) string {
	u = strings.TrimSpace(u)
	if i := strings.Index(u, "://"); i >= 0 {
		u = u[i+3:]
	}
	if i := strings.IndexAny(u, "/?#"); i >= 0 {
		u = u[:i]
	}
	if i := strings.LastIndex(u, "@"); i >= 0 {
		u = u[i+1:]
	}
	return strings.ToLower(u)
}

// ReExporterSentence says, for a user, that target re-exports the listed upstreams and how the
// queries treat it: its copies of a configured target's series are left out of every aggregate
// (counted once, from the engine itself); copies of engines that are not targets are counted
// under this target.
func ReExporterSentence(target, kind string, upstreams []string) string {
	if kind == "" {
		kind = ReExporterGateway
	}
	msg := "target " + target + " is a re-exporter (" + kind + ")"
	if len(upstreams) > 0 {
		msg += " of " + strings.Join(upstreams, ", ")
	}
	return msg + ": its copies of engines that are also targets are left out of every aggregate (each engine counts once, from its own page); copies of engines that are not targets are counted under " + target
}

// ReExportShapePromQL lists, as an instant query over the scope's targets, every engine series
// that carries a ReExportLabels label whose value is a URL, by target, that label, and the
// engine's own model_name and engine labels (empty when the series has none):
//
//	group by (job, server, model_name, engine) ({__name__=~"(?:vllm:|…).+", job=~"a|b|r", server=~"…://.+"}) or …
//
// ReExportersByShape reads the result. Errors: an empty target name in scope.
func ReExportShapePromQL(sc Scope) (string, error) {
	q, err := ReExportPromQL(sc)
	if err != nil {
		return "", err
	}
	for _, l := range ReExportLabels {
		q = strings.ReplaceAll(q, "group by (job, "+l+") (", "group by (job, "+l+", model_name, engine) (")
	}
	return q, nil
}

// ReExportersByShape reads ReExportShapePromQL's result against the configured targets' URLs
// (target name → URL): a target is a re-exporter, whatever its families' names, when one of its
// engine series carries a ReExportLabels label whose URL names another configured target's host,
// or names a server other than its own and the series has neither the engine's model_name nor
// its engine label (an engine's own page carries them; a gateway's copies do not). A URL naming
// the target's own host (a user's extra label) is not one. It returns, per re-exporting target,
// the sorted upstream URLs.
func ReExportersByShape(v model.Vector, urls map[string]string) map[string][]string {
	hosts := map[string]string{} // host → target
	for n, u := range urls {
		if h := UpstreamHost(u); h != "" {
			hosts[h] = n
		}
	}
	out := map[string][]string{}
	for _, s := range v {
		job := string(s.Metric[model.JobLabel])
		own := UpstreamHost(urls[job])
		for _, l := range ReExportLabels {
			u := string(s.Metric[model.LabelName(l)])
			h := UpstreamHost(u)
			if u == "" || h == "" || h == own {
				continue
			}
			other, named := hosts[h]
			bare := s.Metric["model_name"] == "" && s.Metric["engine"] == ""
			if (named && other != job) || bare {
				if !slices.Contains(out[job], u) {
					out[job] = append(out[job], u)
				}
			}
		}
	}
	for j := range out {
		slices.Sort(out[j])
	}
	return out
}
