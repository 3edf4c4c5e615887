package asgrafana

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"sort"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/data"
	"github.com/grafana/grafana-plugin-sdk-go/genproto/pluginv2"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// rel is the tolerance for values that are exact up to float rounding:
// rates of linear counters sampled on a regular grid, ratios of such rates,
// and histogram_quantile over them.
const rel = 1e-9

const (
	modelV1 = "Qwen/Qwen1.5-0.5B-Chat"
	modelV0 = "Qwen/Qwen3-0.6B"
	token   = "s3cret-token"
)

var allStages = []string{"ttft", "e2e", "itl", "tpot", "queue_time", "prefill_time", "decode_time", "inference_time"}

// fixture is the running scene: replay targets, the plugin process and the
// data source configured against them.
type fixture struct {
	model   vllmModel
	v1      *linearPage
	v0      *jumpPage
	host    *pluginHost
	ds      dataSource
	start   time.Time
	sawAuth atomic.Bool
}

func TestAsGrafana(t *testing.T) {
	if _, err := os.Stat(pageV1); err != nil {
		t.Skipf("testdata page missing: %v", err)
	}
	f := &fixture{model: newVLLMModel()}
	f.v1 = newLinearPage(t, f.model)
	f.v0 = newJumpPage(t, pageV0, 3)
	idle, err := os.ReadFile(pageV1)
	require.NoError(t, err)

	v1URL := serve(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") == "Bearer "+token {
			f.sawAuth.Store(true)
		}
		f.v1.ServeHTTP(w, r)
	}))
	settings := map[string]any{
		"scrapeInterval": "1s",
		"scrapeTimeout":  "500ms",
		"targets": []map[string]any{
			{"name": "vllm-v1", "url": v1URL},
			{"name": "vllm-v0", "url": serve(t, f.v0)},
			{"name": "vllm-idle", "url": serve(t, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
				w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
				_, _ = w.Write(idle)
			}))},
			{"name": "garbage", "url": serve(t, garbageHandler())},
			{"name": "stall", "url": serve(t, stallHandler(3*time.Second))},
		},
		"gpuAgents": []map[string]any{
			{"name": "gpu-node", "url": serve(t, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
				w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
				_, _ = w.Write(gpuPage())
			}))},
		},
	}
	jd, err := json.Marshal(settings)
	require.NoError(t, err)
	f.ds = dataSource{id: 1, uid: "inferscope-test", jsonData: jd, secure: map[string]string{"vllm-v1.bearerToken": token}, updatedMS: time.Now().UnixMilli()}

	f.host = startPlugin(t)
	f.start = time.Now()
	f.waitReady(t)

	t.Run("targets", f.testTargets)
	t.Run("latency/none/prometheus", f.testLatencyNone)
	t.Run("latency/none/refined", f.testLatencyRefined)
	t.Run("latency/groupBy=target", f.testLatencyByTarget)
	t.Run("latency/groupBy=model", f.testLatencyByModel)
	t.Run("latency/v0-since-start", f.testLatencyV0SinceStart)
	t.Run("latency/idle-0.11-page", f.testLatencyIdle)
	t.Run("breakdown/timeseries", f.testBreakdownSeries)
	t.Run("breakdown/table", f.testBreakdownTable)
	t.Run("throughput", f.testThroughput)
	t.Run("saturation", f.testSaturation)
	t.Run("raw", f.testRaw)
	t.Run("bad-queries", f.testBadQueries)
	t.Run("gpu", f.testGPU)
	t.Run("secrets", func(t *testing.T) {
		assert.True(t, f.sawAuth.Load(), "vllm-v1 never received the bearer token from secureJsonData (%q)", "vllm-v1.bearerToken")
	})
	t.Run("health", f.testHealth)
	t.Run("resources", f.testResources)
	t.Run("stream", f.testStream)
	t.Run("settings-errors", f.testSettingsErrors)
	t.Run("no-secret-in-logs", func(t *testing.T) {
		assert.NotContains(t, f.host.logs.String(), token, "the bearer token reached the plugin's log")
	})
}

// to is the end of every range query: 1.5 s in the past, so that the
// latest grid sample at or before the last step has been scraped.
func (f *fixture) to() time.Time { return time.Now().Add(-1500 * time.Millisecond) }

