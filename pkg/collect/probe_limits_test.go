package collect

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestProbeNamesTheDeadline: when the caller's deadline (Grafana's for a
// health check) is shorter than the scrape timeout, the error names it.
func TestProbeNamesTheDeadline(t *testing.T) {
	stalled := stalledServer(t)
	cfg := loadSettings(t, map[string]any{"scrapeTimeout": "10s", "targets": []map[string]any{{"name": "s", "url": stalled.URL + "/metrics"}}}, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	res := Probe(ctx, cfg, "s")
	require.Error(t, res.Err)
	assert.Less(t, time.Since(start), 5*time.Second)
	host := strings.TrimPrefix(stalled.URL, "http://")
	assert.Equal(t, "target `s`: no complete answer within the health check's deadline of 300ms set by Grafana from "+host+"/metrics", res.Err.Error())
}

// TestRedirectsAreNotFollowed: a target redirecting to another host is
// reported, and the other host is never asked, by the probe or the scrape.
func TestRedirectsAreNotFollowed(t *testing.T) {
	verifyNoLeaks(t)
	other, otherHits := counterServer(t, "x")
	redirect := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, other.URL+"/metrics", http.StatusFound)
	}))
	defer redirect.Close()
	cfg := loadSettings(t, map[string]any{"scrapeInterval": "100ms", "scrapeTimeout": "100ms",
		"targets": []map[string]any{{"name": "r", "url": redirect.URL + "/metrics"}}}, map[string]string{"r.bearerToken": "x"})

	res := Probe(context.Background(), cfg, "r")
	require.Error(t, res.Err)
	assert.Equal(t, "target `r`: HTTP 302 Found from "+strings.TrimPrefix(redirect.URL, "http://")+"/metrics: redirects are not followed; set the URL of the metrics page itself", res.Err.Error())

	c, err := Start(cfg, Options{Dir: t.TempDir()})
	require.NoError(t, err)
	defer func() { require.NoError(t, c.Close()) }()
	require.Eventually(t, func() bool { return !c.Status()[0].LastScrape.IsZero() }, 10*time.Second, 10*time.Millisecond)
	st := c.Status()[0]
	assert.False(t, st.Up)
	assert.Contains(t, st.LastError, "302")
	assert.Zero(t, otherHits.Load(), "the redirect's host was fetched")
}

// TestProbeAppliesTheSampleLimit: a page with more stored samples than the
// sample limit fails the probe as it fails the scrape; unused families do
// not count.
func TestProbeAppliesTheSampleLimit(t *testing.T) {
	var page strings.Builder
	for k := 0; k < 200; k++ {
		fmt.Fprintf(&page, "python_gc_objects_collected_total{generation=\"%d\"} 1\n", k) // dropped family
	}
	for k := 0; k < 60; k++ {
		fmt.Fprintf(&page, "vllm:num_requests_running{s=\"%d\"} 1\n", k)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = w.Write([]byte(page.String()))
	}))
	defer srv.Close()
	for limit, fails := range map[int]bool{50: true, 60: false} {
		cfg := loadSettings(t, map[string]any{"sampleLimit": limit, "targets": []map[string]any{{"name": "p", "url": srv.URL + "/metrics"}}}, nil)
		res := Probe(context.Background(), cfg, "p")
		if fails {
			require.Error(t, res.Err)
			assert.Contains(t, res.Err.Error(), "more than 50 samples of the families Inferscope stores (the sample limit)")
		} else {
			require.NoError(t, res.Err)
			assert.Equal(t, 260, res.Samples)
		}
	}
}
