package diagnose

import (
	"fmt"
	"math"
	"sort"
	"strings"
)

// Issue 35: a window whose SLO is breached is never healthy (nor under-used).
// When no cause rule explains a breach, slo_breach_unexplained says so, with
// the evidence each candidate cause was checked on, why its rule did not
// hold, and the candidates ranked by how much of their evidence held.

// SLOBreachUnexplained: an objective of the target's SLO profile is breached
// (its attainment is below target in the window) and no cause rule holds.
// The finding lists every candidate cause with the conditions that held and
// those that did not, most likely first. Added by issue 35 (a new name: no
// shipped class was renamed); before it such windows read healthy.
const SLOBreachUnexplained Class = "slo_breach_unexplained"

// Signals added by issue 35.
const (
	// TokensPerStep is the mean tokens an engine step carries over the rate
	// window (rate of vllm:iteration_tokens_total's _sum over its _count):
	// about one per running sequence when the steps are decode steps.
	TokensPerStep Signal = "tokens_per_step" // #nosec G101 -- a signal name, not a credential
	// RunningMax and WaitingMax are the highest scraped value of the
	// request gauges inside the rate window (max_over_time at the scrape
	// interval): a burst shorter than the window shows in them at every
	// window, where RunningPeak and WaitingPeak are fetched only for long
	// windows.
	RunningMax Signal = "requests_running_max"
	WaitingMax Signal = "requests_waiting_max"
)

// queueTTFTShare is the share of mean TTFT spent queued above which
// requests wait for seats rather than for their prefill: with long outputs
// queue time is a small share of E2E while it is most of TTFT.
const queueTTFTShare = 0.5

// decodeStepTokens bounds tokens per engine step over running sequences for
// steps that are decode steps (one token per running sequence, with a
// little prefill riding along).
const decodeStepTokens = 1.5

func init() {
	severities[SLOBreachUnexplained] = Warning
}

// explains reports whether class cl, holding at a step, accounts for a
// breached objective: a fault or a performance class does, as does a
// verdict that says it cannot tell; an info class about load (under-use,
// small batches) or aborted traffic does not.
func explains(cl Class) bool {
	switch cl {
	case UnderUtilised, SmallBatches, AbortedTraffic, Healthy:
		return false
	}
	return true
}

// unexplainedBreach decides slo_breach_unexplained at step i: an objective
// is breached and no class of got explains it. ok is false otherwise. The
// caller removes under_utilised and small_batches from got when it holds:
// a breached window is never called under-used.
func unexplainedBreach(c *tctx, i int, got map[Class]verdict, notChecked []string) (verdict, bool) {
	_, _, _, breached := c.sloAt(i)
	if len(breached) == 0 {
		return verdict{}, false
	}
	for cl := range got {
		if explains(cl) {
			return verdict{}, false
		}
	}
	cands := breachCandidates(c, i)
	v := verdict{active: true, confidence: Medium, notChecked: notChecked}
	v.lowerTo(Medium, "no cause rule holds: the ranking below is by the share of each cause's evidence that held")
	v.evidence = append(v.evidence, c.objectiveEvidence(i)...)
	var names []string
	for k, cd := range cands {
		v.evidence = append(v.evidence, Evidence{Signal: "candidate " + string(cd.class), Value: cd.score, Unit: "ratio",
			Note: cd.text()})
		if k < 3 && cd.score > 0 {
			names = append(names, fmt.Sprintf("%s (%d of %d conditions)", cd.class, cd.held, cd.total))
		}
	}
	v.summary = "SLO breached, cause not established: objective " + strings.Join(breached, ", ") +
		" is breached and no cause rule holds."
	if len(names) > 0 {
		v.summary += " Likeliest: " + strings.Join(names, ", ") + "."
	}
	v.recommend = "Read the candidates' evidence (which conditions held, which did not); "
	if len(cands) > 0 && cands[0].score > 0 {
		v.recommend += "the likeliest, " + string(cands[0].class) + ": " + cands[0].advice
	} else {
		v.recommend += "check the latency breakdown (queue, prefill, decode) and the GPU query for this window."
	}
	return v, true
}

