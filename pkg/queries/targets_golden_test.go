package queries

import "testing"

// targetsGoldens are the targets query's golden cases (testdata/golden/<name>.jsonc,
// an error's <name>.json), on the golden fixture (goldentest.Golden) unless OnProbe.
var targetsGoldens = []goldenCase{
	// targets: table (default) and telemetry.
	{Name: "targets_table", Query: gq("targets")},
	{Name: "targets_table_selected", Query: gq("targets", "format", "table", "targets", []string{"vllm-b", "dcgm-lab"})},
	{Name: "targets_telemetry", Query: gq("targets", "format", "telemetry")},

	// Errors are part of the contract too: status, source and sentence.
	{Name: "error_targets_format", Query: gq("targets", "format", "graph")},

	// On the probe fixture (goldentest.Probe).
	{Name: "targets_table_probe", Query: gq("targets"), OnProbe: true},
}

// TestTargetsGolden pins every frame (or error) of the targets golden cases.
func TestTargetsGolden(t *testing.T) { checkGoldens(t, "targets") }
