package catalog

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql/parser"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func parse(t *testing.T, q string) parser.Expr {
	t.Helper()
	e, err := parser.NewParser(parser.Options{}).ParseExpr(q)
	require.NoError(t, err, q)
	return e
}

// selectors returns every vector selector in e with its enclosing range (0 for instant).
func selectors(e parser.Expr) (vs []*parser.VectorSelector, ranges []time.Duration) {
	parser.Inspect(e, func(n parser.Node, _ []parser.Node) error {
		switch x := n.(type) {
		case *parser.MatrixSelector:
			vs = append(vs, x.VectorSelector.(*parser.VectorSelector))
			ranges = append(ranges, x.Range)
			return nil
		case *parser.VectorSelector:
			if !slices.Contains(vs, x) {
				vs = append(vs, x)
				ranges = append(ranges, 0)
			}
		}
		return nil
	})
	return vs, ranges
}

func matcher(vs *parser.VectorSelector, name string) *labels.Matcher {
	for _, m := range vs.LabelMatchers {
		if m.Name == name {
			return m
		}
	}
	return nil
}

func TestHistogramPromQLStructure(t *testing.T) {
	sc := Scope{Targets: []string{"vllm-a", "b.c"}, By: []string{"target", "model", "target"}}
	q, err := HistogramPromQL(TTFT, sc, 5*time.Minute)
	require.NoError(t, err)
	for part, query := range map[string]string{"buckets": q.Buckets, "sum": q.Sum, "count": q.Count} {
		e := parse(t, query)
		agg, ok := e.(*parser.AggregateExpr)
		require.True(t, ok, part)
		assert.Equal(t, "sum", agg.Op.String())
		if part == "buckets" {
			assert.Equal(t, []string{"le", "job", "model_name"}, agg.Grouping)
		} else {
			assert.Equal(t, []string{"job", "model_name"}, agg.Grouping)
		}
		suffix := map[string]string{"buckets": "_bucket", "sum": "_sum", "count": "_count"}[part]
		vs, ranges := selectors(e)
		var names []string
		for i, v := range vs {
			names = append(names, v.Name)
			assert.Equal(t, 5*time.Minute, ranges[i], v.Name)
			assert.True(t, strings.HasSuffix(v.Name, suffix), v.Name)
			jm := matcher(v, "job")
			require.NotNil(t, jm, v.Name)
			assert.Equal(t, labels.MatchRegexp, jm.Type)
			assert.True(t, jm.Matches("vllm-a"))
			assert.True(t, jm.Matches("b.c"))
			assert.False(t, jm.Matches("bxc"), "dots are quoted")
		}
		// Every engine with a seconds histogram for TTFT, old and exposure variants included;
		// Triton's millisecond histogram is left out (Scale != 1).
		for _, n := range []string{"vllm:time_to_first_token_seconds", "ray_vllm:time_to_first_token_seconds",
			"sglang:time_to_first_token_seconds", "sglang_time_to_first_token_seconds",
			"trtllm_time_to_first_token_seconds", "time_to_first_token_seconds"} {
			assert.Contains(t, names, n+suffix)
		}
		assert.NotContains(t, names, "nv_inference_first_response_histogram_ms"+suffix)
	}
	// Rate is taken on each selector, then the results are joined with `or` (no arithmetic).
	a := `rate(vllm:time_to_first_token_seconds_bucket{job=~"vllm-a|b\\.c"}[5m])`
	b := `rate(ray_vllm:time_to_first_token_seconds_bucket{job=~"vllm-a|b\\.c"}[5m])`
	assert.Contains(t, q.Buckets, a+` or `+b)
	// With Scope.Finite a stored histogram with a bucket whose rate is not finite is left out
	// of that window whole; _sum and _count rates are dropped series by series.
	sc.Finite = true
	qs, err := HistogramPromQL(TTFT, sc, 5*time.Minute)
	require.NoError(t, err)
	assert.Contains(t, qs.Buckets, `(`+a+` unless ignoring (le) (`+a+` unless `+a+` > -Inf < +Inf)) or (`+b+` unless ignoring (le) (`+b)
	// _sum (and _count) leave the windows out where a bucket of the same histogram is not finite.
	assert.Contains(t, qs.Sum, `(rate(vllm:time_to_first_token_seconds_sum{job=~"vllm-a|b\\.c"}[5m]) > -Inf < +Inf) unless ignoring (le) (rate(vllm:time_to_first_token_seconds_bucket{job=~"vllm-a|b\\.c"}[5m]) unless rate(vllm:time_to_first_token_seconds_bucket{job=~"vllm-a|b\\.c"}[5m]) > -Inf < +Inf)) or (`)
	assert.NotContains(t, q.Buckets, " + ")
}

