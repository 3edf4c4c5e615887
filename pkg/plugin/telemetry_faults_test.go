package plugin

import (
	"context"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/backend"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Faulty telemetry through QueryData (issue 22): labels changed by a settings save, TGIS's
// dict-repr method label, counters falling without a process start time, a router
// re-exporting its engines' series, a histogram its own _sum contradicts. Each test serves or
// writes a small page and checks numbers worked out by hand from it.

// gaugeSettings is one target "a" on url with the extra label zone, scraped every 500 ms into
// storagePath.
func gaugeSettings(storage, url, zone string) map[string]any {
	return map[string]any{"storagePath": storage, "scrapeInterval": "500ms", "scrapeTimeout": "500ms",
		"targets": []map[string]any{{"name": "a", "url": url + "/metrics", "labels": map[string]string{"zone": zone}}}}
}

// saturationNow runs a saturation query over the last two seconds and returns, for running and
// waiting, the largest value at any step and the last one.
func saturationNow(t *testing.T, inst *Instance) (maxRun, lastRun, maxWait, lastWait float64) {
	t.Helper()
	now := time.Now()
	dr := runQuery(t, inst, map[string]any{"queryType": "saturation"}, now.Add(-2*time.Second), now, 200*time.Millisecond)
	require.NoError(t, dr.Error)
	f := fieldsBy(dr, "signal")
	peak := func(sig string) (float64, float64) {
		fld := f[sig]
		if fld == nil { // not scraped yet
			return math.NaN(), math.NaN()
		}
		m := math.Inf(-1)
		for i := 0; i < fld.Len(); i++ {
			if p := fld.At(i).(*float64); p != nil {
				m = math.Max(m, *p)
			}
		}
		last, _ := lastFloat(fld)
		return m, last
	}
	maxRun, lastRun = peak("requests_running")
	maxWait, lastWait = peak("requests_waiting")
	return
}

// TestSaturationAfterSettingsSaveAndRestart: the page says 3 running, 1 waiting. A settings save
// adding a label (zone 1 → 2) and then a plugin restart with another label (the store reopened
// from disk) must read 3 and 1 at every step, never 6 and 2.
func TestSaturationAfterSettingsSaveAndRestart(t *testing.T) {
	page, err := os.ReadFile("testdata/vllm-v1-gauges-running3-waiting1.prom")
	require.NoError(t, err)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write(page) }))
	defer srv.Close()
	storage := t.TempDir()

	one := newLiveInstance(t, "odd", gaugeSettings(storage, srv.URL, "1"))
	require.Eventually(t, func() bool {
		_, run, _, _ := saturationNow(t, one)
		return run == 3
	}, 10*time.Second, 50*time.Millisecond)
	two := newLiveInstance(t, "odd", gaugeSettings(storage, srv.URL, "2")) // a settings save
	one.Dispose()
	time.Sleep(2 * time.Second) // the new instance's first scrapes and its staleness sweep (≤ 2.1 intervals)
	maxRun, run, maxWait, wait := saturationNow(t, two)
	assert.Equal(t, 3.0, run)
	assert.Equal(t, 1.0, wait)
	assert.Equal(t, 3.0, maxRun, "running at no step of the save reads both label sets")
	assert.Equal(t, 1.0, maxWait)

	two.Dispose() // the plugin stops; the store is closed and reopened from disk
	three := newLiveInstance(t, "odd", gaugeSettings(storage, srv.URL, "3"))
	defer three.Dispose()
	time.Sleep(2 * time.Second)
	maxRun, run, maxWait, wait = saturationNow(t, three)
	assert.Equal(t, 3.0, run)
	assert.Equal(t, 1.0, wait)
	assert.Equal(t, 3.0, maxRun)
	assert.Equal(t, 1.0, maxWait)
}

