package plugin

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"sort"
	"strings"

	"github.com/grafana/grafana-plugin-sdk-go/backend"
	"github.com/grafana/grafana-plugin-sdk-go/backend/resource/httpadapter"

	"github.com/inferscope/inferscope-llm-datasource/pkg/catalog"
	"github.com/inferscope/inferscope-llm-datasource/pkg/collect"
	"github.com/inferscope/inferscope-llm-datasource/pkg/fetch"
	"github.com/inferscope/inferscope-llm-datasource/pkg/queries"
)

// CallResource serves the editor and template-variable helpers:
// GET /targets, /models, /agents, /gpus (JSON arrays of strings) and
// GET /signals (per target: engine and the state of every signal in the last
// hour of stored samples: exported, approximate, not_seen or absent),
// GET /pagemetrics?target=<name> (PageMetrics of the target's page, probed now, for the
// configuration editor's targets[].metrics; embedded mode only),
// GET /metricnames?target=<name>&target=… (the metric names stored for those targets or GPU
// agents in the last hour, sorted: the raw query editor's metric picker; all targets and
// agents when none is named), and
// GET and POST /baselines list and upload benchmark baselines (addBaselineRoutes).
func (i *Instance) CallResource(ctx context.Context, req *backend.CallResourceRequest, sender backend.CallResourceResponseSender) error {
	if err := i.storeReady(); err != nil {
		b, _ := json.Marshal(map[string]string{"error": i.scrub.text(i.pending.pendingError(err).Error())})
		return sender.Send(&backend.CallResourceResponse{Status: http.StatusServiceUnavailable,
			Headers: map[string][]string{"Content-Type": {"application/json"}}, Body: b})
	}
	return i.resources.CallResource(ctx, req, scrubSender{s: i.scrub, next: sender})
}

// newResources builds the resource routes once per instance.
func (i *Instance) newResources() backend.CallResourceHandler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /targets", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, i.settings.TargetNames())
	})
	mux.HandleFunc("GET /agents", func(w http.ResponseWriter, _ *http.Request) {
		out := []string{}
		for _, a := range i.settings.GPUAgents {
			out = append(out, a.Name)
		}
		sort.Strings(out)
		writeJSON(w, out)
	})
	mux.HandleFunc("GET /profiles", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, i.settings.ProfileNames())
	})
	mux.HandleFunc("GET /models", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, i.labelValues(r.Context(), "model_name", i.settings.TargetNames()))
	})
	mux.HandleFunc("GET /gpus", func(w http.ResponseWriter, r *http.Request) {
		var agents []string
		for _, a := range i.settings.GPUAgents {
			agents = append(agents, a.Name)
		}
		writeJSON(w, i.labelValues(r.Context(), "gpu", agents))
	})
	mux.HandleFunc("GET /signals", func(w http.ResponseWriter, r *http.Request) {
		type sig struct {
			Signal string `json:"signal"`
			// Status is exported, approximate, not_seen or absent (catalog.State).
			Status    string   `json:"status"`
			Note      string   `json:"note,omitempty"`
			LookedFor []string `json:"lookedFor,omitempty"`
		}
		type target struct {
			Target     string `json:"target"`
			Engine     string `json:"engine"`
			Generation string `json:"generation,omitempty"`
			Version    string `json:"version,omitempty"`
			Signals    []sig  `json:"signals"`
		}
		out := []target{}
		now := i.now()
		for _, t := range i.settings.Targets {
			v := i.env().ViewOf(r.Context(), t.Name, now.Add(-fetch.Lookback), now)
			if !v.OK && len(v.Names) == 0 && !i.settings.IsRemote() {
				// A fresh store holds nothing yet: read the page as the health check does, so
				// /signals says what the health check says rather than "unknown" (issue 40).
				if pr := collect.Probe(r.Context(), i.settings, t.Name); pr.Err == nil {
					v = i.env().ViewFromNames(t.Name, catalog.StoredNames(pr.Names))
				}
			}
			if !v.OK {
				out = append(out, target{Target: t.Name, Engine: string(catalog.EngineUnknown), Signals: []sig{}})
				continue
			}
			tt := target{Target: t.Name, Engine: string(v.Det.Engine), Generation: v.Det.Generation, Version: v.Det.Version}
			for _, a := range catalog.AssessAll(v.Det, v.Names) {
				s := sig{Signal: string(a.Signal), Status: string(a.State), Note: a.Note}
				if a.State == catalog.StateNotSeen {
					s.LookedFor = a.LookedFor
				}
				tt.Signals = append(tt.Signals, s)
			}
			out = append(out, tt)
		}
		writeJSON(w, out)
	})
	mux.HandleFunc("GET /pagemetrics", func(w http.ResponseWriter, r *http.Request) {
		name := r.URL.Query().Get("target")
		if _, ok := i.settings.Target(name); !ok || i.settings.IsRemote() {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusBadRequest)
			msg := fmt.Sprintf("target: %q is not a target configured in this data source (save it first)", name)
			if i.settings.IsRemote() {
				msg = "pagemetrics: mapping your own metrics works in embedded mode only"
			}
			_ = json.NewEncoder(w).Encode(map[string]string{"error": msg})
			return
		}
		pr := collect.Probe(r.Context(), i.settings, name)
		if pr.Err != nil {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusBadGateway)
			_ = json.NewEncoder(w).Encode(map[string]string{"error": i.scrub.sanitize(pr.Err.Error())})
			return
		}
		writeJSON(w, pageMetrics(pr.Names, pr.Labels))
	})
	mux.HandleFunc("GET /metricnames", func(w http.ResponseWriter, r *http.Request) {
		jobs, err := i.metricNameJobs(r.URL.Query()["target"])
		if err != nil {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusBadRequest)
			_ = json.NewEncoder(w).Encode(map[string]string{"error": err.Error()})
			return
		}
		writeJSON(w, i.labelValues(r.Context(), "__name__", jobs))
	})
	mux.HandleFunc("GET /discover", func(w http.ResponseWriter, r *http.Request) {
		d, err := i.discover(r.Context())
		if err != nil {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusBadGateway)
			_ = json.NewEncoder(w).Encode(map[string]string{"error": i.scrub.sanitize(err.Error())})
			return
		}
		writeJSON(w, d)
	})
	mux.HandleFunc("GET /members", func(w http.ResponseWriter, r *http.Request) {
		ms, err := i.members(r.Context(), r.URL.Query().Get("group"))
		if err != nil {
			w.Header().Set("Content-Type", "application/json")
			status := http.StatusBadGateway
			if queries.IsBadQuery(err) {
				status = http.StatusBadRequest
			}
			w.WriteHeader(status)
			_ = json.NewEncoder(w).Encode(map[string]string{"error": i.scrub.sanitize(err.Error())})
			return
		}
		writeJSON(w, ms)
	})
	i.addBaselineRoutes(mux)
	return httpadapter.New(mux)
}

