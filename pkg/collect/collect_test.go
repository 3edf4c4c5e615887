package collect

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/config"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/relabel"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/inferscope/inferscope-llm-datasource/pkg/catalog"
	"github.com/inferscope/inferscope-llm-datasource/pkg/settings"
)

const (
	page011 = "testdata/vllm-0.11-v1-qwen05b-created-series.prom"
	pageV0  = "testdata/vllm-0.8-v0-multiproc-qwen3-0.6b-under-load-decommented.prom"
	// promptLine is the prompt-token counter of the 0.11 page (value 0.0 there).
	promptLine = `vllm:prompt_tokens_total{engine="0",model_name="Qwen/Qwen1.5-0.5B-Chat"} 0.0`
	// promptIncrement is how many prompt tokens the test server adds per scrape.
	promptIncrement = 7
)

// verifyNoLeaks checks, after every other cleanup (test servers included)
// has run, that no goroutine started during the test is left.
func verifyNoLeaks(t *testing.T) {
	t.Helper()
	opt := goleak.IgnoreCurrent()
	t.Cleanup(func() { goleak.VerifyNone(t, opt) })
}

func readPage(t testing.TB, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	return string(b)
}

// counterServer serves the real vLLM 0.11 page with its prompt-token counter
// advanced by promptIncrement on every request, and requires a bearer token.
func counterServer(t *testing.T, token string) (*httptest.Server, *atomic.Int64) {
	t.Helper()
	page := readPage(t, page011)
	require.Contains(t, page, promptLine)
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer "+token {
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		k := n.Add(1)
		body := strings.Replace(page, promptLine,
			fmt.Sprintf(`vllm:prompt_tokens_total{engine="0",model_name="Qwen/Qwen1.5-0.5B-Chat"} %d.0`, promptIncrement*k), 1)
		w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
		_, _ = w.Write([]byte(body))
	}))
	t.Cleanup(srv.Close)
	return srv, &n
}

func garbageServer(t *testing.T) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		_, _ = w.Write([]byte("<html><body>Welcome to nginx!</body></html>\n{{{ not metrics\n"))
	}))
	t.Cleanup(srv.Close)
	return srv
}

// stalledServer sleeps past any scrape timeout (until the client gives up).
func stalledServer(t *testing.T) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-time.After(10 * time.Second):
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

func failingServer(t *testing.T) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "engine dead", http.StatusServiceUnavailable)
	}))
	t.Cleanup(srv.Close)
	return srv
}

func loadSettings(t *testing.T, js map[string]any, secure map[string]string) settings.Settings {
	t.Helper()
	b, err := json.Marshal(js)
	require.NoError(t, err)
	s, err := settings.Load(b, secure)
	require.NoError(t, err)
	return s
}

func hostOf(t *testing.T, raw string) string {
	u, err := url.Parse(raw)
	require.NoError(t, err)
	return u.Host
}

