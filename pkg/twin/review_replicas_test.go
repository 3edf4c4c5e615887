package twin

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
)

// A utilisation so small that load / (utilisation × knee) does not fit an int must not wrap:
// converting +Inf or 1e300 to int is undefined in Go (math.MinInt64 on amd64), and max(1, …)
// then said one replica. By hand: 2 / (1e-300 × 10) = 2e299 replicas, more than any int.
func TestReplicasDoNotWrapAtTinyUtilisation(t *testing.T) {
	assert.Equal(t, math.MaxInt, Replicas(2, 10, 1e-300))
	assert.Equal(t, math.MaxInt, Replicas(2, 10, 5e-324))
	assert.Equal(t, 3, Replicas(5, 2.5, 0.8), "⌈5 / (0.8 × 2.5)⌉ = ⌈2.5⌉")
	assert.Equal(t, 1, Replicas(0, 2.5, 0.8), "at least 1")
}
