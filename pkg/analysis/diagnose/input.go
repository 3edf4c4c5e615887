package diagnose

import (
	"cmp"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/common/model"

	"github.com/inferscope/inferscope-llm-datasource/pkg/analysis"
	"github.com/inferscope/inferscope-llm-datasource/pkg/analysis/gpu"
	"github.com/inferscope/inferscope-llm-datasource/pkg/catalog"
	"github.com/inferscope/inferscope-llm-datasource/pkg/hist"
	"github.com/inferscope/inferscope-llm-datasource/pkg/settings"
)

// This file assembles the Input of Diagnose from the read layer's results: per-target series
// on the step grid from the catalogue queries' matrices (grouped by target), the per-GPU
// signals of each target's agent, the exported running ceiling, and what is approximate or
// absent per signal (catalog.Assess over the names stored for the target).

// catalogSignal maps the diagnosis inputs read from one catalogue signal.
var catalogSignal = map[Signal]catalog.Signal{
	Running: catalog.RequestsRunning, Waiting: catalog.RequestsWaiting,
	RunningAvg: catalog.RequestsRunning, WaitingAvg: catalog.RequestsWaiting,
	RunningPeak: catalog.RequestsRunning, WaitingPeak: catalog.RequestsWaiting,
	WaitingSpan: catalog.RequestsWaiting, KVUsage: catalog.KVCacheUsage,
	Preemptions: catalog.Preemptions, Finished: catalog.RequestsFinished,
	Aborted: catalog.RequestsFinished, PromptTok: catalog.PromptTokens,
	GenTok: catalog.GenerationTokens, QueueMean: catalog.QueueTime,
	PrefillMean: catalog.PrefillTime, InferenceMean: catalog.InferenceTime,
	E2EMean: catalog.E2E, TTFTMean: catalog.TTFT, ITLMean: catalog.ITL,
	PromptP50: catalog.PromptLength, PromptP99: catalog.PromptLength,
	Rejected: catalog.Rejections, WaitingDeferred: catalog.RequestsWaitingByReason,
	DecodeSteps: catalog.DecodeSteps, FirstTokens: catalog.TTFT,
	RunningMax: catalog.RequestsRunning, WaitingMax: catalog.RequestsWaiting, TokensPerStep: catalog.IterationTokens,
}

// MeanSignal pairs a latency mean the rules read with the catalogue signal it is read from
// (catalog.MeanPromQL).
type MeanSignal struct {
	Signal  Signal
	Catalog catalog.Signal
}

// MeanSignals are the latency means the rules read; the read layer fetches each under the
// name string(Signal).
var MeanSignals = []MeanSignal{
	{QueueMean, catalog.QueueTime}, {PrefillMean, catalog.PrefillTime},
	{InferenceMean, catalog.InferenceTime}, {E2EMean, catalog.E2E},
	{TTFTMean, catalog.TTFT}, {ITLMean, catalog.ITL}, {TokensPerStep, catalog.IterationTokens},
}

// sumByJob adds per-job series; a job present in none has no entry.
func sumByJob(steps []time.Time, parts ...map[string][]float64) map[string][]float64 {
	out := map[string][]float64{}
	for _, p := range parts {
		for job, v := range p {
			if out[job] == nil {
				out[job] = analysis.NaNs(len(steps))
			}
			addInto(out[job], v)
		}
	}
	return out
}

