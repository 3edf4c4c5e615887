package asgrafana

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/genproto/pluginv2"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The load and scale runs are long; scripts/load.sh runs them with
// INFERSCOPE_LOAD=1 (they are skipped otherwise). LOAD_DURATION (default
// 60s), LOAD_CONCURRENCY (200) and SCALE_TARGETS (1000) tune them;
// SCALE_PLUGIN_ENV (space-separated NAME=value, e.g. INFERSCOPE_MEMORY_LIMIT=400MiB)
// is added to the scale run's plugin environment, and SCALE_HEAP_PROFILE names a
// file where the scale run saves the plugin's heap profile in the steady state
// (and, beside it with .goroutines.txt appended, its goroutines by stack).

func envOr(key, def string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	return def
}

// pluginGauge reads one unlabelled sample of the plugin's metrics page (the
// Go and process collectors of the SDK's registry).
func pluginGauge(t *testing.T, h *pluginHost, ds dataSource, name string) float64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), rpcTimeout)
	defer cancel()
	mr, err := h.diag.CollectMetrics(ctx, &pluginv2.CollectMetricsRequest{PluginContext: ds.pluginContext()})
	require.NoError(t, err)
	for _, line := range strings.Split(string(mr.Metrics.Prometheus), "\n") {
		if strings.HasPrefix(line, name+" ") {
			v, err := strconv.ParseFloat(strings.TrimPrefix(line, name+" "), 64)
			require.NoError(t, err)
			return v
		}
	}
	t.Fatalf("%s not on the plugin's metrics page", name)
	return 0
}

// cpuSeconds is the user+system CPU time of process pid (from /proc).
// pluginCounter is the value of the plugin's own series name whose labels contain match.
func pluginCounter(t *testing.T, h *pluginHost, ds dataSource, name, match string) float64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	mr, err := h.diag.CollectMetrics(ctx, &pluginv2.CollectMetricsRequest{PluginContext: ds.pluginContext()})
	require.NoError(t, err)
	for _, line := range strings.Split(string(mr.Metrics.Prometheus), "\n") {
		if strings.HasPrefix(line, name+"{") && strings.Contains(line, match) {
			v, err := strconv.ParseFloat(line[strings.LastIndexByte(line, ' ')+1:], 64)
			require.NoError(t, err)
			return v
		}
	}
	return 0
}

func cpuSeconds(t *testing.T, pid int) float64 {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	require.NoError(t, err)
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+2:]))
	ut, _ := strconv.ParseFloat(f[11], 64)
	st, _ := strconv.ParseFloat(f[12], 64)
	return (ut + st) / 100 // USER_HZ
}

func rssMiB(t *testing.T, pid int) int {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	require.NoError(t, err)
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(line, "VmRSS:") {
			kb, _ := strconv.Atoi(strings.Fields(line)[1])
			return kb >> 10
		}
	}
	return 0
}

// loadQueries is the mix every load worker cycles through: every query type.
var loadQueries = []map[string]any{
	{"queryType": "latency", "stages": []string{"ttft", "e2e"}, "stats": []string{"mean", "p50", "p99"}},
	{"queryType": "latency", "groupBy": "target", "stages": []string{"itl"}, "stats": []string{"p90"}, "estimator": "refined"},
	{"queryType": "breakdown"},
	{"queryType": "breakdown", "format": "table"},
	{"queryType": "throughput", "groupBy": "target"},
	{"queryType": "saturation"},
	{"queryType": "targets"},
	{"queryType": "raw", "metric": "vllm:num_requests_running"},
	{"queryType": "gpu"},
	{"queryType": "diagnosis"},
	{"queryType": "events"},
	{"queryType": "slo", "profile": "interactive-chat"},
	{"queryType": "burn_rate", "profile": "interactive-chat"},
	{"queryType": "goodput", "profile": "interactive-chat"},
	{"queryType": "buckets", "stage": "ttft"},
	{"queryType": "regression"}, // benchmark needs a baselines directory: pkg/plugin tests it
}

