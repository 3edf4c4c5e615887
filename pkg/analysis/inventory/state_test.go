package inventory

import (
	"testing"
	"time"
)

// TestStateIsUpOnlyWhileTheLastScrapeIsRecent (issue 33): a target whose last scrape
// succeeded 20 minutes before now read a green "up" in the targets table. With a 5 s
// scrape interval it is stale after 15 s (three intervals, by hand): 15 s old is still
// up, 16 s and 20 minutes are stale; a failed scrape is down at any age.
func TestStateIsUpOnlyWhileTheLastScrapeIsRecent(t *testing.T) {
	now := time.Date(2026, 12, 2, 13, 0, 0, 0, time.UTC)
	after := StaleAfter(5 * time.Second)
	if after != 15*time.Second {
		t.Fatalf("StaleAfter(5s) = %s, want 15s", after)
	}
	cases := []struct {
		name string
		up   bool
		last time.Time
		now  time.Time
		want string
	}{
		{"fresh", true, now.Add(-2 * time.Second), now, StateUp},
		{"at the limit", true, now.Add(-15 * time.Second), now, StateUp},
		{"just past", true, now.Add(-16 * time.Second), now, StateStale},
		{"20 minutes old", true, now.Add(-20 * time.Minute), now, StateStale},
		{"failed, fresh", false, now.Add(-2 * time.Second), now, StateDown},
		{"failed, old", false, now.Add(-20 * time.Minute), now, StateDown},
		{"never scraped", false, time.Time{}, now, StateNotScraped},
		{"no now: not judged", true, now.Add(-20 * time.Minute), time.Time{}, StateUp},
	}
	for _, c := range cases {
		if got := State(c.up, c.last, c.now, after); got != c.want {
			t.Errorf("%s: State = %q, want %q", c.name, got, c.want)
		}
	}
	rows := Build([]Observed{{Name: "vllm-a", Kind: "agent", Up: true, LastScrape: now.Add(-20 * time.Minute), Now: now, StaleAfter: after}})
	if rows[0].State != StateStale || !rows[0].HasScrapeAge || rows[0].ScrapeAge != 20*time.Minute {
		t.Errorf("Build: state %q, age %s (has %v), want stale, 20m0s", rows[0].State, rows[0].ScrapeAge, rows[0].HasScrapeAge)
	}
}
