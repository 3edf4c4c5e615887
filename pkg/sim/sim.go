package sim

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/expfmt"

	"github.com/inferscope/inferscope-llm-datasource/pkg/enginemodel"
)

// Sim is one simulated vLLM server: the engine model (an enginemodel.Core, whose methods it
// has: AdvanceTo, Submit, Finished, State, …) with its vLLM and GPU Prometheus registries and
// the flaky scenario's scrape outcomes. Every method is safe for concurrent use.
type Sim struct {
	*enginemodel.Core
	reg    *prometheus.Registry
	gpuReg *prometheus.Registry

	scrapeMu  sync.Mutex
	scrapeRng *rand.Rand
}

// New validates cfg (filling NumGPUBlocks) and builds a Sim at simulated time 0.
func New(cfg Config, opts Options) (*Sim, error) {
	c, err := enginemodel.New(cfg, opts)
	if err != nil {
		return nil, err
	}
	s := &Sim{Core: c, scrapeRng: enginemodel.NewRand(c.Config().Seed, 2)}
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

// Registry is the vLLM /metrics registry (names per Config.Version).
func (s *Sim) Registry() *prometheus.Registry { return s.reg }

// ScrapeOutcome says how a /metrics request at the current simulated time
// goes under the flaky scenario: ScrapeOK, ScrapeError (HTTP 500) or
// ScrapeStall (no answer for Config.FlakyStall). Deterministic given the
// seed and the sequence of calls.
func (s *Sim) ScrapeOutcome() ScrapeResult {
	cfg := s.Config()
	if cfg.FlakyErrorRatio == 0 && cfg.FlakyStallRatio == 0 {
		return ScrapeOK
	}
	s.scrapeMu.Lock()
	defer s.scrapeMu.Unlock()
	u := s.scrapeRng.Float64()
	switch {
	case u < cfg.FlakyErrorRatio:
		return ScrapeError
	case u < cfg.FlakyErrorRatio+cfg.FlakyStallRatio:
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
