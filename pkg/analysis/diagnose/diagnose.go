package diagnose

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/prometheus/common/model"

	"github.com/inferscope/inferscope-llm-datasource/pkg/settings"
)

// Diagnose classifies every target at every step and gathers the runs of
// each class into findings. A class holds at a step when its rule's
// conditions all hold (thresholds from th, relaxed by th.Hysteresis while
// the class held at the previous step); the primary class is the first
// holding class in Classes order, healthy when none holds and the target
// answered, cannot_tell when its page did not answer or no signal had data.
// It never panics on missing, short or NaN inputs: a missing signal makes
// the rules that need it say so in NotChecked.
func Diagnose(in Input, th settings.Diagnosis) Result {
	res := Result{Steps: in.Steps}
	for k := range in.Targets {
		res.Targets = append(res.Targets, diagnoseTarget(&in.Targets[k], in, &th))
	}
	return res
}

// ruleOrder is Classes without Healthy and Unknown, which are decided from the others.
var ruleOrder = func() []Class {
	var out []Class
	for _, c := range Classes {
		if _, ok := rules[c]; ok {
			out = append(out, c)
		}
	}
	return out
}()

func diagnoseTarget(t *TargetInput, in Input, th *settings.Diagnosis) TargetResult {
	n := len(in.Steps)
	// Each objective's breached steps, once (breachedAt reads a whole run of
	// readings under target), on a copy: the caller's input is not changed.
	tc := *t
	tc.Objectives = slices.Clone(t.Objectives)
	for k := range tc.Objectives {
		tc.Objectives[k].breach = tc.Objectives[k].breachSteps()
	}
	t = &tc
	c := &tctx{in: t, th: th, ceiling: t.RunningCeiling, stopRun: -1, steps: in.Steps, stallD: in.StallWindow,
		stall: durationText(in.StallWindow), window: durationText(in.Window), windowS: in.Window.Seconds(), scrapeD: in.Scrape}
	if c.ceiling <= 0 {
		c.plateau = true
		c.ceiling = 0
		for _, v := range t.Values[Running] {
			if !math.IsNaN(v) && v > c.ceiling {
				c.ceiling = v
			}
		}
	}
	r := TargetResult{Target: t.Name, Primary: make([]Class, n), Active: map[Class][]bool{}, Last: -1}
	for _, cl := range Classes {
		r.Active[cl] = make([]bool, n)
	}
	perGPU := len(t.GPUs) > 0
	if perGPU {
		r.GPUActive = map[string][]bool{}
		for _, g := range t.GPUs {
			r.GPUs = append(r.GPUs, g.GPURef)
			r.GPUActive[g.GPU] = make([]bool, n)
		}
	}
	// open runs: (class, GPU) → start index and the verdict at the latest
	// step. GPU is "" except for gpu_throttled with per-GPU data.
	type key struct {
		cl  Class
		gpu string
	}
	type run struct {
		start int
		last  verdict
	}
	open := map[key]*run{}
	lastHeld := map[Class]verdict{}
	closeRun := func(k key, end int) {
		o := open[k]
		delete(open, k)
		r.Findings = append(r.Findings, finding(t.Name, k.cl, o.last, in.Steps[o.start], in.Steps[end]))
	}
	holds := func(k key, i int) bool {
		if k.gpu != "" {
			return r.GPUActive[k.gpu][i]
		}
		return r.Active[k.cl][i]
	}
	// One step's verdicts; the maps are emptied and used again at every step (nothing keeps
	// them past their step: runs and lastHeld copy the verdicts).
	got := map[Class]verdict{}
	gotGPU := map[string]verdict{}
	for i := 0; i < n; i++ {
		state, why := dataState(c, i)
		clear(got)
		clear(gotGPU)
		var notChecked []string
		c.step = i
		if state == stateAnswering {
			r.Last = i
			c.trackStall(i)
			var undecided []string
			for _, cl := range ruleOrder {
				// Data quality first: while the engine is stalled or its
				// gauges are frozen, every rule but the GPU's reads stale
				// values and is not evaluated.
				if (got[Stalled].active || got[IdleStaleGauges].active) && cl != GPUThrottled {
					continue
				}
				var v verdict
				if cl == GPUThrottled && perGPU {
					v = c.throttledPerGPU(i, r.GPUActive, gotGPU)
				} else {
					v = rules[cl](c, i, i > 0 && r.Active[cl][i-1])
				}
				notChecked = append(notChecked, v.notChecked...)
				if v.active {
					got[cl] = v
				} else if v.undecided != "" {
					undecided = append(undecided, v.undecided)
				}
			}
			notChecked = sortStrings(notChecked)
			c.hold(i, got, r.Active, lastHeld)
			observed := c.sloGate(i, got, r.Active)
			if v, ok := insufficient(c, i, got, undecided, notChecked); ok {
				got[InsufficientData] = v
			}
			// Issue 35: a breached objective is never healthy or under-used.
			if v, ok := unexplainedBreach(c, i, got, notChecked); ok {
				delete(got, UnderUtilised)
				delete(got, SmallBatches)
				got[SLOBreachUnexplained] = v
			}
			if len(got) == 0 {
				got[Healthy] = healthy(c, i, notChecked, observed)
			}
			// Every finding says what could not be checked at its step, not
			// only what its own rule lacked (e.g. throttling without GPU data).
			for cl, v := range got {
				v.notChecked = notChecked
				got[cl] = v
				if v.heldFor == 0 {
					lastHeld[cl] = v
				}
			}
			for g, v := range gotGPU {
				v.notChecked = notChecked
				gotGPU[g] = v
				r.GPUActive[g][i] = true
			}
		} else if state == stateDown {
			r.Last = i
			got[Unknown] = verdict{active: true, confidence: High, summary: "Cannot tell: " + why + ".",
				recommend: "Check that the target is up and its metrics page answers (see the targets query)."}
		}
		track := func(k key, v verdict) {
			if o, ok := open[k]; ok {
				o.last = v
			} else {
				open[k] = &run{start: i, last: v}
			}
		}
		for _, cl := range Classes {
			v, ok := got[cl]
			if !ok {
				continue
			}
			r.Active[cl][i] = true
			if r.Primary[i] == "" {
				r.Primary[i] = cl
			}
			if cl == GPUThrottled && perGPU {
				continue // the per-GPU runs below carry the findings
			}
			track(key{cl: cl}, v)
		}
		for _, g := range t.GPUs {
			if v, ok := gotGPU[g.GPU]; ok {
				track(key{cl: GPUThrottled, gpu: g.GPU}, v)
			}
		}
		for k := range open {
			if !holds(k, i) {
				closeRun(k, i-1)
			}
		}
	}
	keys := make([]key, 0, len(open))
	for k := range open {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(a, b int) bool {
		if keys[a].cl != keys[b].cl {
			return keys[a].cl < keys[b].cl
		}
		return keys[a].gpu < keys[b].gpu
	})
	for _, k := range keys {
		closeRun(k, n-1)
		r.Findings[len(r.Findings)-1].Current = r.Last >= 0 && holds(k, r.Last)
	}
	sortFindings(r.Findings)
	return r
}

