package twin

import (
	"context"
	"fmt"
	"math"
	"math/bits"
	"slices"
	"time"

	"github.com/inferscope/inferscope-llm-datasource/pkg/enginemodel"
)

// Source says where a calibrated parameter came from.
type Source string

// Parameter sources.
const (
	FromData    Source = "data"    // read from the target's history
	FromFit     Source = "fit"     // fitted by simulating the twin against the history
	FromDefault Source = "default" // not exported: the simulator's default
	FromSetting Source = "setting" // not exported: the caller's setting (Known: a query's maxNumSeqs, -max-num-seqs)
)

// Param is one calibrated parameter: its value in words and where it came from, and for the
// step-time law's rows the held-out fit error (relative root mean square of the windows' mean
// ITL; NaN on every other row).
type Param struct {
	Name, Value string
	Source      Source
	FitError    float64
}

// Twin is a calibrated simulator configuration of one target and what each parameter is
// based on.
type Twin struct {
	Config enginemodel.Config
	Params []Param
	// Law is the step-time law's choice on the history (issue 35).
	Law LawFit
}

// Known are settings the caller knows and the history does not carry (zero: unknown, use
// the simulator's default): vLLM's --max-num-seqs and --max-num-batched-tokens.
type Known struct {
	MaxNumSeqs, MaxNumBatchedTokens int
}

