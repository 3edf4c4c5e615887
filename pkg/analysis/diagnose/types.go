// Package diagnose names the bottleneck of each inference target over time:
// stalled engine, queue saturation, KV-cache pressure, compute-bound prefill,
// memory-bound decode, GPU throttling, frontend overhead, head-of-line
// blocking, aborted traffic, idle engine with stale gauges, under-use, or
// healthy. Each finding carries its evidence (each signal's value and the
// threshold it crossed), a confidence with the reasons it was lowered, what
// could not be checked, and a recommendation naming vLLM flags.
//
// It is pure: inputs are per-target signals already placed on the query's
// step grid (the plugin fetches them with the catalogue's PromQL builders,
// the same queries the latency, saturation and gpu query types run), and
// thresholds come from settings.Diagnosis. Method: docs/diagnosis.md.
package diagnose

import (
	"math"
	"strconv"
	"strings"
	"time"
)

// Class is a diagnosis.
type Class string

// Classes of diagnosis. Unknown ("cannot_tell") is what a target gets when
// the data needed to say anything is missing (page not answering, no
// signals); it is never a guess.
const (
	Stalled          Class = "stalled"
	GPUThrottled     Class = "gpu_throttled"
	KVPressure       Class = "kv_cache_pressure"
	QueueSaturation  Class = "queue_saturation"
	HeadOfLine       Class = "head_of_line_blocking"
	PrefillCompute   Class = "prefill_compute_bound"
	DecodeMemory     Class = "decode_memory_bound"
	FrontendOverhead Class = "frontend_overhead"
	AbortedTraffic   Class = "aborted_traffic"
	IdleStaleGauges  Class = "idle_stale_gauges"
	UnderUtilised    Class = "under_utilised"
	Healthy          Class = "healthy"
	Unknown          Class = "cannot_tell"
	// Classes added for issue 20 (new names; the ones above are unchanged).

	// InsufficientData: what is needed to name the cause is missing (no
	// GPU agent, a stuck or absent GPU counter); the finding names the
	// missing signals and the classes it could not decide between.
	InsufficientData Class = "insufficient_data"
	// UnstableBatching: inter-token latency swings with the running batch
	// while an objective is breached.
	UnstableBatching Class = "unstable_batching"
	// SmallBatches: requests run but the batch is too small to use the
	// GPU (beyond under_utilised's fewer than one running request).
	SmallBatches Class = "small_batches"
	// ErrorSurge: a share of requests end with an error.
	ErrorSurge Class = "error_surge"
	// PowerCap: a busy GPU's SM clock is held down by an enforced power
	// limit (below the board's default, or the power_cap reason with the
	// clock far below its maximum) while no thermal or hardware slowdown
	// reason is active. Added by issue 20 point 6; before it, a clock held
	// far down with no slowdown reason was reported as gpu_throttled.
	PowerCap Class = "power_capped"
)

// Classes lists every class in priority order: when several hold at once,
// the first is a target's primary class (the state timeline's value).
// Causes come before symptoms: a KV cache that is full, compute-bound
// prefill or bandwidth-bound decode also fill the queue, so queue
// saturation is named only when none of them holds.
//
// Data quality comes first: a stalled engine or frozen gauges make every
// performance rule read stale values, so they are decided before any of
// them. Head-of-line blocking ranks before prefill, KV and decode: a tail
// of long prompts (with short ones the bulk) makes the windows it falls in
// prefill-heavy, fills the KV cache for a moment and stretches the decode
// steps it shares; its own rule already excludes a full batch, a cache
// that keeps recomputing and slow prefill on busy SMs. Queue saturation with free KV blocks ranks before decode
// bandwidth: seats are the cause a flag fixes (--max-num-seqs).
var Classes = []Class{Stalled, IdleStaleGauges, GPUThrottled, PowerCap, ErrorSurge, HeadOfLine, PrefillCompute, KVPressure, QueueSaturation,
	DecodeMemory, UnstableBatching, FrontendOverhead, AbortedTraffic, InsufficientData, SLOBreachUnexplained, UnderUtilised,
	SmallBatches, Healthy, Unknown}

