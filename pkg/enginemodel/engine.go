package enginemodel

import (
	"container/heap"
	"math"
	"math/rand/v2"
	"slices"
)

// Finish reasons (label finished_reason of vllm:request_success_total).
const (
	ReasonStop   = "stop"
	ReasonLength = "length"
	ReasonAbort  = "abort"
)

// EventKind says what a request Event reports.
type EventKind int

// Event kinds, delivered to a request's listener in this order: tokens
// (Index 1, 2, …), then one Finish or one Abort.
const (
	EventToken EventKind = iota
	EventFinish
	EventAbort
)

// Event is one thing that happened to a request, at simulated time Time
// (seconds since the simulator's start, engine clock). Index is the 1-based
// index of the token for EventToken. Reason is the finish reason for
// EventFinish and EventAbort ("stop", "length", "abort"); Err says why an
// abort happened ("client", "timeout", "restart").
type Event struct {
	Kind   EventKind
	Time   float64
	Index  int
	Reason string
	Err    string
}

// Request is one simulated request and its ground truth. All times are
// simulated seconds since the simulator started; −1 means "not yet".
//
// Clocks follow vLLM (engines.md §1.5). V1: Arrival is the frontend receive
// time, Queued = Arrival + input overhead (engine core receives it),
// Scheduled the first scheduling, FirstToken / LastToken the engine
// timestamps of the first and last output batches, Finished = LastToken +
// output overhead (frontend). V0: Arrival = Queued and Finished = LastToken
// (the V0 engine measures everything from add_request).
type Request struct {
	ID           uint64
	PromptTokens int
	OutputTokens int // tokens the model generates before stopping (≤ MaxTokens)
	MaxTokens    int // max_tokens parameter
	CachedTokens int // prompt tokens found in the prefix cache at first scheduling

	Arrival, Queued, Scheduled, FirstToken, LastToken, Finished float64

	Generated    int    // output tokens emitted so far
	Preemptions  int    // times the request was preempted
	FinishReason string // "" while in flight

	// TokenTimes holds the engine time of every output token when the
	// simulator records tokens (Options.RecordTokens or a listener).
	TokenTimes []float64

	computed int // tokens whose KV is computed (kept in host memory while swapped)
	blocks   int // KV blocks held
	// swapped: preempted with its KV in host memory (Preemption.Mode
	// PreemptSwap), swapBlocks of it.
	swapped    bool
	swapBlocks int
	state      reqState
	aborted    string  // abort requested (client), applied at the next step boundary
	cancelAt   float64 // generated load: the client closes the stream at this time (0 = never)
	listener   func(*Request, Event)
	recording  bool
}

type reqState uint8

const (
	statePending reqState = iota
	stateWaiting
	stateRunning
	stateDone
)

// Truth is the ground truth of one finished request, as vLLM would measure
// it (seconds). For V1: Inference = Prefill + Decode exactly,
// E2E ≥ Queue + Inference (the rest is frontend overhead) and TTFT ≥ Queue +
// Prefill. For V0: E2E = Queue + Prefill + Decode exactly and TTFT includes
// the queue. TPOT = Decode/(Generated−1), 0 when Generated ≤ 1. ITL holds the
// gaps between consecutive tokens (Generated−1 values) when tokens were
// recorded, else nil.
type Truth struct {
	Queue, Prefill, Decode, Inference, TTFT, E2E, TPOT float64
	ITL                                                []float64
}

// Truth returns the request's ground truth; ok is false until the request
// finished normally (aborted or in-flight requests have none).
func (r *Request) Truth(v Version) (t Truth, ok bool) {
	if r.state != stateDone || r.FinishReason == ReasonAbort || r.FirstToken < 0 {
		return Truth{}, false
	}
	t.Queue = r.Scheduled - r.Queued
	t.Prefill = r.FirstToken - r.Scheduled
	t.Decode = r.LastToken - r.FirstToken
	t.Inference = r.LastToken - r.Scheduled
	if v.V1() {
		t.TTFT = r.FirstToken + (r.Finished - r.LastToken) - r.Arrival
	} else {
		t.TTFT = r.FirstToken - r.Arrival
	}
	t.E2E = r.Finished - r.Arrival
	if r.Generated > 1 {
		t.TPOT = t.Decode / float64(r.Generated-1)
	}
	if len(r.TokenTimes) > 1 {
		t.ITL = make([]float64, len(r.TokenTimes)-1)
		for i := 1; i < len(r.TokenTimes); i++ {
			t.ITL[i-1] = r.TokenTimes[i] - r.TokenTimes[i-1]
		}
	}
	return t, true
}

