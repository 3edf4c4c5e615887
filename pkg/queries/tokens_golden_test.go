package queries

import "testing"

// tokensGoldens are the tokens query's golden cases (testdata/golden/<name>.jsonc,
// an error's <name>.json), on the golden fixture (goldentest.Golden) unless OnProbe.
var tokensGoldens = []goldenCase{
	{Name: "tokens", Query: gq("tokens", "groupBy", "target")},
	{Name: "tokens_heatmap", Query: gq("tokens", "groupBy", "target", "format", "heatmap", "signals", []string{"prompt_length"})},
}

// TestTokensGolden pins every frame (or error) of the tokens golden cases.
func TestTokensGolden(t *testing.T) { checkGoldens(t, "tokens") }