func TestHistogramPromQLModels(t *testing.T) {
	q, err := HistogramPromQL(ITL, Scope{Models: []string{"meta/llama 8b"}, By: []string{"model"}}, time.Minute)
	require.NoError(t, err)
	e := parse(t, q.Count)
	vs, _ := selectors(e)
	byName := map[string][]string{}
	for _, v := range vs {
		for _, l := range []string{"model_name", "name", "model"} {
			if m := matcher(v, l); m != nil {
				assert.True(t, m.Matches("meta/llama 8b"))
				assert.False(t, m.Matches("meta/llama 70b"))
				byName[v.Name] = append(byName[v.Name], l)
			}
		}
	}
	// vLLM: model_name and Triton vLLM backend's `model`; SGLang: model_name and 0.3's `name`;
	// TGI (no model label): only a model_name a target's configured labels may carry.
	assert.Equal(t, []string{"model_name", "model"}, byName["vllm:inter_token_latency_seconds_count"])
	assert.Equal(t, []string{"model_name", "name"}, byName["sglang:inter_token_latency_seconds_count"])
	assert.Equal(t, []string{"model_name"}, byName["tgi_batch_forward_duration_count"])
	// label_replace copies the other labels into model_name.
	var replaced []string
	parser.Inspect(e, func(n parser.Node, _ []parser.Node) error {
		if c, ok := n.(*parser.Call); ok && c.Func.Name == "label_replace" {
			replaced = append(replaced, c.Args[3].(*parser.StringLiteral).Val)
			assert.Equal(t, "model_name", c.Args[1].(*parser.StringLiteral).Val)
		}
		return nil
	})
	assert.ElementsMatch(t, []string{"model", "name"}, replaced)
	// The TGI decode-batch histogram keeps its method matcher.
	assert.Contains(t, q.Buckets, `tgi_batch_forward_duration_bucket{method=~"decode|\\{'method': 'decode'\\}", model_name=~"meta/llama 8b"}`)
}

func TestCounterAndGaugePromQL(t *testing.T) {
	q, err := CounterRatePromQL(RequestsFinished, Scope{By: []string{"target"}}, 2*time.Minute, "finished_reason")
	require.NoError(t, err)
	e := parse(t, q)
	agg := e.(*parser.AggregateExpr)
	assert.Equal(t, "sum", agg.Op.String())
	assert.Equal(t, []string{"job", "finished_reason"}, agg.Grouping)
	vs, ranges := selectors(e)
	for i := range vs {
		assert.Equal(t, 2*time.Minute, ranges[i])
	}
	assert.Contains(t, q, "rate(vllm:request_success_total[2m])")
	assert.Contains(t, q, "rate(tgi_request_success[2m])")

	// Triton's microsecond counter is rescaled in PromQL.
	q, err = CounterRatePromQL(QueueTime, Scope{}, time.Minute)
	require.NoError(t, err)
	parse(t, q)
	assert.Equal(t, `sum ((rate(nv_inference_queue_duration_us[1m]) * 0.000001))`, q)
	q, err = CounterRatePromQL(QueueTime, Scope{Finite: true}, time.Minute)
	require.NoError(t, err)
	assert.Equal(t, `sum (((rate(nv_inference_queue_duration_us[1m]) * 0.000001) > -Inf < +Inf))`, q)

	// KV usage is averaged; old and new vLLM names are joined with or.
	q, err = GaugePromQL(KVCacheUsage, Scope{Targets: []string{"a"}, By: []string{"target"}}, "avg")
	require.NoError(t, err)
	e = parse(t, q)
	assert.Equal(t, "avg", e.(*parser.AggregateExpr).Op.String())
	// Impossible values are filtered per name, then a multiprocess split's pid copies collapse.
	assert.True(t, strings.HasPrefix(q, `avg by (job) (max without (pid) ((vllm:kv_cache_usage_perc{job=~"a"} >= 0 <= 1) or (ray_vllm:kv_cache_usage_perc{job=~"a"} >= 0 <= 1) or (vllm:gpu_cache_usage_perc{job=~"a"} >= 0 <= 1)`), q)

	// V0 hit rate: −1 filtered out.
	q, err = GaugePromQL(PrefixCacheHitRate, Scope{}, "avg")
	require.NoError(t, err)
	parse(t, q)
	assert.Contains(t, q, "(vllm:gpu_prefix_cache_hit_rate >= 0)")

	// DCGM: sentinel filter then scale; per GPU.
	q, err = GaugePromQLBy(FBUsed, Scope{By: []string{"target"}}, "max", "gpu")
	require.NoError(t, err)
	e = parse(t, q)
	assert.Equal(t, []string{"job", "gpu"}, e.(*parser.AggregateExpr).Grouping)
	assert.Contains(t, q, "((DCGM_FI_DEV_FB_USED < 2147483632) * 1048576)") // DCGM_INT32_BLANK = 0x7ffffff0
	assert.Contains(t, q, "inferscope_gpu_fb_used_bytes")

	q, err = MeanPromQL(PrefillTime, Scope{By: []string{"target"}}, time.Minute)
	require.NoError(t, err)
	be, ok := parse(t, q).(*parser.BinaryExpr)
	require.True(t, ok)
	assert.Equal(t, "/", be.Op.String())
	assert.Contains(t, q, "rate(llamacpp:prompt_seconds_total[1m])")
	assert.Contains(t, q, "rate(llamacpp:prompt_tokens_total[1m])")
	assert.Contains(t, q, "rate(vllm:request_prefill_time_seconds_sum[1m])")
	assert.Contains(t, q, "rate(vllm:request_prefill_time_seconds_count[1m])")

	h, err := HistogramPromQLFor(Lookup(EngineTriton, TTFT).Metrics, Scope{Models: []string{"m"}}, time.Minute)
	require.NoError(t, err)
	parse(t, h.Buckets)
	assert.Contains(t, h.Buckets, `label_replace(rate(nv_inference_first_response_histogram_ms_bucket{model=~"m"}[1m])`)
}

