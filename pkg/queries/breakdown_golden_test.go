package queries

import "testing"

// breakdownGoldens are the breakdown query's golden cases (testdata/golden/<name>.jsonc,
// an error's <name>.json), on the golden fixture (goldentest.Golden) unless OnProbe.
var breakdownGoldens = []goldenCase{
	// breakdown: timeseries (default) and table, ungrouped and by target / model.
	{Name: "breakdown_timeseries", Query: gq("breakdown")},
	{Name: "breakdown_timeseries_by_target", Query: gq("breakdown", "format", "timeseries", "groupBy", "target")},
	{Name: "breakdown_table", Query: gq("breakdown", "format", "table")},
	{Name: "breakdown_table_by_model", Query: gq("breakdown", "format", "table", "groupBy", "model")},

	// Errors are part of the contract too: status, source and sentence.
	{Name: "error_breakdown_format", Query: gq("breakdown", "format", "heatmap")},

	// On the probe fixture (goldentest.Probe).
	{Name: "breakdown_outside_engine", Query: gq("breakdown", "groupBy", "target", "window", "5m"), OnProbe: true},
}

// TestBreakdownGolden pins every frame (or error) of the breakdown golden cases.
func TestBreakdownGolden(t *testing.T) { checkGoldens(t, "breakdown") }
