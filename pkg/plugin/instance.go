// Package plugin is Inferscope's edge to Grafana: the data-source instance
// (one per configured data source, re-created when its settings change), the
// QueryData dispatcher over the registry of query types (pkg/queries),
// CheckHealth, CallResource and streams, secrets, logging and its own
// metrics. It computes no analytics and writes no PromQL: query types run
// over the read layer (pkg/fetch), which this package hands an explicit
// environment (fetch.Env).
package plugin

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/backend"
	"github.com/grafana/grafana-plugin-sdk-go/backend/instancemgmt"
	"github.com/grafana/grafana-plugin-sdk-go/backend/log"

	"github.com/inferscope/inferscope-llm-datasource/pkg/collect"
	"github.com/inferscope/inferscope-llm-datasource/pkg/fetch"
	"github.com/inferscope/inferscope-llm-datasource/pkg/settings"
	"github.com/inferscope/inferscope-llm-datasource/pkg/source"
)

// PluginID is the Grafana plugin id.
const PluginID = "inferscope-llm-datasource"

var (
	_ backend.QueryDataHandler      = (*Instance)(nil)
	_ backend.CheckHealthHandler    = (*Instance)(nil)
	_ backend.CallResourceHandler   = (*Instance)(nil)
	_ backend.StreamHandler         = (*Instance)(nil)
	_ instancemgmt.InstanceDisposer = (*Instance)(nil)
)

// Instance is one Inferscope data source: its settings, the embedded
// collector scraping its targets, and the query path over the collected
// samples. If the settings are invalid, the instance still answers: every
// query and health check returns the settings error.
type Instance struct {
	settings    settings.Settings
	settingsErr error
	collector   *collect.Collector
	remote      *remoteState // remote mode only (see newRemoteQuerier)
	querier     source.Querier
	resources   backend.CallResourceHandler
	logger      *slog.Logger
	now         func() time.Time
	names       *fetch.NameCache
	// shared is the work the panels of one dashboard refresh share (fetch.SharedWork);
	// generation names the settings it was computed under.
	shared     *fetch.SharedWork
	generation string
	// twins is the capacity twin's cache of calibrated twins, knees and what-ifs, with the
	// capacity query's answer deadline (fetch.Twins); closed by Dispose.
	twins *fetch.Twins
	// scrub masks secureJsonData values in everything returned to viewers.
	scrub scrubber
	// pending is set when the embedded store could not be opened for a
	// reason that may pass (storeReady retries it); nil otherwise.
	pending *pendingStore
}

// NewInstance is the instance factory handed to datasource.Manage. It loads
// settings (jsonData + decrypted secureJsonData, and the top-level URL and
// basic auth of remote mode), then either starts the embedded collector on
// the data source's store directory (storagePath/<org>-<uid>) or, in remote mode,
// builds the remote Querier (and scrapes nothing). Invalid settings do not
// fail the factory, so Grafana can show the error in the health check.
func NewInstance(ctx context.Context, s backend.DataSourceInstanceSettings) (instancemgmt.Instance, error) {
	scrub := newScrubber(s)
	logger := newLogger(log.DefaultLogger, s.UID, scrub.mask())
	inst := newInstance(logger)
	inst.scrub = scrub
	inst.generation = s.UID + "@" + strconv.FormatInt(s.Updated.UnixNano(), 10)
	cfg, err := settings.LoadWithURL(s.URL, s.BasicAuthEnabled, s.JSONData, s.DecryptedSecureJSONData)
	if err != nil {
		inst.settingsErr = err
		return inst, nil
	}
	inst.settings = cfg
	if cfg.IsRemote() {
		q, rs, err := newRemoteQuerier(ctx, s, cfg, scrub.mask())
		if err != nil {
			inst.settingsErr = err
			return inst, nil
		}
		inst.querier, inst.remote = budgeted(q), rs
		return inst, nil
	}
	root := cfg.StoragePath
	if root == "" {
		root = collect.DefaultStoragePath()
	}
	// Grafana keeps UIDs unique per organisation only: the store is keyed
	// by both (the organisation comes with the request that created the
	// instance) and marked with its owner; a store of an earlier layout
	// moves only to the one data source that can claim it
	// (collect.LegacyStoreDirs).
	org := orgOf(backend.PluginConfigFromContext(ctx))
	if org <= 0 {
		org = 1
	}
	opts := collect.Options{Dir: collect.OrgDataSourceDir(root, org, s.UID), LegacyDirs: collect.LegacyStoreDirs(root, org, s.UID),
		Owner: collect.Owner{Org: org, UID: s.UID}, UID: metricsUID(org, s.UID), Logger: logger, Mask: scrub.mask()}
	c, err := collect.Start(cfg, opts)
	if err != nil && retryable(err) {
		// Another process holds the store: retried at every query and
		// health check (storeReady) instead of until a settings save.
		logger.Warn("embedded store locked; retrying at the next query or health check", "error", err)
		inst.pending = &pendingStore{cfg: cfg, opts: opts, err: err}
		return inst, nil
	}
	if err != nil {
		inst.settingsErr = fmt.Errorf("starting the embedded collector: %w", err)
		return inst, nil
	}
	inst.collector = c
	inst.querier = budgeted(c.Querier())
	live.add(inst)
	return inst, nil
}

