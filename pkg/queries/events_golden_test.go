package queries

import "testing"

// eventsGoldens are the events query's golden cases (testdata/golden/<name>.jsonc,
// an error's <name>.json), on the golden fixture (goldentest.Golden) unless OnProbe.
var eventsGoldens = []goldenCase{
	{Name: "events", Query: gq("events")},
	{Name: "events_one_target", Query: gq("events", "targets", []string{"vllm-b"})},
}

// TestEventsGolden pins every frame (or error) of the events golden cases.
func TestEventsGolden(t *testing.T) { checkGoldens(t, "events") }