// tgisHistory writes the TGIS page (pkg/catalog/testdata/tgis-dict-repr-method.prom) every 15 s
// for 10 minutes, each counter growing by its page value per scrape.
func tgisHistory(t *testing.T) (*Instance, time.Time) {
	h := newHandHistory(t)
	t0 := time.Unix(1_700_000_100, 0)
	pre := map[string]string{"method": "{'method': 'prefill'}"}
	dec := map[string]string{"method": "{'method': 'decode'}"}
	with := func(m map[string]string, le string) map[string]string {
		out := map[string]string{"le": le}
		for k, v := range m {
			out[k] = v
		}
		return out
	}
	for i := 0; i <= 40; i++ {
		ts, k := t0.Add(time.Duration(i)*15*time.Second), float64(i+1)
		for le, v := range map[string]float64{"0.05": 100, "0.1": 200, "+Inf": 215} {
			h.sample(ts, "tgis", "tgi_batch_inference_duration_bucket", with(pre, le), v*k)
		}
		h.sample(ts, "tgis", "tgi_batch_inference_duration_sum", pre, 10.75*k)
		h.sample(ts, "tgis", "tgi_batch_inference_duration_count", pre, 215*k)
		for le, v := range map[string]float64{"0.025": 600, "0.05": 1000, "+Inf": 1000} {
			h.sample(ts, "tgis", "tgi_batch_forward_duration_bucket", with(dec, le), v*k)
		}
		h.sample(ts, "tgis", "tgi_batch_forward_duration_sum", dec, 25*k)
		h.sample(ts, "tgis", "tgi_batch_forward_duration_count", dec, 1000*k)
		h.sample(ts, "tgis", "tgi_request_success", nil, 200*k)
		h.sample(ts, "tgis", "tgi_queue_size", nil, 1)
		h.sample(ts, "tgis", "tgi_batch_current_size", nil, 4)
	}
	return h.instance(histTarget("tgis")), t0
}

// TestTGISLatencyThroughQueryData: by hand from the page, prefill batches per scrape: 100 ≤ 0.05 s,
// 200 ≤ 0.1 s, 215 in all, _sum 10.75: mean 0.05 s, p50 at rank 107.5 in (0.05, 0.1]:
// 0.05 + 0.05 · (107.5 − 100) / (200 − 100) = 0.05375 s. Decode forward passes: 600 ≤ 0.025 s,
// 1000 ≤ 0.05 s, mean 25 / 1000 = 0.025 s, p50 at rank 500 in (0, 0.025]: 0.025 · 500 / 600 =
// 0.0208333 s. Neither says "did not grow".
func TestTGISLatencyThroughQueryData(t *testing.T) {
	inst, t0 := tgisHistory(t)
	for stage, want := range map[string][2]float64{"prefill_time": {0.05, 0.05375}, "itl": {0.025, 0.025 * 500 / 600}} {
		t.Run(stage, func(t *testing.T) {
			dr := runHistQuery(t, inst, t0.Add(5*time.Minute), t0.Add(10*time.Minute), time.Minute,
				map[string]any{"queryType": "latency", "stages": []string{stage}, "stats": []string{"mean", "p50"}, "window": "5m", "estimator": "prometheus"})
			require.NoError(t, dr.Error)
			f := fieldsBy(dr, "stat", "bound")
			require.NotNil(t, f["mean/"], "%s: %v", stage, responseNotices(dr))
			mean, _ := lastFloat(f["mean/"])
			p50, _ := lastFloat(f["p50/"])
			assert.InDelta(t, want[0], mean, 1e-9, stage)
			assert.InDelta(t, want[1], p50, 1e-9, stage)
			assert.NotContains(t, strings.Join(responseNotices(dr), "\n"), "did not grow", stage)
		})
	}
}

