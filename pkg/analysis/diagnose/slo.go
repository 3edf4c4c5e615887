package diagnose

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"time"
)

// sloAt says, at step i, whether any objective of the target has data
// (known), whether every objective is met (met: all have data and reach
// their target; an objective without data may hide a breach), and which are
// breached (a per-gap reading of a TPOT objective under its target is
// neither: ObjectiveInput.breachedAt). itl is true when a breached objective is on inter-token
// latency or TPOT.
func (c *tctx) sloAt(i int) (known, met, itl bool, breached []string) {
	met = true
	for _, o := range c.in.Objectives {
		if !o.known(i) {
			met = false
			continue
		}
		known = true
		if !o.metAt(i) {
			met = false
		}
		if o.breachedAt(i) {
			breached = append(breached, o.Name)
			if o.Signal == "itl" || o.Signal == "tpot" || o.Signal == "decode_time" {
				itl = true
			}
		}
	}
	return known, met && known, itl, breached
}

// breachedOn names the objectives breached at step i whose stage is one of
// stages (e.g. "ttft", "e2e": the stages queueing lengthens).
func (c *tctx) breachedOn(i int, stages ...string) []string {
	var out []string
	for _, o := range c.in.Objectives {
		if o.breachedAt(i) && slices.Contains(stages, o.Signal) {
			out = append(out, o.Name)
		}
	}
	return out
}

// sloGate applies the SLO anchor at step i: when every objective of the
// target is met, the performance classes that hold are observations, not
// findings; they are removed from got and returned for the healthy
// verdict to mention. Faults (stall, frozen gauges, throttling, errors)
// stay: they are findings whatever the latency. A performance class that
// was a finding for a whole rate window of steps before (active) is kept
// for up to a minute of met steps (gateSteps), with a note, while its own
// rule still holds: an objective read over a short window is met and
// breached by turns, and a sustained finding would flap with it. A finding
// kept only by hold (its rule cleared) is not kept on a met step.
func (c *tctx) sloGate(i int, got map[Class]verdict, active map[Class][]bool) []verdict {
	if c.gateHold == nil {
		c.gateHold = map[Class]int{}
	}
	if _, met, _, _ := c.sloAt(i); !met {
		clear(c.gateHold)
		return nil
	}
	var observed []verdict
	for _, cl := range performanceClasses {
		v, ok := got[cl]
		if !ok {
			c.gateHold[cl] = 0
			continue
		}
		// A finding whose own rule has cleared (kept only by hold, heldFor > 0)
		// is over once every objective is met again: neither its evidence nor
		// the latency holds (issue 35: these were the false alarms at 15 s).
		if v.heldFor == 0 && (c.gateHold[cl] > 0 && c.gateHold[cl] < c.gateSteps() || c.gateHold[cl] == 0 && sustained(active[cl], i, c.maxHold())) {
			c.gateHold[cl]++
			v.evidence = append(slices.Clone(v.evidence), Evidence{Signal: "slo_met", Value: float64(c.gateHold[cl]), Unit: "steps",
				Note: fmt.Sprintf("every objective is met again; the finding is kept for up to %d steps (one minute) so it does not flap with the objectives", c.gateSteps())})
			got[cl] = v
			continue
		}
		c.gateHold[cl] = 0
		observed = append(observed, v)
		delete(got, cl)
	}
	return observed
}

// gateSteps is how many met steps sloGate keeps a sustained finding: one
// minute's worth (an objective read over a 60 s window flips within it),
// at least one step and at most one rate window.
func (c *tctx) gateSteps() int {
	if len(c.steps) < 2 || c.steps[1].Sub(c.steps[0]) <= 0 {
		return 0
	}
	n := int(math.Ceil(time.Minute.Seconds() / c.steps[1].Sub(c.steps[0]).Seconds()))
	return max(1, min(n, c.maxHold()))
}

// sustained reports whether a class held at each of the n steps before
// step i (n ≥ 1).
func sustained(active []bool, i, n int) bool {
	if n < 1 || i < n {
		return false
	}
	for k := i - n; k < i; k++ {
		if !active[k] {
			return false
		}
	}
	return true
}

// objectiveEvidence renders each objective's compliance at step i.
func (c *tctx) objectiveEvidence(i int) []Evidence {
	if c.objectiveNotes == nil {
		// The notes and names depend on the objective alone: written once per target, not per step.
		c.objectiveNotes = make([][2]string, len(c.in.Objectives))
		for k, o := range c.in.Objectives {
			note := fmt.Sprintf("share of requests with %s ≤ %s s over the last %s", o.Signal, num(o.Threshold), c.window)
			if o.PerGap {
				note = fmt.Sprintf("share of inter-token gaps ≤ %s s over the last %s (no per-request %s histogram: read from the gap histogram; a gap tail does not establish a per-request breach)", num(o.Threshold), c.window, o.Signal)
			}
			c.objectiveNotes[k] = [2]string{"slo " + o.Name, note}
		}
	}
	var out []Evidence
	for k, o := range c.in.Objectives {
		if i >= len(o.Good) || math.IsNaN(o.Good[i]) {
			continue
		}
		op := ">="
		if o.Good[i] < o.Target {
			op = "<"
		}
		out = append(out, Evidence{Signal: c.objectiveNotes[k][0], Value: o.Good[i], Op: op, Threshold: o.Target, Unit: "ratio", Note: c.objectiveNotes[k][1]})
	}
	return out
}

