package fetch

import (
	"context"
	"slices"
	"time"

	"github.com/prometheus/common/model"

	"github.com/inferscope/inferscope-llm-datasource/pkg/analysis"
	"github.com/inferscope/inferscope-llm-datasource/pkg/analysis/diagnose"
	"github.com/inferscope/inferscope-llm-datasource/pkg/catalog"
	"github.com/inferscope/inferscope-llm-datasource/pkg/settings"
)

// This file plans the diagnosis query's reads: one list of named range reads (gauges, counter
// rates, means, the stall window's `up` and progress rates, the prompt-length buckets, the
// running ceilings, the per-GPU signals of the targets' agents, the bucket rates of each
// latency stage the SLO anchor uses) run concurrently through the run's executor, for
// diagnose.Assemble.

// maxSubquerySteps bounds the points a diagnosis gauge subquery evaluates per window.
const maxSubquerySteps = 240

// DiagnosisReads is what the diagnosis query read for the targets in scope: the targets (none:
// nothing was read), their GPU agents (sorted), the latency stages of their SLO anchor's
// objectives (diagnose.ObjectiveStages), every named read's matrix (Got; the anchor's bucket
// rates named "objective:<stage>", and diagnose.TPOTGaps), each target's stored names, and
// the stall rule's window (diagnose.Settings.StallScrapes scrape intervals and a half).
type DiagnosisReads struct {
	Targets     []settings.Target
	Agents      []string
	Stages      []string
	Got         map[string]model.Matrix
	Stored      map[string]diagnose.Stored
	StallWindow time.Duration
}

// diagnosisRead is one named range read of the diagnosis query; expr builds its PromQL.
type diagnosisRead struct {
	name string
	expr func() (string, error)
	out  model.Matrix
}

// diagnosisPlan is what the diagnosis reads' PromQL is built from: the scope (the targets by
// target, the models), its plan (a gateway's copies of configured engines counted once), the
// stall window and the resolutions of the gauge subqueries.
type diagnosisPlan struct {
	r             *Run
	p             Plan
	sc            catalog.Scope
	names         []string
	stall         time.Duration
	res, subRes   string
	models        []string
	targets       []settings.Target
	agents        []string
	stages        []string
	anchorProfile string
}

// DiagnosisReads reads every signal the diagnosis rules use for the targets of the run's
// scope and the given models (empty: all), with the availability and optional-family notices;
// a scope without targets gets a warning and no read.
func (r *Run) DiagnosisReads(ctx context.Context, models []string) (DiagnosisReads, error) {
	env, p := r.Env, r.Plan
	p.Scope = r.ReExportScope(ctx, p.Scope) // a gateway's copies of configured engines count once
	targets := env.Targets(p.Scope.Targets)
	names := make([]string, 0, len(targets))
	for _, t := range targets {
		names = append(names, t.Name)
	}
	scrape := env.Settings.ScrapeInterval
	out := DiagnosisReads{StallWindow: time.Duration(env.Settings.Diagnosis.StallScrapes)*scrape + scrape/2}
	if len(targets) == 0 {
		r.Notes.Add(analysis.Warning, "no target is configured: add inference servers under Targets in the data source settings")
		return out, nil
	}
	r.ScopeNotices(ctx, []catalog.Signal{catalog.RequestsRunning, catalog.RequestsWaiting, catalog.KVCacheUsage,
		catalog.Preemptions, catalog.RequestsFinished, catalog.GenerationTokens, catalog.TTFT, catalog.E2E})
	d := &diagnosisPlan{r: r, p: p, names: names, stall: out.StallWindow, models: models, targets: targets,
		sc:  catalog.Scope{Targets: names, Models: models, By: []string{"target"}, User: p.Scope.User},
		res: model.Duration(scrape).String(), anchorProfile: env.Settings.Diagnosis.SLOProfile}
	// Gauges are smoothed over the rate window at scrape resolution (coarser for long windows,
	// at most maxSubquerySteps points per window, so a month-long window costs what a short
	// one does).
	d.subRes = d.res
	if per := p.Window / maxSubquerySteps; per > scrape {
		d.subRes = model.Duration(per.Truncate(time.Second)).String()
	}
	fs, err := d.reads(ctx)
	if err != nil {
		return out, err
	}
	if err := r.Parallel(len(fs), func(k int) error {
		q, err := fs[k].expr()
		if err != nil {
			return err
		}
		fs[k].out, err = r.Range(ctx, q)
		return err
	}); err != nil {
		return out, err
	}
	out.Targets, out.Agents, out.Stages = targets, d.agents, d.stages
	out.Got, out.Stored = map[string]model.Matrix{}, map[string]diagnose.Stored{}
	for _, f := range fs {
		out.Got[f.name] = f.out
	}
	for _, t := range targets {
		v := env.ViewOf(ctx, t.Name, r.NamesFrom(), p.End)
		out.Stored[t.Name] = diagnose.Stored{Names: v.Names, Det: v.Det, OK: v.OK}
	}
	return out, nil
}

