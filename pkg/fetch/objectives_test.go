package fetch

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/inferscope/inferscope-llm-datasource/pkg/analysis"
	"github.com/inferscope/inferscope-llm-datasource/pkg/catalog"
	"github.com/inferscope/inferscope-llm-datasource/pkg/settings"
)

// TestSelectObjectivesNarrowsThePlan: each objective's plan is the query's scope intersected
// with the objective's targets and models; an objective whose targets the query does not
// select is left out with a notice; names restrict the objectives.
func TestSelectObjectivesNarrowsThePlan(t *testing.T) {
	p := Plan{Scope: catalog.Scope{Targets: []string{"a", "b"}, By: []string{"target", "none"}}}
	profiles := []settings.Profile{{Name: "chat", Objectives: []settings.Objective{
		{Name: "ttft", Targets: []string{"b", "c"}},
		{Name: "e2e", Targets: []string{"c"}},
		{Name: "errors", Models: []string{"m"}},
	}}}
	for _, c := range []struct {
		name    string
		names   []string
		want    []string
		targets [][]string
		notices int
	}{
		{"every objective", nil, []string{"ttft", "errors"}, [][]string{{"b"}, {"a", "b"}}, 1},
		{"named objectives only", []string{"errors"}, []string{"errors"}, [][]string{{"a", "b"}}, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			var notes analysis.Notices
			objs := SelectObjectives(p, profiles, c.names, 15*time.Second, &notes)
			require.Len(t, objs, len(c.want))
			for k, o := range objs {
				assert.Equal(t, c.want[k], o.Name)
				assert.Equal(t, "chat", o.Profile)
				assert.Equal(t, c.targets[k], o.Sub.Scope.Targets)
				assert.Equal(t, []string{"target"}, o.GroupBy)
				assert.Equal(t, 15*time.Second, o.Scrape)
			}
			assert.Len(t, notes.List(), c.notices)
		})
	}
}

// TestNewBurnGrid: the history starts the longest burn window (or the sustained format's
// 2 minutes) before the first shown step, at a resolution dividing 5 minutes, and the shown
// steps are every panel step.
func TestNewBurnGrid(t *testing.T) {
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	p := Plan{Start: start, End: start.Add(time.Hour), Step: 5 * time.Minute}
	for _, c := range []struct {
		name      string
		sustained bool
		back      time.Duration
	}{
		{"timeseries reads 3d back", false, 72 * time.Hour},
		{"sustained reads 2 minutes back, rounded to steps", true, 2 * time.Minute},
	} {
		t.Run(c.name, func(t *testing.T) {
			g := NewBurnGrid(p, 15*time.Second, c.sustained)
			assert.Equal(t, 5*time.Minute, g.Res)
			assert.Equal(t, 1, g.Show)
			assert.Equal(t, start, g.First)
			assert.Equal(t, start.Add(time.Hour), g.End)
			back := c.back
			if c.sustained {
				back = g.Spike
				assert.Equal(t, 5*time.Minute, g.Spike)
			}
			assert.Equal(t, start.Add(-back), g.From)
			assert.Equal(t, g.First, g.Steps[g.Out])
			assert.Equal(t, g.End, g.Steps[len(g.Steps)-1])
		})
	}
	fine := NewBurnGrid(Plan{Start: start, End: start.Add(time.Hour), Step: 10 * time.Minute}, 15*time.Second, false)
	assert.Equal(t, 2, fine.Show, "a panel step coarser than the resolution shows every other step")
}
