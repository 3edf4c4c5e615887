package plugin

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/backend"
	"github.com/grafana/grafana-plugin-sdk-go/backend/datasource"
	"github.com/grafana/grafana-plugin-sdk-go/data"
	"github.com/prometheus/common/model"

	"github.com/inferscope/inferscope-llm-datasource/pkg/analysis"
	"github.com/inferscope/inferscope-llm-datasource/pkg/analysis/latency"
	"github.com/inferscope/inferscope-llm-datasource/pkg/analysis/sanity"
	"github.com/inferscope/inferscope-llm-datasource/pkg/analysis/saturation"
	"github.com/inferscope/inferscope-llm-datasource/pkg/analysis/throughput"
	"github.com/inferscope/inferscope-llm-datasource/pkg/catalog"
	"github.com/inferscope/inferscope-llm-datasource/pkg/collect"
	"github.com/inferscope/inferscope-llm-datasource/pkg/frames"
	"github.com/inferscope/inferscope-llm-datasource/pkg/hist"
	"github.com/inferscope/inferscope-llm-datasource/pkg/source"
)

// handlerFunc computes the frames of one query of a given type.
type handlerFunc func(ctx context.Context, p *plan) (data.Frames, error)

func (i *Instance) newMux() *datasource.QueryTypeMux {
	mux := datasource.NewQueryTypeMux()
	handlers := map[string]handlerFunc{
		QueryTypeLatency:    i.queryLatency,
		QueryTypeBreakdown:  i.queryBreakdown,
		QueryTypeThroughput: i.queryThroughput,
		QueryTypeSaturation: i.querySaturation,
		QueryTypeTargets:    i.queryTargets,
		QueryTypeRaw:        i.queryRaw,
		QueryTypeGPU:        i.queryGPU,
		QueryTypeEvents:     i.queryEvents,
		QueryTypeDiagnosis:  i.queryDiagnosis,
		QueryTypeSLO:        i.querySLO,
		QueryTypeBurnRate:   i.queryBurnRate,
		QueryTypeGoodput:    i.queryGoodput,
		QueryTypeBuckets:    i.queryBuckets,
	}
	for qt, h := range handlers {
		mux.HandleFunc(qt, i.serve(h))
	}
	// A query whose DataQuery.QueryType is empty (a request built from the
	// stored model alone) is routed by the queryType of its JSON.
	mux.HandleFunc("", func(ctx context.Context, req *backend.QueryDataRequest) (*backend.QueryDataResponse, error) {
		resp := backend.NewQueryDataResponse()
		for _, q := range req.Queries {
			var m struct {
				QueryType string `json:"queryType"`
			}
			if q.QueryType != "" {
				m.QueryType = q.QueryType
			} else {
				_ = json.Unmarshal(q.JSON, &m)
			}
			if h, ok := handlers[m.QueryType]; ok && q.QueryType == "" {
				q.QueryType = m.QueryType
				resp.Responses[q.RefID] = i.scrub.response(i.runOne(ctx, q, h))
				continue
			}
			resp.Responses[q.RefID] = errorResponse(badQueryf("queryType %q is not one of latency, breakdown, throughput, saturation, targets, raw, gpu, events, diagnosis, slo, burn_rate, goodput, buckets", m.QueryType))
		}
		return resp, nil
	})
	return mux
}

// QueryData dispatches each query to the handler of its query type.
func (i *Instance) QueryData(ctx context.Context, req *backend.QueryDataRequest) (*backend.QueryDataResponse, error) {
	if err := i.storeReady(); err != nil {
		return pendingResponse(req, errors.New(i.scrub.text(i.pending.pendingError(err).Error()))), nil
	}
	// Every list of every query bounded before anything is decoded
	// (query_bounds.go); the refused ones are answered here.
	run, refused := boundQueries(req)
	if run == nil {
		return &backend.QueryDataResponse{Responses: refused}, nil
	}
	// Admission control (admission.go): a slot, or "busy, retry".
	release, err := gate.acquire(ctx)
	if err != nil {
		resp := busyResponse(run, err)
		for k, v := range refused {
			resp.Responses[k] = v
		}
		return resp, nil
	}
	defer release()
	// The request's budget of points × series (budget.go).
	resp, err := i.mux.QueryData(withBudget(ctx, queryBudget), run)
	if resp != nil {
		for k, v := range refused {
			resp.Responses[k] = v
		}
	}
	return resp, err
}