// metricNameJobs returns the jobs whose metric names GET /metricnames lists: the named
// targets and GPU agents (each must be configured; duplicates are one), or every target and
// agent when none is named.
func (i *Instance) metricNameJobs(names []string) ([]string, error) {
	if len(names) == 0 {
		jobs := i.settings.TargetNames()
		for _, a := range i.settings.GPUAgents {
			jobs = append(jobs, a.Name)
		}
		return jobs, nil
	}
	seen := map[string]bool{}
	var jobs []string
	for _, n := range names {
		_, isTarget := i.settings.Target(n)
		_, isAgent := i.settings.Agent(n)
		if !isTarget && !isAgent {
			return nil, fmt.Errorf("target: %q is not a target or GPU agent configured in this data source", n)
		}
		if !seen[n] {
			seen[n] = true
			jobs = append(jobs, n)
		}
	}
	return jobs, nil
}

// labelValues returns the distinct values of label among the stored series of the given jobs.
func (i *Instance) labelValues(ctx context.Context, label string, jobs []string) []string {
	out := []string{}
	if i.querier == nil || len(jobs) == 0 {
		return out
	}
	sort.Strings(jobs)
	now := i.now()
	vals, err := i.querier.LabelValues(ctx, label, catalog.JobsSelector(jobs), now.Add(-fetch.Lookback), now)
	if err != nil {
		return out
	}
	if label == "model_name" {
		vals = catalog.WithoutPlaceholders(vals) // TensorRT-LLM's "undefined" is no model
	}
	return append(out, vals...)
}

func writeJSON(w http.ResponseWriter, v any) {
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(v)
}

// PageMetrics are the metric names of one target's page, sorted, as the configuration editor
// offers them for targets[].metrics: Histograms by base name (a name with _bucket, _sum and
// _count samples), Counters by sample name (ending in _total, their _created samples left
// out), Gauges (every other sample name), and Labels (the label names a modelLabel or a
// groupBy dimension may name; le and quantile left out).
type PageMetrics struct {
	Histograms []string `json:"histograms"`
	Counters   []string `json:"counters"`
	Gauges     []string `json:"gauges"`
	Labels     []string `json:"labels"`
}

// pageMetrics sorts a probed page's sample names into PageMetrics.
func pageMetrics(names []string, labels map[string][]string) PageMetrics {
	has := map[string]bool{}
	for _, n := range names {
		has[n] = true
	}
	out := PageMetrics{Histograms: []string{}, Counters: []string{}, Gauges: []string{}, Labels: []string{}}
	hist := map[string]bool{}
	for _, n := range names {
		if b, ok := strings.CutSuffix(n, "_bucket"); ok && has[b+"_sum"] && has[b+"_count"] {
			hist[b] = true
			out.Histograms = append(out.Histograms, b)
		}
	}
	for _, n := range names {
		part := false
		for _, suf := range []string{"_bucket", "_sum", "_count"} {
			if b, ok := strings.CutSuffix(n, suf); ok && hist[b] {
				part = true
			}
		}
		if b, ok := strings.CutSuffix(n, "_created"); ok && (has[b+"_total"] || hist[b]) {
			part = true
		}
		switch {
		case part:
		case strings.HasSuffix(n, "_total"):
			out.Counters = append(out.Counters, n)
		default:
			out.Gauges = append(out.Gauges, n)
		}
	}
	for l := range labels {
		if l != "le" && l != "quantile" {
			out.Labels = append(out.Labels, l)
		}
	}
	sort.Strings(out.Histograms)
	sort.Strings(out.Counters)
	sort.Strings(out.Gauges)
	sort.Strings(out.Labels)
	return out
}
