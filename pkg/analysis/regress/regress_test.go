package regress

import (
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// windows draws n windows at arrival rate ≈ rate with per-request ITL mean
// itl (s), noise ±5 %, prompt 500 and output 100 tokens ± noise.
func windows(rng *rand.Rand, n int, rate, itl float64) []Window {
	out := make([]Window, n)
	for i := range out {
		r := rate * (1 + 0.1*(rng.Float64()-0.5))
		m := itl * (1 + 0.1*(rng.Float64()-0.5))
		out[i] = Window{Arrival: r, Running: r * 3, PromptLen: 500 + 20*rng.Float64(), OutLen: 100 + 5*rng.Float64(),
			Sum: map[string]float64{"itl": r * m}, Count: map[string]float64{"itl": r}}
	}
	return out
}

func TestCompareVerdicts(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	before := windows(rng, 30, 4, 0.020)
	slower := windows(rng, 30, 4, 0.026)
	same := windows(rng, 30, 4, 0.020)
	busier := windows(rng, 30, 8, 0.030)

	v := Compare(before, slower, []string{"itl"}, DefaultOptions)[0]
	assert.Equal(t, Regressed, v.Verdict, v.Reason)
	assert.InDelta(t, 0.30, v.Size, 0.05, "26 ms against 20 ms")
	assert.Less(t, v.Lower, v.Size)
	assert.Greater(t, v.Upper, v.Size)

	v = Compare(before, same, []string{"itl"}, DefaultOptions)[0]
	assert.Equal(t, NoChange, v.Verdict, v.Reason)

	v = Compare(slower, before, []string{"itl"}, DefaultOptions)[0]
	assert.Equal(t, Improved, v.Verdict, v.Reason)

	v = Compare(before, busier, []string{"itl"}, DefaultOptions)[0]
	assert.Equal(t, NotComparable, v.Verdict, "twice the load: no overlap in arrival rate")
	assert.Contains(t, v.Reason, "arrival rate")

	// Fixed seed: the same inputs give the same interval.
	v1 := Compare(before, slower, []string{"itl"}, DefaultOptions)[0]
	v2 := Compare(before, slower, []string{"itl"}, DefaultOptions)[0]
	require.Equal(t, v1.Lower, v2.Lower)

	v = Compare(before[:3], slower, []string{"itl"}, DefaultOptions)[0]
	assert.Equal(t, NotComparable, v.Verdict)
	assert.Contains(t, v.Reason, "at least 5 each needed")
}
