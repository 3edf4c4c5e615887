package settings

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"

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
	// BaselinesQuotaMiB caps the bytes (MiB) of the uploaded baseline files
	// in this data source's organisation folder of BaselinesPath
	// (bench.OrgDir); an upload that would pass it is refused. 0: the
	// default, DefaultBaselinesQuotaMiB.
	BaselinesQuotaMiB int `json:"baselinesQuotaMiB,omitempty"`
	// BaselinesMaxFiles caps the number of uploaded baseline files in the
	// same folder. 0: the default, DefaultBaselinesMaxFiles.
	BaselinesMaxFiles int `json:"baselinesMaxFiles,omitempty"`
	// ExpectedPerformance is the expected-performance table (model × GPU →
	// tokens/s, P95 TTFT, P95 ITL, GPU utilisation). When the key is absent
	// the published defaults apply (bench.DefaultExpectations); a list
	// replaces them whole.
	ExpectedPerformance []bench.Expectation `json:"expectedPerformance,omitempty"`
}

// Defaults of the upload quota (Baselines.BaselinesQuotaMiB, BaselinesMaxFiles):
// a vLLM result is a few kB to a few MB, so this holds a hundred of them.
const (
	DefaultBaselinesQuotaMiB = 64
	DefaultBaselinesMaxFiles = 100
	// maxBaselinesQuotaMiB bounds the quota an organisation admin may set (16 GiB).
	maxBaselinesQuotaMiB = 16 << 10
	// maxBaselinesMaxFiles bounds the file count likewise.
	maxBaselinesMaxFiles = 100000
)

// applyBaselineDefaults fills the default expected-performance table when the key was absent,
// and the default upload quota.
func (s *Settings) applyBaselineDefaults() {
	if s.BaselinesQuotaMiB == 0 {
		s.BaselinesQuotaMiB = DefaultBaselinesQuotaMiB
	}
	if s.BaselinesMaxFiles == 0 {
		s.BaselinesMaxFiles = DefaultBaselinesMaxFiles
	}
	if s.ExpectedPerformance == nil {
		s.ExpectedPerformance = bench.DefaultExpectations()
	}
}

// validateBaselines checks the directory path and each row of the table.
func (s *Settings) validateBaselines() error {
	if s.BaselinesPath != "" && !filepath.IsAbs(s.BaselinesPath) {
		return fmt.Errorf("baselinesPath: %q must be an absolute directory path such as /var/lib/grafana/inferscope-baselines", s.BaselinesPath)
	}
	if slices.Contains(strings.Split(filepath.ToSlash(s.BaselinesPath), "/"), "..") {
		return fmt.Errorf("baselinesPath: %q must not contain '..'; name the directory itself", s.BaselinesPath)
	}
	if s.BaselinesQuotaMiB < 1 || s.BaselinesQuotaMiB > maxBaselinesQuotaMiB {
		return fmt.Errorf("baselinesQuotaMiB: %d must be between 1 and %d", s.BaselinesQuotaMiB, maxBaselinesQuotaMiB)
	}
	if s.BaselinesMaxFiles < 1 || s.BaselinesMaxFiles > maxBaselinesMaxFiles {
		return fmt.Errorf("baselinesMaxFiles: %d must be between 1 and %d", s.BaselinesMaxFiles, maxBaselinesMaxFiles)
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
