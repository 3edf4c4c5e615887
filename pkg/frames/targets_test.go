package frames

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/inferscope/inferscope-llm-datasource/pkg/analysis/inventory"
)

// TestTargetsNotUpCountsEveryStateButUp: not_up is 1 for down, stale and not scraped yet and 0
// for up, so the overview's sum over it counts 3 of these 4 rows.
func TestTargetsNotUpCountsEveryStateButUp(t *testing.T) {
	rows := []inventory.Row{
		{Name: "a", State: inventory.StateUp, Up: true},
		{Name: "b", State: inventory.StateStale, Up: true},
		{Name: "c", State: inventory.StateDown},
		{Name: "d", State: inventory.StateNotScraped},
	}
	f := Targets(rows, Meta{})[0]
	field, _ := f.FieldByName("not_up")
	require.NotNil(t, field)
	var got []int64
	for i := 0; i < field.Len(); i++ {
		got = append(got, field.At(i).(int64))
	}
	assert.Equal(t, []int64{0, 1, 1, 1}, got)
}
