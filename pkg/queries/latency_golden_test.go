package queries

import "testing"

// latencyGoldens are the latency query's golden cases (testdata/golden/<name>.jsonc,
// an error's <name>.json), on the golden fixture (goldentest.Golden) unless OnProbe.
var latencyGoldens = []goldenCase{
	// latency: default stages and stats; explicit stages/stats with bounds and
	// the refined estimator; grouped by target and by model; a profile's
	// thresholds drawn on its stages.
	{Name: "latency_default", Query: gq("latency")},
	{Name: "latency_bounds_refined", Query: gq("latency", "stages", []string{"ttft", "itl", "e2e"}, "stats", []string{"p50", "p99", "mean"}, "bounds", true, "estimator", "refined")},
	{Name: "latency_by_target", Query: gq("latency", "stages", []string{"ttft", "e2e"}, "stats", []string{"p90"}, "groupBy", "target")},
	{Name: "latency_by_model", Query: gq("latency", "stages", []string{"queue_time", "tpot"}, "stats", []string{"p50", "mean"}, "groupBy", "model")},
	{Name: "latency_by_target_model", Query: gq("latency", "stages", []string{"ttft"}, "stats", []string{"p99", "max"}, "groupBy", "target_model", "bounds", false)},
	{Name: "latency_profile_thresholds", Query: gq("latency", "stages", []string{"ttft", "e2e"}, "stats", []string{"p99"}, "profile", "chat")},
	{Name: "latency_window_rate_interval", Query: gq("latency", "stages", []string{"e2e"}, "stats", []string{"p50"}, "window", "$__rate_interval", "targets", []string{"vllm-a"})},

	// Errors are part of the contract too: status, source and sentence.
	{Name: "error_unknown_target", Query: gq("latency", "targets", []string{"nowhere"})},

	// On the probe fixture (goldentest.Probe).
	{Name: "latency_source_probe", Query: gq("latency", "source", "probe", "stages", []string{"ttft", "itl"}, "stats", []string{"p50", "mean"}, "groupBy", "target", "window", "5m"), OnProbe: true},
}

// TestLatencyGolden pins every frame (or error) of the latency golden cases.
func TestLatencyGolden(t *testing.T) { checkGoldens(t, "latency") }
