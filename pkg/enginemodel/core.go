package enginemodel

import (
	"errors"
	"fmt"
	"math"
	"sync"
	"time"
)

// Options tune what a Core records.
type Options struct {
	// Start is the wall-clock time of simulated time 0 (timestamps of
	// fast-forward samples, process_start_time_seconds). Zero means
	// 2026-01-01T00:00:00Z, so fast-forward output is deterministic.
	Start time.Time
	// RecordTruth keeps every finished request (Sim.Finished) for ground-truth checks.
	RecordTruth bool
	// RecordTokens keeps every token time of every request (Request.TokenTimes).
	RecordTokens bool
	// OnFinish, when set, is called (under the Sim's lock) for every request that
	// finishes or is aborted.
	OnFinish func(*Request)
}

// Core is one simulated vLLM engine: the engine model, its GPU model and the state of its
// vLLM metrics, with the scenario events of its configuration (periodic restarts, a stall).
// It does no I/O: pkg/sim wraps it with Prometheus registries, pages and an HTTP server;
// pkg/twin runs it as a capacity twin. Every method is safe for concurrent use.
type Core struct {
	mu    sync.Mutex
	cfg   Config
	eng   *engine
	stats *Stats
	gpu   *gpuModel
	start time.Time
	truth []*Request

	nextRestart float64
	stallAt     float64

	// V0 throughput gauges (recomputed at most every 5 s, vLLM's log interval)
	lastLogT, lastPrompt, lastGen, promptRate, genRate float64
}

// DefaultStart is simulated time 0 when Options.Start is zero.
var DefaultStart = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// New validates cfg (filling NumGPUBlocks) and builds a Core at simulated time 0.
func New(cfg Config, opts Options) (*Core, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	s := &Core{cfg: cfg, start: opts.Start, stallAt: math.Inf(1), nextRestart: math.Inf(1)}
	if s.start.IsZero() {
		s.start = DefaultStart
	}
	s.stats = newVLLMStats(cfg.Version, cfg.Model.MaxModelLen)
	s.gpu = newGPUModel(cfg.GPU)
	s.eng = newEngine(cfg, s.stats, s.gpu)
	s.eng.record = opts.RecordTokens
	if opts.RecordTruth || opts.OnFinish != nil {
		s.eng.onDone = func(r *Request) {
			if opts.RecordTruth {
				s.truth = append(s.truth, r)
			}
			if opts.OnFinish != nil {
				opts.OnFinish(r)
			}
		}
	}
	if cfg.RestartEvery > 0 {
		s.nextRestart = cfg.RestartEvery.Seconds()
	}
	if cfg.StallAt > 0 {
		s.stallAt = cfg.StallAt.Seconds()
	}
	return s, nil
}

// Config returns the validated configuration.
func (s *Core) Config() Config { return s.cfg }

// Start returns the wall-clock time of simulated time 0.
func (s *Core) Start() time.Time { return s.start }

// Now is the simulated time in seconds since start.
func (s *Core) Now() float64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.eng.now
}

// AdvanceTo runs the model up to simulated time t seconds (no-op when t is
// not after Now), applying scenario events (restarts, stall) on the way.
func (s *Core) AdvanceTo(t float64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.advanceLocked(t)
}

func (s *Core) advanceLocked(t float64) {
	if math.IsNaN(t) {
		return
	}
	for {
		ev := math.Min(s.nextRestart, s.stallAt)
		if ev > t {
			break
		}
		s.eng.advance(ev)
		if ev == s.stallAt {
			s.eng.stalled = true
			s.eng.stepping = false
			s.stallAt = math.Inf(1)
			continue
		}
		s.eng.restart(s.cfg.RestartDowntime.Seconds())
		s.stats.reset()
		s.lastLogT, s.lastPrompt, s.lastGen, s.promptRate, s.genRate = s.eng.now, 0, 0, 0, 0
		s.nextRestart += s.cfg.RestartEvery.Seconds()
		if s.cfg.StallAt > 0 && s.stallAt > s.eng.downTill {
			// a restart cures a stall; it recurs StallAt after the restart
			s.stallAt = s.eng.downTill + s.cfg.StallAt.Seconds()
		}
	}
	s.eng.advance(t)
}

// NextEventTime is the simulated time of the next thing the model will do
// (a step ending, an arrival, a scenario event); +Inf when nothing is due.
func (s *Core) NextEventTime() float64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	t := s.eng.nextEvent()
	if !s.eng.stepping && s.eng.hasWork() {
		t = s.eng.now
	}
	return math.Min(t, math.Min(s.nextRestart, s.stallAt))
}

// ErrDown is returned by Submit while the simulated server restarts.
var ErrDown = errors.New("sim: server is restarting")