func (f *fixture) query(t *testing.T, m map[string]any) queryResult {
	t.Helper()
	return f.queryRange(t, f.start, f.to(), m)
}

func (f *fixture) queryRange(t *testing.T, from, to time.Time, m map[string]any) queryResult {
	t.Helper()
	r := f.host.query(t, f.ds, from, to, map[string]map[string]any{"A": m})["A"]
	require.Empty(t, r.err, "query %v failed (status %d, source %s)", m, r.status, r.source)
	return r
}

// waitReady polls the targets query until the good targets are up and the
// replays have served enough scrapes: vllm-v1 ≥ 12 grid points (clean 4 s
// windows at the last steps) and vllm-v0 ≥ 10 real pages after its jump (so
// 4 s windows at the last steps no longer cover it).
func (f *fixture) waitReady(t *testing.T) {
	deadline := time.Now().Add(40 * time.Second)
	var last string
	for time.Now().Before(deadline) {
		r := f.host.query(t, f.ds, time.Now().Add(-time.Minute), time.Now(), map[string]map[string]any{"T": {"queryType": "targets"}})["T"]
		if r.err == "" && len(r.frames) == 1 {
			fr := r.frames[0]
			up := map[string]bool{}
			for i := 0; i < fr.Rows(); i++ {
				up[cellString(t, fr, "target", i)] = cellString(t, fr, "up", i) == "true"
			}
			last = fmt.Sprintf("up=%v v1 scrapes=%d v0 real scrapes=%d", up, f.v1.scrapes(), f.v0.realScrapes())
			if up["vllm-v1"] && up["vllm-v0"] && up["vllm-idle"] && up["gpu-node"] && f.v1.scrapes() >= 12 && f.v0.realScrapes() >= 10 {
				t.Logf("ready after %s: %s", time.Since(f.start).Round(time.Millisecond), last)
				return
			}
		} else {
			last = fmt.Sprintf("targets query: %q (%d frames)", r.err, len(r.frames))
		}
		time.Sleep(250 * time.Millisecond)
	}
	t.Fatalf("targets not ready after 40 s: %s", last)
}

func (f *fixture) testTargets(t *testing.T) {
	r := f.query(t, map[string]any{"queryType": "targets"})
	require.Len(t, r.frames, 1)
	fr := r.frames[0]
	require.NotNil(t, fr.Meta)
	assert.Equal(t, data.FrameTypeTable, fr.Meta.Type)
	require.Equal(t, 6, fr.Rows(), "one row per target and agent")
	for _, c := range []struct {
		name, engine, gen, model string
		up                       bool
	}{
		{"vllm-v1", "vllm", "v1", modelV1, true},
		{"vllm-v0", "vllm", "v0", modelV0, true},
		{"vllm-idle", "vllm", "v1", modelV1, true},
		{"garbage", "", "", "", false},
		{"stall", "", "", "", false},
	} {
		i := tableRow(t, fr, "target", c.name)
		assert.Equal(t, fmt.Sprint(c.up), cellString(t, fr, "up", i), "%s up", c.name)
		if c.up {
			assert.Equal(t, c.engine, cellString(t, fr, "engine", i), "%s engine", c.name)
			assert.Equal(t, c.gen, cellString(t, fr, "generation", i), "%s generation", c.name)
			assert.Contains(t, cellString(t, fr, "models", i), c.model, "%s models", c.name)
			assert.Empty(t, cellString(t, fr, "last_error", i), "%s last_error", c.name)
			assert.Greater(t, cellFloat(t, fr, "series", i), 0.0, "%s series", c.name)
			assert.NotEmpty(t, cellString(t, fr, "last_scrape", i), "%s last_scrape", c.name)
		} else {
			assert.NotEmpty(t, cellString(t, fr, "last_error", i), "%s last_error", c.name)
		}
	}
	stallErr := strings.ToLower(cellString(t, fr, "last_error", tableRow(t, fr, "target", "stall")))
	assert.True(t, strings.Contains(stallErr, "deadline") || strings.Contains(stallErr, "timeout") || strings.Contains(stallErr, "timed out"),
		"stall's last_error should say it timed out: %q", stallErr)
	g := tableRow(t, fr, "target", "gpu-node")
	assert.Equal(t, "true", cellString(t, fr, "up", g))
	assert.Equal(t, "agent", cellString(t, fr, "kind", g))
}

