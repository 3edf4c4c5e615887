// Package twin is a digital twin of a vLLM target: the simulator's engine model
// (pkg/enginemodel: V1 scheduler, paged KV cache, roofline step times) with parameters
// calibrated from the target's own stored history, then swept for the highest arrival rate at
// which an SLO profile still holds (the knee) and asked what-if questions. It sits in the
// analysis layer (pkg/archtest): the capacity query type runs it, and it never links the
// simulator's server, scenarios or pages (pkg/sim). Method and validation figures:
// docs/capacity.md.
package twin

import (
	"context"
	"fmt"
	"math"
	"sort"
	"strconv"
	"time"

	"github.com/prometheus/common/model"

	"github.com/inferscope/inferscope-llm-datasource/pkg/catalog"
	"github.com/inferscope/inferscope-llm-datasource/pkg/source"
)

// Observed is what the twin reads of one target's history over a span (all means over the
// span; NaN when not stored).
type Observed struct {
	// Span is the length of history read.
	Span time.Duration
	// Rate is finished requests/s (all finish reasons), the arrival rate at steady state.
	Rate float64
	// PromptBuckets and OutputBuckets are the cumulative counts of the per-request prompt and
	// generation token histograms (vllm:request_prompt_tokens, vllm:request_generation_tokens)
	// over the span, by upper bound (the last is +Inf); PromptMean and OutputMean are their
	// sum/count.
	PromptBuckets, OutputBuckets []Bucket
	PromptMean, OutputMean       float64
	// MaxTokensMean is the mean of the requests' max_tokens parameter
	// (vllm:request_params_max_tokens sum/count), NaN when not exported.
	MaxTokensMean float64
	// ITLMean is the mean inter-token latency (s), PrefillMean the mean prefill time (s).
	ITLMean, PrefillMean float64
	// RunningMean is the mean of the running-requests gauge, KVUsageMean of the KV usage.
	RunningMean, KVUsageMean float64
	// PrefixHitRatio is prefix-cache hits / queries (tokens).
	PrefixHitRatio float64
	// NumGPUBlocks and BlockSize come from vllm:cache_config_info (0 when not exported).
	NumGPUBlocks, BlockSize int
	// PrefixCaching is cache_config_info's enable_prefix_caching.
	PrefixCaching bool
	// RateSeries is the finished-request rate at 5-minute steps over the span (for the trend).
	RateSeries []Point
	// Windows are the span cut into WindowStep windows (issue 35: the data the step-time
	// law's form is chosen on).
	Windows []Window
}

// Window is one window of the history (Len seconds ending at T): its engine steps, the
// tokens they computed and generated, the prefills completed (first tokens), its mean running requests (the decode batch) and mean
// KV-cache usage (share of the blocks), and its mean inter-token latency (s).
type Window struct {
	T                     time.Time
	Len                   float64
	Steps, Tokens, Gen    float64
	Prefills              float64
	Running, KVUsage, ITL float64
}

// WindowStep is the window of the step-time law's data over a history of span: 30 s (two
// samples at 15 s scrapes), longer over six hours so that at most 720 windows are read.
func WindowStep(span time.Duration) time.Duration {
	return max(30*time.Second, (span / 720).Truncate(30*time.Second))
}

// Bucket is one cumulative histogram bucket: count of observations ≤ Le.
type Bucket struct{ Le, Count float64 }

// Point is one value at one time.
type Point struct {
	T time.Time
	V float64
}

