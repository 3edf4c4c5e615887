package plugin

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"sync"

	"github.com/grafana/grafana-plugin-sdk-go/backend"

	"github.com/inferscope/inferscope-llm-datasource/pkg/catalog"
	"github.com/inferscope/inferscope-llm-datasource/pkg/collect"
)

// healthTarget is the JSON detail of one target or agent in a health check.
type healthTarget struct {
	Name       string   `json:"name"`
	Kind       string   `json:"kind"`
	OK         bool     `json:"ok"`
	Error      string   `json:"error,omitempty"`
	Engine     string   `json:"engine,omitempty"`
	Generation string   `json:"generation,omitempty"`
	Version    string   `json:"version,omitempty"`
	Models     []string `json:"models,omitempty"`
	Samples    int      `json:"samples"`
	// Exported lists the signals whose families are on the page, exact or
	// approximate; Approx the approximate ones among them; NotSeen those the
	// engine can export but this page does not carry; Absent those the
	// engine never exports (catalog.AssessAll).
	Exported   []string `json:"exported,omitempty"`
	Approx     []string `json:"approximate,omitempty"`
	NotSeen    []string `json:"notSeen,omitempty"`
	Absent     []string `json:"absent,omitempty"`
	DurationMS int64    `json:"durationMs"`
	// ReExporter names the gateway when the page re-exports other servers' engine series
	// (catalog.Detection.ReExporter); Upstreams are the servers it names
	// (collect.ProbeResult.Upstreams). PageFaults name the page's duplicate series and
	// histograms whose buckets decrease (collect.ProbeResult.Faults).
	ReExporter string   `json:"reExporter,omitempty"`
	Upstreams  []string `json:"upstreams,omitempty"`
	PageFaults []string `json:"pageFaults,omitempty"`
}

// CheckHealth scrapes every target and GPU agent once, in parallel, and says
// per target what it found (engine, models, signals available) or why it
// failed, in one sentence plus JSON details.
func (i *Instance) CheckHealth(ctx context.Context, req *backend.CheckHealthRequest) (*backend.CheckHealthResult, error) {
	res, err := i.checkHealth(ctx, req)
	if res != nil {
		// A page or server may echo a request header (a bearer token) in
		// its error; secrets never reach the health message or details.
		res.Message = i.scrub.text(res.Message)
		res.JSONDetails = i.scrub.bytes(res.JSONDetails)
	}
	return res, err
}

func (i *Instance) checkHealth(ctx context.Context, _ *backend.CheckHealthRequest) (*backend.CheckHealthResult, error) {
	if err := i.storeReady(); err != nil {
		return &backend.CheckHealthResult{Status: backend.HealthStatusError, Message: "Storage: " + i.pending.pendingError(err).Error()}, nil
	}
	if i.settingsErr != nil {
		return &backend.CheckHealthResult{Status: backend.HealthStatusError, Message: "Settings: " + i.settingsErr.Error()}, nil
	}
	names := make([]string, 0, len(i.settings.Targets)+len(i.settings.GPUAgents))
	kinds := map[string]string{}
	for _, t := range i.settings.Targets {
		names = append(names, t.Name)
		kinds[t.Name] = "target"
	}
	for _, a := range i.settings.GPUAgents {
		names = append(names, a.Name)
		kinds[a.Name] = "agent"
	}
	if len(names) == 0 {
		return &backend.CheckHealthResult{Status: backend.HealthStatusError, Message: "No targets configured: add at least one inference server's /metrics URL."}, nil
	}
	var prefix string
	if i.remote != nil {
		msg, err := i.pingRemote(ctx)
		if err != nil {
			return &backend.CheckHealthResult{Status: backend.HealthStatusError, Message: err.Error()}, nil
		}
		prefix = msg + " "
	}
	results := make([]healthTarget, len(names))
	var wg sync.WaitGroup
	for n, name := range names {
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() {
				if p := recover(); p != nil {
					i.logger.Error("health probe panicked", "target", name, "panic", fmt.Sprint(p))
					results[n] = healthTarget{Name: name, Kind: kinds[name], Error: fmt.Sprintf("%s `%s`: internal error while checking it", kinds[name], name)}
				}
			}()
			results[n] = i.probe(ctx, name, kinds[name])
		}()
	}
	wg.Wait()

	var failed, okParts []string
	for _, r := range results {
		if !r.OK {
			failed = append(failed, r.Error)
			continue
		}
		desc := r.Engine
		if r.Generation != "" {
			desc += " " + r.Generation
		}
		if r.Version != "" {
			desc += " " + r.Version
		}
		if r.ReExporter != "" {
			desc = "re-exporter (" + r.ReExporter + ") of " + desc + " series"
			if len(r.Upstreams) > 0 {
				desc += " from " + shortList(r.Upstreams, 3)
			}
		}
		part := fmt.Sprintf("%s: %s", r.Name, desc)
		if len(r.Models) > 0 {
			part += " serving " + strings.Join(r.Models, ", ")
		}
		if r.Kind == "target" {
			part += fmt.Sprintf(", exports %d signals (%d approximate), %d more not on the page (%s), %d never exported by this engine",
				len(r.Exported), len(r.Approx), len(r.NotSeen), shortList(r.NotSeen, 6), len(r.Absent))
		}
		if len(r.PageFaults) > 0 {
			part += fmt.Sprintf("; the page has %d fault(s): %s", len(r.PageFaults), r.PageFaults[0])
		}
		okParts = append(okParts, part)
	}
	details, _ := json.Marshal(map[string]any{"targets": results})
	res := &backend.CheckHealthResult{JSONDetails: details}
	switch {
	case len(failed) == 0:
		res.Status = backend.HealthStatusOk
		res.Message = prefix + fmt.Sprintf("%d of %d targets answered. %s.", len(results), len(results), listSome(okParts))
	default:
		res.Status = backend.HealthStatusError
		res.Message = prefix + fmt.Sprintf("%d of %d targets failed: %s.", len(failed), len(results), listSome(failed))
		if len(okParts) > 0 {
			res.Message += " Working: " + listSome(okParts) + "."
		}
	}
	if len(i.settings.TargetGroups) > 0 {
		res.Message += " " + i.groupsHealth(ctx)
	}
	if i.collector != nil {
		// History dropped by a WAL repair, or set aside (a quarantined
		// block, a whole directory): not OK while it is missing.
		notice, missing := i.collector.StoreHealth()
		if notice != "" {
			res.Message += " " + notice
		}
		if missing {
			res.Status = backend.HealthStatusError
		}
	}
	return res, nil
}

