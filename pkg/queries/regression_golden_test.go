package queries

import "testing"

// regressionGoldens are the regression query's golden cases (testdata/golden/<name>.jsonc,
// an error's <name>.json), on the golden fixture (goldentest.Golden) unless OnProbe.
var regressionGoldens = []goldenCase{
	// regression: around vllm-b's restarts (table, annotations, numeric for alert rules),
	// and two picked ranges of vllm-a.
	{Name: "regression", Query: gq("regression", "targets", []string{"vllm-b"})},
	{Name: "regression_annotations", Query: gq("regression", "targets", []string{"vllm-b"}, "format", "annotations")},
	{Name: "regression_numeric", Query: gq("regression", "targets", []string{"vllm-b"}, "format", "numeric")},
	{Name: "regression_ranges", Query: gq("regression", "targets", []string{"vllm-a"}, "stages", []string{"ttft", "itl"},
		"before", map[string]string{"from": "2026-01-01T00:00:00Z", "to": "2026-01-01T00:15:00Z"},
		"after", map[string]string{"from": "2026-01-01T00:15:00Z", "to": "2026-01-01T00:30:00Z"})},

	// Errors are part of the contract too: status, source and sentence.
	{Name: "error_regression_one_range", Query: gq("regression", "before", map[string]string{"from": "2026-01-01T00:00:00Z", "to": "2026-01-01T00:15:00Z"})},
}

// TestRegressionGolden pins every frame (or error) of the regression golden cases.
func TestRegressionGolden(t *testing.T) { checkGoldens(t, "regression") }