// TestRestartRuleOneSentenceThroughQueryData: a multiprocess vLLM page (no
// process_start_time_seconds) whose finished-request counter and TTFT count fall from 90 to 10
// at 5 minutes. Below half: a restart, in the events query (not "counter went backwards") and
// in the latency query's notice alike.
func TestRestartRuleOneSentenceThroughQueryData(t *testing.T) {
	h := newHandHistory(t)
	t0 := time.Unix(1_700_000_100, 0)
	m := map[string]string{"model_name": "m"}
	ttft := newHandHist(0.1, 1)
	var done float64
	for i := 0; i <= 40; i++ {
		ts := t0.Add(time.Duration(i) * 15 * time.Second)
		if i == 20 { // 5 minutes: the process is replaced, counters start again
			ttft.reset()
			done = 0
		}
		ttft.observe(0.05, 4)
		ttft.observe(0.5, 1)
		done += 5
		h.scrape(ts, "mp", "vllm:time_to_first_token_seconds", m, ttft)
		h.sample(ts, "mp", "vllm:request_success_total", map[string]string{"model_name": "m", "finished_reason": "stop"}, done)
		h.sample(ts, "mp", "vllm:num_requests_running", m, 2)
	}
	inst := h.instance(histTarget("mp"))
	ev := eventRows(t, runQuery(t, inst, map[string]any{"queryType": "events"}, t0, t0.Add(10*time.Minute), time.Minute))
	var kinds []string
	for _, e := range ev {
		kinds = append(kinds, e.kind)
	}
	assert.Contains(t, kinds, "restart")
	assert.NotContains(t, kinds, "counter_backwards")
	for _, e := range ev {
		if e.kind == "restart" {
			assert.Equal(t, t0.Add(5*time.Minute).UTC(), e.at.UTC())
			assert.Contains(t, e.text, "no process_start_time_seconds")
		}
	}
	dr := runHistQuery(t, inst, t0.Add(3*time.Minute), t0.Add(10*time.Minute), time.Minute,
		map[string]any{"queryType": "latency", "stages": []string{"ttft"}, "stats": []string{"p50"}, "window": "1m"})
	require.NoError(t, dr.Error)
	assert.Contains(t, strings.Join(responseNotices(dr), "\n"), "target mp restarted at ")
}

// routerHistory writes, every 15 s for 10 minutes, engines a (3 running, 1 waiting) and b
// (2 running, 0 waiting) and a vLLM production-stack router r re-exporting both with
// server="http://a:8000" / "http://b:8000" (the shape of
// pkg/catalog/testdata/vllm-production-stack-router.prom), and returns an instance over the
// given targets.
func routerHistory(t *testing.T, targets ...string) (*Instance, time.Time) {
	h := newHandHistory(t)
	t0 := time.Unix(1_700_000_100, 0)
	m := map[string]string{"model_name": "m", "engine": "0"}
	for i := 0; i <= 40; i++ {
		ts := t0.Add(time.Duration(i) * 15 * time.Second)
		for job, v := range map[string][2]float64{"a": {3, 1}, "b": {2, 0}} {
			if slices.Contains(targets, job) { // an engine that is not a target is not scraped
				h.sample(ts, job, "vllm:num_requests_running", m, v[0])
				h.sample(ts, job, "vllm:num_requests_waiting", m, v[1])
				h.sample(ts, job, "vllm:kv_cache_usage_perc", m, 0.5)
				h.sample(ts, job, "vllm:prefix_cache_queries_total", m, 100*float64(i))
			}
			srv := map[string]string{"server": "http://" + job + ":8000"}
			h.sample(ts, "r", "vllm:num_requests_running", srv, v[0])
			h.sample(ts, "r", "vllm:num_requests_waiting", srv, v[1])
			h.sample(ts, "r", "vllm:current_qps", srv, 2)
			h.sample(ts, "r", "vllm:healthy_pods_total", srv, 1)
			h.sample(ts, "r", "vllm:num_requests_swapped", srv, 0)
			h.sample(ts, "r", "vllm:gpu_prefix_cache_hit_rate", srv, 0.4)
		}
	}
	var ts []string
	for _, n := range targets {
		ts = append(ts, histTarget(n))
	}
	return h.instance(ts...), t0
}

