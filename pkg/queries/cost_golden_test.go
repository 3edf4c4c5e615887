package queries

import "testing"

// costGoldens are the cost query's golden cases (testdata/golden/<name>.jsonc,
// an error's <name>.json), on the golden fixture (goldentest.Golden) unless OnProbe.
var costGoldens = []goldenCase{
	// cost: every stat of every target (priced per GPU-hour with energy, per hour, and
	// unpriced), and the alert rule's stat with a profile's cost of goodput.
	{Name: "cost", Query: gq("cost")},
	{Name: "cost_goodput", Query: gq("cost", "profile", "chat", "series", []string{"cost_per_1m_tokens", "cost_per_1m_good_tokens"}, "targets", []string{"vllm-a", "vllm-b"})},
	{Name: "cost_spike_ratio", Query: gq("cost", "series", []string{"cost_spike_ratio"}, "baseline", "1h", "window", "5m")},
}

// TestCostGolden pins every frame (or error) of the cost golden cases.
func TestCostGolden(t *testing.T) { checkGoldens(t, "cost") }
