package plugin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/backend"

	"github.com/inferscope/inferscope-llm-datasource/pkg/collect"
	"github.com/inferscope/inferscope-llm-datasource/pkg/fetch"
	"github.com/inferscope/inferscope-llm-datasource/pkg/queries"
	"github.com/inferscope/inferscope-llm-datasource/pkg/source"
)

// QueryData answers a request: while the embedded store is not open yet (another process
// holds it), every query gets that error (storeReady); queries whose JSON is over a
// size limit are refused before decoding (boundQueries); the others wait for one of the
// process's query slots (admission, "busy, retry" past the queue wait) and run under the
// request's budget of points × series (withBudget).
func (i *Instance) QueryData(ctx context.Context, req *backend.QueryDataRequest) (*backend.QueryDataResponse, error) {
	if err := i.storeReady(); err != nil {
		return pendingResponse(req, errors.New(i.scrub.text(i.pending.pendingError(err).Error()))), nil
	}
	run, refused := boundQueries(req)
	if run == nil {
		return &backend.QueryDataResponse{Responses: refused}, nil
	}
	release, err := gate.acquire(ctx, sourceOf(req.PluginContext))
	if err != nil {
		resp := busyResponse(run, err)
		for k, v := range refused {
			resp.Responses[k] = v
		}
		return resp, nil
	}
	defer release()
	resp, err := i.dispatch(source.WithReadCounter(withBudget(ctx, queryBudget)), run)
	if resp != nil {
		for k, v := range refused {
			resp.Responses[k] = v
		}
	}
	return resp, err
}

// dispatch sends each query to its query type (queries.Lookup: the DataQuery's
// QueryType, else the queryType of its JSON, for a request built from the stored model
// alone). One bad query never fails the others; every response passes the secret scrub.
func (i *Instance) dispatch(ctx context.Context, req *backend.QueryDataRequest) (*backend.QueryDataResponse, error) {
	resp := backend.NewQueryDataResponse()
	ctx = backend.WithPluginContext(ctx, req.PluginContext)
	for _, q := range req.Queries {
		name := q.QueryType
		if name == "" {
			var m struct {
				QueryType string `json:"queryType"`
			}
			_ = json.Unmarshal(q.JSON, &m)
			name = m.QueryType
		}
		if _, ok := queries.Lookup(name); !ok {
			resp.Responses[q.RefID] = errorResponse(queries.Badf("queryType %q is not one of %s", name, joinNames()))
			continue
		}
		q.QueryType = name
		resp.Responses[q.RefID] = i.scrub.response(i.runOne(ctx, q))
	}
	return resp, nil
}

// runOne decodes one query (queries.Decode) and runs it over the instance's environment,
// turning (frames, error) into a DataResponse; a panic becomes an internal error.
func (i *Instance) runOne(ctx context.Context, q backend.DataQuery) (dr backend.DataResponse) {
	start := time.Now()
	defer func() { observeQuery(q.QueryType, start, dr) }()
	defer func() {
		if r := recover(); r != nil {
			i.logger.Error("query panicked", "queryType", q.QueryType, "panic", fmt.Sprint(r))
			dr = errorResponse(backend.PluginError(fmt.Errorf("internal error while computing the %s query", q.QueryType)))
		}
	}()
	if i.settingsErr != nil {
		return errorResponse(backend.DownstreamError(fmt.Errorf("data source settings: %w", i.settingsErr)))
	}
	d, err := queries.Decode(q.QueryType, q, &i.settings)
	if err != nil {
		return errorResponse(err)
	}
	if i.remote != nil {
		// remoteTimeout bounds the query's requests to the server in all, not each alone.
		var cancel context.CancelFunc
		ctx, cancel = source.WithQueryTimeout(ctx, i.settings.Remote.Timeout)
		defer cancel()
	}
	// The remote querier adds the server's warnings to the request's notes; the query's
	// run reads them into its frames (frames.Meta.Server).
	ctx, notes := source.WithNotes(ctx)
	i.serverKindNotes(ctx, q.QueryType, notes)
	env := i.env()
	env.Org = orgOf(backend.PluginConfigFromContext(ctx))
	fr, err := d.Run(ctx, env)
	if err != nil {
		if i.remote != nil && !isRemoteError(err) {
			if te := source.QueryTimedOut(ctx, i.remote.url); te != nil {
				err = te
			}
		}
		return errorResponse(err)
	}
	for _, f := range fr {
		f.RefID = q.RefID
	}
	return backend.DataResponse{Frames: fr}
}

// env is the read layer's view of the instance: settings, querier, scrape status, clock, the
// cache of stored names and the capacity twin's cache.
func (i *Instance) env() *fetch.Env {
	e := &fetch.Env{Settings: &i.settings, Querier: i.querier, Statuses: i.statuses, Now: i.now, Names: i.names, Logger: i.logger,
		Shared: i.shared, SettingsGeneration: i.generation, Baselines: baselineCache, Twins: i.twins}
	if i.collector != nil {
		e.ScrapeErrors = i.collector.ScrapeErrors
	}
	return e
}

// joinNames lists the query types for an error message.
func joinNames() string {
	out := ""
	for k, n := range queries.Names() {
		if k > 0 {
			out += ", "
		}
		out += n
	}
	return out
}

// errorResponse maps an error to a DataResponse: query mistakes are 400s from downstream
// (the user), everything else is the plugin's.
func errorResponse(err error) backend.DataResponse {
	switch {
	case queries.IsBadQuery(err):
		return backend.DataResponse{Error: err, Status: backend.StatusBadRequest, ErrorSource: backend.ErrorSourceDownstream}
	case isRemoteError(err):
		return remoteErrorResponse(err)
	case backend.IsDownstreamError(err):
		return backend.DataResponse{Error: err, Status: backend.StatusBadRequest, ErrorSource: backend.ErrorSourceDownstream}
	case errors.Is(err, context.DeadlineExceeded):
		return backend.DataResponse{Error: err, Status: backend.StatusTimeout, ErrorSource: backend.ErrorSourcePlugin}
	case errors.Is(err, collect.ErrReconfigured):
		return backend.DataResponse{Error: err, Status: backend.Status(http.StatusServiceUnavailable), ErrorSource: backend.ErrorSourcePlugin}
	}
	return backend.DataResponse{Error: err, Status: backend.Status(http.StatusInternalServerError), ErrorSource: backend.ErrorSourcePlugin}
}

// statuses returns the collector's view of every target and agent by name (the remote
// server's in remote mode). Collector.Status rebuilds every entry, so callers ask once per
// query.
func (i *Instance) statuses() map[string]collect.TargetStatus {
	if i.remote != nil {
		ctx, cancel := context.WithTimeout(context.Background(), i.settings.Remote.Timeout)
		defer cancel()
		return i.remoteStatuses(ctx)
	}
	out := map[string]collect.TargetStatus{}
	if i.collector == nil {
		return out
	}
	for _, st := range i.collector.Status() {
		out[st.Name] = st
	}
	return out
}
