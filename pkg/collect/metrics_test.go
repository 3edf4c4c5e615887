package collect

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// gathered returns the value of the metric family name whose labels include
// want, from the default registry the SDK serves (a histogram's sample
// count); ok is false when no such series exists.
func gathered(t *testing.T, name string, want map[string]string) (float64, bool) {
	t.Helper()
	mfs, err := prometheus.DefaultGatherer.Gather()
	require.NoError(t, err)
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	next:
		for _, m := range mf.GetMetric() {
			have := map[string]string{}
			for _, lp := range m.GetLabel() {
				have[lp.GetName()] = lp.GetValue()
			}
			for k, v := range want {
				if have[k] != v {
					continue next
				}
			}
			switch mf.GetType() {
			case dto.MetricType_COUNTER:
				return m.GetCounter().GetValue(), true
			case dto.MetricType_GAUGE:
				return m.GetGauge().GetValue(), true
			case dto.MetricType_HISTOGRAM:
				return float64(m.GetHistogram().GetSampleCount()), true
			}
		}
	}
	return 0, false
}

// TestOwnMetrics: the collector's metrics agree with what the targets served
// and with what the TSDB holds, counted independently.
func TestOwnMetrics(t *testing.T) {
	verifyNoLeaks(t)
	good, served := counterServer(t, "x")
	failing := failingServer(t)
	cfg := loadSettings(t, map[string]any{"scrapeInterval": "100ms", "scrapeTimeout": "100ms", "retention": "1h",
		"targets": []map[string]any{{"name": "good", "url": good.URL + "/metrics"}, {"name": "failing", "url": failing.URL + "/metrics"}}},
		map[string]string{"good.bearerToken": "x"})
	const uid = "metrics-uid"
	c, err := Start(cfg, Options{Dir: filepath.Join(t.TempDir(), uid), UID: uid})
	require.NoError(t, err)
	require.Eventually(t, func() bool { return served.Load() >= 6 }, 10*time.Second, 10*time.Millisecond)
	c.stopScraping() // freeze the counts; the store stays open

	ctx := context.Background()
	count := func(q string) float64 {
		v, err := c.Querier().Query(ctx, q, time.Now())
		require.NoError(t, err)
		vec := v.(model.Vector)
		require.Len(t, vec, 1, q)
		return float64(vec[0].Value)
	}
	good0 := map[string]string{"datasource": uid, "target": "good"}
	fail0 := map[string]string{"datasource": uid, "target": "failing"}
	// One up sample per scrape attempt is in the store.
	attempts, ok := gathered(t, "inferscope_scrapes_total", good0)
	require.True(t, ok)
	assert.Equal(t, count(`count_over_time(up{job="good"}[1h])`), attempts)
	assert.InDelta(t, float64(served.Load()), attempts, 1, "every request served is one attempt (one may be cut)")
	failures, _ := gathered(t, "inferscope_scrape_failures_total", good0)
	assert.Equal(t, count(`count_over_time(up{job="good"}[1h])`)-count(`sum_over_time(up{job="good"}[1h])`), failures)
	fAttempts, _ := gathered(t, "inferscope_scrapes_total", fail0)
	fFailures, _ := gathered(t, "inferscope_scrape_failures_total", fail0)
	assert.Positive(t, fAttempts)
	assert.Equal(t, fAttempts, fFailures, "every scrape of the 503 target failed")
	// Samples stored = samples in the TSDB for the job.
	stored, _ := gathered(t, "inferscope_samples_stored_total", good0)
	v, err := c.Querier().Query(ctx, `{job="good"}[1h]`, time.Now())
	require.NoError(t, err)
	inStore := 0
	for _, s := range v.(model.Matrix) {
		inStore += len(s.Values)
	}
	assert.Equal(t, float64(inStore), stored)
	// One duration observation per attempt, of both targets.
	durations, _ := gathered(t, "inferscope_scrape_duration_seconds", map[string]string{"datasource": uid})
	assert.Equal(t, attempts+fAttempts, durations)
	size, ok := gathered(t, "inferscope_storage_bytes", map[string]string{"datasource": uid})
	require.True(t, ok)
	assert.Positive(t, size)
	series, _ := gathered(t, "inferscope_storage_head_series", map[string]string{"datasource": uid})
	// Stopping the scrapes wrote staleness markers, so an instant selector
	// sees none of the series: count those with samples in the last hour.
	assert.Equal(t, count(`count(last_over_time({__name__=~".+"}[1h]))`), series)

	require.NoError(t, c.Close())
	_, ok = gathered(t, "inferscope_scrapes_total", good0)
	assert.False(t, ok, "a closed data source's series are deleted")
	_, ok = gathered(t, "inferscope_storage_bytes", map[string]string{"datasource": uid})
	assert.False(t, ok)
}
