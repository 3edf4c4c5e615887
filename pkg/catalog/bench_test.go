package catalog

import (
	"os"
	"path/filepath"
	"testing"
	"time"
)

func BenchmarkDetectVLLM011(b *testing.B) {
	page, err := os.ReadFile(filepath.Join("testdata", "vllm-0.11-v1-qwen05b-created-series.prom"))
	if err != nil {
		b.Fatal(err)
	}
	names, _, err := pageNames(page)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		_ = Detect(names)
	}
}

func BenchmarkHistogramPromQL(b *testing.B) {
	sc := Scope{Targets: []string{"a", "b"}, Models: []string{"m"}, By: []string{"target", "model"}}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := HistogramPromQL(TTFT, sc, 5*time.Minute); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkKeepMetricRegex(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		_ = KeepMetricRegex()
	}
}

func FuzzDetect(f *testing.F) {
	for _, s := range []string{"", "vllm:", "ray_vllm_", "sglang_", "vllm:kv_cache_usage_perc", "_total", "\xff\x00", "0.3-"} {
		f.Add(s, s+"_bucket")
	}
	f.Fuzz(func(t *testing.T, a, b string) {
		d := Detect([]string{a, b})
		if d.Engine == "" {
			t.Fatal("empty engine")
		}
		_, _, _ = parseVersionRange(a)
		_ = LookupFor(Detection{Engine: Engine(a), Version: b}, TPOT)
	})
}
