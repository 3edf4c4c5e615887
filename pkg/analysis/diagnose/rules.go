package diagnose

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/inferscope/inferscope-llm-datasource/pkg/settings"
)

// verdict is one rule's outcome at one step.
type verdict struct {
	active     bool
	evidence   []Evidence
	confidence Confidence
	why        []string // reasons the confidence was lowered
	notChecked []string
	summary    string
	recommend  string
	gpus       []GPURef // the GPUs the finding is about (see Finding.GPUs)
	// undecided, on an inactive verdict, says the rule's engine-side
	// evidence held but a GPU signal it needs is missing: the class can
	// neither be named nor ruled out (insufficient_data lists them).
	undecided string
	heldFor   int // > 0: kept by hold for this many steps after its condition cleared
}

// holds is v as the rule's finding: active, with its one-sentence summary
// and its recommendation.
func (v verdict) holds(summary, recommend string) verdict {
	v.active = true
	v.summary = summary
	v.recommend = recommend
	return v
}

func (v *verdict) lowerTo(c Confidence, why string) {
	v.confidence = v.confidence.lower(c)
	if !slices.Contains(v.why, why) {
		v.why = append(v.why, why)
	}
}

// tctx is the per-target state the rules read.
type tctx struct {
	in      *TargetInput
	th      *settings.Diagnosis
	ceiling float64 // running ceiling (configured or observed plateau)
	plateau bool    // ceiling is the observed plateau
	stall   string  // stall window, rendered
	window  string  // rate window, rendered
	windowS float64 // rate window, seconds
	step    int     // the step being evaluated (for missing's explanations)
	// objectiveNotes are each objective's evidence signal and note (objectiveEvidence),
	// written at the first step that needs them.
	objectiveNotes [][2]string
	// frozenNotes are frozen's two evidence notes for the input frozenNotesFor.
	frozenNotes    [2]string
	frozenNotesFor *TargetInput
	// stall state: the step where the current run of pending work without
	// progress began (−1: none), and whether requests arrived (the waiting
	// gauge moved) at any step of that run.
	stopRun   int
	arrived   bool
	steps     []time.Time
	stallD    time.Duration
	scrapeD   time.Duration      // scrape interval (0: unknown)
	holdCount map[Class]int      // consecutive steps hold has kept each class
	gateHold  map[Class]int      // consecutive met steps sloGate has kept each performance class
	gpuHold   map[string]int     // per GPU: consecutive steps gpu_throttled was kept by hold
	gpuLast   map[string]verdict // per GPU: the last gpu_throttled verdict whose condition held
}

// value returns signal s at step i; ok is false when the signal is
// unavailable or has no data at that step.
// A GPU profiling signal (SM, DRAM, tensor activity) that reads 0 while
// the GPU is busy and the engine produces tokens is a stuck counter: it has
// no value (see stuck).
func (c *tctx) value(s Signal, i int) (float64, bool) {
	v, ok := c.raw(s, i)
	if ok && c.stuck(s, i, v) {
		return math.NaN(), false
	}
	return v, ok
}

func (c *tctx) raw(s Signal, i int) (float64, bool) {
	v, ok := c.in.Values[s]
	if !ok || i >= len(v) || math.IsNaN(v[i]) || math.IsInf(v[i], 0) {
		return math.NaN(), false
	}
	return v[i], true
}

// stuckUtil is the GPU utilisation (share of time a kernel ran) above
// which a profiling counter reading 0 cannot be right.
const stuckUtil = 0.5

// stuck reports whether profiling signal s reads 0 at step i while GPU
// utilisation is at least stuckUtil and (where the engine's token rates
// are known) tokens are processed: DCGM profiling counters that stop
// updating read 0 (DCGM_FI_PROF_GR_ENGINE_ACTIVE 0 with DCGM_FI_DEV_GPU_UTIL 99).
func (c *tctx) stuck(s Signal, i int, v float64) bool {
	if (s != SMActive && s != DRAMActive && s != TensorActive) || v > 1e-6 {
		return false
	}
	util, ok := c.raw(GPUUtil, i)
	if !ok || util < stuckUtil {
		return false
	}
	gen, okG := c.raw(GenTok, i)
	prompt, okP := c.raw(PromptTok, i)
	if (okG || okP) && gen <= 0 && prompt <= 0 {
		return false
	}
	return true
}

// avg returns the window mean of a request gauge (RunningAvg, WaitingAvg),
// falling back to its value at the step.
func (c *tctx) avg(s Signal, i int) (float64, bool) {
	mean := map[Signal]Signal{Running: RunningAvg, Waiting: WaitingAvg}[s]
	if v, ok := c.value(mean, i); ok {
		return v, true
	}
	return c.value(s, i)
}

// missingAt explains, for each of signals without a value at step i, why
// (see missing); signals with a value are skipped.
func (c *tctx) missingAt(i int, signals ...Signal) []string {
	var out []string
	for _, s := range signals {
		if _, ok := c.value(s, i); !ok {
			out = append(out, c.missing(s))
		}
	}
	return out
}

// missing explains why signal s has no value at the step being evaluated.
func (c *tctx) missing(s Signal) string {
	if v, ok := c.raw(s, c.step); ok && c.stuck(s, c.step, v) {
		util, _ := c.raw(GPUUtil, c.step)
		return fmt.Sprintf("%s: reads 0 while gpu_util is %s and tokens are processed: a stuck profiling counter, not used", s, num(util))
	}
	if why, ok := c.in.Absent[s]; ok && why != "" {
		return fmt.Sprintf("%s: %s", s, why)
	}
	if _, ok := c.in.Values[s]; !ok {
		if isGPU(s) && c.in.NoGPU != "" {
			return fmt.Sprintf("%s: %s", s, c.in.NoGPU)
		}
		return fmt.Sprintf("%s: not exported by this target", s)
	}
	return fmt.Sprintf("%s: no data in this window", s)
}

func isGPU(s Signal) bool {
	switch s {
	case SMActive, DRAMActive, TensorActive, GPUUtil, ClockRatio, Slowdown:
		return true
	}
	return false
}

// approx lowers the verdict's confidence when a signal it used is approximate for the engine.
func (c *tctx) approx(v *verdict, sigs ...Signal) {
	for _, s := range sigs {
		if note, ok := c.in.Approximate[s]; ok {
			v.lowerTo(Medium, fmt.Sprintf("%s is approximate for %s: %s", s, engineName(c.in), note))
		}
	}
}

func engineName(t *TargetInput) string {
	if t.Engine == "" {
		return "this engine"
	}
	if t.Generation != "" {
		return t.Engine + " " + strings.ToUpper(t.Generation)
	}
	return t.Engine
}