// expectLatency asserts every stage × stat of a latency result against the
// model: means are _sum rate / _count rate, quantiles promql.BucketQuantile on
// the model's bucket rates, bounds the edges of the bucket the rank fell in.
func (f *fixture) expectLatency(t *testing.T, ss []series, group map[string]string, stages []string, qs map[string]float64, withMean, refined bool) {
	t.Helper()
	for _, stage := range stages {
		base := stageMetric[stage]
		h := f.model.hist(base)
		b := f.v1.buckets(base)
		sel := func(stat, bound string) map[string]string {
			m := map[string]string{"stage": stage, "stat": stat, "bound": bound}
			for k, v := range group {
				m[k] = v
			}
			return m
		}
		if withMean {
			s := one(t, ss, sel("mean", ""))
			assert.Equal(t, "s", s.unit)
			requireLast(t, s, h.Mean, rel, stage+" mean")
		}
		for stat, q := range qs {
			want, lo, hi := quantileOracle(q, b)
			v := one(t, ss, sel(stat, ""))
			assert.Equal(t, "s", v.unit)
			lower := one(t, ss, sel(stat, "lower"))
			upper := one(t, ss, sel(stat, "upper"))
			requireLast(t, lower, lo, rel, stage+" "+stat+" lower bound")
			requireLast(t, upper, hi, rel, stage+" "+stat+" upper bound")
			if !refined {
				requireLast(t, v, want, rel, stage+" "+stat)
				continue
			}
			for _, x := range v.values[len(v.values)-lastSteps:] {
				require.Falsef(t, math.IsNaN(x), "%s %s refined: null", stage, stat)
				require.Truef(t, x >= lo && x <= hi, "%s %s refined = %v outside its bucket [%v, %v]", stage, stat, x, lo, hi)
			}
		}
	}
}

var quantiles = map[string]float64{"p50": 0.5, "p90": 0.9, "p99": 0.99}

func (f *fixture) testLatencyNone(t *testing.T) {
	r := f.query(t, map[string]any{"queryType": "latency", "targets": []string{"vllm-v1"}, "groupBy": "none",
		"stages": allStages, "stats": []string{"mean", "p50", "p90", "p99"}, "estimator": "prometheus", "bounds": true})
	requirePromQLMeta(t, r.frames, data.FrameTypeTimeSeriesMulti, "latency")
	ss := seriesOf(t, r.frames)
	assert.Len(t, ss, len(allStages)*(1+3*3), "one series per stage × (mean + 3 quantiles × value/lower/upper)")
	for _, s := range ss {
		assert.NotContains(t, s.labels, "target", "groupBy none keeps no target label")
	}
	f.expectLatency(t, ss, nil, allStages, quantiles, true, false)

	// The deprecated time_per_output_token_seconds carries a different
	// distribution in this replay; itl must come from inter_token_latency_seconds
	// alone (never both added), which the assertions above prove only if the
	// two really differ.
	a, _, _ := quantileOracle(0.5, f.v1.buckets("vllm:inter_token_latency_seconds"))
	b, _, _ := quantileOracle(0.5, f.v1.buckets("vllm:time_per_output_token_seconds"))
	require.NotEqual(t, a, b)
}

func (f *fixture) testLatencyRefined(t *testing.T) {
	r := f.query(t, map[string]any{"queryType": "latency", "targets": []string{"vllm-v1"},
		"stages": allStages, "stats": []string{"p50", "p90", "p99"}, "estimator": "refined", "bounds": true})
	requirePromQLMeta(t, r.frames, data.FrameTypeTimeSeriesMulti, "latency refined")
	f.expectLatency(t, seriesOf(t, r.frames), nil, allStages, quantiles, false, true)
}