// Submit adds a request arriving now (simulated) with the given prompt and
// output lengths in tokens and max_tokens. listener, when not nil, receives
// every token and the final event, called under the Sim's lock: it must not
// block or call back into the Sim.
func (s *Core) Submit(prompt, output, maxTokens int, listener func(*Request, Event)) (*Request, error) {
	if prompt < 1 || output < 1 || maxTokens < 1 {
		return nil, errors.New("sim: prompt, output and max_tokens must be ≥ 1")
	}
	if prompt+maxTokens > s.cfg.Model.MaxModelLen {
		return nil, fmt.Errorf("sim: prompt (%d) + max_tokens (%d) exceeds max_model_len %d", prompt, maxTokens, s.cfg.Model.MaxModelLen)
	}
	if s.eng.blocksFor(prompt+min(output, maxTokens)) > s.cfg.NumGPUBlocks {
		return nil, fmt.Errorf("sim: request of %d tokens does not fit the KV cache", prompt+min(output, maxTokens))
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	r := s.eng.newRequest(prompt, output, maxTokens, s.eng.now)
	r.listener = listener
	if listener != nil {
		r.recording = true
	}
	if !s.eng.submit(r) {
		return nil, ErrDown
	}
	return r, nil
}

// Abort cancels r as a client disconnect would: it finishes with reason
// "abort" at the next step boundary (at once while it waits).
func (s *Core) Abort(r *Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.eng.requestAbort(r, "client")
}

// Finished returns the requests that finished or were aborted so far
// (Options.RecordTruth), in finishing order.
func (s *Core) Finished() []*Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]*Request(nil), s.truth...)
}

// State is a summary of the engine now.
type State struct {
	Now         float64 // simulated seconds
	Running     int     // running requests (the engine's own count, even when the gauge drops to 0)
	Waiting     int
	KVUsage     float64 // 0..1
	Preemptions float64 // since the last restart
	Stalled     bool
	Down        bool // restarting: /metrics and the API do not answer
	SMClockHz   float64
	TempC       float64
	PowerW      float64
	Throttle    uint64 // NVML clock-event reason bits
}

// State returns the current engine and GPU state.
func (s *Core) State() State {
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.eng
	return State{Now: e.now, Running: len(e.running), Waiting: e.waiting.len(), KVUsage: e.kvUsage(),
		Preemptions: s.stats.Preemptions, Stalled: e.stalled, Down: e.now < e.downTill,
		SMClockHz: s.gpu.smClockHz(), TempC: s.gpu.temp, PowerW: s.gpu.power, Throttle: s.gpu.throttleBits()}
}

// Down reports whether the server is in restart downtime now.
func (s *Core) Down() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.eng.now < s.eng.downTill
}

// Snapshot is the state a scrape of the engine reads: gauges, the metric state (live, valid
// only inside Inspect's function), the GPU's readings and the process clocks.
type Snapshot struct {
	// Running and Waiting are requests (running is 0 while a stall drops it, StallDropRunning);
	// on V0 waiting excludes the swapped ones, as vLLM V0 counts them apart.
	Running, Waiting float64
	// Swapped is the requests preempted to host memory (Preemption.Mode PreemptSwap), and
	// CPUCacheUsage the share of the host swap space they hold (0..1; 0 when unlimited).
	Swapped, CPUCacheUsage float64
	KVUsage                float64 // 0..1
	PrefixCaching          bool
	Stats                  *Stats
	// StartUnix is the current incarnation's start (process_start_time_seconds), NowUnix now,
	// both Unix seconds.
	StartUnix, NowUnix float64
	// PromptRate and GenRate are V0's logged throughput gauges (tokens/s over the last 5 s log
	// interval).
	PromptRate, GenRate float64
	GPU                 GPUReadings
}

// Inspect calls f with a snapshot taken under the Core's lock (the lock is held while f runs:
// f must not call back into the Core).
func (s *Core) Inspect(f func(*Snapshot)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	f(s.snapshotLocked())
}

// snapshotLocked returns the state a scrape exposes; s.mu is held.
func (s *Core) snapshotLocked() *Snapshot {
	e := s.eng
	now := e.now
	if now-s.lastLogT >= 5 {
		dt := now - s.lastLogT
		s.promptRate = (s.stats.PromptTokensTotal - s.lastPrompt) / dt
		s.genRate = (s.stats.GenerationTokens - s.lastGen) / dt
		s.lastLogT, s.lastPrompt, s.lastGen = now, s.stats.PromptTokensTotal, s.stats.GenerationTokens
	}
	running := float64(len(e.running))
	if e.stalled && s.cfg.StallDropRunning {
		running = 0
	}
	waiting := float64(e.waiting.len())
	if !s.cfg.Version.V1() {
		waiting -= float64(e.swapped)
	}
	return &Snapshot{
		Running:       running,
		Waiting:       waiting,
		Swapped:       float64(e.swapped),
		CPUCacheUsage: e.cpuCacheUsage(),
		KVUsage:       e.kvUsage(),
		PrefixCaching: s.cfg.PrefixCaching,
		Stats:         s.stats,
		StartUnix:     unixSeconds(s.start) + e.started,
		NowUnix:       unixSeconds(s.start) + now,
		PromptRate:    s.promptRate,
		GenRate:       s.genRate,
		GPU:           s.gpu.readings(),
	}
}

func unixSeconds(t time.Time) float64 { return float64(t.UnixNano()) / 1e9 }
