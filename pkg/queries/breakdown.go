package queries

import (
	"context"
	"maps"
	"slices"

	"github.com/grafana/grafana-plugin-sdk-go/data"
	"github.com/prometheus/common/model"

	"github.com/inferscope/inferscope-llm-datasource/pkg/analysis"
	"github.com/inferscope/inferscope-llm-datasource/pkg/analysis/client"
	"github.com/inferscope/inferscope-llm-datasource/pkg/analysis/latency"
	"github.com/inferscope/inferscope-llm-datasource/pkg/catalog"
	"github.com/inferscope/inferscope-llm-datasource/pkg/fetch"
	"github.com/inferscope/inferscope-llm-datasource/pkg/frames"
	"github.com/inferscope/inferscope-llm-datasource/pkg/settings"
)

// Breakdown is the breakdown query: mean queue, prefill, decode and overhead per window, or
// (format table) over the whole range with E2E and the number of requests.
type Breakdown struct {
	Common
	// Format is timeseries (default) or table.
	Format string `json:"format,omitempty"`
}

var breakdownEnums = map[string][]string{"format": {"timeseries", "table"}}

// breakdownSignals are the histograms whose means make up the breakdown.
var breakdownSignals = []catalog.Signal{catalog.QueueTime, catalog.PrefillTime, catalog.DecodeTime, catalog.InferenceTime, catalog.E2E}

func (q *Breakdown) validate(*settings.Settings) error {
	if q.Format != "" && q.Format != "timeseries" && q.Format != "table" {
		return badQueryf("format: %q is neither timeseries nor table", q.Format)
	}
	return nil
}

// runBreakdown reads the means of the breakdown's histograms per window
// (breakdownSeries) or over the whole range (breakdownTable).
func runBreakdown(ctx context.Context, env *fetch.Env, p fetch.Plan, q *Breakdown) (data.Frames, error) {
	// Every part of a row must average the same requests: unless grouped
	// by target, series keep their target (job) so latency.BreakdownBy sums
	// each group over the targets that have every part.
	split := ""
	if !slices.Contains(p.Scope.By, "target") {
		split = "job"
		p.Scope.By = append(slices.Clone(p.Scope.By), "target")
	}
	r := fetch.NewRun(ctx, env, p)
	p.Scope = r.ReExportScope(ctx, p.Scope) // a gateway's copies of configured engines count once
	r.ScopeNotices(ctx, breakdownSignals)
	if err := r.IdleNotices(ctx, breakdownSignals); err != nil {
		return nil, err
	}
	if err := r.ChangeNotices(ctx); err != nil {
		return nil, err
	}
	breakdownScopeNotices(ctx, r)
	if q.Format == "table" {
		return breakdownTable(ctx, r, p, split)
	}
	return breakdownSeries(ctx, r, env, p, split)
}

// breakdownSeries is the time-series format: per window, the mean of each part
// (latency.BreakdownBy), then the rows outside the engine (outsideEngine) and of the
// gateway and network (gatewayShare).
func breakdownSeries(ctx context.Context, r *fetch.Run, env *fetch.Env, p fetch.Plan, split string) (data.Frames, error) {
	in := map[catalog.Signal]latency.MeanInput{}
	for _, s := range breakdownSignals {
		hq, err := catalog.HistogramPromQL(s, p.Scope, p.Window)
		if err != nil {
			return nil, err
		}
		mi := latency.MeanInput{Scale: 1}
		if mi.Sum, err = r.Range(ctx, hq.Sum); err != nil {
			return nil, err
		}
		if mi.Count, err = r.Range(ctx, hq.Count); err != nil {
			return nil, err
		}
		in[s] = mi
	}
	series := latency.BreakdownBy(in, r.Steps, split, &r.Notes)
	outside, err := outsideEngine(ctx, r, env, p, split == "")
	if err != nil {
		return nil, err
	}
	gateway, err := gatewayShare(ctx, r, env, p)
	if err != nil {
		return nil, err
	}
	series = append(series, outside...)
	return frames.TimeSeries(append(series, gateway...), meta(r, nil)), nil
}

