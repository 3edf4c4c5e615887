package twin

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/inferscope/inferscope-llm-datasource/pkg/enginemodel"
)

// lawWindows makes n 30-second windows whose mean step time is law's (enginemodel's formula
// at the given efficiencies) for a decode batch varying 10..70 around the windows, plus
// relative noise: the windows a target obeying law would show.
func lawWindows(t *testing.T, law enginemodel.StepLaw, n int, noise float64) (enginemodel.Config, Observed) {
	t.Helper()
	cfg := enginemodel.DefaultConfig()
	truth := cfg
	truth.StepLaw = law
	truth.GPU.BWEfficiency, truth.GPU.MFU = 0.7, 0.5
	require.NoError(t, law.Validate())
	o := Observed{NumGPUBlocks: 20000, BlockSize: 16}
	r := rand.New(rand.NewPCG(3, 5))
	for i := 0; i < n; i++ {
		b := 10 + 60*r.Float64()
		kv := b * 900 / (20000 * 16)
		prefills := 20 + 20*r.Float64()
		dec := enginemodel.StepWork{DecodeSeqs: b, Ctx: kv * 20000 * 16}
		mix := dec
		mix.PrefillTokens = 600
		// steps in 30 s: solve steps·mean = 30 with `prefills` mixed steps
		td, tm := enginemodel.StepSeconds(&truth, dec, 1), enginemodel.StepSeconds(&truth, mix, 1)
		steps := prefills + (30-prefills*tm)/td
		mean := 30 / steps * (1 + noise*r.NormFloat64())
		steps = 30 / mean
		o.Windows = append(o.Windows, Window{T: time.Unix(int64(30*i), 0), Len: 30, Steps: steps,
			Gen: b*steps + prefills, Tokens: b*steps + prefills + 600*prefills, Prefills: prefills, Running: b, KVUsage: kv})
	}
	return cfg, o
}

// Windows made by the per-sequence law (80 µs per sequence) or the memory floor (doubling at
// 100 sequences) choose a law with a per-sequence cost, at a third of the roofline's held-out
// error or less; windows made by the roofline with 2 % noise keep the
// roofline (the richer laws fit the noise, not better held-out); too few windows, or no KV
// block count, keep the roofline and say why.
func TestFitLawsChoosesTheLawThatMadeTheWindows(t *testing.T) {
	cfg, o := lawWindows(t, enginemodel.StepLaw{Kind: enginemodel.LawPerSequence, PerSeqDecode: 80e-6}, 60, 0.005)
	f := fitLaws(cfg, o)
	// on decode data the per-sequence cost and the moving floor are nearly the same model
	// (both add a cost per decoding sequence): either may win, the roofline may not
	assert.NotEqual(t, enginemodel.LawRoofline, f.Law.Kind, "%+v", f)
	assert.Less(t, f.Errors[enginemodel.LawPerSequence], f.Errors[enginemodel.LawRoofline]/3)

	cfg, o = lawWindows(t, enginemodel.StepLaw{Kind: enginemodel.LawMemoryFloor, FloorBatch: 100}, 60, 0.005)
	f = fitLaws(cfg, o)
	assert.NotEqual(t, enginemodel.LawRoofline, f.Law.Kind, "%+v", f)

	cfg, o = lawWindows(t, enginemodel.StepLaw{}, 60, 0.02)
	f = fitLaws(cfg, o)
	assert.Equal(t, enginemodel.LawRoofline, f.Law.Kind, "%+v", f)
	assert.Empty(t, f.Why)
	for _, k := range enginemodel.StepLaws {
		assert.False(t, math.IsNaN(f.Errors[k]), k)
	}

	o.Windows = o.Windows[:5]
	f = fitLaws(cfg, o)
	assert.Equal(t, enginemodel.LawRoofline, f.Law.Kind)
	assert.Contains(t, f.Why, "5 windows")
	o.NumGPUBlocks = 0
	assert.Contains(t, fitLaws(cfg, o).Why, "no KV block count")
}
