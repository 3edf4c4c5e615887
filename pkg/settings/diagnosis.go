package settings

import (
	"fmt"
	"math"
)

// Diagnosis holds the thresholds of the bottleneck diagnosis (jsonData key
// "diagnosis"). Every field left out, or 0, takes the default in
// DefaultDiagnosis; the README's "Diagnosis" section lists them. Ratios are
// 0..1, times seconds, rates per second.
type Diagnosis struct {
	// StallScrapes is how many scrape intervals the progress counters
	// (generation tokens, finished requests, engine steps) may stay unchanged
	// while work is pending before a target is diagnosed as stalled.
	StallScrapes int `json:"stallScrapes,omitempty"`
	// QueueWaitingMin is the number of waiting requests that counts as a queue.
	QueueWaitingMin float64 `json:"queueWaitingMin,omitempty"`
	// QueueTimeShare is the share of mean E2E latency spent waiting (queue
	// time) above which the queue is the bottleneck.
	QueueTimeShare float64 `json:"queueTimeShare,omitempty"`
	// RunningCeilingRatio: running requests at or above this share of their
	// ceiling (the highest running count seen in the range) are "at the ceiling".
	RunningCeilingRatio float64 `json:"runningCeilingRatio,omitempty"`
	// KVUsageHigh is the KV-cache usage (0..1) that counts as pressure.
	KVUsageHigh float64 `json:"kvUsageHigh,omitempty"`
	// KVHeadroom: below this KV-cache usage there is room to raise --max-num-seqs.
	KVHeadroom float64 `json:"kvHeadroom,omitempty"`
	// PreemptionsPerSecond is the preemption rate (per second) that counts as preempting.
	PreemptionsPerSecond float64 `json:"preemptionsPerSecond,omitempty"`
	// PrefillTokenShare is the share of the tokens the engine processes that
	// are prompt (prefill) tokens above which its work is prefill-dominated.
	PrefillTokenShare float64 `json:"prefillTokenShare,omitempty"`
	// LongPromptTokens is the mean prompt length (tokens per request) that counts as long.
	LongPromptTokens float64 `json:"longPromptTokens,omitempty"`
	// SMActiveHigh is the SM activity (0..1) that counts as compute-busy; decode
	// is memory-bound only below it.
	SMActiveHigh float64 `json:"smActiveHigh,omitempty"`
	// DRAMActiveHigh is the DRAM-bandwidth activity (0..1) that counts as memory-bound.
	DRAMActiveHigh float64 `json:"dramActiveHigh,omitempty"`
	// ITLHigh is the mean inter-token latency (seconds) that counts as slow decoding.
	ITLHigh float64 `json:"itlHigh,omitempty"`
	// DecodeBatchMin is the running-request count that counts as a large decode batch.
	DecodeBatchMin float64 `json:"decodeBatchMin,omitempty"`
	// ClockRatioMin: an SM clock below this share of its maximum while a
	// slowdown reason is active is throttling.
	ClockRatioMin float64 `json:"clockRatioMin,omitempty"`
	// FrontendShare is the share of mean E2E spent outside the engine
	// (E2E − queue − inference) above which the frontend is the bottleneck.
	FrontendShare float64 `json:"frontendShare,omitempty"`
	// GPUBusy is the SM activity above which the GPU counts as busy.
	GPUBusy float64 `json:"gpuBusy,omitempty"`
	// HOLTTFTRatio: head-of-line blocking needs the window's mean TTFT at least
	// this many times the mean prefill time of a request.
	HOLTTFTRatio float64 `json:"holTtftRatio,omitempty"`
	// HOLTailTokens: head-of-line blocking needs the 99th percentile of
	// prompt tokens per request (prompt-length histogram) at or above this.
	HOLTailTokens float64 `json:"holTailTokens,omitempty"`
	// HOLTailRatio: … and that 99th percentile at least this many times the
	// median prompt: a mix of short prompts with a tail of long ones.
	HOLTailRatio float64 `json:"holTailRatio,omitempty"`
	// HOLPrefillPerToken is the prefill time per prompt token (seconds) still
	// counted as normal for head-of-line blocking.
	HOLPrefillPerToken float64 `json:"holPrefillPerToken,omitempty"`
	// HOLTailWorkShare: head-of-line blocking also holds with slow prefill on
	// busy SMs when at least this share of the prompt tokens is in excess of
	// the median prompt, 1 − median prompt ÷ prompt tokens per finished
	// request (issue 35): the long tail's tokens, so the GPU's prefill work is
	// the long prompts', not the bulk's. A ratio in (0, 1].
	HOLTailWorkShare float64 `json:"holTailWorkShare,omitempty"`
	// UnderRunning is the mean number of running requests below which a target counts as lightly loaded.
	UnderRunning float64 `json:"underRunning,omitempty"`
	// SMActiveLow is the SM activity below which the GPU counts as idle.
	SMActiveLow float64 `json:"smActiveLow,omitempty"`
	// AbortShare is the share of ended requests aborted by their clients above
	// which aborted traffic is reported.
	AbortShare float64 `json:"abortShare,omitempty"`
	// Hysteresis relaxes a threshold by this share while its finding is
	// active, so a value hovering at the threshold does not flap.
	Hysteresis float64 `json:"hysteresis,omitempty"`
	// ClockCapRatio: an SM clock below this share of its maximum while the
	// GPU is busy and no thermal or hardware slowdown reason is active is a
	// power (or application-clock) cap that limits the GPU.
	ClockCapRatio float64 `json:"clockCapRatio,omitempty"`
	// PowerLimitRatio: an enforced power limit below this share of the
	// board's default limit is a lowered limit; on a busy GPU whose SM
	// clock is then below ClockRatioMin of its maximum it is a power cap
	// (diagnosis class power_capped).
	PowerLimitRatio float64 `json:"powerLimitRatio,omitempty"`
	// ErrorShare is the share of ended requests that end with an error
	// above which an error surge is reported.
	ErrorShare float64 `json:"errorShare,omitempty"`
	// SmallBatchRunning: a batch averaging fewer running requests than
	// this (but at least UnderRunning), with nothing waiting and the GPU's
	// SMs and DRAM mostly idle, is too small for the hardware.
	SmallBatchRunning float64 `json:"smallBatchRunning,omitempty"`
	// SLOProfile names the SLO profile (sloProfiles) whose latency
	// objectives anchor the diagnosis: with every applicable objective met a
	// window raises no performance warning. Empty: the first profile.
	SLOProfile string `json:"sloProfile,omitempty"`
	// MaxNumSeqs is the running-request ceiling (vLLM --max-num-seqs) the
	// queue-saturation rule uses for targets whose engine does not export
	// its own (SGLang max_running_requests, TensorRT-LLM
	// max_num_active_requests, a max_num_seqs label on a *_config_info
	// gauge). 0, the default, means the observed plateau: the highest
	// running count in the queried range.
	MaxNumSeqs float64 `json:"maxNumSeqs,omitempty"`
}

