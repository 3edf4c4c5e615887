// Package inventory describes the configured targets and GPU agents: what
// the collector last saw (up, scrape time and duration, series, error) and
// what the catalogue detects from the stored metric names (engine, V0/V1,
// version range, models).
package inventory

import (
	"sort"
	"time"

	"github.com/inferscope/inferscope-llm-datasource/pkg/catalog"
)

// Row is one target or agent of the inventory table.
type Row struct {
	Name, Kind, URL string
	// Engine is the catalogue's engine; Generation "v0"/"v1" for vLLM; Version a range such as "0.11-0.12".
	Engine, Generation, Version string
	// ReExporter names the gateway when the target re-exports other servers' engine series
	// (catalog.Detection.ReExporter, e.g. "vLLM production-stack router"), else "".
	ReExporter   string
	Models       []string
	Up           bool
	LastScrape   time.Time
	LastDuration time.Duration
	Series       int
	LastError    string
}

// Observed is what the collector and the store know about one target.
type Observed struct {
	Name, Kind, URL string
	// EngineOverride is the engine named in the settings, if any.
	EngineOverride string
	Up             bool
	LastScrape     time.Time
	LastDuration   time.Duration
	Series         int
	LastError      string
	// MetricNames are the stored sample names of this target; Models its model_name values.
	MetricNames []string
	Models      []string
	// Detection is the target's one detection (catalog.DetectStored over MetricNames, with
	// the settings' override), the same the health check and queries use.
	Detection catalog.Detection
}

// Build returns one Row per observed target, sorted by name. The engine,
// generation and version are Observed.Detection's.
func Build(obs []Observed) []Row {
	out := make([]Row, 0, len(obs))
	for _, o := range obs {
		r := Row{Name: o.Name, Kind: o.Kind, URL: o.URL, Up: o.Up, LastScrape: o.LastScrape,
			LastDuration: o.LastDuration, Series: o.Series, LastError: o.LastError, Models: o.Models}
		if len(o.MetricNames) > 0 || o.EngineOverride != "" {
			d := o.Detection
			r.Engine, r.Generation, r.Version, r.ReExporter = string(d.Engine), d.Generation, d.Version, d.ReExporter
		}
		if o.Kind == "target" && o.Up && o.LastError == "" && (r.Engine == "" || r.Engine == string(catalog.EngineUnknown)) {
			// The scrape succeeded but nothing on the page is an inference
			// engine's metric: a wrong URL or a page that is not /metrics.
			r.LastError = "the page has no metrics of a known inference engine (vLLM, SGLang, TGI, llama.cpp, TensorRT-LLM)"
		}
		out = append(out, r)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}
