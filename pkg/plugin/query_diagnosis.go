package plugin

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/data"
	"github.com/prometheus/common/model"

	"github.com/inferscope/inferscope-llm-datasource/pkg/analysis"
	"github.com/inferscope/inferscope-llm-datasource/pkg/analysis/diagnose"
	"github.com/inferscope/inferscope-llm-datasource/pkg/analysis/gpu"
	"github.com/inferscope/inferscope-llm-datasource/pkg/catalog"
	"github.com/inferscope/inferscope-llm-datasource/pkg/frames"
	"github.com/inferscope/inferscope-llm-datasource/pkg/hist"
	"github.com/inferscope/inferscope-llm-datasource/pkg/settings"
)

// QueryTypeDiagnosis names the bottleneck of each target (pkg/analysis/diagnose).
const QueryTypeDiagnosis = "diagnosis"

// Diagnosis formats (the query's `format` field).
const (
	diagnosisTable       = "table"       // current findings (default)
	diagnosisAnnotations = "annotations" // every finding in the range except healthy, annotation-shaped
	diagnosisTimeline    = "timeline"    // primary class over time per target (state timeline)
	diagnosisNumeric     = "numeric"     // one number per target and class, for alert rules
)

// catalogSignal maps the diagnosis inputs read from one catalogue signal.
var catalogSignal = map[diagnose.Signal]catalog.Signal{
	diagnose.Running: catalog.RequestsRunning, diagnose.Waiting: catalog.RequestsWaiting,
	diagnose.RunningAvg: catalog.RequestsRunning, diagnose.WaitingAvg: catalog.RequestsWaiting,
	diagnose.WaitingSpan: catalog.RequestsWaiting, diagnose.KVUsage: catalog.KVCacheUsage,
	diagnose.Preemptions: catalog.Preemptions, diagnose.Finished: catalog.RequestsFinished,
	diagnose.Aborted: catalog.RequestsFinished, diagnose.PromptTok: catalog.PromptTokens,
	diagnose.GenTok: catalog.GenerationTokens, diagnose.QueueMean: catalog.QueueTime,
	diagnose.PrefillMean: catalog.PrefillTime, diagnose.InferenceMean: catalog.InferenceTime,
	diagnose.E2EMean: catalog.E2E, diagnose.TTFTMean: catalog.TTFT, diagnose.ITLMean: catalog.ITL,
	diagnose.PromptP50: catalog.PromptLength, diagnose.PromptP99: catalog.PromptLength,
}

// diagMeans are the latency means the rules read.
var diagMeans = []struct {
	sig diagnose.Signal
	cat catalog.Signal
}{
	{diagnose.QueueMean, catalog.QueueTime}, {diagnose.PrefillMean, catalog.PrefillTime},
	{diagnose.InferenceMean, catalog.InferenceTime}, {diagnose.E2EMean, catalog.E2E},
	{diagnose.TTFTMean, catalog.TTFT}, {diagnose.ITLMean, catalog.ITL},
}

// maxSubquerySteps bounds the points a diagnosis gauge subquery evaluates
// per window.
const maxSubquerySteps = 240

// slowdownReasons are the throttle reasons that mean the GPU is slowed down
// by hardware, heat or a power brake (power_cap alone is normal under load).
var slowdownReasons = []string{"hw_slowdown", "sw_thermal", "hw_thermal", "hw_power_brake"}

