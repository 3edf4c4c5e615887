package frames

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/inferscope/inferscope-llm-datasource/pkg/analysis/slo"
)

// TestSLOTableFieldNamesUnique: grouped by target, the slo table has one
// `target` column (the target's name) and the objective's ratio in
// `objective_target`; before issue 33 both were named `target`.
func TestSLOTableFieldNamesUnique(t *testing.T) {
	r := slo.Report{Group: map[string]string{"target": "vllm-a", "model": "m"}}
	r.Target = 0.99
	r.Objective = "ttft-1s"
	fr := SLOTable([]slo.Report{r}, Meta{})
	require.Len(t, fr, 1)
	seen := map[string]bool{}
	for _, f := range fr[0].Fields {
		assert.False(t, seen[f.Name], "field %q twice", f.Name)
		seen[f.Name] = true
	}
	ratio, _ := fr[0].FieldByName("objective_target")
	require.NotNil(t, ratio)
	v, _ := ratio.ConcreteAt(0)
	assert.Equal(t, 0.99, v)
	name, _ := fr[0].FieldByName("target")
	require.NotNil(t, name)
	assert.Equal(t, "vllm-a", name.At(0))
}