// TestReExporterCountedOnceThroughQueryData: truth by hand, running 3 + 2 = 5 and waiting
// 1 + 0 = 1. With the router also configured the sum read 10 and 2; now 5 and 1, and the
// router is named as a re-exporter of both engines. With only a and the router configured, the
// router's copy is the only view of b and counts: 3 + 2 = 5 again.
func TestReExporterCountedOnceThroughQueryData(t *testing.T) {
	for _, tc := range []struct {
		targets []string
	}{{[]string{"a", "b", "r"}}, {[]string{"a", "r"}}} {
		t.Run("targets="+strings.Join(tc.targets, "+"), func(t *testing.T) {
			inst, t0 := routerHistory(t, tc.targets...)
			dr := runHistQuery(t, inst, t0.Add(5*time.Minute), t0.Add(10*time.Minute), time.Minute, map[string]any{"queryType": "saturation"})
			require.NoError(t, dr.Error)
			f := fieldsBy(dr, "signal")
			run, _ := lastFloat(f["requests_running"])
			wait, _ := lastFloat(f["requests_waiting"])
			assert.Equal(t, 5.0, run, "%v", tc.targets)
			assert.Equal(t, 1.0, wait, "%v", tc.targets)
			assert.Contains(t, strings.Join(responseNotices(dr), "\n"), "target r is a re-exporter (vLLM production-stack router) of http://a:8000, http://b:8000", "%v", tc.targets)
		})
	}
	inst, t0 := routerHistory(t, "a", "b", "r")
	inst.now = func() time.Time { return t0.Add(10 * time.Minute) } // the inventory reads the last minutes
	dr := runHistQuery(t, inst, t0.Add(5*time.Minute), t0.Add(10*time.Minute), time.Minute, map[string]any{"queryType": "targets"})
	require.NoError(t, dr.Error)
	assert.Contains(t, strings.Join(responseNotices(dr), "\n"), "target r is a re-exporter (vLLM production-stack router)")
}

// lowestBucketHistory writes a vLLM engine whose TTFT histogram puts every observation in the
// lowest bucket (≤ 0.001 s, 50 per 15 s scrape) while its _sum grows by 23 per scrape: a mean
// of 23 / 50 = 0.46 s, 460× the only bound the buckets allow (the page
// pkg/analysis/sanity/testdata/vllm-ttft-lowest-bucket-mean-0.46.prom).
func lowestBucketHistory(t *testing.T) (*Instance, time.Time) {
	h := newHandHistory(t)
	t0 := time.Unix(1_700_000_100, 0)
	m := map[string]string{"model_name": "m", "engine": "0"}
	for i := 0; i <= 40; i++ {
		ts := t0.Add(time.Duration(i) * 15 * time.Second)
		n := 50 * float64(i+1)
		for _, le := range []string{"0.001", "0.005", "0.01", "0.5", "1", "+Inf"} {
			h.sample(ts, "a", "vllm:time_to_first_token_seconds_bucket", map[string]string{"model_name": "m", "engine": "0", "le": le}, n)
		}
		h.sample(ts, "a", "vllm:time_to_first_token_seconds_sum", m, 23*float64(i+1))
		h.sample(ts, "a", "vllm:time_to_first_token_seconds_count", m, n)
		h.sample(ts, "a", "vllm:request_success_total", map[string]string{"model_name": "m", "engine": "0", "finished_reason": "stop"}, n)
		h.sample(ts, "a", "vllm:num_requests_running", m, 2)
	}
	return h.instance(histTarget("a")), t0
}

// TestContradictedHistogramDrawsNoQuantile: latency draws no p50 or bound from the
// contradicted TTFT histogram (it drew 0.0005 s inside the 1 ms "bound" before), keeps the mean
// 0.46 s, and says why with the verdict's sentence.
func TestContradictedHistogramDrawsNoQuantile(t *testing.T) {
	inst, t0 := lowestBucketHistory(t)
	dr := runHistQuery(t, inst, t0.Add(5*time.Minute), t0.Add(10*time.Minute), time.Minute,
		map[string]any{"queryType": "latency", "stages": []string{"ttft"}, "stats": []string{"mean", "p50"}, "window": "5m"})
	require.NoError(t, dr.Error)
	f := fieldsBy(dr, "stat", "bound")
	mean, _ := lastFloat(f["mean/"])
	assert.InDelta(t, 0.46, mean, 1e-9)
	for _, k := range []string{"p50/", "p50/lower", "p50/upper"} {
		require.NotNil(t, f[k], k)
		v, _ := lastFloat(f[k])
		assert.True(t, math.IsNaN(v), "%s drawn: %v", k, v)
	}
	assert.Contains(t, strings.Join(responseNotices(dr), "\n"), "ttft: the histogram contradicts itself from ")
	assert.Contains(t, strings.Join(responseNotices(dr), "\n"), "every observation is in the lowest bucket (≤ 0.001) but the mean is 0.46, 460× that bound")
}