// serve adapts a handlerFunc to the SDK: it decodes every query of the
// request, runs it, and turns (frames, error) into a DataResponse. One bad
// query never fails the others.
func (i *Instance) serve(h handlerFunc) backend.QueryDataHandlerFunc {
	return func(ctx context.Context, req *backend.QueryDataRequest) (*backend.QueryDataResponse, error) {
		resp := backend.NewQueryDataResponse()
		for _, q := range req.Queries {
			resp.Responses[q.RefID] = i.scrub.response(i.runOne(ctx, q, h))
		}
		return resp, nil
	}
}

func (i *Instance) runOne(ctx context.Context, q backend.DataQuery, h handlerFunc) (dr backend.DataResponse) {
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
	p, err := decodeQuery(q, &i.settings)
	if err != nil {
		return errorResponse(err)
	}
	ctx, notes := source.WithNotes(ctx)
	fr, err := h(ctx, p)
	if err != nil {
		return errorResponse(err)
	}
	fr = addServerNotices(fr, notes.List())
	for _, f := range fr {
		f.RefID = q.RefID
	}
	return backend.DataResponse{Frames: fr}
}

// errorResponse maps an error to a DataResponse: query mistakes are 400s
// from downstream (the user), everything else is the plugin's.
func errorResponse(err error) backend.DataResponse {
	var bq badQuery
	switch {
	case errors.As(err, &bq):
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

// run is one query's working state: the PromQL it ran and the notices it gathered.
type run struct {
	mu      sync.Mutex // guards queries while stages are fetched concurrently
	i       *Instance
	p       *plan
	steps   []time.Time
	queries []string
	notes   analysis.Notices

	viewsOnce   sync.Once
	targetViews []targetView
}

func (i *Instance) newRun(p *plan) *run {
	r := &run{i: i, p: p, steps: analysis.Steps(p.start, p.end, p.step)}
	for _, n := range p.notes {
		r.notes.Add(n.Severity, n.Text)
	}
	return r
}

func (r *run) meta() frames.Meta { return frames.Meta{Queries: r.queries, Notices: r.notes.List()} }

// parallel runs fn(0..n-1) on up to GOMAXPROCS goroutines and returns the
// first error. A panic in fn becomes that call's error: runOne's recover
// does not reach other goroutines, and a panic there would end the plugin.
func (r *run) parallel(n int, fn func(k int) error) error {
	sem := make(chan struct{}, runtime.GOMAXPROCS(0))
	errs := make([]error, n)
	var wg sync.WaitGroup
	for k := 0; k < n; k++ {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() {
				if p := recover(); p != nil {
					r.i.logger.Error("query part panicked", "panic", fmt.Sprint(p))
					errs[k] = backend.PluginError(fmt.Errorf("internal error while computing part %d of the query", k))
				}
				<-sem
				wg.Done()
			}()
			errs[k] = fn(k)
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

func (r *run) rangeQuery(ctx context.Context, q string) (model.Matrix, error) {
	r.mu.Lock()
	r.queries = append(r.queries, q)
	r.mu.Unlock()
	m, err := r.i.querier.QueryRange(ctx, q, r.p.start, r.p.end, r.p.step)
	if err != nil {
		return nil, fmt.Errorf("PromQL %s: %w", q, err)
	}
	return m, nil
}

func (r *run) instantQuery(ctx context.Context, q string, ts time.Time) (model.Vector, error) {
	r.mu.Lock()
	r.queries = append(r.queries, q)
	r.mu.Unlock()
	v, err := r.i.querier.Query(ctx, q, ts)
	if err != nil {
		return nil, fmt.Errorf("PromQL %s: %w", q, err)
	}
	vec, ok := v.(model.Vector)
	if !ok {
		return nil, fmt.Errorf("PromQL %s returned %s, not a vector", q, v.Type())
	}
	return vec, nil
}

// namesFrom is the start of the range whose stored names decide a query's
// detection and availability: the first step's rate window starts there.
func (r *run) namesFrom() time.Time { return r.p.start.Add(-r.p.window) }

// views returns each target in scope with its one detection over the
// queried range (computed once per query).
func (r *run) views(ctx context.Context) []targetView {
	r.viewsOnce.Do(func() {
		for _, t := range r.i.targetsInScope(r.p.Targets) {
			r.targetViews = append(r.targetViews, r.i.viewOf(ctx, t.Name, r.namesFrom(), r.p.end))
		}
	})
	return r.targetViews
}

// scopeNotices says, per target in scope, why signals may have no data:
// the target is down, nothing is stored for it in the range, its engine is
// unknown, or per signal asked (catalog.Assess over the names stored in the
// range) that it is approximate, not seen (naming the metric names looked
// for) or absent.
func (r *run) scopeNotices(ctx context.Context, signals []catalog.Signal) {
	r.availabilityNotices(r.views(ctx), signals)
}

// availabilityNotices is scopeNotices for the given views (targets or GPU agents).
func (r *run) availabilityNotices(views []targetView, signals []catalog.Signal) {
	statuses := r.i.statuses()
	for _, v := range views {
		st, known := statuses[v.Name]
		down := known && !st.Up && !st.LastScrape.IsZero()
		downWhy := ""
		if down {
			downWhy = fmt.Sprintf("target %s is down", v.Name)
			if st.LastError != "" {
				downWhy += ": " + sanitizeError(st.LastError)
			}
			r.notes.Add(analysis.Warning, downWhy+"; its samples stop at the last successful scrape")
		}
		asked := make([]string, len(signals))
		for k, s := range signals {
			asked[k] = string(s)
		}
		if len(v.Names) == 0 {
			msg := fmt.Sprintf("target %s: nothing is stored for it in the queried range, so %s have no data", v.Name, strings.Join(asked, ", "))
			switch {
			case down:
				msg += " (" + downWhy + ")"
			case !known || st.LastScrape.IsZero():
				msg += " (it has not been scraped yet)"
			}
			r.notes.Add(analysis.Warning, msg)
			continue
		}
		if !v.OK {
			r.notes.Add(analysis.Warning, fmt.Sprintf("target %s: no family of a known inference engine or GPU exporter is stored for it in the queried range, so %s have no data; set the engine in the target's settings if it is one", v.Name, strings.Join(asked, ", ")))
			continue
		}
		eng := v.Det.Engine
		for _, s := range signals {
			a := v.assess(s)
			switch a.State {
			case catalog.StateApproximate:
				r.notes.Add(analysis.Info, fmt.Sprintf("target %s (%s): %s is approximate: %s", v.Name, eng, s, a.Note))
			case catalog.StateNotSeen:
				r.notes.Add(analysis.Warning, a.NotSeenSentence(v.Name, eng))
			case catalog.StateAbsent:
				r.notes.Add(analysis.Info, a.AbsentSentence(v.Name, eng))
			}
		}
	}
}

// idleNotices says, per target in scope and exported request signal, when
// no request was counted in the whole queried range (the histogram's count
// or the counter did not grow): its series then have no data, which is not
// an error. One instant query at the range's end per signal and set of
// stored names, grouped by target.
func (r *run) idleNotices(ctx context.Context, signals []catalog.Signal) error {
	rng := r.p.end.Sub(r.namesFrom())
	for _, s := range signals {
		type group struct {
			metrics []catalog.Metric
			targets []string
		}
		var groups []group
		for _, v := range r.views(ctx) {
			if !v.OK {
				continue
			}
			a := v.assess(s)
			if !a.Exported() || (a.Metrics[0].Kind != catalog.KindHistogram && a.Metrics[0].Kind != catalog.KindCounter) {
				continue
			}
			placed := false
			for k := range groups {
				if sameMetrics(groups[k].metrics, a.Metrics) {
					groups[k].targets = append(groups[k].targets, v.Name)
					placed = true
					break
				}
			}
			if !placed {
				groups = append(groups, group{a.Metrics, []string{v.Name}})
			}
		}
		for _, g := range groups {
			sc := catalog.Scope{Targets: g.targets, Models: r.p.Models, By: []string{"target"}}
			var q, what string
			if g.metrics[0].Kind == catalog.KindHistogram {
				hq, err := catalog.HistogramPromQLFor(g.metrics, sc, rng)
				if err != nil {
					return err
				}
				q, what = hq.Count, "its histogram's count did not grow"
			} else {
				cq, err := catalog.CounterRatePromQL(s, sc, rng)
				if err != nil {
					return err
				}
				q, what = cq, "its counter did not grow"
			}
			vec, err := r.instantQuery(ctx, q, r.p.end)
			if err != nil {
				return err
			}
			grew := map[string]bool{}
			for _, smp := range vec {
				if float64(smp.Value) > 0 {
					grew[string(smp.Metric["job"])] = true
				}
			}
			for _, t := range g.targets {
				if !grew[t] {
					r.notes.Add(analysis.Info, fmt.Sprintf("target %s: no requests in the queried range for %s (%s): no data, not zero", t, s, what))
				}
			}
		}
	}
	return nil
}

// histogramQueries returns the PromQL for a latency stage over the query's
// targets. Each target reads the metrics its detection provides for the
// stage (catalog.Assess: e.g. vLLM V0 TPOT from the per-step histogram),
// narrowed to the names stored for it in the queried range, so a target
// renamed inside the range reads both names (joined with `or`) and a
// homogeneous fleet gets one query without `or` branches for names it does
// not have. Targets sharing a metric list share a query; targets whose
// engine is unknown use the catalogue's query over every engine. Every
// target is in exactly one partition, so the partitions' series add up per
// group.
//
// extraBy adds canonical groups (e.g. "target") to the query's own.
func (r *run) histogramQueries(ctx context.Context, stage catalog.Signal, window time.Duration, extraBy ...string) ([]catalog.HistogramQueries, error) {
	hqs, _, err := r.histogramParts(ctx, stage, window, false, extraBy...)
	return hqs, err
}

// histogramParts is histogramQueries that also returns, for each query, the targets it reads;
// with finite, the queries leave non-finite rates out (catalog.Scope.Finite).
func (r *run) histogramParts(ctx context.Context, stage catalog.Signal, window time.Duration, finite bool, extraBy ...string) ([]catalog.HistogramQueries, [][]string, error) {

	type part struct {
		metrics []catalog.Metric
		targets []string
	}
	var parts []part
	var rest []string
	for _, v := range r.views(ctx) {
		if !v.OK {
			if len(v.Names) > 0 {
				rest = append(rest, v.Name)
			}
			continue
		}
		a := v.assess(stage)
		if !a.Exported() {
			continue // absent or not seen, not zero: scopeNotices says so
		}
		var metrics []catalog.Metric
		for _, m := range a.Metrics {
			if m.Kind == catalog.KindHistogram && m.Scale == 1 {
				metrics = append(metrics, m)
			}
		}
		if len(metrics) == 0 {
			continue
		}
		placed := false
		for k := range parts {
			if sameMetrics(parts[k].metrics, metrics) {
				parts[k].targets = append(parts[k].targets, v.Name)
				placed = true
				break
			}
		}
		if !placed {
			parts = append(parts, part{metrics: metrics, targets: []string{v.Name}})
		}
	}
	var out []catalog.HistogramQueries
	var targets [][]string
	if len(rest) > 0 {
		sc := r.p.scope
		sc.By = append(slices.Clone(sc.By), extraBy...)
		sc.Targets = rest
		sc.Finite = finite
		hq, err := catalog.HistogramPromQL(stage, sc, window)
		if err != nil {
			return nil, nil, err
		}
		out = append(out, hq)
		targets = append(targets, rest)
	}
	for _, pt := range parts {
		sc := r.p.scope
		sc.By = append(slices.Clone(sc.By), extraBy...)
		sc.Targets = pt.targets
		sc.Finite = finite
		hq, err := catalog.HistogramPromQLFor(pt.metrics, sc, window)
		if err != nil {
			return nil, nil, err
		}
		out = append(out, hq)
		targets = append(targets, pt.targets)
	}
	return out, targets, nil
}

func sameMetrics(a, b []catalog.Metric) bool {
	if len(a) != len(b) {
		return false
	}
	for k := range a {
		if a[k].Name != b[k].Name || a[k].Scale != b[k].Scale || a[k].Match != b[k].Match {
			return false
		}
	}
	return true
}

func parseStages(names []string, def []catalog.Signal) ([]catalog.Signal, error) {
	if len(names) == 0 {
		return def, nil
	}
	valid := map[string]bool{}
	for _, s := range catalog.LatencyStages {
		valid[string(s)] = true
	}
	out := make([]catalog.Signal, 0, len(names))
	for _, n := range names {
		if !valid[n] {
			all := make([]string, 0, len(catalog.LatencyStages))
			for _, s := range catalog.LatencyStages {
				all = append(all, string(s))
			}
			return nil, badQueryf("stages: %q is not one of %s", n, strings.Join(all, ", "))
		}
		out = append(out, catalog.Signal(n))
	}
	return out, nil
}

func (i *Instance) queryLatency(ctx context.Context, p *plan) (data.Frames, error) {
	stages, err := parseStages(p.Stages, []catalog.Signal{catalog.TTFT, catalog.ITL, catalog.E2E})
	if err != nil {
		return nil, err
	}
	statNames := p.Stats
	if len(statNames) == 0 {
		statNames = latency.DefaultStats
	}
	opt := latency.Options{Estimator: p.estimator, Bounds: p.Bounds == nil || *p.Bounds}
	if len(statNames) > maxStats {
		return nil, badQueryf("stats: %d statistics asked, at most %d per query", len(statNames), maxStats)
	}
	seenStat := map[string]bool{}
	for _, s := range statNames {
		st, err := latency.ParseStat(s)
		if err != nil {
			return nil, badQueryf("stats: %v", err)
		}
		if seenStat[st.Name] {
			continue
		}
		seenStat[st.Name] = true
		opt.Stats = append(opt.Stats, st)
	}
	r := i.newRun(p)
	r.scopeNotices(ctx, stages)
	// Stages are independent: fetch them concurrently (the PromQL engine
	// runs concurrent queries), then compute in stage order.
	inputs := make([]latency.Input, len(stages))
	extra := make([][]analysis.Series, len(stages))
	checks := make([]latency.Input, len(stages)) // windowed increases, for the consistency checks
	// Sanity findings and skipped checks per stage, added to the notices in stage order (the
	// stages run concurrently; notices are not safe for concurrent use).
	type skip struct {
		what string
		err  error
	}
	findings := make([][]sanity.Finding, len(stages))
	skips := make([][]skip, len(stages))
	err = r.parallel(len(stages), func(k int) error {
		stage := stages[k]
		var err error
		if extra[k], err = r.counterMeans(ctx, stage, needMeanStat(opt.Stats), len(opt.Stats) > 0 && !onlyMean(opt.Stats)); err != nil {
			return err
		}
		// Targets whose bucket layouts differ keep their target (job) so
		// latency.Compute adds only histograms of one layout and merges
		// different layouts as distributions; one layout needs no split.
		split, err := r.layoutSplit(ctx, stage)
		if err != nil {
			return err
		}
		var extraBy []string
		if split != "" {
			extraBy = []string{"target"}
		}
		hqs, hqTargets, err := r.histogramParts(ctx, stage, p.window, false, extraBy...)
		if err != nil {
			return err
		}
		fetched, err := r.fetchHistograms(ctx, hqs)
		if err != nil {
			return err
		}
		// NaN and ±Inf samples reach the aggregates as NaN or ±Inf: name them, and fetch
		// again with the finite filters (catalog.Scope.Finite), which leave each stored
		// histogram out of the windows they spoil. A clean history pays nothing for this.
		finite := false
		if nonFiniteIn(fetched) {
			effect := "left out of the " + string(stage) + " quantiles and mean in the windows that contain it"
			nf, err := r.nonFiniteScan(ctx, stage, p.scope, p.window, effect)
			if err != nil {
				skips[k] = append(skips[k], skip{"the check for NaN and infinite " + string(stage) + " samples", err})
			}
			findings[k] = append(findings[k], nf...)
			finite = true
			if hqs, hqTargets, err = r.histogramParts(ctx, stage, p.window, true, extraBy...); err != nil {
				return err
			}
			if fetched, err = r.fetchHistograms(ctx, hqs); err != nil {
				return err
			}
		}
		// Histograms that went backwards without a restart are named and left out of the
		// windows that hold the step. Looked for only where the results show a decrease: a
		// _count reset, or a bucket increase that is negative or below the bucket under it.
		if decreaseIn(fetched) {
			backs, bf, err := r.histogramBackwards(ctx, stage, p.window, finite, extraBy...)
			if err != nil {
				skips[k] = append(skips[k], skip{"the check for " + string(stage) + " histograms going backwards", err})
			}
			findings[k] = append(findings[k], bf...)
			for j, f := range fetched {
				for _, b := range backs {
					if !slices.Contains(hqTargets[j], b.job) {
						continue
					}
					if err := r.leaveOutHistogram(ctx, b, p.window, []model.Matrix{f.inc, f.rates, f.sum, f.count, f.sumInc, f.cntInc}); err != nil {
						return err
					}
				}
			}
		}
		in := latency.Input{Stage: stage, Scale: 1, SplitBy: split, Window: p.window}
		// Partitions cover disjoint targets: their series of one group add
		// up in latency.Compute. Rank fractions come from bucket increases
		// scaled by one factor per histogram (see latency.Input.Increases).
		for _, f := range fetched {
			in.Increases = append(in.Increases, f.inc...)
			in.Resets = append(in.Resets, f.resets...)
			in.Buckets = append(in.Buckets, f.rates...)
			in.Sum = append(in.Sum, f.sum...)
			in.Count = append(in.Count, f.count...)
			// The consistency checks (sanity.HistogramChecks) compare the
			// buckets, _sum and _count on one footing: their delta()
			// increases, which share one extrapolation per target.
			// Windows holding a counter reset are left out (delta is no
			// increase there; rate()'s own extrapolation is what Compute uses).
			checks[k].Stage = stage
			checks[k].Buckets = append(checks[k].Buckets, withoutResets(f.inc, f.resets)...)
			checks[k].Sum = append(checks[k].Sum, withoutResets(f.sumInc, f.resets)...)
			checks[k].Count = append(checks[k].Count, withoutResets(f.cntInc, f.resets)...)
		}
		inputs[k] = in
		return nil
	})
	if err != nil {
		return nil, err
	}
	var series []analysis.Series
	for k, in := range inputs {
		series = append(series, latency.Compute(in, r.steps, opt, &r.notes)...)
		series = append(series, extra[k]...)
		r.histogramNotices(checks[k], checks[k].Count)
		for _, sk := range skips[k] {
			r.skipped(sk.what, sk.err)
		}
		r.addFindings(findings[k], string(stages[k]))
	}
	if err := r.idleNotices(ctx, stages); err != nil {
		return nil, err
	}
	if err := r.changeNotices(ctx); err != nil {
		return nil, err
	}
	return i.withObjectiveThresholds(p, frames.TimeSeries(series, r.meta()))
}

// histFetch holds one histogram query's results (catalog.HistogramQueries): bucket
// increases, _count resets, bucket rates (only where a reset asks for them), _sum and _count
// rates and increases.
type histFetch struct {
	inc, resets, rates, sum, count, sumInc, cntInc model.Matrix
}

// fetchHistograms runs every query of each HistogramQueries.
func (r *run) fetchHistograms(ctx context.Context, hqs []catalog.HistogramQueries) ([]histFetch, error) {
	out := make([]histFetch, len(hqs))
	for j, hq := range hqs {
		f := &out[j]
		var err error
		if f.inc, err = r.rangeQuery(ctx, hq.Increases); err != nil {
			return nil, err
		}
		if f.resets, err = r.rangeQuery(ctx, hq.Resets); err != nil {
			return nil, err
		}
		if anyAbove(f.resets, 0) {
			// Compute falls back to rate()'s buckets in windows holding a counter reset.
			if f.rates, err = r.rangeQuery(ctx, hq.Buckets); err != nil {
				return nil, err
			}
		}
		if f.sum, err = r.rangeQuery(ctx, hq.Sum); err != nil {
			return nil, err
		}
		if f.count, err = r.rangeQuery(ctx, hq.Count); err != nil {
			return nil, err
		}
		if f.sumInc, err = r.rangeQuery(ctx, hq.SumIncrease); err != nil {
			return nil, err
		}
		if f.cntInc, err = r.rangeQuery(ctx, hq.CountIncrease); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// nonFiniteIn reports whether any fetched histogram result holds NaN or ±Inf.
func nonFiniteIn(fs []histFetch) bool {
	for _, f := range fs {
		for _, m := range []model.Matrix{f.inc, f.rates, f.sum, f.count, f.sumInc, f.cntInc} {
			if hasNonFinite(m) {
				return true
			}
		}
	}
	return false
}

// hasNonFinite reports whether any sample of m is NaN or ±Inf.
func hasNonFinite(m model.Matrix) bool {
	for _, s := range m {
		for _, p := range s.Values {
			if v := float64(p.Value); math.IsNaN(v) || math.IsInf(v, 0) {
				return true
			}
		}
	}
	return false
}

// decreaseIn reports whether fetched histogram results show a series that decreased: a
// _count reset, a negative bucket increase, or a bucket whose increase is below that of a
// lower bucket of the same group at the same step (cumulative buckets cannot do that).
func decreaseIn(fs []histFetch) bool {
	for _, f := range fs {
		if anyAbove(f.resets, 0) {
			return true
		}
		type point struct{ le, v float64 }
		per := map[string]map[model.Time][]point{}
		for _, s := range f.inc {
			le, err := hist.ParseLe(string(s.Metric[model.BucketLabel]))
			if err != nil {
				continue
			}
			k, _ := analysis.Key(s.Metric, model.BucketLabel)
			if per[k] == nil {
				per[k] = map[model.Time][]point{}
			}
			for _, p := range s.Values {
				if p.Value < 0 {
					return true
				}
				per[k][p.Timestamp] = append(per[k][p.Timestamp], point{le, float64(p.Value)})
			}
		}
		for _, steps := range per {
			for _, ps := range steps {
				slices.SortFunc(ps, func(a, b point) int { return cmp.Compare(a.le, b.le) })
				for i := 1; i < len(ps); i++ {
					if ps[i].v < ps[i-1].v*(1-sanity.HistogramTolerance)-1e-9 {
						return true
					}
				}
			}
		}
	}
	return false
}

// anyAbove reports whether any sample of m is above v.
func anyAbove(m model.Matrix, v float64) bool {
	for _, s := range m {
		for _, p := range s.Values {
			if float64(p.Value) > v {
				return true
			}
		}
	}
	return false
}

func needMeanStat(stats []latency.Stat) bool {
	return slices.ContainsFunc(stats, func(s latency.Stat) bool { return s.IsMean() })
}

func onlyMean(stats []latency.Stat) bool {
	return !slices.ContainsFunc(stats, func(s latency.Stat) bool { return !s.IsMean() })
}

// maxStats caps the statistics of one latency query.
const maxStats = 20

// breakdownSignals are the histograms whose means make up the breakdown.
var breakdownSignals = []catalog.Signal{catalog.QueueTime, catalog.PrefillTime, catalog.DecodeTime, catalog.InferenceTime, catalog.E2E}

func (i *Instance) queryBreakdown(ctx context.Context, p *plan) (data.Frames, error) {
	// Every part of a row must average the same requests: unless grouped
	// by target, series keep their target (job) so latency.BreakdownBy sums
	// each group over the targets that have every part.
	split := ""
	if !slices.Contains(p.scope.By, "target") {
		split = "job"
		p.scope.By = append(slices.Clone(p.scope.By), "target")
	}
	r := i.newRun(p)
	r.scopeNotices(ctx, breakdownSignals)
	if err := r.idleNotices(ctx, breakdownSignals); err != nil {
		return nil, err
	}
	if err := r.changeNotices(ctx); err != nil {
		return nil, err
	}
	r.notes.Add(analysis.Info, "breakdown shows mean time per stage (rate of _sum over rate of _count); quantiles do not add, see the latency query for tails. overhead = E2E − queue − inference: frontend time in vLLM V1, zero by identity in V0")
	switch p.Format {
	case "", "timeseries":
		in := map[catalog.Signal]latency.MeanInput{}
		for _, s := range breakdownSignals {
			hq, err := catalog.HistogramPromQL(s, p.scope, p.window)
			if err != nil {
				return nil, err
			}
			mi := latency.MeanInput{Scale: 1}
			if mi.Sum, err = r.rangeQuery(ctx, hq.Sum); err != nil {
				return nil, err
			}
			if mi.Count, err = r.rangeQuery(ctx, hq.Count); err != nil {
				return nil, err
			}
			in[s] = mi
		}
		series := latency.BreakdownBy(in, r.steps, split, &r.notes)
		return frames.TimeSeries(series, r.meta()), nil
	case "table":
		// The table covers the whole selected range, evaluated at its real
		// end (not the step-aligned one, which can leave out the last step).
		window := p.to.Sub(p.from)
		if window < p.window {
			window = p.window
		}
		in := map[catalog.Signal]latency.InstantMean{}
		for _, s := range breakdownSignals {
			hq, err := catalog.HistogramPromQL(s, p.scope, window)
			if err != nil {
				return nil, err
			}
			im := latency.InstantMean{Scale: 1}
			if im.Sum, err = r.instantQuery(ctx, hq.Sum, p.to); err != nil {
				return nil, err
			}
			if im.Count, err = r.instantQuery(ctx, hq.Count, p.to); err != nil {
				return nil, err
			}
			in[s] = im
		}
		rows := latency.BreakdownTableBy(in, window, split, &r.notes)
		return frames.BreakdownTable(rows, r.meta()), nil
	}
	return nil, badQueryf("format: %q is neither timeseries nor table", p.Format)
}

func (i *Instance) queryThroughput(ctx context.Context, p *plan) (data.Frames, error) {
	r := i.newRun(p)
	r.scopeNotices(ctx, []catalog.Signal{catalog.RequestsFinished, catalog.PromptTokens, catalog.GenerationTokens})
	if err := r.idleNotices(ctx, []catalog.Signal{catalog.RequestsFinished}); err != nil {
		return nil, err
	}
	if err := r.changeNotices(ctx); err != nil {
		return nil, err
	}
	var in throughput.Input
	// A counter that went backwards without a restart is left out of the windows that hold
	// it; NaN and ±Inf samples are named and left out where they reach the rate.
	for _, c := range []struct {
		s     catalog.Signal
		dst   *model.Matrix
		extra []string
	}{{catalog.RequestsFinished, &in.Finished, []string{"finished_reason"}}, {catalog.PromptTokens, &in.PromptTokens, nil}, {catalog.GenerationTokens, &in.GenerationTokens, nil}} {
		m, sc, err := r.counterRate(ctx, c.s, p.scope, p.window, c.extra...)
		if err != nil {
			return nil, err
		}
		*c.dst = m
		if err := r.leaveOutBackwards(ctx, c.s, sc, p.window, m, c.extra...); err != nil {
			r.skipped("the check for "+string(c.s)+" counters going backwards", err)
		}
	}
	return frames.TimeSeries(throughput.Compute(in, r.steps), r.meta()), nil
}

func (i *Instance) querySaturation(ctx context.Context, p *plan) (data.Frames, error) {
	r := i.newRun(p)
	r.scopeNotices(ctx, []catalog.Signal{catalog.RequestsRunning, catalog.RequestsWaiting, catalog.KVCacheUsage, catalog.Preemptions, catalog.PrefixCacheHits})
	if err := r.changeNotices(ctx); err != nil {
		return nil, err
	}
	var in saturation.Input
	steps := []struct {
		dst  *model.Matrix
		expr func() (string, error)
	}{
		{&in.Running, func() (string, error) { return catalog.GaugePromQL(catalog.RequestsRunning, p.scope, "sum") }},
		{&in.Waiting, func() (string, error) { return catalog.GaugePromQL(catalog.RequestsWaiting, p.scope, "sum") }},
		// A usage ratio is averaged across engines and targets, never summed
		// (catalog.PartitionAgg); replicas and process splits count once.
		{&in.KVUsage, func() (string, error) { return catalog.GaugePromQL(catalog.KVCacheUsage, p.scope, "avg") }},
	}
	for _, s := range steps {
		q, err := s.expr()
		if err != nil {
			return nil, err
		}
		if *s.dst, err = r.rangeQuery(ctx, q); err != nil {
			return nil, err
		}
	}
	// A counter that went backwards without a restart is left out of the windows that hold
	// it; NaN and ±Inf samples are named and left out where they reach the rate.
	for _, c := range []struct {
		s   catalog.Signal
		dst *model.Matrix
	}{{catalog.Preemptions, &in.Preemptions}, {catalog.PrefixCacheHits, &in.PrefixHits}, {catalog.PrefixCacheQueries, &in.PrefixQueries}} {
		m, sc, err := r.counterRate(ctx, c.s, p.scope, p.window)
		if err != nil {
			return nil, err
		}
		*c.dst = m
		if err := r.leaveOutBackwards(ctx, c.s, sc, p.window, m); err != nil {
			r.skipped("the check for "+string(c.s)+" counters going backwards", err)
		}
	}
	if err := r.prefixHitRateGauge(ctx, &in); err != nil {
		return nil, err
	}
	if err := r.impossibleNotices(ctx, []catalog.Signal{catalog.RequestsRunning, catalog.RequestsWaiting, catalog.KVCacheUsage}); err != nil {
		r.skipped("naming the gauge values that cannot be true", err)
	}
	if err := r.frozenNotices(ctx); err != nil {
		r.skipped("the frozen-gauge check", err)
	}
	return frames.TimeSeries(saturation.Compute(in, r.steps), r.meta()), nil
}

func (i *Instance) queryRaw(ctx context.Context, p *plan) (data.Frames, error) {
	sel, err := rawSelector(p, &i.settings)
	if err != nil {
		return nil, err
	}
	r := i.newRun(p)
	m, err := r.rangeQuery(ctx, sel)
	if err != nil {
		return nil, err
	}
	if len(m) == 0 {
		r.notes.Add(analysis.Info, fmt.Sprintf("no series named %s is stored for the selected targets in the queried range (the collector stores only the families the catalogue reads, other engine families without their _bucket samples, and process_start_time_seconds)", p.Metric))
	}
	return frames.TimeSeries(analysis.FromMatrix(m, r.steps, p.Metric, "", nil), r.meta()), nil
}
