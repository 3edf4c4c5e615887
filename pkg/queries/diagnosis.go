package queries

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/data"
	"github.com/prometheus/common/model"

	"github.com/inferscope/inferscope-llm-datasource/pkg/analysis"
	"github.com/inferscope/inferscope-llm-datasource/pkg/analysis/diagnose"
	"github.com/inferscope/inferscope-llm-datasource/pkg/catalog"
	"github.com/inferscope/inferscope-llm-datasource/pkg/fetch"
	"github.com/inferscope/inferscope-llm-datasource/pkg/frames"
	"github.com/inferscope/inferscope-llm-datasource/pkg/settings"
)

// Diagnosis is the diagnosis query: the bottleneck of each target with evidence.
type Diagnosis struct {
	Common
	// Format is table (default), annotations, timeline or numeric.
	Format string `json:"format,omitempty"`
	// Classes keeps only these classes' findings and numeric series (e.g. ["stalled"] for an
	// alert rule); empty: all.
	Classes []string `json:"classes,omitempty"`
}

func (q *Diagnosis) lists() []namedList { return []namedList{{"classes", &q.Classes}} }

var diagnosisEnums = map[string][]string{
	"format":  {diagnosisTable, diagnosisAnnotations, diagnosisTimeline, diagnosisNumeric},
	"classes": classNames(),
}

// Diagnosis formats (the query's `format` field).
const (
	diagnosisTable       = "table"       // current findings (default)
	diagnosisAnnotations = "annotations" // every finding in the range except healthy, annotation-shaped
	diagnosisTimeline    = "timeline"    // primary class over time per target (state timeline)
	diagnosisNumeric     = "numeric"     // one number per target and class, for alert rules
)

// runDiagnosis diagnoses each target in scope over the range with the
// same PromQL the latency, saturation, throughput and gpu queries run (the
// catalogue's gauge, counter-rate, mean and per-GPU builders, grouped by
// target), plus three short-window queries for the stall rule: progress
// counter rates and the lowest `up` over StallScrapes scrape intervals, and
// the span of the waiting gauge over the same window.
func runDiagnosis(ctx context.Context, env *fetch.Env, p fetch.Plan, q *Diagnosis) (data.Frames, error) {
	format := q.Format
	if format == "" {
		format = diagnosisTable
	}
	if !slices.Contains([]string{diagnosisTable, diagnosisAnnotations, diagnosisTimeline, diagnosisNumeric}, format) {
		return nil, badQueryf("format: %q is not one of table, annotations, timeline, numeric", q.Format)
	}
	for _, c := range q.Classes {
		if !slices.Contains(diagnose.Classes, diagnose.Class(c)) {
			return nil, badQueryf("classes: %q is not a diagnosis class (one of %s)", c, classList())
		}
	}
	// The reads and the rules are the same for every format and class list: the panels of one
	// refresh asking for the same models share them (the overview's tables and timeline).
	type diagnosed struct {
		in  diagnose.Input
		res diagnose.Result
	}
	r, v, err := fetch.SharedRun(ctx, env, p, "diagnosis\x00"+fmt.Sprintf("%q", q.Models), func(ctx context.Context, run *fetch.Run) (any, error) {
		in, err := diagnosisInputOn(ctx, run, q.Models)
		if err != nil {
			return nil, err
		}
		return diagnosed{in, diagnose.Diagnose(in, env.Settings.Diagnosis)}, nil
	})
	if err != nil {
		return nil, err
	}
	in, res := v.(diagnosed).in, ownResult(v.(diagnosed).res)
	// A target with no engine data for the selection (a model it does not
	// serve, a typo in an alert rule) would read healthy from its `up`
	// series alone: it gets no alert series and a notice instead.
	noData := map[string]bool{}
	for _, t := range in.Targets {
		if !diagnose.HasEngineData(t) {
			noData[t.Name] = true
			sel := ""
			if len(q.Models) > 0 {
				sel = " for models " + strings.Join(q.Models, ", ")
			}
			r.Notes.Add(analysis.Warning, fmt.Sprintf("target %s: no engine data in the range%s, so nothing is diagnosed (no series, not healthy)", t.Name, sel))
		}
	}
	if len(q.Classes) > 0 {
		res = diagnose.KeepClasses(res, q.Classes)
	}
	if format == diagnosisTable || format == diagnosisAnnotations {
		diagnosisTwinAdvice(ctx, env, r, &res)
	}
	switch format {
	case diagnosisTimeline:
		return frames.DiagnosisTimeline(res, meta(r, nil)), nil
	case diagnosisNumeric:
		// Only the asked classes, and no series for targets without engine data.
		return frames.DiagnosisNumeric(res, func(l data.Labels) bool {
			return !noData[l["target"]] && (len(q.Classes) == 0 || slices.Contains(q.Classes, l["class"]))
		}, meta(r, nil)), nil
	case diagnosisAnnotations:
		return frames.DiagnosisFindings(res, false, meta(r, nil)), nil
	}
	return frames.DiagnosisFindings(res, true, meta(r, nil)), nil
}

