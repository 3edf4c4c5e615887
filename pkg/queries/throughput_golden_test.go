package queries

import "testing"

// throughputGoldens are the throughput query's golden cases (testdata/golden/<name>.jsonc,
// an error's <name>.json), on the golden fixture (goldentest.Golden) unless OnProbe.
var throughputGoldens = []goldenCase{
	{Name: "throughput", Query: gq("throughput")},
	{Name: "throughput_by_target", Query: gq("throughput", "groupBy", "target")},
}

// TestThroughputGolden pins every frame (or error) of the throughput golden cases.
func TestThroughputGolden(t *testing.T) { checkGoldens(t, "throughput") }