// Calibrate builds the twin of a target from its history: arrival rate, prompt and output
// lengths (lognormal, mean from sum/count and shape fitted to the histogram's buckets), KV
// blocks and block size (cache_config_info), prefix caching and its hit ratio (token
// counters), and the step-time model's effective memory bandwidth and compute (BWEfficiency
// and MFU of the simulator's roofline), fitted by simulating the twin at the observed load
// until its mean ITL and mean prefill time match the history's. The model and GPU figures
// (parameter count, KV bytes per token, peak FLOP/s and bandwidth) are the simulator's
// defaults: only the effective fractions are fitted, which absorbs a different model or GPU
// into them.
func Calibrate(ctx context.Context, o Observed, k Known) (Twin, error) {
	cfg := enginemodel.DefaultConfig()
	def := cfg
	cfg.ClientTimeout = 0
	var ps []Param
	add := func(name string, v any, s Source) {
		ps = append(ps, Param{Name: name, Value: fmt.Sprint(v), Source: s, FitError: math.NaN()})
	}
	if !(o.Rate > 0) {
		return Twin{}, fmt.Errorf("twin: no finished request in the history: nothing to calibrate")
	}
	cfg.Rate = o.Rate
	add("arrival rate (req/s)", round3(o.Rate), FromData)
	var err error
	if cfg.Prompt, err = fitLognormal(o.PromptMean, o.PromptBuckets, cfg.Prompt); err != nil {
		return Twin{}, fmt.Errorf("twin: prompt lengths: %w", err)
	}
	add("prompt tokens (lognormal mean, sigma)", fmt.Sprintf("%.0f, %.2f", cfg.Prompt.Mean, cfg.Prompt.Sigma), FromData)
	// The requests' max_tokens before the output lengths: an output the history shows past
	// the simulator's default of 1024 would be cut there (the demo's KV-pressure target,
	// max_tokens 4096 and outputs of about 1,200 tokens, had its twin's outputs cut to
	// 1,024 tokens at most and its queue, hence TTFT p99, a fraction of the observed).
	if o.MaxTokensMean >= 1 {
		cfg.MaxTokens = int(math.Round(o.MaxTokensMean))
		add("max_tokens (request parameter, mean)", cfg.MaxTokens, FromData)
	} else {
		add("max_tokens (request parameter, mean)", cfg.MaxTokens, FromDefault)
	}
	if cfg.Output, err = fitLognormal(o.OutputMean, o.OutputBuckets, cfg.Output); err != nil {
		return Twin{}, fmt.Errorf("twin: output lengths: %w", err)
	}
	cfg.Output.Max = min(cfg.Output.Max, max(cfg.MaxTokens, def.Output.Max))
	cfg.Prompt.Max = min(cfg.Prompt.Max, max(cfg.Model.MaxModelLen-cfg.MaxTokens, def.Prompt.Max))
	add("output tokens (lognormal mean, sigma)", fmt.Sprintf("%.0f, %.2f", cfg.Output.Mean, cfg.Output.Sigma), FromData)
	// given sets *dst to v where v > 0 (read from the history or set, as s
	// says) and lists the parameter with the value the twin uses.
	given := func(name string, dst *int, v int, s Source) {
		if v > 0 {
			*dst = v
			add(name, v, s)
		} else {
			add(name, *dst, FromDefault)
		}
	}
	given("block size", &cfg.BlockSize, o.BlockSize, FromData)
	if o.NumGPUBlocks > 0 {
		cfg.NumGPUBlocks = o.NumGPUBlocks
		add("KV blocks", o.NumGPUBlocks, FromData)
	} else {
		add("KV blocks", "from GPU memory", FromDefault)
	}
	if !math.IsNaN(o.PrefixHitRatio) {
		cfg.PrefixCaching = o.PrefixHitRatio > 0 || o.PrefixCaching
		cfg.PrefixHitRatio = o.PrefixHitRatio
		add("prefix-cache hit ratio", round3(o.PrefixHitRatio), FromData)
	} else {
		add("prefix-cache hit ratio", cfg.PrefixHitRatio, FromDefault)
	}
	given("max_num_seqs", &cfg.MaxNumSeqs, k.MaxNumSeqs, FromSetting)
	given("max_num_batched_tokens", &cfg.MaxNumBatchedTokens, k.MaxNumBatchedTokens, FromSetting)
	lf, err := checkAgainstRoofline(ctx, fitLaws(cfg, o), o, o.Rate)
	if err != nil {
		return Twin{}, err
	}
	if lf, err = debiasShape(ctx, lf, o, o.Rate); err != nil {
		return Twin{}, err
	}
	cfg.StepLaw = lf.Law
	if err := fitStepTime(ctx, &cfg, o); err != nil {
		return Twin{}, err
	}
	law := lf.Law.Kind
	if law == enginemodel.LawRoofline {
		law = "roofline"
	}
	if lf.Why != "" {
		law += " (kept without a choice: " + lf.Why + ")"
	} else if lf.Undecided {
		law += fmt.Sprintf(" (chosen on %d windows, the conservative choice: its held-out step-time error beats the roofline's, but not by 10 %% more than on the roofline's own simulated windows, so the history cannot tell them apart; its step time grows faster with the batch, its knee is the lower)", lf.Windows)
	} else {
		law += fmt.Sprintf(" (chosen on %d windows by held-out step-time error)", lf.Windows)
	}
	ps = append(ps, Param{Name: "step-time law", Value: law, Source: FromFit, FitError: lf.Errors[lf.Law.Kind]})
	for _, k := range enginemodel.StepLaws {
		name := k
		if k == enginemodel.LawRoofline {
			name = "roofline"
		}
		if e := lf.Errors[k]; !math.IsNaN(e) {
			v := fmt.Sprintf("%.1f %%", 100*e)
			if r, ok := lf.RefErrors[k]; ok {
				v += fmt.Sprintf(" (on the roofline's own simulated windows: %.1f %%)", 100*r)
			}
			ps = append(ps, Param{Name: "step-time law held-out step-time error: " + name, Value: v, Source: FromFit, FitError: e})
		}
	}
	if lf.Law.Kind == enginemodel.LawPerSequence {
		add("per-sequence decode cost (µs per sequence per step)", math.Round(lf.Law.PerSeqDecode*1e7)/10, FromFit)
	}
	if lf.Law.Kind == enginemodel.LawMemoryFloor {
		add("decode batch at which the weight-read floor doubles (sequences)", math.Round(lf.Law.FloorBatch), FromFit)
	}
	if lf.Debias > 0 {
		add("step-time law shape: bias correction (×, from a refit on the twin's own simulated windows)", round3(lf.Debias), FromFit)
	}
	add("decode bandwidth efficiency", round3(cfg.GPU.BWEfficiency), FromFit)
	add("prefill compute efficiency (MFU)", round3(cfg.GPU.MFU), FromFit)
	if err := cfg.Validate(); err != nil {
		return Twin{}, fmt.Errorf("twin: calibrated configuration: %w", err)
	}
	return Twin{Config: cfg, Params: ps, Law: lf}, nil
}