func (f *fixture) testLatencyByTarget(t *testing.T) {
	r := f.query(t, map[string]any{"queryType": "latency", "groupBy": "target",
		"stages": []string{"ttft", "e2e"}, "stats": []string{"mean", "p90"}, "bounds": true})
	requirePromQLMeta(t, r.frames, data.FrameTypeTimeSeriesMulti, "latency by target")
	ss := seriesOf(t, r.frames)
	f.expectLatency(t, ss, map[string]string{"target": "vllm-v1"}, []string{"ttft", "e2e"}, map[string]float64{"p90": 0.9}, true, false)
	idle := pick(ss, map[string]string{"target": "vllm-idle"})
	for _, s := range idle {
		requireNoData(t, s, "vllm-idle "+s.name)
	}
	for _, down := range []string{"garbage", "stall"} {
		assert.Empty(t, pick(ss, map[string]string{"target": down}), "%s has no data", down)
	}
	notices := allNotices(r.frames)
	for _, down := range []string{"garbage", "stall"} {
		assert.True(t, containsText(notices, "target "+down+" is down"), "no notice that %s is down; notices: %q", down, notices)
	}
}

func (f *fixture) testLatencyByModel(t *testing.T) {
	r := f.query(t, map[string]any{"queryType": "latency", "targets": []string{"vllm-v1"}, "groupBy": "model",
		"stages": []string{"ttft"}, "stats": []string{"p50"}, "bounds": true})
	ss := seriesOf(t, r.frames)
	f.expectLatency(t, ss, map[string]string{"model": modelV1}, []string{"ttft"}, map[string]float64{"p50": 0.5}, false, false)
}

// testLatencyV0SinceStart: vllm-v0 served zeros, then the real V0 page. A
// 10-minute window covers the jump, so every bucket's rate is its page count
// times one common factor: quantiles equal the oracle's on the page's own
// buckets and means equal the page's _sum/_count.
func (f *fixture) testLatencyV0SinceStart(t *testing.T) {
	r := f.query(t, map[string]any{"queryType": "latency", "targets": []string{"vllm-v0"}, "window": "10m",
		"stages": []string{"ttft", "e2e"}, "stats": []string{"mean", "p50", "p90", "p99"}, "bounds": true})
	requirePromQLMeta(t, r.frames, data.FrameTypeTimeSeriesMulti, "latency v0")
	ss := seriesOf(t, r.frames)
	for stage, base := range map[string]string{"ttft": "vllm:time_to_first_token_seconds", "e2e": "vllm:e2e_request_latency_seconds"} {
		b, sum, count := pageHistogram(t, pageV0, base)
		require.Greater(t, count, 0.0)
		requireLast(t, one(t, ss, map[string]string{"stage": stage, "stat": "mean", "bound": ""}), sum/count, rel, "v0 "+stage+" mean")
		for stat, q := range quantiles {
			want, lo, hi := quantileOracle(q, b)
			requireLast(t, one(t, ss, map[string]string{"stage": stage, "stat": stat, "bound": ""}), want, rel, "v0 "+stage+" "+stat)
			requireLast(t, one(t, ss, map[string]string{"stage": stage, "stat": stat, "bound": "lower"}), lo, rel, "v0 "+stage+" "+stat+" lower")
			requireLast(t, one(t, ss, map[string]string{"stage": stage, "stat": stat, "bound": "upper"}), hi, rel, "v0 "+stage+" "+stat+" upper")
		}
	}
}

// testLatencyIdle: the real vLLM 0.11 page is idle (every count 0), so its
// since-start latency is "no data" (null), never 0.
func (f *fixture) testLatencyIdle(t *testing.T) {
	for _, base := range []string{"vllm:time_to_first_token_seconds", "vllm:e2e_request_latency_seconds"} {
		_, _, count := pageHistogram(t, pageV1, base)
		require.Zero(t, count, "%s: the 0.11 page is expected idle; with requests, compare quantiles to the oracle instead", base)
	}
	r := f.query(t, map[string]any{"queryType": "latency", "targets": []string{"vllm-idle"}, "window": "10m",
		"stages": []string{"ttft", "e2e"}, "stats": []string{"mean", "p50", "p99"}, "bounds": true})
	require.NotEmpty(t, r.frames)
	ss := seriesOf(t, r.frames)
	t.Logf("idle page: %d series, all null at the last steps", len(ss))
	for _, s := range ss {
		requireNoData(t, s, "idle "+s.name)
	}
}

func (f *fixture) breakdownWant() map[string]float64 {
	m := f.model
	queue := m.hist("vllm:request_queue_time_seconds").Mean
	return map[string]float64{
		"queue":    queue,
		"prefill":  m.hist("vllm:request_prefill_time_seconds").Mean,
		"decode":   m.hist("vllm:request_decode_time_seconds").Mean,
		"overhead": m.hist("vllm:e2e_request_latency_seconds").Mean - queue - m.hist("vllm:request_inference_time_seconds").Mean,
		"e2e":      m.hist("vllm:e2e_request_latency_seconds").Mean,
	}
}

