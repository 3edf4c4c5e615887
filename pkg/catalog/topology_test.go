package catalog

import (
	"context"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
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

// rankLike reports whether a label names a parallel rank or a process: every `*_rank`, `pid`,
// and vLLM's `engine`.
func rankLike(e Engine, l string) bool {
	return strings.HasSuffix(l, "_rank") || l == "pid" || (e == EngineVLLM && l == "engine")
}

// pageLabels parses a page with Prometheus's text parser and returns its sample names and the
// distinct label names of its series (metric name excluded), up to the first parse error.
func pageLabels(t *testing.T, path string) (names []string, labelNames map[string]bool) {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	p := textparse.NewPromParser(b, labels.NewSymbolTable(), false)
	labelNames = map[string]bool{}
	seen := map[string]bool{}
	var ls labels.Labels
	for {
		et, err := p.Next()
		if err != nil {
			break // io.EOF, or the literal "..." of an elided page
		}
		if et != textparse.EntrySeries {
			continue
		}
		p.Labels(&ls)
		ls.Range(func(l labels.Label) {
			if l.Name == model.MetricNameLabel {
				if !seen[l.Value] {
					seen[l.Value] = true
					names = append(names, l.Value)
				}
				return
			}
			labelNames[l.Name] = true
		})
	}
	return names, labelNames
}

func roleOf(rs []RankLabel, l string) LabelRole {
	for _, r := range rs {
		if r.Label == l {
			return r.Role
		}
	}
	return ""
}

// TestRankLabelsOnPages checks the catalogue's partition and replica labels against the pages
// that carry them: every rank or process label on a page is one the catalogue knows for the
// engine and version detected on that page, with the role the engine gives it.
func TestRankLabelsOnPages(t *testing.T) {
	cases := []struct {
		page string
		want map[string]LabelRole // every rank-like label the page carries
	}{
		{"testdata/vllm-0.11-v1-qwen05b-created-series.prom", map[string]LabelRole{"engine": Partition}},
		{"testdata/vllm-0.8-v0-multiproc-qwen3-0.6b-under-load-decommented.prom", map[string]LabelRole{}},
		{"testdata/cases/vllm-kv-split-by-pid.prom", map[string]LabelRole{"engine": Partition, "pid": ProcessSplit}},
		{"testdata/cases/vllm-negative-kv.prom", map[string]LabelRole{"engine": Partition}},
		{"testdata/sglang-0.4-llama8b-heavy-load-queue2826-docs.prom", map[string]LabelRole{}},
		{"testdata/sglang-0.5.1-pp_rank-issue13485.prom", map[string]LabelRole{"pp_rank": Replica, "tp_rank": Replica}},
		{"testdata/sglang-reexported-by-smg-router-underscored-pr813.prom", map[string]LabelRole{"pp_rank": Replica, "tp_rank": Replica, "moe_ep_rank": Replica}},
		{"testdata/cases/sglang-cp8-replicated-gauges.prom", map[string]LabelRole{"pp_rank": Replica, "tp_rank": Replica}},
		{"testdata/tgi-unknown-datadog-fixture-full-under-load.prom", map[string]LabelRole{}},
	}
	for _, c := range cases {
		t.Run(filepath.Base(c.page), func(t *testing.T) {
			names, ls := pageLabels(t, c.page)
			d := Detect(names)
			got := map[string]LabelRole{}
			for l := range ls {
				if rankLike(d.Engine, l) {
					got[l] = roleOf(rankLabelsFor(d), l)
				}
			}
			assert.Equal(t, c.want, got, "engine %s version %q", d.Engine, d.Version)
		})
	}
}

// TestRankLabelsOnCorpus runs the same check over every page of the shared corpus (skipped
// when it is absent): no page carries a rank or process label the catalogue does not know for
// its detected engine and version.
func TestRankLabelsOnCorpus(t *testing.T) {
	for _, f := range corpusFiles(t) {
		t.Run(filepath.Base(f), func(t *testing.T) {
			names, ls := pageLabels(t, f)
			d := Detect(names)
			for l := range ls {
				if rankLike(d.Engine, l) {
					assert.NotEmpty(t, roleOf(rankLabelsFor(d), l), "%s (%s %q) carries %s, unknown to the catalogue", filepath.Base(f), d.Engine, d.Version, l)
				}
			}
		})
	}
}

func TestRankLabelsByVersion(t *testing.T) {
	// vLLM V0 and 0.8 V1 predate the engine label; 0.9+ carries it; pid from 0.10.
	assert.Empty(t, rankLabelsFor(Detection{Engine: EngineVLLM, Generation: "v0", Version: "0.6-0.7"}))
	assert.Empty(t, rankLabelsFor(Detection{Engine: EngineVLLM, Generation: "v1", Version: "0.8"}))
	labelsOf := func(rs []RankLabel) []string {
		var out []string
		for _, r := range rs {
			out = append(out, r.Label)
		}
		sort.Strings(out)
		return out
	}
	assert.Equal(t, []string{"engine"}, labelsOf(rankLabelsFor(Detection{Engine: EngineVLLM, Generation: "v1", Version: "0.9"})))
	assert.Equal(t, []string{"engine", "pid"}, labelsOf(rankLabelsFor(Detection{Engine: EngineVLLM, Version: "0.11-0.12"})))
	assert.Equal(t, []string{"engine", "pid"}, labelsOf(rankLabelsFor(Detection{Engine: EngineVLLM})))
	assert.Empty(t, rankLabelsFor(Detection{Engine: EngineSGLang, Version: "0.3"}))
	assert.Equal(t, []string{"attn_cp_rank", "attn_tp_rank", "cp_rank", "dp_rank", "moe_ep_rank", "pp_rank", "tp_rank"},
		labelsOf(rankLabelsFor(Detection{Engine: EngineSGLang, Version: "0.5+"})))
	for _, e := range []Engine{EngineTGI, EngineLlamaCpp, EngineTRTLLM, EngineTriton, EngineDCGM, EngineInferscopeGPU} {
		assert.Empty(t, rankLabels[e], e)
	}
	// Replicas collapse for every kind; a process split only for gauges.
	assert.Equal(t, []string{"pid"}, collapseLabels(EngineVLLM, true))
	assert.Empty(t, collapseLabels(EngineVLLM, false))
	assert.Equal(t, []string{"tp_rank", "pp_rank", "cp_rank", "attn_tp_rank", "attn_cp_rank", "moe_ep_rank"}, collapseLabels(EngineSGLang, false))
}

// topologyLoad: samples every minute from 0 to 10m.
//   - p (vLLM, --api-server-count 4): the case page's KV gauge split by pid, one process
//     holding 0.653; its generation counter split by pid as per-process shares.
//   - q (vLLM, two data-parallel engines): KV 0.4 and 0.6, running 3 and 4, counters 60/min and
//     120/min.
//   - n (vLLM): the case page's engine 3 reports KV −0.39, engine 0 0.42; engine 1 NaN and
//     engine 2 +Inf running requests.
//   - s (SGLang, context parallel 8): 8 tp_rank copies of running 5, waiting 2, token usage 0.5,
//     a counter of 30/min and a TTFT histogram.
//   - u (SGLang, the same scheduler without --enable-metrics-for-all-schedulers): one series
//     per family with no rank labels, the same numbers.
//   - d (SGLang, dp 2 × tp 2): dp_rank 0 runs 3 (usage 0.2), dp_rank 1 runs 5 (usage 0.6).
//   - g (SGLang, dp 2 × pp 4): every pipeline stage of a dp rank schedules the same requests
//     (see rankLabels): dp_rank 0 runs 3 and queues 1 (usage 0.2), dp_rank 1 runs 5 and
//     queues 2 (usage 0.6), each reported by all four stages.
var topologyLoad = `
load 1m
  vllm:kv_cache_usage_perc{job="p",engine="0",model_name="m",pid="301"} 0x10
  vllm:kv_cache_usage_perc{job="p",engine="0",model_name="m",pid="302"} 0x10
  vllm:kv_cache_usage_perc{job="p",engine="0",model_name="m",pid="303"} 0.6530455880475035x10
  vllm:kv_cache_usage_perc{job="p",engine="0",model_name="m",pid="304"} 0x10
  vllm:generation_tokens_total{job="p",engine="0",model_name="m",pid="301"} 0+60x10
  vllm:generation_tokens_total{job="p",engine="0",model_name="m",pid="302"} 0+120x10
  vllm:kv_cache_usage_perc{job="q",engine="0",model_name="m"} 0.4x10
  vllm:kv_cache_usage_perc{job="q",engine="1",model_name="m"} 0.6x10
  vllm:num_requests_running{job="q",engine="0",model_name="m"} 3x10
  vllm:num_requests_running{job="q",engine="1",model_name="m"} 4x10
  vllm:generation_tokens_total{job="q",engine="0",model_name="m"} 0+60x10
  vllm:generation_tokens_total{job="q",engine="1",model_name="m"} 0+120x10
  vllm:kv_cache_usage_perc{job="n",engine="0",model_name="m"} 0.42x10
  vllm:kv_cache_usage_perc{job="n",engine="3",model_name="m"} -0.3875395987328405x10
  vllm:num_requests_running{job="n",engine="0",model_name="m"} 4x10
  vllm:num_requests_running{job="n",engine="1",model_name="m"} NaN NaN NaN NaN NaN NaN NaN NaN NaN NaN NaN
  vllm:num_requests_running{job="n",engine="2",model_name="m"} Inf Inf Inf Inf Inf Inf Inf Inf Inf Inf Inf
` + sglangReplicas + `  sglang:num_running_reqs{job="u",engine_type="unified",model_name="g"} 5x10
  sglang:num_queue_reqs{job="u",engine_type="unified",model_name="g"} 2x10
  sglang:token_usage{job="u",engine_type="unified",model_name="g"} 0.5x10
  sglang:generation_tokens_total{job="u",engine_type="unified",model_name="g"} 0+30x10
  sglang:time_to_first_token_seconds_bucket{job="u",model_name="g",le="0.5"} 0+6x10
  sglang:time_to_first_token_seconds_bucket{job="u",model_name="g",le="+Inf"} 0+12x10
  sglang:num_running_reqs{job="d",model_name="g",dp_rank="0",tp_rank="0"} 3x10
  sglang:num_running_reqs{job="d",model_name="g",dp_rank="0",tp_rank="1"} 3x10
  sglang:num_running_reqs{job="d",model_name="g",dp_rank="1",tp_rank="0"} 5x10
  sglang:num_running_reqs{job="d",model_name="g",dp_rank="1",tp_rank="1"} 5x10
  sglang:token_usage{job="d",model_name="g",dp_rank="0",tp_rank="0"} 0.2x10
  sglang:token_usage{job="d",model_name="g",dp_rank="0",tp_rank="1"} 0.2x10
  sglang:token_usage{job="d",model_name="g",dp_rank="1",tp_rank="0"} 0.6x10
  sglang:token_usage{job="d",model_name="g",dp_rank="1",tp_rank="1"} 0.6x10
` + sglangStages

// sglangStages is target g: dp 2 × pp 4, each stage repeating its dp rank's numbers.
var sglangStages = func() string {
	var b strings.Builder
	for dp, v := range [][3]string{{"3", "1", "0.2"}, {"5", "2", "0.6"}} {
		for pp := 0; pp < 4; pp++ {
			l := `{job="g",engine_type="unified",model_name="g",dp_rank="` + string(rune('0'+dp)) + `",pp_rank="` + string(rune('0'+pp)) + `",tp_rank="0"}`
			b.WriteString("  sglang:num_running_reqs" + l + " " + v[0] + "x10\n")
			b.WriteString("  sglang:num_queue_reqs" + l + " " + v[1] + "x10\n")
			b.WriteString("  sglang:token_usage" + l + " " + v[2] + "x10\n")
		}
	}
	return b.String()
}()

// sglangReplicas is the cp8 case page's shape: eight tp_rank copies of each family.
var sglangReplicas = func() string {
	var b strings.Builder
	for r := 0; r < 8; r++ {
		l := `{job="s",engine_type="unified",model_name="g",pp_rank="0",tp_rank="` + string(rune('0'+r)) + `"`
		b.WriteString("  sglang:num_running_reqs" + l + "} 5x10\n")
		b.WriteString("  sglang:num_queue_reqs" + l + "} 2x10\n")
		b.WriteString("  sglang:token_usage" + l + "} 0.5x10\n")
		b.WriteString("  sglang:generation_tokens_total" + l + "} 0+30x10\n")
		b.WriteString("  sglang:time_to_first_token_seconds_bucket" + l + `,le="0.5"} 0+6x10` + "\n")
		b.WriteString("  sglang:time_to_first_token_seconds_bucket" + l + `,le="+Inf"} 0+12x10` + "\n")
	}
	return b.String()
}()

func evalTopology(t *testing.T, expr string) promql.Vector {
	t.Helper()
	st := promqltest.LoadedStorage(t, topologyLoad)
	t.Cleanup(func() { _ = st.Close() })
	ng := promqltest.NewTestEngine(t, false, 0, 1_000_000)
	q, err := ng.NewInstantQuery(context.Background(), st, nil, expr, time.Unix(600, 0))
	require.NoError(t, err, expr)
	res := q.Exec(context.Background())
	require.NoError(t, res.Err, expr)
	v, err := res.Vector()
	require.NoError(t, err)
	return v
}

func TestAggregationKnowsTheEngines(t *testing.T) {
	byTarget := Scope{By: []string{"target"}}
	gauge := func(s Signal) map[string]float64 {
		q, err := GaugePromQL(s, byTarget, PartitionAgg(s))
		require.NoError(t, err)
		return valueBy(evalTopology(t, q), "job")
	}
	kv := gauge(KVCacheUsage)
	// pid split: the one value, not the mean of 0.653 and three zeros (0.163).
	assert.InDelta(t, 0.6530455880475035, kv["job=p;"], 1e-12)
	// data-parallel engines: averaged.
	assert.InDelta(t, 0.5, kv["job=q;"], 1e-12)
	// the negative engine is left out: 0.42, not (0.42 − 0.39) / 2.
	assert.InDelta(t, 0.42, kv["job=n;"], 1e-12)
	// replicas counted once, with or without the rank labels; dp ranks averaged.
	assert.InDelta(t, 0.5, kv["job=s;"], 1e-12)
	assert.InDelta(t, 0.5, kv["job=u;"], 1e-12)
	assert.InDelta(t, 0.4, kv["job=d;"], 1e-12)

	run := gauge(RequestsRunning)
	assert.Equal(t, 7.0, run["job=q;"]) // engines add up
	assert.Equal(t, 4.0, run["job=n;"]) // NaN and +Inf left out
	assert.Equal(t, 5.0, run["job=s;"]) // not 40
	assert.Equal(t, 5.0, run["job=u;"])
	assert.Equal(t, 8.0, run["job=d;"]) // dp ranks add up, tp copies count once
	assert.Equal(t, 8.0, run["job=g;"]) // dp ranks add up, pipeline stages count once (not 32)
	assert.InDelta(t, 0.4, kv["job=g;"], 1e-12)
	wait := gauge(RequestsWaiting)
	assert.Equal(t, 2.0, wait["job=s;"]) // not 16
	assert.Equal(t, 2.0, wait["job=u;"])
	assert.Equal(t, 3.0, wait["job=g;"]) // not 12

	// Counters: per-process shares add up (3 tokens/s); engines add up; replicas count once.
	c, err := CounterRatePromQL(GenerationTokens, byTarget, 5*time.Minute)
	require.NoError(t, err)
	gen := valueBy(evalTopology(t, c), "job")
	assert.InDelta(t, 3.0, gen["job=p;"], 1e-9)
	assert.InDelta(t, 3.0, gen["job=q;"], 1e-9)
	assert.InDelta(t, 0.5, gen["job=s;"], 1e-9)
	assert.InDelta(t, 0.5, gen["job=u;"], 1e-9)

	// Histograms: replicas count once, the bucket rates match the unreplicated shape.
	hq, err := HistogramPromQL(TTFT, byTarget, 5*time.Minute)
	require.NoError(t, err)
	b := roundAll(valueBy(evalTopology(t, hq.Buckets), "job", "le"))
	assert.Equal(t, 0.1, b["job=s;le=0.5;"])
	assert.Equal(t, 0.2, b["job=s;le=+Inf;"])
	assert.Equal(t, b["job=u;le=0.5;"], b["job=s;le=0.5;"])
	assert.Equal(t, b["job=u;le=+Inf;"], b["job=s;le=+Inf;"])
}

func TestImpossiblePromQL(t *testing.T) {
	q, err := ImpossiblePromQL(KVCacheUsage, Scope{})
	require.NoError(t, err)
	v := evalTopology(t, q)
	require.Len(t, v, 1, "%v", v)
	assert.Equal(t, "n", v[0].Metric.Get("job"))
	assert.Equal(t, "3", v[0].Metric.Get("engine"))
	assert.Equal(t, -0.3875395987328405, v[0].F)

	q, err = ImpossiblePromQL(RequestsRunning, Scope{Targets: []string{"n"}})
	require.NoError(t, err)
	got := map[string]float64{}
	for _, s := range evalTopology(t, q) {
		got[s.Metric.Get("engine")] = s.F
	}
	require.Len(t, got, 2, "%v", got)
	assert.True(t, math.IsNaN(got["1"]))
	assert.True(t, math.IsInf(got["2"], 1))

	// A clean signal selects nothing.
	q, err = ImpossiblePromQL(RequestsWaiting, Scope{})
	require.NoError(t, err)
	assert.Empty(t, evalTopology(t, q))

	lo, hi, ok := ValueRange(KVCacheUsage)
	assert.True(t, ok)
	assert.Equal(t, [2]float64{0, 1}, [2]float64{lo, hi})
	lo, hi, ok = ValueRange(RequestsWaiting)
	assert.True(t, ok)
	assert.Equal(t, 0.0, lo)
	assert.True(t, math.IsInf(hi, 1))
	_, _, ok = ValueRange(TTFT)
	assert.False(t, ok)
}

// backwardsLoad: target a's generation counter (two engines) climbs 60/min; engine 1 goes
// back from 360 to 300 at 6m (not a restart) and climbs again.
const backwardsLoad = `
load 1m
  vllm:generation_tokens_total{job="a",engine="0",model_name="m"} 0+60x20
  vllm:generation_tokens_total{job="a",engine="1",model_name="m"} 0 60 120 180 240 300 360 300 360 420 480 540 600 660 720 780 840 900 960 1020 1080
  sglang:generation_tokens_total{job="s",name="g"} 0+60x20
`

func TestCounterScanAndSeriesRate(t *testing.T) {
	sels, err := CounterScanSelectors(GenerationTokens, Scope{Targets: []string{"a"}})
	require.NoError(t, err)
	require.Len(t, sels, 1)
	assert.True(t, strings.HasPrefix(sels[0], `{__name__=~"vllm:generation_tokens_total|ray_vllm:generation_tokens_total|sglang:generation_tokens_total|`), sels[0])
	assert.True(t, strings.HasSuffix(sels[0], `, job=~"a"}`), sels[0])

	st := promqltest.LoadedStorage(t, backwardsLoad)
	t.Cleanup(func() { _ = st.Close() })
	ng := promqltest.NewTestEngine(t, false, 0, 1_000_000)
	eval := func(expr string, at time.Time) promql.Vector {
		q, err := ng.NewInstantQuery(context.Background(), st, nil, expr, at)
		require.NoError(t, err, expr)
		res := q.Exec(context.Background())
		require.NoError(t, res.Err, expr)
		v, err := res.Vector()
		require.NoError(t, err)
		return v
	}
	// Candidates: the series whose resets() over the range is above zero, name kept.
	cands := eval(sels[0]+" and (resets("+sels[0]+"[20m]) > 0)", time.Unix(1200, 0))
	require.Len(t, cands, 1)
	assert.Equal(t, "vllm:generation_tokens_total", cands[0].Metric.Get("__name__"))
	assert.Equal(t, "1", cands[0].Metric.Get("engine"))

	// The one series' rate, grouped like the aggregate: at 8m (window 5m holds the step) the
	// aggregate is 1 token/s (engine 0) + engine 1's rate inflated by the false restart.
	c, err := CounterRatePromQL(GenerationTokens, Scope{By: []string{"target"}}, 5*time.Minute)
	require.NoError(t, err)
	q, err := SeriesRatePromQL(GenerationTokens, cands[0].Metric.Map(), Scope{By: []string{"target"}}, 5*time.Minute)
	require.NoError(t, err)
	at := time.Unix(480, 0)
	total := valueBy(eval(c, at), "job")["job=a;"]
	one := valueBy(eval(q, at), "job")["job=a;"]
	assert.InDelta(t, 1.0, total-one, 1e-9, "the aggregate less the backwards series is engine 0's 1 token/s")
	assert.Greater(t, one, 1.5, "PromQL took the step for a restart")

	// Grouped by model: SGLang 0.3's `name` is copied into model_name like the aggregate does.
	q, err = SeriesRatePromQL(GenerationTokens, map[string]string{"__name__": "sglang:generation_tokens_total", "job": "s", "name": "g"}, Scope{By: []string{"model"}}, 5*time.Minute)
	require.NoError(t, err)
	assert.InDelta(t, 1.0, valueBy(eval(q, at), "model_name")["model_name=g;"], 1e-9)

	_, err = SeriesRatePromQL(GenerationTokens, map[string]string{"__name__": "vllm:kv_cache_usage_perc"}, Scope{}, time.Minute)
	assert.Error(t, err)
}

// TestNonFiniteAndResetScans: the scans find exactly the stored series that hold NaN or ±Inf
// (any sample in the range) or that decreased, name their metric, and find nothing in a clean
// history; Scope.Finite leaves a NaN series out of the windows it spoils.
func TestNonFiniteAndResetScans(t *testing.T) {
	const load = `
load 1m
  vllm:generation_tokens_total{job="a",engine="0",model_name="m"} 0+60x10
  vllm:generation_tokens_total{job="a",engine="1",model_name="m"} 0 30 60 90 NaN 150 180 210 240 270 300
  vllm:time_to_first_token_seconds_bucket{job="a",engine="0",model_name="m",le="0.5"} 0+1x10
  vllm:time_to_first_token_seconds_bucket{job="a",engine="0",model_name="m",le="+Inf"} 0+2x10
  vllm:time_to_first_token_seconds_count{job="a",engine="0",model_name="m"} 0+2x10
  vllm:time_to_first_token_seconds_sum{job="a",engine="0",model_name="m"} 0+1x4 Inf 6 7 8 9 10 11
  vllm:time_to_first_token_seconds_bucket{job="b",model_name="m",le="0.5"} 0 1 2 3 4 1 2 3 4 5 6
  vllm:time_to_first_token_seconds_bucket{job="b",model_name="m",le="+Inf"} 0+2x10
  vllm:time_to_first_token_seconds_count{job="b",model_name="m"} 0+2x10
`
	st := promqltest.LoadedStorage(t, load)
	t.Cleanup(func() { _ = st.Close() })
	ng := promqltest.NewTestEngine(t, false, 0, 1_000_000)
	eval := func(expr string, at time.Duration) promql.Vector {
		q, err := ng.NewInstantQuery(context.Background(), st, nil, expr, time.Unix(0, 0).Add(at))
		require.NoError(t, err, expr)
		res := q.Exec(context.Background())
		require.NoError(t, res.Err, expr)
		v, err := res.Vector()
		require.NoError(t, err)
		return v
	}
	names := func(v promql.Vector) []string {
		var out []string
		for _, s := range v {
			out = append(out, s.Metric.Get("job")+"/"+s.Metric.Get(ScanMetricLabel)+"/"+s.Metric.Get("engine"))
		}
		sort.Strings(out)
		return out
	}
	q, err := NonFiniteScanPromQL(GenerationTokens, Scope{}, 10*time.Minute)
	require.NoError(t, err)
	assert.Equal(t, []string{"a/vllm:generation_tokens_total/1"}, names(eval(q, 10*time.Minute)))
	q, err = NonFiniteScanPromQL(TTFT, Scope{Targets: []string{"a", "b"}}, 10*time.Minute)
	require.NoError(t, err)
	assert.Equal(t, []string{"a/vllm:time_to_first_token_seconds_sum/0"}, names(eval(q, 10*time.Minute)))
	// Before the bad samples, nothing.
	assert.Empty(t, eval(q, 3*time.Minute))

	q, err = HistogramResetScanPromQL(TTFT, Scope{}, 10*time.Minute)
	require.NoError(t, err)
	v := eval(q, 10*time.Minute)
	require.Len(t, v, 1)
	assert.Equal(t, "b", v[0].Metric.Get("job"))
	assert.Equal(t, "0.5", v[0].Metric.Get("le"))
	assert.Empty(t, eval(q, 4*time.Minute))

	// Scope.Finite: engine 1's NaN at 4m spoils the windows whose first or last sample it is.
	rate := func(sc Scope, at time.Duration) float64 {
		q, err := CounterRatePromQL(GenerationTokens, sc, 2*time.Minute)
		require.NoError(t, err)
		v := eval(q, at)
		require.Len(t, v, 1)
		return v[0].F
	}
	assert.True(t, math.IsNaN(rate(Scope{}, 4*time.Minute)), "PromQL alone: NaN")
	assert.InDelta(t, 1.0, rate(Scope{Finite: true}, 4*time.Minute), 1e-9, "engine 0 alone")
	assert.InDelta(t, 1.5, rate(Scope{Finite: true}, 8*time.Minute), 1e-9, "both engines")

	// HistogramSeriesPromQL selects one stored histogram.
	hq, err := HistogramSeriesPromQL(TTFT, "vllm:time_to_first_token_seconds", map[string]string{"job": "b", "model_name": "m"}, Scope{By: []string{"target"}}, 2*time.Minute)
	require.NoError(t, err)
	c := eval(hq.Count, 8*time.Minute)
	require.Len(t, c, 1)
	assert.Equal(t, "b", c[0].Metric.Get("job"))
	_, err = HistogramSeriesPromQL(TTFT, "vllm:nope", map[string]string{"job": "b"}, Scope{}, time.Minute)
	assert.Error(t, err)
}

// rankLabelsFor returns the rank labels a page detected as d can carry: those of its engine
// whose Since is at or below the top of d's version range (all of them when the version is
// unknown or open-ended). vLLM V0 pages carry none. The corpus checks read rankLabels through it.
func rankLabelsFor(d Detection) []RankLabel {
	all := rankLabels[d.Engine]
	if d.Engine == EngineVLLM && d.Generation == "v0" {
		return nil
	}
	_, hi, ok := parseVersionRange(d.Version)
	if !ok {
		return slices.Clone(all)
	}
	var out []RankLabel
	for _, r := range all {
		if r.Since <= hi {
			out = append(out, r)
		}
	}
	return out
}