// targetGPU is one target's GPU signals: averaged activity over its GPUs,
// the lowest clock ratio, and slowdown state.
type targetGPU struct {
	values  map[Signal][]float64
	absent  map[Signal]string
	approx  map[Signal]string
	reasons []string
	gpus    []GPUInput // per GPU, by index
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
	for _, s := range GPUSignals {
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
		keep := func(l map[string]string) bool { return t.UsesGPU(l["target"], l["gpu"]) }
		tg := targetGPU{values: map[Signal][]float64{}, absent: map[Signal]string{}, approx: map[Signal]string{}}
		// Per-GPU inputs, keyed by GPU index.
		byGPU := map[string]*GPUInput{}
		gpuOf := func(l map[string]string) *GPUInput {
			g := byGPU[l["gpu"]]
			if g == nil {
				g = &GPUInput{GPURef: GPURef{GPU: l["gpu"]}, Values: map[Signal][]float64{}}
				byGPU[l["gpu"]] = g
			}
			if g.UUID == "" {
				g.UUID = l["uuid"]
			}
			return g
		}
		perGPU := func(d Signal, s catalog.Signal) {
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
			d Signal
			c catalog.Signal
		}{{SMActive, catalog.SMActive}, {SMActive, catalog.GREngineActive}, {DRAMActive, catalog.DRAMActive},
			{TensorActive, catalog.TensorActive}, {GPUUtil, catalog.GPUUtil}} {
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
			tg.values[SMActive] = v
		} else if v := mean(catalog.GREngineActive); v != nil {
			tg.values[SMActive] = v
			tg.approx[SMActive] = "graphics-engine active (DCGM_FI_PROF_GR_ENGINE_ACTIVE) stands in for SM active: it counts time the engine was busy, not the share of SMs at work"
		} else {
			tg.absent[SMActive] = agentNote + " (SM activity needs NVML GPM on Hopper or newer, or DCGM profiling DCGM_FI_PROF_SM_ACTIVE)"
		}
		for _, p := range []struct {
			d Signal
			c catalog.Signal
		}{{DRAMActive, catalog.DRAMActive}, {TensorActive, catalog.TensorActive}, {GPUUtil, catalog.GPUUtil}} {
			if v := mean(p.c); v != nil {
				tg.values[p.d] = v
			} else {
				tg.absent[p.d] = agentNote
			}
		}
		// lowestRatio sets each kept GPU's d to num over den (NaN where
		// either is missing or den ≤ 0) and returns the lowest of those
		// ratios across the target's GPUs at each step (nil: no GPU has both).
		lowestRatio := func(d Signal, num, den catalog.Signal) []float64 {
			n, dn := al[num], al[den]
			var low []float64
			for k, l := range n.labels {
				dv, ok := dn.vals[k]
				if !keep(l) || !ok {
					continue
				}
				if low == nil {
					low = analysis.NaNs(len(steps))
				}
				own := analysis.NaNs(len(steps))
				for i, x := range n.vals[k] {
					if math.IsNaN(x) || math.IsNaN(dv[i]) || dv[i] <= 0 {
						continue
					}
					own[i] = x / dv[i]
					if math.IsNaN(low[i]) || own[i] < low[i] {
						low[i] = own[i]
					}
				}
				gpuOf(l).Values[d] = own
			}
			return low
		}
		// Lowest clock ratio across the target's GPUs.
		if ratio := lowestRatio(ClockRatio, catalog.SMClock, catalog.SMClockMax); ratio != nil {
			tg.values[ClockRatio] = ratio
		} else {
			tg.absent[ClockRatio] = agentNote + " (SM clock and its maximum)"
		}
		// Enforced power limit over the board's default, per GPU and
		// lowest across the target's GPUs.
		if limRatio := lowestRatio(PowerLimitRatio, catalog.PowerLimit, catalog.PowerLimitDefault); limRatio != nil {
			tg.values[PowerLimitRatio] = limRatio
		} else {
			tg.absent[PowerLimitRatio] = agentNote + " (enforced and default power limits)"
		}
		// Slowdown: any slowdown reason on any of the target's GPUs;
		// PowerCapped: the power_cap reason on any of them (a cause only
		// with a clock far below its maximum: the power-cap rule).
		var slow, capped []float64
		reasons := make([]string, len(steps))
		for _, st := range states {
			if !keep(st.Labels) {
				continue
			}
			if slow == nil {
				slow, capped = make([]float64, len(steps)), make([]float64, len(steps))
				for i := range slow {
					slow[i], capped[i] = math.NaN(), math.NaN()
				}
			}
			g := gpuOf(st.Labels)
			own := make([]float64, len(steps))
			ownCap := make([]float64, len(steps))
			if g.SlowdownReasons == nil {
				g.SlowdownReasons = make([]string, len(steps))
			}
			for i, v := range st.Values {
				own[i], ownCap[i] = math.NaN(), math.NaN()
				if v == "" {
					continue
				}
				if math.IsNaN(slow[i]) {
					slow[i], capped[i] = 0, 0
				}
				own[i], ownCap[i] = 0, 0
				for _, rsn := range strings.Split(v, ", ") {
					if rsn == "power_cap" {
						capped[i], ownCap[i] = 1, 1
					}
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
			g.Values[Slowdown] = own
			g.Values[PowerCapped] = ownCap
		}
		if slow != nil {
			tg.values[Slowdown] = slow
			tg.values[PowerCapped] = capped
			tg.reasons = reasons
		} else {
			tg.absent[Slowdown] = agentNote + " (throttle reasons)"
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

// KeepClasses keeps only the findings of the given classes (the timeline's
// primary class is left as it is: it says what else held).
func KeepClasses(res Result, classes []string) Result {
	out := Result{Steps: res.Steps}
	for _, t := range res.Targets {
		var kept []Finding
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

// HasEngineData reports whether any engine signal (anything but the scrape
// health series and GPU readings) has a value at some step.
func HasEngineData(t TargetInput) bool {
	for sig, vals := range t.Values {
		if sig == Up || sig == UpMin {
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

// GPUSignals are the per-GPU catalogue signals the rules read (catalog.GPUPromQL, averaged
// per GPU); the read layer fetches each under the name "gpu:<signal>", and the throttle
// reasons under "gpu:throttle".
var GPUSignals = []catalog.Signal{catalog.SMActive, catalog.GREngineActive, catalog.DRAMActive, catalog.TensorActive,
	catalog.GPUUtil, catalog.SMClock, catalog.SMClockMax, catalog.PowerLimit, catalog.PowerLimitDefault}

// Stored is what the store holds for one target over the queried range: its stored metric
// names and their detection (OK false: no engine known). Assemble reads each signal's
// availability from it (catalog.Assess).
type Stored struct {
	Names []string
	Det   catalog.Detection
	OK    bool
}

// Assemble builds the per-target inputs of Diagnose into in (whose Steps, StallWindow and
// Window the caller set) from the read layer's matrices, keyed by fetch name: "up", "up_min",
// "running", "waiting", "running_avg", "waiting_avg", "running_peak", "waiting_peak" (optional),
// "running_max", "waiting_max",
// "waiting_span", "kv", "preemptions", "finished" (by finished_reason), "rejections" and
// "waiting_by_reason" (by reason; both optional: fetched only where a target exports them),
// "prompt", "generation", "progress_tokens",
// "progress_finished", "progress_steps", "progress_decode" and "decode_steps" (optional: where a
// target exports decode steps), "first_tokens" (the TTFT histogram's count rate), "prompt_buckets", "ceiling_gauge", "ceiling_info",
// one per MeanSignals entry (string(Signal)), and "gpu:<signal>" / "gpu:throttle" for the
// agents' GPUs. Every matrix is grouped by the label target. A signal the target's engine does
// not export, or that is not stored for it, is absent with the reason; an approximate one keeps
// its note. The running ceiling is the engine's exported one, else th.MaxNumSeqs.
func Assemble(in Input, got map[string]model.Matrix, targets []settings.Target, agents []string, stored map[string]Stored, th settings.Diagnosis) Input {
	steps := in.Steps
	byJob := func(m model.Matrix) map[string][]float64 {
		vals, labels := analysis.Align(m, steps)
		out := map[string][]float64{}
		for k, l := range labels {
			out[l["target"]] = vals[k]
		}
		return out
	}
	direct := map[Signal]map[string][]float64{
		Up: byJob(got["up"]), UpMin: byJob(got["up_min"]),
		Running: byJob(got["running"]), Waiting: byJob(got["waiting"]),
		RunningAvg: byJob(got["running_avg"]), WaitingAvg: byJob(got["waiting_avg"]),
		RunningPeak: byJob(got["running_peak"]), WaitingPeak: byJob(got["waiting_peak"]),
		RunningMax: byJob(got["running_max"]), WaitingMax: byJob(got["waiting_max"]),
		WaitingSpan: byJob(got["waiting_span"]), KVUsage: byJob(got["kv"]),
		Preemptions: byJob(got["preemptions"]), PromptTok: byJob(got["prompt"]),
		GenTok: byJob(got["generation"]),
	}
	for _, m := range MeanSignals {
		direct[m.Signal] = byJob(got[string(m.Signal)])
	}
	direct[PromptP50], direct[PromptP99] = promptQuantiles(got["prompt_buckets"], steps)
	finished, aborted := finishedByReason(got["finished"], steps, "abort")
	_, errored := finishedByReason(got["finished"], steps, "error")
	direct[Finished], direct[Aborted], direct[Errored] = finished, aborted, errored
	if m, ok := got["rejections"]; ok {
		direct[Rejected] = byJob(m)
	}
	if m, ok := got["waiting_by_reason"]; ok {
		direct[WaitingDeferred] = byJob(withLabel(m, "reason", "deferred"))
	}
	progress := sumByJob(steps, byJob(got["progress_tokens"]), byJob(got["progress_finished"]), byJob(got["progress_steps"]), byJob(got["progress_decode"]))
	direct[Progress] = progress
	if m, ok := got["decode_steps"]; ok {
		direct[DecodeSteps] = byJob(m)
	}
	if m, ok := got["first_tokens"]; ok {
		direct[FirstTokens] = byJob(m)
	}

	perGPU := gpuByTarget(got, steps, targets, agents)
	ceilings := runningCeilings(got["ceiling_gauge"], got["ceiling_info"])
	for _, t := range targets {
		ti := TargetInput{Name: t.Name, Values: map[Signal][]float64{},
			Approximate: map[Signal]string{}, Absent: map[Signal]string{}}
		view := stored[t.Name]
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
			a := catalog.Assess(view.Det, view.Names, cs)
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
		if _, ok := ti.Values[Aborted]; !ok {
			if _, fin := ti.Values[Finished]; fin {
				ti.Absent[Aborted] = "the finished-requests counter has no finished_reason label on this engine"
			}
		} else if ti.Generation != "v0" && !hasReason(got["finished"], t.Name, "abort") {
			// Reasons are counted, but no series counts aborts: this version exports no abort
			// counter (issue 39), so aborts are not zero, they are uncounted. (vLLM V0 creates a
			// reason's series at its first request, so there an absent series is no abort yet.)
			delete(ti.Values, Aborted)
			ti.Absent[Aborted] = `no finished_reason="abort" series is stored: this version exports no abort counter`
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
	return in
}

// slowdownReasons are the throttle reasons that mean the GPU is slowed down
// by hardware, heat or a power brake (power_cap alone is normal under load).
var slowdownReasons = []string{"hw_slowdown", "sw_thermal", "hw_thermal", "hw_power_brake"}

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

// withLabel keeps the series of m whose label l is v.
func withLabel(m model.Matrix, l model.LabelName, v model.LabelValue) model.Matrix {
	var out model.Matrix
	for _, s := range m {
		if s.Metric[l] == v {
			out = append(out, s)
		}
	}
	return out
}

// finishedByReason splits the finished-requests rate by finished_reason
// into the total and the rate of the given reason ("abort", "error") per
// job. A job whose series carry no finished_reason label has no entry for
// the reason (the engine cannot tell).
func finishedByReason(m model.Matrix, steps []time.Time, want string) (total, aborted map[string][]float64) {
	total, aborted = map[string][]float64{}, map[string][]float64{}
	vals, labels := analysis.Align(m, steps)
	for k, l := range labels {
		job := l["target"]
		if total[job] == nil {
			total[job] = analysis.NaNs(len(steps))
		}
		addInto(total[job], vals[k])
		if reason, ok := l["finished_reason"]; ok {
			if aborted[job] == nil {
				aborted[job] = make([]float64, len(steps)) // reasons present: aborted is 0 unless counted
			}
			if reason == want {
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
