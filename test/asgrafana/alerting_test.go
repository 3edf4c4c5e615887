package asgrafana

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/inferscope/inferscope-llm-datasource/pkg/probe"
	"github.com/inferscope/inferscope-llm-datasource/pkg/sim"
)

// serveSim starts a real-time simulator of a scenario, warmed up for 10
// simulated minutes so its queues, KV usage and GPU state are established,
// and returns its /metrics and GPU agent URLs.
func serveSim(t *testing.T, scenario string, seed uint64) (metrics, gpu string) {
	t.Helper()
	cfg := sim.DefaultConfig()
	require.NoError(t, sim.ApplyScenario(&cfg, scenario))
	cfg.Seed = seed
	const warmup = 10 * time.Minute
	s, err := sim.New(cfg, sim.Options{Start: time.Now().Add(-warmup)})
	require.NoError(t, err)
	s.AdvanceTo(warmup.Seconds())
	srv := sim.NewServer(s)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _ = srv.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	return serve(t, srv.Handler()), serve(t, srv.GPUHandler())
}

// serveProbe runs an inferscope-probe against the simulator whose /metrics URL
// is simMetrics (one request per second) and returns the probe's /metrics URL.
func serveProbe(t *testing.T, simMetrics string) string {
	t.Helper()
	base := strings.TrimSuffix(simMetrics, "/metrics")
	p, err := probe.NewProber(probe.Config{Endpoints: []probe.Endpoint{{Name: "sim", URL: base}}, Model: sim.DefaultConfig().Model.Name,
		API: "chat", Interval: time.Second, Timeout: 5 * time.Second, PromptTokens: 16, MaxTokens: 16, IgnoreEOS: true}, nil)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	p.Start(ctx)
	t.Cleanup(func() { cancel(); p.Wait() })
	return serve(t, p.Handler())
}

// serveStallingSim is a healthy simulator whose streams all hold token 3 back
// 0.6 s: a sustained token stall as the client sees it.
func serveStallingSim(t *testing.T) string {
	t.Helper()
	cfg := sim.DefaultConfig()
	cfg.Seed = 6
	cfg.APIFaults = sim.APIFaults{StallShare: 1, StallToken: 3, Stall: 600 * time.Millisecond}
	s, err := sim.New(cfg, sim.Options{})
	require.NoError(t, err)
	srv := sim.NewServer(s)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _ = srv.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })
	return serve(t, srv.Handler())
}

// slowPage is a vLLM V1 page whose TTFT histogram gains 10 requests per
// scrape, all between 40 and 80 s: above every default profile's TTFT
// threshold, so every profile's TTFT objective burns at 1 / 0.01 = 100.
type slowPage struct {
	mu sync.Mutex
	n  float64
}

func (p *slowPage) ServeHTTP(w http.ResponseWriter, _ *http.Request) {
	p.mu.Lock()
	p.n += 10
	n := p.n
	p.mu.Unlock()
	w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
	fmt.Fprintf(w, `# TYPE vllm:time_to_first_token_seconds histogram
vllm:time_to_first_token_seconds_bucket{engine="0",le="2.5",model_name="m"} 0
vllm:time_to_first_token_seconds_bucket{engine="0",le="5.0",model_name="m"} 0
vllm:time_to_first_token_seconds_bucket{engine="0",le="40.0",model_name="m"} 0
vllm:time_to_first_token_seconds_bucket{engine="0",le="80.0",model_name="m"} %g
vllm:time_to_first_token_seconds_bucket{engine="0",le="+Inf",model_name="m"} %g
vllm:time_to_first_token_seconds_sum{engine="0",model_name="m"} %g
vllm:time_to_first_token_seconds_count{engine="0",model_name="m"} %g
# TYPE vllm:num_requests_running gauge
vllm:num_requests_running{engine="0",model_name="m"} 2
`, n, n, 60*n, n)
}

// dropPage is a vLLM V1 page that carries TTFT and the KV gauge for its
// first 6 scrapes, then only the KV gauge: a family the target had leaves.
type dropPage struct {
	mu      sync.Mutex
	scrapes int
}

func (p *dropPage) ServeHTTP(w http.ResponseWriter, _ *http.Request) {
	p.mu.Lock()
	p.scrapes++
	k := p.scrapes
	p.mu.Unlock()
	w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
	if k <= 6 {
		fmt.Fprintf(w, `# TYPE vllm:time_to_first_token_seconds histogram
vllm:time_to_first_token_seconds_bucket{engine="0",le="0.5",model_name="m"} %d
vllm:time_to_first_token_seconds_bucket{engine="0",le="+Inf",model_name="m"} %d
vllm:time_to_first_token_seconds_sum{engine="0",model_name="m"} %d
vllm:time_to_first_token_seconds_count{engine="0",model_name="m"} %d
`, 5*k, 5*k, k, 5*k)
	}
	fmt.Fprint(w, "# TYPE vllm:kv_cache_usage_perc gauge\nvllm:kv_cache_usage_perc{engine=\"0\",model_name=\"m\"} 0.3\n")
}