// CancelAt is the simulated time at which a generated request's client closes the stream (0:
// never; Config.CancelShare).
func (r *Request) CancelAt() float64 { return r.cancelAt }

// Done reports whether the request finished or was aborted.
func (r *Request) Done() bool { return r.state == stateDone }

type scheduled struct {
	r       *Request
	n       int
	prefill bool
}

// engine is the discrete-event model of one vLLM engine core. It is not safe
// for concurrent use; Core serialises access.
type engine struct {
	cfg     Config
	rng     *rand.Rand // workload
	now     float64
	nextID  uint64
	stats   *Stats
	gpu     *gpuModel
	onDone  func(*Request)
	record  bool
	version Version

	// arrivals
	nextGen  float64 // next generated (Poisson) frontend arrival, +Inf if none
	traceIdx int
	pending  pendingHeap // frontend-accepted, not yet in the engine core

	waiting    deque
	running    []*Request
	freeBlocks int

	// swap preemption (swapOut, swapIn): free host blocks (−1: unlimited),
	// requests swapped out, tokens copied since the last step started
	swapFree   int
	swapped    int
	swapTokens int

	stepping  bool
	stepStart float64
	stepEnd   float64
	batch     []scheduled
	prefillN  int
	decodeN   int
	load      stepLoad

	// scenario state
	stalled  bool
	downTill float64 // restart downtime: no requests accepted before this time
	started  float64 // sim time the current incarnation started serving

	// ITL run-length accumulator
	gapV float64
	gapN uint64
}

func newEngine(cfg Config, stats *Stats, gpu *gpuModel) *engine {
	e := &engine{
		cfg:        cfg,
		rng:        NewRand(cfg.Seed, 1),
		stats:      stats,
		gpu:        gpu,
		version:    cfg.Version,
		freeBlocks: cfg.NumGPUBlocks,
		nextGen:    math.Inf(1),
	}
	e.swapFree = e.swapBlocksTotal()
	e.scheduleNextArrival()
	return e
}

// rateAt is the modulated Poisson rate at time t.
func (e *engine) rateAt(t float64) float64 {
	if e.cfg.RateAmplitude == 0 {
		return e.cfg.Rate
	}
	return e.cfg.Rate * (1 + e.cfg.RateAmplitude*math.Sin(2*math.Pi*t/e.cfg.RatePeriod))
}

// scheduleNextArrival draws the next generated arrival after e.nextGen
// (thinning for a modulated rate).
func (e *engine) scheduleNextArrival() {
	if len(e.cfg.Trace) > 0 {
		if e.traceIdx < len(e.cfg.Trace) {
			e.nextGen = e.cfg.Trace[e.traceIdx].At
		} else {
			e.nextGen = math.Inf(1)
		}
		return
	}
	if e.cfg.Rate <= 0 {
		e.nextGen = math.Inf(1)
		return
	}
	t := e.nextGen
	if math.IsInf(t, 1) {
		t = 0
	}
	peak := e.cfg.Rate * (1 + e.cfg.RateAmplitude)
	for {
		t += ExpSample(e.rng, peak)
		if e.cfg.RateAmplitude == 0 || e.rng.Float64()*peak <= e.rateAt(t) {
			e.nextGen = t
			return
		}
	}
}

// newGenerated builds the request for the generated arrival at e.nextGen.
func (e *engine) newGenerated() *Request {
	var prompt, out int
	if len(e.cfg.Trace) > 0 {
		te := e.cfg.Trace[e.traceIdx]
		e.traceIdx++
		prompt, out = te.PromptTokens, te.OutputTokens
	} else {
		prompt = e.cfg.Prompt.Sample(e.rng)
		out = e.cfg.Output.Sample(e.rng)
		// extra draws only when the scenario asks, so other scenarios keep their streams
		if e.cfg.LongPromptShare > 0 && e.rng.Float64() < e.cfg.LongPromptShare {
			prompt = e.cfg.LongPrompt.Sample(e.rng)
		}
	}
	r := e.newRequest(prompt, out, e.cfg.MaxTokens, e.nextGen)
	if e.cfg.CancelShare > 0 && e.rng.Float64() < e.cfg.CancelShare {
		r.cancelAt = r.Arrival + ExpSample(e.rng, 1/e.cfg.CancelAfter)
	}
	e.scheduleNextArrival()
	return r
}