func TestCollectorScrapes(t *testing.T) {
	verifyNoLeaks(t)

	good, scrapes := counterServer(t, "s3cret")
	garbage, stalled, failing := garbageServer(t), stalledServer(t), failingServer(t)
	cfg := loadSettings(t, map[string]any{
		"scrapeInterval": "200ms",
		"scrapeTimeout":  "150ms",
		"retention":      "1h",
		"targets": []map[string]any{
			{"name": "good", "url": good.URL + "/metrics?format=text", "labels": map[string]string{"cluster": "test"}},
			{"name": "garbage", "url": garbage.URL + "/metrics"},
			{"name": "stalled", "url": stalled.URL + "/metrics"},
			{"name": "failing", "url": failing.URL + "/metrics"},
		},
	}, map[string]string{"good.bearerToken": "s3cret"})

	c, err := Start(cfg, Options{Dir: t.TempDir()})
	require.NoError(t, err)
	defer func() { require.NoError(t, c.Close()) }()

	// Scrape for at least 24 good scrapes (≥ 4.6 s of data at 200 ms).
	require.Eventually(t, func() bool { return scrapes.Load() >= 24 }, 30*time.Second, 50*time.Millisecond)
	// Let every target be tried at least once.
	require.Eventually(t, func() bool {
		for _, st := range c.Status() {
			if st.LastScrape.IsZero() {
				return false
			}
		}
		return true
	}, 10*time.Second, 50*time.Millisecond)

	q := c.Querier()
	ctx := context.Background()
	now := time.Now()

	// Raw samples: every stored value is 7·k for consecutive k (one sample per scrape).
	v, err := q.Query(ctx, `vllm:prompt_tokens_total{job="good"}[1h]`, now)
	require.NoError(t, err)
	m := v.(model.Matrix)
	require.Len(t, m, 1)
	pts := m[0].Values
	require.GreaterOrEqual(t, len(pts), 20)
	for i := 1; i < len(pts); i++ {
		assert.Equal(t, model.SampleValue(promptIncrement), pts[i].Value-pts[i-1].Value, "sample %d", i)
	}
	// Scrapes are 200 ms apart on average (single gaps jitter on a busy machine).
	span := pts[len(pts)-1].Timestamp.Sub(pts[0].Timestamp)
	assert.InDelta(t, 200, float64(span.Milliseconds())/float64(len(pts)-1), 30)
	// Labels set by the collector.
	assert.Equal(t, model.LabelValue("good"), m[0].Metric["job"])
	assert.Equal(t, model.LabelValue(hostOf(t, good.URL)), m[0].Metric["instance"])
	assert.Equal(t, model.LabelValue("test"), m[0].Metric["cluster"])
	assert.Equal(t, model.LabelValue("Qwen/Qwen1.5-0.5B-Chat"), m[0].Metric["model_name"])

	// 7 tokens every 200 ms is 35 tokens/s. rate over 3 s (15 scrapes)
	// extrapolates to the window edges, so only the jitter of the scrape
	// timestamps (tens of ms on a busy machine, against a 3 s window)
	// separates it from 35; increase over 3 s is 15 scrapes × 7 = 105.
	last := pts[len(pts)-1].Timestamp.Time()
	v, err = q.Query(ctx, `rate(vllm:prompt_tokens_total{job="good"}[3s])`, last)
	require.NoError(t, err)
	require.Len(t, v.(model.Vector), 1)
	assert.InEpsilon(t, 35.0, float64(v.(model.Vector)[0].Value), 0.1)
	v, err = q.Query(ctx, `increase(vllm:prompt_tokens_total{job="good"}[3s])`, last)
	require.NoError(t, err)
	require.Len(t, v.(model.Vector), 1)
	assert.InEpsilon(t, 105.0, float64(v.(model.Vector)[0].Value), 0.1)

	// Dropped families never reach the TSDB; catalogue families do.
	names, err := q.MetricNames(ctx, `{job="good"}`, now.Add(-time.Hour), now)
	require.NoError(t, err)
	assert.Contains(t, names, "vllm:e2e_request_latency_seconds_bucket")
	assert.Contains(t, names, "vllm:num_requests_running")
	assert.Contains(t, names, "up")
	assert.Contains(t, names, "process_start_time_seconds", "kept for restart events")
	dropped := regexp.MustCompile(`_created$|^python_|^process_|^http_`)
	for _, n := range names {
		if n == "process_start_time_seconds" {
			continue
		}
		assert.False(t, dropped.MatchString(n), "stored %s", n)
	}

	// up: 1 for the good target, 0 for the others.
	v, err = q.Query(ctx, `up`, time.Now())
	require.NoError(t, err)
	ups := map[string]float64{}
	for _, s := range v.(model.Vector) {
		ups[string(s.Metric["job"])] = float64(s.Value)
	}
	assert.Equal(t, map[string]float64{"good": 1, "garbage": 0, "stalled": 0, "failing": 0}, ups)

	// Status, sorted by name.
	sts := c.Status()
	require.Len(t, sts, 4)
	byName := map[string]TargetStatus{}
	var order []string
	for _, st := range sts {
		byName[st.Name] = st
		order = append(order, st.Name)
		assert.Equal(t, KindTarget, st.Kind)
	}
	assert.Equal(t, []string{"failing", "garbage", "good", "stalled"}, order)
	g := byName["good"]
	assert.True(t, g.Up)
	assert.Empty(t, g.LastError)
	assert.Greater(t, g.LastDuration, time.Duration(0))
	assert.WithinDuration(t, time.Now(), g.LastScrape, 2*time.Second)
	// Stored series of the good target: the kept page series plus 5 scrape series.
	v, err = q.Query(ctx, `count({job="good"})`, time.Now())
	require.NoError(t, err)
	require.Len(t, v.(model.Vector), 1)
	assert.Equal(t, int(v.(model.Vector)[0].Value), g.Series)
	for _, name := range []string{"garbage", "stalled", "failing"} {
		st := byName[name]
		assert.False(t, st.Up, name)
		assert.NotEmpty(t, st.LastError, name)
		// up, scrape_duration_seconds, scrape_samples_scraped,
		// scrape_samples_post_metric_relabeling, scrape_series_added.
		assert.Equal(t, 5, st.Series, name)
	}
	assert.Contains(t, byName["stalled"].LastError, "context deadline exceeded")
	assert.Contains(t, byName["failing"].LastError, "503")

	// The failed scrapes are remembered with their errors, once each.
	errs := c.ScrapeErrors("failing", time.Now().Add(-time.Hour), time.Now())
	require.NotEmpty(t, errs)
	for k, e := range errs {
		assert.Contains(t, e.Error, "503")
		if k > 0 {
			assert.True(t, e.At.After(errs[k-1].At), "one entry per scrape")
		}
	}
	assert.Empty(t, c.ScrapeErrors("good", time.Now().Add(-time.Hour), time.Now()))
}

