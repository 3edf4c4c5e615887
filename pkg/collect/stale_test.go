package collect

import (
	"context"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"testing"
	"time"

	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/inferscope/inferscope-llm-datasource/pkg/catalog"
)

// pageGauges serves 3 running and 1 waiting request on one vLLM engine.
const pageGauges = "testdata/vllm-v1-gauges-running3-waiting1.prom"

func gaugePageServer(t *testing.T) *httptest.Server {
	t.Helper()
	page := readPage(t, pageGauges)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
		_, _ = w.Write([]byte(page))
	}))
	t.Cleanup(srv.Close)
	return srv
}

// labelledSettings is one target "a" on url with the extra label zone=<zone>.
func labelledSettings(t *testing.T, url, zone string) map[string]any {
	// 500 ms: a scrape that times out on a loaded machine writes Prometheus's own staleness
	// markers, which would change the counts below.
	return map[string]any{"scrapeInterval": "500ms", "scrapeTimeout": "500ms", "retention": "1h",
		"targets": []map[string]any{{"name": "a", "url": url + "/metrics", "labels": map[string]string{"zone": zone}}}}
}

// instant evaluates expr at now and returns its single value (NaN-free), or
// -1 when the result is empty.
func instant(t *testing.T, c *Collector, expr string) float64 {
	t.Helper()
	v, err := c.Querier().Query(context.Background(), expr, time.Now())
	require.NoError(t, err)
	vec := v.(model.Vector)
	if len(vec) == 0 {
		return -1
	}
	require.Len(t, vec, 1, expr)
	return float64(vec[0].Value)
}

// TestStaleAfterRelabelAndRestart: the page says running 3, waiting 1. A
// settings save that adds a label (zone 1 → 2) creates new series; the old
// ones must end when their scraping ended, so the sums stay 3 and 1 (they
// read 6 and 2 for five minutes before: no staleness marker was written when
// the old instance's scrape manager stopped). The same across a plugin
// restart (Close, then Start on the same directory with zone 3, and on
// another port), and a restart with unchanged settings marks nothing.
func TestStaleAfterRelabelAndRestart(t *testing.T) {
	verifyNoLeaks(t)
	srv := gaugePageServer(t)
	dir := filepath.Join(t.TempDir(), "ds")
	running, err := catalog.GaugePromQL(catalog.RequestsRunning, catalog.Scope{}, "sum")
	require.NoError(t, err)
	waiting, err := catalog.GaugePromQL(catalog.RequestsWaiting, catalog.Scope{}, "sum")
	require.NoError(t, err)

	c1, err := Start(loadSettings(t, labelledSettings(t, srv.URL, "1"), nil), Options{Dir: dir, UID: "ds"})
	require.NoError(t, err)
	require.Eventually(t, func() bool { return instant(t, c1, running) == 3 }, 10*time.Second, 10*time.Millisecond)
	time.Sleep(time.Second) // a few scrapes of zone 1
	switchAt := time.Now()

	// A settings save: Grafana builds the new instance before disposing the old.
	c2, err := Start(loadSettings(t, labelledSettings(t, srv.URL, "2"), nil), Options{Dir: dir, UID: "ds"})
	require.NoError(t, err)
	require.NoError(t, c1.Close())
	<-c2.sweep.done
	// The zone-1 series: the page's four, and up and the four scrape_* series (target labels
	// reach them too). A zone-1 scrape that failed would have marked the page's four already.
	assert.Contains(t, []int{5, 9}, c2.sweep.marked)
	assert.Equal(t, 3.0, instant(t, c2, running))
	assert.Equal(t, 1.0, instant(t, c2, waiting))
	assert.Equal(t, 1.0, instant(t, c2, `count(vllm:num_requests_running)`))
	// At no step of the switch did the two label sets add up.
	m, err := c2.Querier().QueryRange(context.Background(), running, switchAt.Add(-time.Second), time.Now(), 20*time.Millisecond)
	require.NoError(t, err)
	require.Len(t, m, 1)
	for _, p := range m[0].Values {
		assert.LessOrEqual(t, float64(p.Value), 3.0, "running at %s", p.Timestamp.Time())
	}

	// A plugin restart with another label, then on another port (a new instance label).
	require.NoError(t, c2.Close())
	c3, err := Start(loadSettings(t, labelledSettings(t, srv.URL, "3"), nil), Options{Dir: dir, UID: "ds"})
	require.NoError(t, err)
	<-c3.sweep.done
	assert.Equal(t, 3.0, instant(t, c3, running))
	assert.Equal(t, 1.0, instant(t, c3, waiting))
	require.NoError(t, c3.Close())

	srv2 := gaugePageServer(t)
	c4, err := Start(loadSettings(t, labelledSettings(t, srv2.URL, "3"), nil), Options{Dir: dir, UID: "ds"})
	require.NoError(t, err)
	<-c4.sweep.done
	assert.Equal(t, 3.0, instant(t, c4, running))
	assert.Equal(t, 1.0, instant(t, c4, waiting))
	assert.Equal(t, 1.0, instant(t, c4, `count(up)`), "the old instance's up series ended too")
	require.NoError(t, c4.Close())

	// A restart with the same settings: every series is scraped again, none is marked.
	c5, err := Start(loadSettings(t, labelledSettings(t, srv2.URL, "3"), nil), Options{Dir: dir, UID: "ds"})
	require.NoError(t, err)
	<-c5.sweep.done
	assert.Zero(t, c5.sweep.marked)
	assert.Equal(t, 3.0, instant(t, c5, running))
	require.NoError(t, c5.Close())
}