// DefaultDiagnosis returns the documented default thresholds.
func DefaultDiagnosis() Diagnosis {
	return Diagnosis{
		StallScrapes:         2,
		QueueWaitingMin:      1,
		QueueTimeShare:       0.3,
		RunningCeilingRatio:  0.9,
		KVUsageHigh:          0.9,
		KVHeadroom:           0.8,
		PreemptionsPerSecond: 0.001,
		PrefillTokenShare:    0.8,
		LongPromptTokens:     2000,
		SMActiveHigh:         0.8,
		DRAMActiveHigh:       0.6,
		ITLHigh:              0.012,
		DecodeBatchMin:       64,
		ClockRatioMin:        0.9,
		FrontendShare:        0.3,
		GPUBusy:              0.5,
		HOLTTFTRatio:         1.5,
		HOLTailTokens:        8000,
		HOLTailRatio:         10,
		HOLPrefillPerToken:   0.0002,
		HOLTailWorkShare:     0.5,
		UnderRunning:         1,
		SMActiveLow:          0.1,
		AbortShare:           0.05,
		Hysteresis:           0.1,
		ClockCapRatio:        0.85,
		PowerLimitRatio:      0.95,
		ErrorShare:           0.05,
		SmallBatchRunning:    4,
	}
}

// applyDefaults fills zero fields with DefaultDiagnosis.
func (d *Diagnosis) applyDefaults() {
	def := DefaultDiagnosis()
	if d.StallScrapes == 0 {
		d.StallScrapes = def.StallScrapes
	}
	for _, p := range []struct{ v, def *float64 }{
		{&d.QueueWaitingMin, &def.QueueWaitingMin}, {&d.QueueTimeShare, &def.QueueTimeShare},
		{&d.RunningCeilingRatio, &def.RunningCeilingRatio}, {&d.KVUsageHigh, &def.KVUsageHigh},
		{&d.KVHeadroom, &def.KVHeadroom}, {&d.PreemptionsPerSecond, &def.PreemptionsPerSecond},
		{&d.PrefillTokenShare, &def.PrefillTokenShare}, {&d.LongPromptTokens, &def.LongPromptTokens},
		{&d.SMActiveHigh, &def.SMActiveHigh}, {&d.DRAMActiveHigh, &def.DRAMActiveHigh},
		{&d.ITLHigh, &def.ITLHigh}, {&d.DecodeBatchMin, &def.DecodeBatchMin},
		{&d.ClockRatioMin, &def.ClockRatioMin}, {&d.FrontendShare, &def.FrontendShare},
		{&d.GPUBusy, &def.GPUBusy}, {&d.HOLTTFTRatio, &def.HOLTTFTRatio},
		{&d.HOLPrefillPerToken, &def.HOLPrefillPerToken}, {&d.HOLTailTokens, &def.HOLTailTokens}, {&d.HOLTailRatio, &def.HOLTailRatio},
		{&d.HOLTailWorkShare, &def.HOLTailWorkShare}, {&d.UnderRunning, &def.UnderRunning},
		{&d.SMActiveLow, &def.SMActiveLow}, {&d.AbortShare, &def.AbortShare}, {&d.Hysteresis, &def.Hysteresis},
		{&d.ClockCapRatio, &def.ClockCapRatio}, {&d.PowerLimitRatio, &def.PowerLimitRatio}, {&d.ErrorShare, &def.ErrorShare}, {&d.SmallBatchRunning, &def.SmallBatchRunning},
	} {
		if *p.v == 0 {
			*p.v = *p.def
		}
	}
}