func (f *fixture) testBreakdownSeries(t *testing.T) {
	r := f.query(t, map[string]any{"queryType": "breakdown", "targets": []string{"vllm-v1"}, "format": "timeseries"})
	requirePromQLMeta(t, r.frames, data.FrameTypeTimeSeriesMulti, "breakdown")
	ss := seriesOf(t, r.frames)
	want := f.breakdownWant()
	for _, stage := range []string{"queue", "prefill", "decode", "overhead"} {
		s := one(t, ss, map[string]string{"stage": stage})
		assert.Equal(t, "s", s.unit)
		requireLast(t, s, want[stage], rel, "breakdown "+stage)
	}
	requireNear(t, 0.08, want["overhead"], rel, "chosen overhead")
}

func (f *fixture) testBreakdownTable(t *testing.T) {
	to := f.to()
	r := f.queryRange(t, to.Add(-10*time.Second), to, map[string]any{"queryType": "breakdown", "targets": []string{"vllm-v1"}, "format": "table"})
	requirePromQLMeta(t, r.frames, data.FrameTypeTable, "breakdown table")
	require.Len(t, r.frames, 1)
	fr := r.frames[0]
	require.Equal(t, 1, fr.Rows())
	for col, want := range f.breakdownWant() {
		requireNear(t, want, cellFloat(t, fr, col, 0), rel, "breakdown table "+col)
		assert.Equal(t, "s", tableField(t, fr, col).Config.Unit, col)
	}
	// Requests finished in the 10 s window: the E2E count rate × 10 s. Unlike
	// the means (ratios of rates, where extrapolation cancels), this count
	// depends on PromQL's extrapolation to the window edges, which falls short
	// by up to half a scrape interval when a scrape lands late on a loaded
	// machine (seen: 19.69 for 20 under CI load), hence the 5 % tolerance.
	requireNear(t, f.model.reqRate*10, cellFloat(t, fr, "requests", 0), 0.05, "breakdown table requests")
}

func (f *fixture) testThroughput(t *testing.T) {
	r := f.query(t, map[string]any{"queryType": "throughput", "groupBy": "none"})
	requirePromQLMeta(t, r.frames, data.FrameTypeTimeSeriesMulti, "throughput")
	ss := seriesOf(t, r.frames)
	for reason, want := range f.model.reasons {
		s := one(t, ss, map[string]string{"signal": "requests_finished", "reason": reason})
		assert.Equal(t, "reqps", s.unit)
		requireLast(t, s, want, rel, "requests/s "+reason)
	}
	requireLast(t, one(t, ss, map[string]string{"signal": "prompt_tokens"}), f.model.counters["vllm:prompt_tokens_total"], rel, "prompt tokens/s")
	requireLast(t, one(t, ss, map[string]string{"signal": "generation_tokens"}), f.model.counters["vllm:generation_tokens_total"], rel, "generation tokens/s")
	notices := allNotices(r.frames)
	for _, down := range []string{"garbage", "stall"} {
		assert.True(t, containsText(notices, "target "+down+" is down"), "no notice that %s is down; notices: %q", down, notices)
	}
}

func (f *fixture) testSaturation(t *testing.T) {
	r := f.query(t, map[string]any{"queryType": "saturation", "groupBy": "none"})
	requirePromQLMeta(t, r.frames, data.FrameTypeTimeSeriesMulti, "saturation")
	ss := seriesOf(t, r.frames)
	g := f.model.gauges
	// vllm-v0 and vllm-idle report 0 running, 0 waiting and 0 KV usage: sums
	// are vllm-v1's values, the KV ratio is averaged over the three targets.
	requireLast(t, one(t, ss, map[string]string{"signal": "requests_running"}), g["vllm:num_requests_running"], rel, "running")
	requireLast(t, one(t, ss, map[string]string{"signal": "requests_waiting"}), g["vllm:num_requests_waiting"], rel, "waiting")
	kv := one(t, ss, map[string]string{"signal": "kv_cache_usage"})
	assert.Equal(t, "percentunit", kv.unit)
	requireLast(t, kv, g["vllm:kv_cache_usage_perc"]/3, rel, "KV-cache usage (average of three targets)")
	requireLast(t, one(t, ss, map[string]string{"signal": "preemptions"}), f.model.counters["vllm:num_preemptions_total"], rel, "preemptions/s")
	hit := one(t, ss, map[string]string{"signal": "prefix_cache_hit_ratio"})
	assert.Equal(t, "percentunit", hit.unit)
	requireLast(t, hit, f.model.counters["vllm:prefix_cache_hits_total"]/f.model.counters["vllm:prefix_cache_queries_total"], rel, "prefix-cache hit ratio")
}