// metricsUID is the `datasource` label of the plugin's own metrics: the UID
// in organisation 1 (Grafana's default, and the only one of most servers),
// "<org>/<uid>" in another and for a UID holding '/' (the legacy API allows
// one), so one UID in two organisations is two series and no organisation
// 1 UID spells another organisation's label.
func metricsUID(org int64, uid string) string {
	if org <= 1 && !strings.Contains(uid, "/") {
		return uid
	}
	return fmt.Sprintf("%d/%s", org, uid)
}

// Dispose stops scraping at once, lets queries in flight finish (later ones
// get "data source reconfigured, retry") and releases the data source's store,
// which stays on disk. Grafana calls it a few seconds after the settings
// change, when the data source is deleted, and Shutdown calls it when the
// plugin process stops.
func (i *Instance) Dispose() {
	if p := i.pending; p != nil {
		// A retry in flight finishes first; none starts after.
		p.mu.Lock()
		p.closed = true
		p.mu.Unlock()
	}
	live.remove(i)
	i.twins.Close()
	if i.collector != nil {
		if err := i.collector.Close(); err != nil {
			i.logger.Warn("closing collector", "error", err)
		}
	}
}

// newInstance builds an instance's request handlers and caches; settings and the
// query path are filled in by the caller.
func newInstance(logger *slog.Logger) *Instance {
	inst := &Instance{logger: logger, now: time.Now, names: fetch.NewNameCache(), shared: fetch.NewSharedWork(fetch.DefaultSharedMaxAge),
		twins: fetch.NewTwins(capacityWait(logger), twinSlots)}
	inst.resources = inst.newResources()
	return inst
}

// twinSlots bound the capacity twin's simulations running at once in the process, whatever
// data source started them: one per CPU the runtime uses. They are CPU-bound, so every
// instance's cache shares these slots (each instance bounds its own queue).
var twinSlots = fetch.NewTwinSlots(runtime.GOMAXPROCS(0))

// capacityWait is how long a capacity query waits for its twins' simulations: the first
// calibration of ten targets with their knees and what-ifs takes minutes of CPU, longer than
// Grafana waits for a panel, so a query answers after fetch.DefaultTwinWait (20 s) with the
// rows that are ready and a notice naming the targets still computing; their simulations go
// on (detached) and a refresh finds them in the cache. INFERSCOPE_CAPACITY_WAIT (a Go
// duration, e.g. "2m"), read when the instance is built, sets another wait; an unreadable
// value keeps the default, with a warning.
func capacityWait(logger *slog.Logger) time.Duration {
	v := os.Getenv("INFERSCOPE_CAPACITY_WAIT")
	if v == "" {
		return fetch.DefaultTwinWait
	}
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 {
		logger.Warn("INFERSCOPE_CAPACITY_WAIT is not a positive Go duration such as 45s; the capacity query waits the default", "value", v, "default", fetch.DefaultTwinWait)
		return fetch.DefaultTwinWait
	}
	return d
}