// TestContradictedHistogramSLOIsUnknown: the default profiles' TTFT objectives (thresholds far
// above 1 ms) read attainment 1 and "ok" from the buckets alone. The verdict disproves them:
// status unknown, status_value null, no attainment, and the reason and a notice say why.
func TestContradictedHistogramSLOIsUnknown(t *testing.T) {
	inst, t0 := lowestBucketHistory(t)
	dr := runHistQuery(t, inst, t0.Add(5*time.Minute), t0.Add(10*time.Minute), time.Minute, map[string]any{"queryType": "slo"})
	require.NoError(t, dr.Error)
	require.Len(t, dr.Frames, 1)
	fr := dr.Frames[0]
	col := func(name string) int {
		for i, f := range fr.Fields {
			if f.Name == name {
				return i
			}
		}
		t.Fatalf("no field %s", name)
		return -1
	}
	ttft := 0
	for i := 0; i < fr.Rows(); i++ {
		if fr.Fields[col("signal")].At(i).(string) != "ttft" {
			continue
		}
		ttft++
		assert.Equal(t, "unknown", fr.Fields[col("status")].At(i).(string))
		assert.Nil(t, fr.Fields[col("status_value")].At(i).(*float64))
		assert.Nil(t, fr.Fields[col("attainment")].At(i).(*float64))
		assert.Contains(t, fr.Fields[col("reason")].At(i).(string), "the histogram contradicts itself")
	}
	assert.Positive(t, ttft)
	assert.Contains(t, strings.Join(responseNotices(dr), "\n"), "the histogram contradicts itself")
}

// TestModelsFilterMatchingNothingIsNotIdle: the engine serves model m and counts 50 TTFT
// observations per scrape. A models filter naming "nope" matches none of its series: that is
// said as such, never "no requests … did not grow".
func TestModelsFilterMatchingNothingIsNotIdle(t *testing.T) {
	inst, t0 := lowestBucketHistory(t)
	dr := runHistQuery(t, inst, t0.Add(5*time.Minute), t0.Add(10*time.Minute), time.Minute,
		map[string]any{"queryType": "latency", "stages": []string{"ttft"}, "stats": []string{"mean"}, "window": "5m", "models": []string{"nope"}})
	require.NoError(t, dr.Error)
	n := strings.Join(responseNotices(dr), "\n")
	assert.Contains(t, n, "target a: the models filter (nope) matched none of its ttft series in the queried range")
	assert.NotContains(t, n, "did not grow")
}

// TestHealthNamesReExporterAndPageFaults: Save & test on the production-stack router page says
// it is a re-exporter and of which servers (not "vLLM V0 0.6-0.7"); on a page with a duplicate
// series and decreasing buckets it names the faults.
func TestHealthNamesReExporterAndPageFaults(t *testing.T) {
	serve := func(path string) string {
		page, err := os.ReadFile(path)
		require.NoError(t, err)
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write(page) }))
		t.Cleanup(srv.Close)
		return srv.URL
	}
	inst := newLiveInstance(t, "health22", map[string]any{"storagePath": t.TempDir(), "scrapeInterval": "1s", "scrapeTimeout": "1s",
		"targets": []map[string]any{
			{"name": "router", "url": serve("testdata/vllm-production-stack-router.prom") + "/metrics"},
			{"name": "dup", "url": serve("testdata/vllm-duplicate-and-nonmonotonic.prom") + "/metrics"},
		}})
	defer inst.Dispose()
	res, err := inst.CheckHealth(context.Background(), &backend.CheckHealthRequest{})
	require.NoError(t, err)
	assert.Contains(t, res.Message, "router: re-exporter (vLLM production-stack router) of vllm series from http://10.0.0.1:8000, http://10.0.0.2:8000")
	assert.NotContains(t, res.Message, "v0 0.6-0.7")
	assert.Contains(t, res.Message, "dup: vllm")
	assert.Contains(t, res.Message, "the page has 2 fault(s): vllm:num_requests_running{")
	assert.Contains(t, string(res.JSONDetails), `"pageFaults"`)
	assert.Contains(t, string(res.JSONDetails), `"reExporter":"vLLM production-stack router"`)
}

