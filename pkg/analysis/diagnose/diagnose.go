package diagnose

import (
	"math"
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
	c := &tctx{in: t, th: th, ceiling: t.RunningCeiling,
		stall: durationText(in.StallWindow), window: durationText(in.Window), windowS: in.Window.Seconds()}
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
	// open runs: class → start index and the verdict at the latest step
	type run struct {
		start int
		last  verdict
	}
	open := map[Class]*run{}
	closeRun := func(cl Class, end int) {
		o := open[cl]
		delete(open, cl)
		r.Findings = append(r.Findings, finding(t.Name, cl, o.last, in.Steps[o.start], in.Steps[end]))
	}
	for i := 0; i < n; i++ {
		state, why := dataState(c, i)
		got := map[Class]verdict{}
		var notChecked []string
		if state == stateAnswering {
			r.Last = i
			for _, cl := range ruleOrder {
				v := rules[cl](c, i, i > 0 && r.Active[cl][i-1])
				notChecked = append(notChecked, v.notChecked...)
				if v.active {
					got[cl] = v
				}
			}
			notChecked = sortStrings(notChecked)
			if len(got) == 0 {
				got[Healthy] = healthy(c, i, notChecked)
			}
			// Every finding says what could not be checked at its step, not
			// only what its own rule lacked (e.g. throttling without GPU data).
			for cl, v := range got {
				v.notChecked = notChecked
				got[cl] = v
			}
		} else if state == stateDown {
			r.Last = i
			got[Unknown] = verdict{active: true, confidence: High, summary: "Cannot tell: " + why + ".",
				recommend: "Check that the target is up and its metrics page answers (see the targets query)."}
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
			if o, ok := open[cl]; ok {
				o.last = v
			} else {
				open[cl] = &run{start: i, last: v}
			}
		}
		for _, cl := range Classes {
			if _, ok := open[cl]; ok && !r.Active[cl][i] {
				closeRun(cl, i-1)
			}
		}
	}
	for _, cl := range Classes {
		if _, ok := open[cl]; ok {
			closeRun(cl, n-1)
			r.Findings[len(r.Findings)-1].Current = r.Last >= 0 && r.Active[cl][r.Last]
		}
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

// healthy is the verdict when no rule holds: the key signals as evidence and
// every check that could not be made.
func healthy(c *tctx, i int, notChecked []string) verdict {
	v := verdict{active: true, confidence: High, notChecked: notChecked,
		summary: "Healthy: no bottleneck rule holds."}
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
	case Preemptions, Finished, Aborted, PromptTok, GenTok, Progress:
		return "/s"
	}
	return "ratio"
}

func finding(target string, cl Class, v verdict, start, end time.Time) Finding {
	conf := v.confidence
	if conf == "" {
		conf = High
	}
	return Finding{Target: target, Class: cl, Severity: severities[cl], Confidence: conf, ConfidenceWhy: v.why,
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
		return rank[f[i].Class] < rank[f[j].Class]
	})
}

func durationText(d time.Duration) string {
	if d <= 0 {
		return "window"
	}
	return model.Duration(d).String()
}