// relax returns the threshold a comparison uses: thr itself, or, while
// the finding held at the previous step (prev), thr moved by the hysteresis
// share in the direction that keeps the finding: a "≥ thr" bar is lowered
// to thr·(1 − h); a "< thr" bar is raised to thr·(1 + h), and for a ratio
// threshold inside (0, 1) by at most h of the distance to 1 (so the 0.9
// clock-ratio bar becomes 0.91, not 0.99). Evidence prints the value
// returned here: the threshold actually used.
func (c *tctx) relax(op string, thr float64, prev bool) float64 {
	h := c.th.Hysteresis
	if !prev || h <= 0 {
		return thr
	}
	switch op {
	case ">=":
		return thr * (1 - h)
	case "<":
		up := thr * (1 + h)
		if thr > 0 && thr < 1 {
			up = math.Min(up, thr+h*(1-thr))
		}
		return up
	}
	return thr
}

// atLeast / below compare with the threshold relax returns.
func (c *tctx) atLeast(v, thr float64, prev bool) bool { return v >= c.relax(">=", thr, prev) }

func (c *tctx) below(v, thr float64, prev bool) bool { return v < c.relax("<", thr, prev) }

func ev(sig Signal, v float64, op string, thr float64, unit string) Evidence {
	return Evidence{Signal: string(sig), Value: v, Op: op, Threshold: thr, Unit: unit}
}

// rule evaluates one class at step i; prev says whether the class held at step i−1.
type rule func(c *tctx, i int, prev bool) verdict

var rules = map[Class]rule{
	Stalled:          ruleStalled,
	IdleStaleGauges:  ruleIdleStale,
	GPUThrottled:     ruleThrottled,
	PowerCap:         rulePowerCapped,
	KVPressure:       ruleKV,
	QueueSaturation:  ruleQueue,
	HeadOfLine:       ruleHOL,
	PrefillCompute:   rulePrefill,
	DecodeMemory:     ruleDecode,
	FrontendOverhead: ruleFrontend,
	AbortedTraffic:   ruleAborted,
	UnderUtilised:    ruleUnder,
	ErrorSurge:       ruleErrorSurge,
	UnstableBatching: ruleUnstableBatching,
	SmallBatches:     ruleSmallBatches,
}

var severities = map[Class]Severity{
	Stalled: Critical, GPUThrottled: Warning, KVPressure: Warning, QueueSaturation: Warning,
	HeadOfLine: Warning, PrefillCompute: Warning, DecodeMemory: Warning, FrontendOverhead: Warning,
	AbortedTraffic: Info, IdleStaleGauges: Info, UnderUtilised: Info, Healthy: OK, Unknown: Info,
	InsufficientData: Info, UnstableBatching: Warning, SmallBatches: Info, ErrorSurge: Warning,
	PowerCap: Warning,
}

// frozen evaluates the shared part of the stall and stale-gauge rules: the
// page answered every scrape of the stall window, work is pending and no
// progress counter advanced. ok is false when a needed signal is missing.
func frozen(c *tctx, i int) (ev0 []Evidence, pending bool, stopped bool, notChecked []string, ok bool) {
	return frozenAt(c, i, true)
}

// frozenAt is frozen; without explain it returns no evidence and no notChecked (trackStall
// reads only pending, stopped and ok, at every step).
func frozenAt(c *tctx, i int, explain bool) (ev0 []Evidence, pending bool, stopped bool, notChecked []string, ok bool) {
	up, okUp := c.value(UpMin, i)
	prog, okProg := c.value(Progress, i)
	run, okRun := c.value(Running, i)
	wait, okWait := c.value(Waiting, i)
	if !okUp || !okProg || (!okRun && !okWait) {
		if !explain {
			return nil, false, false, nil, false
		}
		notChecked = append(notChecked, c.missingAt(i, UpMin, Progress)...)
		if !okRun && !okWait {
			notChecked = append(notChecked, c.missing(Running), c.missing(Waiting))
		}
		return nil, false, false, notChecked, false
	}
	if up < 1 {
		return nil, false, false, nil, true
	}
	pending = (okRun && run > 0) || (okWait && wait > 0)
	stopped = prog <= 0
	if !explain {
		return nil, pending, stopped, nil, true
	}
	if c.frozenNotesFor != c.in {
		// The notes depend on the target's signals and the stall window alone: written once
		// per target (and per GPU view, forGPU), not per step.
		c.frozenNotesFor = c.in
		c.frozenNotes = [2]string{"generation tokens + finished requests + engine steps" + decodeNote(c) + " over the last " + c.stall,
			"every scrape of the last " + c.stall + " answered"}
	}
	ev0 = []Evidence{
		{Signal: string(Progress), Value: prog, Op: "=", Threshold: 0, Unit: "/s", Note: c.frozenNotes[0]},
		{Signal: "page_answered", Value: up, Op: "=", Threshold: 1, Unit: "ratio", Note: c.frozenNotes[1]},
	}
	if okRun {
		ev0 = append(ev0, ev(Running, run, "", 0, "requests"))
	}
	if okWait {
		ev0 = append(ev0, ev(Waiting, wait, "", 0, "requests"))
	}
	return ev0, pending, stopped, nil, true
}

// trackStall updates the stall state at step i: a run of steps with work
// pending and no progress starts, continues (noting whether the waiting
// gauge moved: its span over the stall window, or a change from the run's
// first step) or ends. Steps without the needed signals leave it as it is.
// Judged over the whole run, a stall at low traffic (one request a
// minute) stays a stall once one request arrives and does not progress.
func (c *tctx) trackStall(i int) {
	_, pending, stopped, _, ok := frozenAt(c, i, false)
	if !ok {
		return
	}
	if !pending || !stopped {
		c.stopRun, c.arrived = -1, false
		return
	}
	if c.stopRun < 0 {
		c.stopRun, c.arrived = i, false
	}
	if span, ok := c.value(WaitingSpan, i); ok && span > 0 {
		c.arrived = true
	}
	w0, ok0 := c.value(Waiting, c.stopRun)
	if w, ok := c.value(Waiting, i); ok && ok0 && w != w0 {
		c.arrived = true
	}
}

// stoppedFor renders since when the current run without progress lasts.
func (c *tctx) stoppedFor(i int) string {
	if c.stopRun < 0 || c.stopRun >= len(c.steps) || i >= len(c.steps) {
		return ""
	}
	d := c.steps[i].Sub(c.steps[c.stopRun]) + c.stallD
	return "(" + durationText(d) + " without progress)"
}

func ruleStalled(c *tctx, i int, _ bool) verdict {
	v := verdict{confidence: High}
	e, pending, stopped, nc, ok := frozen(c, i)
	if !ok {
		v.notChecked = nc
		return v
	}
	if !pending || !stopped || !c.arrived {
		return v // no arrival since progress stopped: ruleIdleStale
	}
	span, _ := c.value(WaitingSpan, i)
	v.evidence = append(e, Evidence{Signal: string(WaitingSpan), Value: span, Unit: "requests",
		Note: "the waiting gauge moved since progress stopped " + c.stoppedFor(i) + ": requests keep arriving and none progresses"})
	if run, ok := c.value(Running, i); ok && run == 0 {
		v.evidence = append(v.evidence, Evidence{Signal: "note", Value: run, Unit: "requests", Note: "running reads 0 while requests wait: a healthy-looking gauge on a dead engine"})
	}
	if util, ok := c.value(GPUUtil, i); ok {
		if sm, ok2 := c.value(SMActive, i); ok2 && util >= 0.5 && sm < c.th.SMActiveLow {
			v.evidence = append(v.evidence, Evidence{Signal: "gpu_util vs sm_active", Value: util, Op: ">=", Threshold: 0.5, Unit: "ratio",
				Note: fmt.Sprintf("a kernel is resident but SMs are idle (sm_active %s): the pattern of a hung collective", num(sm))})
		}
	}
	return v.holds(fmt.Sprintf("Stalled: work is pending but no progress counter advanced for %d scrapes while the metrics page keeps answering.", c.th.StallScrapes),
		"Drain and restart the replica (the engine core is hung; /health may still answer 200). Check the engine log for a hung collective (NCCL) or a dead worker; consider --enable-fault-tolerance or a liveness probe on token progress.")
}

