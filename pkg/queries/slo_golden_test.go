package queries

import "testing"

// sloGoldens are the slo query's golden cases (testdata/golden/<name>.jsonc,
// an error's <name>.json), on the golden fixture (goldentest.Golden) unless OnProbe.
var sloGoldens = []goldenCase{
	// slo: every profile, one profile, chosen objectives.
	{Name: "slo_all_profiles", Query: gq("slo")},
	{Name: "slo_profile", Query: gq("slo", "profile", "chat")},
	{Name: "slo_objectives", Query: gq("slo", "profile", "chat", "objectives", []string{"errors"}, "groupBy", "target")},

	// The overview's rows: one per objective × target × model (issue 33).
	{Name: "slo_by_target_model", Query: gq("slo", "profile", "chat", "groupBy", "target_model")},

	// On the probe fixture (goldentest.Probe).
	{Name: "slo_source_probe", Query: gq("slo", "profile", "client", "source", "probe", "groupBy", "target"), OnProbe: true},
}

// TestSLOGolden pins every frame (or error) of the slo golden cases.
func TestSLOGolden(t *testing.T) { checkGoldens(t, "slo") }