// breakdownTable is the table format: the means over the whole selected range, evaluated
// at its real end (not the step-aligned one, which can leave out the last step), with E2E
// and the number of requests (latency.BreakdownTableBy).
func breakdownTable(ctx context.Context, r *fetch.Run, p fetch.Plan, split string) (data.Frames, error) {
	window := p.To.Sub(p.From)
	if window < p.Window {
		window = p.Window
	}
	in := map[catalog.Signal]latency.InstantMean{}
	for _, s := range breakdownSignals {
		hq, err := catalog.HistogramPromQL(s, p.Scope, window)
		if err != nil {
			return nil, err
		}
		im := latency.InstantMean{Scale: 1}
		if im.Sum, err = r.Instant(ctx, hq.Sum, p.To); err != nil {
			return nil, err
		}
		if im.Count, err = r.Instant(ctx, hq.Count, p.To); err != nil {
			return nil, err
		}
		in[s] = im
	}
	rows := latency.BreakdownTableBy(in, window, split, &r.Notes)
	if len(p.Gateways) > 0 {
		r.Notes.Add(analysis.Info, "gateway and network (the llm-d router's mean TTFT − the engines') is a row of the time-series format")
	}
	return frames.BreakdownTable(rows, meta(r, nil)), nil
}

// outsideEngine is the breakdown's "outside the engine" row, present only when
// the targets in scope have client-side probes (settings probes[]): per step,
// the probes' mean client TTFT minus the mean engine TTFT of the targets they
// exercise (rate(_sum)/rate(_count) of each over the window): the time spent in
// the API server, tokenizer, gateway and network before the first token. Per
// target when the breakdown is grouped by target, else over every probed
// target (client and engine means each over their own requests: the probe's
// few requests against all the engine's). Not shown when grouped by model.
func outsideEngine(ctx context.Context, r *fetch.Run, env *fetch.Env, p fetch.Plan, byTarget bool) ([]analysis.Series, error) {
	ps := probesOf(env, p)
	if len(ps.names) == 0 {
		return nil, nil
	}
	if slices.Contains(p.Scope.By, "model") || slices.Contains(p.Scope.By, "engine") {
		r.Notes.Add(analysis.Info, "outside the engine (client TTFT − engine TTFT) is shown per target or overall, not grouped by model or engine")
		return nil, nil
	}
	var targets []string
	for _, n := range ps.names {
		if !slices.Contains(targets, ps.target[n]) {
			targets = append(targets, ps.target[n])
		}
	}
	by := []string{"target"}
	ch := catalog.ProbeHistogramPromQL(catalog.ProbeTTFT, ps.names, p.Scope.Models, by, p.Window)
	eh, err := catalog.HistogramPromQL(catalog.TTFT, catalog.Scope{Targets: targets, Models: p.Scope.Models, By: by, Finite: p.Scope.Finite}, p.Window)
	if err != nil {
		return nil, err
	}
	var m [4]model.Matrix
	for k, q := range []string{ch.Sum, ch.Count, eh.Sum, eh.Count} {
		if m[k], err = r.Range(ctx, q); err != nil {
			return nil, err
		}
	}
	toOne := map[string]string{}
	if !byTarget {
		for _, n := range ps.names {
			toOne[n] = ""
		}
		for _, t := range targets {
			toOne[t] = ""
		}
	}
	clientMean := client.MeanByTarget(m[0], m[1], r.Steps, mergeMaps(ps.target, toOne))
	engineMean := client.MeanByTarget(m[2], m[3], r.Steps, toOne)
	r.Notes.Add(analysis.Info, "outside the engine = client-side probe TTFT − engine TTFT (means over the window): API server, tokenizer, gateway and network; the probe's own requests against all the engine's")
	var out []analysis.Series
	for _, t := range slices.Sorted(maps.Keys(clientMean)) {
		em, ok := engineMean[t]
		if !ok {
			continue
		}
		l := map[string]string{"stage": "outside_engine"}
		if byTarget {
			l["target"] = t
		}
		out = append(out, analysis.Series{Name: "outside the engine", Labels: l, Unit: "s", Times: r.Steps, Values: client.Outside(clientMean[t], em)})
	}
	return out, nil
}