func ruleIdleStale(c *tctx, i int, _ bool) verdict {
	v := verdict{confidence: Medium, why: []string{"without an arrival counter, a stall with no new requests looks the same"}}
	e, pending, stopped, _, ok := frozen(c, i)
	if !ok || !pending || !stopped || c.arrived {
		return v
	}
	span, _ := c.value(WaitingSpan, i)
	v.evidence = append(e, Evidence{Signal: string(WaitingSpan), Value: span, Op: "=", Threshold: 0, Unit: "requests",
		Note: "the request gauges did not move since progress stopped " + c.stoppedFor(i) + ": nothing arrives"})
	return v.holds("Idle engine with stale gauges: nothing arrives and nothing finishes, yet the request gauges still show work (vLLM leaves them unchanged after a mass cancel). Not a stall.",
		"No action needed if no client is waiting. If clients are waiting, send a probe request: a probe that never completes means a stall (restart the replica).")
}

func ruleThrottled(c *tctx, i int, prev bool) verdict {
	v := verdict{confidence: High}
	slow, ok1 := c.value(Slowdown, i)
	clk, ok2 := c.value(ClockRatio, i)
	if !ok2 {
		if !ok1 {
			v.notChecked = append(v.notChecked, c.missing(Slowdown))
		}
		v.notChecked = append(v.notChecked, c.missing(ClockRatio))
		return v
	}
	if ok1 && slow >= 1 && c.below(clk, c.th.ClockRatioMin, prev) {
		reasons := "slowdown reason active"
		if i < len(c.in.SlowdownReasons) && c.in.SlowdownReasons[i] != "" {
			reasons = c.in.SlowdownReasons[i]
		}
		v.evidence = []Evidence{
			{Signal: "throttle_reasons", Value: 1, Op: "=", Threshold: 1, Note: reasons},
			ev(ClockRatio, clk, "<", c.relax("<", c.th.ClockRatioMin, prev), "ratio"),
		}
		return v.holds("GPU throttled: a hardware-slowdown, thermal or power-brake reason is active and the SM clock is below its maximum.",
			"Check cooling (inlet temperature, fans), power limits (nvidia-smi -q -d PERFORMANCE,POWER) and the node itself; move the replica off a bad node.")
	}
	if !ok1 {
		v.notChecked = append(v.notChecked, c.missing(Slowdown))
	}
	return v
}

// throttleLingers: at step i a slowdown reason is still active or the SM
// clock is still below ClockRatioMin; a throttling finding whose condition
// just cleared is held only then (a GPU back at full clock with no reason
// clears at once).
func (c *tctx) throttleLingers(i int) bool {
	slow, ok1 := c.value(Slowdown, i)
	clk, ok2 := c.value(ClockRatio, i)
	return (ok1 && slow >= 1) || (ok2 && clk < c.th.ClockRatioMin)
}

// rulePowerCapped: a busy GPU (utilisation ≥ GPUBusy) with no thermal or
// hardware slowdown reason runs its SM clock held down by a power limit:
// either (a) the enforced limit is below PowerLimitRatio of the board's
// default and the clock is below ClockRatioMin of its maximum (the lowered
// limit is what holds it), or (b) the clock is below ClockCapRatio of its
// maximum, with the power_cap reason active where the agent reports
// reasons (medium confidence without them). Every compute-bound step is
// that much slower. The power_cap reason alone with the clock near its
// maximum is normal under full load. With per-GPU data each GPU is judged
// on its own signals and the finding names the capped GPUs. It is a
// performance class: with every objective met it is an observation.
func rulePowerCapped(c *tctx, i int, prev bool) verdict {
	if len(c.in.GPUs) == 0 {
		return powerCapped(c, i, prev)
	}
	var out verdict
	for k := range c.in.GPUs {
		g := &c.in.GPUs[k]
		v := powerCapped(c.forGPU(g), i, prev)
		if !v.active {
			continue
		}
		if !out.active {
			out = v
			out.summary = "GPU " + g.GPU + ": " + v.summary
		} else {
			out.evidence = append(out.evidence, v.evidence...)
			out.summary = "GPUs " + strings.Join(gpuNames(out.gpus), ", ") + ", " + g.GPU + ": " + v.summary
			if v.confidence != High {
				for _, w := range v.why {
					out.lowerTo(v.confidence, w)
				}
			}
		}
		out.gpus = append(out.gpus, g.GPURef)
	}
	return out
}

func gpuNames(g []GPURef) []string {
	out := make([]string, len(g))
	for k, r := range g {
		out[k] = r.GPU
	}
	return out
}

// powerCapped is rulePowerCapped on the signals of c (one GPU, or the
// target's lowest clock and limit ratios without per-GPU data).
func powerCapped(c *tctx, i int, prev bool) verdict {
	v := verdict{confidence: High}
	clk, okK := c.value(ClockRatio, i)
	util, okU := c.value(GPUUtil, i)
	if !okK || !okU {
		return v // ruleThrottled says what is missing
	}
	if slow, ok := c.value(Slowdown, i); ok && slow >= 1 {
		return v // a thermal or hardware slowdown: gpu_throttled
	}
	if !c.atLeast(util, c.th.GPUBusy, prev) {
		return v
	}
	capped, okC := c.value(PowerCapped, i)
	lim, okL := c.value(PowerLimitRatio, i)
	lowered := okL && c.below(lim, c.th.PowerLimitRatio, prev)
	switch {
	case lowered && c.below(clk, c.th.ClockRatioMin, prev):
		v.evidence = []Evidence{
			ev(PowerLimitRatio, lim, "<", c.relax("<", c.th.PowerLimitRatio, prev), "ratio"),
			ev(ClockRatio, clk, "<", c.relax("<", c.th.ClockRatioMin, prev), "ratio"),
		}
		v.evidence[0].Note = "enforced power limit below the board's default"
	case c.below(clk, c.th.ClockCapRatio, prev) && (!okC || capped >= 1):
		v.evidence = []Evidence{ev(ClockRatio, clk, "<", c.relax("<", c.th.ClockCapRatio, prev), "ratio")}
		if okL {
			v.evidence = append(v.evidence, Evidence{Signal: string(PowerLimitRatio), Value: lim, Unit: "ratio",
				Note: "enforced power limit over the board's default"})
		}
		if !okC {
			v.lowerTo(Medium, "the power_cap reason is not available: a low clock under load with no slowdown reason is read as a cap")
		}
	default:
		return v
	}
	note := "no thermal or hardware slowdown reason: the clock is held by the power limit"
	if okC && capped >= 1 {
		note = "power_cap reason active; no thermal or hardware slowdown reason"
	}
	v.evidence = append(v.evidence, Evidence{Signal: string(GPUUtil), Value: util, Op: ">=", Threshold: c.relax(">=", c.th.GPUBusy, prev), Unit: "ratio", Note: note})
	return v.holds("GPU power-capped: the GPU is busy but an enforced power limit holds its SM clock below its maximum; compute-bound work (prefill) slows in proportion.",
		"Check the enforced power limit against the board's default (nvidia-smi -q -d POWER; nvidia-smi -pl resets it; DCGM power policies) and application clocks (nvidia-smi -q -d CLOCK); on a shared or power-managed node ask for the default limit, or move the replica.")
}