// insufficient decides insufficient_data at step i: no warning or critical
// class holds and either a rule's engine-side evidence held without the
// GPU signal it needs (undecided), or an objective is breached, no rule
// explains it and the GPU data that could is missing. The finding names
// the classes it could not decide and the missing signals.
func insufficient(c *tctx, i int, got map[Class]verdict, undecided, notChecked []string) (verdict, bool) {
	_, met, _, breached := c.sloAt(i)
	if len(got) > 0 || met {
		return verdict{}, false // another class explains the window, or every objective is met
	}
	var missingGPU []string
	for _, nc := range notChecked {
		for _, s := range []Signal{SMActive, DRAMActive, TensorActive, ClockRatio, Slowdown, GPUUtil} {
			if strings.HasPrefix(nc, string(s)+":") || strings.Contains(nc, " "+string(s)+":") {
				missingGPU = append(missingGPU, nc)
				break
			}
		}
	}
	missingGPU = sortStrings(missingGPU)
	v := verdict{active: true, confidence: High, notChecked: notChecked}
	switch {
	case len(undecided) > 0:
		v.summary = "Insufficient data: the engine's evidence fits " + strings.Join(sortStrings(undecided), ", ") +
			", but the GPU signal that tells it from a throttled or power-capped GPU is missing, so the cause is not named."
	case len(breached) > 0 && len(missingGPU) > 0:
		v.summary = "Insufficient data: objective " + strings.Join(breached, ", ") + " is breached and no engine-side rule explains it; " +
			"the GPU-side causes (throttling, power cap, compute- or bandwidth-bound steps) cannot be checked."
	default:
		return verdict{}, false
	}
	for _, m := range missingGPU {
		v.evidence = append(v.evidence, Evidence{Signal: "missing", Value: math.NaN(), Note: m})
	}
	v.evidence = append(v.evidence, c.objectiveEvidence(i)...)
	v.recommend = "Configure the target's GPU agent (targets[].agent; the inferscope agent or dcgm-exporter with profiling metrics) so SM, DRAM and clock signals can be read."
	return v, true
}

// errorSurge: a share of ended requests end with an error.
func ruleErrorSurge(c *tctx, i int, prev bool) verdict {
	v := verdict{confidence: High}
	er, ok1 := c.value(Errored, i)
	fin, ok2 := c.value(Finished, i)
	rej, okR := c.value(Rejected, i)
	if !okR {
		rej = 0
	}
	if (!ok1 || !ok2) && !okR {
		return v
	}
	if !ok1 {
		er = 0
	}
	if !ok2 {
		fin = 0
	}
	// Rejected requests never start, so they are not among the finished ones: the share is
	// (errored + rejected) / (finished + rejected).
	bad, total := er+rej, math.Max(fin, er)+rej
	if total <= 0 || !c.atLeast(bad/total, c.th.ErrorShare, prev) {
		return v
	}
	v.evidence = []Evidence{
		{Signal: "error_share", Value: bad / total, Op: ">=", Threshold: c.relax(">=", c.th.ErrorShare, prev), Unit: "ratio"},
	}
	if ok1 {
		v.evidence = append(v.evidence, ev(Errored, er, "", 0, "/s"))
	}
	if okR {
		v.evidence = append(v.evidence, ev(Rejected, rej, "", 0, "/s"))
	}
	summary := fmt.Sprintf("Error surge: about %s requests in the last %s ended with an error (HTTP 5xx or finished_reason=error).", num(bad*c.windowS), c.window)
	recommend := "Read the engine and gateway logs for the failing requests (out-of-memory, invalid requests, a crashed worker); an admission limit rejecting requests needs more replicas or a larger queue."
	if okR && rej > 0 {
		summary = fmt.Sprintf("Error surge: about %s requests in the last %s failed, %s of them refused at admission (HTTP 503, vllm:admission_rejections_total).", num(bad*c.windowS), c.window, num(rej*c.windowS))
		recommend = "Admission rejections (see the throughput query's rejections/s by reason) mean the engine refused work it had no room or state for: add replicas or raise the queue limit; read the engine logs for the other failures."
	}
	return v.holds(summary, recommend)
}