func TestEveryBuilderParsesForEverySignal(t *testing.T) {
	scopes := []Scope{{}, {Targets: []string{`we"ird\name`, "x|y"}, Models: []string{"a.b", "c"}, By: []string{"target", "model", "engine"}}}
	for _, s := range AllSignals {
		for _, sc := range scopes {
			if q, err := HistogramPromQL(s, sc, 90*time.Second); err == nil {
				parse(t, q.Buckets)
				parse(t, q.Sum)
				parse(t, q.Count)
			}
			if q, err := CounterRatePromQL(s, sc, time.Minute, "reason"); err == nil {
				parse(t, q)
			}
			for _, agg := range []string{"sum", "avg", "max", "min"} {
				if q, err := GaugePromQL(s, sc, agg); err == nil {
					parse(t, q)
				}
			}
			if q, err := MeanPromQL(s, sc, time.Minute); err == nil {
				parse(t, q)
			}
		}
	}
	// Quoting holds up: the weird target name matches itself exactly.
	q, err := CounterRatePromQL(PromptTokens, scopes[1], time.Minute)
	require.NoError(t, err)
	vs, _ := selectors(parse(t, q))
	jm := matcher(vs[0], "job")
	assert.True(t, jm.Matches(`we"ird\name`))
	assert.True(t, jm.Matches("x|y"))
	assert.False(t, jm.Matches("x"))
}

func TestBuilderErrors(t *testing.T) {
	_, err := HistogramPromQL(GPUUtil, Scope{}, time.Minute)
	assert.ErrorContains(t, err, "not read from a histogram")
	_, err = HistogramPromQL(Signal("bogus"), Scope{}, time.Minute)
	assert.ErrorContains(t, err, "unknown signal")
	_, err = HistogramPromQL(TTFT, Scope{By: []string{"pod"}}, time.Minute)
	assert.ErrorContains(t, err, "unknown group")
	_, err = HistogramPromQL(TTFT, Scope{}, 0)
	assert.ErrorContains(t, err, "too short")
	_, err = HistogramPromQL(TTFT, Scope{Targets: []string{""}}, time.Minute)
	assert.ErrorContains(t, err, "empty target")
	_, err = HistogramPromQL(TTFT, Scope{Models: []string{""}}, time.Minute)
	assert.ErrorContains(t, err, "empty model")
	_, err = CounterRatePromQL(TTFT, Scope{}, time.Minute)
	assert.ErrorContains(t, err, "not read from a counter")
	_, err = CounterRatePromQL(PromptTokens, Scope{}, time.Minute, "bad-label")
	assert.ErrorContains(t, err, "not a valid label name")
	_, err = GaugePromQL(KVCacheUsage, Scope{}, "median")
	assert.ErrorContains(t, err, "aggregation")
	_, err = GaugePromQL(TTFT, Scope{}, "avg")
	assert.ErrorContains(t, err, "not read from a gauge")
	_, err = MeanPromQL(KVCacheUsage, Scope{}, time.Minute)
	assert.Error(t, err)
	_, err = HistogramPromQLFor(nil, Scope{}, time.Minute)
	assert.Error(t, err)
	_, err = HistogramPromQLFor([]Metric{{Name: "a", Kind: KindHistogram, Scale: 1}, {Name: "b", Kind: KindHistogram, Scale: 0.001}}, Scope{}, time.Minute)
	assert.ErrorContains(t, err, "separately")
	_, err = HistogramPromQLFor([]Metric{{Name: "a", Kind: KindGauge, Scale: 1}}, Scope{}, time.Minute)
	assert.ErrorContains(t, err, "not a histogram")
	_, err = HistogramPromQLFor([]Metric{{Name: "a{x}", Kind: KindHistogram, Scale: 1}}, Scope{}, time.Minute)
	assert.ErrorContains(t, err, "not a valid metric name")
	assert.Equal(t, "", GroupLabel("pod"))
	assert.Equal(t, "job", GroupLabel("target"))
	assert.Equal(t, "model_name", GroupLabel("model"))
	assert.Equal(t, "engine", GroupLabel("engine"))
}

