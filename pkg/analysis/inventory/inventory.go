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
	// State is the scrape state the table shows (StateUp, StateStale, StateDown or
	// StateNotScraped): up only when the last scrape succeeded and is recent.
	State string
	// ScrapeAge is how long before the query's now the last scrape started; 0 (and
	// HasScrapeAge false) before the first scrape.
	ScrapeAge    time.Duration
	HasScrapeAge bool
}

// The scrape states of Row.State.
const (
	// StateUp: the last scrape succeeded and started at most StaleAfter ago.
	StateUp = "up"
	// StateStale: the last scrape succeeded but started more than StaleAfter ago (the
	// collector or the remote server stopped scraping it: its up = 1 is old news).
	StateStale = "stale"
	// StateDown: the last scrape failed.
	StateDown = "down"
	// StateNotScraped: no scrape yet.
	StateNotScraped = "not scraped yet"
)

// StaleAfter is how long after its last scrape started a target stops reading up: three
// scrape intervals (a scrape may take up to its timeout, at most one interval, and one
// more missed scrape is allowed before the state turns; Prometheus itself keeps answering
// an old up = 1 for its 5-minute lookback). 0 for an interval of 0 or less (never stale).
func StaleAfter(interval time.Duration) time.Duration {
	if interval <= 0 {
		return 0
	}
	return 3 * interval
}

// State judges one target's scrape state at now: not scraped yet without a last scrape,
// down when the last scrape failed, stale when it succeeded more than staleAfter before
// now (staleAfter 0, or a zero now, never judges stale), else up.
func State(up bool, lastScrape, now time.Time, staleAfter time.Duration) string {
	switch {
	case lastScrape.IsZero():
		if up {
			return StateUp // a status that knows no scrape time (never from the collector)
		}
		return StateNotScraped
	case !up:
		return StateDown
	case staleAfter > 0 && !now.IsZero() && now.Sub(lastScrape) > staleAfter:
		return StateStale
	}
	return StateUp
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
	// Now is the query's now and StaleAfter the age past which a successful last scrape
	// reads stale (see StaleAfter); a zero Now judges no staleness.
	Now        time.Time
	StaleAfter time.Duration
}

// Build returns one Row per observed target, sorted by name. The engine,
// generation and version are Observed.Detection's.
func Build(obs []Observed) []Row {
	out := make([]Row, 0, len(obs))
	for _, o := range obs {
		r := Row{Name: o.Name, Kind: o.Kind, URL: o.URL, Up: o.Up, LastScrape: o.LastScrape,
			LastDuration: o.LastDuration, Series: o.Series, LastError: o.LastError, Models: o.Models,
			State: State(o.Up, o.LastScrape, o.Now, o.StaleAfter)}
		if !o.LastScrape.IsZero() && !o.Now.IsZero() {
			r.ScrapeAge, r.HasScrapeAge = max(o.Now.Sub(o.LastScrape), 0), true
		}
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
