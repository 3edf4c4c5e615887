package settings

import (
	"fmt"
	"path/filepath"

	"github.com/inferscope/inferscope-llm-datasource/pkg/bench"
)

// Baselines is the part of jsonData about benchmark baselines (the
// benchmark query type, docs/benchmarks.md). Settings embeds it, so its keys
// sit at the top level of jsonData.
type Baselines struct {
	// BaselinesPath is a directory of benchmark result files (vllm bench
	// serve --save-result JSON, GuideLLM reports, genai-perf profile
	// exports); each file's name without its extension is the baseline's
	// name. Empty: no baselines (uploads are validated but not saved).
	BaselinesPath string `json:"baselinesPath,omitempty"`
	// ExpectedPerformance is the expected-performance table (model × GPU →
	// tokens/s, P95 TTFT, P95 ITL, GPU utilisation). When the key is absent
	// the published defaults apply (bench.DefaultExpectations); a list
	// replaces them whole.
	ExpectedPerformance []bench.Expectation `json:"expectedPerformance,omitempty"`
}

// applyBaselineDefaults fills the default expected-performance table when the key was absent.
func (s *Settings) applyBaselineDefaults() {
	if s.ExpectedPerformance == nil {
		s.ExpectedPerformance = bench.DefaultExpectations()
	}
}

// validateBaselines checks the directory path and each row of the table.
func (s *Settings) validateBaselines() error {
	if s.BaselinesPath != "" && !filepath.IsAbs(s.BaselinesPath) {
		return fmt.Errorf("baselinesPath: %q must be an absolute directory path such as /var/lib/grafana/inferscope-baselines", s.BaselinesPath)
	}
	seen := map[string]int{}
	for i, e := range s.ExpectedPerformance {
		f := fmt.Sprintf("expectedPerformance[%d]", i)
		if err := e.Validate(f); err != nil {
			return err
		}
		k := e.Model + "\x00" + e.GPU
		if prev, dup := seen[k]; dup {
			return fmt.Errorf("%s: %s on %s is already in expectedPerformance[%d]", f, e.Model, e.GPU, prev)
		}
		seen[k] = i
	}
	return nil
}