// performanceClasses are the classes that explain a latency breach; with
// every objective of the target met they are observations, not findings.
var performanceClasses = []Class{PowerCap, KVPressure, PrefillCompute, QueueSaturation, DecodeMemory, HeadOfLine,
	UnstableBatching, FrontendOverhead}

// Severity of a finding.
type Severity string

// Severities, most urgent first.
const (
	Critical Severity = "critical"
	Warning  Severity = "warning"
	Info     Severity = "info"
	OK       Severity = "ok"
)

// Severity returns the class's severity.
func (c Class) Severity() Severity { return severities[c] }

// Level is a severity as a number for alert rules: critical 3, warning 2,
// info 1, ok 0.
func (s Severity) Level() float64 {
	switch s {
	case Critical:
		return 3
	case Warning:
		return 2
	case Info:
		return 1
	}
	return 0
}

// Confidence of a finding: how complete and exact its evidence is.
type Confidence string

// Confidence levels.
const (
	High   Confidence = "high"
	Medium Confidence = "medium"
	Low    Confidence = "low"
)

func (c Confidence) lower(to Confidence) Confidence {
	rank := map[Confidence]int{High: 2, Medium: 1, Low: 0}
	if rank[to] < rank[c] {
		return to
	}
	return c
}

// Signal names one per-target input series.
type Signal string

// Input signals. Gauges are the value at the step; rates are per second over
// the query's rate window unless said otherwise; means are rate(_sum) /
// rate(_count) over the rate window, in seconds.
const (
	Up          Signal = "up"                   // 1 when the step's last scrape answered, else 0
	UpMin       Signal = "up_min"               // min of up over the stall window (1: every scrape answered)
	Running     Signal = "requests_running"     // requests (summed across engines), at the step
	Waiting     Signal = "requests_waiting"     // requests, at the step
	RunningAvg  Signal = "requests_running_avg" // requests, mean over the rate window
	WaitingAvg  Signal = "requests_waiting_avg" // requests, mean over the rate window
	WaitingSpan Signal = "waiting_span"         // max − min of waiting over the stall window (requests): the gauge moved
	// RunningPeak and WaitingPeak are the highest mean of the gauge over
	// any BurstWindow inside the rate window (requests): a burst of 30 s
	// shows in them at a 5-minute window, where the window mean dilutes it.
	// Only fetched when the rate window spans at least four burst windows
	// (not at the dashboard's 60 s window, whose mean already shows it).
	RunningPeak Signal = "requests_running_peak"
	WaitingPeak Signal = "requests_waiting_peak"
	KVUsage     Signal = "kv_cache_usage"    // ratio 0..1 (averaged across engines), highest over the rate window
	Preemptions Signal = "preemptions"       // per second
	Finished    Signal = "requests_finished" // requests ended per second, every finish reason
	Aborted     Signal = "requests_aborted"  // requests ended with finished_reason="abort" per second
	PromptTok   Signal = "prompt_tokens"     // tokens per second
	GenTok      Signal = "generation_tokens" // tokens per second
	// Progress is the summed per-second rate over the stall window of the
	// progress counters (generation tokens, finished requests, engine
	// steps, decode steps where the engine exports them): exactly 0 when
	// none advanced.
	Progress      Signal = "progress"
	QueueMean     Signal = "queue_time_mean"     // s
	PrefillMean   Signal = "prefill_time_mean"   // s
	InferenceMean Signal = "inference_time_mean" // s
	E2EMean       Signal = "e2e_mean"            // s
	TTFTMean      Signal = "ttft_mean"           // s
	ITLMean       Signal = "itl_mean"            // s
	PromptP50     Signal = "prompt_tokens_p50"   // tokens per request, median over the rate window (prompt-length histogram)
	PromptP99     Signal = "prompt_tokens_p99"   // tokens per request, 99th percentile over the rate window (prompt-length histogram)
	SMActive      Signal = "sm_active"           // ratio 0..1, mean over the target's GPUs and the rate window
	DRAMActive    Signal = "dram_active"         // ratio 0..1, mean over the target's GPUs and the rate window
	TensorActive  Signal = "tensor_active"       // ratio 0..1, mean over the target's GPUs and the rate window
	GPUUtil       Signal = "gpu_util"            // ratio 0..1, mean over the target's GPUs and the rate window
	ClockRatio    Signal = "sm_clock_ratio"      // SM clock / max SM clock, lowest over the target's GPUs
	Slowdown      Signal = "slowdown"            // 1 when a slowdown reason (hw_slowdown, sw/hw thermal, power brake) is active on a GPU, else 0
	// PowerCapped is 1 while the power_cap clock-event reason is active on
	// a GPU, else 0 (optional: without it a low clock on a busy GPU with
	// no slowdown reason is read as a cap).
	PowerCapped Signal = "power_capped"
	// PowerLimitRatio is the enforced power limit over the board's default
	// limit, lowest over the target's GPUs (optional).
	PowerLimitRatio Signal = "power_limit_ratio"
	Errored         Signal = "requests_errored" // requests ended with an error per second (finished_reason="error", HTTP 5xx)
	// Rejected is requests refused at admission per second (vLLM's admission_rejections_total,
	// HTTP 503; optional: read only where a target exports it). They never start, so they are
	// not among Finished.
	Rejected Signal = "requests_rejected"
	// WaitingDeferred is the mean over the rate window of the requests waiting for a reason
	// other than room (vLLM's num_requests_waiting_by_reason{reason="deferred"}: grammar
	// compilation, a remote KV transfer); optional. The rest of Waiting waits for capacity.
	WaitingDeferred Signal = "requests_waiting_deferred_avg"
	// DecodeSteps is the engine's decode steps per second over the rate window (llama.cpp's
	// n_decode_total; optional). It moves on every step while work is in flight, where
	// llama.cpp's token counters move only at a request's first token or end; its rate over
	// the stall window is part of Progress.
	DecodeSteps Signal = "decode_steps"
	// FirstTokens is the requests that got their first token per second over the rate window
	// (the TTFT histogram's _count rate; vLLM observes it at the first token, aborted requests
	// included): the requests that started, against Finished (issue 39).
	FirstTokens Signal = "first_tokens"
)

