package catalog

import (
	"context"
	"errors"
	"io"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/textparse"
	"github.com/prometheus/prometheus/promql"
	"github.com/prometheus/prometheus/promql/promqltest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// scrapeEvery is the scrape interval of pageLoad's series; pageScrapes the scrapes written.
const (
	scrapeEvery = 15 * time.Second
	pageScrapes = 20
)

// pageLoad turns a page into promqltest load lines for target job at instance, as the case
// pages are served (shared/cases/README.md): scraped every 15 s from 0 to 300 s, every counter,
// histogram bucket, _sum and _count multiplied by 1 + k at the k-th scrape (so it grows by its
// page value per scrape), gauges as they are.
func pageLoad(t *testing.T, path, job, instance string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	p := textparse.NewPromParser(b, labels.NewSymbolTable(), false)
	types := map[string]model.MetricType{}
	var out strings.Builder
	var ls labels.Labels
	for {
		et, err := p.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		require.NoError(t, err, path)
		switch et {
		case textparse.EntryType:
			name, typ := p.Type()
			types[string(name)] = typ
			continue
		case textparse.EntrySeries:
		default:
			continue
		}
		_, _, v := p.Series()
		p.Labels(&ls)
		name := ls.Get(model.MetricNameLabel)
		fam := name
		for _, suf := range []string{"_bucket", "_sum", "_count"} {
			if f, ok := strings.CutSuffix(name, suf); ok && types[f] == model.MetricTypeHistogram {
				fam = f
			}
		}
		var sel []string
		ls.Range(func(l labels.Label) {
			if l.Name != model.MetricNameLabel {
				sel = append(sel, l.Name+"="+strconv.Quote(l.Value))
			}
		})
		sel = append(sel, `job="`+job+`"`, `instance="`+instance+`"`)
		val := strconv.FormatFloat(v, 'g', -1, 64)
		series := val + "x" + strconv.Itoa(pageScrapes)
		if typ := types[fam]; typ == model.MetricTypeCounter || typ == model.MetricTypeHistogram {
			series = val + "+" + val + "x" + strconv.Itoa(pageScrapes)
		}
		out.WriteString("  " + name + "{" + strings.Join(sel, ",") + "} " + series + "\n")
	}
	out.WriteString(`  up{job="` + job + `",instance="` + instance + `"} 1x` + strconv.Itoa(pageScrapes) + "\n")
	return out.String()
}

// evalLoad evaluates expr at the last scrape of load.
func evalLoad(t *testing.T, load, expr string) promql.Vector {
	t.Helper()
	st := promqltest.LoadedStorage(t, "load 15s\n"+load)
	t.Cleanup(func() { _ = st.Close() })
	ng := promqltest.NewTestEngine(t, false, 0, 1_000_000)
	q, err := ng.NewInstantQuery(context.Background(), st, nil, expr, time.Unix(0, 0).Add(pageScrapes*scrapeEvery))
	require.NoError(t, err, expr)
	res := q.Exec(context.Background())
	require.NoError(t, res.Err, expr)
	v, err := res.Vector()
	require.NoError(t, err)
	return v
}

// one is the single value of v (it must hold exactly one sample).
func one(t *testing.T, v promql.Vector) float64 {
	t.Helper()
	require.Len(t, v, 1)
	return v[0].F
}

// TestTGISDictReprMethodMatched: the TGIS page labels its batch histograms with the Python dict
// repr method="{'method': 'prefill'}". By hand from the page (grows by its values every 15 s):
// prefill batches 215 per scrape → 215 / 15 = 14.333…/s, mean 10.75 / 215 = 0.05 s; decode
// forward passes 1000 per scrape → 66.667/s, mean 25 / 1000 = 0.025 s (the prefill forward
// passes, 215 per scrape, are not decode steps and stay out of itl).
func TestTGISDictReprMethodMatched(t *testing.T) {
	const path = "testdata/tgis-dict-repr-method.prom"
	names, _ := pageLabels(t, path)
	assert.Equal(t, EngineTGI, Detect(names).Engine)
	load := pageLoad(t, path, "tgis", "10.0.0.5:3000")
	// The plain matcher the catalogue used matched nothing.
	assert.Empty(t, evalLoad(t, load, `tgi_batch_inference_duration_count{method="prefill"}`))

	byTarget := Scope{By: []string{"target"}}
	hq, err := HistogramPromQL(PrefillTime, byTarget, 5*time.Minute)
	require.NoError(t, err)
	assert.InDelta(t, 215.0/15, one(t, evalLoad(t, load, hq.Count)), 1e-9)
	mean, err := MeanPromQL(PrefillTime, byTarget, 5*time.Minute)
	require.NoError(t, err)
	assert.InDelta(t, 0.05, one(t, evalLoad(t, load, mean)), 1e-12)
	b := roundAll(valueBy(evalLoad(t, load, hq.Buckets), "le"))
	assert.Equal(t, map[string]float64{"le=0.05;": round9(100.0 / 15), "le=0.1;": round9(200.0 / 15), "le=+Inf;": round9(215.0 / 15)}, b)

	iq, err := HistogramPromQL(ITL, byTarget, 5*time.Minute)
	require.NoError(t, err)
	assert.InDelta(t, 1000.0/15, one(t, evalLoad(t, load, iq.Count)), 1e-9)
	mean, err = MeanPromQL(ITL, byTarget, 5*time.Minute)
	require.NoError(t, err)
	assert.InDelta(t, 0.025, one(t, evalLoad(t, load, mean)), 1e-12)

	// Engines that write the plain value still match.
	plain := `  tgi_batch_inference_duration_count{job="tgi",instance="h:1",method="prefill"} 0+30x20` + "\n"
	assert.InDelta(t, 2.0, one(t, evalLoad(t, plain, hq.Count)), 1e-9)
}

func round9(v float64) float64 { return float64(int64(v*1e9+0.5)) / 1e9 }

// routerLoad: engines a (http://10.0.0.1:8000, running 3, waiting 1) and b
// (http://10.0.0.2:8000, running 2, waiting 0), and the production-stack router r in front of
// both, re-exporting the four gauges with server="<engine URL>".
func routerLoad(t *testing.T) string {
	return pageLoad(t, "testdata/vllm-v1-engine-running3-waiting1.prom", "a", "10.0.0.1:8000") +
		pageLoad(t, "testdata/vllm-v1-engine-running2-waiting0.prom", "b", "10.0.0.2:8000") +
		pageLoad(t, "testdata/vllm-production-stack-router.prom", "r", "10.0.0.9:8001")
}

// TestReExporterCountedOnce: truth by hand is running 3 + 2 = 5 and waiting 1 + 0 = 1. Summed
// naively over the three targets they read 10 and 2. With the targets' URLs as
// Scope.Upstreams, the router's copies of a and b are left out: 5 and 1. With only a and the
// router configured, the router's copy of b is the only view of b and is kept: 3 + 2 = 5.
func TestReExporterCountedOnce(t *testing.T) {
	names, _ := pageLabels(t, "testdata/vllm-production-stack-router.prom")
	d := Detect(names)
	assert.Equal(t, EngineVLLM, d.Engine)
	assert.Equal(t, ReExporterProductionStack, d.ReExporter)
	assert.Empty(t, d.Generation, "not V0: the router's swap and hit-rate gauges say nothing of an engine release")
	assert.Empty(t, d.Version)
	engineNames, _ := pageLabels(t, "testdata/vllm-v1-engine-running3-waiting1.prom")
	assert.Empty(t, Detect(engineNames).ReExporter)
	smgNames, _ := pageLabels(t, "testdata/sglang-reexported-by-smg-router-underscored-pr813.prom")
	assert.Equal(t, ReExporterSMG, Detect(smgNames).ReExporter)

	load := routerLoad(t)
	sum := func(s Signal, sc Scope) float64 {
		q, err := GaugePromQL(s, sc, "sum")
		require.NoError(t, err)
		return one(t, evalLoad(t, load, q))
	}
	assert.Equal(t, 10.0, sum(RequestsRunning, Scope{}), "the fault: each engine counted twice")
	assert.Equal(t, 2.0, sum(RequestsWaiting, Scope{}))
	all := Scope{Upstreams: []string{"http://10.0.0.1:8000/metrics", "http://10.0.0.2:8000/metrics", "http://10.0.0.9:8001/metrics"}}
	assert.Equal(t, 5.0, sum(RequestsRunning, all))
	assert.Equal(t, 1.0, sum(RequestsWaiting, all))
	onlyA := Scope{Targets: []string{"a", "r"}, Upstreams: []string{"10.0.0.1:8000", "http://10.0.0.9:8001/metrics"}}
	assert.Equal(t, 5.0, sum(RequestsRunning, onlyA))
	assert.Equal(t, 1.0, sum(RequestsWaiting, onlyA))

	q, err := ReExportPromQL(Scope{})
	require.NoError(t, err)
	assert.Equal(t, map[string][]string{"r": {"http://10.0.0.1:8000", "http://10.0.0.2:8000"}}, ReExporters(vectorToModel(evalLoad(t, load, q))))
	smg := pageLoad(t, "testdata/sglang-reexported-by-smg-router-underscored-pr813.prom", "smg", "10.0.0.7:30000")
	assert.Equal(t, map[string][]string{"smg": {"grpc://127.0.0.1:8001"}}, ReExporters(vectorToModel(evalLoad(t, smg, q))))

	assert.Equal(t, "10.0.0.1:8000", UpstreamHost("http://user@10.0.0.1:8000/metrics?x=1"))
	assert.Equal(t, "target r is a re-exporter (vLLM production-stack router) of http://10.0.0.1:8000, http://10.0.0.2:8000: its copies of engines that are also targets are left out of every aggregate (each engine counts once, from its own page); copies of engines that are not targets are counted under r",
		ReExporterSentence("r", ReExporterProductionStack, []string{"http://10.0.0.1:8000", "http://10.0.0.2:8000"}))
}

// vectorToModel converts a promql.Vector to the model.Vector a source.Querier returns.
func vectorToModel(v promql.Vector) model.Vector {
	out := make(model.Vector, 0, len(v))
	for _, s := range v {
		m := model.Metric{}
		s.Metric.Range(func(l labels.Label) { m[model.LabelName(l.Name)] = model.LabelValue(l.Value) })
		out = append(out, &model.Sample{Metric: m, Value: model.SampleValue(s.F), Timestamp: model.Time(s.T)})
	}
	return out
}

// TestFreshGaugesLeaveStoppedSeries: a target relabelled at 5 m (zone 1 → 2) in a store that got
// no staleness marker (a remote Prometheus restarted with the new relabelling). At 7 m the zone-1
// series' last sample (5 m) is inside PromQL's 5-minute lookback: the plain sum reads 3 + 3 = 6.
// With Scope.Fresh = 90 s (the last sample must be within 1.5 scrape intervals of 1 m) it reads
// 3, the truth. A staleness marker is still honoured.
func TestFreshGaugesLeaveStoppedSeries(t *testing.T) {
	const load = `
load 1m
  vllm:num_requests_running{job="a",zone="1",engine="0",model_name="m"} 3x5
  vllm:num_requests_running{job="a",zone="2",engine="0",model_name="m"} _x5 3x5
  vllm:num_requests_running{job="m",engine="0",model_name="m"} 2x3 stale
`
	at := func(expr string, ts time.Duration) float64 {
		st := promqltest.LoadedStorage(t, load)
		defer st.Close()
		ng := promqltest.NewTestEngine(t, false, 0, 1_000_000)
		q, err := ng.NewInstantQuery(context.Background(), st, nil, expr, time.Unix(0, 0).Add(ts))
		require.NoError(t, err, expr)
		res := q.Exec(context.Background())
		require.NoError(t, res.Err, expr)
		v, err := res.Vector()
		require.NoError(t, err)
		require.Len(t, v, 1, expr)
		return v[0].F
	}
	plain, err := GaugePromQL(RequestsRunning, Scope{}, "sum")
	require.NoError(t, err)
	fresh, err := GaugePromQL(RequestsRunning, Scope{Fresh: 90 * time.Second}, "sum")
	require.NoError(t, err)
	assert.Contains(t, fresh, `(vllm:num_requests_running and last_over_time(vllm:num_requests_running[1m30s]))`)
	assert.Equal(t, 6.0, at(plain, 7*time.Minute), "the fault")
	assert.Equal(t, 3.0, at(fresh, 7*time.Minute))
	assert.Equal(t, 3.0, at(fresh, 4*time.Minute), "before the switch: zone 1 alone")
	// The marked series m (2 until 3 m, then a staleness marker at 4 m) is out of both at 4 m 30 s.
	assert.Equal(t, 3.0, at(plain, 4*time.Minute+30*time.Second))
	assert.Equal(t, 3.0, at(fresh, 4*time.Minute+30*time.Second))
	// Counters and histograms are untouched: a stopped series adds only what it counted.
	c, err := CounterRatePromQL(GenerationTokens, Scope{Fresh: 90 * time.Second}, 5*time.Minute)
	require.NoError(t, err)
	assert.NotContains(t, c, "last_over_time")
}

// TestLlamaCppMeanLeavesOutNonFinite: two llama.cpp servers, 100 prompt tokens per 15 s
// scrape each; a spends 2 s per scrape on them (0.02 s per token), b 6 s (0.06 s per token) but
// its last seconds sample is NaN. By hand: the mean over both without b's spoilt window is a's,
// 2 / 100 = 0.02 s per token (not NaN, and not 2 / 200 = 0.01 with b's tokens kept); before b's
// NaN (at 285 s) the mean is (2 + 6) / 200 = 0.04.
func TestLlamaCppMeanLeavesOutNonFinite(t *testing.T) {
	const load = `  llamacpp:prompt_seconds_total{job="a",instance="a:8080"} 0+2x20
  llamacpp:prompt_tokens_total{job="a",instance="a:8080"} 0+100x20
  llamacpp:prompt_seconds_total{job="b",instance="b:8080"} 0+6x19 NaN
  llamacpp:prompt_tokens_total{job="b",instance="b:8080"} 0+100x20
`
	q, err := MeanPromQL(PrefillTime, Scope{}, time.Minute)
	require.NoError(t, err)
	assert.InDelta(t, 0.02, one(t, evalLoad(t, load, q)), 1e-12)
	st := promqltest.LoadedStorage(t, "load 15s\n"+load)
	defer st.Close()
	ng := promqltest.NewTestEngine(t, false, 0, 1_000_000)
	iq, err := ng.NewInstantQuery(context.Background(), st, nil, q, time.Unix(270, 0))
	require.NoError(t, err)
	v, err := iq.Exec(context.Background()).Vector()
	require.NoError(t, err)
	require.Len(t, v, 1)
	assert.InDelta(t, 0.04, v[0].F, 1e-12)
}

// TestTRTLLMUndefinedIsNoModelOrReason: trtllm-serve counts 15 finished requests per 15 s scrape
// with model_name and finished_reason "undefined", and 30 with model "llama" and reason "stop".
// By model and finished_reason: 30 / 15 = 2/s for llama/stop, and 15 / 15 = 1/s in the group with
// neither label, never a model or a reason named "undefined".
func TestTRTLLMUndefinedIsNoModelOrReason(t *testing.T) {
	const load = `  trtllm_request_success_total{job="t",instance="t:8000",model_name="undefined",finished_reason="undefined"} 0+15x20
  trtllm_request_success_total{job="t",instance="t:8000",model_name="llama",finished_reason="stop"} 0+30x20
`
	q, err := CounterRatePromQL(RequestsFinished, Scope{By: []string{"model"}}, time.Minute, "finished_reason")
	require.NoError(t, err)
	got := roundAll(valueBy(evalLoad(t, load, q), "model_name", "finished_reason"))
	assert.Equal(t, map[string]float64{"model_name=llama;finished_reason=stop;": 2, "model_name=;finished_reason=;": 1}, got)
	assert.Contains(t, placeholderValues[EngineTRTLLM], "undefined")
	assert.NotContains(t, placeholderValues[EngineVLLM], "undefined")
	assert.Equal(t, []string{"llama"}, WithoutPlaceholders([]string{"", "llama", "undefined"}))
}

// TestSGLangPhysicalKV: an SGLang 0.5.11+ page (s) with 300 used, 200 evictable tokens of 1000,
// and token_usage 0.3 (evictable counted as free); an older SGLang page (o) with token_usage 0.3
// alone. By hand: s's KV usage is (300 + 200) / 1000 = 0.5, o's 0.3, their average 0.4. s's
// availability is exported (a ratio of its own counts), o's approximate.
func TestSGLangPhysicalKV(t *testing.T) {
	const load = `  sglang:kv_used_tokens{job="s",instance="s:30000",model_name="g",tp_rank="0"} 300x20
  sglang:kv_evictable_tokens{job="s",instance="s:30000",model_name="g",tp_rank="0"} 200x20
  sglang:max_total_num_tokens{job="s",instance="s:30000",model_name="g",tp_rank="0"} 1000x20
  sglang:token_usage{job="s",instance="s:30000",model_name="g",tp_rank="0"} 0.3x20
  sglang:token_usage{job="o",instance="o:30000",model_name="g"} 0.3x20
`
	q, err := GaugePromQL(KVCacheUsage, Scope{By: []string{"target"}}, "avg")
	require.NoError(t, err)
	got := roundAll(valueBy(evalLoad(t, load, q), "job"))
	assert.Equal(t, map[string]float64{"job=s;": 0.5, "job=o;": 0.3}, got)
	q, err = GaugePromQL(KVCacheUsage, Scope{}, "avg")
	require.NoError(t, err)
	assert.InDelta(t, 0.4, one(t, evalLoad(t, load, q)), 1e-12)

	d := Detection{Engine: EngineSGLang, Version: "0.5+"}
	s := Assess(d, []string{"sglang:kv_used_tokens", "sglang:kv_evictable_tokens", "sglang:max_total_num_tokens", "sglang:token_usage"}, KVCacheUsage)
	assert.Equal(t, StateExported, s.State)
	assert.Equal(t, notePhysicalKV, s.Note)
	o := Assess(d, []string{"sglang:token_usage"}, KVCacheUsage)
	assert.Equal(t, StateApproximate, o.State)
	assert.Equal(t, "sglang:token_usage", o.Metrics[0].Name)
	part := Assess(d, []string{"sglang:kv_used_tokens", "sglang:token_usage"}, KVCacheUsage)
	assert.Equal(t, StateApproximate, part.State, "without the capacity, token_usage is read")
	assert.True(t, Stores("sglang:kv_evictable_tokens") && Stores("sglang:max_total_num_tokens"))
}

// TestIdleSentenceOnlyWhenMatched: the TGIS page's prefill histogram under the old plain matcher
// matched no series, so its growth query had no sample for the target: that is not "no
// requests" (its count grew by 215 per scrape). A models filter matching nothing says so; a
// matched histogram whose count stayed flat is "no requests … did not grow".
func TestIdleSentenceOnlyWhenMatched(t *testing.T) {
	load := pageLoad(t, "testdata/tgis-dict-repr-method.prom", "tgis", "10.0.0.5:3000")
	// The old selector: no sample for the target at all (matched = false).
	assert.Empty(t, evalLoad(t, load, `sum by (job) (rate(tgi_batch_inference_duration_count{method="prefill"}[5m]))`))
	assert.Equal(t, "target tgis: its prefill_time families are stored, but none of their series carries the labels the catalogue selects in the queried range: no data, which says nothing about its requests",
		IdleSentence("tgis", PrefillTime, KindHistogram, false, nil))
	// A models filter naming a model the page does not serve.
	hq, err := HistogramPromQL(PrefillTime, Scope{Models: []string{"granite"}, By: []string{"target"}}, 5*time.Minute)
	require.NoError(t, err)
	assert.Empty(t, evalLoad(t, load, hq.Count))
	assert.Equal(t, "target tgis: the models filter (granite) matched none of its prefill_time series in the queried range: no data for it, which says nothing about its requests",
		IdleSentence("tgis", PrefillTime, KindHistogram, false, []string{"granite"}))
	// A histogram that did not grow: present with 0.
	flat := `  tgi_batch_inference_duration_count{job="f",instance="f:1",method="prefill"} 7x20` + "\n"
	hq, err = HistogramPromQL(PrefillTime, Scope{By: []string{"target"}}, 5*time.Minute)
	require.NoError(t, err)
	assert.Equal(t, 0.0, one(t, evalLoad(t, flat, hq.Count)))
	assert.Equal(t, "target f: no requests in the queried range for prefill_time (its histogram's count did not grow): no data, not zero",
		IdleSentence("f", PrefillTime, KindHistogram, true, nil))
}
