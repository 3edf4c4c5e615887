package plugin

import (
	"context"
	"encoding/json"
	"net/http"
	"sort"

	"github.com/grafana/grafana-plugin-sdk-go/backend"
	"github.com/grafana/grafana-plugin-sdk-go/backend/resource/httpadapter"

	"github.com/inferscope/inferscope-llm-datasource/pkg/catalog"
	"github.com/inferscope/inferscope-llm-datasource/pkg/fetch"
)

// CallResource serves the editor and template-variable helpers:
// GET /targets, /models, /agents, /gpus (JSON arrays of strings) and
// GET /signals (per target: engine and the state of every signal in the last
// hour of stored samples: exported, approximate, not_seen or absent).
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
	return httpadapter.New(mux)
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
