package catalog

import (
	"time"
)

// IdleSharePromQL returns the share (0..1) of each window of length window, per the scope's
// groups, during which no request was running: the running-requests gauge summed per group
// (GaugePromQL "sum"), compared `== bool 0`, averaged over a subquery at resolution (the
// scrape interval, so each scrape counts once):
//
//	avg_over_time((sum by (job) (…num_requests_running…) == bool 0)[5m:15s])
//
// Scrapes that are missing (target down) are not counted, idle or busy. Errors: those of
// GaugePromQL, or a window or resolution under 1 ms.
func IdleSharePromQL(sc Scope, window, resolution time.Duration) (string, error) {
	running, err := GaugePromQL(RequestsRunning, sc, "sum")
	if err != nil {
		return "", err
	}
	w, err := windowString(window)
	if err != nil {
		return "", err
	}
	res, err := windowString(resolution)
	if err != nil {
		return "", err
	}
	return "avg_over_time((" + running + " == bool 0)[" + w + ":" + res + "])", nil
}