func round3(v float64) float64 { return math.Round(v*1000) / 1000 }

// fitLognormal fits a lognormal of mean mean (the histogram's sum/count) whose shape sigma
// minimises the squared distance between its CDF and the histogram's at each finite bound
// (grid 0.02..2.5 by 0.01); Min stays def's, and Max too unless the histogram shows lengths
// past it: when the highest bucket holding observations starts at or above def.Max, Max is
// raised to that bucket's upper bound (the caller caps it at max_tokens or the model length).
func fitLognormal(mean float64, bs []Bucket, def enginemodel.LengthDist) (enginemodel.LengthDist, error) {
	if !(mean >= 1) {
		return def, fmt.Errorf("no mean length in the history")
	}
	d := enginemodel.LengthDist{Kind: "lognormal", Mean: mean, Sigma: def.Sigma, Min: def.Min, Max: def.Max}
	if len(bs) == 0 || bs[len(bs)-1].Count <= 0 {
		return d, nil
	}
	total := bs[len(bs)-1].Count
	if top := topBucket(bs); top > 0 && !math.IsInf(bs[top].Le, 1) && bs[top-1].Le >= float64(def.Max) {
		d.Max = int(bs[top].Le)
	}
	best, bestErr := def.Sigma, math.Inf(1)
	for s := 0.02; s <= 2.5; s += 0.01 {
		mu := math.Log(mean) - s*s/2
		var e float64
		for _, b := range bs {
			if math.IsInf(b.Le, 1) {
				continue
			}
			model := 0.5 * math.Erfc(-(math.Log(b.Le+0.5)-mu)/(s*math.Sqrt2))
			diff := model - b.Count/total
			e += diff * diff
		}
		if e < bestErr {
			best, bestErr = s, e
		}
	}
	d.Sigma = best
	return d, nil
}

// topBucket is the index of the first bucket of cumulative bs holding every observation
// (the highest bucket with observations in it).
func topBucket(bs []Bucket) int {
	total := bs[len(bs)-1].Count
	for i, b := range bs {
		if b.Count >= total {
			return i
		}
	}
	return len(bs) - 1
}

// calibrationSpan is the simulated time of one calibration run (after warmUp).
const (
	calibrationSpan = 600.0
	warmUp          = 120.0
)

// MaxRunRequests bounds the cost of one simulated run: a run after the warm-up lasts its
// span (calibrationSpan, evalSpan) or MaxRunRequests / rate seconds, whichever is shorter,
// but at least minRunSpan; the warm-up lasts warmUp or MaxRunRequests / 4 / rate seconds,
// at least 30 s. Below 33 req/s nothing is shortened (the validated range). One evaluation
// of the default configuration at 4 req/s (about 4,400 requests) costs about 95 ms of CPU
// (BenchmarkEvaluate), so a run costs at most about 0.8 CPU-s at those request lengths.
const (
	MaxRunRequests = 30000
	minRunSpan     = 120.0
)

// runSpan is the simulated time after the warm-up of a run at rate whose nominal span is span.
func runSpan(span, rate float64) float64 {
	if rate > 0 {
		span = math.Min(span, math.Max(minRunSpan, MaxRunRequests/rate))
	}
	return span
}

// runWarmUp is the warm-up of a run at rate (seconds): warmUp, shorter above 62.5 req/s.
func runWarmUp(rate float64) float64 {
	if rate > 0 {
		return math.Min(warmUp, math.Max(30, MaxRunRequests/4/rate))
	}
	return warmUp
}

// advance runs s to simulated time end in 60 s slices, stopping early with ctx's error when
// ctx ends (a cancelled query stops its twin within one slice).
func advance(ctx context.Context, s *enginemodel.Core, end float64) error {
	for t := 60.0; ; t += 60 {
		if err := ctx.Err(); err != nil {
			return err
		}
		s.AdvanceTo(math.Min(t, end))
		if t >= end {
			return nil
		}
	}
}

