package collect

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
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

	// Scrape until the store holds at least 24 good scrapes (≥ 4.6 s of data at 200 ms;
	// counted in the store, since a loaded machine may give up on a served page).
	require.Eventually(t, func() bool {
		v, err := c.Querier().Query(context.Background(), `count_over_time(vllm:prompt_tokens_total{job="good"}[1h])`, time.Now())
		if err != nil || len(v.(model.Vector)) != 1 {
			return false
		}
		return v.(model.Vector)[0].Value >= 24 && scrapes.Load() >= 24
	}, 3*time.Minute, 50*time.Millisecond)
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

	// Raw samples: every stored value is 7·k (k the page requests the server answered), rising.
	// A scrape that timed out on a loaded machine was still answered, so consecutive stored
	// values differ by a multiple of 7 rather than by exactly 7: what the store holds is checked,
	// not how fast the machine was.
	v, err := q.Query(ctx, `vllm:prompt_tokens_total{job="good"}[1h]`, now)
	require.NoError(t, err)
	m := v.(model.Matrix)
	require.Len(t, m, 1)
	pts := m[0].Values
	require.GreaterOrEqual(t, len(pts), 20)
	for i := range pts {
		assert.Zero(t, math.Mod(float64(pts[i].Value), promptIncrement), "sample %d = %v", i, pts[i].Value)
		if i > 0 {
			assert.Greater(t, float64(pts[i].Value), float64(pts[i-1].Value), "sample %d", i)
		}
	}
	// Scrapes are never closer than the 200 ms interval on average (a loaded machine only
	// spreads them out).
	span := pts[len(pts)-1].Timestamp.Sub(pts[0].Timestamp)
	assert.GreaterOrEqual(t, float64(span.Milliseconds())/float64(len(pts)-1), 170.0)
	// Labels set by the collector.
	assert.Equal(t, model.LabelValue("good"), m[0].Metric["job"])
	assert.Equal(t, model.LabelValue(hostOf(t, good.URL)), m[0].Metric["instance"])
	assert.Equal(t, model.LabelValue("test"), m[0].Metric["cluster"])
	assert.Equal(t, model.LabelValue("Qwen/Qwen1.5-0.5B-Chat"), m[0].Metric["model_name"])

	// rate over 3 s at the last sample, against the stored samples inside (last−3 s, last]:
	// with slope = Δvalue/Δt between the first and last of them, Prometheus's extrapolation
	// (extend to the window's start when the gap there is under 1.1 average intervals, else by
	// half an interval; nothing past the last sample) gives slope × extended/3 s with
	// extended between the sampled interval and 3 s: so slope·sampled/3 s ≤ rate ≤ slope, and
	// increase = rate × 3 s. At most 7 tokens per 200 ms scrape: slope ≤ 35 tokens/s.
	last := pts[len(pts)-1].Timestamp.Time()
	var inWin []model.SamplePair
	for _, p := range pts {
		if p.Timestamp.Time().After(last.Add(-3 * time.Second)) {
			inWin = append(inWin, p)
		}
	}
	require.GreaterOrEqual(t, len(inWin), 2)
	sampled := inWin[len(inWin)-1].Timestamp.Sub(inWin[0].Timestamp).Seconds()
	slope := float64(inWin[len(inWin)-1].Value-inWin[0].Value) / sampled
	assert.LessOrEqual(t, slope, 35.0*1.1)
	v, err = q.Query(ctx, `rate(vllm:prompt_tokens_total{job="good"}[3s])`, last)
	require.NoError(t, err)
	require.Len(t, v.(model.Vector), 1)
	rate := float64(v.(model.Vector)[0].Value)
	assert.LessOrEqual(t, rate, slope*(1+1e-9))
	assert.GreaterOrEqual(t, rate, slope*sampled/3*(1-1e-9))
	v, err = q.Query(ctx, `increase(vllm:prompt_tokens_total{job="good"}[3s])`, last)
	require.NoError(t, err)
	require.Len(t, v.(model.Vector), 1)
	assert.InEpsilon(t, rate*3, float64(v.(model.Vector)[0].Value), 1e-9)

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

	// up: 1 for the good target at some scrape, 0 for the others at every scrape.
	v, err = q.Query(ctx, `max_over_time(up[1h])`, time.Now())
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
	// The good target's last scrape succeeded, or (on a loaded machine) ran past the 150 ms
	// scrape timeout: nothing else.
	if g.Up {
		assert.Empty(t, g.LastError)
		// Stored series of the good target: the kept page series plus 5 scrape series.
		v, err = q.Query(ctx, `count(last_over_time({job="good"}[1h]))`, time.Now())
		require.NoError(t, err)
		require.Len(t, v.(model.Vector), 1)
		assert.Equal(t, int(v.(model.Vector)[0].Value), g.Series)
	} else {
		assert.True(t, ranPastTimeout(g.LastError), g.LastError)
	}
	assert.Greater(t, g.LastDuration, time.Duration(0))
	assert.WithinDuration(t, time.Now(), g.LastScrape, 30*time.Second)
	for _, name := range []string{"garbage", "stalled", "failing"} {
		st := byName[name]
		assert.False(t, st.Up, name)
		assert.NotEmpty(t, st.LastError, name)
		// up, scrape_duration_seconds, scrape_samples_scraped,
		// scrape_samples_post_metric_relabeling, scrape_series_added.
		assert.Equal(t, 5, st.Series, name)
	}
	assert.Contains(t, byName["stalled"].LastError, "context deadline exceeded")
	// The failing target answers 503; on a loaded machine one of its scrapes may run past the
	// timeout instead, but never all of them.
	assert.True(t, strings.Contains(byName["failing"].LastError, "503") || ranPastTimeout(byName["failing"].LastError), byName["failing"].LastError)

	// The failed scrapes are remembered with their errors, once each.
	errs := c.ScrapeErrors("failing", time.Now().Add(-time.Hour), time.Now())
	require.NotEmpty(t, errs)
	answered503 := 0
	for k, e := range errs {
		if strings.Contains(e.Error, "503") {
			answered503++
		} else {
			assert.True(t, ranPastTimeout(e.Error), e.Error)
		}
		if k > 0 {
			assert.True(t, e.At.After(errs[k-1].At), "one entry per scrape")
		}
	}
	assert.Positive(t, answered503, "no scrape of the failing target got its 503")
	for _, e := range c.ScrapeErrors("good", time.Now().Add(-time.Hour), time.Now()) {
		assert.True(t, ranPastTimeout(e.Error), "the good target fails only by running past the timeout: %s", e.Error)
	}
}

// ranPastTimeout reports whether a scrape error is the scrape timeout: the target's answer
// not arriving in time ("context deadline exceeded") or the plugin not keeping up with parsing
// and storing the page it had ("scrape timeout exceeded").
func ranPastTimeout(msg string) bool {
	return strings.Contains(msg, "deadline exceeded") || strings.Contains(msg, "scrape timeout exceeded")
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
		"vllm:request_generation_tokens_bucket":   true, // the tokens query's generation-length heatmap (issue 33)
		"vllm:request_params_max_tokens_bucket":   false,
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

// open returns the number of connections not yet closed.
func (t *connTracker) open() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.conns)
}