func (f *fixture) testRaw(t *testing.T) {
	r := f.query(t, map[string]any{"queryType": "raw", "metric": "vllm:num_requests_running", "targets": []string{"vllm-v1"}})
	requirePromQLMeta(t, r.frames, data.FrameTypeTimeSeriesMulti, "raw")
	ss := seriesOf(t, r.frames)
	require.Len(t, ss, 1)
	assert.Equal(t, "vllm-v1", ss[0].labels["target"])
	assert.Equal(t, modelV1, ss[0].labels["model"])
	requireLast(t, ss[0], f.model.gauges["vllm:num_requests_running"], 0, "raw num_requests_running")

	r = f.query(t, map[string]any{"queryType": "raw", "metric": "vllm:kv_cache_usage_perc", "matchers": map[string]string{"engine": "0"}})
	ss = seriesOf(t, r.frames)
	require.Len(t, ss, 2, "vllm-v1 and vllm-idle export kv_cache_usage_perc{engine=\"0\"}")
	requireLast(t, one(t, ss, map[string]string{"target": "vllm-v1"}), f.model.gauges["vllm:kv_cache_usage_perc"], 0, "raw kv v1")
	requireLast(t, one(t, ss, map[string]string{"target": "vllm-idle"}), 0, 0, "raw kv idle")

	// A raw query can only read configured targets.
	res := f.host.query(t, f.ds, f.start, f.to(), map[string]map[string]any{"A": {"queryType": "raw", "metric": "up", "targets": []string{"prometheus"}}})["A"]
	require.NotEmpty(t, res.err, "raw query of an unconfigured target must fail")
	assert.Contains(t, res.err, "prometheus")
	assert.EqualValues(t, http.StatusBadRequest, res.status)
	assert.Empty(t, res.frames)
}

func (f *fixture) testBadQueries(t *testing.T) {
	res := f.host.query(t, f.ds, f.start, f.to(), map[string]map[string]any{
		"bad-type":  {"queryType": "nope"},
		"bad-stage": {"queryType": "latency", "stages": []string{"warp_time"}},
		"bad-stat":  {"queryType": "latency", "stats": []string{"p100"}},
		"good":      {"queryType": "throughput", "targets": []string{"vllm-v1"}},
	})
	for _, ref := range []string{"bad-type", "bad-stage", "bad-stat"} {
		assert.NotEmpty(t, res[ref].err, ref)
		assert.EqualValues(t, http.StatusBadRequest, res[ref].status, ref)
	}
	assert.Contains(t, res["bad-stage"].err, "warp_time")
	assert.Empty(t, res["good"].err, "one bad query never fails the others")
	assert.NotEmpty(t, res["good"].frames)
}

// testGPU reads the GPU agent page back: every value is a gauge served as is.
func (f *fixture) testGPU(t *testing.T) {
	signals := map[string]string{ // canonical signal -> agent metric
		"gpu_util":    "inferscope_gpu_utilization_ratio",
		"sm_active":   "inferscope_gpu_sm_active_ratio",
		"power":       "inferscope_gpu_power_watts",
		"fb_used":     "inferscope_gpu_fb_used_bytes",
		"temperature": "inferscope_gpu_temperature_celsius",
	}
	names := make([]string, 0, len(signals))
	for s := range signals {
		names = append(names, s)
	}
	sort.Strings(names)
	res := f.host.query(t, f.ds, f.start, f.to(), map[string]map[string]any{"A": {"queryType": "gpu", "agents": []string{"gpu-node"}, "signals": names}})["A"]
	require.Empty(t, res.err, "gpu query failed (status %d)", res.status)
	requirePromQLMeta(t, res.frames, data.FrameTypeTimeSeriesMulti, "gpu")
	ss := seriesOf(t, res.frames)
	for sig, metric := range signals {
		for _, gs := range gpuAgentSeries {
			if gs.name != metric {
				continue
			}
			s := one(t, ss, map[string]string{"signal": sig, "gpu": gs.gpu})
			requireLast(t, s, gs.value, rel, fmt.Sprintf("gpu %s %s", gs.gpu, sig))
		}
	}
}