const (
	stateNoData = iota
	stateDown
	stateAnswering
)

// dataState says whether the target's page answered a scrape of the stall
// window ending at step i (Up = 1), did not (Up = 0: cannot tell), or there is no data at all (before the
// target's first scrape). Without an Up signal, any engine value counts as
// answering.
func dataState(c *tctx, i int) (int, string) {
	if up, ok := c.value(Up, i); ok {
		if up >= 1 {
			return stateAnswering, ""
		}
		return stateDown, "the metrics page answered no scrape in the stall window"
	}
	for _, s := range []Signal{Running, Waiting, Progress, GenTok, Finished, KVUsage} {
		if _, ok := c.value(s, i); ok {
			return stateAnswering, ""
		}
	}
	return stateNoData, ""
}

// held are the classes a finding keeps for up to one rate window after its
// condition stops holding (see hold): a class whose evidence hovers at a
// threshold does not flap A → B → A at a step shorter than its window.
var held = []Class{GPUThrottled, PowerCap, KVPressure, PrefillCompute, QueueSaturation, DecodeMemory, HeadOfLine,
	UnstableBatching, FrontendOverhead, AbortedTraffic, InsufficientData, UnderUtilised, SmallBatches, ErrorSurge}

// hold keeps, at step i, each class of held that held at step i−1 but not
// now, for as many steps as one rate window spans (the rates behind it
// still include the steps where it held), unless the stall or frozen-gauge
// rules now hold. The kept verdict is the last one whose condition held,
// with a note saying so.
func (c *tctx) hold(i int, got map[Class]verdict, active map[Class][]bool, last map[Class]verdict) {
	if c.holdCount == nil {
		c.holdCount = map[Class]int{}
	}
	if i == 0 || got[Stalled].active || got[IdleStaleGauges].active || len(c.steps) < 2 {
		clear(c.holdCount)
		return
	}
	maxHold := c.maxHold()
	for _, cl := range held {
		if _, ok := got[cl]; ok || !active[cl][i-1] {
			continue
		}
		v, ok := last[cl]
		if !ok || (cl == GPUThrottled && !c.throttleLingers(i)) {
			continue
		}
		if c.holdCount[cl] >= maxHold {
			continue
		}
		v.heldFor = c.holdCount[cl] + 1
		v.evidence = append(slices.Clone(v.evidence), heldEvidence(c, v.heldFor))
		got[cl] = v
	}
	for _, cl := range held {
		if v, ok := got[cl]; ok {
			c.holdCount[cl] = v.heldFor
		} else {
			c.holdCount[cl] = 0
		}
	}
}

