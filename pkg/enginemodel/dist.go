package enginemodel

import (
	"math"
	"math/rand/v2"
)

// Sample draws one length from d with r. d must have passed Config.Validate.
func (d LengthDist) Sample(r *rand.Rand) int {
	switch d.Kind {
	case "uniform":
		return d.Min + r.IntN(d.Max-d.Min+1)
	case "lognormal":
		mu := math.Log(d.Mean) - d.Sigma*d.Sigma/2
		v := int(math.Round(math.Exp(mu + d.Sigma*r.NormFloat64())))
		return min(max(v, d.Min), d.Max)
	default:
		return int(d.Mean)
	}
}

// ExpSample draws an exponential variate with the given rate (events/s).
func ExpSample(r *rand.Rand, rate float64) float64 {
	return r.ExpFloat64() / rate
}

// NewRand returns the deterministic generator for seed and stream.
func NewRand(seed, stream uint64) *rand.Rand {
	return rand.New(rand.NewPCG(seed, stream^0x9e3779b97f4a7c15)) // #nosec G404 -- a seeded, reproducible simulation stream, not a secret
}

// MeanValue is the distribution's mean before clamping (tokens).
func (d LengthDist) MeanValue() float64 {
	switch d.Kind {
	case "uniform":
		return float64(d.Min+d.Max) / 2
	default:
		return d.Mean
	}
}