func (f *fixture) testHealth(t *testing.T) {
	start := time.Now()
	h := f.host.checkHealth(t, f.ds)
	t.Logf("CheckHealth took %s: %s", time.Since(start).Round(time.Millisecond), h.Message)
	assert.Equal(t, pluginv2.CheckHealthResponse_ERROR, h.Status, "two targets fail")
	for _, name := range []string{"vllm-v1", "vllm-v0", "vllm-idle", "garbage", "stall", "gpu-node"} {
		assert.Contains(t, h.Message, name, "health message names every target")
	}
	assert.NotContains(t, h.Message, "\n", "one line")
	var details struct {
		Targets []struct {
			Name       string `json:"name"`
			Kind       string `json:"kind"`
			OK         bool   `json:"ok"`
			Error      string `json:"error"`
			Engine     string `json:"engine"`
			Generation string `json:"generation"`
		} `json:"targets"`
	}
	require.NoError(t, json.Unmarshal(h.JsonDetails, &details), "JSONDetails: %s", h.JsonDetails)
	byName := map[string]int{}
	for i, d := range details.Targets {
		byName[d.Name] = i
	}
	require.Len(t, details.Targets, 6)
	for _, c := range []struct {
		name, engine, gen string
		ok                bool
	}{{"vllm-v1", "vllm", "v1", true}, {"vllm-v0", "vllm", "v0", true}, {"vllm-idle", "vllm", "v1", true}, {"garbage", "", "", false}, {"stall", "", "", false}} {
		d := details.Targets[byName[c.name]]
		assert.Equal(t, c.ok, d.OK, c.name)
		if c.ok {
			assert.Equal(t, c.engine, d.Engine, c.name)
			assert.Equal(t, c.gen, d.Generation, c.name)
			continue
		}
		assert.NotEmpty(t, d.Error, c.name)
		assert.NotContains(t, d.Error, "\n", "%s: one sentence", c.name)
		assert.Contains(t, h.Message, d.Error, "the message carries %s's failure sentence", c.name)
		assert.Equal(t, 1, strings.Count(h.Message, d.Error), "%s's failure appears once", c.name)
	}
	gi := byName["gpu-node"]
	assert.True(t, details.Targets[gi].OK, "gpu-node")
	assert.Equal(t, "agent", details.Targets[gi].Kind)
}

func (f *fixture) testResources(t *testing.T) {
	code, body := f.host.resource(t, f.ds, "targets")
	require.EqualValues(t, http.StatusOK, code, "%s", body)
	var targets []string
	require.NoError(t, json.Unmarshal(body, &targets))
	assert.Equal(t, []string{"garbage", "stall", "vllm-idle", "vllm-v0", "vllm-v1"}, targets)

	code, body = f.host.resource(t, f.ds, "models")
	require.EqualValues(t, http.StatusOK, code, "%s", body)
	var models []string
	require.NoError(t, json.Unmarshal(body, &models))
	assert.ElementsMatch(t, []string{modelV1, modelV0}, models)

	code, body = f.host.resource(t, f.ds, "signals")
	require.EqualValues(t, http.StatusOK, code, "%s", body)
	var sigs []struct {
		Target  string `json:"target"`
		Engine  string `json:"engine"`
		Signals []struct {
			Signal string `json:"signal"`
			Status string `json:"status"`
		} `json:"signals"`
	}
	require.NoError(t, json.Unmarshal(body, &sigs), "%s", body)
	found := false
	for _, s := range sigs {
		if s.Target != "vllm-v1" {
			continue
		}
		found = true
		assert.Equal(t, "vllm", s.Engine)
		status := map[string]string{}
		for _, x := range s.Signals {
			status[x.Signal] = x.Status
		}
		for _, sig := range []string{"ttft", "e2e", "itl", "queue_time", "kv_cache_usage"} {
			assert.Equal(t, "exported", status[sig], sig)
		}
	}
	assert.True(t, found, "signals has vllm-v1: %s", body)

	code, body = f.host.resource(t, f.ds, "agents")
	require.EqualValues(t, http.StatusOK, code, "%s", body)
	assert.JSONEq(t, `["gpu-node"]`, string(body))
}