// simMeans simulates cfg for calibrationSpan and returns the mean ITL (decode time over
// generated tokens − 1, summed over requests, as vLLM's ITL histogram averages gaps) and the
// mean prefill time of the requests finished after the warm-up.
func simMeans(ctx context.Context, cfg enginemodel.Config) (itl, prefill float64, err error) {
	s, err := enginemodel.New(cfg, enginemodel.Options{RecordTruth: true})
	if err != nil {
		return 0, 0, err
	}
	warm := runWarmUp(cfg.Rate)
	if err := advance(ctx, s, warm+runSpan(calibrationSpan, cfg.Rate)); err != nil {
		return 0, 0, err
	}
	var dec, gaps, pre float64
	var n int
	for _, r := range s.Finished() {
		if r.Arrival < warm {
			continue
		}
		t, ok := r.Truth(cfg.Version)
		if !ok {
			continue
		}
		dec += t.Decode
		gaps += float64(max(r.Generated-1, 0))
		pre += t.Prefill
		n++
	}
	if n == 0 || gaps == 0 {
		return math.NaN(), math.NaN(), nil
	}
	return dec / gaps, pre / float64(n), nil
}

// fitStepTime fits cfg.GPU.BWEfficiency to o.ITLMean and cfg.GPU.MFU to o.PrefillMean by
// bisection on the twin itself (ITL falls as bandwidth rises, prefill time as compute
// rises), alternating three times since a step mixes both. A mean the history lacks keeps
// the default.
func fitStepTime(ctx context.Context, cfg *enginemodel.Config, o Observed) error {
	fit := func(target float64, set func(float64), pick func(itl, pre float64) float64) error {
		if math.IsNaN(target) || target <= 0 {
			return nil
		}
		lo, hi := 0.02, 1.0
		for i := 0; i < 10; i++ {
			mid := (lo + hi) / 2
			set(mid)
			itl, pre, err := simMeans(ctx, *cfg)
			if err != nil {
				return err
			}
			if v := pick(itl, pre); math.IsNaN(v) || v > target {
				lo = mid // too slow: more efficiency
			} else {
				hi = mid
			}
		}
		set((lo + hi) / 2)
		return nil
	}
	for round := 0; round < 3; round++ {
		if err := fit(o.ITLMean, func(v float64) { cfg.GPU.BWEfficiency = v }, func(itl, _ float64) float64 { return itl }); err != nil {
			return err
		}
		if err := fit(o.PrefillMean, func(v float64) { cfg.GPU.MFU = v }, func(_, pre float64) float64 { return pre }); err != nil {
			return err
		}
	}
	return nil
}

// Objective is one latency objective of an SLO profile: at least Target (0.99) of requests
// have Signal at or under Threshold seconds. Signal is one of Signals: "ttft", "tpot",
// "e2e", "queue_time", "prefill_time", "decode_time", "inference_time" per request, "itl"
// per token.
type Objective struct {
	Signal    string
	Threshold float64
	Target    float64
}

// Signals are the latency signals an Objective may name (the SLO profiles' stage names).
var Signals = []string{"queue_time", "prefill_time", "decode_time", "inference_time", "ttft", "itl", "tpot", "e2e"}

// Profile is a named set of objectives, all to hold at once.
type Profile struct {
	Name       string
	Objectives []Objective
}

// Outcome is what a simulated run at one load says: per-signal p50 and p99 (s), attainment
// per objective (share of the requests arrived in the scored span, after the warm-up, meeting
// it; those still unfinished evalDrain after the span count as missing it) and whether every
// objective holds. Unfinished counts those.
type Outcome struct {
	Rate                 float64
	P50, P99             map[string]float64
	Attainment           []float64
	Holds                bool
	Finished, Unfinished int
}

// evalSpan is the simulated time of one load evaluation after the warm-up: the requests
// arrived in it are scored.
const evalSpan = 900.0

