package sim

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/expfmt"
)

// Options tune what a Sim records.
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

// Sim is one simulated vLLM server: the engine model, its GPU, and their
// Prometheus registries. Every method is safe for concurrent use.
type Sim struct {
	mu     sync.Mutex
	cfg    Config
	eng    *engine
	stats  *vllmStats
	gpu    *gpuModel
	reg    *prometheus.Registry
	gpuReg *prometheus.Registry
	start  time.Time
	truth  []*Request

	nextRestart float64
	stallAt     float64
	scrapeRng   *rand.Rand

	// V0 throughput gauges (recomputed at most every 5 s, vLLM's log interval)
	lastLogT, lastPrompt, lastGen, promptRate, genRate float64
}

// DefaultStart is simulated time 0 when Options.Start is zero.
var DefaultStart = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// New validates cfg (filling NumGPUBlocks) and builds a Sim at simulated time 0.
func New(cfg Config, opts Options) (*Sim, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	s := &Sim{cfg: cfg, start: opts.Start, stallAt: math.Inf(1), nextRestart: math.Inf(1)}
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
	s.scrapeRng = newRand(cfg.Seed, 2)
	s.reg = prometheus.NewRegistry()
	if err := s.reg.Register(newVLLMCollector(s)); err != nil {
		return nil, fmt.Errorf("sim: registering vLLM collector: %w", err)
	}
	s.gpuReg = prometheus.NewRegistry()
	if err := s.gpuReg.Register(newGPUCollector(s)); err != nil {
		return nil, fmt.Errorf("sim: registering GPU collector: %w", err)
	}
	return s, nil
}

// Config returns the validated configuration.
func (s *Sim) Config() Config { return s.cfg }

// Start returns the wall-clock time of simulated time 0.
func (s *Sim) Start() time.Time { return s.start }

// Registry is the vLLM /metrics registry (names per Config.Version).
func (s *Sim) Registry() *prometheus.Registry { return s.reg }

// Now is the simulated time in seconds since start.
func (s *Sim) Now() float64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.eng.now
}

// AdvanceTo runs the model up to simulated time t seconds (no-op when t is
// not after Now), applying scenario events (restarts, stall) on the way.
func (s *Sim) AdvanceTo(t float64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.advanceLocked(t)
}

func (s *Sim) advanceLocked(t float64) {
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
func (s *Sim) NextEventTime() float64 {
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
func (s *Sim) Submit(prompt, output, maxTokens int, listener func(*Request, Event)) (*Request, error) {
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
func (s *Sim) Abort(r *Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.eng.requestAbort(r, "client")
}

// Finished returns the requests that finished or were aborted so far
// (Options.RecordTruth), in finishing order.
func (s *Sim) Finished() []*Request {
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
func (s *Sim) State() State {
	s.mu.Lock()
	defer s.mu.Unlock()
	e := s.eng
	return State{Now: e.now, Running: len(e.running), Waiting: e.waiting.len(), KVUsage: e.kvUsage(),
		Preemptions: s.stats.preemptions, Stalled: e.stalled, Down: e.now < e.downTill,
		SMClockHz: s.gpu.smClockHz(), TempC: s.gpu.temp, PowerW: s.gpu.power, Throttle: s.gpu.throttleBits()}
}

// Down reports whether the server is in restart downtime now.
func (s *Sim) Down() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.eng.now < s.eng.downTill
}

// ScrapeOutcome says how a /metrics request at the current simulated time
// goes under the flaky scenario: ScrapeOK, ScrapeError (HTTP 500) or
// ScrapeStall (no answer for Config.FlakyStall). Deterministic given the
// seed and the sequence of calls.
func (s *Sim) ScrapeOutcome() ScrapeResult {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cfg.FlakyErrorRatio == 0 && s.cfg.FlakyStallRatio == 0 {
		return ScrapeOK
	}
	u := s.scrapeRng.Float64()
	switch {
	case u < s.cfg.FlakyErrorRatio:
		return ScrapeError
	case u < s.cfg.FlakyErrorRatio+s.cfg.FlakyStallRatio:
		return ScrapeStall
	}
	return ScrapeOK
}

// ScrapeResult is the outcome of one /metrics request.
type ScrapeResult int

// Scrape outcomes.
const (
	ScrapeOK ScrapeResult = iota
	ScrapeError
	ScrapeStall
)

// snapshotLocked returns the state the vLLM collector exposes; s.mu is held.
func (s *Sim) snapshotLocked() *snapshot {
	e := s.eng
	now := e.now
	if now-s.lastLogT >= 5 {
		dt := now - s.lastLogT
		s.promptRate = (s.stats.promptTokens - s.lastPrompt) / dt
		s.genRate = (s.stats.generationTokens - s.lastGen) / dt
		s.lastLogT, s.lastPrompt, s.lastGen = now, s.stats.promptTokens, s.stats.generationTokens
	}
	running := float64(len(e.running))
	if e.stalled && s.cfg.StallDropRunning {
		running = 0
	}
	return &snapshot{
		running:       running,
		waiting:       float64(e.waiting.len()),
		kvUsage:       e.kvUsage(),
		prefixCaching: s.cfg.PrefixCaching,
		stats:         s.stats,
		startUnix:     unixSeconds(s.start) + e.started,
		nowUnix:       unixSeconds(s.start) + now,
		promptRate:    s.promptRate,
		genRate:       s.genRate,
	}
}

func unixSeconds(t time.Time) float64 { return float64(t.UnixNano()) / 1e9 }

// Page renders the vLLM /metrics page now, in the Prometheus text format
// 0.0.4 as client_golang writes it.
func (s *Sim) Page() ([]byte, error) { return renderText(s.reg) }

// GPUPage renders the simulated GPU agent's /metrics page now.
func (s *Sim) GPUPage() ([]byte, error) { return renderText(s.gpuReg) }

func renderText(g prometheus.Gatherer) ([]byte, error) {
	mfs, err := g.Gather()
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	enc := expfmt.NewEncoder(&buf, expfmt.NewFormat(expfmt.TypeTextPlain))
	for _, mf := range mfs {
		if err := enc.Encode(mf); err != nil {
			return nil, err
		}
	}
	return buf.Bytes(), nil
}