// BurstWindow is the sub-window whose highest mean inside the rate window
// RunningPeak and WaitingPeak read: 30 s, or two scrape intervals when that
// is longer (a mean of at least two scrapes). A 30 s burst fills it.
func BurstWindow(scrape time.Duration) time.Duration {
	return max(30*time.Second, 2*scrape)
}

// ObjectiveInput is one latency objective of the target's SLO profile with
// its compliance per step: Good is the share (0..1) of the window's
// requests whose Signal (a latency stage: "ttft", "itl", "tpot", "e2e", …)
// was at or under Threshold seconds, NaN where the window finished no
// request. The objective is breached at a step where Good < Target.
type ObjectiveInput struct {
	Name      string
	Signal    string
	Threshold float64 // seconds
	Target    float64 // ratio of good requests, e.g. 0.99
	Good      []float64
	// PerGap is set when a per-request TPOT objective's Good was read from
	// the per-token gap histogram (ITL; vllm:time_per_output_token_seconds
	// before vLLM 0.11) because the target exports no per-request TPOT
	// histogram: Good is then the share of gaps, not of requests, at or
	// under Threshold. A request's TPOT is the mean of its gaps, so a gap
	// tail over the threshold does not establish that requests breach it
	// (the requests' attainment bracket from the gaps reaches 1): such an
	// objective is never judged breached (breachedAt), and is judged met
	// where the gaps' share reaches Target (metAt; see docs/diagnosis.md,
	// "TPOT from the gap histogram").
	PerGap bool
	// Count is the number of observations (requests; gaps for a per-token
	// or PerGap reading) the window's histogram counted at each step (its
	// windowed bucket rate × window), NaN where unknown. nil when the input
	// does not carry it (a hand-built input): every reading then counts.
	// A reading under Target is a breach (breachedAt) when some step of
	// its run of readings under Target counted at least MinBreachCount
	// observations (the count rounded to a whole request, EnoughCount);
	// a run that never did is neither met nor breached: too few requests
	// to establish a breach.
	Count []float64
	// breach caches breachSteps (set by Diagnose; nil: computed per call).
	breach []bool
}