// forGPU is c reading one GPU's signals in place of the target's GPU signals.
func (c *tctx) forGPU(g *GPUInput) *tctx {
	in := *c.in
	in.Values = g.Values
	in.SlowdownReasons = g.SlowdownReasons
	gc := *c
	gc.in = &in
	return &gc
}

// throttledPerGPU evaluates the throttling rule on each of the target's GPUs
// at step i, each with its own hysteresis (active holds the GPUs' earlier
// steps). Each throttled GPU's verdict goes into got under its index; the
// returned target-level verdict holds when any GPU is throttled and says,
// per GPU, what could not be checked.
func (c *tctx) throttledPerGPU(i int, active map[string][]bool, got map[string]verdict) verdict {
	var out verdict
	if c.gpuHold == nil {
		c.gpuHold, c.gpuLast = map[string]int{}, map[string]verdict{}
	}
	for k := range c.in.GPUs {
		g := &c.in.GPUs[k]
		prev := i > 0 && active[g.GPU][i-1]
		v := ruleThrottled(c.forGPU(g), i, prev)
		for _, nc := range v.notChecked {
			out.notChecked = append(out.notChecked, "gpu "+g.GPU+" "+nc)
		}
		switch {
		case v.active:
			v.gpus = []GPURef{g.GPURef}
			v.summary = "GPU " + g.GPU + ": " + v.summary
			c.gpuHold[g.GPU], c.gpuLast[g.GPU] = 0, v
		case prev && c.gpuHold[g.GPU] < c.maxHold() && c.forGPU(g).throttleLingers(i):
			// as hold: kept for up to one rate window after it cleared,
			// while a slowdown reason is still active or the clock is low
			v = c.gpuLast[g.GPU]
			c.gpuHold[g.GPU]++
			v.heldFor = c.gpuHold[g.GPU]
			v.evidence = append(slices.Clone(v.evidence), heldEvidence(c, v.heldFor))
		default:
			c.gpuHold[g.GPU] = 0
			continue
		}
		got[g.GPU] = v
		if !out.active {
			out = v
		}
	}
	return out
}

// gpusWhere names the target's GPUs whose own value of s satisfies op thr
// at step i (per-GPU data only), and adds their values to the evidence of s.
func (c *tctx) gpusWhere(v *verdict, s Signal, i int, op string, thr float64) {
	if len(c.in.GPUs) == 0 {
		return
	}
	var parts []string
	for k := range c.in.GPUs {
		g := &c.in.GPUs[k]
		x, ok := c.forGPU(g).value(s, i)
		if !ok {
			continue
		}
		parts = append(parts, "gpu "+g.GPU+" "+num(x))
		if (op == ">=" && x >= thr) || (op == "<" && x < thr) {
			v.gpus = append(v.gpus, g.GPURef)
		}
	}
	for k := range v.evidence {
		if v.evidence[k].Signal == string(s) && len(parts) > 0 {
			note := "per GPU: " + strings.Join(parts, ", ")
			if v.evidence[k].Note != "" {
				note = v.evidence[k].Note + "; " + note
			}
			v.evidence[k].Note = note
		}
	}
}

func ruleKV(c *tctx, i int, prev bool) verdict {
	v := verdict{confidence: High}
	kv, ok := c.value(KVUsage, i)
	if !ok {
		v.notChecked = []string{c.missing(KVUsage)}
		return v
	}
	if !c.atLeast(kv, c.th.KVUsageHigh, prev) {
		return v
	}
	v.evidence = []Evidence{ev(KVUsage, kv, ">=", c.relax(">=", c.th.KVUsageHigh, prev), "ratio")}
	pre, okP := c.value(Preemptions, i)
	if okP {
		if !c.atLeast(pre, c.th.PreemptionsPerSecond, prev) {
			return v
		}
		v.evidence = append(v.evidence, ev(Preemptions, pre, ">=", c.relax(">=", c.th.PreemptionsPerSecond, prev), "/s"))
	} else {
		v.notChecked = append(v.notChecked, c.missing(Preemptions))
		v.lowerTo(Medium, "preemptions not available: KV usage alone")
	}
	c.approx(&v, KVUsage, Preemptions)
	return v.holds("KV-cache pressure: the KV cache is nearly full and requests are preempted (their KV recomputed). The prefix-cache hit ratio is not evidence of cache health while preemptions recompute tokens.",
		"Lower --max-model-len or --max-num-seqs, enable prefix caching (--enable-prefix-caching), use an FP8 KV cache (--kv-cache-dtype fp8), raise --gpu-memory-utilization, or add GPU memory with tensor parallelism (--tensor-parallel-size).")
}