// DiagnosisInput fetches every signal of the targets in scope (p's targets, the given models)
// and places it on the step grid (diagnose.Assemble); the run holds the PromQL and notices.
func DiagnosisInput(ctx context.Context, env *fetch.Env, p fetch.Plan, models []string) (diagnose.Input, *fetch.Run, error) {
	r := fetch.NewRun(ctx, env, p)
	in, err := diagnosisInputOn(ctx, r, models)
	return in, r, err
}

// ownResult copies what the diagnosis query changes in a shared result (the findings, which
// the capacity twin's advice and the class filter edit), so callers never write to another
// panel's result.
func ownResult(shared diagnose.Result) diagnose.Result {
	out := diagnose.Result{Steps: shared.Steps, Targets: slices.Clone(shared.Targets)}
	for k := range out.Targets {
		out.Targets[k].Findings = slices.Clone(out.Targets[k].Findings)
	}
	return out
}

// diagnosisInputOn is DiagnosisInput on the run r (over its plan).
func diagnosisInputOn(ctx context.Context, r *fetch.Run, models []string) (diagnose.Input, error) {
	env, p := r.Env, r.Plan
	p.Scope = r.ReExportScope(ctx, p.Scope) // a gateway's copies of configured engines count once
	th := env.Settings.Diagnosis
	targets := env.Targets(p.Scope.Targets)
	names := make([]string, 0, len(targets))
	for _, t := range targets {
		names = append(names, t.Name)
	}
	stallWindow := time.Duration(th.StallScrapes)*env.Settings.ScrapeInterval + env.Settings.ScrapeInterval/2
	in := diagnose.Input{Steps: r.Steps, StallWindow: stallWindow, Window: p.Window, Scrape: env.Settings.ScrapeInterval}
	if len(targets) == 0 {
		r.Notes.Add(analysis.Warning, "no target is configured: add inference servers under Targets in the data source settings")
		return in, nil
	}
	r.ScopeNotices(ctx, []catalog.Signal{catalog.RequestsRunning, catalog.RequestsWaiting, catalog.KVCacheUsage,
		catalog.Preemptions, catalog.RequestsFinished, catalog.GenerationTokens, catalog.TTFT, catalog.E2E})
	sc := catalog.Scope{Targets: names, Models: models, By: []string{"target"}, User: p.Scope.User}

	type read struct {
		name string
		expr func() (string, error)
		out  model.Matrix
	}
	gauge := func(s catalog.Signal, agg string) func() (string, error) {
		return func() (string, error) { return catalog.GaugePromQL(s, sc, agg) }
	}
	rate := func(s catalog.Signal, w time.Duration, by ...string) func() (string, error) {
		return func() (string, error) { return catalog.CounterRatePromQL(s, sc, w, by...) }
	}
	res := model.Duration(env.Settings.ScrapeInterval).String()
	// over wraps a gauge query in <agg>_over_time over the rate window, at
	// scrape resolution (coarser for long windows, at most maxSubquerySteps
	// points per window, so a month-long window costs what a short one
	// does): instantaneous gauges are smoothed like the rates.
	subRes := res
	if per := p.Window / maxSubquerySteps; per > env.Settings.ScrapeInterval {
		subRes = model.Duration(per.Truncate(time.Second)).String()
	}
	over := func(agg string, inner func() (string, error)) func() (string, error) {
		return func() (string, error) {
			q, err := inner()
			if err != nil {
				return "", err
			}
			return catalog.OverTimePromQL(agg, q, p.Window, subRes), nil
		}
	}
	fs := []*read{
		{name: "up", expr: func() (string, error) { return catalog.UpMaxPromQL(names, stallWindow), nil }},
		{name: "up_min", expr: func() (string, error) { return catalog.UpMinPromQL(names, stallWindow), nil }},
		{name: "running", expr: gauge(catalog.RequestsRunning, "sum")},
		{name: "waiting", expr: gauge(catalog.RequestsWaiting, "sum")},
		{name: "running_avg", expr: over("avg", gauge(catalog.RequestsRunning, "sum"))},
		{name: "waiting_avg", expr: over("avg", gauge(catalog.RequestsWaiting, "sum"))},
		{name: "waiting_span", expr: func() (string, error) {
			w, err := catalog.GaugePromQL(catalog.RequestsWaiting, sc, "sum")
			if err != nil {
				return "", err
			}
			return catalog.SpanPromQL(w, stallWindow, res), nil
		}},
		{name: "kv", expr: over("max", gauge(catalog.KVCacheUsage, "avg"))},
		{name: "preemptions", expr: rate(catalog.Preemptions, p.Window)},
		{name: "finished", expr: rate(catalog.RequestsFinished, p.Window, "finished_reason")},
		{name: "prompt", expr: rate(catalog.PromptTokens, p.Window)},
		{name: "generation", expr: rate(catalog.GenerationTokens, p.Window)},
		{name: "progress_tokens", expr: rate(catalog.GenerationTokens, stallWindow)},
		{name: "progress_finished", expr: rate(catalog.RequestsFinished, stallWindow)},
		{name: "progress_steps", expr: func() (string, error) {
			hq, err := catalog.HistogramPromQL(catalog.IterationTokens, sc, stallWindow)
			return hq.Count, err
		}},
	}
	// vLLM's admission rejections (error_surge) and waiting by reason (queue_saturation leaves
	// the deferred requests out), read only where a target in scope exports them. Rejections
	// carry no model label, so they are read over the targets whatever the models.
	for _, s := range r.OptionalNotices(ctx, []catalog.Signal{catalog.Rejections, catalog.RequestsWaitingByReason}) {
		switch s {
		case catalog.Rejections:
			noModels := sc
			noModels.Models = nil
			fs = append(fs, &read{name: "rejections", expr: func() (string, error) { return catalog.CounterRatePromQL(s, noModels, p.Window) }})
		case catalog.RequestsWaitingByReason:
			fs = append(fs, &read{name: "waiting_by_reason", expr: over("avg", func() (string, error) { return catalog.GaugePromQLBy(s, sc, "sum", "reason") })})
		}
	}
	// Requests that got a first token (aborted ones included), against the finished ones: aborts
	// without an abort counter (issue 39).
	fs = append(fs, &read{name: "first_tokens", expr: func() (string, error) {
		hq, err := catalog.HistogramPromQL(catalog.TTFT, sc, p.Window)
		return hq.Count, err
	}})
	// Activity while work is in flight (issue 40): llama.cpp counts tokens only at a request's
	// first token and end, its decode steps on every step; read where a target exports them.
	if r.Exporting(ctx, catalog.DecodeSteps) {
		fs = append(fs, &read{name: "progress_decode", expr: rate(catalog.DecodeSteps, stallWindow)},
			&read{name: "decode_steps", expr: rate(catalog.DecodeSteps, p.Window)})
	}
	// Bursts: the highest BurstWindow mean of running and waiting inside
	// the rate window, when it spans four burst windows or more (a 30 s
	// burst is diluted in a 5-minute mean).
	if bw := diagnose.BurstWindow(env.Settings.ScrapeInterval); p.Window >= 4*bw {
		peak := func(s catalog.Signal) func() (string, error) {
			return func() (string, error) {
				g, err := catalog.GaugePromQL(s, sc, "sum")
				if err != nil {
					return "", err
				}
				return catalog.OverTimePromQL("max", catalog.OverTimePromQL("avg", g, bw, res), p.Window, subRes), nil
			}
		}
		fs = append(fs, &read{name: "running_peak", expr: peak(catalog.RequestsRunning)},
			&read{name: "waiting_peak", expr: peak(catalog.RequestsWaiting)})
	}
	// Issue 35: the highest scraped value of running and waiting inside the rate window, at
	// every window (a burst shorter than the window, at 15 s steps too).
	fs = append(fs, &read{name: "running_max", expr: over("max", gauge(catalog.RequestsRunning, "sum"))},
		&read{name: "waiting_max", expr: over("max", gauge(catalog.RequestsWaiting, "sum"))})
	fs = append(fs, &read{name: "prompt_buckets", expr: func() (string, error) {
		hq, err := catalog.HistogramPromQL(catalog.PromptLength, sc, p.Window)
		return hq.Buckets, err
	}})
	ceilGauges, ceilInfo, err := catalog.RunningCeilingPromQL(names)
	if err != nil {
		return in, err
	}
	fs = append(fs, &read{name: "ceiling_gauge", expr: func() (string, error) { return ceilGauges, nil }},
		&read{name: "ceiling_info", expr: func() (string, error) { return ceilInfo, nil }})
	for _, m := range diagnose.MeanSignals {
		fs = append(fs, &read{name: string(m.Signal), expr: func() (string, error) { return catalog.MeanPromQL(m.Catalog, sc, p.Window) }})
	}
	// GPU signals over the agents of the targets in scope.
	var agents []string
	for _, t := range targets {
		if t.Agent != "" && !slices.Contains(agents, t.Agent) {
			agents = append(agents, t.Agent)
		}
	}
	slices.Sort(agents)
	if len(agents) > 0 {
		for _, s := range diagnose.GPUSignals {
			q := func() (string, error) { return catalog.GPUPromQL(s, agents, "avg") }
			if s != catalog.SMClock && s != catalog.SMClockMax && s != catalog.PowerLimit && s != catalog.PowerLimitDefault {
				q = over("avg", q)
			}
			fs = append(fs, &read{name: "gpu:" + string(s), expr: q})
		}
		fs = append(fs, &read{name: "gpu:throttle", expr: func() (string, error) {
			return catalog.GPUPromQL(catalog.ThrottleReasons, agents, "max", catalog.AgentThrottleReasonLabel)
		}})
	}
	// SLO anchor: the windowed bucket rates of each latency stage the
	// targets' anchor objectives use (diagnose.ObjectiveStages).
	stages := diagnose.ObjectiveStages(env.Settings.Profiles, th.SLOProfile, names, models)
	for _, st := range stages {
		hq, err := catalog.HistogramPromQL(catalog.Signal(st), sc, p.Window)
		if err != nil {
			continue // no histogram for the stage: its objectives have no data (the SLO gate stays open)
		}
		q := hq.Buckets
		if les := objectiveLes(ctx, r, env.Settings.Profiles, th.SLOProfile, names, models, st, p.Start.Add(-p.Window), p.End); les != nil {
			q = catalog.WithLe(q, les)
		}
		fs = append(fs, &read{name: "objective:" + st, expr: func() (string, error) { return q, nil }})
	}
	// A TPOT objective on a target without a per-request TPOT histogram
	// (vLLM before 0.11) is read from the gap histogram at its thresholds
	// (diagnose.TPOTGaps).
	if slices.Contains(stages, string(catalog.TPOT)) {
		if hq, err := catalog.HistogramPromQL(catalog.ITL, sc, p.Window); err == nil {
			q := hq.Buckets
			if les := objectiveLesOn(ctx, r, env.Settings.Profiles, th.SLOProfile, names, models, string(catalog.TPOT), catalog.ITL, p.Start.Add(-p.Window), p.End); les != nil {
				q = catalog.WithLe(q, les)
			}
			fs = append(fs, &read{name: "objective:" + diagnose.TPOTGaps, expr: func() (string, error) { return q, nil }})
		}
	}
	if err := r.Parallel(len(fs), func(k int) error {
		q, err := fs[k].expr()
		if err != nil {
			return err
		}
		fs[k].out, err = r.Range(ctx, q)
		return err
	}); err != nil {
		return in, err
	}
	got := map[string]model.Matrix{}
	for _, f := range fs {
		got[f.name] = f.out
	}
	stored := map[string]diagnose.Stored{}
	for _, t := range targets {
		v := env.ViewOf(ctx, t.Name, r.NamesFrom(), p.End)
		stored[t.Name] = diagnose.Stored{Names: v.Names, Det: v.Det, OK: v.OK}
	}
	in = diagnose.Assemble(in, got, targets, agents, stored, th)
	buckets := map[string]model.Matrix{}
	for _, st := range stages {
		buckets[st] = got["objective:"+st]
	}
	if m, ok := got["objective:"+diagnose.TPOTGaps]; ok {
		buckets[diagnose.TPOTGaps] = m
	}
	diagnose.AttachObjectives(&in, env.Settings.Profiles, th.SLOProfile, models, buckets)
	return in, nil
}