// gatewayShare is the breakdown's "gateway and network" row, present only when the query's
// selection holds the llm-d router's endpoint picker (fetch.Plan.Gateways): per model and
// step, the router's mean TTFT minus the engines' mean TTFT of the same model, each
// rate(_sum)/rate(_count) over the window, summed over the routers and over the engines
// (the targets in scope that are not routers; every other configured target when the query
// names only routers). It is a difference of means of the same requests seen from two sides:
// the router's time (scheduling, flow-control queueing, body handling) and the network
// between router and engine, not a per-request time and not a difference of quantiles. The
// router's TTFT counts streamed requests only (streaming="true"), the engine's every request.
// A model only one side reports has no row.
func gatewayShare(ctx context.Context, r *fetch.Run, env *fetch.Env, p fetch.Plan) ([]analysis.Series, error) {
	if len(p.Gateways) == 0 {
		return nil, nil
	}
	var engines []string
	for _, t := range env.Targets(p.Scope.Targets) {
		if !slices.Contains(p.Gateways, t.Name) {
			engines = append(engines, t.Name)
		}
	}
	if len(engines) == 0 {
		for _, t := range env.Settings.Targets {
			if !slices.Contains(p.Gateways, t.Name) {
				engines = append(engines, t.Name)
			}
		}
	}
	if len(engines) == 0 {
		r.Notes.Add(analysis.Info, "gateway and network: no engine target beside the llm-d router to compare its TTFT with")
		return nil, nil
	}
	by := []string{"model"}
	gh, err := catalog.HistogramPromQL(catalog.TTFT, catalog.Scope{Targets: p.Gateways, Models: p.Scope.Models, By: by, Finite: p.Scope.Finite, Gateway: true}, p.Window)
	if err != nil {
		return nil, err
	}
	eh, err := catalog.HistogramPromQL(catalog.TTFT, catalog.Scope{Targets: engines, Models: p.Scope.Models, By: by, Finite: p.Scope.Finite, User: p.Scope.User}, p.Window)
	if err != nil {
		return nil, err
	}
	var m [4]model.Matrix
	for k, q := range []string{gh.Sum, gh.Count, eh.Sum, eh.Count} {
		if m[k], err = r.Range(ctx, q); err != nil {
			return nil, err
		}
	}
	gw := client.MeanBy(m[0], m[1], r.Steps, "model", nil)
	en := client.MeanBy(m[2], m[3], r.Steps, "model", nil)
	r.Notes.Add(analysis.Info, "gateway and network = the llm-d router's mean TTFT − the engines' mean TTFT, per model (rate of _sum over rate of _count of each over the window): a difference of means of the same requests seen from the gateway and from the engine, not a per-request time; the router counts streamed requests only")
	var out []analysis.Series
	for _, mdl := range slices.Sorted(maps.Keys(gw)) {
		e, ok := en[mdl]
		if !ok || mdl == "" {
			continue
		}
		out = append(out, analysis.Series{Name: "gateway and network", Labels: map[string]string{"stage": "gateway_network", "model": mdl},
			Unit: "s", Times: r.Steps, Values: client.Outside(gw[mdl], e)})
	}
	if len(out) == 0 {
		r.Notes.Add(analysis.Info, "gateway and network: no model has a TTFT both at the llm-d router and at an engine in the range")
	}
	return out, nil
}

// mergeMaps returns a's entries overridden by b's.
func mergeMaps(a, b map[string]string) map[string]string {
	out := maps.Clone(a)
	maps.Copy(out, b)
	return out
}

// breakdownScopeNotices says what the breakdown shows, speaking of vLLM's frontend overhead
// only where a vLLM target is in scope, and names each target that has no stage histogram at
// all (llama.cpp: only per-token processing seconds; Triton: cumulative counters), so an
// empty breakdown says why (issue 40 point 6).
func breakdownScopeNotices(ctx context.Context, r *fetch.Run) {
	msg := "breakdown shows mean time per stage (rate of _sum over rate of _count); quantiles do not add, see the latency query for tails"
	vllm := false
	for _, v := range r.Views(ctx) {
		if v.OK && v.Det.Engine == catalog.EngineVLLM {
			vllm = true
		}
	}
	if vllm {
		msg += ". overhead = E2E − queue − inference: frontend time in vLLM V1, zero by identity in V0"
	}
	r.Notes.Add(analysis.Info, msg)
	for _, v := range r.Views(ctx) {
		if !v.OK {
			continue
		}
		hist := false
		for _, s := range breakdownSignals {
			for _, m := range v.Assess(s).Metrics {
				if m.Kind == catalog.KindHistogram {
					hist = true
				}
			}
		}
		if !hist {
			r.Notes.Add(analysis.Info, "target "+v.Name+" ("+string(v.Det.Engine)+") has no breakdown: it exports no per-request stage histogram (queue, prefill, decode, inference, E2E); the latency query shows the means it has")
		}
	}
}
