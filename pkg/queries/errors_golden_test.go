package queries

import "testing"

// errorsGoldens are the errors query's golden cases (testdata/golden/<name>.jsonc,
// an error's <name>.json), on the golden fixture (goldentest.Golden) unless OnProbe.
var errorsGoldens = []goldenCase{
	// errors: the fixture holds engines only, which count no gateway errors: the frames' shape
	// and the not-exported notices (values: pkg/plugin's TestHostedGatewaysThroughQueryData).
	{Name: "errors", Query: gq("errors", "groupBy", "model")},
	{Name: "errors_table", Query: gq("errors", "format", "table", "groupBy", "model")},

	// Errors are part of the contract too: status, source and sentence.
	{Name: "error_errors_class", Query: gq("errors", "errorClasses", []string{"rate_limit", "quota"})},
}

// TestErrorsGolden pins every frame (or error) of the errors golden cases.
func TestErrorsGolden(t *testing.T) { checkGoldens(t, "errors") }
