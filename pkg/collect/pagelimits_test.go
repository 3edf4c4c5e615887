package collect

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// bigPage serves n series of a stored family (vllm:num_requests_running),
// about 40 bytes each, built once.
func bigPage(t *testing.T, n int) *httptest.Server {
	var b bytes.Buffer
	b.WriteString("# TYPE vllm:num_requests_running gauge\n")
	for k := 0; k < n; k++ {
		fmt.Fprintf(&b, "vllm:num_requests_running{s=\"%d\"} 1\n", k)
	}
	page := b.Bytes()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; version=0.0.4")
		_, _ = w.Write(page)
	}))
	t.Cleanup(srv.Close)
	return srv
}

// scrapedSamples is the last scrape_samples_scraped of job: how many
// samples the scrape loop parsed from the page (Prometheus's own count).
func scrapedSamples(t *testing.T, c *Collector, job string) (float64, bool) {
	v, err := c.Querier().Query(context.Background(), `scrape_samples_scraped{job="`+job+`"}`, time.Now())
	require.NoError(t, err)
	vec := v.(model.Vector)
	if len(vec) == 0 {
		return 0, false
	}
	return float64(vec[0].Value), true
}

// maxUp is the largest up sample of job stored over the last hour (-1: none).
func maxUp(t *testing.T, c *Collector, job string) float64 {
	v, err := c.Querier().Query(context.Background(), `max_over_time(up{job="`+job+`"}[1h])`, time.Now())
	require.NoError(t, err)
	vec := v.(model.Vector)
	if len(vec) == 0 {
		return -1
	}
	return float64(vec[0].Value)
}

// frozenClock is a page clock that never moves: the scrape timeout never passes while a page
// is parsed, whatever the machine's speed.
func frozenClock() func() time.Time {
	t0 := time.Now()
	return func() time.Time { return t0 }
}

// steppingClock is a page clock that moves step at every reading: the meteredAppender reads
// it once when a scrape takes its appender and then once every deadlineEvery samples, so a
// page's timeout passes at a sample count fixed by arithmetic, not by the machine's speed.
func steppingClock(step time.Duration) func() time.Time {
	var mu sync.Mutex
	t := time.Now()
	return func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		t = t.Add(step)
		return t
	}
}

// TestSampleLimitWhileParsing: a page of 200,000 stored series (8 MB, under a raised body
// limit) with the default sample limit of 50,000: the scrape stops parsing at the 50,001st
// sample (Prometheus's own scrape_samples_scraped says 50,001, not 200,000), fails with the
// limit's sentence, and stores nothing of the page. The page clock is frozen, so the scrape
// timeout cannot fire first on a loaded machine (it did at 48,896 samples at load 60-120).
func TestSampleLimitWhileParsing(t *testing.T) {
	srv := bigPage(t, 200_000)
	cfg := loadSettings(t, map[string]any{"scrapeInterval": "5s", "scrapeTimeout": "5s", "bodySizeLimit": 64 << 20,
		"targets": []map[string]any{{"name": "big", "url": srv.URL + "/metrics"}}}, nil)
	c, err := Start(cfg, Options{Dir: filepath.Join(t.TempDir(), "ds"), pageClock: frozenClock()})
	require.NoError(t, err)
	defer func() { require.NoError(t, c.Close()) }()
	var n float64
	require.Eventually(t, func() bool {
		var ok bool
		n, ok = scrapedSamples(t, c, "big")
		return ok
	}, 2*time.Minute, 50*time.Millisecond)
	st := c.Status()[0]
	assert.False(t, st.Up)
	require.Contains(t, st.LastError, "sample limit exceeded: the page holds more than 50000 samples", "the fetch itself must not time out (5 s for 8 MB from loopback)")
	assert.Equal(t, float64(50_001), n, "samples parsed")
	assert.Contains(t, st.LastError, "parsing stopped there")
	assert.False(t, st.Overloaded, "a limit, not the plugin falling behind")
	v, err := c.Querier().Query(context.Background(), `count(vllm:num_requests_running{job="big"})`, time.Now())
	require.NoError(t, err)
	assert.Empty(t, v.(model.Vector), "nothing of the page stored")
	// The page is the target's to fix: its scrape counts as down, as in Prometheus.
	assert.Equal(t, 0.0, maxUp(t, c, "big"), "a sample-limited scrape stores up = 0")
	t.Logf("scrape: %s, %.0f samples parsed", st.LastDuration, n)
}

// TestScrapeTimeoutWhileParsing: the same page with the limit raised above it; the page clock
// moves 10 ms at every reading under a 4 s scrape timeout, so parsing passes the timeout at
// its 401st reading after the appender's: sample 401 × 256 = 102,656 (deadlineEvery), on any
// machine. The scrape fails with the timeout's sentence saying the plugin could not keep up,
// the status says Overloaded, inferscope_scrape_overloads_total counts it, and nothing of the
// page is stored.
func TestScrapeTimeoutWhileParsing(t *testing.T) {
	srv := bigPage(t, 200_000)
	cfg := loadSettings(t, map[string]any{"scrapeInterval": "5s", "scrapeTimeout": "4s", "bodySizeLimit": 64 << 20, "sampleLimit": 2_000_000,
		"targets": []map[string]any{{"name": "big", "url": srv.URL + "/metrics"}}}, nil)
	c, err := Start(cfg, Options{Dir: filepath.Join(t.TempDir(), "ds"), UID: "overload-test", pageClock: steppingClock(10 * time.Millisecond)})
	require.NoError(t, err)
	defer func() { require.NoError(t, c.Close()) }()
	var n float64
	require.Eventually(t, func() bool {
		var ok bool
		n, ok = scrapedSamples(t, c, "big")
		return ok
	}, 2*time.Minute, 50*time.Millisecond)
	st := c.Status()[0]
	assert.False(t, st.Up)
	require.Contains(t, st.LastError, "scrape timeout exceeded: the page was still being parsed and stored 4s after the scrape started", "the fetch itself must not time out")
	assert.Contains(t, st.LastError, "the plugin could not keep up")
	assert.Equal(t, float64(102_656), n, "parsing stopped at the reading past the timeout")
	assert.True(t, st.Overloaded)
	assert.GreaterOrEqual(t, testutil.ToFloat64(scrapeOverloadsTotal.WithLabelValues("overload-test", "big")), 1.0)
	v, err := c.Querier().Query(context.Background(), `count(vllm:num_requests_running{job="big"})`, time.Now())
	require.NoError(t, err)
	assert.Empty(t, v.(model.Vector), "nothing of the page stored")
	// The target answered; the plugin could not keep up: the attempt is counted, but no up = 0
	// is stored to spend the target's availability budget (every scrape here is given up).
	v, err = c.Querier().Query(context.Background(), `count_over_time(up{job="big"}[1h])`, time.Now())
	require.NoError(t, err)
	assert.Empty(t, v.(model.Vector), "no up sample of an overloaded scrape")
	assert.GreaterOrEqual(t, testutil.ToFloat64(scrapesTotal.WithLabelValues("overload-test", "big")), 1.0, "the attempt is counted")
	assert.GreaterOrEqual(t, testutil.ToFloat64(scrapeFailuresTotal.WithLabelValues("overload-test", "big")), 1.0, "and counted as failed")
	t.Logf("scrape: %s, %.0f samples parsed; %s", st.LastDuration, n, st.LastError)
}
