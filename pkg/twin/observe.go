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
// ITL and KV usage also under their 0.10 names); the PromQL is pkg/catalog's (twin.go). q is
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
	return o, ctx.Err()
}

// RateStep is the step of the rate series read for the trend over a history of span: 5
// minutes, hourly over a day.
func RateStep(span time.Duration) time.Duration {
	if span > 24*time.Hour {
		return time.Hour
	}
	return 5 * time.Minute
}
