package latency

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/inferscope/inferscope-llm-datasource/pkg/hist"
)

// TestMaxStat: "max" is the quantile 1, which lands in the highest occupied
// bucket: with 5 requests ≤ 0.1 s and 3 more in (0.1, 0.5] and none above,
// the slowest request lies in (0.1, 0.5] and histogram_quantile(1, …) is 0.5
// (worked by hand: rank 8 of 8 is the last observation of the le=0.5
// bucket, interpolated to its upper bound). A request above the highest
// finite bound makes the max clamped: at least that bound, upper +Inf.
func TestMaxStat(t *testing.T) {
	st, err := ParseStat("max")
	require.NoError(t, err)
	assert.Equal(t, "max", st.Name)
	assert.False(t, st.IsMean())
	b := []hist.Bucket{{UpperBound: 0.1, Count: 5}, {UpperBound: 0.5, Count: 8}, {UpperBound: 1, Count: 8}, {UpperBound: math.Inf(1), Count: 8}}
	e := hist.Quantile(st.Quantile, b)
	assert.Equal(t, 0.5, e.Value)
	assert.Equal(t, 0.1, e.Lower)
	assert.Equal(t, 0.5, e.Upper)
	b[3].Count = 9
	e = hist.Quantile(st.Quantile, b)
	assert.Equal(t, 1.0, e.Lower)
	assert.True(t, math.IsInf(e.Upper, 1))
	_, err = ParseStat("p100")
	assert.Error(t, err)
}