func ruleQueue(c *tctx, i int, prev bool) verdict {
	v := verdict{confidence: High}
	wait, okW := c.avg(Waiting, i)
	run, okR := c.avg(Running, i)
	if !okW || !okR {
		v.notChecked = append(v.notChecked, c.missingAt(i, Waiting, Running)...)
		return v
	}
	// Requests deferred (grammar compilation, a remote KV transfer) wait for something other
	// than room: only the rest of the queue is saturation.
	deferred, okD := c.value(WaitingDeferred, i)
	if okD {
		wait = math.Max(0, wait-deferred)
	}
	waitSig, runSig := WaitingAvg, RunningAvg
	burst := false
	if !c.atLeast(wait, c.th.QueueWaitingMin, prev) || c.ceiling <= 0 || !c.atLeast(run, c.th.RunningCeilingRatio*c.ceiling, prev) {
		// A burst inside a long window: the highest one-minute means.
		// Only against a known ceiling (exported or configured): the
		// observed plateau is itself a peak.
		pw, ok1 := c.value(WaitingPeak, i)
		pr, ok2 := c.value(RunningPeak, i)
		if !ok1 || !ok2 || c.ceiling <= 0 || c.plateau || !c.atLeast(pw, c.th.QueueWaitingMin, prev) || !c.atLeast(pr, c.th.RunningCeilingRatio*c.ceiling, prev) {
			// Issue 35: the scraped maxima, at every window, with a breached
			// TTFT or E2E objective (burstByMaxima).
			var ok bool
			if pw, pr, ok = c.burstByMaxima(i, prev); !ok {
				return v
			}
			waitSig, runSig = WaitingMax, RunningMax
		} else {
			waitSig, runSig = WaitingPeak, RunningPeak
		}
		if okD {
			pw = math.Max(0, pw-deferred)
			if !c.atLeast(pw, c.th.QueueWaitingMin, prev) {
				return v
			}
		}
		wait, run, burst = pw, pr, true
	}
	note := "configured --max-num-seqs"
	if c.in.CeilingSource != "" {
		note = "ceiling: " + c.in.CeilingSource
	}
	if c.plateau {
		note = "ceiling = highest running count in the range (max_num_seqs is not exported)"
	}
	waitEv := ev(waitSig, wait, ">=", c.relax(">=", c.th.QueueWaitingMin, prev), "requests")
	if okD {
		waitEv.Note = fmt.Sprintf("waiting for capacity: %s deferred (grammar compilation, remote KV) left out", num(deferred))
	}
	v.evidence = []Evidence{
		waitEv,
		{Signal: string(runSig), Value: run, Op: ">=", Threshold: c.relax(">=", c.th.RunningCeilingRatio*c.ceiling, prev), Unit: "requests", Note: note},
	}
	if burst {
		burstNote := fmt.Sprintf("highest %s mean inside the %s window: a burst the window mean dilutes", durationText(BurstWindow(c.scrapeD)), c.window)
		if waitSig == WaitingMax {
			burstNote = maximaNote(c)
		}
		if v.evidence[0].Note != "" {
			burstNote = v.evidence[0].Note + "; " + burstNote
		}
		v.evidence[0].Note = burstNote
	}
	q, okQ := c.value(QueueMean, i)
	e2e, okE := c.value(E2EMean, i)
	if okQ && okE && e2e > 0 {
		share := q / e2e
		breached := c.breachedOn(i, "ttft", "e2e", "queue_time")
		switch {
		case c.atLeast(share, c.th.QueueTimeShare, prev):
			v.evidence = append(v.evidence, Evidence{Signal: "queue_share_of_e2e", Value: share, Op: ">=", Threshold: c.relax(">=", c.th.QueueTimeShare, prev), Unit: "ratio",
				Note: fmt.Sprintf("mean queue %s s of mean E2E %s s", num(q), num(e2e))})
		case queueShareOfTTFT(c, i, q, prev, &v):
			// Issue 35: with long outputs queue time is a small share of
			// E2E while it is most of TTFT.
		case burst && len(breached) > 0:
			// The window's mean queue time dilutes the burst's too; a
			// breached objective on a stage queueing lengthens (TTFT,
			// E2E) says the burst's queueing mattered.
			v.evidence = append(v.evidence, Evidence{Signal: "queue_share_of_e2e", Value: share, Op: "<", Threshold: c.relax(">=", c.th.QueueTimeShare, prev), Unit: "ratio",
				Note: fmt.Sprintf("mean queue %s s of mean E2E %s s over the whole window; objective %s is breached", num(q), num(e2e), strings.Join(breached, ", "))})
		default:
			return v
		}
		c.approx(&v, QueueMean, E2EMean)
	} else {
		v.notChecked = append(v.notChecked, c.missingAt(i, QueueMean, E2EMean)...)
		v.lowerTo(Medium, "queue time share of E2E not available: waiting and running gauges alone")
	}
	summary := "Queue saturation: requests wait while the running batch sits at its ceiling; queue time is a large share of E2E latency."
	if burst {
		summary = "Queue saturation in a burst: for at least a minute inside the window, requests waited while the running batch sat at its ceiling."
		if waitSig == WaitingMax {
			summary = burstMaximaSummary
		}
	}
	var recommend string
	if kv, ok := c.value(KVUsage, i); ok && kv < c.th.KVHeadroom {
		v.evidence = append(v.evidence, ev(KVUsage, kv, "<", c.th.KVHeadroom, "ratio"))
		recommend = fmt.Sprintf("Raise --max-num-seqs (KV usage %s leaves headroom), and --max-num-batched-tokens with it; add replicas if latency must drop further.", num(kv))
	} else if ok {
		v.evidence = append(v.evidence, ev(KVUsage, kv, ">=", c.th.KVHeadroom, "ratio"))
		recommend = "Add replicas (scale out): the KV cache has no headroom for a larger --max-num-seqs."
	} else {
		recommend = "Add replicas, or raise --max-num-seqs if the KV cache has headroom (KV usage is not available here)."
	}
	return v.holds(summary, recommend)
}

// promptPerRequest is prompt tokens per finished request over the window.
func (c *tctx) promptPerRequest(i int) (float64, bool) {
	p, ok1 := c.value(PromptTok, i)
	f, ok2 := c.value(Finished, i)
	if !ok1 || !ok2 || f <= 0 {
		return math.NaN(), false
	}
	return p / f, true
}

// gpuCheck adds a GPU condition to v: when the GPU signal is missing the
// verdict keeps its engine-side evidence at low confidence and says what
// it could not check. It returns false when the signal contradicts.
func (c *tctx) gpuCheck(v *verdict, s Signal, i int, op string, thr float64, prev bool) bool {
	x, ok := c.value(s, i)
	if !ok {
		v.notChecked = append(v.notChecked, c.missing(s))
		v.lowerTo(Low, fmt.Sprintf("%s could not be checked", s))
		return true
	}
	var holds bool
	if op == ">=" {
		holds = c.atLeast(x, thr, prev)
	} else {
		holds = c.below(x, thr, prev)
	}
	if holds {
		v.evidence = append(v.evidence, ev(s, x, op, c.relax(op, thr, prev), "ratio"))
	}
	return holds
}

// recomputeShare is the preemptions per finished request above which
// recomputation, not the prompts, explains a prefill-heavy step mix.
const recomputeShare = 0.1