func (e *engine) newRequest(prompt, out, maxTokens int, arrival float64) *Request {
	e.nextID++
	r := &Request{
		ID:           e.nextID,
		PromptTokens: prompt,
		OutputTokens: min(out, maxTokens),
		MaxTokens:    maxTokens,
		Arrival:      arrival,
		Scheduled:    -1,
		FirstToken:   -1,
		LastToken:    -1,
		Finished:     -1,
		recording:    e.record,
	}
	if e.version.V1() {
		r.Queued = arrival + e.cfg.InputOverhead + e.cfg.InputOverheadPerToken*float64(prompt)
	} else {
		r.Queued = arrival
	}
	return r
}

// submit hands a request to the frontend at the current time. It returns
// false while the engine is down (restart downtime).
func (e *engine) submit(r *Request) bool {
	if e.now < e.downTill {
		return false
	}
	r.state = statePending
	heap.Push(&e.pending, r)
	return true
}

// blocksFor is the number of KV blocks holding n tokens.
func (e *engine) blocksFor(n int) int { return (n + e.cfg.BlockSize - 1) / e.cfg.BlockSize }

// hasWork reports whether a step can start now.
func (e *engine) hasWork() bool {
	return !e.stalled && (len(e.running) > 0 || e.waiting.len() > 0)
}

// nextEvent is the time of the next internal event (+Inf if none).
func (e *engine) nextEvent() float64 {
	t := e.nextGen
	if e.pending.Len() > 0 {
		t = min(t, e.pending[0].Queued)
	}
	if e.stepping {
		t = min(t, e.stepEnd)
	}
	return t
}

// advance runs the model up to time t (inclusive).
func (e *engine) advance(t float64) {
	for {
		if !e.stepping && e.hasWork() {
			e.startStep()
			continue
		}
		next := e.nextEvent()
		if next > t {
			break
		}
		// Arrivals first when simultaneous with a step end: they join the queue
		// before the next step is formed.
		switch {
		case next == e.nextGen && (e.pending.Len() == 0 || e.nextGen <= e.pending[0].Queued):
			e.idleTo(next)
			r := e.newGenerated()
			if !e.submit(r) {
				continue
			}
		case e.pending.Len() > 0 && e.pending[0].Queued == next:
			e.idleTo(next)
			r := heap.Pop(&e.pending).(*Request)
			if r.aborted != "" {
				e.abort(r, r.aborted)
				continue
			}
			r.state = stateWaiting
			e.waiting.pushBack(r)
		default:
			e.finishStep()
		}
	}
	e.idleTo(t)
}

// idleTo moves the clock to t; while no step runs the GPU idles.
func (e *engine) idleTo(t float64) {
	if t <= e.now {
		return
	}
	if e.stepping {
		// the GPU is busy until stepEnd; account busy time up to t
		e.gpu.advance(t-e.now, e.load)
	} else if e.stalled {
		e.gpu.advance(t-e.now, stalledLoad)
	} else {
		e.gpu.advance(t-e.now, stepLoad{})
	}
	e.now = t
}

