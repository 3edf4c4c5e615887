// Package fetch is Inferscope's read layer: it runs the catalogue's PromQL against a
// source.Querier for one query and gathers what the analysis packages need, with the query's
// notices. It holds no back-pointer to the plugin instance: an explicit Env (settings, querier,
// target status, clock) is all it reads. It never imports the query types, frames or plugin.
//
//   - Env: what a data-source instance lends a query;
//   - Plan: a decoded query's time grid and scope;
//   - Run: one query's working state, its one PromQL executor and its one channel for
//     notices;
//   - TargetView: the one detection of a target over a range;
//   - scope, idle and change notices;
//   - histogram fetch planning (Run.HistogramQueries), counter-only means and gauge
//     fallbacks, the le values an SLO threshold needs and each target's bucket layout;
//   - the fetch guards that name and leave out samples that cannot be true, and the
//     histograms' sanity verdicts;
//   - re-exporters: a gateway's copies of configured engines left out;
//   - the work the panels of one dashboard refresh share: events evidence and range reads;
//   - the inventory of targets and agents;
//   - the instance's cache of capacity-twin work and its answer deadline (Twins), and the
//     twin's observation, calibration, knees and what-ifs on it (Env.TwinCalibrate).
package fetch

import (
	"context"
	"log/slog"
	"time"

	"github.com/inferscope/inferscope-llm-datasource/pkg/bench"
	"github.com/inferscope/inferscope-llm-datasource/pkg/collect"
	"github.com/inferscope/inferscope-llm-datasource/pkg/settings"
	"github.com/inferscope/inferscope-llm-datasource/pkg/source"
)

// Env is what a data-source instance lends the queries it serves: its settings, its querier
// (embedded TSDB or remote server), its targets' scrape status, its clock, its cache of
// stored metric names and its capacity-twin cache. It is a plain value built by the SDK edge.
type Env struct {
	// Settings are the data source's validated settings.
	Settings *settings.Settings
	// Querier reads the stored samples; nil when the instance has none (invalid settings).
	Querier source.Querier
	// Statuses returns the scrape status of every target and agent by name (the embedded
	// collector's, or the remote server's up and scrape_* series); nil: none known.
	Statuses func() map[string]collect.TargetStatus
	// ScrapeErrors returns the failed scrapes of a target or agent in [from, to] (embedded
	// mode only; nil in remote mode).
	ScrapeErrors func(name string, from, to time.Time) []collect.ScrapeError
	// Now is the clock (time.Now outside tests).
	Now func() time.Time
	// Names caches the stored metric names per target and range; nil: no cache.
	Names *NameCache
	// Logger receives internal errors (panics of concurrent query parts).
	Logger *slog.Logger
	// Shared is the instance's cache of work shared by the panels of one dashboard refresh
	// (SharedWork); nil: nothing shared.
	Shared *SharedWork
	// SettingsGeneration names the settings the instance was built from (Grafana's settings
	// update time and the data source's UID); part of every SharedWork key.
	SettingsGeneration string
	// Org is the Grafana organisation of the request (0: unknown, read as 1); baselines
	// uploaded in it are read from its folder of baselinesPath (bench.OrgDir).
	Org int64
	// Baselines caches the parsed baseline files (bench.Cache); nil: every benchmark
	// query parses the baselines folder again.
	Baselines *bench.Cache
	// Twins is the instance's cache of capacity-twin work (calibrated twins, knees,
	// what-ifs) with its answer deadline; nil: no capacity query, and no twin advice in a
	// diagnosis.
	Twins *Twins
}

// statuses returns Env.Statuses(), or an empty map.
func (e *Env) statuses() map[string]collect.TargetStatus {
	if e.Statuses == nil {
		return map[string]collect.TargetStatus{}
	}
	return e.Statuses()
}

// Status returns the scrape status of every target and agent by name (empty when unknown).
// Statuses rebuilds every entry, so callers ask once per query.
func (e *Env) Status() map[string]collect.TargetStatus { return e.statuses() }

// logger returns Env.Logger or slog's default.
func (e *Env) logger() *slog.Logger {
	if e.Logger == nil {
		return slog.Default()
	}
	return e.Logger
}

// now returns Env.Now() or time.Now().
func (e *Env) now() time.Time {
	if e.Now == nil {
		return time.Now()
	}
	return e.Now()
}

// Targets returns the configured targets a query selects by name (all when none named).
func (e *Env) Targets(names []string) []settings.Target {
	if len(names) == 0 {
		return e.Settings.Targets
	}
	var out []settings.Target
	for _, n := range names {
		if t, ok := e.Settings.Target(n); ok {
			out = append(out, t)
		}
	}
	return out
}

// labelValues is Querier.LabelValues, nil without a querier.
func (e *Env) labelValues(ctx context.Context, label, sel string, from, to time.Time) ([]string, error) {
	if e.Querier == nil {
		return nil, nil
	}
	return e.Querier.LabelValues(ctx, label, sel, from, to)
}
