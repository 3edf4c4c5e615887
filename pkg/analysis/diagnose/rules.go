package diagnose

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"

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
}

// value returns signal s at step i; ok is false when the signal is
// unavailable or has no data at that step.
func (c *tctx) value(s Signal, i int) (float64, bool) {
	v, ok := c.in.Values[s]
	if !ok || i >= len(v) || math.IsNaN(v[i]) || math.IsInf(v[i], 0) {
		return math.NaN(), false
	}
	return v[i], true
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

// missing explains why signal s has no value at step i.
func (c *tctx) missing(s Signal) string {
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

// atLeast / below compare with a threshold relaxed by the hysteresis share
// while the finding was active at the previous step.
func (c *tctx) atLeast(v, thr float64, prev bool) bool {
	if prev {
		thr *= 1 - c.th.Hysteresis
	}
	return v >= thr
}

func (c *tctx) below(v, thr float64, prev bool) bool {
	if prev {
		thr *= 1 + c.th.Hysteresis
	}
	return v < thr
}

func ev(sig Signal, v float64, op string, thr float64, unit string) Evidence {
	return Evidence{Signal: string(sig), Value: v, Op: op, Threshold: thr, Unit: unit}
}

// rule evaluates one class at step i; prev says whether the class held at step i−1.
type rule func(c *tctx, i int, prev bool) verdict

var rules = map[Class]rule{
	Stalled:          ruleStalled,
	IdleStaleGauges:  ruleIdleStale,
	GPUThrottled:     ruleThrottled,
	KVPressure:       ruleKV,
	QueueSaturation:  ruleQueue,
	HeadOfLine:       ruleHOL,
	PrefillCompute:   rulePrefill,
	DecodeMemory:     ruleDecode,
	FrontendOverhead: ruleFrontend,
	AbortedTraffic:   ruleAborted,
	UnderUtilised:    ruleUnder,
}

var severities = map[Class]Severity{
	Stalled: Critical, GPUThrottled: Warning, KVPressure: Warning, QueueSaturation: Warning,
	HeadOfLine: Warning, PrefillCompute: Warning, DecodeMemory: Warning, FrontendOverhead: Warning,
	AbortedTraffic: Info, IdleStaleGauges: Info, UnderUtilised: Info, Healthy: OK, Unknown: Info,
}

// frozen evaluates the shared part of the stall and stale-gauge rules: the
// page answered every scrape of the stall window, work is pending and no
// progress counter advanced. ok is false when a needed signal is missing.
func frozen(c *tctx, i int) (ev0 []Evidence, pending bool, stopped bool, notChecked []string, ok bool) {
	up, okUp := c.value(UpMin, i)
	prog, okProg := c.value(Progress, i)
	run, okRun := c.value(Running, i)
	wait, okWait := c.value(Waiting, i)
	if !okUp || !okProg || (!okRun && !okWait) {
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
	ev0 = []Evidence{
		{Signal: string(Progress), Value: prog, Op: "=", Threshold: 0, Unit: "/s", Note: "generation tokens + finished requests + engine steps over the last " + c.stall},
		{Signal: "page_answered", Value: up, Op: "=", Threshold: 1, Unit: "ratio", Note: "every scrape of the last " + c.stall + " answered"},
	}
	if okRun {
		ev0 = append(ev0, ev(Running, run, "", 0, "requests"))
	}
	if okWait {
		ev0 = append(ev0, ev(Waiting, wait, "", 0, "requests"))
	}
	return ev0, pending, stopped, nil, true
}

func ruleStalled(c *tctx, i int, _ bool) verdict {
	v := verdict{confidence: High}
	e, pending, stopped, nc, ok := frozen(c, i)
	if !ok {
		v.notChecked = nc
		return v
	}
	if !pending || !stopped {
		return v
	}
	span, okSpan := c.value(WaitingSpan, i)
	if !okSpan || span <= 0 {
		return v // gauges frozen too: ruleIdleStale
	}
	v.active = true
	v.evidence = append(e, Evidence{Signal: string(WaitingSpan), Value: span, Op: ">", Threshold: 0, Unit: "requests",
		Note: "the waiting gauge moved: requests keep arriving"})
	if run, ok := c.value(Running, i); ok && run == 0 {
		v.evidence = append(v.evidence, Evidence{Signal: "note", Value: run, Unit: "requests", Note: "running reads 0 while requests wait: a healthy-looking gauge on a dead engine"})
	}
	if util, ok := c.value(GPUUtil, i); ok {
		if sm, ok2 := c.value(SMActive, i); ok2 && util >= 0.5 && sm < c.th.SMActiveLow {
			v.evidence = append(v.evidence, Evidence{Signal: "gpu_util vs sm_active", Value: util, Op: ">=", Threshold: 0.5, Unit: "ratio",
				Note: fmt.Sprintf("a kernel is resident but SMs are idle (sm_active %s): the pattern of a hung collective", num(sm))})
		}
	}
	v.summary = fmt.Sprintf("Stalled: work is pending but no progress counter advanced for %d scrapes while the metrics page keeps answering.", c.th.StallScrapes)
	v.recommend = "Drain and restart the replica (the engine core is hung; /health may still answer 200). Check the engine log for a hung collective (NCCL) or a dead worker; consider --enable-fault-tolerance or a liveness probe on token progress."
	return v
}

func ruleIdleStale(c *tctx, i int, _ bool) verdict {
	v := verdict{confidence: Medium, why: []string{"without an arrival counter, a stall with no new requests looks the same"}}
	e, pending, stopped, _, ok := frozen(c, i)
	if !ok || !pending || !stopped {
		return v
	}
	span, okSpan := c.value(WaitingSpan, i)
	if !okSpan || span > 0 {
		return v
	}
	v.active = true
	v.evidence = append(e, Evidence{Signal: string(WaitingSpan), Value: span, Op: "=", Threshold: 0, Unit: "requests", Note: "the request gauges did not move: nothing arrives"})
	v.summary = "Idle engine with stale gauges: nothing arrives and nothing finishes, yet the request gauges still show work (vLLM leaves them unchanged after a mass cancel). Not a stall."
	v.recommend = "No action needed if no client is waiting. If clients are waiting, send a probe request: a probe that never completes means a stall (restart the replica)."
	return v
}

func ruleThrottled(c *tctx, i int, prev bool) verdict {
	v := verdict{confidence: High}
	slow, ok1 := c.value(Slowdown, i)
	clk, ok2 := c.value(ClockRatio, i)
	if !ok1 || !ok2 {
		if !ok1 {
			v.notChecked = append(v.notChecked, c.missing(Slowdown))
		}
		if !ok2 {
			v.notChecked = append(v.notChecked, c.missing(ClockRatio))
		}
		return v
	}
	if slow < 1 || !c.below(clk, c.th.ClockRatioMin, prev) {
		return v
	}
	v.active = true
	reasons := "slowdown reason active"
	if i < len(c.in.SlowdownReasons) && c.in.SlowdownReasons[i] != "" {
		reasons = c.in.SlowdownReasons[i]
	}
	v.evidence = []Evidence{
		{Signal: "throttle_reasons", Value: 1, Op: "=", Threshold: 1, Note: reasons},
		ev(ClockRatio, clk, "<", c.th.ClockRatioMin, "ratio"),
	}
	v.summary = "GPU throttled: a hardware-slowdown, thermal or power-brake reason is active and the SM clock is below its maximum."
	v.recommend = "Check cooling (inlet temperature, fans), power limits (nvidia-smi -q -d PERFORMANCE,POWER) and the node itself; move the replica off a bad node."
	return v
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
	for k := range c.in.GPUs {
		g := &c.in.GPUs[k]
		v := ruleThrottled(c.forGPU(g), i, i > 0 && active[g.GPU][i-1])
		for _, nc := range v.notChecked {
			out.notChecked = append(out.notChecked, "gpu "+g.GPU+" "+nc)
		}
		if !v.active {
			continue
		}
		v.gpus = []GPURef{g.GPURef}
		v.summary = "GPU " + g.GPU + " throttled: a hardware-slowdown, thermal or power-brake reason is active and its SM clock is below its maximum."
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
	v.evidence = []Evidence{ev(KVUsage, kv, ">=", c.th.KVUsageHigh, "ratio")}
	pre, okP := c.value(Preemptions, i)
	if okP {
		if !c.atLeast(pre, c.th.PreemptionsPerSecond, prev) {
			return v
		}
		v.evidence = append(v.evidence, ev(Preemptions, pre, ">=", c.th.PreemptionsPerSecond, "/s"))
	} else {
		v.notChecked = append(v.notChecked, c.missing(Preemptions))
		v.lowerTo(Medium, "preemptions not available: KV usage alone")
	}
	c.approx(&v, KVUsage, Preemptions)
	v.active = true
	v.summary = "KV-cache pressure: the KV cache is nearly full and requests are preempted (their KV recomputed). The prefix-cache hit ratio is not evidence of cache health while preemptions recompute tokens."
	v.recommend = "Lower --max-model-len or --max-num-seqs, enable prefix caching (--enable-prefix-caching), use an FP8 KV cache (--kv-cache-dtype fp8), raise --gpu-memory-utilization, or add GPU memory with tensor parallelism (--tensor-parallel-size)."
	return v
}

func ruleQueue(c *tctx, i int, prev bool) verdict {
	v := verdict{confidence: High}
	wait, okW := c.avg(Waiting, i)
	run, okR := c.avg(Running, i)
	if !okW || !okR {
		v.notChecked = append(v.notChecked, c.missingAt(i, Waiting, Running)...)
		return v
	}
	if !c.atLeast(wait, c.th.QueueWaitingMin, prev) || c.ceiling <= 0 || !c.atLeast(run, c.th.RunningCeilingRatio*c.ceiling, prev) {
		return v
	}
	note := "configured --max-num-seqs"
	if c.in.CeilingSource != "" {
		note = "ceiling: " + c.in.CeilingSource
	}
	if c.plateau {
		note = "ceiling = highest running count in the range (max_num_seqs is not exported)"
	}
	v.evidence = []Evidence{
		ev(WaitingAvg, wait, ">=", c.th.QueueWaitingMin, "requests"),
		{Signal: string(RunningAvg), Value: run, Op: ">=", Threshold: c.th.RunningCeilingRatio * c.ceiling, Unit: "requests", Note: note},
	}
	q, okQ := c.value(QueueMean, i)
	e2e, okE := c.value(E2EMean, i)
	if okQ && okE && e2e > 0 {
		share := q / e2e
		if !c.atLeast(share, c.th.QueueTimeShare, prev) {
			return v
		}
		v.evidence = append(v.evidence, Evidence{Signal: "queue_share_of_e2e", Value: share, Op: ">=", Threshold: c.th.QueueTimeShare, Unit: "ratio",
			Note: fmt.Sprintf("mean queue %s s of mean E2E %s s", num(q), num(e2e))})
		c.approx(&v, QueueMean, E2EMean)
	} else {
		v.notChecked = append(v.notChecked, c.missingAt(i, QueueMean, E2EMean)...)
		v.lowerTo(Medium, "queue time share of E2E not available: waiting and running gauges alone")
	}
	v.active = true
	v.summary = "Queue saturation: requests wait while the running batch sits at its ceiling; queue time is a large share of E2E latency."
	if kv, ok := c.value(KVUsage, i); ok && kv < c.th.KVHeadroom {
		v.evidence = append(v.evidence, ev(KVUsage, kv, "<", c.th.KVHeadroom, "ratio"))
		v.recommend = fmt.Sprintf("Raise --max-num-seqs (KV usage %s leaves headroom), and --max-num-batched-tokens with it; add replicas if latency must drop further.", num(kv))
	} else if ok {
		v.evidence = append(v.evidence, ev(KVUsage, kv, ">=", c.th.KVHeadroom, "ratio"))
		v.recommend = "Add replicas (scale out): the KV cache has no headroom for a larger --max-num-seqs."
	} else {
		v.recommend = "Add replicas, or raise --max-num-seqs if the KV cache has headroom (KV usage is not available here)."
	}
	return v
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
		v.evidence = append(v.evidence, ev(s, x, op, thr, "ratio"))
	}
	return holds
}

func rulePrefill(c *tctx, i int, prev bool) verdict {
	v := verdict{confidence: High}
	prompt, ok1 := c.value(PromptTok, i)
	gen, ok2 := c.value(GenTok, i)
	ppr, ok3 := c.promptPerRequest(i)
	if !ok1 || !ok2 || !ok3 {
		v.notChecked = append(v.notChecked, c.missingAt(i, PromptTok, GenTok, Finished)...)
		return v
	}
	if prompt+gen <= 0 || !c.atLeast(prompt/(prompt+gen), c.th.PrefillTokenShare, prev) || !c.atLeast(ppr, c.th.LongPromptTokens, prev) {
		return v
	}
	v.evidence = []Evidence{
		{Signal: "prompt_token_share", Value: prompt / (prompt + gen), Op: ">=", Threshold: c.th.PrefillTokenShare, Unit: "ratio",
			Note: fmt.Sprintf("%s prompt tokens/s against %s generated tokens/s", num(prompt), num(gen))},
		ev("prompt_tokens_per_request", ppr, ">=", c.th.LongPromptTokens, "tokens"),
	}
	sm, okSM := c.value(SMActive, i)
	ten, okT := c.value(TensorActive, i)
	switch {
	case okSM && c.atLeast(sm, c.th.SMActiveHigh, prev):
		v.evidence = append(v.evidence, ev(SMActive, sm, ">=", c.th.SMActiveHigh, "ratio"))
		c.gpusWhere(&v, SMActive, i, ">=", c.th.SMActiveHigh)
	case okT && c.atLeast(ten, c.th.SMActiveHigh, prev):
		v.evidence = append(v.evidence, ev(TensorActive, ten, ">=", c.th.SMActiveHigh, "ratio"))
		c.gpusWhere(&v, TensorActive, i, ">=", c.th.SMActiveHigh)
	case okSM || okT:
		return v // the GPU is not compute-busy: not compute-bound
	default:
		v.notChecked = append(v.notChecked, c.missing(SMActive))
		v.lowerTo(Low, "SM and tensor activity could not be checked")
	}
	gpuMeasured := okSM || okT
	if ttft, ok := c.value(TTFTMean, i); ok {
		pre, _ := c.value(PrefillMean, i)
		q, _ := c.value(QueueMean, i)
		v.evidence = append(v.evidence, Evidence{Signal: string(TTFTMean), Value: ttft, Unit: "s",
			Note: fmt.Sprintf("of which queue %s s waiting for the step budget and prefill %s s", num(q), num(pre))})
	}
	c.approx(&v, PromptTok, GenTok, Finished)
	v.active = true
	v.summary = "Prefill compute-bound: the engine's work is mostly prefill of long prompts and the GPU's SMs are busy; TTFT (queue for the step's token budget plus prefill) grows with the prompt load."
	if !gpuMeasured {
		v.summary = "Prefill-heavy: the engine's work is mostly prefill of long prompts; TTFT (queue for the step's token budget plus prefill) grows with the prompt load. Whether the GPU is compute-bound is not measured (no SM or tensor activity)."
	}
	v.recommend = "Enable chunked prefill (--enable-chunked-prefill) and tune --max-num-batched-tokens, enable prefix caching (--enable-prefix-caching) for shared prefixes, or disaggregate prefill onto separate instances."
	return v
}

func ruleDecode(c *tctx, i int, prev bool) verdict {
	v := verdict{confidence: High}
	itl, ok1 := c.value(ITLMean, i)
	run, ok2 := c.avg(Running, i)
	if !ok1 || !ok2 {
		v.notChecked = append(v.notChecked, c.missingAt(i, ITLMean, Running)...)
		return v
	}
	if !c.atLeast(itl, c.th.ITLHigh, prev) || !c.atLeast(run, c.th.DecodeBatchMin, prev) {
		return v
	}
	v.evidence = []Evidence{ev(ITLMean, itl, ">=", c.th.ITLHigh, "s"), ev(RunningAvg, run, ">=", c.th.DecodeBatchMin, "requests")}
	if !c.gpuCheck(&v, DRAMActive, i, ">=", c.th.DRAMActiveHigh, prev) {
		return v
	}
	if _, ok := c.value(SMActive, i); ok && !c.gpuCheck(&v, SMActive, i, "<", c.th.SMActiveHigh, prev) {
		return v
	}
	c.gpusWhere(&v, DRAMActive, i, ">=", c.th.DRAMActiveHigh)
	c.approx(&v, ITLMean, Running)
	v.active = true
	v.summary = "Decode memory-bandwidth-bound: inter-token latency is high with a large decode batch; DRAM bandwidth, not compute, limits each step."
	v.recommend = "Quantise the weights (e.g. --quantization fp8 or an AWQ/GPTQ checkpoint) and the KV cache (--kv-cache-dtype fp8), use speculative decoding (--speculative-config), or raise tensor parallelism; larger batches raise throughput but not ITL."
	return v
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
	v.evidence = []Evidence{{Signal: "frontend_share_of_e2e", Value: share, Op: ">=", Threshold: c.th.FrontendShare, Unit: "ratio",
		Note: fmt.Sprintf("E2E − queue − inference = %s s of %s s", num(e2e-q-inf), num(e2e))}}
	if !c.gpuCheck(&v, SMActive, i, "<", c.th.GPUBusy, prev) {
		return v
	}
	c.gpusWhere(&v, SMActive, i, "<", c.th.GPUBusy)
	c.approx(&v, E2EMean, QueueMean, InferenceMean)
	v.active = true
	v.summary = "Frontend or system side: a large share of E2E latency is spent outside the engine (tokenisation, API-server CPU, detokenisation, network) while the GPU is not busy."
	v.recommend = "Give the API server more CPU or processes (--api-server-count), check tokenizer speed (fast tokenizer, --tokenizer-pool-size on older releases), streaming and network; profile the frontend."
	return v
}

// ruleHOL: head-of-line blocking by long prompts. The prompt-length
// histogram shows a tail (99th percentile long, and far above the median),
// the window's mean TTFT is well above the mean prefill time (requests wait
// for the step's token budget), prefill runs at a normal speed per prompt
// token, and the batch has free seats and KV blocks (so neither the queue
// nor the KV rule explains the wait).
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
	if kv, ok := c.value(KVUsage, i); ok && kv >= c.th.KVUsageHigh {
		return v
	}
	if pre <= 0 || ppr <= 0 || !c.atLeast(ttft/pre, c.th.HOLTTFTRatio, prev) || pre/ppr > c.th.HOLPrefillPerToken {
		return v
	}
	v.evidence = []Evidence{
		ev(PromptP99, p99, ">=", c.th.HOLTailTokens, "tokens"),
		{Signal: "prompt_tail_ratio", Value: p99 / p50, Op: ">=", Threshold: c.th.HOLTailRatio, Unit: "ratio",
			Note: fmt.Sprintf("99th percentile %s tokens, median %s tokens per prompt", num(p99), num(p50))},
		{Signal: "ttft_over_prefill", Value: ttft / pre, Op: ">=", Threshold: c.th.HOLTTFTRatio, Unit: "ratio", Note: fmt.Sprintf("mean TTFT %s s, mean prefill %s s", num(ttft), num(pre))},
		{Signal: "prefill_per_prompt_token", Value: pre / ppr, Op: "<=", Threshold: c.th.HOLPrefillPerToken, Unit: "s", Note: "prefill speed is normal"},
	}
	if c.ceiling > 0 {
		v.evidence = append(v.evidence, Evidence{Signal: string(RunningAvg), Value: run, Op: "<", Threshold: c.th.RunningCeilingRatio * c.ceiling, Unit: "requests", Note: "seats free in the batch"})
	}
	c.approx(&v, PromptP99, TTFTMean, PrefillMean)
	v.active = true
	v.summary = "Head-of-line blocking: a tail of long prompts holds the step's token budget; requests wait although the batch has free seats and prefill runs at normal speed per token."
	v.recommend = "Enable chunked prefill (--enable-chunked-prefill) with a smaller --max-num-batched-tokens, cap --max-model-len, or route long-context requests to a separate pool."
	return v
}

func ruleAborted(c *tctx, i int, prev bool) verdict {
	v := verdict{confidence: High}
	ab, ok1 := c.value(Aborted, i)
	fin, ok2 := c.value(Finished, i)
	if !ok1 || !ok2 {
		if !ok1 {
			v.notChecked = append(v.notChecked, c.missing(Aborted))
		}
		return v
	}
	if fin <= 0 || !c.atLeast(ab/fin, c.th.AbortShare, prev) {
		return v
	}
	v.evidence = []Evidence{
		{Signal: "aborted_share", Value: ab / fin, Op: ">=", Threshold: c.th.AbortShare, Unit: "ratio"},
		ev(Aborted, ab, "", 0, "/s"),
	}
	c.approx(&v, Aborted, Finished)
	v.active = true
	v.summary = "Aborted traffic: clients close requests before they finish. The latency figures describe only the requests that finished; about " +
		num(ab*c.windowSeconds()) + " requests in the last " + c.windowText() + " did not."
	v.recommend = "Check client timeouts and cancellations; if requests time out in the queue, see queue saturation."
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
	v.evidence = []Evidence{ev(RunningAvg, run, "<", c.th.UnderRunning, "requests"), ev(WaitingAvg, wait, "<", c.th.QueueWaitingMin, "requests")}
	if !c.gpuCheck(&v, SMActive, i, "<", c.th.SMActiveLow, prev) {
		return v
	}
	c.gpusWhere(&v, SMActive, i, "<", c.th.SMActiveLow)
	v.active = true
	v.summary = "Under-utilised: little load and idle SMs."
	v.recommend = "Consolidate: serve this model from fewer replicas or share the GPU (e.g. lower --gpu-memory-utilization and co-locate)."
	return v
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