// gauge is the PromQL of a gauge aggregated by target.
func (d *diagnosisPlan) gauge(s catalog.Signal, agg string) func() (string, error) {
	return func() (string, error) { return catalog.GaugePromQL(s, d.sc, agg) }
}

// rate is the PromQL of a counter's rate over w by target (and by).
func (d *diagnosisPlan) rate(s catalog.Signal, w time.Duration, by ...string) func() (string, error) {
	return func() (string, error) { return catalog.CounterRatePromQL(s, d.sc, w, by...) }
}

// over wraps a gauge query in <agg>_over_time over the rate window at the subquery resolution:
// instantaneous gauges are smoothed like the rates.
func (d *diagnosisPlan) over(agg string, inner func() (string, error)) func() (string, error) {
	return func() (string, error) {
		q, err := inner()
		if err != nil {
			return "", err
		}
		return catalog.OverTimePromQL(agg, q, d.p.Window, d.subRes), nil
	}
}

// fixed is a read whose PromQL is already built.
func fixed(q string) func() (string, error) { return func() (string, error) { return q, nil } }

// reads lists every read of the diagnosis query, in order.
func (d *diagnosisPlan) reads(ctx context.Context) ([]*diagnosisRead, error) {
	fs := d.engineReads()
	fs = append(fs, d.optionalReads(ctx)...)
	fs = append(fs, d.burstReads()...)
	ceilGauges, ceilInfo, err := catalog.RunningCeilingPromQL(d.names)
	if err != nil {
		return nil, err
	}
	fs = append(fs, &diagnosisRead{name: "ceiling_gauge", expr: fixed(ceilGauges)},
		&diagnosisRead{name: "ceiling_info", expr: fixed(ceilInfo)})
	for _, m := range diagnose.MeanSignals {
		fs = append(fs, &diagnosisRead{name: string(m.Signal), expr: func() (string, error) { return catalog.MeanPromQL(m.Catalog, d.sc, d.p.Window) }})
	}
	fs = append(fs, d.gpuReads()...)
	return append(fs, d.objectiveReads(ctx)...), nil
}

// engineReads are the reads every diagnosis makes: `up` over the stall window, the serving
// gauges (now, averaged and their highest value over the rate window), the waiting gauge's
// span, KV-cache usage, the counter rates over the rate window and the progress rates over the
// stall window.
func (d *diagnosisPlan) engineReads() []*diagnosisRead {
	w, stall := d.p.Window, d.stall
	return []*diagnosisRead{
		{name: "up", expr: fixed(catalog.UpMaxPromQL(d.names, stall))},
		{name: "up_min", expr: fixed(catalog.UpMinPromQL(d.names, stall))},
		{name: "running", expr: d.gauge(catalog.RequestsRunning, "sum")},
		{name: "waiting", expr: d.gauge(catalog.RequestsWaiting, "sum")},
		{name: "running_avg", expr: d.over("avg", d.gauge(catalog.RequestsRunning, "sum"))},
		{name: "waiting_avg", expr: d.over("avg", d.gauge(catalog.RequestsWaiting, "sum"))},
		{name: "waiting_span", expr: func() (string, error) {
			q, err := catalog.GaugePromQL(catalog.RequestsWaiting, d.sc, "sum")
			if err != nil {
				return "", err
			}
			return catalog.SpanPromQL(q, stall, d.res), nil
		}},
		{name: "kv", expr: d.over("max", d.gauge(catalog.KVCacheUsage, "avg"))},
		{name: "preemptions", expr: d.rate(catalog.Preemptions, w)},
		{name: "finished", expr: d.rate(catalog.RequestsFinished, w, "finished_reason")},
		{name: "prompt", expr: d.rate(catalog.PromptTokens, w)},
		{name: "generation", expr: d.rate(catalog.GenerationTokens, w)},
		{name: "progress_tokens", expr: d.rate(catalog.GenerationTokens, stall)},
		{name: "progress_finished", expr: d.rate(catalog.RequestsFinished, stall)},
		{name: "progress_steps", expr: func() (string, error) {
			hq, err := catalog.HistogramPromQL(catalog.IterationTokens, d.sc, stall)
			return hq.Count, err
		}},
	}
}

