package collect

import (
	"context"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/inferscope/inferscope-llm-datasource/pkg/catalog"
	"github.com/inferscope/inferscope-llm-datasource/pkg/probe"
)

// TestCollectorScrapesProbes: a probe of settings probes[] is scraped as its
// own kind, behind its bearer token, and every family it serves is stored
// (the probe's names are in the catalogue's keep list). It waits for what the
// store holds, not for the first scrape: a 5 s scrape timeout (what is tested
// is not a timeout) and a generous wait, so a loaded machine only makes it
// slower (it failed at load 60-120 with a 200 ms timeout).
func TestCollectorScrapesProbes(t *testing.T) {
	verifyNoLeaks(t)
	m := probe.NewMetrics()
	m.Init("vllm-a:8000/v1/chat/completions", "m", 5, 32)
	m.Observe(probe.Result{Endpoint: "vllm-a:8000/v1/chat/completions", Model: "m", Start: time.Now(), TTFB: 0.01, TTFT: 0.05, E2E: 0.2,
		Gaps: []float64{0.01, 0.02}, OutputTokens: 3, TPOT: 0.015, GapVariance: 0.000025, GapMax: 0.02})
	m.Observe(probe.Result{Endpoint: "vllm-a:8000/v1/chat/completions", Model: "m", Start: time.Now(), Status: 429, Class: probe.ClassHTTP429})
	page := promhttp.HandlerFor(m.Registry, promhttp.HandlerOpts{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer ptok" {
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		page.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	good, _ := counterServer(t, "tok")
	cfg := loadSettings(t, map[string]any{
		"scrapeInterval": "5s", "scrapeTimeout": "5s",
		"targets": []map[string]any{{"name": "vllm-a", "url": good.URL + "/metrics"}},
		"probes":  []map[string]any{{"name": "probe-a", "url": srv.URL + "/metrics", "target": "vllm-a"}},
	}, map[string]string{"vllm-a.bearerToken": "tok", "probe-a.bearerToken": "ptok"})
	c, err := Start(cfg, Options{Dir: t.TempDir()})
	require.NoError(t, err)
	defer func() { require.NoError(t, c.Close()) }()
	want := []string{catalog.ProbeTTFT + "_bucket", catalog.ProbeRequestMaxITL + "_bucket", catalog.ProbeErrorsTotal,
		catalog.ProbeLastMaxITL, catalog.ProbeRequestsTotal, catalog.ProbeLastITLVariance}
	var names []string
	require.Eventually(t, func() bool {
		var err error
		names, err = c.Querier().MetricNames(context.Background(), `{job="probe-a"}`, time.Now().Add(-time.Hour), time.Now().Add(time.Minute))
		if err != nil {
			return false
		}
		for _, n := range want {
			if !slices.Contains(names, n) {
				return false
			}
		}
		return true
	}, 2*time.Minute, 50*time.Millisecond, "the probe's families stored")
	var st TargetStatus
	for _, s := range c.Status() {
		if s.Name == "probe-a" {
			st = s
		}
	}
	assert.Equal(t, KindProbe, st.Kind)
	assert.True(t, st.Up, st.LastError)
	for _, n := range want {
		assert.True(t, slices.Contains(names, n), "%s not stored (stored: %v)", n, names)
	}
}
