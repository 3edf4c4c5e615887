package queries

import (
	"testing"

	"github.com/inferscope/inferscope-llm-datasource/pkg/queries/goldentest"
)

// capacityGoldens are the capacity query's golden cases (testdata/golden/<name>.jsonc,
// an error's <name>.json), on the golden fixture (goldentest.Golden) unless OnProbe.
var capacityGoldens = []goldenCase{
	// capacity: the twins of vllm-a (healthy) and vllm-b (restarts, a small model) over the
	// whole 30 minutes under both profiles (chat's e2e p99 ≤ 1.7 s holds at no load: the long
	// outputs alone take longer; batch applies to vllm-b only), then vllm-b under batch in
	// every format, and a range too short to calibrate on. Twins and knees are cached, so the
	// cases after the first reuse them.
	{Name: "capacity", Query: gq("capacity", "targets", []string{"vllm-a", "vllm-b"}), From: 0, To: goldentest.Span},
	{Name: "capacity_short_range", Query: gq("capacity", "targets", []string{"vllm-a"})},
	{Name: "capacity_parameters", Query: gq("capacity", "format", "parameters", "targets", []string{"vllm-b"}), From: 0, To: goldentest.Span},
	{Name: "capacity_whatif", Query: gq("capacity", "format", "whatif", "targets", []string{"vllm-b"}, "profiles", []string{"batch"}, "whatIf", map[string]any{"addReplicas": 1}), From: 0, To: goldentest.Span},
	{Name: "capacity_replicas", Query: gq("capacity", "format", "replicas", "targets", []string{"vllm-b"}, "profiles", []string{"batch"}, "utilisation", 0.5), From: 0, To: goldentest.Span},

	// Errors are part of the contract too: status, source and sentence.
	{Name: "error_capacity_utilisation", Query: gq("capacity", "utilisation", 1.5)},
	{Name: "error_capacity_whatif_empty", Query: gq("capacity", "format", "whatif", "whatIf", map[string]any{})},
}

// TestCapacityGolden pins every frame (or error) of the capacity golden cases.
func TestCapacityGolden(t *testing.T) { checkGoldens(t, "capacity") }