// evalDrain is how long an evaluation runs on after its scored span (load going on) so that
// the requests arrived near its end can finish (issue 35): two minutes, four times the E2E
// of a 400-token answer at the 100 ms TPOT objective.
const evalDrain = 120.0

// Evaluate simulates cfg at rate (requests/s) for warmUp + evalSpan + evalDrain seconds (shorter above
// MaxRunRequests / evalSpan req/s: runSpan, runWarmUp) and scores the profile. It returns ctx's error
// when ctx ends first.
func Evaluate(ctx context.Context, cfg enginemodel.Config, rate float64, p Profile) (Outcome, error) {
	cfg.Rate = rate
	cfg.RateAmplitude = 0
	cfg.ClientTimeout = 0
	tokens := false
	for _, o := range p.Objectives {
		tokens = tokens || o.Signal == "itl"
	}
	s, err := enginemodel.New(cfg, enginemodel.Options{RecordTruth: true, RecordTokens: tokens})
	if err != nil {
		return Outcome{}, err
	}
	warm := runWarmUp(rate)
	end := warm + runSpan(evalSpan, rate)
	// The scored requests are those arrived in [warm, end); the run goes on for evalDrain
	// after end (arrivals going on) so that they can finish, and those still unfinished then
	// count as missing every objective. Requests arrived by time t are the finished ones and
	// those in the engine (running or waiting) at t.
	arrived := func() int {
		st := s.State()
		return len(s.Finished()) + st.Running + st.Waiting
	}
	if err := advance(ctx, s, warm); err != nil {
		return Outcome{}, err
	}
	a0 := arrived()
	if err := advance(ctx, s, end); err != nil {
		return Outcome{}, err
	}
	a1 := arrived()
	if err := advance(ctx, s, end+evalDrain); err != nil {
		return Outcome{}, err
	}
	finished := s.Finished()
	scored := func(r *enginemodel.Request) bool { return r.Arrival >= warm && r.Arrival < end }
	// Sized once (growing the token gaps' slice was most of an evaluation's allocation):
	// at most one value per finished request, at most one gap per token after the first.
	reqs, gaps := 0, 0
	for _, r := range finished {
		if scored(r) {
			reqs++
			gaps += max(len(r.TokenTimes)-1, 0)
		}
	}
	vals := map[string][]float64{}
	for _, sig := range []string{"ttft", "e2e", "queue_time", "prefill_time", "decode_time", "inference_time", "tpot"} {
		vals[sig] = make([]float64, 0, reqs)
	}
	itl := make([]float64, 0, gaps)
	out := Outcome{Rate: rate, P50: map[string]float64{}, P99: map[string]float64{}}
	for _, r := range finished {
		if !scored(r) {
			continue
		}
		t, ok := r.Truth(cfg.Version)
		if !ok {
			continue
		}
		out.Finished++
		vals["ttft"] = append(vals["ttft"], t.TTFT)
		vals["e2e"] = append(vals["e2e"], t.E2E)
		vals["queue_time"] = append(vals["queue_time"], t.Queue)
		vals["prefill_time"] = append(vals["prefill_time"], t.Prefill)
		vals["decode_time"] = append(vals["decode_time"], t.Decode)
		vals["inference_time"] = append(vals["inference_time"], t.Inference)
		if r.Generated > 1 {
			vals["tpot"] = append(vals["tpot"], t.TPOT)
		}
		itl = append(itl, t.ITL...)
	}
	// Before issue 35's fourth round every request in flight at the end of the run counted
	// as missing: about 1 % of a 900 s run's requests near the knee (the running batch),
	// the whole p99 budget, so the knee moved by up to 20 % with the run's seed.
	out.Unfinished = max(0, a1-a0-reqs)
	vals["itl"] = itl
	// Order statistics by selection, not sorting (the sort was a third of a knee's CPU):
	// the same values as sort.Float64s then nearest rank.
	for sig, v := range vals {
		if len(v) == 0 && sig != "itl" {
			continue // a signal no request gave has no entry (itl always has one)
		}
		out.P50[sig], out.P99[sig] = selectQuantile(v, 0.5), selectQuantile(v, 0.99)
	}
	out.Holds = out.Finished > 0
	for _, o := range p.Objectives {
		v := vals[o.Signal]
		missing := out.Unfinished
		if o.Signal == "itl" {
			missing = 0 // gaps of unfinished requests are not counted (vLLM observes them as they come)
		}
		good := countAtOrUnder(v, o.Threshold)
		a := math.NaN()
		if n := len(v) + missing; n > 0 {
			a = float64(good) / float64(n)
		}
		out.Attainment = append(out.Attainment, a)
		if !(a >= o.Target) {
			out.Holds = false
		}
	}
	return out, nil
}