func (i *Instance) probe(ctx context.Context, name, kind string) healthTarget {
	if i.remote != nil {
		return i.probeRemote(ctx, name, kind)
	}
	cfg := i.settings
	if t, ok := cfg.Target(name); ok && t.Group != nil {
		// An embedded-mode target group: probe the first target its discovery found.
		var urls []string
		if i.collector != nil {
			urls = i.collector.DiscoveredURLs(name)
		}
		if len(urls) == 0 {
			return healthTarget{Name: name, Kind: kind, Error: fmt.Sprintf("target group `%s`: its discovery has found no target yet", name)}
		}
		cfg = withTargetURL(cfg, name, urls[0], t.Group.BearerToken)
	}
	pr := collect.Probe(ctx, cfg, name)
	h := healthTarget{Name: name, Kind: kind, Samples: pr.Samples, DurationMS: pr.Duration.Milliseconds()}
	if pr.Err != nil {
		h.Error = i.scrub.sanitize(pr.Err.Error())
		return h
	}
	// The same detection and availability as queries: the page's names
	// filtered as the collector stores them.
	// A target's own metrics (targets[].metrics) are renamed as the collector stores them, and
	// their model is read from its modelLabel.
	names, modelLabel := pr.Names, "model_name"
	if t, ok := i.settings.Target(name); ok {
		names = catalog.RenameUserMetrics(names, t.Metrics)
		if t.ModelLabel != "" {
			modelLabel = t.ModelLabel
		}
	}
	v := i.env().ViewFromNames(name, catalog.StoredNames(names))
	d := v.Det
	h.Engine, h.Generation, h.Version, h.ReExporter = string(d.Engine), d.Generation, d.Version, d.ReExporter
	for _, u := range pr.Upstreams {
		h.Upstreams = append(h.Upstreams, i.scrub.sanitize(u))
	}
	for _, f := range pr.Faults {
		h.PageFaults = append(h.PageFaults, i.scrub.sanitize(f))
	}
	for _, m := range pr.Labels[modelLabel] {
		h.Models = append(h.Models, i.scrub.sanitize(m))
	}
	sort.Strings(h.Models)
	if kind == "target" && !v.OK {
		h.Error = fmt.Sprintf("%s `%s`: the page at %s has %d samples but none from a known inference engine (vLLM, SGLang, TGI, llama.cpp, TensorRT-LLM); set the engine in the target's settings if it is one", kind, name, pr.URL, pr.Samples)
		return h
	}
	h.OK = true
	if kind == "target" {
		h.addSignals(catalog.AssessAll(d, v.Names))
	}
	return h
}

// healthListMax is how many per-target phrases a health message lists; the
// rest are counted (every target is in the JSON details), so the message
// stays short with many targets.
const healthListMax = 5

// listSome joins up to healthListMax parts with "; " and counts the rest.
func listSome(parts []string) string {
	if len(parts) <= healthListMax {
		return strings.Join(parts, "; ")
	}
	return fmt.Sprintf("%s; and %d more (see the details)", strings.Join(parts[:healthListMax], "; "), len(parts)-healthListMax)
}

// shortList joins at most n names, saying how many more there are.
func shortList(names []string, n int) string {
	if len(names) == 0 {
		return "none"
	}
	if len(names) <= n {
		return strings.Join(names, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(names[:n], ", "), len(names)-n)
}

// addSignals sorts a target's availability (catalog.AssessAll) into the
// health details' exported, approximate, not-seen and absent lists.
func (h *healthTarget) addSignals(all []catalog.TargetSignal) {
	for _, a := range all {
		switch a.State {
		case catalog.StateExported:
			h.Exported = append(h.Exported, string(a.Signal))
		case catalog.StateApproximate:
			h.Exported = append(h.Exported, string(a.Signal))
			h.Approx = append(h.Approx, string(a.Signal))
		case catalog.StateNotSeen:
			h.NotSeen = append(h.NotSeen, string(a.Signal))
		default:
			h.Absent = append(h.Absent, string(a.Signal))
		}
	}
}