// check is one condition of a candidate cause: its evidence and whether it
// held (unknown when the signal had no value).
type check struct {
	ev      Evidence
	held    bool
	unknown bool
}

// candidate is one cause considered for an unexplained breach.
type candidate struct {
	class       Class
	checks      []check
	held, total int
	score       float64 // share of the conditions that held, plus 0.25 when the breached stage is one the cause lengthens
	stage       bool
	advice      string
}

func (cd candidate) text() string {
	var parts []string
	for _, k := range cd.checks {
		s := k.ev.String()
		switch {
		case k.unknown:
			s += " [not known]"
		case k.held:
			s += " [held]"
		default:
			s += " [did not hold]"
		}
		parts = append(parts, s)
	}
	if cd.stage {
		parts = append(parts, "the breached objective is on a stage this cause lengthens")
	}
	return strings.Join(parts, "; ")
}

// breachCandidates checks each cause's main conditions at step i and ranks
// the causes by the share that held (most likely first; ties in Classes
// order).
func breachCandidates(c *tctx, i int) []candidate {
	th := c.th
	ttft := len(c.breachedOn(i, "ttft", "e2e", "queue_time")) > 0
	tpot := len(c.breachedOn(i, "itl", "tpot", "decode_time", "e2e")) > 0
	cmp := func(sig string, x float64, ok bool, op string, thr float64, unit string) check {
		if !ok {
			return check{ev: Evidence{Signal: sig, Value: math.NaN(), Note: "no value"}, unknown: true}
		}
		held := (op == ">=" && x >= thr) || (op == "<" && x < thr) || (op == "<=" && x <= thr)
		return check{ev: Evidence{Signal: sig, Value: x, Op: op, Threshold: thr, Unit: unit}, held: held}
	}
	val := func(s Signal) (float64, bool) { return c.value(s, i) }
	wait, okW := c.avg(Waiting, i)
	run, okR := c.avg(Running, i)
	if m, ok := val(WaitingMax); ok && (!okW || m > wait) {
		wait, okW = m, true
	}
	if m, ok := val(RunningMax); ok && (!okR || m > run) {
		run, okR = m, true
	}
	q, okQ := val(QueueMean)
	tt, okT := val(TTFTMean)
	prompt, okP := val(PromptTok)
	gen, okG := val(GenTok)
	share, okShare := 0.0, okP && okG && prompt+gen > 0
	if okShare {
		share = prompt / (prompt + gen)
	}
	kv, okKV := val(KVUsage)
	pre, okPre := val(Preemptions)
	itl, okI := val(ITLMean)
	dram, okD := val(DRAMActive)
	sm, okSM := val(SMActive)
	clk, okC := val(ClockRatio)
	p50, ok50 := val(PromptP50)
	p99, ok99 := val(PromptP99)
	pf, okPF := val(PrefillMean)
	e2e, okE := val(E2EMean)
	inf, okInf := val(InferenceMean)
	tps, okTPS := val(TokensPerStep)
	var out []candidate
	add := func(cl Class, stage bool, advice string, checks ...check) {
		cd := candidate{class: cl, checks: checks, stage: stage, advice: advice}
		for _, k := range checks {
			if k.unknown {
				continue
			}
			cd.total++
			if k.held {
				cd.held++
			}
		}
		if cd.total > 0 {
			cd.score = float64(cd.held) / float64(cd.total)
		}
		if stage && cd.score > 0 {
			cd.score += 0.25
		}
		out = append(out, cd)
	}
	ceil := th.RunningCeilingRatio * c.ceiling
	queueShare := check{ev: Evidence{Signal: "queue_share_of_ttft", Value: math.NaN(), Note: "no value"}, unknown: true}
	if okQ && okT && tt > 0 {
		queueShare = cmp("queue_share_of_ttft", q/tt, true, ">=", queueTTFTShare, "ratio")
	}
	add(QueueSaturation, ttft, "add replicas or raise --max-num-seqs if the KV cache has headroom.",
		cmp(string(WaitingAvg)+" (or its scraped maximum)", wait, okW, ">=", th.QueueWaitingMin, "requests"),
		cmp(string(RunningAvg)+" (or its scraped maximum)", run, okR && c.ceiling > 0, ">=", ceil, "requests"),
		queueShare)
	add(KVPressure, ttft || tpot, "lower --max-model-len or --max-num-seqs, or give the KV cache more memory.",
		cmp(string(KVUsage), kv, okKV, ">=", th.KVUsageHigh, "ratio"),
		cmp(string(Preemptions), pre, okPre, ">=", th.PreemptionsPerSecond, "/s"))
	ppr, okPPR := c.promptPerRequest(i)
	add(PrefillCompute, ttft, "raise --max-num-batched-tokens, enable prefix caching, or add replicas.",
		cmp("prompt_token_share", share, okShare, ">=", th.PrefillTokenShare, "ratio"),
		cmp(string(SMActive), sm, okSM, ">=", th.SMActiveHigh, "ratio"),
		cmp("prompt_tokens_per_request", ppr, okPPR, ">=", th.LongPromptTokens, "tokens"))
	stepTok := check{ev: Evidence{Signal: "tokens_per_step_per_running", Value: math.NaN(), Note: "no value"}, unknown: true}
	if okTPS && okR && run > 0 {
		r0, _ := c.avg(Running, i)
		stepTok = cmp("tokens_per_step_per_running", tps/math.Max(r0, 1), true, "<=", decodeStepTokens, "ratio")
	}
	add(DecodeMemory, tpot, "quantise weights and KV cache, use speculative decoding, or lower --max-num-seqs.",
		cmp(string(ITLMean), itl, okI, ">=", th.ITLHigh, "s"),
		cmp("prompt_token_share", share, okShare, "<", 0.5, "ratio"),
		stepTok,
		cmp(string(DRAMActive), dram, okD, ">=", th.DRAMActiveHigh, "ratio"))
	tail := check{ev: Evidence{Signal: "prompt_tail_ratio", Value: math.NaN(), Note: "no value"}, unknown: true}
	if ok50 && ok99 && p50 > 0 {
		tail = cmp("prompt_tail_ratio", p99/p50, true, ">=", th.HOLTailRatio, "ratio")
	}
	ttftPre := check{ev: Evidence{Signal: "ttft_over_prefill", Value: math.NaN(), Note: "no value"}, unknown: true}
	if okT && okPF && pf > 0 {
		ttftPre = cmp("ttft_over_prefill", tt/pf, true, ">=", th.HOLTTFTRatio, "ratio")
	}
	add(HeadOfLine, ttft, "limit long prefills per step (--max-long-partial-prefills, --long-prefill-token-threshold) or route long prompts apart.",
		cmp(string(PromptP99), p99, ok99, ">=", th.HOLTailTokens, "tokens"), tail, ttftPre)
	fe := check{ev: Evidence{Signal: "frontend_share_of_e2e", Value: math.NaN(), Note: "no value"}, unknown: true}
	if okE && okQ && okInf && e2e > 0 && c.in.Generation != "v0" {
		fe = cmp("frontend_share_of_e2e", (e2e-q-inf)/e2e, true, ">=", th.FrontendShare, "ratio")
	}
	add(FrontendOverhead, ttft, "give the API server more CPU (--api-server-count) and profile the frontend.", fe)
	add(GPUThrottled, ttft || tpot, "check cooling, power limits and clocks (nvidia-smi -q -d PERFORMANCE,POWER,CLOCK).",
		cmp(string(ClockRatio), clk, okC, "<", th.ClockRatioMin, "ratio"))
	sort.SliceStable(out, func(a, b int) bool { return out[a].score > out[b].score })
	return out
}

