package sanity

import (
	"math"
	"time"
)

// Thresholds of StuckAtZero: a ratio at or below StuckZero reads "idle", one at or above
// StuckBusy reads "busy". A GPU cannot be both at once, whatever the two sources measure.
// StuckZero is exactly 0: a counter that stopped reads 0, while one small kernel on a busy GPU
// keeps SM activity above 0 even far below 1 % (utilisation 100 % with SM active 0.8 % is a
// real, consistent reading and must not be called stuck).
const (
	StuckZero = 0.0
	StuckBusy = 0.5
)

// StuckSpan is a run of steps in which one activity source read idle while another read busy.
type StuckSpan struct {
	Since, Until time.Time
	Steps        int
	// Other is the highest reading of the other source during the span (ratio 0..1).
	Other float64
}

// StuckAtZero finds the runs of at least minSteps consecutive steps in which source reads at
// most StuckZero while other reads at least StuckBusy: two views of one GPU (profiling SM or
// graphics-engine activity, NVML/DCGM utilisation) that cannot both be true. A profiling
// counter that stopped (DCGM's profiling module lost, GPM unsupported under MIG) reads 0 while
// utilisation follows the load, and a utilisation reading stuck at 0 does the reverse; the
// source that is not at zero is the one consistent with the load. Steps where either source
// has no value break a run. Both slices are on the same step grid.
func StuckAtZero(source, other []float64, steps []time.Time, minSteps int) []StuckSpan {
	var out []StuckSpan
	n := min(len(source), len(other), len(steps))
	for i := 0; i < n; {
		if !(source[i] <= StuckZero && other[i] >= StuckBusy) {
			i++
			continue
		}
		j, hi := i, other[i]
		for j+1 < n && source[j+1] <= StuckZero && other[j+1] >= StuckBusy {
			j++
			hi = math.Max(hi, other[j])
		}
		if j-i+1 >= minSteps {
			out = append(out, StuckSpan{Since: steps[i].UTC(), Until: steps[j].UTC(), Steps: j - i + 1, Other: hi})
		}
		i = j + 1
	}
	return out
}