func (f *fixture) testStream(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), rpcTimeout)
	defer cancel()
	sub, err := f.host.stream.SubscribeStream(ctx, &pluginv2.SubscribeStreamRequest{PluginContext: f.ds.pluginContext(), Path: "saturation"})
	require.NoError(t, err)
	assert.Equal(t, pluginv2.SubscribeStreamResponse_OK, sub.Status)
	nf, err := f.host.stream.SubscribeStream(ctx, &pluginv2.SubscribeStreamRequest{PluginContext: f.ds.pluginContext(), Path: "nope"})
	require.NoError(t, err)
	assert.Equal(t, pluginv2.SubscribeStreamResponse_NOT_FOUND, nf.Status)

	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	rs, err := f.host.stream.RunStream(runCtx, &pluginv2.RunStreamRequest{PluginContext: f.ds.pluginContext(), Path: "saturation"})
	require.NoError(t, err)
	pkt, err := rs.Recv()
	require.NoError(t, err, "RunStream sends a first frame")
	var fr data.Frame
	require.NoError(t, json.Unmarshal(pkt.Data, &fr), "stream packet is a JSON frame: %s", pkt.Data)
	running, kv := math.NaN(), math.NaN()
	for _, fld := range fr.Fields {
		if fld.Labels["target"] != "vllm-v1" || fld.Len() == 0 {
			continue
		}
		v, ok := fld.ConcreteAt(0)
		if !ok {
			continue
		}
		switch fld.Name {
		case "requests_running":
			running = toFloat(t, v)
		case "kv_cache_usage":
			kv = toFloat(t, v)
		}
	}
	requireNear(t, f.model.gauges["vllm:num_requests_running"], running, 0, "stream running vllm-v1")
	requireNear(t, f.model.gauges["vllm:kv_cache_usage_perc"], kv, 0, "stream KV usage vllm-v1")
	stop()
	for {
		if _, err := rs.Recv(); err != nil {
			if !errors.Is(err, io.EOF) {
				assert.Contains(t, err.Error(), "anceled", "stream ends by cancellation")
			}
			break
		}
	}
}

// testSettingsErrors: broken settings give a health error naming the field
// and query errors, and the plugin process survives them.
func (f *fixture) testSettingsErrors(t *testing.T) {
	cases := []struct {
		jsonData string
		field    string
	}{
		{`{"targets":[{"name":"a","url":"ftp://10.0.0.5/metrics"}],"scrapeInterval":"1s"}`, "targets[0].url"},
		{`{"targets":[{"name":"a","url":"http://127.0.0.1:1/metrics"}],"scrapeInterval":"1s","scrapeTimeout":"2s"}`, "scrapeTimeout"},
		{`{"targets":[{"name":"a","url":"http://127.0.0.1:1/metrics"}],"scrapeInterval":"soon"}`, "scrapeInterval"},
		{`{"targets":[`, "jsonData"},
	}
	for i, c := range cases {
		ds := dataSource{id: int64(100 + i), uid: fmt.Sprintf("broken-%d", i), jsonData: []byte(c.jsonData), updatedMS: time.Now().UnixMilli()}
		h := f.host.checkHealth(t, ds)
		assert.Equal(t, pluginv2.CheckHealthResponse_ERROR, h.Status, c.jsonData)
		assert.Contains(t, h.Message, c.field, "health message names the field")
		res := f.host.query(t, ds, f.start, f.to(), map[string]map[string]any{"A": {"queryType": "latency"}, "B": {"queryType": "targets"}})
		for ref, r := range res {
			assert.NotEmpty(t, r.err, "%s %s: query on broken settings must fail", c.jsonData, ref)
			assert.Contains(t, r.err, c.field, ref)
			assert.NotZero(t, r.status, ref)
		}
	}
	// The plugin is still alive and the good data source still answers.
	r := f.query(t, map[string]any{"queryType": "raw", "metric": "vllm:num_requests_running", "targets": []string{"vllm-v1"}})
	assert.NotEmpty(t, r.frames)
}