// rulePrefill: the engine's work is mostly prefill (prompt tokens ≥
// PrefillTokenShare of the tokens processed) and the SMs or tensor cores
// are busy, with either long prompts (≥ LongPromptTokens per request) or a
// queue (mean waiting ≥ QueueWaitingMin): prompts arrive faster than the
// GPU computes them, whatever their length, and admission is limited by
// the step's token budget, not by seats.
func rulePrefill(c *tctx, i int, prev bool) verdict {
	v := verdict{confidence: High}
	prompt, ok1 := c.value(PromptTok, i)
	gen, ok2 := c.value(GenTok, i)
	if !ok1 || !ok2 {
		v.notChecked = append(v.notChecked, c.missingAt(i, PromptTok, GenTok)...)
		return v
	}
	if prompt+gen <= 0 || !c.atLeast(prompt/(prompt+gen), c.th.PrefillTokenShare, prev) {
		return v
	}
	// Recompute preemptions prefill their requests again: when one request
	// in ten is preempted with the KV cache full, the prefill work is the
	// KV pressure's doing (kv_cache_pressure names it).
	if kv, ok := c.value(KVUsage, i); ok && kv >= c.th.KVUsageHigh {
		pre, okP := c.value(Preemptions, i)
		fin, okF := c.value(Finished, i)
		if okP && okF && pre >= recomputeShare*fin && pre > 0 {
			return v
		}
	}
	ppr, okPPR := c.promptPerRequest(i)
	wait, okW := c.avg(Waiting, i)
	long := okPPR && c.atLeast(ppr, c.th.LongPromptTokens, prev)
	queued := okW && c.atLeast(wait, c.th.QueueWaitingMin, prev)
	if q, ok := c.value(QueueMean, i); queued && ok {
		if e2e, ok := c.value(E2EMean, i); ok && e2e > 0 && !c.atLeast(q/e2e, c.th.QueueTimeShare, prev) {
			queued = false // a request waiting now and then is not a queue
		}
	}
	if !long && !queued {
		return v
	}
	v.evidence = []Evidence{
		{Signal: "prompt_token_share", Value: prompt / (prompt + gen), Op: ">=", Threshold: c.relax(">=", c.th.PrefillTokenShare, prev), Unit: "ratio",
			Note: fmt.Sprintf("%s prompt tokens/s against %s generated tokens/s", num(prompt), num(gen))},
	}
	if long {
		v.evidence = append(v.evidence, ev("prompt_tokens_per_request", ppr, ">=", c.relax(">=", c.th.LongPromptTokens, prev), "tokens"))
	} else {
		v.evidence = append(v.evidence, Evidence{Signal: string(WaitingAvg), Value: wait, Op: ">=", Threshold: c.relax(">=", c.th.QueueWaitingMin, prev),
			Unit: "requests", Note: "prompts queue for the step's token budget"})
	}
	sm, okSM := c.value(SMActive, i)
	ten, okT := c.value(TensorActive, i)
	switch {
	case okSM && c.atLeast(sm, c.th.SMActiveHigh, prev):
		v.evidence = append(v.evidence, ev(SMActive, sm, ">=", c.relax(">=", c.th.SMActiveHigh, prev), "ratio"))
		c.gpusWhere(&v, SMActive, i, ">=", c.th.SMActiveHigh)
	case okT && c.atLeast(ten, c.th.SMActiveHigh, prev):
		v.evidence = append(v.evidence, ev(TensorActive, ten, ">=", c.relax(">=", c.th.SMActiveHigh, prev), "ratio"))
		c.gpusWhere(&v, TensorActive, i, ">=", c.th.SMActiveHigh)
	case okSM || okT:
		return v // the GPU is not compute-busy: not compute-bound
	default:
		// Without SM or tensor activity, prefill-heavy work cannot be told
		// from a throttled or capped GPU: not guessed.
		v.notChecked = append(v.notChecked, c.missing(SMActive))
		v.undecided = string(PrefillCompute)
		return v
	}
	gpuMeasured := okSM || okT
	if ttft, ok := c.value(TTFTMean, i); ok {
		pre, _ := c.value(PrefillMean, i)
		q, _ := c.value(QueueMean, i)
		v.evidence = append(v.evidence, Evidence{Signal: string(TTFTMean), Value: ttft, Unit: "s",
			Note: fmt.Sprintf("of which queue %s s waiting for the step budget and prefill %s s", num(q), num(pre))})
	}
	c.approx(&v, PromptTok, GenTok, Finished)
	summary := "Prefill compute-bound: the engine's work is mostly prefill of long prompts and the GPU's SMs are busy; TTFT (queue for the step's token budget plus prefill) grows with the prompt load."
	if !gpuMeasured {
		summary = "Prefill-heavy: the engine's work is mostly prefill of long prompts; TTFT (queue for the step's token budget plus prefill) grows with the prompt load. Whether the GPU is compute-bound is not measured (no SM or tensor activity)."
	}
	var recommend string
	if c.in.Generation == "v1" {
		recommend = "Chunked prefill is always on in vLLM V1: the step's token budget (--max-num-batched-tokens) bounds the prefill rate; raise it for throughput (lower it for ITL), enable prefix caching (--enable-prefix-caching) for shared prefixes, add replicas, or disaggregate prefill onto separate instances."
	} else {
		recommend = "Enable chunked prefill (--enable-chunked-prefill) and tune --max-num-batched-tokens, enable prefix caching (--enable-prefix-caching) for shared prefixes, add replicas, or disaggregate prefill onto separate instances."
	}
	return v.holds(summary, recommend)
}

// ruleDecode: DRAM bandwidth limits decode. With objectives, it holds
// when an inter-token (ITL, TPOT) objective is breached while DRAM
// activity is high and SM activity is not: the breach is anchored on the
// target's own objective, whatever the model size. Otherwise the fixed
// thresholds apply (mean ITL ≥ ITLHigh with at least DecodeBatchMin
// running); with every objective met the SLO gate makes that an
// observation on the healthy verdict. Without DRAM activity the class is not guessed
// (insufficient_data).
func ruleDecode(c *tctx, i int, prev bool) verdict {
	v := verdict{confidence: High}
	itl, ok1 := c.value(ITLMean, i)
	run, ok2 := c.avg(Running, i)
	if !ok1 || !ok2 {
		v.notChecked = append(v.notChecked, c.missingAt(i, ITLMean, Running)...)
		return v
	}
	known, _, itlBreach, breached := c.sloAt(i)
	if thr, name := c.perGapUnmet(i); known && !itlBreach && thr > 0 {
		// A TPOT objective read from the gap histogram is under target: not
		// established either way. Mean ITL (the gap-weighted mean of the
		// requests' TPOT) at or over its threshold establishes that requests
		// breach it; below, the objective anchors the rule, not itlHigh.
		if !c.atLeast(itl, thr, prev) {
			return v
		}
		v.evidence = []Evidence{ev(ITLMean, itl, ">=", c.relax(">=", thr, prev), "s"),
			{Signal: "slo", Value: math.NaN(), Note: "objective " + name + " read from the gap histogram: its share of gaps is under target and mean ITL is over its threshold, so requests breach it"},
			ev(RunningAvg, run, "", 0, "requests")}
	} else if known && itlBreach {
		v.evidence = []Evidence{ev(ITLMean, itl, "", 0, "s"), {Signal: "slo", Value: math.NaN(), Note: "objective " + strings.Join(breached, ", ") + " breached"},
			ev(RunningAvg, run, "", 0, "requests")}
	} else {
		if !c.atLeast(itl, c.th.ITLHigh, prev) || !c.atLeast(run, c.th.DecodeBatchMin, prev) {
			return v
		}
		v.evidence = []Evidence{ev(ITLMean, itl, ">=", c.relax(">=", c.th.ITLHigh, prev), "s"), ev(RunningAvg, run, ">=", c.relax(">=", c.th.DecodeBatchMin, prev), "requests")}
	}
	if _, ok := c.value(DRAMActive, i); !ok {
		v.notChecked = append(v.notChecked, c.missing(DRAMActive))
		v.undecided = string(DecodeMemory)
		return v
	}
	if !c.gpuCheck(&v, DRAMActive, i, ">=", c.th.DRAMActiveHigh, prev) && !decodeSteps(c, i, prev, &v) {
		return v
	}
	if _, ok := c.value(SMActive, i); ok && !c.gpuCheck(&v, SMActive, i, "<", c.th.SMActiveHigh, prev) {
		return v
	}
	c.gpusWhere(&v, DRAMActive, i, ">=", c.th.DRAMActiveHigh)
	c.approx(&v, ITLMean, Running)
	return v.holds("Decode memory-bandwidth-bound: inter-token latency is high with a large decode batch; DRAM bandwidth, not compute, limits each step.",
		"Quantise the weights (e.g. --quantization fp8 or an AWQ/GPTQ checkpoint) and the KV cache (--kv-cache-dtype fp8), use speculative decoding (--speculative-config), or raise tensor parallelism; a smaller batch (--max-num-seqs) lowers ITL at the cost of throughput.")
}