// selectQuantile is quantile(v sorted by sort.Float64s, q) without sorting: the element of
// nearest rank ceil(q·n) (NaN first, as sort.Float64s orders them), found by selection in
// O(n) on average. It reorders v. NaN when v is empty.
func selectQuantile(v []float64, q float64) float64 {
	if len(v) == 0 {
		return math.NaN()
	}
	i := int(math.Ceil(q*float64(len(v)))) - 1
	return nthSmallest(v, min(max(i, 0), len(v)-1))
}

// nthSmallest returns the element sort.Float64s would put at index k of v (NaN values first),
// reordering v: quickselect with a three-way partition (runs of equal step times do not
// degrade it) and a sort of what is left once its budget of rounds is spent. k is in
// [0, len(v)).
func nthSmallest(v []float64, k int) float64 {
	nan := 0
	for i, x := range v {
		if math.IsNaN(x) {
			v[i], v[nan] = v[nan], v[i]
			nan++
		}
	}
	if k < nan {
		return math.NaN()
	}
	w, k := v[nan:], k-nan
	lo, hi := 0, len(w)
	for budget := 2*bits.Len(uint(len(w))) + 8; hi-lo > 16 && budget > 0; budget-- {
		a, b, c := w[lo], w[lo+(hi-lo)/2], w[hi-1]
		p := max(min(a, b), min(max(a, b), c)) // median of three
		// [lo, lt) < p, [lt, gt) == p, [gt, hi) > p
		lt, i, gt := lo, lo, hi
		for i < gt {
			switch x := w[i]; {
			case x < p:
				w[lt], w[i] = w[i], w[lt]
				lt++
				i++
			case x > p:
				gt--
				w[gt], w[i] = w[i], w[gt]
			default:
				i++
			}
		}
		switch {
		case k < lt:
			hi = lt
		case k >= gt:
			lo = gt
		default:
			return w[k]
		}
	}
	slices.Sort(w[lo:hi])
	return w[k]
}

// countAtOrUnder is sort.SearchFloat64s(sorted v, math.Nextafter(threshold, +Inf)) without
// sorting: the values at or under threshold, NaN values included (sort.Float64s puts them
// first); all of v when threshold is NaN.
func countAtOrUnder(v []float64, threshold float64) int {
	x := math.Nextafter(threshold, math.Inf(1))
	if math.IsNaN(x) {
		return len(v)
	}
	n := 0
	for _, y := range v {
		if y < x || math.IsNaN(y) {
			n++
		}
	}
	return n
}

// Knee returns the highest arrival rate (requests/s) at which the profile holds on cfg: the
// rate is doubled from start until the profile fails, then bisected to within 1 % of the
// bracket. 0 when it fails at start/64.
func Knee(ctx context.Context, cfg enginemodel.Config, p Profile, start float64) (float64, error) {
	if !(start > 0) {
		start = 1
	}
	lo, hi := 0.0, start
	for i := 0; ; i++ {
		o, err := Evaluate(ctx, cfg, hi, p)
		if err != nil {
			return 0, err
		}
		if !o.Holds {
			break
		}
		lo, hi = hi, hi*2
		if i > 12 {
			return lo, nil
		}
	}
	if lo == 0 {
		lo = hi / 64
		if o, err := Evaluate(ctx, cfg, lo, p); err != nil || !o.Holds {
			return 0, err
		}
	}
	for hi-lo > 0.01*hi {
		mid := (lo + hi) / 2
		o, err := Evaluate(ctx, cfg, mid, p)
		if err != nil {
			return 0, err
		}
		if o.Holds {
			lo = mid
		} else {
			hi = mid
		}
	}
	return lo, nil
}

