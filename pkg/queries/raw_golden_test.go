package queries

import "testing"

// rawGoldens are the raw query's golden cases (testdata/golden/<name>.jsonc,
// an error's <name>.json), on the golden fixture (goldentest.Golden) unless OnProbe.
var rawGoldens = []goldenCase{
	{Name: "raw", Query: gq("raw", "metric", "vllm:num_requests_running")},
	{Name: "raw_matchers", Query: gq("raw", "metric", "vllm:request_success_total", "targets", []string{"vllm-b"}, "matchers", map[string]string{"finished_reason": "stop"})},
}

// TestRawGolden pins every frame (or error) of the raw golden cases.
func TestRawGolden(t *testing.T) { checkGoldens(t, "raw") }