func ruleFrontend(c *tctx, i int, prev bool) verdict {
	v := verdict{confidence: High}
	if c.in.Generation == "v0" {
		return v // E2E = queue + inference by identity in V0
	}
	e2e, ok1 := c.value(E2EMean, i)
	q, ok2 := c.value(QueueMean, i)
	inf, ok3 := c.value(InferenceMean, i)
	if !ok1 || !ok2 || !ok3 {
		v.notChecked = append(v.notChecked, c.missingAt(i, E2EMean, QueueMean, InferenceMean)...)
		return v
	}
	if e2e <= 0 {
		return v
	}
	share := (e2e - q - inf) / e2e
	if !c.atLeast(share, c.th.FrontendShare, prev) {
		return v
	}
	v.evidence = []Evidence{{Signal: "frontend_share_of_e2e", Value: share, Op: ">=", Threshold: c.relax(">=", c.th.FrontendShare, prev), Unit: "ratio",
		Note: fmt.Sprintf("E2E − queue − inference = %s s of %s s", num(e2e-q-inf), num(e2e))}}
	if !c.gpuCheck(&v, SMActive, i, "<", c.th.GPUBusy, prev) {
		return v
	}
	c.gpusWhere(&v, SMActive, i, "<", c.th.GPUBusy)
	c.approx(&v, E2EMean, QueueMean, InferenceMean)
	return v.holds("Frontend or system side: a large share of E2E latency is spent outside the engine (tokenisation, API-server CPU, detokenisation, network) while the GPU is not busy.",
		"Give the API server more CPU or processes (--api-server-count), check tokenizer speed (fast tokenizer, --tokenizer-pool-size on older releases), streaming and network; profile the frontend.")
}

// ruleHOL: head-of-line blocking by long prompts. The prompt-length
// histogram shows a tail (99th percentile long, and far above the median),
// the window's mean TTFT is well above the mean prefill time (requests wait
// for the step's token budget), prefill is not the bottleneck (normal speed
// per prompt token, SMs not saturated, or the long tail carrying at least
// HOLTailWorkShare of the prompt tokens: issue 35, a context-quadratic
// prefill of a few long prompts), and the batch has free seats and KV blocks
// (so neither the queue nor the KV rule explains the wait).
func ruleHOL(c *tctx, i int, prev bool) verdict {
	v := verdict{confidence: High}
	p50, ok1 := c.value(PromptP50, i)
	p99, ok2 := c.value(PromptP99, i)
	run, ok3 := c.avg(Running, i)
	ttft, ok4 := c.value(TTFTMean, i)
	pre, ok5 := c.value(PrefillMean, i)
	ppr, ok6 := c.promptPerRequest(i)
	if !ok1 || !ok2 || !ok3 || !ok4 || !ok5 || !ok6 {
		v.notChecked = append(v.notChecked, c.missingAt(i, PromptP99, Running, TTFTMean, PrefillMean, PromptTok, Finished)...)
		return v
	}
	if p50 <= 0 || !c.atLeast(p99, c.th.HOLTailTokens, prev) || !c.atLeast(p99/p50, c.th.HOLTailRatio, prev) {
		return v
	}
	if c.ceiling > 0 && run >= c.th.RunningCeilingRatio*c.ceiling {
		return v // the batch is full: queue saturation
	}
	// A KV cache that is full and recomputes (one preemption per ten
	// finished requests or more) is the limit: kv_cache_pressure. A long
	// prompt's admission alone fills the cache for a moment and preempts
	// now and then; that is the tail's doing, not a cache too small.
	if kv, ok := c.value(KVUsage, i); ok && kv >= c.th.KVUsageHigh {
		pre, okP := c.value(Preemptions, i)
		fin, okF := c.value(Finished, i)
		if !okP || !okF || pre >= recomputeShare*fin {
			return v
		}
	}
	if pre <= 0 || ppr <= 0 || !c.atLeast(ttft/pre, c.th.HOLTTFTRatio, prev) {
		return v
	}
	// Prefill itself is not the bottleneck: its time per prompt token is
	// normal, or — relative to the hardware, whatever the model and GPU —
	// the SMs are not saturated (a long prefill holds the step, not the GPU),
	// or (issue 35) the prefill work the busy SMs do is the tail's: at least
	// HOLTailWorkShare of the prompt tokens are in excess of the median
	// prompt (tailWorkShare). A GPU compute-bound on prefill for all requests
	// has its prompt tokens in the bulk; slow prefill per token with a busy
	// GPU alone does not tell the two apart, since attention makes a long
	// prompt's prefill cost more per token than a short one's.
	sm, okSM := c.value(SMActive, i)
	fast := pre/ppr <= c.th.HOLPrefillPerToken
	idle := okSM && c.below(sm, c.th.SMActiveHigh, prev)
	tail := tailWorkShare(p50, ppr)
	tailWork := c.atLeast(tail, c.th.HOLTailWorkShare, prev)
	if !fast && !idle && !tailWork {
		return v
	}
	v.evidence = []Evidence{
		ev(PromptP99, p99, ">=", c.relax(">=", c.th.HOLTailTokens, prev), "tokens"),
		{Signal: "prompt_tail_ratio", Value: p99 / p50, Op: ">=", Threshold: c.relax(">=", c.th.HOLTailRatio, prev), Unit: "ratio",
			Note: fmt.Sprintf("99th percentile %s tokens, median %s tokens per prompt", num(p99), num(p50))},
		{Signal: "ttft_over_prefill", Value: ttft / pre, Op: ">=", Threshold: c.relax(">=", c.th.HOLTTFTRatio, prev), Unit: "ratio", Note: fmt.Sprintf("mean TTFT %s s, mean prefill %s s", num(ttft), num(pre))},
	}
	summary := "Head-of-line blocking: a tail of long prompts holds the step's token budget; requests wait although the batch has free seats and prefill runs at normal speed per token."
	switch {
	case fast:
		v.evidence = append(v.evidence, Evidence{Signal: "prefill_per_prompt_token", Value: pre / ppr, Op: "<=", Threshold: c.th.HOLPrefillPerToken, Unit: "s", Note: "prefill speed is normal"})
	case idle:
		v.evidence = append(v.evidence, Evidence{Signal: string(SMActive), Value: sm, Op: "<", Threshold: c.relax("<", c.th.SMActiveHigh, prev), Unit: "ratio", Note: "the SMs are not saturated: the long prefills hold the step, not the GPU"})
	default:
		smNote := "SM activity not measured"
		if okSM {
			smNote = "SM activity " + num(sm)
		}
		v.evidence = append(v.evidence, Evidence{Signal: "prompt_tail_token_share", Value: tail, Op: ">=", Threshold: c.relax(">=", c.th.HOLTailWorkShare, prev), Unit: "ratio",
			Note: fmt.Sprintf("1 − median prompt %s ÷ %s prompt tokens per finished request: the share of prompt tokens in excess of the median prompt, the long tail's (and more of the prefill compute, which grows faster than the prompt: attention); prefill %s s per prompt token, %s: the long prompts' prefill is the GPU's work, not the bulk's",
				num(p50), num(ppr), num(pre/ppr), smNote)})
		summary = fmt.Sprintf("Head-of-line blocking: a tail of long prompts holds the step's token budget; requests wait although the batch has free seats. Prefill is slow per token, but %s %% of the prompt tokens are the long tail's (in excess of the median prompt): the prefill work is the long prompts', not the bulk's.", num(100*tail))
	}
	if c.ceiling > 0 {
		v.evidence = append(v.evidence, Evidence{Signal: string(RunningAvg), Value: run, Op: "<", Threshold: c.th.RunningCeilingRatio * c.ceiling, Unit: "requests", Note: "seats free in the batch"})
	}
	c.approx(&v, PromptP99, TTFTMean, PrefillMean)
	var recommend string
	if c.in.Generation == "v1" {
		recommend = "vLLM V1 always chunks prefills: limit how much of each step long prompts may take with --max-num-partial-prefills, --max-long-partial-prefills and --long-prefill-token-threshold, size --max-num-batched-tokens, cap --max-model-len, or route long-context requests to a separate pool."
	} else {
		recommend = "Enable chunked prefill (--enable-chunked-prefill) with a smaller --max-num-batched-tokens, cap --max-model-len, or route long-context requests to a separate pool."
	}
	return v.holds(summary, recommend)
}