// TestLoad: LOAD_CONCURRENCY concurrent QueryData calls, a mix of every
// query type over the last 5 minutes, for LOAD_DURATION against 10 targets
// of the built plugin. No errors; p50/p99 reported; the plugin's goroutines
// and heap after the load are compared with before.
func TestLoad(t *testing.T) {
	if os.Getenv("INFERSCOPE_LOAD") == "" {
		t.Skip("long run: scripts/load.sh")
	}
	dur, err := time.ParseDuration(envOr("LOAD_DURATION", "60s"))
	require.NoError(t, err)
	conc, err := strconv.Atoi(envOr("LOAD_CONCURRENCY", "200"))
	require.NoError(t, err)

	var targets []map[string]any
	for k := 0; k < 10; k++ {
		targets = append(targets, map[string]any{"name": fmt.Sprintf("vllm-%02d", k), "url": serve(t, newLinearPage(t, newVLLMModel()))})
	}
	jd, err := json.Marshal(map[string]any{"scrapeInterval": "5s", "scrapeTimeout": "4s", "targets": targets})
	require.NoError(t, err)
	ds := dataSource{id: 11, uid: "load", jsonData: jd, updatedMS: time.Now().UnixMilli()}
	h := startPlugin(t)
	pid := h.client.ReattachConfig().Pid
	// Warm up: 30 s of history, one query of each type.
	start := time.Now()
	time.Sleep(30 * time.Second)
	for _, q := range loadQueries {
		h.query(t, ds, start, time.Now(), map[string]map[string]any{"A": q})
	}
	gBefore := pluginGauge(t, h, ds, "go_goroutines")
	heapBefore := pluginGauge(t, h, ds, "go_memstats_heap_inuse_bytes")
	var (
		mu   sync.Mutex
		lat  []time.Duration
		errs atomic.Int64
		msgs sync.Map
	)
	// Two rounds of half the duration each: goroutines and heap after the
	// second must not exceed those after the first (bounded, not growing).
	round := func(d time.Duration) {
		stop := time.Now().Add(d)
		var wg sync.WaitGroup
		for w := 0; w < conc; w++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for k := w; time.Now().Before(stop); k++ {
					q := loadQueries[k%len(loadQueries)]
					m := map[string]any{"refId": "A"}
					for key, v := range q {
						m[key] = v
					}
					b, _ := json.Marshal(m)
					now := time.Now()
					req := &pluginv2.QueryDataRequest{PluginContext: ds.pluginContext(), Headers: map[string]string{}, Queries: []*pluginv2.DataQuery{{
						RefId: "A", QueryType: q["queryType"].(string), MaxDataPoints: 300, IntervalMS: 1000, Json: b,
						TimeRange: &pluginv2.TimeRange{FromEpochMS: now.Add(-5 * time.Minute).UnixMilli(), ToEpochMS: now.UnixMilli()},
					}}}
					ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
					t0 := time.Now()
					resp, err := h.data.QueryData(ctx, req)
					d := time.Since(t0)
					cancel()
					switch {
					case err != nil:
						errs.Add(1)
						msgs.Store(err.Error(), true)
					case resp.Responses["A"].Error != "":
						errs.Add(1)
						msgs.Store(resp.Responses["A"].Error, true)
					}
					mu.Lock()
					lat = append(lat, d)
					mu.Unlock()
				}
			}()
		}
		wg.Wait()
		time.Sleep(5 * time.Second) // let in-flight work and timers settle
	}
	round(dur / 2)
	gMid := pluginGauge(t, h, ds, "go_goroutines")
	heapMid := pluginGauge(t, h, ds, "go_memstats_heap_inuse_bytes")
	round(dur / 2)
	gAfter := pluginGauge(t, h, ds, "go_goroutines")
	heapAfter := pluginGauge(t, h, ds, "go_memstats_heap_inuse_bytes")

	slices.Sort(lat)
	pct := func(p float64) time.Duration { return lat[int(p*float64(len(lat)-1))] }
	t.Logf("load: %d concurrent QueryData for %s against 10 targets: %d queries (%.0f/s), %d errors, p50 %s, p99 %s, max %s; goroutines %v before, %v after round 1, %v after round 2; heap in use %.0f, %.0f, %.0f MiB; RSS %d MiB",
		conc, dur, len(lat), float64(len(lat))/dur.Seconds(), errs.Load(), pct(0.5).Round(time.Millisecond), pct(0.99).Round(time.Millisecond), lat[len(lat)-1].Round(time.Millisecond),
		gBefore, gMid, gAfter, heapBefore/(1<<20), heapMid/(1<<20), heapAfter/(1<<20), rssMiB(t, pid))
	msgs.Range(func(k, _ any) bool { t.Logf("error: %v", k); return true })
	assert.Zero(t, errs.Load(), "queries failed under load")
	assert.LessOrEqual(t, gAfter, gMid+5, "goroutines grew from one round to the next")
	// Heap in use includes garbage (no GC can be forced from here), so it
	// swings between rounds; only a gross bound is asserted.
	assert.Less(t, heapAfter, float64(1<<30), "heap in use after the load")
}

