package cost

import (
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/inferscope/inferscope-llm-datasource/pkg/analysis"
)

func one(v float64) []float64 { return []float64{v} }

func byStat(t *testing.T, r Result) map[string]float64 {
	t.Helper()
	out := map[string]float64{}
	for _, s := range r.Series {
		k := s.Labels["stat"]
		if b := s.Labels["bound"]; b != "" {
			k += "/" + b
		}
		require.Len(t, s.Values, 1)
		out[k] = s.Values[0]
	}
	return out
}

// The example and its siblings, computed by hand: 3.6 per hour is 0.001 per second.
func TestComputeHandComputedCosts(t *testing.T) {
	times := []time.Time{time.Unix(0, 0)}
	r := Compute(Input{Target: "a", PerHour: 3.6,
		OutputTokens: one(500), PromptTokens: one(1500), Requests: one(2), CachedPromptTokens: one(500),
		Idle: one(0.25), EnergyWatts: one(700), PowerWatts: one(650),
		GoodLower: one(1), GoodUpper: one(1.5), GoodRequests: one(2)}, times, "currencyUSD")
	require.True(t, r.Priced)
	assert.Zero(t, r.PowerFallback)
	got := byStat(t, r)
	want := map[string]float64{
		CostPerHour:                    3.6,
		CostPer1MOutput:                2.00,                        // 0.001 / 500 × 1e6
		CostPer1MTokens:                0.5,                         // 0.001 / 2000 × 1e6
		CostPerRequest:                 0.0005,                      // 0.001 / 2
		IdleShare:                      0.25,                        //
		IdleCostPerHour:                0.9,                         // 3.6 × 0.25
		EnergyPerOutputToken:           1.4,                         // 700 J/s / 500 tok/s (the counter, not the 650 W gauge)
		PrefillCostPerHour:             2.4,                         // computed prompt 1500 − 500 = 1000 of 1500 tokens: 3.6 × 2/3
		DecodeCostPerHour:              1.2,                         // 3.6 × 500/1500
		PrefixCacheSavings:             1.2,                         // 500 tok/s × 0.001/1500 × 3600
		CostPer1MGoodTokens + "/lower": 0.001 / (2000 * 0.75) * 1e6, // 0.6667
		CostPer1MGoodTokens + "/upper": 1.0,                         // 0.001 / (2000 × 0.5) × 1e6
	}
	require.Len(t, got, len(want))
	for k, v := range want {
		assert.InDelta(t, v, got[k], 1e-9, k)
	}
	for _, s := range r.Series {
		switch s.Labels["stat"] {
		case IdleShare:
			assert.Equal(t, "percentunit", s.Unit)
		case EnergyPerOutputToken:
			assert.Equal(t, "joule", s.Unit)
		default:
			assert.Equal(t, "currencyUSD", s.Unit, s.Name)
		}
	}
}

// Per-GPU-hour pricing, energy priced from the power gauge (fallback), and a window without
// output tokens.
func TestComputeGPUHoursEnergyPriceAndPowerFallback(t *testing.T) {
	times := []time.Time{time.Unix(0, 0), time.Unix(60, 0)}
	r := Compute(Input{Target: "b", PerGPUHour: 2.5, GPUs: []float64{2, 2}, EnergyPricePerKWh: 0.2,
		OutputTokens: []float64{0, 1000}, PromptTokens: []float64{0, 1000}, Requests: []float64{0, 1},
		EnergyWatts: []float64{math.NaN(), math.NaN()}, PowerWatts: []float64{1000, 1000}}, times, "currencyEUR")
	assert.Equal(t, 2, r.PowerFallback)
	assert.False(t, r.EnergyMissing)
	vals := map[string][]float64{}
	for _, s := range r.Series {
		vals[s.Labels["stat"]] = s.Values
	}
	// 2 GPUs × 2.5 + 1 kW × 0.2 per kWh = 5.2 per hour.
	assert.InDeltaSlice(t, []float64{0.2, 0.2}, vals[EnergyCostPerHour], 1e-12)
	assert.InDeltaSlice(t, []float64{5.2, 5.2}, vals[CostPerHour], 1e-12)
	assert.True(t, math.IsNaN(vals[CostPer1MOutput][0]), "no output tokens: no per-token cost")
	assert.InDelta(t, 5.2/3600/1000*1e6, vals[CostPer1MOutput][1], 1e-9)
	assert.InDelta(t, 1.0, vals[EnergyPerOutputToken][1], 1e-12) // 1000 W / 1000 tok/s
	assert.NotContains(t, vals, PrefixCacheSavings, "no cache counter: no savings series")
	assert.NotContains(t, vals, CostPer1MGoodTokens, "no profile: no goodput cost")
}

func TestComputeWithoutPriceHasNoCost(t *testing.T) {
	r := Compute(Input{Target: "c", EnergyPricePerKWh: 0.3, OutputTokens: one(10), Idle: one(0)},
		[]time.Time{time.Unix(0, 0)}, "currencyUSD")
	assert.False(t, r.Priced)
	assert.True(t, r.EnergyMissing)
	var stats []string
	for _, s := range r.Series {
		stats = append(stats, s.Labels["stat"])
	}
	assert.Equal(t, []string{IdleShare, EnergyPerOutputToken}, stats)
}

func TestCurrencyUnit(t *testing.T) {
	assert.Equal(t, "currencyUSD", CurrencyUnit("USD"))
	assert.Equal(t, "suffix: CAD", CurrencyUnit("CAD"))
}

// The ratio divides by the time mean of the baseline points in (t − baseline, t]: with points
// 1, 1, NaN, 3 at minutes 0..3 and a 2-minute baseline, at minute 3 the mean is of minute 2
// (NaN, left out) and 3: 3, ratio 6/3 = 2; at minute 1 of minutes 0 and 1: 1, ratio 4.
func TestSpikeRatioSeriesHandComputed(t *testing.T) {
	m := func(i int) time.Time { return time.Unix(int64(60*i), 0) }
	base := analysis.Series{Times: []time.Time{m(0), m(1), m(2), m(3)}, Values: []float64{1, 1, math.NaN(), 3}}
	cur := analysis.Series{Labels: map[string]string{"target": "a", "stat": CostPer1MTokens},
		Times: []time.Time{m(1), m(3)}, Values: []float64{4, 6}}
	r := SpikeRatioSeries(cur, base, 2*time.Minute)
	assert.Equal(t, map[string]string{"target": "a", "stat": SpikeRatio}, r.Labels)
	assert.InDeltaSlice(t, []float64{4, 2}, r.Values, 1e-12)
}