// tailWorkShare is the share of the window's prompt tokens in excess of the
// median prompt: Σ(Lᵢ − p50) ÷ Σ Lᵢ = 1 − p50 ÷ ppr, with p50 the median
// prompt (tokens, from the prompt-length histogram) and ppr the prompt
// tokens per finished request (the window's mean prompt). With the bulk of
// the prompts near their median it is the share the long tail carries.
// Clamped at 0 (a mean below the median); NaN without a positive mean.
func tailWorkShare(p50, ppr float64) float64 {
	if !(ppr > 0) {
		return math.NaN()
	}
	return math.Max(0, 1-p50/ppr)
}

func ruleAborted(c *tctx, i int, prev bool) verdict {
	v := verdict{confidence: High}
	ab, ok1 := c.value(Aborted, i)
	fin, ok2 := c.value(Finished, i)
	if !ok1 {
		if ok2 {
			return abortedUncounted(c, i, fin, v)
		}
		v.notChecked = append(v.notChecked, c.missing(Aborted))
		return v
	}
	if !ok2 {
		return v
	}
	if fin <= 0 || !c.atLeast(ab/fin, c.th.AbortShare, prev) {
		return v
	}
	v.evidence = []Evidence{
		{Signal: "aborted_share", Value: ab / fin, Op: ">=", Threshold: c.relax(">=", c.th.AbortShare, prev), Unit: "ratio"},
		ev(Aborted, ab, "", 0, "/s"),
	}
	c.approx(&v, Aborted, Finished)
	return v.holds("Aborted traffic: clients close requests before they finish. The latency figures describe only the requests that finished; about "+
		num(ab*c.windowSeconds())+" requests in the last "+c.windowText()+" did not.",
		"Check client timeouts and cancellations; if requests time out in the queue, see queue saturation.")
}

// abortedUncounted: without a per-reason finished counter, requests that
// start (prompt tokens are processed) while none finishes and none waits
// over the whole window are ended by their clients: the latency histograms
// see none of them.
func abortedUncounted(c *tctx, i int, fin float64, v verdict) verdict {
	v.notChecked = append(v.notChecked, c.missing(Aborted))
	prompt, ok := c.value(PromptTok, i)
	wait, okW := c.avg(Waiting, i)
	if ok && prompt > 0 && fin > 0 && !(okW && wait >= c.th.QueueWaitingMin) {
		return abortedByTurnover(c, i, fin, v)
	}
	if !ok || prompt <= 0 || fin > 0 || (okW && wait >= c.th.QueueWaitingMin) {
		return v
	}
	v.active = true
	v.evidence = []Evidence{
		ev(PromptTok, prompt, ">", 0, "/s"),
		{Signal: string(Finished), Value: fin, Op: "=", Threshold: 0, Unit: "/s", Note: "no request finished in the last " + c.window},
	}
	v.lowerTo(Medium, "no abort counter: requests that start and never finish are read as aborted by their clients")
	v.summary = "Aborted traffic: requests start (their prompts are processed) but none finishes in the last " + c.window +
		" and none waits: clients close them before the end. The latency histograms describe none of them."
	v.recommend = "Check client timeouts and cancellations (gateway logs); the engine exports no abort count here."
	abortEstimate(c, i, prompt, &v)
	return v
}

func ruleUnder(c *tctx, i int, prev bool) verdict {
	v := verdict{confidence: High}
	run, ok1 := c.avg(Running, i)
	wait, ok2 := c.avg(Waiting, i)
	if !ok1 || !ok2 {
		return v
	}
	if !c.below(run, c.th.UnderRunning, prev) || wait >= c.th.QueueWaitingMin {
		return v
	}
	if prog, ok := c.value(Progress, i); ok && prog <= 0 {
		if now, ok := c.value(Running, i); ok && now > 0 {
			return v // frozen: the stall rules speak
		}
	}
	// Idle SMs are the claim: without SM activity (no GPU agent or DCGM exporter for the
	// target) little load alone is not under-utilisation, and the class is not raised.
	if _, ok := c.value(SMActive, i); !ok {
		v.notChecked = append(v.notChecked, c.missing(SMActive))
		return v
	}
	v.evidence = []Evidence{ev(RunningAvg, run, "<", c.relax("<", c.th.UnderRunning, prev), "requests"), ev(WaitingAvg, wait, "<", c.th.QueueWaitingMin, "requests")}
	if !c.gpuCheck(&v, SMActive, i, "<", c.th.SMActiveLow, prev) {
		return v
	}
	c.gpusWhere(&v, SMActive, i, "<", c.th.SMActiveLow)
	return v.holds("Under-utilised: little load and idle SMs.",
		"Consolidate: serve this model from fewer replicas or share the GPU (e.g. lower --gpu-memory-utilization and co-locate).")
}

// windowSeconds is the rate window in seconds.
func (c *tctx) windowSeconds() float64 { return c.windowS }

func (c *tctx) windowText() string { return c.window }

// sortStrings returns a sorted copy without duplicates.
func sortStrings(s []string) []string {
	out := slices.Clone(s)
	sort.Strings(out)
	return slices.Compact(out)
}
