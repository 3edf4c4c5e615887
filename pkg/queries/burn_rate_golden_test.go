package queries

import "testing"

// burnRateGoldens are the burn_rate query's golden cases (testdata/golden/<name>.jsonc,
// an error's <name>.json), on the golden fixture (goldentest.Golden) unless OnProbe.
var burnRateGoldens = []goldenCase{
	// burn_rate: timeseries (default) and status.
	{Name: "burn_rate_timeseries", Query: gq("burn_rate", "profile", "chat")},
	{Name: "burn_rate_status", Query: gq("burn_rate", "format", "status")},

	// Errors are part of the contract too: status, source and sentence.
	{Name: "error_burn_rate_format", Query: gq("burn_rate", "format", "table")},
}

// TestBurnRateGolden pins every frame (or error) of the burn_rate golden cases.
func TestBurnRateGolden(t *testing.T) { checkGoldens(t, "burn_rate") }