// queryDiagnosis diagnoses each target in scope over the range with the
// same PromQL the latency, saturation, throughput and gpu queries run (the
// catalogue's gauge, counter-rate, mean and per-GPU builders, grouped by
// target), plus three short-window queries for the stall rule: progress
// counter rates and the lowest `up` over StallScrapes scrape intervals, and
// the span of the waiting gauge over the same window.
func (i *Instance) queryDiagnosis(ctx context.Context, p *plan) (data.Frames, error) {
	format := p.Format
	if format == "" {
		format = diagnosisTable
	}
	if !slices.Contains([]string{diagnosisTable, diagnosisAnnotations, diagnosisTimeline, diagnosisNumeric}, format) {
		return nil, badQueryf("format: %q is not one of table, annotations, timeline, numeric", p.Format)
	}
	for _, c := range p.Classes {
		if !slices.Contains(diagnose.Classes, diagnose.Class(c)) {
			return nil, badQueryf("classes: %q is not a diagnosis class (one of %s)", c, classList())
		}
	}
	in, r, err := i.diagnosisInput(ctx, p)
	if err != nil {
		return nil, err
	}
	res := diagnose.Diagnose(in, i.settings.Diagnosis)
	// A target with no engine data for the selection (a model it does not
	// serve, a typo in an alert rule) would read healthy from its `up`
	// series alone: it gets no alert series and a notice instead.
	noData := map[string]bool{}
	for _, t := range in.Targets {
		if !hasEngineData(t) {
			noData[t.Name] = true
			sel := ""
			if len(p.Models) > 0 {
				sel = " for models " + strings.Join(p.Models, ", ")
			}
			r.notes.Add(analysis.Warning, fmt.Sprintf("target %s: no engine data in the range%s, so nothing is diagnosed (no series, not healthy)", t.Name, sel))
		}
	}
	if len(p.Classes) > 0 {
		res = keepClasses(res, p.Classes)
	}
	switch format {
	case diagnosisTimeline:
		return frames.DiagnosisTimeline(res, r.meta()), nil
	case diagnosisNumeric:
		// Only the asked classes, and no series for targets without engine data.
		return keepNumeric(frames.DiagnosisNumeric(res, r.meta()), func(l data.Labels) bool {
			return !noData[l["target"]] && (len(p.Classes) == 0 || slices.Contains(p.Classes, l["class"]))
		}), nil
	case diagnosisAnnotations:
		return frames.DiagnosisFindings(res, false, r.meta()), nil
	}
	return frames.DiagnosisFindings(res, true, r.meta()), nil
}