// queueShareOfTTFT reports whether mean queue time q is at least
// queueTTFTShare of mean TTFT at step i (relaxed while the finding held)
// while a TTFT, E2E or queue-time objective is breached, and adds the
// evidence to v: requests wait for seats, not for their prefill, however
// long their decode makes E2E. Without the breach it does not hold: with
// fast prefills a few milliseconds of queue are a large share of a small
// TTFT.
func queueShareOfTTFT(c *tctx, i int, q float64, prev bool, v *verdict) bool {
	tt, ok := c.value(TTFTMean, i)
	breached := c.breachedOn(i, "ttft", "e2e", "queue_time")
	if !ok || tt <= 0 || len(breached) == 0 || !c.atLeast(q/tt, queueTTFTShare, prev) {
		return false
	}
	v.evidence = append(v.evidence, Evidence{Signal: "queue_share_of_ttft", Value: q / tt, Op: ">=", Threshold: c.relax(">=", queueTTFTShare, prev), Unit: "ratio",
		Note: fmt.Sprintf("mean queue %s s of mean TTFT %s s: requests wait for seats, not for their prefill; objective %s is breached", num(q), num(tt), strings.Join(breached, ", "))})
	c.approx(v, QueueMean, TTFTMean)
	return true
}

// burstByMaxima reads a burst from the highest scraped values of waiting and
// running inside the rate window (WaitingMax, RunningMax): at least
// QueueWaitingMin waiting and running at RunningCeilingRatio of the ceiling
// at some scrape, while a TTFT, E2E or queue-time objective is breached (a
// single scrape is weak evidence alone; the breach says the wait mattered).
// Against the observed plateau too: the breach, not the plateau, carries
// it, with the window's mean queue time at least burstQueueShare of its mean
// TTFT. It returns the maxima (waiting net of deferred requests).
func (c *tctx) burstByMaxima(i int, prev bool) (wait, run float64, ok bool) {
	mw, ok1 := c.value(WaitingMax, i)
	mr, ok2 := c.value(RunningMax, i)
	if !ok1 || !ok2 || c.ceiling <= 0 || len(c.breachedOn(i, "ttft", "e2e", "queue_time")) == 0 {
		return 0, 0, false
	}
	if d, okD := c.value(WaitingDeferred, i); okD {
		mw = math.Max(0, mw-d)
	}
	if !c.atLeast(mw, c.th.QueueWaitingMin, prev) || !c.atLeast(mr, c.th.RunningCeilingRatio*c.ceiling, prev) {
		return 0, 0, false
	}
	// The window's requests queued: mean queue time at least burstQueueShare of mean TTFT
	// (a latency added outside the queue, e.g. a slow frontend, breaches TTFT while the
	// batch touches its observed plateau at one scrape).
	q, okQ := c.value(QueueMean, i)
	tt, okT := c.value(TTFTMean, i)
	if !okQ || !okT || tt <= 0 || !c.atLeast(q/tt, burstQueueShare, prev) {
		return 0, 0, false
	}
	return mw, mr, true
}