// MinBreachCount is the fewest observations (requests) in a window from
// which an objective's reading under target establishes a breach (issue
// 35). Below it one or two slow requests, or the interpolation inside the
// bucket holding the threshold, make the reading: a run of readings under
// target none of which counted that many is unknown for the breach
// (neither met nor breached), so it opens neither the breach invariant nor
// the rules anchored on a breached objective. Once one window of the run
// has established the breach, the run's other windows under target are
// breached too, whatever they counted: a window that counted fewer (a
// scrape late or missing inside it, the first windows of a history, a
// lull) is partial evidence of the same episode, not evidence that it
// ended, and must not split or shift the finding (the embedded store and
// a remote Prometheus scraping the same page miss different scrapes).
const MinBreachCount = 10

// known reports whether o has a reading at step i.
func (o ObjectiveInput) known(i int) bool { return i < len(o.Good) && !math.IsNaN(o.Good[i]) }

// metAt reports whether o is met at step i: its reading reaches Target.
func (o ObjectiveInput) metAt(i int) bool { return o.known(i) && o.Good[i] >= o.Target }

// breachedAt reports whether o is breached at step i: its reading is under
// Target and it is a reading of the objective's own population. A per-gap
// reading of a per-request objective (PerGap) under Target is neither met
// nor breached: the requests' attainment bracket it gives is not entirely
// below Target.
// A reading under Target is a breach when its run of consecutive readings
// under Target (see MinBreachCount) holds a step that counted enough.
func (o ObjectiveInput) breachedAt(i int) bool {
	if o.breach != nil {
		return i < len(o.breach) && o.breach[i]
	}
	if !o.under(i) {
		return false
	}
	for k := i; k >= 0 && o.under(k); k-- {
		if o.enough(k) {
			return true
		}
	}
	for k := i + 1; o.under(k); k++ {
		if o.enough(k) {
			return true
		}
	}
	return false
}

// under reports whether o reads under Target at step i on a reading of
// its own population (not PerGap).
func (o ObjectiveInput) under(i int) bool { return o.known(i) && o.Good[i] < o.Target && !o.PerGap }

// breachSteps is breachedAt at every step of o.Good, in one pass per run
// of readings under Target.
func (o ObjectiveInput) breachSteps() []bool {
	out := make([]bool, len(o.Good))
	for i := 0; i < len(out); {
		if !o.under(i) {
			i++
			continue
		}
		j, ok := i, false
		for ; j < len(out) && o.under(j); j++ {
			ok = ok || o.enough(j)
		}
		for k := i; k < j; k++ {
			out[k] = ok
		}
		i = j
	}
	return out
}

// enough reports whether o's reading at step i counts enough observations
// to establish a breach (EnoughCount), or o carries no count.
func (o ObjectiveInput) enough(i int) bool {
	return o.Count == nil || i < len(o.Count) && EnoughCount(o.Count[i])
}

// EnoughCount reports whether a window's count of observations (requests),
// as the histogram's windowed rate × window gives it, establishes a breach:
// rounded to the nearest whole request, at least MinBreachCount; NaN is
// not enough. The count is rounded because it is an estimate of a whole
// number: rate() extrapolates the increase between the window's first and
// last samples to the window's edges, so a window holding exactly 10
// requests reads 9.998 or 10.01 depending on where the scrapes fall in it,
// and two stores scraping the same page a fraction of a second apart (or
// one store from step to step) read either. Compared unrounded, the
// threshold then split one breach into findings that start and end at
// arbitrary steps (issue 35: the embedded and remote diagnosis tables of
// TestRemoteModeSameAnswersLive differed by a row when a replayed page
// counted exactly 10 requests per 10 s window).
func EnoughCount(n float64) bool { return math.Round(n) >= MinBreachCount }

