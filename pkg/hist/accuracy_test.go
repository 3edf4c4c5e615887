package hist

import (
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var accuracyQuantiles = []float64{0.5, 0.9, 0.99}

// Sample sizes are odd and not multiples of 10, so q·n is never an integer
// for the tested q and the rank convention cannot tie at a bound.
var accuracySizes = []int{301, 1001, 4001}

const accuracyTrials = 60

// cell is one scenario × quantile result.
type cell struct {
	scenario          string
	set               string
	q                 float64
	promMedARE        float64 // median |estimate − truth| / truth, prometheus
	refinedMedARE     float64
	fallbacks         int // refined trials that fell back to linear
	outside, trials   int // truths outside [Lower, Upper] (either estimator)
	refinedOutOfRange int // refined values outside [Lower, Upper]
}

// measureAccuracy runs every scenario for accuracyTrials seeded trials and
// returns one cell per scenario and quantile.
func measureAccuracy(t *testing.T) []cell {
	t.Helper()
	var cells []cell
	for si, sc := range scenarios() {
		r := rand.New(rand.NewPCG(42, uint64(si)))
		promErr := make([][]float64, len(accuracyQuantiles))
		refErr := make([][]float64, len(accuracyQuantiles))
		res := make([]cell, len(accuracyQuantiles))
		for qi, q := range accuracyQuantiles {
			res[qi] = cell{scenario: sc.name, set: sc.set, q: q}
		}
		for tr := 0; tr < accuracyTrials; tr++ {
			n := accuracySizes[tr%len(accuracySizes)]
			jitter := 0.7 + 0.7*r.Float64()
			// Half the trials look like rate() output (per-second values
			// over a 5-minute window), half like raw counts.
			scale := 1.0
			if tr%2 == 1 {
				scale = 300
			}
			tl := makeTrial(r, sc, n, jitter, scale)
			for qi, q := range accuracyQuantiles {
				truth := trueQuantile(tl.sorted, q)
				p := QuantileWith(EstimatorPrometheus, q, tl.buckets, tl.sum, tl.count)
				f := QuantileWith(EstimatorRefined, q, tl.buckets, tl.sum, tl.count)
				c := &res[qi]
				c.trials++
				if truth < p.Lower || truth > p.Upper || truth < f.Lower || truth > f.Upper {
					c.outside++
				}
				if f.Value < f.Lower || f.Value > f.Upper || math.IsNaN(f.Value) {
					c.refinedOutOfRange++
				}
				if f.Method != MethodRefined {
					c.fallbacks++
				}
				promErr[qi] = append(promErr[qi], math.Abs(p.Value-truth)/truth)
				refErr[qi] = append(refErr[qi], math.Abs(f.Value-truth)/truth)
			}
		}
		for qi := range accuracyQuantiles {
			res[qi].promMedARE = median(promErr[qi])
			res[qi].refinedMedARE = median(refErr[qi])
		}
		cells = append(cells, res...)
	}
	return cells
}

// refinedLosses lists the scenario/quantile cells where refined's median
// absolute relative error is NOT at most half of prometheus's: bimodal
// mixtures, which neither fitted family can represent (the README's table
// reports them). Every other cell is asserted to win by 2x.
var refinedLosses = map[string]bool{
	"queue bimodal 80% 8ms / 20% 1.2s|p90":  true,
	"decode bimodal 60% 1.5s / 40% 12s|p50": true,
	"decode bimodal 60% 1.5s / 40% 12s|p99": true,
	"ttft bimodal 70% 60ms / 30% 1.2s|p50":  true,
	"tpot bimodal 85% 15ms / 15% 45ms|p50":  true,
	"tpot bimodal 85% 15ms / 15% 45ms|p90":  true,
}

func cellKey(c cell) string { return fmt.Sprintf("%s|p%g", c.scenario, c.q*100) }

func TestRefinedAccuracy(t *testing.T) {
	cells := measureAccuracy(t)
	for _, c := range cells {
		key := cellKey(c)
		assert.Zerof(t, c.outside, "%s: true quantile outside [Lower, Upper] in %d of %d trials", key, c.outside, c.trials)
		assert.Zerof(t, c.refinedOutOfRange, "%s: refined value outside its bounds", key)
		if refinedLosses[key] {
			continue
		}
		assert.LessOrEqualf(t, c.refinedMedARE, c.promMedARE/2,
			"%s: refined median abs rel error %.4f is not <= half of prometheus %.4f", key, c.refinedMedARE, c.promMedARE)
	}
}

// TestErrorTable prints the README's accuracy table (markdown) when
// INFERSCOPE_ERROR_TABLE=1: go test ./pkg/hist -run TestErrorTable -v.
func TestErrorTable(t *testing.T) {
	if os.Getenv("INFERSCOPE_ERROR_TABLE") != "1" {
		t.Skip("set INFERSCOPE_ERROR_TABLE=1 to print the error table")
	}
	cells := measureAccuracy(t)
	var sb strings.Builder
	sb.WriteString("| distribution | buckets | q | prometheus MedARE | refined MedARE | ratio | refined ≤ ½ prometheus | fallbacks | truth in bounds |\n")
	sb.WriteString("|---|---|---|---:|---:|---:|---|---:|---:|\n")
	for _, c := range cells {
		ratio := c.refinedMedARE / c.promMedARE
		win := "yes"
		if !(c.refinedMedARE <= c.promMedARE/2) {
			win = "**no**"
		}
		fmt.Fprintf(&sb, "| %s | %s | p%g | %.2f%% | %.2f%% | %.2f | %s | %d/%d | %d/%d |\n",
			c.scenario, c.set, c.q*100, 100*c.promMedARE, 100*c.refinedMedARE, ratio, win,
			c.fallbacks, c.trials, c.trials-c.outside, c.trials)
	}
	t.Log("\n" + sb.String())
	require.NotEmpty(t, cells)
}
