package queries

import "testing"

// goodputGoldens are the goodput query's golden cases (testdata/golden/<name>.jsonc,
// an error's <name>.json), on the golden fixture (goldentest.Golden) unless OnProbe.
var goodputGoldens = []goldenCase{
	{Name: "goodput", Query: gq("goodput", "profile", "chat")},
	{Name: "goodput_by_target", Query: gq("goodput", "profile", "chat", "objectives", []string{"ttft-1s", "e2e-1.7s"}, "groupBy", "target")},

	// Errors are part of the contract too: status, source and sentence.
	{Name: "error_goodput_no_profile", Query: gq("goodput")},
}

// TestGoodputGolden pins every frame (or error) of the goodput golden cases.
func TestGoodputGolden(t *testing.T) { checkGoldens(t, "goodput") }