// Change is a what-if: zero fields leave the twin as it is.
type Change struct {
	// Name says the change in words ("max-num-seqs 64").
	Name string
	// MaxNumSeqs sets --max-num-seqs.
	MaxNumSeqs int
	// AddReplicas spreads the load over this many more identical replicas (round robin: each
	// gets rate × n / (n + AddReplicas), n = Replicas or 1).
	AddReplicas, Replicas int
	// PromptScale multiplies every prompt length (2: prompts twice as long).
	PromptScale float64
	// PrefixHitRatio sets the prefix-cache hit ratio (caching on); NaN or 0 leaves it.
	PrefixHitRatio float64
	// LoadScale multiplies the arrival rate on the same replicas (2: twice the load; issue
	// 35); 0 or 1 leaves it.
	LoadScale float64
}

// Apply returns cfg and rate with the change applied.
func (c Change) Apply(cfg enginemodel.Config, rate float64) (enginemodel.Config, float64) {
	if c.MaxNumSeqs > 0 {
		cfg.MaxNumSeqs = c.MaxNumSeqs
		cfg.MaxNumBatchedTokens = max(cfg.MaxNumBatchedTokens, c.MaxNumSeqs)
	}
	if c.AddReplicas > 0 {
		n := float64(max(c.Replicas, 1))
		rate = rate * n / (n + float64(c.AddReplicas))
	}
	if c.PromptScale > 0 && c.PromptScale != 1 {
		cfg.Prompt.Mean *= c.PromptScale
		cfg.Prompt.Min = max(1, int(float64(cfg.Prompt.Min)*c.PromptScale))
		cfg.Prompt.Max = int(float64(cfg.Prompt.Max) * c.PromptScale)
		cfg.Model.MaxModelLen = max(cfg.Model.MaxModelLen, cfg.Prompt.Max+cfg.MaxTokens)
	}
	if c.PrefixHitRatio > 0 {
		cfg.PrefixCaching = true
		cfg.PrefixHitRatio = c.PrefixHitRatio
	}
	if c.LoadScale > 0 {
		rate *= c.LoadScale
	}
	return cfg, rate
}

// WhatIf predicts the outcome of a change at the given load on the twin.
func WhatIf(ctx context.Context, t Twin, rate float64, c Change, p Profile) (Outcome, error) {
	cfg, r := c.Apply(t.Config, rate)
	return Evaluate(ctx, cfg, r, p)
}

// Headroom is the knee over the current load (1: at the knee; below 1: past it).
func Headroom(knee, load float64) float64 {
	if !(load > 0) {
		return math.NaN()
	}
	return knee / load
}

// minTrendHistory is the shortest load history DaysToKnee extrapolates: one day, a whole
// daily cycle.
const minTrendHistory = 24 * time.Hour

// DaysToKnee returns the days until the load trend reaches knee: a least-squares line
// through the load history (requests/s over time), or, when the history covers at least two
// days, through each day's peak (the highest value of each 24 h from the first point, so a
// daily cycle is fitted where it matters: the peak reaches the knee first). +Inf when the
// trend is flat or falling, or rises by less than twice its standard error (noise), 0 when the last fitted value (under minTrendHistory of history: the mean
// load) is already past the knee, NaN with fewer than two points or, not past the knee, under
// minTrendHistory of history.
func DaysToKnee(series []Point, knee float64) float64 {
	pts := slices.DeleteFunc(slices.Clone(series), func(p Point) bool { return math.IsNaN(p.V) })
	if len(pts) < 2 {
		return math.NaN()
	}
	t0 := pts[0].T
	// Under a day of history the line fits the hour's noise and the engines' warm-up, not
	// growth: the demo's healthy target, flat at 3.9 req/s after a ramp in its first minutes,
	// read "2.2 days to the knee" beside a 10× headroom (issue 33). No number then.
	if pts[len(pts)-1].T.Sub(t0) < minTrendHistory {
		// A load already past the knee is past it whatever the trend.
		var sum float64
		for _, p := range pts {
			sum += p.V
		}
		if sum/float64(len(pts)) >= knee {
			return 0
		}
		return math.NaN()
	}
	if pts[len(pts)-1].T.Sub(t0) >= 48*time.Hour {
		var peaks []Point
		for _, p := range pts {
			d := int(p.T.Sub(t0) / (24 * time.Hour))
			if d >= len(peaks) {
				peaks = append(peaks, p)
			} else if p.V > peaks[d].V {
				peaks[d] = p
			}
		}
		// A last day shorter than a day has not seen its peak yet.
		if pts[len(pts)-1].T.Sub(t0) < time.Duration(len(peaks))*24*time.Hour-time.Hour {
			peaks = peaks[:len(peaks)-1]
		}
		if len(peaks) >= 2 {
			return linearDays(peaks, pts[len(pts)-1].T, knee)
		}
	}
	return linearDays(pts, pts[len(pts)-1].T, knee)
}

