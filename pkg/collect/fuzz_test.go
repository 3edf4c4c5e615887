package collect

import (
	"os"
	"path/filepath"
	"testing"
)

// FuzzParsePage: the page ingestion of the health probe (Prometheus's
// textparse under parsePage, without its panic guard) never panics and never
// reports more samples than the page has lines. Seeds: the real pages in
// testdata (copied from the shared corpus and cases into testdata/fuzz), and
// the shared corpus itself when present.
func FuzzParsePage(f *testing.F) {
	for _, dir := range []string{"testdata", filepath.Join("..", "..", "..", "shared", "corpus"), filepath.Join("..", "..", "..", "shared", "cases")} {
		files, _ := filepath.Glob(filepath.Join(dir, "*.prom"))
		for _, p := range files {
			if b, err := os.ReadFile(p); err == nil {
				f.Add(b, "text/plain; version=0.0.4")
			}
		}
	}
	f.Add([]byte("# TYPE x histogram\nx_bucket{le=\"1\"} 1\nx_bucket{le=\"+Inf\"} 2\nx_sum 3\nx_count 2\n# EOF\n"), "application/openmetrics-text; version=1.0.0")
	f.Add([]byte("vllm:num_requests_running{model_name=\"m\"} 1 1700000000000\n"), "")
	f.Fuzz(func(t *testing.T, body []byte, contentType string) {
		var res ProbeResult
		if err := parsePageUnguarded(body, contentType, 50000, &res); err != nil {
			if err.Error() == "" {
				t.Fatal("empty error")
			}
			return
		}
		if res.Samples == 0 {
			t.Fatal("a parsed page with no samples was accepted")
		}
	})
}