// maxHold is the number of steps one rate window spans (0 without a step).
func (c *tctx) maxHold() int {
	if len(c.steps) < 2 || c.steps[1].Sub(c.steps[0]) <= 0 {
		return 0
	}
	return int(math.Ceil(c.windowS / c.steps[1].Sub(c.steps[0]).Seconds()))
}

func heldEvidence(c *tctx, n int) Evidence {
	return Evidence{Signal: "held", Value: float64(n), Unit: "steps",
		Note: fmt.Sprintf("the condition cleared; the finding is kept for up to one %s window (%d steps) so it does not flap", c.window, c.maxHold())}
}

// healthy is the verdict when no rule holds: the key signals as evidence and
// every check that could not be made.
func healthy(c *tctx, i int, notChecked []string, observed []verdict) verdict {
	v := verdict{active: true, confidence: High, notChecked: notChecked,
		summary: "Healthy: no bottleneck rule holds."}
	if len(observed) > 0 {
		var parts []string
		for _, o := range observed {
			parts = append(parts, o.summary)
		}
		v.summary = "Healthy: every objective is met. Observed (not a problem while the objectives hold): " + strings.Join(parts, " ")
	}
	v.evidence = append(v.evidence, c.objectiveEvidence(i)...)
	for _, s := range []Signal{Running, Waiting, KVUsage, Preemptions, TTFTMean, ITLMean, SMActive} {
		if x, ok := c.value(s, i); ok {
			v.evidence = append(v.evidence, Evidence{Signal: string(s), Value: x, Unit: unitOf(s)})
		}
	}
	if len(notChecked) > 0 {
		conf := Medium
		for _, nc := range notChecked {
			if strings.HasPrefix(nc, string(Progress)+":") || strings.HasPrefix(nc, string(UpMin)+":") {
				conf = Low // a stall could not be ruled out
			}
		}
		v.lowerTo(conf, "some rules could not be checked (see not checked)")
	}
	return v
}

func unitOf(s Signal) string {
	switch s {
	case Running, Waiting, WaitingSpan:
		return "requests"
	case TTFTMean, ITLMean, QueueMean, PrefillMean, InferenceMean, E2EMean:
		return "s"
	case Preemptions, Finished, Aborted, PromptTok, GenTok, Progress, DecodeSteps, FirstTokens:
		return "/s"
	case PromptP50, PromptP99:
		return "tokens"
	}
	return "ratio"
}

func finding(target string, cl Class, v verdict, start, end time.Time) Finding {
	conf := v.confidence
	if conf == "" {
		conf = High
	}
	return Finding{Target: target, GPUs: v.gpus, Class: cl, Severity: severities[cl], Confidence: conf, ConfidenceWhy: v.why,
		Evidence: v.evidence, NotChecked: v.notChecked, Summary: v.summary, Recommendation: v.recommend,
		Start: start, End: end}
}

// sortFindings orders findings by start, then by class priority.
func sortFindings(f []Finding) {
	rank := map[Class]int{}
	for k, c := range Classes {
		rank[c] = k
	}
	sort.SliceStable(f, func(i, j int) bool {
		if !f[i].Start.Equal(f[j].Start) {
			return f[i].Start.Before(f[j].Start)
		}
		if f[i].Class != f[j].Class {
			return rank[f[i].Class] < rank[f[j].Class]
		}
		gi, _ := f[i].GPUList()
		gj, _ := f[j].GPUList()
		return gi < gj
	})
}

func durationText(d time.Duration) string {
	if d <= 0 {
		return "window"
	}
	return model.Duration(d).String()
}