// objectiveLes returns the le values, as stored, that the anchor objectives of stage st need
// at their thresholds (fetch.Run.ThresholdLe of each threshold, united over targets and
// objectives), as the slo query reads them: the bound equal to a threshold or the two around
// it, and +Inf, give the same fractions as the whole layout (the interpolation reads only the
// bucket holding the threshold; a bucket outside one threshold's bracket, kept for another,
// changes nothing). nil, to read every bucket, when a layout is unknown.
func objectiveLes(ctx context.Context, r *fetch.Run, profiles []settings.Profile, profile string, targets, models []string, st string, from, to time.Time) []string {
	return objectiveLesOn(ctx, r, profiles, profile, targets, models, st, catalog.Signal(st), from, to)
}

// objectiveLesOn is objectiveLes for the objectives of stage st read from the histogram of
// signal read (the gap histogram for TPOT objectives without a per-request TPOT histogram).
func objectiveLesOn(ctx context.Context, r *fetch.Run, profiles []settings.Profile, profile string, targets, models []string, st string, read catalog.Signal, from, to time.Time) []string {
	var out []string
	var done []float64
	for _, t := range targets {
		for _, o := range diagnose.AnchorObjectives(profiles, profile, t, models) {
			if o.Signal != st || slices.Contains(done, o.Threshold) {
				continue
			}
			done = append(done, o.Threshold)
			les, ok := r.ThresholdLe(ctx, read, o.Threshold, from, to)
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

// classNames returns diagnose.Classes as strings.
func classNames() []string {
	out := make([]string, 0, len(diagnose.Classes))
	for _, c := range diagnose.Classes {
		out = append(out, string(c))
	}
	return out
}

// classList renders diagnose.Classes for error messages.
func classList() string {
	out := make([]string, 0, len(diagnose.Classes))
	for _, c := range diagnose.Classes {
		out = append(out, string(c))
	}
	return strings.Join(out, ", ")
}

// maxSubquerySteps bounds the points a diagnosis gauge subquery evaluates
// per window.
const maxSubquerySteps = 240