func TestCollectorAuthAndAgents(t *testing.T) {
	verifyNoLeaks(t)
	good, _ := counterServer(t, "tok")
	cfg := loadSettings(t, map[string]any{
		"scrapeInterval": "200ms",
		"targets":        []map[string]any{{"name": "noauth", "url": good.URL + "/metrics"}},
		"gpuAgents":      []map[string]any{{"name": "node-a", "url": good.URL + "/metrics"}},
	}, map[string]string{"node-a.bearerToken": "tok"})
	c, err := Start(cfg, Options{Dir: t.TempDir()})
	require.NoError(t, err)
	defer func() { require.NoError(t, c.Close()) }()
	require.Eventually(t, func() bool {
		for _, st := range c.Status() {
			if st.LastScrape.IsZero() {
				return false
			}
		}
		return true
	}, 10*time.Second, 20*time.Millisecond)
	sts := c.Status()
	require.Len(t, sts, 2)
	// "noauth" sorts before "node-a" ('a' < 'd').
	assert.Equal(t, "noauth", sts[0].Name)
	assert.Equal(t, KindTarget, sts[0].Kind)
	assert.False(t, sts[0].Up)
	assert.Contains(t, sts[0].LastError, "401")
	assert.Equal(t, "node-a", sts[1].Name)
	assert.Equal(t, KindAgent, sts[1].Kind)
	assert.True(t, sts[1].Up, sts[1].LastError)
}

func TestCollectorCloseLeavesNothing(t *testing.T) {
	verifyNoLeaks(t)
	good, scrapes := counterServer(t, "x")
	cfg := loadSettings(t, map[string]any{
		"scrapeInterval": "200ms",
		"targets":        []map[string]any{{"name": "a", "url": good.URL + "/metrics"}, {"name": "b", "url": good.URL + "/metrics"}},
	}, map[string]string{"a.bearerToken": "x", "b.bearerToken": "x"})
	dir := filepath.Join(t.TempDir(), "ds")
	for i := 0; i < 3; i++ {
		c, err := Start(cfg, Options{Dir: dir})
		require.NoError(t, err)
		if i == 0 {
			require.Eventually(t, func() bool { return scrapes.Load() >= 2 }, 10*time.Second, 10*time.Millisecond)
		}
		require.NoError(t, c.Close())
		require.NoError(t, c.Close()) // idempotent
		assert.Zero(t, c.tracker.open(), "scrape connections left open")
		// The history stays on disk and the lock is free for the next start.
		require.DirExists(t, filepath.Join(dir, "wal"))
		stores.Lock()
		assert.Empty(t, stores.m)
		stores.Unlock()
	}
}

func TestCollectorNoTargets(t *testing.T) {
	verifyNoLeaks(t)
	c, err := Start(loadSettings(t, map[string]any{}, nil), Options{Dir: t.TempDir()})
	require.NoError(t, err)
	assert.Empty(t, c.Status())
	names, err := c.Querier().MetricNames(context.Background(), "", time.Now().Add(-time.Hour), time.Now())
	require.NoError(t, err)
	assert.Empty(t, names)
	require.NoError(t, c.Close())
}

