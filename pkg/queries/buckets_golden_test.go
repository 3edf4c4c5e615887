package queries

import "testing"

// bucketsGoldens are the buckets query's golden cases (testdata/golden/<name>.jsonc,
// an error's <name>.json), on the golden fixture (goldentest.Golden) unless OnProbe.
var bucketsGoldens = []goldenCase{
	{Name: "buckets_default", Query: gq("buckets")},
	{Name: "buckets_profile_thresholds", Query: gq("buckets", "profile", "chat", "thresholds", []float64{0.25, 3}, "stats", []string{"p50", "p99"})},

	// Per target (issue 33: the latency dashboard's bucket advice pooled both targets and had
	// no target column): one row group per target, the target a column.
	{Name: "buckets_by_target", Query: gq("buckets", "profile", "chat", "stats", []string{"p99"}, "stages", []string{"ttft"}, "groupBy", "target")},
}

// TestBucketsGolden pins every frame (or error) of the buckets golden cases.
func TestBucketsGolden(t *testing.T) { checkGoldens(t, "buckets") }