// burstQueueShare is the share of mean TTFT spent queued that a burst read
// from the scraped maxima needs (the burst's queueing diluted by the rest of
// the window).
const burstQueueShare = 0.25

// decodeITLShare is the share of a breached per-token objective's threshold
// that mean ITL reaches when the decode steps themselves are slow.
const decodeITLShare = 0.5

// breachedTokenThreshold is the lowest threshold (s) of the per-token (ITL,
// TPOT, decode time) objectives breached at step i, 0 when none is.
func (c *tctx) breachedTokenThreshold(i int) float64 {
	thr := 0.0
	for _, o := range c.in.Objectives {
		if o.breachedAt(i) && (o.Signal == "itl" || o.Signal == "tpot" || o.Signal == "decode_time") {
			if thr == 0 || o.Threshold < thr {
				thr = o.Threshold
			}
		}
	}
	return thr
}

// perGapUnmet returns the lowest threshold (s) and the name of the
// per-token objectives read from the gap histogram (PerGap) whose reading
// at step i is under target (neither met nor breached), 0 when none is.
func (c *tctx) perGapUnmet(i int) (float64, string) {
	thr, name := 0.0, ""
	for _, o := range c.in.Objectives {
		if o.PerGap && o.known(i) && !o.metAt(i) && (thr == 0 || o.Threshold < thr) {
			thr, name = o.Threshold, o.Name
		}
	}
	return thr, name
}

