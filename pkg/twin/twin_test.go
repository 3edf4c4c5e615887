package twin

import (
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/inferscope/inferscope-llm-datasource/pkg/sim"
)

// Load growing 1 req/s per day from 10 req/s reaches a knee of 20 in 7 more days after 3 days.
func TestDaysToKneeLinearTrend(t *testing.T) {
	t0 := time.Unix(0, 0)
	var pts []Point
	for h := 0; h <= 72; h++ {
		pts = append(pts, Point{T: t0.Add(time.Duration(h) * time.Hour), V: 10 + float64(h)/24})
	}
	assert.InDelta(t, 7, DaysToKnee(pts, 20), 1e-9)
	assert.Equal(t, 0.0, DaysToKnee(pts, 12), "already past the knee")
	flat := []Point{{t0, 5}, {t0.Add(time.Hour), 5}}
	assert.True(t, math.IsInf(DaysToKnee(flat, 20), 1))
	assert.True(t, math.IsNaN(DaysToKnee(pts[:1], 20)))
}

// 25 req/s over a knee of 10 at 80 % utilisation: ceil(25 / 8) = 4 replicas.
func TestReplicasRule(t *testing.T) {
	assert.Equal(t, 4, Replicas(25, 10, 0.8))
	assert.Equal(t, 1, Replicas(0.1, 10, 0.8))
	assert.Equal(t, 0, Replicas(5, 0, 0.8))
	assert.InDelta(t, 2.5, Headroom(25, 10), 1e-12)
}

// The fit recovers the shape of a lognormal from its exact bucket CDF at 1-2-5 bounds.
func TestFitLognormalRecoversSigma(t *testing.T) {
	mean, sigma := 600.0, 0.8
	mu := math.Log(mean) - sigma*sigma/2
	var bs []Bucket
	for _, le := range []float64{1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10000} {
		bs = append(bs, Bucket{Le: le, Count: 1000 * 0.5 * math.Erfc(-(math.Log(le+0.5)-mu)/(sigma*math.Sqrt2))})
	}
	bs = append(bs, Bucket{Le: math.Inf(1), Count: 1000})
	d, err := fitLognormal(mean, bs, sim.DefaultConfig().Prompt)
	require.NoError(t, err)
	assert.InDelta(t, sigma, d.Sigma, 0.011)
	assert.Equal(t, mean, d.Mean)
	_, err = fitLognormal(math.NaN(), bs, sim.DefaultConfig().Prompt)
	assert.Error(t, err)
}

// +1 replica halves one replica's load; prompts ×2 doubles the mean and the bounds.
func TestChangeApply(t *testing.T) {
	cfg := sim.DefaultConfig()
	c2, r := Change{AddReplicas: 1}.Apply(cfg, 10)
	assert.Equal(t, 5.0, r)
	assert.Equal(t, cfg, c2)
	c3, _ := Change{PromptScale: 2}.Apply(cfg, 10)
	assert.Equal(t, 1200.0, c3.Prompt.Mean)
	assert.Equal(t, 16000, c3.Prompt.Max)
	c4, _ := Change{MaxNumSeqs: 32, PrefixHitRatio: 0.6}.Apply(cfg, 10)
	assert.Equal(t, 32, c4.MaxNumSeqs)
	assert.Equal(t, 0.6, c4.PrefixHitRatio)
}
