package queries

import "testing"

// diagnosisGoldens are the diagnosis query's golden cases (testdata/golden/<name>.jsonc,
// an error's <name>.json), on the golden fixture (goldentest.Golden) unless OnProbe.
var diagnosisGoldens = []goldenCase{
	// diagnosis: table (default), annotations, timeline, numeric, and numeric for one class.
	{Name: "diagnosis_table", Query: gq("diagnosis")},
	{Name: "diagnosis_annotations", Query: gq("diagnosis", "format", "annotations")},
	{Name: "diagnosis_timeline", Query: gq("diagnosis", "format", "timeline")},
	{Name: "diagnosis_numeric", Query: gq("diagnosis", "format", "numeric")},
	{Name: "diagnosis_numeric_classes", Query: gq("diagnosis", "format", "numeric", "classes", []string{"stalled", "queue_saturation"})},

	// Errors are part of the contract too: status, source and sentence.
	{Name: "error_diagnosis_format", Query: gq("diagnosis", "format", "graph")},
}

// TestDiagnosisGolden pins every frame (or error) of the diagnosis golden cases.
func TestDiagnosisGolden(t *testing.T) { checkGoldens(t, "diagnosis") }