// optionalReads are vLLM's admission rejections (error_surge) and waiting by reason
// (queue_saturation leaves the deferred requests out), read only where a target in scope
// exports them (rejections carry no model label, so they are read over the targets whatever
// the models); the requests that got a first token (aborts without an abort counter); and
// llama.cpp's decode steps where a target exports them (activity while work is in flight: it
// counts tokens only at a request's first token and end, its decode steps on every step).
func (d *diagnosisPlan) optionalReads(ctx context.Context) []*diagnosisRead {
	var fs []*diagnosisRead
	for _, s := range d.r.OptionalNotices(ctx, []catalog.Signal{catalog.Rejections, catalog.RequestsWaitingByReason}) {
		switch s {
		case catalog.Rejections:
			noModels := d.sc
			noModels.Models = nil
			fs = append(fs, &diagnosisRead{name: "rejections", expr: func() (string, error) { return catalog.CounterRatePromQL(s, noModels, d.p.Window) }})
		case catalog.RequestsWaitingByReason:
			fs = append(fs, &diagnosisRead{name: "waiting_by_reason", expr: d.over("avg", func() (string, error) { return catalog.GaugePromQLBy(s, d.sc, "sum", "reason") })})
		}
	}
	fs = append(fs, &diagnosisRead{name: "first_tokens", expr: func() (string, error) {
		hq, err := catalog.HistogramPromQL(catalog.TTFT, d.sc, d.p.Window)
		return hq.Count, err
	}})
	if d.r.Exporting(ctx, catalog.DecodeSteps) {
		fs = append(fs, &diagnosisRead{name: "progress_decode", expr: d.rate(catalog.DecodeSteps, d.stall)},
			&diagnosisRead{name: "decode_steps", expr: d.rate(catalog.DecodeSteps, d.p.Window)})
	}
	return fs
}

// burstReads are the highest diagnose.BurstWindow mean of running and waiting inside the rate
// window when it spans four burst windows or more (a 30 s burst is diluted in a 5-minute
// mean), the highest scraped value of both inside the rate window (a burst shorter than the
// window, at 15 s steps too), and the prompt-length buckets.
func (d *diagnosisPlan) burstReads() []*diagnosisRead {
	var fs []*diagnosisRead
	if bw := diagnose.BurstWindow(d.r.Env.Settings.ScrapeInterval); d.p.Window >= 4*bw {
		peak := func(s catalog.Signal) func() (string, error) {
			return func() (string, error) {
				g, err := catalog.GaugePromQL(s, d.sc, "sum")
				if err != nil {
					return "", err
				}
				return catalog.OverTimePromQL("max", catalog.OverTimePromQL("avg", g, bw, d.res), d.p.Window, d.subRes), nil
			}
		}
		fs = append(fs, &diagnosisRead{name: "running_peak", expr: peak(catalog.RequestsRunning)},
			&diagnosisRead{name: "waiting_peak", expr: peak(catalog.RequestsWaiting)})
	}
	fs = append(fs, &diagnosisRead{name: "running_max", expr: d.over("max", d.gauge(catalog.RequestsRunning, "sum"))},
		&diagnosisRead{name: "waiting_max", expr: d.over("max", d.gauge(catalog.RequestsWaiting, "sum"))})
	return append(fs, &diagnosisRead{name: "prompt_buckets", expr: func() (string, error) {
		hq, err := catalog.HistogramPromQL(catalog.PromptLength, d.sc, d.p.Window)
		return hq.Buckets, err
	}})
}

