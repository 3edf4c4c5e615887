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
	remote      *remoteState // remote mode only (see remote.go)
	querier     source.Querier
	resources   backend.CallResourceHandler
	logger      *slog.Logger
	now         func() time.Time
	names       *fetch.NameCache
	// scrub masks secureJsonData values in everything returned to viewers.
	scrub scrubber
}

// NewInstance is the instance factory handed to datasource.Manage. It loads
// settings (jsonData + decrypted secureJsonData, and the top-level URL and
// basic auth of remote mode), then either starts the embedded collector on
// the data source's store directory (storagePath/<uid>) or, in remote mode,
// builds the remote Querier (and scrapes nothing). Invalid settings do not
// fail the factory, so Grafana can show the error in the health check.
func NewInstance(ctx context.Context, s backend.DataSourceInstanceSettings) (instancemgmt.Instance, error) {
	logger := newLogger(log.DefaultLogger, s.UID)
	inst := newInstance(logger)
	inst.scrub = newScrubber(s.DecryptedSecureJSONData)
	cfg, err := settings.LoadWithURL(s.URL, s.BasicAuthEnabled, s.JSONData, s.DecryptedSecureJSONData)
	if err != nil {
		inst.settingsErr = err
		return inst, nil
	}
	inst.settings = cfg
	if cfg.IsRemote() {
		q, rs, err := newRemoteQuerier(ctx, s, cfg)
		if err != nil {
			inst.settingsErr = err
			return inst, nil
		}
		inst.querier, inst.remote = q, rs
		return inst, nil
	}
	root := cfg.StoragePath
	if root == "" {
		root = collect.DefaultStoragePath()
	}
	c, err := collect.Start(cfg, collect.Options{Dir: collect.DataSourceDir(root, s.UID), UID: s.UID, Logger: logger})
	if err != nil {
		inst.settingsErr = fmt.Errorf("starting the embedded collector: %w", err)
		return inst, nil
	}
	inst.collector = c
	inst.querier = c.Querier()
	live.add(inst)
	return inst, nil
}

// Dispose stops scraping at once, lets queries in flight finish (later ones
// get "data source reconfigured, retry") and releases the data source's store,
// which stays on disk. Grafana calls it a few seconds after the settings
// change, when the data source is deleted, and Shutdown calls it when the
// plugin process stops.
func (i *Instance) Dispose() {
	live.remove(i)
	if i.collector != nil {
		if err := i.collector.Close(); err != nil {
			i.logger.Warn("closing collector", "error", err)
		}
	}
}

// newInstance builds an instance's request handlers; settings and the query
// path are filled in by the caller.
func newInstance(logger *slog.Logger) *Instance {
	inst := &Instance{logger: logger, now: time.Now, names: fetch.NewNameCache()}
	inst.resources = inst.newResources()
	return inst
}