// startStep forms a batch (V1 scheduler: running requests first, then waiting
// ones; preemption when KV blocks run out, of the request Config.Preemption
// names, by default the most recently admitted one; chunked prefill within
// the token budget) and computes its duration.
func (e *engine) startStep() {
	e.expireWaiting()
	e.cancelClosed()
	if !e.hasWork() {
		return
	}
	cfg := &e.cfg
	budget := cfg.MaxNumBatchedTokens
	e.batch = e.batch[:0]
	preempted := false
	for i := 0; i < len(e.running) && budget > 0; i++ {
		r := e.running[i]
		need := r.PromptTokens + r.Generated - r.computed
		prefill := r.Generated == 0 || need > 1
		n := min(need, budget)
		if !cfg.ChunkedPrefill && n < need {
			continue
		}
		blocks := e.blocksFor(r.computed+n) - r.blocks
		self := false
		for blocks > e.freeBlocks {
			j := e.victimIndex()
			victim := e.running[j]
			e.running = slices.Delete(e.running, j, j+1)
			// a victim already scheduled this step leaves the batch and gives its tokens back
			for k := range e.batch {
				if e.batch[k].r == victim {
					budget += e.batch[k].n
					e.batch = slices.Delete(e.batch, k, k+1)
					break
				}
			}
			e.preempt(victim)
			preempted = true
			if victim == r {
				self = true
				break
			}
			if j < i {
				i--
			}
		}
		if self {
			break
		}
		e.freeBlocks -= blocks
		r.blocks += blocks
		budget -= n
		e.batch = append(e.batch, scheduled{r, n, prefill})
	}
	if !preempted {
		for e.waiting.len() > 0 && len(e.running) < cfg.MaxNumSeqs && budget > 0 {
			r := e.waiting.front()
			first := r.Scheduled < 0
			if first && cfg.PrefixCaching {
				c := int(float64(r.PromptTokens)*cfg.PrefixHitRatio) / cfg.BlockSize * cfg.BlockSize
				if c >= r.PromptTokens {
					c -= cfg.BlockSize
				}
				r.CachedTokens = max(c, 0)
			}
			start := r.CachedTokens
			if r.swapped {
				start = r.computed // resumes where it stopped, its KV copied back
			}
			need := r.PromptTokens + r.Generated - start
			n := min(need, budget)
			if !cfg.ChunkedPrefill && n < need {
				break
			}
			blocks := e.blocksFor(start + n)
			if blocks > e.freeBlocks {
				break
			}
			e.waiting.popFront()
			if first {
				r.Scheduled = e.now
				e.stats.prefixQuery(r.PromptTokens, r.CachedTokens)
			}
			e.swapIn(r)
			r.computed = start
			r.blocks = blocks
			e.freeBlocks -= blocks
			r.state = stateRunning
			e.running = append(e.running, r)
			budget -= n
			// a swapped-in request that only decodes is not a prefill
			e.batch = append(e.batch, scheduled{r, n, r.Generated == 0 || need > 1})
		}
	}
	if len(e.batch) == 0 {
		return
	}
	e.prefillN, e.decodeN = 0, 0
	ctx := 0
	positions := 0.0 // sum of the prefilled tokens' positions (StepWork.PrefillPositions)
	for _, s := range e.batch {
		if s.prefill {
			e.prefillN += s.n
			positions += float64(s.n) * (float64(s.r.computed) + float64(s.n-1)/2)
		} else {
			e.decodeN += s.n
		}
		ctx += s.r.computed + s.n
	}
	d, load := e.gpu.stepTimeWork(cfg, StepWork{PrefillTokens: float64(e.prefillN), DecodeSeqs: float64(e.decodeN), Ctx: float64(ctx), PrefillPositions: positions})
	if sw := e.swapSeconds(); sw > 0 {
		// the swaps block the step; the GPU's kernels run for d of d + sw
		f := d / (d + sw)
		load.util, load.sm, load.dram, load.tensor = f*load.util, f*load.sm, f*load.dram, f*load.tensor
		d += sw
	}
	e.load = load
	e.stepping = true
	e.stepStart = e.now
	e.stepEnd = e.now + d
}

// expireWaiting aborts generated requests that waited longer than the client
// timeout without being scheduled (clients give up).
func (e *engine) expireWaiting() {
	if e.cfg.ClientTimeout <= 0 {
		return
	}
	for e.waiting.len() > 0 {
		r := e.waiting.front()
		if r.Scheduled >= 0 || e.now-r.Arrival < e.cfg.ClientTimeout {
			return
		}
		e.waiting.popFront()
		e.abort(r, "timeout")
	}
}

// cancelClosed requests the abort of every waiting or running generated
// request whose client has closed its stream (cancelAt reached); running
// ones end at the step boundary, as vLLM handles disconnects.
func (e *engine) cancelClosed() {
	if e.cfg.CancelShare <= 0 {
		return
	}
	var closed []*Request
	for i := 0; i < e.waiting.len(); i++ {
		if r := e.waiting.at(i); r.cancelAt > 0 && e.now >= r.cancelAt {
			closed = append(closed, r)
		}
	}
	for _, r := range e.running {
		if r.cancelAt > 0 && e.now >= r.cancelAt {
			closed = append(closed, r)
		}
	}
	for _, r := range closed {
		e.requestAbort(r, "client")
	}
}