// ruleUnstableBatching: an inter-token-latency objective is breached and
// ITL moves with the running batch over the last minutes: across the
// steps of the last max(5, window) minutes the window-mean ITL and running
// count correlate (Pearson r ≥ 0.7), the batch swings by a factor of 2 or
// more and ITL by 1.5 or more: bursts of admissions stretch every decode
// step. Without objectives it is not evaluated (a swinging batch alone is
// normal).
func ruleUnstableBatching(c *tctx, i int, prev bool) verdict {
	v := verdict{confidence: High}
	known, _, itlBreach, breached := c.sloAt(i)
	if !known || !itlBreach {
		return v
	}
	var xs, ys []float64
	for k := i; k >= 0 && len(xs) < 20; k-- {
		if len(c.steps) > 0 && c.steps[i].Sub(c.steps[k]).Minutes() > 10 {
			break
		}
		x, ok1 := c.avg(Running, k)
		y, ok2 := c.value(ITLMean, k)
		if ok1 && ok2 {
			xs, ys = append(xs, x), append(ys, y)
		}
	}
	if len(xs) < 5 {
		return v
	}
	r := pearson(xs, ys)
	bx, by := spread(xs), spread(ys)
	if math.IsNaN(r) || !c.atLeast(r, 0.7, prev) || !c.atLeast(bx, 2, prev) || !c.atLeast(by, 1.5, prev) {
		return v
	}
	v.evidence = []Evidence{
		{Signal: "itl_running_correlation", Value: r, Op: ">=", Threshold: c.relax(">=", 0.7, prev), Unit: "ratio", Note: fmt.Sprintf("over the last %d steps", len(xs))},
		{Signal: "running_swing", Value: bx, Op: ">=", Threshold: c.relax(">=", 2, prev), Unit: "ratio", Note: "highest over lowest window-mean running"},
		{Signal: "itl_swing", Value: by, Op: ">=", Threshold: c.relax(">=", 1.5, prev), Unit: "ratio", Note: "highest over lowest window-mean ITL; objective " + strings.Join(breached, ", ") + " breached"},
	}
	return v.holds("Unstable batching: inter-token latency rises and falls with the running batch; bursts of admitted requests (and their prefills) stretch every decode step.",
		"Smooth admissions: cap the batch (--max-num-seqs) near the size that meets the ITL objective, lower --max-num-batched-tokens so prefills interleave in smaller chunks, or shape bursts at the gateway.")
}

func pearson(x, y []float64) float64 {
	n := float64(len(x))
	var mx, my float64
	for k := range x {
		mx += x[k] / n
		my += y[k] / n
	}
	var sxy, sxx, syy float64
	for k := range x {
		sxy += (x[k] - mx) * (y[k] - my)
		sxx += (x[k] - mx) * (x[k] - mx)
		syy += (y[k] - my) * (y[k] - my)
	}
	if sxx <= 0 || syy <= 0 {
		return math.NaN()
	}
	return sxy / math.Sqrt(sxx*syy)
}

// spread is the highest over the lowest value (+Inf when the lowest is 0).
func spread(x []float64) float64 {
	lo, hi := slices.Min(x), slices.Max(x)
	if lo <= 0 {
		return math.Inf(1)
	}
	return hi / lo
}

// ruleSmallBatches: requests run (mean running at least underRunning) but
// fewer than smallBatchRunning at a time, nothing waits, and the GPU's SMs
// (and DRAM, where known) are mostly idle: the hardware is larger than the
// load needs (under-use beyond under_utilised's fewer than one request).
func ruleSmallBatches(c *tctx, i int, prev bool) verdict {
	v := verdict{confidence: High}
	run, ok1 := c.avg(Running, i)
	wait, ok2 := c.avg(Waiting, i)
	sm, ok3 := c.value(SMActive, i)
	if !ok1 || !ok2 || !ok3 {
		return v
	}
	idle := c.th.GPUBusy / 2
	if run < c.th.UnderRunning || !c.below(run, c.th.SmallBatchRunning, prev) || wait >= c.th.QueueWaitingMin || !c.below(sm, idle, prev) {
		return v
	}
	if dram, ok := c.value(DRAMActive, i); ok && !c.below(dram, idle, prev) {
		return v
	}
	v.evidence = []Evidence{
		ev(RunningAvg, run, "<", c.relax("<", c.th.SmallBatchRunning, prev), "requests"),
		ev(WaitingAvg, wait, "<", c.th.QueueWaitingMin, "requests"),
		ev(SMActive, sm, "<", c.relax("<", idle, prev), "ratio"),
	}
	c.gpusWhere(&v, SMActive, i, "<", idle)
	return v.holds("Small batches: only a few requests run at a time and the GPU is mostly idle; the hardware is larger than this load needs.",
		"Consolidate: serve more models or replicas per GPU (lower --gpu-memory-utilization and co-locate), use a smaller GPU or partition it (MIG), or route more traffic here.")
}
