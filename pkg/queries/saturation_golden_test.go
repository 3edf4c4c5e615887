package queries

import "testing"

// saturationGoldens are the saturation query's golden cases (testdata/golden/<name>.jsonc,
// an error's <name>.json), on the golden fixture (goldentest.Golden) unless OnProbe.
var saturationGoldens = []goldenCase{
	{Name: "saturation", Query: gq("saturation")},
	{Name: "saturation_by_target", Query: gq("saturation", "groupBy", "target")},
}

// TestSaturationGolden pins every frame (or error) of the saturation golden cases.
func TestSaturationGolden(t *testing.T) { checkGoldens(t, "saturation") }
