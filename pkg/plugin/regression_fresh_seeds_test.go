package plugin

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/inferscope/inferscope-llm-datasource/pkg/sim"
)

// TestRegressionOnFreshSeeds: on seeds the method was not tuned on (the tests of
// regression_test.go use 101, 202, 303): a decode 1.3× slower after the restart is called regressed in
// ITL and TPOT, a 25 % load increase alone never regressed, a plain restart
// never regressed nor improved.
func TestRegressionOnFreshSeeds(t *testing.T) {
	if testing.Short() {
		t.Skip("twelve simulated histories")
	}
	for seed := uint64(500); seed < 504; seed++ {
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) {
			t.Run("slower decode", func(t *testing.T) {
				inst, from, to := twoEras(t, seed, func(c *sim.Config) { c.GPU.BWEfficiency /= 1.3 })
				v, why := verdicts(t, inst, from, to)
				assert.Equal(t, "regressed", v["itl"], "seed %d slower decode: %s", seed, why)
				assert.Equal(t, "regressed", v["tpot"], "seed %d slower decode: %s", seed, why)
			})
			t.Run("load x1.25", func(t *testing.T) {
				inst, from, to := twoEras(t, seed, func(c *sim.Config) { c.Rate *= 1.25 })
				v, why := verdicts(t, inst, from, to)
				for stage, verdict := range v {
					assert.NotEqual(t, "regressed", verdict, "seed %d load ×1.25, %s: %s", seed, stage, why)
				}
			})
			t.Run("plain restart", func(t *testing.T) {
				inst, from, to := twoEras(t, seed, func(*sim.Config) {})
				v, why := verdicts(t, inst, from, to)
				for stage, verdict := range v {
					assert.Contains(t, []string{"no change", "not comparable"}, verdict, "seed %d plain restart, %s: %s", seed, stage, why)
				}
			})
		})
	}
}
