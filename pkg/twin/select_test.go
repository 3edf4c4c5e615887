package twin

import (
	"math"
	"math/rand/v2"
	"slices"
	"sort"
	"testing"

	"github.com/stretchr/testify/require"
)

// The selection gives what sorting with sort.Float64s then taking the nearest rank gives, and
// the count at or under a threshold what sort.SearchFloat64s gives on the sorted copy: on
// random draws with long runs of equal values (step times repeat), NaN, ±Inf and ±0.
func TestSelectQuantileMatchesSortedNearestRank(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 11))
	special := []float64{math.NaN(), math.Inf(1), math.Inf(-1), 0, math.Copysign(0, -1)}
	for trial := 0; trial < 3000; trial++ {
		n := rng.IntN(400)
		if trial%50 == 0 {
			n = 5000 + rng.IntN(20000)
		}
		distinct := 1 + rng.IntN(1+n)
		v := make([]float64, n)
		for i := range v {
			switch r := rng.Float64(); {
			case r < 0.02 && trial%3 == 0:
				v[i] = special[rng.IntN(len(special))]
			case trial%4 == 0:
				v[i] = float64(rng.IntN(distinct)) * 0.001 // runs of equal values
			default:
				v[i] = rng.ExpFloat64() * 0.05
			}
		}
		sorted := slices.Clone(v)
		sort.Float64s(sorted)
		for _, q := range []float64{0, 0.01, 0.5, 0.9, 0.99, 1} {
			want, got := quantile(sorted, q), selectQuantile(v, q)
			if math.IsNaN(want) {
				require.True(t, math.IsNaN(got), "trial %d q %g: want NaN, got %g", trial, q, got)
			} else {
				require.Equal(t, want, got, "trial %d n %d q %g", trial, n, q)
			}
		}
		for _, th := range []float64{0, 0.001, 0.05, 0.2, math.Inf(1), math.Inf(-1), math.NaN()} {
			want := sort.SearchFloat64s(sorted, math.Nextafter(th, math.Inf(1)))
			require.Equal(t, want, countAtOrUnder(v, th), "trial %d threshold %g", trial, th)
		}
	}
}

// quantile is the q-quantile of sorted v (nearest rank), NaN when empty.
func quantile(v []float64, q float64) float64 {
	if len(v) == 0 {
		return math.NaN()
	}
	i := int(math.Ceil(q*float64(len(v)))) - 1
	return v[min(max(i, 0), len(v)-1)]
}
