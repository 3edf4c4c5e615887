package queries

import "testing"

// benchmarkGoldens are the benchmark query's golden cases (testdata/golden/<name>.jsonc,
// an error's <name>.json), on the golden fixture (goldentest.Golden) unless OnProbe.
var benchmarkGoldens = []goldenCase{
	// benchmark: production at the baseline's request rate (4 req/s) next to it.
	{Name: "benchmark", Query: gq("benchmark", "targets", []string{"vllm-a"}, "baseline", "vllm-a-rate4")},

	// Errors are part of the contract too: status, source and sentence.
	{Name: "error_benchmark_unknown_baseline", Query: gq("benchmark", "baseline", "nope")},
}

// TestBenchmarkGolden pins every frame (or error) of the benchmark golden cases.
func TestBenchmarkGolden(t *testing.T) { checkGoldens(t, "benchmark") }