func TestStartRejectsUnloadedSettings(t *testing.T) {
	_, err := Start(settings.Settings{}, Options{Dir: t.TempDir()})
	require.ErrorContains(t, err, "must be positive")
}

func TestScrapeConfigs(t *testing.T) {
	cfg := loadSettings(t, map[string]any{
		"targets": []map[string]any{
			{"name": "a", "url": "https://10.0.0.5:8443/custom/metrics?x=1&y=2", "tlsSkipVerify": true, "basicAuthUser": "u", "labels": map[string]string{"dc": "eu"}},
			{"name": "b", "url": "http://host-b:8000"},
		},
		"gpuAgents":     []map[string]any{{"name": "n", "url": "http://10.0.0.9:9400/metrics", "kind": "dcgm"}},
		"bodySizeLimit": 1000,
		"sampleLimit":   77,
	}, map[string]string{"a.basicAuthPassword": "pw", "n.bearerToken": "t"})
	scfgs, groups, eps, err := scrapeConfigs(cfg)
	require.NoError(t, err)
	require.Len(t, scfgs, 3)
	a := scfgs[0]
	assert.Equal(t, "a", a.JobName)
	assert.Equal(t, "https", a.Scheme)
	assert.Equal(t, config.PrometheusText0_0_4, a.ScrapeProtocols[0])
	assert.Equal(t, "/custom/metrics", a.MetricsPath)
	assert.Empty(t, a.Params, "single-valued parameters are target labels")
	assert.Equal(t, uint(0), a.SampleLimit, "the sample limit is enforced while parsing, by meteredAppendable")
	assert.EqualValues(t, 1000, a.BodySizeLimit)
	assert.Equal(t, model.Duration(15*time.Second), a.ScrapeInterval)
	assert.Equal(t, model.Duration(10*time.Second), a.ScrapeTimeout)
	assert.True(t, a.HTTPClientConfig.TLSConfig.InsecureSkipVerify)
	require.NotNil(t, a.HTTPClientConfig.BasicAuth)
	assert.Equal(t, "u", a.HTTPClientConfig.BasicAuth.Username)
	assert.EqualValues(t, "pw", a.HTTPClientConfig.BasicAuth.Password)
	require.Len(t, a.MetricRelabelConfigs, 5) // mark http_requests_total, drop, mark unused buckets, keep, drop the marks
	assert.Equal(t, model.LabelSet{"__address__": "10.0.0.5:8443", "__scheme__": "https", "__metrics_path__": "/custom/metrics",
		"__param_x": "1", "__param_y": "2"}, groups["a"][0].Targets[0])
	assert.Equal(t, model.LabelSet{"job": "a", "dc": "eu"}, groups["a"][0].Labels)
	assert.Equal(t, "/metrics", scfgs[1].MetricsPath)
	assert.Equal(t, "http", scfgs[1].Scheme)
	assert.Nil(t, scfgs[1].HTTPClientConfig.BasicAuth)
	require.NotNil(t, scfgs[2].HTTPClientConfig.Authorization)
	assert.EqualValues(t, "t", scfgs[2].HTTPClientConfig.Authorization.Credentials)
	assert.Equal(t, []endpoint{{"a", KindTarget, "https://10.0.0.5:8443/custom/metrics?x=1&y=2"}, {"b", KindTarget, "http://host-b:8000"}, {"n", KindAgent, "http://10.0.0.9:9400/metrics"}}, eps)

	// The relabel rules store what catalog.Stores accepts: catalogue names,
	// process_start_time_seconds, and other engine families without buckets.
	cases := map[string]bool{
		"vllm:prompt_tokens_created":              false,
		"python_gc_objects_collected_total":       false,
		"process_cpu_seconds_total":               false,
		"http_requests_total":                     true,
		"http_request_size_bytes_sum":             false,
		"go_goroutines":                           false,
		"vllm:e2e_request_latency_seconds_bucket": true,
		"vllm:num_requests_running":               true,
		"DCGM_FI_DEV_GPU_UTIL":                    true,
		"process_start_time_seconds":              true,
		"vllm:request_prompt_tokens_sum":          true,
		"vllm:request_prompt_tokens_count":        true,
		"vllm:cache_config_info":                  true,
		"vllm:request_prompt_tokens_bucket":       true, // the diagnosis reads the prompt-length tail
		"vllm:request_generation_tokens_bucket":   false,
		"sglang:some_new_histogram_bucket":        false,
	}
	for n, want := range cases {
		lb := labels.NewBuilder(labels.FromStrings("__name__", n, "le", "1", "job", "a"))
		kept := relabel.ProcessBuilder(lb, a.MetricRelabelConfigs...)
		ls := lb.Labels()
		assert.Equal(t, want, kept, n)
		assert.Equal(t, want, catalog.Stores(n), "catalog.Stores(%s) agrees with the relabel rules", n)
		if kept {
			assert.Equal(t, labels.FromStrings("__name__", n, "le", "1", "job", "a"), ls, "%s: no temporary label left", n)
		}
	}
}

