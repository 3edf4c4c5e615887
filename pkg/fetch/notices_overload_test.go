package fetch

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/inferscope/inferscope-llm-datasource/pkg/collect"
)

// A target whose last scrape failed because the plugin could not keep up (collect's
// Overloaded) gets a notice saying so, naming the metric; a slow target (its fetch timed
// out) gets only the down notice, with its own error (checked failing before: both read the
// same).
func TestOverloadedScrapeNotice(t *testing.T) {
	at := time.Unix(1_800_000_000, 0)
	env := &Env{Statuses: func() map[string]collect.TargetStatus {
		return map[string]collect.TargetStatus{
			"busy": {Name: "busy", LastScrape: at, Overloaded: true,
				LastError: "scrape timeout exceeded: the page was still being parsed and stored 4s after the scrape started"},
			"slow": {Name: "slow", LastScrape: at, LastError: `Get "http://10.0.0.5:8000/metrics": context deadline exceeded`},
		}
	}}
	r := NewRun(context.Background(), env, Plan{Start: at.Add(-time.Hour), End: at, Step: time.Minute})
	r.AvailabilityNotices([]TargetView{{Name: "busy"}, {Name: "slow"}}, nil)
	var busy, slow []string
	for _, n := range r.Notes.List() {
		switch {
		case strings.HasPrefix(n.Text, "target busy"):
			busy = append(busy, n.Text)
		case strings.HasPrefix(n.Text, "target slow"):
			slow = append(slow, n.Text)
		}
	}
	assert.Contains(t, strings.Join(busy, "\n"), "target busy: the plugin could not keep up, not the target")
	assert.Contains(t, strings.Join(busy, "\n"), "inferscope_scrape_overloads_total")
	assert.NotContains(t, strings.Join(slow, "\n"), "could not keep up")
	assert.Contains(t, strings.Join(slow, "\n"), "target slow is down")
}