// TestScale: SCALE_TARGETS targets (one listener, a path per target, each a
// real vLLM page) in one instance: start time, scrape CPU per second,
// memory, and the latency query's time over all of them.
func TestScale(t *testing.T) {
	if os.Getenv("INFERSCOPE_LOAD") == "" {
		t.Skip("long run: scripts/load.sh")
	}
	n, err := strconv.Atoi(envOr("SCALE_TARGETS", "1000"))
	require.NoError(t, err)
	interval, err := time.ParseDuration(envOr("SCALE_INTERVAL", "15s"))
	require.NoError(t, err)
	page := newLinearPage(t, newVLLMModel())
	base := strings.TrimSuffix(serve(t, http.StripPrefix("/t", page)), "/metrics")
	jsonData := map[string]any{"scrapeInterval": interval.String(), "scrapeTimeout": min(interval, 10*time.Second).String()}
	// SCALE_STORE_ALL=1: storeAllSeries, every series of the page stored (raw history).
	storeAll := os.Getenv("SCALE_STORE_ALL") == "1"
	if storeAll {
		jsonData["storeAllSeries"] = true
	}
	// SCALE_DISCOVERY=file: the targets are one embedded target group's, found by file_sd (one
	// entry per target: its path and a pod label, as a discovered fleet of pods); otherwise
	// they are configured targets.
	discovered := os.Getenv("SCALE_DISCOVERY") == "file"
	if discovered {
		u, err := url.Parse(base)
		require.NoError(t, err)
		var sd []map[string]any
		for k := 0; k < n; k++ {
			pod := fmt.Sprintf("vllm-%04d", k)
			sd = append(sd, map[string]any{"targets": []string{u.Host}, "labels": map[string]string{"__metrics_path__": fmt.Sprintf("/t/%d/metrics", k), "pod": pod, "instance": pod}})
		}
		b, err := json.Marshal(sd)
		require.NoError(t, err)
		file := filepath.Join(t.TempDir(), "fleet.json")
		require.NoError(t, os.WriteFile(file, b, 0o600))
		jsonData["targetGroups"] = []map[string]any{{"name": "fleet", "engine": "vllm", "maxTargets": min(n, 1000), "discovery": map[string]any{"file": map[string]any{"files": []string{file}}}}}
	} else {
		var targets []map[string]any
		for k := 0; k < n; k++ {
			targets = append(targets, map[string]any{"name": fmt.Sprintf("vllm-%04d", k), "url": fmt.Sprintf("%s/t/%d/metrics", base, k)})
		}
		jsonData["targets"] = targets
	}
	jd, err := json.Marshal(jsonData)
	require.NoError(t, err)
	ds := dataSource{id: 12, uid: "scale", jsonData: jd, updatedMS: time.Now().UnixMilli()}
	env := strings.Fields(os.Getenv("SCALE_PLUGIN_ENV"))
	profile := os.Getenv("SCALE_HEAP_PROFILE")
	pprofPort := 0
	if profile != "" {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		pprofPort = l.Addr().(*net.TCPAddr).Port
		require.NoError(t, l.Close())
		env = append(env, "GF_PLUGIN_PROFILING_ENABLED=true", fmt.Sprintf("GF_PLUGIN_PROFILING_PORT=%d", pprofPort))
	}
	h := startPluginEnv(t, t.TempDir(), env...)
	pid := h.client.ReattachConfig().Pid

	t0 := time.Now()
	h.query(t, ds, t0.Add(-time.Minute), t0, map[string]map[string]any{"A": {"queryType": "targets"}})
	created := time.Since(t0)
	// Until every target has been scraped once (a discovered group: until its targets were
	// scraped twice as often as there are targets; each is scraped once an interval).
	require.Eventually(t, func() bool {
		if discovered {
			// The plugin's own scrape counter of the group (one series for all its targets):
			// the targets query over a group of 1,000 grows slower with every scraped target
			// (10 s, then 30 s, then past its deadline at load average 36), so it is not polled.
			scrapes := pluginCounter(t, h, ds, "inferscope_scrapes_total", `target="fleet"`)
			t.Logf("scale: %s after the start: %.0f scrapes", time.Since(t0).Round(time.Second), scrapes)
			return scrapes >= float64(2*n)
		}
		r := h.query(t, ds, time.Now().Add(-time.Minute), time.Now(), map[string]map[string]any{"A": {"queryType": "targets"}})["A"]
		if len(r.frames) != 1 || r.frames[0].Rows() != n {
			return false
		}
		for i := 0; i < n; i++ {
			if cellString(t, r.frames[0], "up", i) != "true" {
				return false
			}
		}
		return true
	}, 20*interval, time.Second)
	allUp := time.Since(t0)
	// SCALE_SETTLE (e.g. 35m) waits before measuring: an open head chunk fills for 60
	// scrapes (15 min at 15 s; the first after a start may run on to the next 2 h block
	// boundary, up to about 28 min) before it is cut and written out, so a minute after the start
	// the head holds less than it will later.
	if d := os.Getenv("SCALE_SETTLE"); d != "" {
		settle, err := time.ParseDuration(d)
		require.NoError(t, err)
		time.Sleep(4 * interval)
		t.Logf("scale: before settling (%s after the start): RSS %d MiB, heap in use %.0f MiB, runtime total %.0f MiB",
			time.Since(t0).Round(time.Second), rssMiB(t, pid), pluginGauge(t, h, ds, "go_memstats_heap_inuse_bytes")/(1<<20), pluginGauge(t, h, ds, "go_memstats_sys_bytes")/(1<<20))
		time.Sleep(settle)
	}
	// Steady state: CPU over four scrape intervals.
	cpu0 := cpuSeconds(t, pid)
	time.Sleep(4 * interval)
	cpu := (cpuSeconds(t, pid) - cpu0) / (4 * interval).Seconds()
	rss := rssMiB(t, pid)
	heap := pluginGauge(t, h, ds, "go_memstats_heap_inuse_bytes") / (1 << 20)
	stacks := pluginGauge(t, h, ds, "go_memstats_stack_inuse_bytes") / (1 << 20)
	goroutines := pluginGauge(t, h, ds, "go_goroutines")
	sys := pluginGauge(t, h, ds, "go_memstats_sys_bytes") / (1 << 20)
	if profile != "" {
		resp, err := http.Get(fmt.Sprintf("http://127.0.0.1:%d/debug/pprof/heap", pprofPort))
		require.NoError(t, err)
		b, err := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(profile, b, 0o644))
		// The goroutines beside it (text, counts by stack): what the stacks are spent on.
		resp, err = http.Get(fmt.Sprintf("http://127.0.0.1:%d/debug/pprof/goroutine?debug=1", pprofPort))
		require.NoError(t, err)
		b, err = io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(profile+".goroutines.txt", b, 0o644))
	}
	q0 := time.Now()
	r := h.query(t, ds, time.Now().Add(-4*interval), time.Now(), map[string]map[string]any{"A": {"queryType": "latency", "stages": []string{"ttft"}, "stats": []string{"p50", "p99"}}})["A"]
	qt := time.Since(q0)
	assert.Empty(t, r.err)
	kind := "configured"
	if discovered {
		kind = "discovered"
	}
	t.Logf("scale: %d %s targets at %s: instance created in %s, all scraped after %s, scrape CPU %.2f cores, RSS %d MiB (heap in use %.0f MiB, stacks %.0f MiB for %.0f goroutines, runtime total %.0f MiB), latency query (TTFT p50+p99, all targets, %s) %s; storeAllSeries %v; plugin env %q",
		n, kind, interval, created.Round(time.Millisecond), allUp.Round(time.Millisecond), cpu, rss, heap, stacks, goroutines, sys, 4*interval, qt.Round(time.Millisecond), storeAll, env)
	if discovered {
		q0 = time.Now()
		r = h.query(t, ds, time.Now().Add(-time.Minute), time.Now(), map[string]map[string]any{"A": {"queryType": "targets"}})["A"]
		t.Logf("scale: targets query over the group of %d: %s (error %q)", n, time.Since(q0).Round(time.Millisecond), r.err)
	}
}
