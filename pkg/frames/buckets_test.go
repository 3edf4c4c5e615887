package frames

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/inferscope/inferscope-llm-datasource/pkg/analysis/buckets"
)

// TestBucketsFlagIsTheArgumentToPaste: the flag column is the
// --custom-histogram-buckets argument, single-quoted for a shell, only where
// extra bounds are advised.
func TestBucketsFlagIsTheArgumentToPaste(t *testing.T) {
	rows := []buckets.Row{
		{Signal: "ttft", Advice: buckets.Advice{Extra: []float64{3}}, CustomBuckets: `{"time_to_first_token":[1,2.5,3,5]}`},
		{Signal: "ttft", Advice: buckets.Advice{}, CustomBuckets: `{"time_to_first_token":[1,2.5,5]}`},
	}
	fr := BucketsTable(rows, Meta{})
	require.Len(t, fr, 1)
	f, _ := fr[0].FieldByName("flag")
	require.NotNil(t, f)
	assert.Equal(t, `--custom-histogram-buckets '{"time_to_first_token":[1,2.5,3,5]}'`, f.At(0))
	assert.Equal(t, "", f.At(1))
}