// TargetInput is one target's signals on the step grid (Input.Steps).
type TargetInput struct {
	Name       string
	Engine     string // catalogue engine ("vllm", "sglang", "tgi", …; "" unknown)
	Generation string // "v0", "v1" or ""
	// Values holds each available signal, one value per step, NaN where a
	// step has no data. A signal missing from the map is unavailable.
	Values map[Signal][]float64
	// Approximate notes, per signal, how the engine's value differs from
	// the exact quantity (catalog Availability.Note); it lowers confidence.
	Approximate map[Signal]string
	// Absent says, per signal the engine does not export, why (shown in
	// "not checked").
	Absent map[Signal]string
	// NoGPU, when non-empty, says why there is no GPU data for the target
	// (no agent configured, the agent exports no such metric, …).
	NoGPU string
	// SlowdownReasons holds, per step, the active slowdown reasons (for evidence); may be nil.
	SlowdownReasons []string
	// RunningCeiling is the configured maximum of running requests
	// (--max-num-seqs) when known, else 0: the observed plateau is used.
	RunningCeiling float64
	// CeilingSource says where RunningCeiling comes from (shown as the
	// evidence note), e.g. "max_num_seqs exported by the engine"; "" reads
	// "configured --max-num-seqs".
	CeilingSource string
	// GPUs are the target's GPUs, one entry each with its own GPU signals,
	// when the target names a GPU agent and the agent reports per-GPU
	// series. Throttling is then diagnosed per GPU, and the findings that
	// read GPU activity name the GPUs whose values crossed the threshold.
	// The target-level GPU signals in Values stay the across-GPU reduction.
	GPUs []GPUInput
	// Objectives are the latency objectives that apply to the target (its
	// SLO profile). With objectives, a window whose every objective is met
	// raises no warning for a performance class (it is an observation on
	// the healthy verdict), and the decode and batching rules are judged
	// against the breached objective instead of fixed latency thresholds.
	Objectives []ObjectiveInput
}

// GPURef names one GPU of a target's agent: its index ("0", "1", …) and
// UUID ("GPU-…", "" when the agent does not report it).
type GPURef struct {
	GPU  string
	UUID string
}

// GPUInput is one GPU's signals on the step grid: SMActive, DRAMActive,
// TensorActive, GPUUtil (ratios 0..1, mean over the rate window),
// ClockRatio (SM clock / max SM clock) and Slowdown (1 while a slowdown
// reason is active, else 0), each optional.
type GPUInput struct {
	GPURef
	Values map[Signal][]float64
	// SlowdownReasons holds, per step, the active slowdown reasons; may be nil.
	SlowdownReasons []string
}

// Input is everything a diagnosis needs.
type Input struct {
	Steps []time.Time
	// StallWindow is the window of the Progress, UpMin and WaitingSpan
	// signals (StallScrapes scrape intervals plus half of one).
	StallWindow time.Duration
	// Window is the rate window of the other rates and means.
	Window time.Duration
	// Scrape is the scrape interval (0: unknown); it sets BurstWindow.
	Scrape  time.Duration
	Targets []TargetInput
}

// Evidence is one signal's value and the threshold it was compared with.
type Evidence struct {
	Signal    string
	Value     float64
	Op        string // ">=", "<", "=", ">"
	Threshold float64
	Unit      string // "ratio", "requests", "s", "/s", "tokens", "scrapes"
	Note      string
}

// String renders evidence as "kv_cache_usage 0.953 ≥ 0.9 (note)"; an
// entry without a value or comparison (Value NaN, Op "") as "signal (note)".
func (e Evidence) String() string {
	op := map[string]string{">=": "≥", "<=": "≤"}[e.Op]
	if op == "" {
		op = e.Op
	}
	if math.IsNaN(e.Value) && e.Op == "" {
		// a statement without a value: "missing (sm_active: …)"
		if e.Note != "" {
			return e.Signal + " (" + e.Note + ")"
		}
		return e.Signal
	}
	s := e.Signal + " " + num(e.Value)
	if e.Unit != "" && e.Unit != "ratio" {
		s += " " + e.Unit
	}
	if e.Op != "" {
		s += " " + op + " " + num(e.Threshold)
	}
	if e.Note != "" {
		s += " (" + e.Note + ")"
	}
	return s
}