// preempt frees r's KV blocks and puts it at the front of the waiting queue:
// recompute preemption (V1), or, with Preemption.Mode PreemptSwap and room in
// the swap space, its computed KV kept in host memory (swapOut).
func (e *engine) preempt(r *Request) {
	e.freeBlocks += r.blocks
	r.blocks = 0
	if !e.swapOut(r) {
		r.computed = 0
		r.CachedTokens = 0
	}
	r.Preemptions++
	r.state = stateWaiting
	e.waiting.pushFront(r)
	e.stats.Preemptions++
}

// finishStep applies the batch at e.stepEnd.
func (e *engine) finishStep() {
	t := e.stepEnd
	e.idleTo(t)
	e.stepping = false
	st := e.stats
	st.IterationTokens.observe(float64(e.prefillN + e.decodeN))
	if !e.version.V1() {
		st.PromptTokensTotal += float64(e.prefillN)
	}
	finished := false
	for _, s := range e.batch {
		r := s.r
		if r.state != stateRunning {
			continue
		}
		r.computed += s.n
		if r.computed < r.PromptTokens+r.Generated {
			continue // chunk of a longer prefill
		}
		r.Generated++
		st.GenerationTokens++
		if r.recording {
			r.TokenTimes = append(r.TokenTimes, t)
		}
		if r.FirstToken < 0 {
			r.FirstToken = t
			if e.version.V1() {
				st.PromptTokensTotal += float64(r.PromptTokens)
				st.PromptCached += float64(r.CachedTokens)
				st.TTFT.observe(t + e.cfg.OutputOverhead - r.Arrival)
			} else {
				st.TTFT.observe(t - r.Arrival)
			}
		} else {
			gap := t - r.LastToken
			if gap == e.gapV {
				e.gapN++
			} else {
				e.flushGaps()
				e.gapV, e.gapN = gap, 1
			}
		}
		r.LastToken = t
		if r.listener != nil {
			r.listener(r, Event{Kind: EventToken, Time: t, Index: r.Generated})
		}
		// a request that produced its last token this step has finished, even if
		// its client closed meanwhile (vLLM handles the abort after the step)
		if r.Generated >= r.OutputTokens {
			e.release(r)
			e.complete(r)
			finished = true
			continue
		}
		if r.aborted != "" {
			e.release(r)
			e.abort(r, r.aborted)
			finished = true
		}
	}
	e.flushGaps()
	// requests aborted by their client while not producing a token this step
	for _, s := range e.batch {
		if s.r.state == stateRunning && s.r.aborted != "" {
			e.release(s.r)
			e.abort(s.r, s.r.aborted)
			finished = true
		}
	}
	if finished {
		k := 0
		for _, r := range e.running {
			if r.state == stateRunning {
				e.running[k] = r
				k++
			}
		}
		clear(e.running[k:])
		e.running = e.running[:k]
	}
}

func (e *engine) flushGaps() {
	if e.gapN > 0 {
		e.stats.ITL.observeN(e.gapV, e.gapN)
		e.gapN = 0
	}
}

// release frees r's KV blocks.
func (e *engine) release(r *Request) {
	e.freeBlocks += r.blocks
	r.blocks = 0
}

// complete records a normally finished request.
func (e *engine) complete(r *Request) {
	r.state = stateDone
	if r.Generated >= r.MaxTokens {
		r.FinishReason = ReasonLength
	} else {
		r.FinishReason = ReasonStop
	}
	if e.version.V1() {
		r.Finished = r.LastToken + e.cfg.OutputOverhead
	} else {
		r.Finished = r.LastToken
	}
	e.stats.finished(r, e.version)
	if r.listener != nil {
		r.listener(r, Event{Kind: EventFinish, Time: r.LastToken, Reason: r.FinishReason})
	}
	if e.onDone != nil {
		e.onDone(r)
	}
}

// abort ends r with finished_reason "abort" (counted like vLLM: only the
// request_success_total counter; no latency histograms).
func (e *engine) abort(r *Request, why string) {
	e.dropSwap(r)
	r.state = stateDone
	r.FinishReason = ReasonAbort
	r.Finished = e.now
	// a restart loses the in-flight requests uncounted; a stalled engine core
	// never processes aborts, so its counters stay frozen
	if why != "restart" && !e.stalled {
		e.stats.Success[reasonIndex(ReasonAbort)]++
	}
	if r.listener != nil {
		r.listener(r, Event{Kind: EventAbort, Time: e.now, Reason: ReasonAbort, Err: why})
	}
	if e.onDone != nil {
		e.onDone(r)
	}
}