// burstMaximaSummary is the queue finding's summary when the scraped maxima carry it.
const burstMaximaSummary = "Queue saturation in a burst: at some scrape inside the window requests waited while the running batch sat at its ceiling, and a TTFT or E2E objective is breached."

func maximaNote(c *tctx) string {
	return fmt.Sprintf("highest scraped value inside the %s window: a burst the window mean dilutes, with a TTFT or E2E objective breached", c.window)
}

// decodeSteps is the decode rule's engine-side evidence where DRAM activity
// does not reach DRAMActiveHigh (a reading of one hardware counter is
// support, not a gate): the engine's steps are decode steps — tokens per
// step about one per running sequence (at most decodeStepTokens), and
// prompt tokens under half of those processed, and mean ITL at least
// decodeITLShare of the breached per-token objective's threshold — so the
// step time the breached objective measures is the decode batch's. The verdict
// is then at medium confidence and says that DRAM did not corroborate.
// Without tokens per step (an engine without iteration_tokens) it does
// not hold.
func decodeSteps(c *tctx, i int, prev bool, v *verdict) bool {
	tps, ok1 := c.value(TokensPerStep, i)
	run, ok2 := c.avg(Running, i)
	prompt, ok3 := c.value(PromptTok, i)
	gen, ok4 := c.value(GenTok, i)
	if !ok1 || !ok2 || !ok3 || !ok4 || run < 1 || prompt+gen <= 0 {
		return false
	}
	perSeq := tps / run
	share := prompt / (prompt + gen)
	if perSeq > c.relax("<", decodeStepTokens, prev) || !c.below(share, 0.5, prev) {
		return false
	}
	// The decode step itself is slow: mean ITL at least half the breached per-token
	// objective's threshold (a breach by a few stretched gaps, with fast steps, is not
	// decode-bound).
	itl, okI := c.value(ITLMean, i)
	if thr := c.breachedTokenThreshold(i); thr > 0 && (!okI || !c.atLeast(itl, decodeITLShare*thr, prev)) {
		return false
	}
	v.evidence = append(v.evidence,
		Evidence{Signal: "tokens_per_step_per_running", Value: perSeq, Op: "<=", Threshold: c.relax("<", decodeStepTokens, prev), Unit: "ratio",
			Note: fmt.Sprintf("%s tokens per engine step for %s running: the steps are decode steps", num(tps), num(run))},
		Evidence{Signal: "prompt_token_share", Value: share, Op: "<", Threshold: c.relax("<", 0.5, prev), Unit: "ratio"})
	if itl, ok := c.value(ITLMean, i); ok && run > 0 {
		v.evidence = append(v.evidence, Evidence{Signal: "itl_per_running", Value: itl / run, Unit: "s",
			Note: "mean ITL over mean running: the decode cost per sequence per step"})
	}
	if d, ok := c.value(DRAMActive, i); ok {
		v.evidence = append(v.evidence, Evidence{Signal: string(DRAMActive), Value: d, Op: "<", Threshold: c.th.DRAMActiveHigh, Unit: "ratio",
			Note: "DRAM activity does not corroborate; the engine's telemetry decides"})
	}
	v.lowerTo(Medium, "DRAM activity below its threshold: decode-bound from the engine's telemetry (tokens per step, running, the breached per-token objective)")
	return true
}