// DaysToKneeWords says a DaysToKnee result in words, telling apart what a null days figure
// merges: "in 3.2 days" (one decimal), "past the knee now" (0), "no rising trend" (+Inf: flat,
// falling or within its noise) and "no trend read: the range is under a day" (NaN: under
// minTrendHistory of history, or fewer than two points).
func DaysToKneeWords(days float64) string {
	switch {
	case math.IsNaN(days):
		return "no trend read: the range is under a day"
	case math.IsInf(days, 1):
		return "no rising trend"
	case days <= 0:
		return "past the knee now"
	}
	return fmt.Sprintf("in %.1f days", days)
}

// linearDays fits a least-squares line through pts and returns the days from now until it
// reaches knee (0 when its value at now is past it, +Inf when it does not rise).
func linearDays(pts []Point, now time.Time, knee float64) float64 {
	t0 := pts[0].T
	var sx, sy, sxx, sxy float64
	for _, p := range pts {
		x := p.T.Sub(t0).Hours() / 24
		sx += x
		sy += p.V
		sxx += x * x
		sxy += x * p.V
	}
	n := float64(len(pts))
	den := n*sxx - sx*sx
	if den == 0 {
		return math.NaN()
	}
	slope := (n*sxy - sx*sy) / den
	icpt := (sy - slope*sx) / n
	at := icpt + slope*now.Sub(t0).Hours()/24
	if at >= knee {
		return 0
	}
	if slope <= 0 || !risesBeyondNoise(pts, t0, slope, icpt, den/n) {
		return math.Inf(1)
	}
	return (knee - at) / slope
}

// risesBeyondNoise reports whether a fitted slope is more than twice its standard error
// (the usual least-squares SE: sqrt(Σ residual² / (n−2) / Σ(x−x̄)²), x in days; sxxc is
// Σ(x−x̄)²). A flat load with noise always fits some slope: over the demo's hour, the healthy
// target's noise extrapolated to "5.7 days to the knee" beside a 10× headroom (issue 33);
// a slope within two standard errors of 0 is read as flat (+Inf, "never").
func risesBeyondNoise(pts []Point, t0 time.Time, slope, icpt, sxxc float64) bool {
	if len(pts) < 3 || !(sxxc > 0) {
		return true
	}
	var rss float64
	for _, p := range pts {
		r := p.V - (icpt + slope*p.T.Sub(t0).Hours()/24)
		rss += r * r
	}
	se := math.Sqrt(rss / float64(len(pts)-2) / sxxc)
	return slope > 2*se
}

// Replicas is the recommended replica count for a load: ceil(load / (utilisation × knee)),
// the replicas that keep each one at the chosen share of its knee (at least 1; math.MaxInt
// when the count does not fit an int, e.g. a utilisation of 1e-300, rather than wrapping).
func Replicas(load, knee, utilisation float64) int {
	if !(knee > 0) || !(utilisation > 0) {
		return 0
	}
	n := math.Ceil(load / (utilisation * knee))
	if math.IsNaN(n) {
		return 0
	}
	if n >= math.MaxInt {
		return math.MaxInt
	}
	return max(1, int(n))
}