// requestAbort marks r for abort at the next event that touches it
// (vLLM handles client disconnects between steps).
func (e *engine) requestAbort(r *Request, why string) {
	if r.state == stateDone || r.aborted != "" {
		return
	}
	r.aborted = why
	if r.state == stateWaiting {
		e.waiting.remove(r)
		e.abort(r, why)
	}
}

// restart drops every request (their clients see errors), frees the KV cache
// and marks the engine down until now+downtime.
func (e *engine) restart(downtime float64) {
	drop := func(r *Request) {
		if r.state != stateDone {
			e.abort(r, "restart")
		}
	}
	for e.pending.Len() > 0 {
		drop(heap.Pop(&e.pending).(*Request))
	}
	for e.waiting.len() > 0 {
		drop(e.waiting.popFront())
	}
	for _, r := range e.running {
		drop(r)
	}
	clear(e.running)
	e.running = e.running[:0]
	e.batch = e.batch[:0]
	e.stepping = false
	e.freeBlocks = e.cfg.NumGPUBlocks
	e.swapFree, e.swapped, e.swapTokens = e.swapBlocksTotal(), 0, 0
	e.stalled = false
	e.downTill = e.now + downtime
	e.started = e.downTill
}

// kvUsage is the share of KV blocks in use (0..1).
func (e *engine) kvUsage() float64 {
	return float64(e.cfg.NumGPUBlocks-e.freeBlocks) / float64(e.cfg.NumGPUBlocks)
}

// pendingHeap orders frontend-accepted requests by engine receive time.
type pendingHeap []*Request

func (h pendingHeap) Len() int { return len(h) }
func (h pendingHeap) Less(i, j int) bool {
	if h[i].Queued != h[j].Queued {
		return h[i].Queued < h[j].Queued
	}
	return h[i].ID < h[j].ID
}
func (h pendingHeap) Swap(i, j int) { h[i], h[j] = h[j], h[i] }
func (h *pendingHeap) Push(x any)   { *h = append(*h, x.(*Request)) }
func (h *pendingHeap) Pop() any {
	old := *h
	r := old[len(old)-1]
	old[len(old)-1] = nil
	*h = old[:len(old)-1]
	return r
}

// deque is a ring buffer of requests.
type deque struct {
	buf        []*Request
	head, size int
}

func (d *deque) len() int { return d.size }

func (d *deque) grow() {
	n := max(16, 2*len(d.buf))
	nb := make([]*Request, n)
	for i := 0; i < d.size; i++ {
		nb[i] = d.buf[(d.head+i)%len(d.buf)]
	}
	d.buf, d.head = nb, 0
}

func (d *deque) pushBack(r *Request) {
	if d.size == len(d.buf) {
		d.grow()
	}
	d.buf[(d.head+d.size)%len(d.buf)] = r
	d.size++
}

func (d *deque) pushFront(r *Request) {
	if d.size == len(d.buf) {
		d.grow()
	}
	d.head = (d.head - 1 + len(d.buf)) % len(d.buf)
	d.buf[d.head] = r
	d.size++
}

func (d *deque) front() *Request { return d.buf[d.head] }

// at returns the i-th request from the front (0 ≤ i < len).
func (d *deque) at(i int) *Request { return d.buf[(d.head+i)%len(d.buf)] }

func (d *deque) popFront() *Request {
	r := d.buf[d.head]
	d.buf[d.head] = nil
	d.head = (d.head + 1) % len(d.buf)
	d.size--
	return r
}

// remove deletes r (linear; used only for client aborts).
func (d *deque) remove(r *Request) {
	for i := 0; i < d.size; i++ {
		if d.buf[(d.head+i)%len(d.buf)] == r {
			for j := i; j < d.size-1; j++ {
				d.buf[(d.head+j)%len(d.buf)] = d.buf[(d.head+j+1)%len(d.buf)]
			}
			d.buf[(d.head+d.size-1)%len(d.buf)] = nil
			d.size--
			return
		}
	}
}