// num renders v with three significant digits, without an exponent between
// 0.001 and 10^6 and without trailing zeros.
func num(v float64) string {
	if math.IsNaN(v) {
		return "no data"
	}
	a := math.Abs(v)
	if a == 0 {
		return "0"
	}
	if a < 1e-3 || a >= 1e6 {
		return strconv.FormatFloat(v, 'g', 3, 64)
	}
	prec := max(0, 2-int(math.Floor(math.Log10(a))))
	s := strconv.FormatFloat(v, 'f', prec, 64)
	if strings.Contains(s, ".") {
		s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	}
	return s
}

// Finding is one class holding for one target over a contiguous run of steps.
type Finding struct {
	Target string
	// GPUs are the GPUs the finding is about: for gpu_throttled, the one
	// throttled GPU (one finding per GPU); for the rules that read GPU
	// activity (prefill compute, decode bandwidth, under-utilised, frontend),
	// the GPUs whose own value crossed the threshold at the finding's last
	// step. Empty for findings that read no GPU signal or without per-GPU data.
	GPUs       []GPURef
	Class      Class
	Severity   Severity
	Confidence Confidence
	// ConfidenceWhy lists why the confidence is below high.
	ConfidenceWhy []string
	// Evidence at the finding's last step.
	Evidence []Evidence
	// NotChecked lists what could not be checked (no GPU data, signals the
	// engine does not export) and why.
	NotChecked     []string
	Summary        string
	Recommendation string
	// TwinAdvice (issue 35) is the capacity twin's predicted effect of the recommendation's
	// change ("Capacity twin (…): raise --max-num-seqs to 512: TTFT p99 predicted 1.2 s
	// [774 ms, 2.67 s], E2E p99 …"), also appended to Recommendation; empty where the target
	// has no calibrated twin or the class's advice is no change the twin models. Set by the
	// diagnosis query (pkg/queries), not by the rules.
	TwinAdvice string
	Start, End time.Time
	// Current is true when the finding holds at the target's last step with data.
	Current bool
}

// Text renders the finding for an annotation or a table cell: summary,
// evidence, what was not checked, and the recommendation.
func (f Finding) Text() string {
	var b strings.Builder
	b.WriteString(f.Summary)
	if len(f.Evidence) > 0 {
		b.WriteString(" Evidence: ")
		b.WriteString(EvidenceText(f.Evidence))
		b.WriteString(".")
	}
	if len(f.NotChecked) > 0 {
		b.WriteString(" Not checked: ")
		b.WriteString(strings.Join(f.NotChecked, "; "))
		b.WriteString(".")
	}
	if f.Recommendation != "" {
		b.WriteString(" → ")
		b.WriteString(f.Recommendation)
	}
	return b.String()
}

// EvidenceText joins evidence with "; ".
func EvidenceText(ev []Evidence) string {
	parts := make([]string, len(ev))
	for i, e := range ev {
		parts[i] = e.String()
	}
	return strings.Join(parts, "; ")
}

// TargetResult is one target's diagnosis.
type TargetResult struct {
	Target string
	// Primary is the highest-priority class at each step ("" before the
	// target has any data).
	Primary []Class
	// Active says, per class, at which steps it held.
	Active map[Class][]bool
	// Findings are the runs of each class over the range, in start order.
	Findings []Finding
	// Last is the index of the target's last step with data, −1 if none.
	Last int
	// GPUs are the target's GPUs when per-GPU data exists (TargetInput.GPUs).
	GPUs []GPURef
	// GPUActive says, per GPU index, at which steps gpu_throttled held on
	// that GPU (only with per-GPU data).
	GPUActive map[string][]bool
}

// Current returns the findings that hold at the target's last step with data.
func (r TargetResult) Current() []Finding {
	var out []Finding
	for _, f := range r.Findings {
		if f.Current {
			out = append(out, f)
		}
	}
	return out
}

// Result is the diagnosis of every target, in input order.
type Result struct {
	Steps   []time.Time
	Targets []TargetResult
}

// GPUList renders the finding's GPUs' indexes and UUIDs as comma-separated lists.
func (f Finding) GPUList() (gpus, uuids string) {
	g, u := make([]string, len(f.GPUs)), make([]string, len(f.GPUs))
	for k, r := range f.GPUs {
		g[k], u[k] = r.GPU, r.UUID
	}
	return strings.Join(g, ","), strings.Join(u, ",")
}