func TestKeepMetricRegex(t *testing.T) {
	re := regexp.MustCompile("^(?:" + KeepMetricRegex() + ")$")
	for _, n := range []string{"vllm:time_to_first_token_seconds_bucket", "vllm:time_to_first_token_seconds_sum",
		"vllm:time_to_first_token_seconds_count", "vllm:kv_cache_usage_perc", "vllm:gpu_cache_usage_perc",
		"vllm:request_success_total", "ray_vllm:e2e_request_latency_seconds_bucket", "sglang_cache_hit_rate",
		"tgi_request_input_length_sum", "llamacpp:tokens_predicted_total", "DCGM_FI_DEV_FB_USED",
		"nv_inference_request_success", AgentMemClockHertz, AgentFBReservedBytes,
		// detection evidence only
		"vllm:num_requests_swapped", "vllm:avg_prompt_throughput_toks_per_s", "vllm:prompt_tokens_by_source_total",
		"sglang:new_seq", "sglang:func_latency_seconds_count", "llamacpp:kv_cache_usage_ratio",
		// error SLI: the inference handlers' HTTP answers and vLLM's admission rejections
		"http_requests_total", "vllm:admission_rejections_total"} {
		assert.True(t, re.MatchString(n), n)
	}
	for _, n := range []string{"python_gc_objects_collected_total", "http_requests_created", "process_cpu_seconds_total",
		"vllm:time_to_first_token_seconds_created", "vllm:cache_config_info", "up", "vllm:time_to_first_token_seconds_bucketx"} {
		assert.False(t, re.MatchString(n), n)
	}
}

// A page filtered by the keep rule is still detected the same way (the rule keeps the
// detection evidence), and it keeps far fewer families.
func TestKeepRulePreservesDetection(t *testing.T) {
	re := regexp.MustCompile("^(?:" + KeepMetricRegex() + ")$")
	for _, f := range []string{"vllm-0.11-v1-qwen05b-created-series.prom", "vllm-0.8-v0-multiproc-qwen3-0.6b-under-load-decommented.prom",
		"sglang-0.4-llama8b-heavy-load-queue2826-docs.prom", "tgi-unknown-datadog-fixture-full-under-load.prom"} {
		b, err := os.ReadFile(filepath.Join("testdata", f))
		require.NoError(t, err)
		samples, _, err := pageNames(b)
		require.NoError(t, err)
		var kept []string
		for _, n := range samples {
			if re.MatchString(n) {
				kept = append(kept, n)
			}
		}
		full, filtered := Detect(samples), Detect(kept)
		assert.Equal(t, full.Engine, filtered.Engine, f)
		assert.Equal(t, full.Generation, filtered.Generation, f)
		assert.Equal(t, full.Version, filtered.Version, f)
		assert.Less(t, len(kept), len(samples), f)
	}
}

func TestRunningCeilingPromQL(t *testing.T) {
	g, info, err := RunningCeilingPromQL([]string{"a", "b.c"})
	require.NoError(t, err)
	assert.Equal(t, `max by (job) ({__name__=~"sglang:max_running_requests|trtllm_max_num_active_requests", job=~"a|b\\.c"})`, g)
	assert.Equal(t, `max by (job, max_num_seqs) ({__name__=~".+_config_info", max_num_seqs!="", job=~"a|b\\.c"})`, info)
	for _, n := range MaxRunningGauges {
		assert.True(t, Stores(n), "%s is stored by the collector", n)
	}
	assert.True(t, Stores("vllm:cache_config_info"))
	_, _, err = RunningCeilingPromQL(nil)
	require.Error(t, err)
	_, _, err = RunningCeilingPromQL([]string{""})
	require.Error(t, err)
}