// Endpoints with identical scrape settings share one scrape pool (one scrape
// config), each keeping its own target group and job label; any difference in
// what the HTTP client or the metric relabelling is built from gives a pool of its own.
func TestScrapeConfigsSharePools(t *testing.T) {
	cfg := loadSettings(t, map[string]any{
		"targets": []map[string]any{
			{"name": "a", "url": "http://10.0.0.1:8000/metrics"},
			{"name": "b", "url": "http://10.0.0.2:8000/metrics", "labels": map[string]string{"dc": "eu"}},
			{"name": "c", "url": "http://10.0.0.3:8000/metrics"},                                                  // bearer token
			{"name": "d", "url": "http://10.0.0.4:8000/metrics", "metrics": map[string]string{"ttft": "my_ttft"}}, // own metric map
			{"name": "e", "url": "http://10.0.0.5:8000/other"},                                                    // other path: same pool
			{"name": "f", "url": "http://10.0.0.6:8000/metrics?x=1"},                                              // single-valued query: same pool
			{"name": "g", "url": "https://10.0.0.7:8000/metrics"},                                                 // other scheme: same pool
			{"name": "h", "url": "http://10.0.0.8:8000/metrics", "tlsSkipVerify": true},
			{"name": "i", "url": "http://10.0.0.9:8000/metrics"},
			{"name": "j", "url": "http://10.0.0.10:8000/metrics?x=1&x=2"}, // repeated parameter
		},
		"gpuAgents": []map[string]any{{"name": "n", "url": "http://10.0.1.1:9400/metrics", "kind": "dcgm"}},
	}, map[string]string{"c.bearerToken": "tok"})
	scfgs, groups, eps, err := scrapeConfigs(cfg)
	require.NoError(t, err)
	require.Len(t, eps, 11)
	var pools []string
	for _, sc := range scfgs {
		pools = append(pools, sc.JobName)
	}
	assert.Equal(t, []string{"a", "c", "d", "h", "j"}, pools)
	var inA []string
	for _, g := range groups["a"] {
		inA = append(inA, g.Source)
		assert.Equal(t, model.LabelValue(g.Source), g.Labels["job"], "the target's name is its job label")
	}
	assert.Equal(t, []string{"a", "b", "e", "f", "g", "i", "n"}, inA, "same settings, one pool (agents included)")
	assert.Equal(t, model.LabelSet{"__address__": "10.0.0.5:8000", "__scheme__": "http", "__metrics_path__": "/other"}, groups["a"][2].Targets[0])
	assert.Equal(t, model.LabelValue("1"), groups["a"][3].Targets[0]["__param_x"])
	assert.Equal(t, model.LabelValue("https"), groups["a"][4].Targets[0]["__scheme__"])
	assert.Empty(t, scfgs[0].Params)
	assert.Equal(t, url.Values{"x": {"1", "2"}}, scfgs[4].Params)
	assert.Equal(t, model.LabelSet{"job": "b", "dc": "eu"}, groups["a"][1].Labels)
	assert.Equal(t, model.LabelSet{"__address__": "10.0.0.2:8000", "__scheme__": "http", "__metrics_path__": "/metrics"}, groups["a"][1].Targets[0])
	assert.Len(t, scfgs[2].MetricRelabelConfigs, 6, "d's own map renames before the store's rules")
	assert.Len(t, scfgs[0].MetricRelabelConfigs, 5)
}
