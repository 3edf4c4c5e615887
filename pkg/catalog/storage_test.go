package catalog

import (
	"context"
	"testing"
	"time"

	"github.com/prometheus/prometheus/promql"
	"github.com/prometheus/prometheus/promql/promqltest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Samples every minute from 0 to 10m. Target a (vLLM 0.11) exposes the ITL histogram under both
// the old and the new name with identical data; b (vLLM 0.10) only the old name; c (SGLang) its
// own; f (SGLang 0.3) labels the model `name`.
const storageLoad = `
load 1m
  vllm:time_per_output_token_seconds_bucket{job="a",model_name="m",engine="0",le="0.1"} 0+10x10
  vllm:time_per_output_token_seconds_bucket{job="a",model_name="m",engine="0",le="+Inf"} 0+20x10
  vllm:time_per_output_token_seconds_sum{job="a",model_name="m",engine="0"} 0+3x10
  vllm:time_per_output_token_seconds_count{job="a",model_name="m",engine="0"} 0+20x10
  vllm:inter_token_latency_seconds_bucket{job="a",model_name="m",engine="0",le="0.1"} 0+10x10
  vllm:inter_token_latency_seconds_bucket{job="a",model_name="m",engine="0",le="+Inf"} 0+20x10
  vllm:inter_token_latency_seconds_sum{job="a",model_name="m",engine="0"} 0+3x10
  vllm:inter_token_latency_seconds_count{job="a",model_name="m",engine="0"} 0+20x10
  vllm:time_per_output_token_seconds_bucket{job="b",model_name="m",le="0.1"} 0+5x10
  vllm:time_per_output_token_seconds_bucket{job="b",model_name="m",le="+Inf"} 0+10x10
  sglang:inter_token_latency_seconds_bucket{job="c",model_name="m2",le="0.1"} 0+30x10
  sglang:inter_token_latency_seconds_bucket{job="c",model_name="m2",le="+Inf"} 0+30x10
  sglang:inter_token_latency_seconds_bucket{job="f",name="m3",le="0.1"} 0+6x10
  sglang:inter_token_latency_seconds_bucket{job="f",name="m3",le="+Inf"} 0+6x10
  vllm:kv_cache_usage_perc{job="a",model_name="m",engine="0"} 0.4x10
  vllm:gpu_cache_usage_perc{job="a",model_name="m",engine="0"} 0.4x10
  vllm:gpu_cache_usage_perc{job="b",model_name="m"} 0.2x10
  vllm:prompt_tokens_total{job="a",model_name="m",engine="0"} 0+600x10
  vllm:gpu_prefix_cache_hit_rate{job="d",model_name="m"} -1x10
  vllm:gpu_prefix_cache_hit_rate{job="e",model_name="m"} 0.5x10
  tgi_queue_size{job="t"} 7x10
  DCGM_FI_DEV_FB_USED{job="g",gpu="0"} 1024x10
  DCGM_FI_DEV_FB_USED{job="g",gpu="1"} 9223372036854775794x10
`

func evalVector(t *testing.T, expr string) promql.Vector {
	t.Helper()
	st := promqltest.LoadedStorage(t, storageLoad)
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

// key renders the labels a test cares about.
func valueBy(v promql.Vector, labels ...string) map[string]float64 {
	out := map[string]float64{}
	for _, s := range v {
		k := ""
		for _, l := range labels {
			k += l + "=" + s.Metric.Get(l) + ";"
		}
		out[k] = s.F
	}
	return out
}

func TestOldAndNewNamesAreNotDoubleCounted(t *testing.T) {
	q, err := HistogramPromQL(ITL, Scope{By: []string{"target"}}, 5*time.Minute)
	require.NoError(t, err)
	got := valueBy(evalVector(t, q.Buckets), "job", "le")
	// Counters grow linearly, so rate over any window is the slope per second:
	// a: 10 per minute in le=0.1 → 10/60, 20/60 in +Inf — once, not twice.
	assert.InDelta(t, 10.0/60, got["job=a;le=0.1;"], 1e-9)
	assert.InDelta(t, 20.0/60, got["job=a;le=+Inf;"], 1e-9)
	assert.InDelta(t, 5.0/60, got["job=b;le=0.1;"], 1e-9)
	assert.InDelta(t, 30.0/60, got["job=c;le=0.1;"], 1e-9)
	assert.InDelta(t, 6.0/60, got["job=f;le=0.1;"], 1e-9)
	assert.Len(t, got, 8)

	sum := valueBy(evalVector(t, q.Sum), "job")
	assert.InDelta(t, 3.0/60, sum["job=a;"], 1e-9)
	cnt := valueBy(evalVector(t, q.Count), "job")
	assert.InDelta(t, 20.0/60, cnt["job=a;"], 1e-9)

	// Ungrouped: (10 + 5 + 30 + 6)/60 in le=0.1; double counting would give (20 + 5 + 30 + 6)/60.
	q, err = HistogramPromQL(ITL, Scope{}, 5*time.Minute)
	require.NoError(t, err)
	all := valueBy(evalVector(t, q.Buckets), "le")
	assert.InDelta(t, 51.0/60, all["le=0.1;"], 1e-9)
	// Contrast: summing the two names separately double counts target a.
	naive := evalVector(t, `sum(rate(vllm:time_per_output_token_seconds_bucket{le="0.1"}[5m])) + sum(rate(vllm:inter_token_latency_seconds_bucket{le="0.1"}[5m]))`)
	assert.InDelta(t, 25.0/60, naive[0].F, 1e-9)
}

func TestModelScopeAndNameLabel(t *testing.T) {
	q, err := HistogramPromQL(ITL, Scope{By: []string{"model"}}, 5*time.Minute)
	require.NoError(t, err)
	got := valueBy(evalVector(t, q.Buckets), "model_name", "le")
	assert.InDelta(t, 15.0/60, got["model_name=m;le=0.1;"], 1e-9) // a (once) + b
	assert.InDelta(t, 30.0/60, got["model_name=m2;le=0.1;"], 1e-9)
	assert.InDelta(t, 6.0/60, got["model_name=m3;le=0.1;"], 1e-9) // SGLang 0.3 `name` → model_name

	q, err = HistogramPromQL(ITL, Scope{Models: []string{"m3"}}, 5*time.Minute)
	require.NoError(t, err)
	got = valueBy(evalVector(t, q.Buckets), "le")
	assert.Equal(t, map[string]float64{"le=0.1;": 0.1, "le=+Inf;": 0.1}, roundAll(got))

	// TGI has no model label: a model filter excludes it instead of showing it under every model.
	g, err := GaugePromQL(RequestsWaiting, Scope{Models: []string{"m"}}, "sum")
	require.NoError(t, err)
	assert.Empty(t, evalVector(t, g))
	g, err = GaugePromQL(RequestsWaiting, Scope{}, "sum")
	require.NoError(t, err)
	assert.Equal(t, 7.0, evalVector(t, g)[0].F)
}

func roundAll(m map[string]float64) map[string]float64 {
	out := map[string]float64{}
	for k, v := range m {
		out[k] = float64(int64(v*1e9+0.5)) / 1e9
	}
	return out
}

func TestGaugesAveragedFilteredAndScaled(t *testing.T) {
	g, err := GaugePromQL(KVCacheUsage, Scope{}, "avg")
	require.NoError(t, err)
	// a: 0.4 under both names (taken once), b: 0.2 → (0.4 + 0.2) / 2.
	assert.InDelta(t, 0.3, evalVector(t, g)[0].F, 1e-12)

	g, err = GaugePromQL(PrefixCacheHitRate, Scope{By: []string{"target"}}, "avg")
	require.NoError(t, err)
	// d reports −1 (prefix caching off): absent, not −1 and not 0.
	assert.Equal(t, map[string]float64{"job=e;": 0.5}, valueBy(evalVector(t, g), "job"))

	g, err = GaugePromQLBy(FBUsed, Scope{}, "max", "gpu")
	require.NoError(t, err)
	// 1024 MiB = 1073741824 bytes; GPU 1's DCGM blank sentinel is dropped.
	assert.Equal(t, map[string]float64{"gpu=0;": 1073741824}, valueBy(evalVector(t, g), "gpu"))

	c, err := CounterRatePromQL(PromptTokens, Scope{By: []string{"target"}}, 5*time.Minute)
	require.NoError(t, err)
	assert.InDelta(t, 10.0, valueBy(evalVector(t, c), "job")["job=a;"], 1e-9) // 600 per minute
}
