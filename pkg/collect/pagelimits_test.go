package collect

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"testing"
	"time"

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

// TestSampleLimitWhileParsing: a page of 1,000,000 stored series (40 MB,
// under a raised body limit) with the default sample limit of 50,000: the
// scrape stops parsing at the 50,001st sample (Prometheus's own
// scrape_samples_scraped says 50,001, not 1,000,000), fails with the limit's
// sentence, and stores nothing of the page.
func TestSampleLimitWhileParsing(t *testing.T) {
	srv := bigPage(t, 1_000_000)
	cfg := loadSettings(t, map[string]any{"scrapeInterval": "5s", "scrapeTimeout": "4s", "bodySizeLimit": 64 << 20,
		"targets": []map[string]any{{"name": "big", "url": srv.URL + "/metrics"}}}, nil)
	c, err := Start(cfg, Options{Dir: filepath.Join(t.TempDir(), "ds")})
	require.NoError(t, err)
	defer func() { require.NoError(t, c.Close()) }()
	var n float64
	require.Eventually(t, func() bool {
		var ok bool
		n, ok = scrapedSamples(t, c, "big")
		return ok
	}, 20*time.Second, 50*time.Millisecond)
	assert.Equal(t, float64(50_001), n, "samples parsed")
	st := c.Status()[0]
	assert.False(t, st.Up)
	assert.Contains(t, st.LastError, "sample limit exceeded: the page holds more than 50000 samples")
	assert.Contains(t, st.LastError, "parsing stopped there")
	v, err := c.Querier().Query(context.Background(), `count(vllm:num_requests_running{job="big"})`, time.Now())
	require.NoError(t, err)
	assert.Empty(t, v.(model.Vector), "nothing of the page stored")
	t.Logf("scrape: %s, %.0f samples parsed", st.LastDuration, n)
}

// TestScrapeTimeoutWhileParsing: the same page with the limit raised above
// it and a 1 s scrape timeout: fetching 40 MB from loopback fits in the
// timeout, storing a million new series does not; parsing stops when the
// timeout passes (scrape_samples_scraped far below 1,000,000) and the scrape
// fails with the timeout's sentence.
func TestScrapeTimeoutWhileParsing(t *testing.T) {
	srv := bigPage(t, 1_000_000)
	cfg := loadSettings(t, map[string]any{"scrapeInterval": "30s", "scrapeTimeout": "1s", "bodySizeLimit": 64 << 20, "sampleLimit": 2_000_000,
		"targets": []map[string]any{{"name": "big", "url": srv.URL + "/metrics"}}}, nil)
	c, err := Start(cfg, Options{Dir: filepath.Join(t.TempDir(), "ds")})
	require.NoError(t, err)
	defer func() { require.NoError(t, c.Close()) }()
	var n float64
	require.Eventually(t, func() bool {
		var ok bool
		n, ok = scrapedSamples(t, c, "big")
		return ok
	}, 40*time.Second, 50*time.Millisecond)
	st := c.Status()[0]
	assert.False(t, st.Up)
	if assert.Contains(t, st.LastError, "scrape timeout exceeded: the page was still being parsed and stored 1s after the scrape started") {
		assert.Less(t, n, float64(1_000_000), "parsing stopped before the page's end")
	}
	t.Logf("scrape: %s, %.0f samples parsed; %s", st.LastDuration, n, st.LastError)
}