// Observe reads Observed for the target whose series carry job=<job>, over [to−span, to], with
// instant queries at to (increase and avg_over_time over the span) and one range query (the
// rate series, 5-minute steps, hourly over a day). The names are vLLM V1's (0.10 and later;
// ITL and KV usage also under their 0.10 names); the PromQL is pkg/catalog's (catalog.TwinIncreasePromQL and its kin). q is
// the read layer's querier (the plugin passes one that records the PromQL of its query).
func Observe(ctx context.Context, q source.Querier, job string, to time.Time, span time.Duration) (Observed, error) {
	o := Observed{Span: span}
	scalar := func(expr string) (float64, error) {
		v, err := q.Query(ctx, expr, to)
		if err != nil {
			return math.NaN(), fmt.Errorf("twin: %s: %w", expr, err)
		}
		vec, ok := v.(model.Vector)
		if !ok || len(vec) == 0 {
			return math.NaN(), nil
		}
		return float64(vec[0].Value), nil
	}
	inc := func(metric string) string { return catalog.TwinIncreasePromQL(metric, job, span) }
	var err error
	n, err := scalar(inc(catalog.TwinFinished))
	if err != nil {
		return o, err
	}
	o.Rate = n / span.Seconds()
	ratio := func(num, den string) float64 {
		a, _ := scalar(inc(num))
		b, _ := scalar(inc(den))
		if !(b > 0) {
			return math.NaN()
		}
		return a / b
	}
	o.PromptMean = ratio(catalog.TwinPromptTokens+"_sum", catalog.TwinPromptTokens+"_count")
	o.OutputMean = ratio(catalog.TwinOutputTokens+"_sum", catalog.TwinOutputTokens+"_count")
	o.MaxTokensMean = ratio(catalog.TwinMaxTokens+"_sum", catalog.TwinMaxTokens+"_count")
	o.ITLMean = ratio(catalog.TwinITL+"_sum", catalog.TwinITL+"_count")
	if math.IsNaN(o.ITLMean) { // vLLM 0.10 and earlier V1 releases: the ITL data under the old name
		o.ITLMean = ratio(catalog.TwinITLBefore011+"_sum", catalog.TwinITLBefore011+"_count")
	}
	o.PrefillMean = ratio(catalog.TwinPrefill+"_sum", catalog.TwinPrefill+"_count")
	o.PrefixHitRatio = ratio(catalog.TwinPrefixHits, catalog.TwinPrefixQueries)
	o.RunningMean, _ = scalar(catalog.TwinMeanGaugePromQL(catalog.TwinRunning, job, span))
	o.KVUsageMean, _ = scalar(catalog.TwinMeanGaugePromQL(catalog.TwinKVUsage, job, span))
	if math.IsNaN(o.KVUsageMean) {
		o.KVUsageMean, _ = scalar(catalog.TwinMeanGaugePromQL(catalog.TwinKVUsageV0Name, job, span))
	}
	buckets := func(metric string) ([]Bucket, error) {
		v, err := q.Query(ctx, catalog.TwinBucketsPromQL(metric, job, span), to)
		if err != nil {
			return nil, err
		}
		vec, _ := v.(model.Vector)
		var out []Bucket
		for _, s := range vec {
			le, err := strconv.ParseFloat(string(s.Metric["le"]), 64)
			if err != nil {
				continue
			}
			out = append(out, Bucket{Le: le, Count: float64(s.Value)})
		}
		sort.Slice(out, func(i, j int) bool { return out[i].Le < out[j].Le })
		return out, nil
	}
	if o.PromptBuckets, err = buckets(catalog.TwinPromptTokens); err != nil {
		return o, err
	}
	if o.OutputBuckets, err = buckets(catalog.TwinOutputTokens); err != nil {
		return o, err
	}
	if v, err := q.Query(ctx, catalog.TwinCacheConfigPromQL(job, span), to); err == nil {
		if vec, ok := v.(model.Vector); ok && len(vec) > 0 {
			m := vec[0].Metric
			o.NumGPUBlocks, _ = strconv.Atoi(string(m["num_gpu_blocks"]))
			o.BlockSize, _ = strconv.Atoi(string(m["block_size"]))
			o.PrefixCaching = m["enable_prefix_caching"] == "True"
		}
	}
	step := RateStep(span)
	if m, err := q.QueryRange(ctx, catalog.TwinRatePromQL(job, step), to.Add(-span).Add(step), to, step); err == nil && len(m) > 0 {
		for _, p := range m[0].Values {
			o.RateSeries = append(o.RateSeries, Point{T: p.Timestamp.Time(), V: float64(p.Value)})
		}
	}
	o.Windows = observeWindows(ctx, q, job, to, span)
	return o, ctx.Err()
}

// observeWindows reads Observed.Windows: range queries at WindowStep (the increase of the
// per-step token histogram's count and sum, of the generation tokens, the mean of the
// running and KV-usage gauges, the mean ITL); a window missing any but the ITL is left out,
// and a longer window is tried when fewer than minLawWindows remain (a scrape interval over
// 15 s leaves a 30 s window one sample). Errors leave the windows out (the law is then the
// roofline).
func observeWindows(ctx context.Context, q source.Querier, job string, to time.Time, span time.Duration) []Window {
	for _, step := range []time.Duration{WindowStep(span), 2 * WindowStep(span), 4 * WindowStep(span)} {
		if ws := observeWindowsAt(ctx, q, job, to, span, step); len(ws) >= minLawWindows || step*4 > span {
			return ws
		}
	}
	return nil
}

// observeWindowsAt is observeWindows at one window length.
func observeWindowsAt(ctx context.Context, q source.Querier, job string, to time.Time, span, step time.Duration) []Window {
	series := func(expr string) map[int64]float64 {
		m, err := q.QueryRange(ctx, expr, to.Add(-span).Add(step), to, step)
		if err != nil || len(m) == 0 {
			return nil
		}
		out := map[int64]float64{}
		for _, p := range m[0].Values {
			out[int64(p.Timestamp)] = float64(p.Value)
		}
		return out
	}
	inc := func(metric string) map[int64]float64 { return series(catalog.TwinIncreasePromQL(metric, job, step)) }
	steps, tokens, gen := inc(catalog.TwinIterTokens+"_count"), inc(catalog.TwinIterTokens+"_sum"), inc(catalog.TwinGenTokens)
	prefills := inc(catalog.TwinTTFT + "_count")
	itl := series(catalog.TwinWindowRatioPromQL(catalog.TwinITL+"_sum", catalog.TwinITL+"_count", job, step))
	run := series(catalog.TwinMeanGaugePromQL(catalog.TwinRunning, job, step))
	kv := series(catalog.TwinMeanGaugePromQL(catalog.TwinKVUsage, job, step))
	if len(kv) == 0 {
		kv = series(catalog.TwinMeanGaugePromQL(catalog.TwinKVUsageV0Name, job, step))
	}
	var ws []Window
	for ts, n := range steps {
		w := Window{T: time.UnixMilli(ts), Len: step.Seconds(), Steps: n, Tokens: tokens[ts], Gen: gen[ts], Running: run[ts], KVUsage: kv[ts], ITL: math.NaN(), Prefills: prefills[ts]}
		if v, ok := itl[ts]; ok {
			w.ITL = v
		}
		_, ok1 := run[ts]
		_, ok2 := kv[ts]
		_, ok3 := gen[ts]
		_, ok4 := prefills[ts]
		if !ok1 || !ok2 || !ok3 || !ok4 || !(n > 0) || math.IsNaN(w.Tokens+w.Gen+w.Running+w.KVUsage) {
			continue
		}
		ws = append(ws, w)
	}
	sort.Slice(ws, func(i, j int) bool { return ws[i].T.Before(ws[j].T) })
	return ws
}

// RateStep is the step of the rate series read for the trend over a history of span: 5
// minutes, hourly over a day.
func RateStep(span time.Duration) time.Duration {
	if span > 24*time.Hour {
		return time.Hour
	}
	return 5 * time.Minute
}