// TestAlertRules runs every Grafana-managed rule under provisioning/alerting
// through the built plugin the way Grafana's alerting evaluates it (query
// JSON only, relative range, reduce and threshold), against targets made for
// them: simulators running the stalled, KV-pressure, queue-saturated,
// thermal-throttled and power-capped scenarios, a page whose TTFT misses every objective, a
// page that stops exporting a family, a target that answers 503, and a
// simulator running the healthy scenario. Each rule must fire on its
// target, and no rule on the healthy one (code completion's 500 ms TTFT is
// not a chat workload's objective, so that profile is not checked there).
// `for` durations are Grafana's: one evaluation checks the condition.
func TestAlertRules(t *testing.T) {
	rules := loadAlertRules(t)
	type tgt = map[string]any
	healthy, healthyGPU := serveSim(t, "healthy", 1)
	stalled, _ := serveSim(t, "stalled", 2)
	kv, _ := serveSim(t, "kv-pressure", 3)
	queue, _ := serveSim(t, "queue-saturated", 4)
	thermal, thermalGPU := serveSim(t, "thermal-throttled", 5)
	capped, cappedGPU := serveSim(t, "power-capped", 6)
	down := serve(t, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		http.Error(w, "overloaded", http.StatusServiceUnavailable)
	}))
	drop := &dropPage{}
	stalling := serveStallingSim(t)
	jd, err := json.Marshal(map[string]any{
		"scrapeInterval": "1s", "scrapeTimeout": "800ms",
		"targets": []tgt{
			{"name": "healthy", "url": healthy, "agent": "healthy-gpu"},
			{"name": "stalled", "url": stalled},
			{"name": "kv", "url": kv},
			{"name": "queue", "url": queue},
			{"name": "thermal", "url": thermal, "agent": "thermal-gpu"},
			{"name": "capped", "url": capped, "agent": "capped-gpu"},
			{"name": "slow", "url": serve(t, &slowPage{})},
			{"name": "dropper", "url": serve(t, drop)},
			{"name": "down", "url": down},
			{"name": "stalling", "url": stalling},
			{"name": "gateway", "url": serve(t, &surgePage{})},
		},
		"probes": []tgt{
			{"name": "probe-healthy", "url": serveProbe(t, healthy), "target": "healthy"},
			{"name": "probe-stalling", "url": serveProbe(t, stalling), "target": "stalling"},
		},
		"gpuAgents": []tgt{
			{"name": "healthy-gpu", "url": healthyGPU, "kind": "inferscope"},
			{"name": "thermal-gpu", "url": thermalGPU, "kind": "inferscope"},
			{"name": "capped-gpu", "url": cappedGPU, "kind": "inferscope"},
		},
	})
	require.NoError(t, err)
	// The rules name the provisioned data source's uid.
	ds := dataSource{id: 7, uid: "inferscope", jsonData: jd, updatedMS: time.Now().UnixMilli()}
	host := startPlugin(t)
	host.query(t, ds, time.Now().Add(-time.Minute), time.Now(), map[string]map[string]any{"A": {"queryType": "targets"}})
	waitFor(t, 60*time.Second, func() bool { drop.mu.Lock(); defer drop.mu.Unlock(); return drop.scrapes >= 20 }, "20 scrapes")

	want := map[string]map[string]string{ // rule uid → labels of the series that must fire
		// Every request of slow is over every TTFT threshold: out of its objective now.
		"inferscope-slo-sustained":                {"target": "slow", "objective": "ttft-p99", "profile": "interactive-chat"},
		"inferscope-stalled":                      {"target": "stalled", "class": "stalled"},
		"inferscope-kv-cache-pressure":            {"target": "kv", "class": "kv_cache_pressure"},
		"inferscope-queue-saturation":             {"target": "queue", "class": "queue_saturation"},
		"inferscope-gpu-throttled":                {"target": "thermal", "gpu": "0", "class": "gpu_throttled"}, // per GPU: the target names its agent
		"inferscope-power-capped":                 {"target": "capped", "class": "power_capped"},
		"inferscope-target-down":                  {"target": "down"},
		"inferscope-telemetry-missing":            {"target": "dropper", "signal": "ttft"},
		"inferscope-probe-sustained-token-stalls": {"target": "stalling", "probe": "probe-stalling"},
		// The gateway's model m fails 15 % of its requests in every class (surgePage).
		"inferscope-error-surge-api-timeout":    {"model": "m", "error_class": "api_timeout"},
		"inferscope-error-surge-rate-limit":     {"model": "m", "error_class": "rate_limit"},
		"inferscope-error-surge-content-filter": {"model": "m", "error_class": "content_filter"},
		"inferscope-error-surge-model-error":    {"model": "m", "error_class": "model_error"},
		"inferscope-error-surge-client-error":   {"model": "m", "error_class": "client_error"},
	}
	// The burn-rate rules must stay silent here: the store holds seconds, and a row counts only
	// once the store covers its long window (1 h at least), so a new store never pages on a burn
	// read over a few seconds (issue 19). The sustained rule is what fires for slow.
	// No live scenario of a few minutes holds a change with 30 minutes of history on each side:
	// the regression rule is evaluated for errors and must not fire on these fresh targets; its
	// verdicts are tested on simulator histories in pkg/plugin (TestRegression…). A 7-day
	// baseline cannot be built by seconds-old simulators either: the cost-spike rule fires in
	// pkg/plugin TestCostSpikeRuleOnAStoredWeek on a stored week; here it must evaluate without
	// error and stay silent.
	quiet := map[string]bool{"inferscope-slo-page": true, "inferscope-slo-ticket": true, "inferscope-regression-after-change": true, "inferscope-cost-spike": true}
	require.Len(t, rules, len(want)+len(quiet), "every rule has a scenario in this test")
	for _, rule := range rules {
		t.Run(rule.UID, func(t *testing.T) {
			w, ok := want[rule.UID]
			require.True(t, ok || quiet[rule.UID], "rule %s has no scenario in this test", rule.UID)
			require.NotEmpty(t, rule.For, "for")
			require.Contains(t, []string{"OK", "NoData", "Alerting", "KeepLast"}, rule.NoDataState)
			require.Contains(t, []string{"OK", "Error", "Alerting", "KeepLast"}, rule.ExecErrState)
			for _, k := range []string{"summary", "description", "runbook_url", "__dashboardUid__", "__panelId__"} {
				require.NotEmpty(t, rule.Annotations[k], "annotation %s", k)
			}
			require.NotEmpty(t, rule.Labels["severity"])
			evalAt := time.Now().Add(-1500 * time.Millisecond)
			res := evalRule(t, host, ds, rule, evalAt)
			require.Empty(t, res.err)
			require.True(t, strings.HasPrefix(rule.Annotations["runbook_url"], "https://"), "runbook_url is a link")
			if quiet[rule.UID] {
				assert.False(t, res.firingFor(map[string]string{}), "%s fires on seconds of history: %s", rule.UID, ruleSummary(res))
				return
			}
			assert.True(t, res.firingFor(w), "%s should fire for %v: %s", rule.UID, w, ruleSummary(res))
			for _, k := range []string{"target", "job"} {
				for _, name := range []string{"healthy", "healthy-gpu"} {
					for _, l := range res.firing {
						if l[k] != name {
							continue
						}
						// The availability objective counts a failed scrape as down time, which is
						// right: what the store holds decides, not the scenario's name. On a loaded
						// machine the healthy target's scrapes can fail (the simulator answers late,
						// or the plugin could not keep up), so a firing availability row on it is
						// accepted exactly when the store holds an up = 0 sample of it in the last
						// 10 minutes (issue 32: exactness asserted on what the store holds).
						if l["objective"] == "availability" {
							if n := failedScrapes(t, host, ds, name, evalAt); n > 0 {
								t.Logf("%s: availability fires on %s, whose store holds %d failed scrapes (machine under load)", rule.UID, name, n)
								continue
							}
						}
						t.Errorf("%s fires on the healthy scenario (%s=%s): %s", rule.UID, k, name, ruleSummary(res))
					}
				}
			}
		})
	}
}

// failedScrapes counts the stored up = 0 samples of target over the 10 minutes before at,
// read through the raw query type at a 1 s step (the scenario's scrape interval), or 0 for a
// name that is not a configured scrape target (an agent's name on an objective row).
func failedScrapes(t *testing.T, host *pluginHost, ds dataSource, target string, at time.Time) int {
	t.Helper()
	res := host.query(t, ds, at.Add(-10*time.Minute), at, map[string]map[string]any{
		"A": {"queryType": "raw", "metric": "up", "targets": []string{target}}})["A"]
	if res.err != "" {
		return 0
	}
	n := 0
	for _, s := range seriesOf(t, res.frames) {
		for _, v := range s.values {
			if v == 0 {
				n++
			}
		}
	}
	return n
}