// TestContradictedHistogramGivesNoBucketAdvice: the buckets query advised sub-millisecond
// bounds from the contradicted TTFT histogram; now it gives no row for it, and the verdict's
// sentence says why.
func TestContradictedHistogramGivesNoBucketAdvice(t *testing.T) {
	inst, t0 := lowestBucketHistory(t)
	dr := runHistQuery(t, inst, t0.Add(5*time.Minute), t0.Add(10*time.Minute), time.Minute,
		map[string]any{"queryType": "buckets", "stages": []string{"ttft"}})
	require.NoError(t, dr.Error)
	rows := 0
	for _, f := range dr.Frames {
		rows += f.Rows()
	}
	assert.Zero(t, rows)
	assert.Contains(t, strings.Join(responseNotices(dr), "\n"), "every observation is in the lowest bucket (≤ 0.001) but the mean is 0.46")
}

// TestContradictedHistogramGivesNoGoodput: the interactive-chat profile's TTFT objective reads
// the contradicted histogram: goodput has no value at those steps (the buckets alone put every
// request under 3 s), and the verdict's sentence says why.
func TestContradictedHistogramGivesNoGoodput(t *testing.T) {
	inst, t0 := lowestBucketHistory(t)
	dr := runHistQuery(t, inst, t0.Add(5*time.Minute), t0.Add(10*time.Minute), time.Minute,
		map[string]any{"queryType": "goodput", "profile": "interactive-chat", "objectives": []string{"ttft-p99"}, "window": "5m"})
	require.NoError(t, dr.Error)
	f := fieldsBy(dr, "stat", "bound")
	for _, k := range []string{"goodput/lower", "goodput/upper"} {
		require.NotNil(t, f[k], "%s: %v", k, responseNotices(dr))
		v, _ := lastFloat(f[k])
		assert.True(t, math.IsNaN(v), "%s drawn: %v", k, v)
	}
	assert.Contains(t, strings.Join(responseNotices(dr), "\n"), "objective ttft-p99: ttft {target=\"a\"}: the histogram contradicts itself")
}

// TestContradictedHistogramGivesNoBurnRate: the burn rate of the TTFT objective read 0 (every
// request "good" by the buckets alone); over the contradicted histogram it has no value, nor
// has the status (an alert rule's no data, never ok), and the verdict's sentence says why.
func TestContradictedHistogramGivesNoBurnRate(t *testing.T) {
	inst, t0 := lowestBucketHistory(t)
	dr := runHistQuery(t, inst, t0.Add(5*time.Minute), t0.Add(10*time.Minute), time.Minute,
		map[string]any{"queryType": "burn_rate", "profile": "interactive-chat", "objectives": []string{"ttft-p99"}})
	require.NoError(t, dr.Error)
	var checked int
	for _, fr := range dr.Frames {
		if len(fr.Fields) < 2 {
			continue
		}
		v := fr.Fields[1]
		for i := 0; i < v.Len(); i++ {
			if p := v.At(i).(*float64); p != nil {
				t.Errorf("%s %v row %d: %v drawn", fr.Name, v.Labels, i, *p)
			}
			checked++
		}
	}
	assert.Positive(t, checked)
	assert.Contains(t, strings.Join(responseNotices(dr), "\n"), "objective interactive-chat/ttft-p99: ttft {target=\"a\"}: the histogram contradicts itself")
}