// validate checks the thresholds: ratios in (0, 1], other values positive and finite.
func (d *Diagnosis) validate() error {
	if d.StallScrapes < 1 || d.StallScrapes > 100 {
		return fmt.Errorf("diagnosis.stallScrapes: %d must be between 1 and 100", d.StallScrapes)
	}
	ratios := []struct {
		name string
		v    float64
	}{
		{"queueTimeShare", d.QueueTimeShare}, {"runningCeilingRatio", d.RunningCeilingRatio},
		{"kvUsageHigh", d.KVUsageHigh}, {"kvHeadroom", d.KVHeadroom}, {"prefillTokenShare", d.PrefillTokenShare},
		{"smActiveHigh", d.SMActiveHigh}, {"dramActiveHigh", d.DRAMActiveHigh}, {"clockRatioMin", d.ClockRatioMin},
		{"frontendShare", d.FrontendShare}, {"gpuBusy", d.GPUBusy}, {"smActiveLow", d.SMActiveLow},
		{"abortShare", d.AbortShare}, {"hysteresis", d.Hysteresis}, {"clockCapRatio", d.ClockCapRatio},
		{"powerLimitRatio", d.PowerLimitRatio}, {"errorShare", d.ErrorShare}, {"holTailWorkShare", d.HOLTailWorkShare},
	}
	for _, r := range ratios {
		if math.IsNaN(r.v) || r.v <= 0 || r.v > 1 {
			return fmt.Errorf("diagnosis.%s: %v must be a ratio in (0, 1]", r.name, r.v)
		}
	}
	positives := []struct {
		name string
		v    float64
	}{
		{"queueWaitingMin", d.QueueWaitingMin}, {"preemptionsPerSecond", d.PreemptionsPerSecond},
		{"longPromptTokens", d.LongPromptTokens}, {"itlHigh", d.ITLHigh}, {"decodeBatchMin", d.DecodeBatchMin},
		{"holTtftRatio", d.HOLTTFTRatio}, {"holPrefillPerToken", d.HOLPrefillPerToken},
		{"holTailTokens", d.HOLTailTokens}, {"holTailRatio", d.HOLTailRatio}, {"underRunning", d.UnderRunning},
		{"smallBatchRunning", d.SmallBatchRunning},
	}
	for _, p := range positives {
		if math.IsNaN(p.v) || math.IsInf(p.v, 0) || p.v <= 0 {
			return fmt.Errorf("diagnosis.%s: %v must be a positive number", p.name, p.v)
		}
	}
	if math.IsNaN(d.MaxNumSeqs) || math.IsInf(d.MaxNumSeqs, 0) || d.MaxNumSeqs < 0 || d.MaxNumSeqs != math.Trunc(d.MaxNumSeqs) {
		return fmt.Errorf("diagnosis.maxNumSeqs: %v must be a whole number of requests (0: the observed plateau)", d.MaxNumSeqs)
	}
	return nil
}