// diagnosisInput fetches every signal of the targets in scope and places it
// on the step grid.
func (i *Instance) diagnosisInput(ctx context.Context, p *plan) (diagnose.Input, *run, error) {
	r := i.newRun(p)
	th := i.settings.Diagnosis
	targets := i.targetsInScope(p.Targets)
	names := make([]string, 0, len(targets))
	for _, t := range targets {
		names = append(names, t.Name)
	}
	stallWindow := time.Duration(th.StallScrapes)*i.settings.ScrapeInterval + i.settings.ScrapeInterval/2
	in := diagnose.Input{Steps: r.steps, StallWindow: stallWindow, Window: p.window}
	if len(targets) == 0 {
		r.notes.Add(analysis.Warning, "no target is configured: add inference servers under Targets in the data source settings")
		return in, r, nil
	}
	r.scopeNotices(ctx, []catalog.Signal{catalog.RequestsRunning, catalog.RequestsWaiting, catalog.KVCacheUsage,
		catalog.Preemptions, catalog.RequestsFinished, catalog.GenerationTokens, catalog.TTFT, catalog.E2E})
	sc := catalog.Scope{Targets: names, Models: p.Models, By: []string{"target"}}
	jobs := strconv.Quote(alternation(names))

	type fetch struct {
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
	sw := model.Duration(stallWindow).String()
	res := model.Duration(i.settings.ScrapeInterval).String()
	// over wraps a gauge query in <agg>_over_time over the rate window, at
	// scrape resolution (coarser for long windows, at most maxSubquerySteps
	// points per window, so a month-long window costs what a short one
	// does): instantaneous gauges are smoothed like the rates.
	subRes := res
	if per := p.window / maxSubquerySteps; per > i.settings.ScrapeInterval {
		subRes = model.Duration(per.Truncate(time.Second)).String()
	}
	over := func(agg string, inner func() (string, error)) func() (string, error) {
		return func() (string, error) {
			q, err := inner()
			if err != nil {
				return "", err
			}
			return agg + "_over_time((" + q + ")[" + model.Duration(p.window).String() + ":" + subRes + "])", nil
		}
	}
	fs := []*fetch{
		{name: "up", expr: func() (string, error) {
			return "max by (job) (max_over_time(up{job=~" + jobs + "}[" + sw + "]))", nil
		}},
		{name: "up_min", expr: func() (string, error) {
			return "min by (job) (min_over_time(up{job=~" + jobs + "}[" + sw + "]))", nil
		}},
		{name: "running", expr: gauge(catalog.RequestsRunning, "sum")},
		{name: "waiting", expr: gauge(catalog.RequestsWaiting, "sum")},
		{name: "running_avg", expr: over("avg", gauge(catalog.RequestsRunning, "sum"))},
		{name: "waiting_avg", expr: over("avg", gauge(catalog.RequestsWaiting, "sum"))},
		{name: "waiting_span", expr: func() (string, error) {
			w, err := catalog.GaugePromQL(catalog.RequestsWaiting, sc, "sum")
			if err != nil {
				return "", err
			}
			sub := "(" + w + ")[" + sw + ":" + res + "]"
			return "max_over_time(" + sub + ") - min_over_time(" + sub + ")", nil
		}},
		{name: "kv", expr: over("max", gauge(catalog.KVCacheUsage, "avg"))},
		{name: "preemptions", expr: rate(catalog.Preemptions, p.window)},
		{name: "finished", expr: rate(catalog.RequestsFinished, p.window, "finished_reason")},
		{name: "prompt", expr: rate(catalog.PromptTokens, p.window)},
		{name: "generation", expr: rate(catalog.GenerationTokens, p.window)},
		{name: "progress_tokens", expr: rate(catalog.GenerationTokens, stallWindow)},
		{name: "progress_finished", expr: rate(catalog.RequestsFinished, stallWindow)},
		{name: "progress_steps", expr: func() (string, error) {
			hq, err := catalog.HistogramPromQL(catalog.IterationTokens, sc, stallWindow)
			return hq.Count, err
		}},
	}
	fs = append(fs, &fetch{name: "prompt_buckets", expr: func() (string, error) {
		hq, err := catalog.HistogramPromQL(catalog.PromptLength, sc, p.window)
		return hq.Buckets, err
	}})
	ceilGauges, ceilInfo, err := catalog.RunningCeilingPromQL(names)
	if err != nil {
		return in, r, err
	}
	fs = append(fs, &fetch{name: "ceiling_gauge", expr: func() (string, error) { return ceilGauges, nil }},
		&fetch{name: "ceiling_info", expr: func() (string, error) { return ceilInfo, nil }})
	for _, m := range diagMeans {
		fs = append(fs, &fetch{name: string(m.sig), expr: func() (string, error) { return catalog.MeanPromQL(m.cat, sc, p.window) }})
	}
	// GPU signals over the agents of the targets in scope.
	var agents []string
	for _, t := range targets {
		if t.Agent != "" && !slices.Contains(agents, t.Agent) {
			agents = append(agents, t.Agent)
		}
	}
	slices.Sort(agents)
	gpuSigs := []catalog.Signal{catalog.SMActive, catalog.GREngineActive, catalog.DRAMActive, catalog.TensorActive,
		catalog.GPUUtil, catalog.SMClock, catalog.SMClockMax}
	if len(agents) > 0 {
		for _, s := range gpuSigs {
			q := func() (string, error) { return catalog.GPUPromQL(s, agents, "avg") }
			if s != catalog.SMClock && s != catalog.SMClockMax {
				q = over("avg", q)
			}
			fs = append(fs, &fetch{name: "gpu:" + string(s), expr: q})
		}
		fs = append(fs, &fetch{name: "gpu:throttle", expr: func() (string, error) {
			return catalog.GPUPromQL(catalog.ThrottleReasons, agents, "max", catalog.AgentThrottleReasonLabel)
		}})
	}
	if err := r.parallel(len(fs), func(k int) error {
		q, err := fs[k].expr()
		if err != nil {
			return err
		}
		fs[k].out, err = r.rangeQuery(ctx, q)
		return err
	}); err != nil {
		return in, r, err
	}
	got := map[string]model.Matrix{}
	for _, f := range fs {
		got[f.name] = f.out
	}

	byJob := func(m model.Matrix) map[string][]float64 {
		vals, labels := analysis.Align(m, r.steps)
		out := map[string][]float64{}
		for k, l := range labels {
			out[l["target"]] = vals[k]
		}
		return out
	}
	direct := map[diagnose.Signal]map[string][]float64{
		diagnose.Up: byJob(got["up"]), diagnose.UpMin: byJob(got["up_min"]),
		diagnose.Running: byJob(got["running"]), diagnose.Waiting: byJob(got["waiting"]),
		diagnose.RunningAvg: byJob(got["running_avg"]), diagnose.WaitingAvg: byJob(got["waiting_avg"]),
		diagnose.WaitingSpan: byJob(got["waiting_span"]), diagnose.KVUsage: byJob(got["kv"]),
		diagnose.Preemptions: byJob(got["preemptions"]), diagnose.PromptTok: byJob(got["prompt"]),
		diagnose.GenTok: byJob(got["generation"]),
	}
	for _, m := range diagMeans {
		direct[m.sig] = byJob(got[string(m.sig)])
	}
	direct[diagnose.PromptP50], direct[diagnose.PromptP99] = promptQuantiles(got["prompt_buckets"], r.steps)
	finished, aborted := finishedByReason(got["finished"], r.steps)
	direct[diagnose.Finished], direct[diagnose.Aborted] = finished, aborted
	progress := sumByJob(r.steps, byJob(got["progress_tokens"]), byJob(got["progress_finished"]), byJob(got["progress_steps"]))
	direct[diagnose.Progress] = progress

	perGPU := gpuByTarget(got, r.steps, targets, agents)
	ceilings := runningCeilings(got["ceiling_gauge"], got["ceiling_info"])
	for _, t := range targets {
		ti := diagnose.TargetInput{Name: t.Name, Values: map[diagnose.Signal][]float64{},
			Approximate: map[diagnose.Signal]string{}, Absent: map[diagnose.Signal]string{}}
		view := i.viewOf(ctx, t.Name, r.namesFrom(), p.end)
		det, detected := view.Det, view.OK
		if detected {
			ti.Engine, ti.Generation = string(det.Engine), det.Generation
		}
		for sig, m := range direct {
			if v, ok := m[t.Name]; ok {
				ti.Values[sig] = v
			}
			cs, ok := catalogSignal[sig]
			if !ok || !detected {
				continue
			}
			a := view.assess(cs)
			switch a.State {
			case catalog.StateApproximate:
				ti.Approximate[sig] = a.Note
			case catalog.StateAbsent:
				why := "not exported by " + string(det.Engine)
				if a.Note != "" {
					why += " (" + a.Note + ")"
				}
				ti.Absent[sig] = why
				delete(ti.Values, sig)
			case catalog.StateNotSeen:
				ti.Absent[sig] = "not seen in the queried range: none of " + strings.Join(a.LookedFor, ", ") + " is stored for it"
				delete(ti.Values, sig)
			}
		}
		if _, ok := ti.Values[diagnose.Aborted]; !ok {
			if _, fin := ti.Values[diagnose.Finished]; fin {
				ti.Absent[diagnose.Aborted] = "the finished-requests counter has no finished_reason label on this engine"
			}
		}
		if c, ok := ceilings[t.Name]; ok {
			ti.RunningCeiling, ti.CeilingSource = c.value, c.source
		} else if th.MaxNumSeqs > 0 {
			ti.RunningCeiling, ti.CeilingSource = th.MaxNumSeqs, "--max-num-seqs from the diagnosis.maxNumSeqs setting"
		}
		if t.Agent == "" {
			ti.NoGPU = "no GPU agent is configured for this target (targets[].agent in the data source settings)"
		} else {
			g := perGPU[t.Name]
			for s, v := range g.values {
				ti.Values[s] = v
			}
			for s, why := range g.absent {
				ti.Absent[s] = why
			}
			for s, note := range g.approx {
				ti.Approximate[s] = note
			}
			ti.SlowdownReasons = g.reasons
			ti.GPUs = g.gpus
		}
		in.Targets = append(in.Targets, ti)
	}
	return in, r, nil
}

// promptQuantiles computes, per job and step, the median and the 99th
// percentile of prompt tokens per request from the windowed bucket rates
// of the prompt-length histogram (Prometheus histogram_quantile
// semantics, hist.Quantile). A step whose window finished no request is NaN.
func promptQuantiles(m model.Matrix, steps []time.Time) (p50, p99 map[string][]float64) {
	p50, p99 = map[string][]float64{}, map[string][]float64{}
	vals, labels := analysis.Align(m, steps)
	type bucketSeries struct {
		le   float64
		vals []float64
	}
	byJob := map[string][]bucketSeries{}
	for k, l := range labels {
		le, err := hist.ParseLe(l["le"])
		if err != nil {
			continue
		}
		byJob[l["target"]] = append(byJob[l["target"]], bucketSeries{le, vals[k]})
	}
	for job, bs := range byJob {
		a, b := make([]float64, len(steps)), make([]float64, len(steps))
		for i := range steps {
			var buckets []hist.Bucket
			for _, s := range bs {
				if !math.IsNaN(s.vals[i]) {
					buckets = append(buckets, hist.Bucket{UpperBound: s.le, Count: s.vals[i]})
				}
			}
			slices.SortFunc(buckets, func(x, y hist.Bucket) int { return cmp.Compare(x.UpperBound, y.UpperBound) })
			a[i], b[i] = hist.Quantile(0.5, buckets).Value, hist.Quantile(0.99, buckets).Value
		}
		p50[job], p99[job] = a, b
	}
	return p50, p99
}

// ceiling is a target's exported running ceiling and where it was read.
type ceiling struct {
	value  float64
	source string
}

// runningCeilings reads each job's exported running ceiling over the range:
// the highest value of an engine's max-running gauge, else the highest
// max_num_seqs label of a config-info series (catalog.RunningCeilingPromQL).
// Values that are not positive whole numbers are ignored.
func runningCeilings(gauges, info model.Matrix) map[string]ceiling {
	out := map[string]ceiling{}
	for _, s := range info {
		job := string(s.Metric["job"])
		v, err := strconv.ParseFloat(string(s.Metric[catalog.MaxNumSeqsLabel]), 64)
		if err != nil || v <= 0 || v != math.Trunc(v) || math.IsInf(v, 0) || v <= out[job].value {
			continue
		}
		out[job] = ceiling{v, "max_num_seqs exported by the engine (" + catalog.MaxNumSeqsLabel + " label of a config-info gauge)"}
	}
	for _, s := range gauges {
		job := string(s.Metric["job"])
		best := 0.0
		for _, p := range s.Values {
			if v := float64(p.Value); v > best && v == math.Trunc(v) && !math.IsInf(v, 0) {
				best = v
			}
		}
		if best > 0 {
			out[job] = ceiling{best, "maximum running requests exported by the engine (" + strings.Join(catalog.MaxRunningGauges, " or ") + ")"}
		}
	}
	return out
}

// finishedByReason splits the finished-requests rate by finished_reason
// into the total and the aborted rate per job. A job whose series carry no
// finished_reason label has no aborted entry (the engine cannot tell).
func finishedByReason(m model.Matrix, steps []time.Time) (total, aborted map[string][]float64) {
	total, aborted = map[string][]float64{}, map[string][]float64{}
	nan := func() []float64 {
		v := make([]float64, len(steps))
		for k := range v {
			v[k] = math.NaN()
		}
		return v
	}
	vals, labels := analysis.Align(m, steps)
	for k, l := range labels {
		job := l["target"]
		if total[job] == nil {
			total[job] = nan()
		}
		addInto(total[job], vals[k])
		if reason, ok := l["finished_reason"]; ok {
			if aborted[job] == nil {
				aborted[job] = make([]float64, len(steps)) // reasons present: aborted is 0 unless counted
			}
			if reason == "abort" {
				for s, x := range vals[k] {
					if !math.IsNaN(x) {
						aborted[job][s] += x
					}
				}
			}
		}
	}
	// aborted has data only where total has.
	for job, a := range aborted {
		for s := range a {
			if math.IsNaN(total[job][s]) {
				a[s] = math.NaN()
			}
		}
	}
	return total, aborted
}

// addInto adds src into dst step by step; NaN + x = x, NaN + NaN = NaN.
func addInto(dst, src []float64) {
	for s, x := range src {
		if math.IsNaN(x) {
			continue
		}
		if math.IsNaN(dst[s]) {
			dst[s] = x
		} else {
			dst[s] += x
		}
	}
}

// sumByJob adds per-job series; a job present in none has no entry.
func sumByJob(steps []time.Time, parts ...map[string][]float64) map[string][]float64 {
	out := map[string][]float64{}
	for _, p := range parts {
		for job, v := range p {
			if out[job] == nil {
				out[job] = make([]float64, len(steps))
				for k := range out[job] {
					out[job][k] = math.NaN()
				}
			}
			addInto(out[job], v)
		}
	}
	return out
}

// targetGPU is one target's GPU signals: averaged activity over its GPUs,
// the lowest clock ratio, and slowdown state.
type targetGPU struct {
	values  map[diagnose.Signal][]float64
	absent  map[diagnose.Signal]string
	approx  map[diagnose.Signal]string
	reasons []string
	gpus    []diagnose.GPUInput // per GPU, by index
}

// gpuByTarget reduces the per-GPU results to each target's GPUs (the
// target's agent, restricted to targets[].gpus when set).
func gpuByTarget(got map[string]model.Matrix, steps []time.Time, targets []settings.Target, agents []string) map[string]targetGPU {
	out := map[string]targetGPU{}
	if len(agents) == 0 {
		return out
	}
	type aligned struct {
		vals   map[string][]float64
		labels map[string]map[string]string
	}
	al := map[catalog.Signal]aligned{}
	for _, s := range []catalog.Signal{catalog.SMActive, catalog.GREngineActive, catalog.DRAMActive, catalog.TensorActive,
		catalog.GPUUtil, catalog.SMClock, catalog.SMClockMax} {
		v, l := analysis.Align(got["gpu:"+string(s)], steps)
		al[s] = aligned{v, l}
	}
	var perReason, bitmask model.Matrix
	for _, s := range got["gpu:throttle"] {
		if _, ok := s.Metric[catalog.AgentThrottleReasonLabel]; ok {
			perReason = append(perReason, s)
		} else {
			bitmask = append(bitmask, s)
		}
	}
	states := gpu.ThrottleStates(perReason, bitmask, steps)
	for _, t := range targets {
		if t.Agent == "" {
			continue
		}
		keep := func(l map[string]string) bool {
			if l["target"] != t.Agent {
				return false
			}
			if len(t.GPUs) == 0 {
				return true
			}
			idx, err := strconv.Atoi(l["gpu"])
			return err == nil && slices.Contains(t.GPUs, idx)
		}
		tg := targetGPU{values: map[diagnose.Signal][]float64{}, absent: map[diagnose.Signal]string{}, approx: map[diagnose.Signal]string{}}
		// Per-GPU inputs, keyed by GPU index.
		byGPU := map[string]*diagnose.GPUInput{}
		gpuOf := func(l map[string]string) *diagnose.GPUInput {
			g := byGPU[l["gpu"]]
			if g == nil {
				g = &diagnose.GPUInput{GPURef: diagnose.GPURef{GPU: l["gpu"]}, Values: map[diagnose.Signal][]float64{}}
				byGPU[l["gpu"]] = g
			}
			if g.UUID == "" {
				g.UUID = l["uuid"]
			}
			return g
		}
		perGPU := func(d diagnose.Signal, s catalog.Signal) {
			a := al[s]
			for k, l := range a.labels {
				if keep(l) {
					if g := gpuOf(l); g.Values[d] == nil {
						g.Values[d] = a.vals[k]
					}
				}
			}
		}
		for _, p := range []struct {
			d diagnose.Signal
			c catalog.Signal
		}{{diagnose.SMActive, catalog.SMActive}, {diagnose.SMActive, catalog.GREngineActive}, {diagnose.DRAMActive, catalog.DRAMActive},
			{diagnose.TensorActive, catalog.TensorActive}, {diagnose.GPUUtil, catalog.GPUUtil}} {
			perGPU(p.d, p.c)
		}
		mean := func(s catalog.Signal) []float64 {
			a := al[s]
			var sum []float64
			var cnt []int
			for k, l := range a.labels {
				if !keep(l) {
					continue
				}
				if sum == nil {
					sum, cnt = make([]float64, len(steps)), make([]int, len(steps))
				}
				for i, x := range a.vals[k] {
					if !math.IsNaN(x) {
						sum[i] += x
						cnt[i]++
					}
				}
			}
			if sum == nil {
				return nil
			}
			for i := range sum {
				if cnt[i] == 0 {
					sum[i] = math.NaN()
				} else {
					sum[i] /= float64(cnt[i])
				}
			}
			return sum
		}
		agentNote := "not exported by GPU agent " + t.Agent
		if v := mean(catalog.SMActive); v != nil {
			tg.values[diagnose.SMActive] = v
		} else if v := mean(catalog.GREngineActive); v != nil {
			tg.values[diagnose.SMActive] = v
			tg.approx[diagnose.SMActive] = "graphics-engine active (DCGM_FI_PROF_GR_ENGINE_ACTIVE) stands in for SM active: it counts time the engine was busy, not the share of SMs at work"
		} else {
			tg.absent[diagnose.SMActive] = agentNote + " (SM activity needs NVML GPM on Hopper or newer, or DCGM profiling DCGM_FI_PROF_SM_ACTIVE)"
		}
		for _, p := range []struct {
			d diagnose.Signal
			c catalog.Signal
		}{{diagnose.DRAMActive, catalog.DRAMActive}, {diagnose.TensorActive, catalog.TensorActive}, {diagnose.GPUUtil, catalog.GPUUtil}} {
			if v := mean(p.c); v != nil {
				tg.values[p.d] = v
			} else {
				tg.absent[p.d] = agentNote
			}
		}
		// Lowest clock ratio across the target's GPUs.
		clk, mx := al[catalog.SMClock], al[catalog.SMClockMax]
		var ratio []float64
		for k, l := range clk.labels {
			m, ok := mx.vals[k]
			if !keep(l) || !ok {
				continue
			}
			if ratio == nil {
				ratio = make([]float64, len(steps))
				for i := range ratio {
					ratio[i] = math.NaN()
				}
			}
			own := make([]float64, len(steps))
			for i, c := range clk.vals[k] {
				own[i] = math.NaN()
				if math.IsNaN(c) || math.IsNaN(m[i]) || m[i] <= 0 {
					continue
				}
				own[i] = c / m[i]
				if x := c / m[i]; math.IsNaN(ratio[i]) || x < ratio[i] {
					ratio[i] = x
				}
			}
			gpuOf(l).Values[diagnose.ClockRatio] = own
		}
		if ratio != nil {
			tg.values[diagnose.ClockRatio] = ratio
		} else {
			tg.absent[diagnose.ClockRatio] = agentNote + " (SM clock and its maximum)"
		}
		// Slowdown: any slowdown reason on any of the target's GPUs.
		var slow []float64
		reasons := make([]string, len(steps))
		for _, st := range states {
			if !keep(st.Labels) {
				continue
			}
			if slow == nil {
				slow = make([]float64, len(steps))
				for i := range slow {
					slow[i] = math.NaN()
				}
			}
			g := gpuOf(st.Labels)
			own := make([]float64, len(steps))
			if g.SlowdownReasons == nil {
				g.SlowdownReasons = make([]string, len(steps))
			}
			for i, v := range st.Values {
				own[i] = math.NaN()
				if v == "" {
					continue
				}
				if math.IsNaN(slow[i]) {
					slow[i] = 0
				}
				own[i] = 0
				for _, rsn := range strings.Split(v, ", ") {
					if slices.Contains(slowdownReasons, rsn) {
						slow[i] = 1
						own[i] = 1
						if tag := rsn + " on gpu " + st.Labels["gpu"]; !strings.Contains(g.SlowdownReasons[i], tag) {
							g.SlowdownReasons[i] = strings.TrimPrefix(g.SlowdownReasons[i]+", "+tag, ", ")
						}
						tag := fmt.Sprintf("%s on gpu %s", rsn, st.Labels["gpu"])
						if reasons[i] == "" {
							reasons[i] = tag
						} else if !strings.Contains(reasons[i], tag) {
							reasons[i] += ", " + tag
						}
					}
				}
			}
			g.Values[diagnose.Slowdown] = own
		}
		if slow != nil {
			tg.values[diagnose.Slowdown] = slow
			tg.reasons = reasons
		} else {
			tg.absent[diagnose.Slowdown] = agentNote + " (throttle reasons)"
		}
		for _, idx := range slices.SortedFunc(maps.Keys(byGPU), compareGPUIndex) {
			tg.gpus = append(tg.gpus, *byGPU[idx])
		}
		out[t.Name] = tg
	}
	return out
}

// compareGPUIndex orders GPU indexes numerically ("2" before "10"), others as strings.
func compareGPUIndex(a, b string) int {
	x, errA := strconv.Atoi(a)
	y, errB := strconv.Atoi(b)
	if errA == nil && errB == nil {
		return x - y
	}
	return strings.Compare(a, b)
}

// classList renders diagnose.Classes for error messages.
func classList() string {
	out := make([]string, 0, len(diagnose.Classes))
	for _, c := range diagnose.Classes {
		out = append(out, string(c))
	}
	return strings.Join(out, ", ")
}

// keepClasses keeps only the findings of the given classes (the timeline's
// primary class is left as it is: it says what else held).
func keepClasses(res diagnose.Result, classes []string) diagnose.Result {
	out := diagnose.Result{Steps: res.Steps}
	for _, t := range res.Targets {
		var kept []diagnose.Finding
		for _, f := range t.Findings {
			if slices.Contains(classes, string(f.Class)) {
				kept = append(kept, f)
			}
		}
		t.Findings = kept
		out.Targets = append(out.Targets, t)
	}
	return out
}

// hasEngineData reports whether any engine signal (anything but the scrape
// health series and GPU readings) has a value at some step.
func hasEngineData(t diagnose.TargetInput) bool {
	for sig, vals := range t.Values {
		if sig == diagnose.Up || sig == diagnose.UpMin {
			continue
		}
		for _, v := range vals {
			if !math.IsNaN(v) {
				return true
			}
		}
	}
	return false
}

// keepNumeric keeps the numeric frames whose value field's labels pass
// keep; the notices of the first frame stay on the first frame returned (an
// empty frame carries them when nothing is kept).
func keepNumeric(fr data.Frames, keep func(data.Labels) bool) data.Frames {
	if len(fr) == 0 {
		return fr
	}
	var out data.Frames
	for _, f := range fr {
		if len(f.Fields) == 1 && keep(f.Fields[0].Labels) {
			out = append(out, f)
		}
	}
	if len(out) == 0 {
		empty := data.NewFrame("diagnosis")
		empty.Meta = fr[0].Meta
		return data.Frames{empty}
	}
	if out[0] != fr[0] {
		out[0].Meta.Notices = fr[0].Meta.Notices
	}
	return out
}