// gpuReads are the per-GPU signals over the agents of the targets in scope (averaged over the
// rate window, but for clocks and power limits), and the throttle reasons; it records the
// agents (sorted).
func (d *diagnosisPlan) gpuReads() []*diagnosisRead {
	for _, t := range d.targets {
		if t.Agent != "" && !slices.Contains(d.agents, t.Agent) {
			d.agents = append(d.agents, t.Agent)
		}
	}
	slices.Sort(d.agents)
	if len(d.agents) == 0 {
		return nil
	}
	agents := d.agents
	var fs []*diagnosisRead
	for _, s := range diagnose.GPUSignals {
		q := func() (string, error) { return catalog.GPUPromQL(s, agents, "avg") }
		if s != catalog.SMClock && s != catalog.SMClockMax && s != catalog.PowerLimit && s != catalog.PowerLimitDefault {
			q = d.over("avg", q)
		}
		fs = append(fs, &diagnosisRead{name: "gpu:" + string(s), expr: q})
	}
	return append(fs, &diagnosisRead{name: "gpu:throttle", expr: func() (string, error) {
		return catalog.GPUPromQL(catalog.ThrottleReasons, agents, "max", catalog.AgentThrottleReasonLabel)
	}})
}

// objectiveReads are the SLO anchor's reads: the windowed bucket rates of each latency stage
// the targets' anchor objectives use (diagnose.ObjectiveStages), only the buckets around their
// thresholds; a TPOT objective on a target without a per-request TPOT histogram (vLLM before
// 0.11) is read from the gap histogram at its thresholds (diagnose.TPOTGaps). It records the
// stages.
func (d *diagnosisPlan) objectiveReads(ctx context.Context) []*diagnosisRead {
	d.stages = diagnose.ObjectiveStages(d.r.Env.Settings.Profiles, d.anchorProfile, d.names, d.models)
	stages := d.stages
	from, to := d.p.Start.Add(-d.p.Window), d.p.End
	var fs []*diagnosisRead
	for _, st := range stages {
		hq, err := catalog.HistogramPromQL(catalog.Signal(st), d.sc, d.p.Window)
		if err != nil {
			continue // no histogram for the stage: its objectives have no data (the SLO gate stays open)
		}
		q := hq.Buckets
		if les := d.objectiveLe(ctx, st, catalog.Signal(st), from, to); les != nil {
			q = catalog.WithLe(q, les)
		}
		fs = append(fs, &diagnosisRead{name: "objective:" + st, expr: fixed(q)})
	}
	if slices.Contains(stages, string(catalog.TPOT)) {
		if hq, err := catalog.HistogramPromQL(catalog.ITL, d.sc, d.p.Window); err == nil {
			q := hq.Buckets
			if les := d.objectiveLe(ctx, string(catalog.TPOT), catalog.ITL, from, to); les != nil {
				q = catalog.WithLe(q, les)
			}
			fs = append(fs, &diagnosisRead{name: "objective:" + diagnose.TPOTGaps, expr: fixed(q)})
		}
	}
	return fs
}

// objectiveLe returns the le values, as stored, that the anchor objectives of stage st need at
// their thresholds, read from the histogram of signal read (ThresholdLe of each threshold,
// united over targets and objectives, sorted), as the slo query reads them: the bound equal to
// a threshold or the two around it, and +Inf, give the same fractions as the whole layout (the
// interpolation reads only the bucket holding the threshold; a bucket outside one threshold's
// bracket, kept for another, changes nothing). nil, to read every bucket, when a layout is
// unknown.
func (d *diagnosisPlan) objectiveLe(ctx context.Context, st string, read catalog.Signal, from, to time.Time) []string {
	var out []string
	var done []float64
	for _, t := range d.names {
		for _, o := range diagnose.AnchorObjectives(d.r.Env.Settings.Profiles, d.anchorProfile, t, d.models) {
			if o.Signal != st || slices.Contains(done, o.Threshold) {
				continue
			}
			done = append(done, o.Threshold)
			les, ok := d.r.ThresholdLe(ctx, read, o.Threshold, from, to)
			if !ok {
				return nil
			}
			for _, s := range les {
				if !slices.Contains(out, s) {
					out = append(out, s)
				}
			}
		}
	}
	if len(out) == 0 {
		return nil
	}
	slices.Sort(out)
	return out
}
