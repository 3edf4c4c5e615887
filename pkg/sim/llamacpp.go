package sim

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/inferscope/inferscope-llm-datasource/pkg/enginemodel"
)

// llama.cpp mode (issue 40): the same engine model behind a llama.cpp llama-server's /metrics
// page (`--metrics`, a current build: no KV-cache gauge, no labels), with the counters moving
// as the real server moves them:
//   - llamacpp:prompt_tokens_total when a prompt has been processed (its first token; the model
//     prefills a prompt in one step unless it exceeds the step's token budget);
//   - llamacpp:tokens_predicted_total and llamacpp:tokens_predicted_seconds_total only when a
//     request ends (all of its tokens and decode time at once), and
//     llamacpp:prompt_seconds_total likewise at the end;
//   - llamacpp:n_decode_total on every engine step (llama_decode call) while a slot is busy;
//   - llamacpp:requests_processing (busy slots: MaxNumSeqs is the number of slots) and
//     llamacpp:requests_deferred (requests waiting for a free slot).
//
// So a window shorter than a request reads no generated token while the server is busy, and
// only the decode-step counter shows the work in flight.

// ExposeLlamaCpp makes the simulator's /metrics registry (Registry, what FastForward and the
// HTTP server expose) a llama.cpp server's page instead of vLLM's. Call it before the first
// scrape; the GPU agent's page is unchanged.
func (s *Sim) ExposeLlamaCpp() error {
	reg := prometheus.NewRegistry()
	if err := reg.Register(&llamaCollector{s: s}); err != nil {
		return fmt.Errorf("sim: registering llama.cpp collector: %w", err)
	}
	s.reg = reg
	return nil
}

// llamaCollector renders a snapshot as llama.cpp's families.
type llamaCollector struct{ s *Sim }

// Describe sends nothing: an unchecked collector.
func (c *llamaCollector) Describe(chan<- *prometheus.Desc) {}

var (
	llamaPromptTokens  = prometheus.NewDesc("llamacpp:prompt_tokens_total", "Number of prompt tokens processed.", nil, nil)
	llamaPromptSeconds = prometheus.NewDesc("llamacpp:prompt_seconds_total", "Prompt process time", nil, nil)
	llamaPredicted     = prometheus.NewDesc("llamacpp:tokens_predicted_total", "Number of generation tokens processed.", nil, nil)
	llamaPredictedSec  = prometheus.NewDesc("llamacpp:tokens_predicted_seconds_total", "Predict process time", nil, nil)
	llamaDecode        = prometheus.NewDesc("llamacpp:n_decode_total", "Total number of llama_decode() calls", nil, nil)
	llamaBusyPerDecode = prometheus.NewDesc("llamacpp:n_busy_slots_per_decode", "Average number of busy slots per llama_decode() call", nil, nil)
	llamaProcessing    = prometheus.NewDesc("llamacpp:requests_processing", "Number of requests processing.", nil, nil)
	llamaDeferred      = prometheus.NewDesc("llamacpp:requests_deferred", "Number of requests deferred.", nil, nil)
)

// Collect reads a snapshot under the simulator's lock and sends every sample.
func (c *llamaCollector) Collect(ch chan<- prometheus.Metric) {
	c.s.Inspect(func(snap *enginemodel.Snapshot) {
		st := snap.Stats
		ctr := func(d *prometheus.Desc, v float64) {
			ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, v)
		}
		gauge := func(d *prometheus.Desc, v float64) {
			ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v)
		}
		ctr(llamaPromptTokens, st.PromptTokensTotal)
		ctr(llamaPromptSeconds, st.Prefill.Sum())
		ctr(llamaPredicted, st.GenTokensH.Sum())
		ctr(llamaPredictedSec, st.Decode.Sum())
		steps := float64(st.IterationTokens.Count())
		ctr(llamaDecode, steps)
		gauge(llamaBusyPerDecode, snap.Running)
		gauge(llamaProcessing, snap.Running)
		gauge(llamaDeferred, snap.Waiting)
	})
}
