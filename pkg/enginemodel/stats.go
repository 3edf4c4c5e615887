package enginemodel

// Reasons are the finish reasons in the order of Stats.Success.
var Reasons = [3]string{ReasonStop, ReasonLength, ReasonAbort}

// reasonIndex is r's index in Reasons (anything else counts as an abort).
func reasonIndex(r string) int {
	switch r {
	case ReasonStop:
		return 0
	case ReasonLength:
		return 1
	default:
		return 2
	}
}

// Stats holds every vLLM metric's state: what a /metrics page would show. Counters are
// float64 like prometheus_client's (tokens, preemptions, requests); histograms are classic
// (seconds for latencies, tokens for lengths), observed as vLLM observes them.
type Stats struct {
	TTFT, ITL, ReqTPOT, E2E, Queue, Inference, Prefill, Decode    *Histogram
	PromptTokensH, GenTokensH, MaxGenTokensH, ParamsN, MaxTokensH *Histogram
	IterationTokens, PrefillKVComputed                            *Histogram

	PromptTokensTotal, GenerationTokens, Preemptions float64
	PromptCached, PrefixQueries, PrefixHits          float64
	// Success counts finished requests per finish reason (index as in Reasons).
	Success [3]float64
}

func newVLLMStats(v Version, maxModelLen int) *Stats {
	ttft, tpot, lat, iter := bucketsTTFTV1, bucketsTPOTV1, bucketsLatencyV1, bucketsIterV1
	if !v.V1() {
		ttft, tpot, lat, iter = bucketsTTFTV0, bucketsTPOTV0, bucketsLatencyV0, bucketsIterV0()
	}
	tok := buckets125(maxModelLen)
	return &Stats{
		TTFT: newHistogram(ttft), ITL: newHistogram(tpot), ReqTPOT: newHistogram(tpot),
		E2E: newHistogram(lat), Queue: newHistogram(lat), Inference: newHistogram(lat),
		Prefill: newHistogram(lat), Decode: newHistogram(lat),
		PromptTokensH: newHistogram(tok), GenTokensH: newHistogram(tok), MaxGenTokensH: newHistogram(tok),
		ParamsN: newHistogram(bucketsParamsN), MaxTokensH: newHistogram(tok),
		IterationTokens: newHistogram(iter), PrefillKVComputed: newHistogram(tok),
	}
}

func (s *Stats) reset() {
	for _, h := range s.hists() {
		h.reset()
	}
	s.PromptTokensTotal, s.GenerationTokens, s.Preemptions = 0, 0, 0
	s.PromptCached, s.PrefixQueries, s.PrefixHits = 0, 0, 0
	s.Success = [3]float64{}
}

func (s *Stats) hists() []*Histogram {
	return []*Histogram{s.TTFT, s.ITL, s.ReqTPOT, s.E2E, s.Queue, s.Inference, s.Prefill, s.Decode,
		s.PromptTokensH, s.GenTokensH, s.MaxGenTokensH, s.ParamsN, s.MaxTokensH, s.IterationTokens, s.PrefillKVComputed}
}

func (s *Stats) prefixQuery(prompt, cached int) {
	s.PrefixQueries += float64(prompt)
	s.PrefixHits += float64(cached)
}

// finished observes the per-request histograms of a normally finished request.
func (s *Stats) finished(r *Request, v Version) {
	s.Success[reasonIndex(r.FinishReason)]++
	queue := r.Scheduled - r.Queued
	s.Queue.observe(queue)
	s.Prefill.observe(r.FirstToken - r.Scheduled)
	decode := r.LastToken - r.FirstToken
	s.Decode.observe(decode)
	s.Inference.observe(r.LastToken - r.Scheduled)
	s.E2E.observe(r.Finished - r.Arrival)
	tpot := 0.0
	if r.Generated > 1 {
		tpot = decode / float64(r.Generated-1)
	}
	s.ReqTPOT.observe(tpot)
	s.PromptTokensH.observe(float64(r.PromptTokens))
	s.GenTokensH.observe(float64(r.Generated))
	s.MaxGenTokensH.observe(float64(r.MaxTokens))
	s.MaxTokensH.observe(float64(r.MaxTokens))
	s.ParamsN.observe(1)
	s.PrefillKVComputed.observe(float64(r.PromptTokens - r.CachedTokens))
}
