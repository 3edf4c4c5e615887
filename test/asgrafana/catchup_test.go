package asgrafana

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/inferscope/inferscope-llm-datasource/pkg/sim"
)

// TestCatchUpWritesTheHistoryOnToTheWallClock: on a fake clock that moves a fortieth of the
// simulated time per fast-forward call (the wall time a fast-forward takes: an hour in 90 s), two simulators whose history ended
// 5 minutes ago are fast-forwarded until each one's history ends within a scrape interval of
// the clock (issue 33: the screenshots' live scrapes began minutes after the history ended).
func TestCatchUpWritesTheHistoryOnToTheWallClock(t *testing.T) {
	wall := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	scrape := 5 * time.Second
	var sims []*sim.Sim
	for _, dt := range demoTargets {
		cfg := sim.DefaultConfig()
		require.NoError(t, sim.ApplyScenario(&cfg, dt.scenario))
		s, err := sim.New(cfg, sim.Options{Start: wall.Add(-time.Hour)})
		require.NoError(t, err)
		s.AdvanceTo((55 * time.Minute).Seconds())
		sims = append(sims, s)
	}
	calls := 0
	require.NoError(t, catchUp(sims, scrape, func() time.Time { return wall }, func(i int, d time.Duration) error {
		calls++
		sims[i].AdvanceTo(sims[i].Now() + d.Seconds())
		wall = wall.Add(d / 40)
		return nil
	}))
	for i, s := range sims {
		end := s.Start().Add(time.Duration(s.Now() * float64(time.Second)))
		require.Less(t, wall.Sub(end), scrape, "simulator %d's history ends %s before the clock", i, wall.Sub(end))
	}
	require.Greater(t, calls, 2, "the first round's fast-forwards took time of their own")
}
