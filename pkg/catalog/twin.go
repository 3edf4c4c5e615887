package catalog

import (
	"fmt"
	"time"

	"github.com/prometheus/common/model"
)

// The capacity twin's calibration reads (pkg/twin.Observe): vLLM V1 names (0.10 and later),
// one target (its job), instant queries at the end of the history over the whole history
// (window w). Pure text like the rest of this package.

// Metric names the twin's calibration reads (vLLM V1).
const (
	TwinFinished      = "vllm:request_success_total"
	TwinPromptTokens  = "vllm:request_prompt_tokens"     // #nosec G101 -- a metric name, not a credential
	TwinOutputTokens  = "vllm:request_generation_tokens" // #nosec G101 -- a metric name, not a credential
	TwinITL           = "vllm:inter_token_latency_seconds"
	TwinITLBefore011  = "vllm:time_per_output_token_seconds" // the ITL data's name up to vLLM 0.10
	TwinPrefill       = "vllm:request_prefill_time_seconds"
	TwinPrefixHits    = "vllm:prefix_cache_hits_total"
	TwinPrefixQueries = "vllm:prefix_cache_queries_total"
	TwinRunning       = "vllm:num_requests_running"
	TwinKVUsage       = "vllm:kv_cache_usage_perc"
	TwinKVUsageV0Name = "vllm:gpu_cache_usage_perc"
	TwinCacheConfig   = "vllm:cache_config_info"
	TwinIterTokens    = "vllm:iteration_tokens_total"  // #nosec G101 -- a metric name, not a credential
	TwinGenTokens     = "vllm:generation_tokens_total" // #nosec G101 -- a metric name, not a credential
	TwinTTFT          = "vllm:time_to_first_token_seconds"
	TwinE2E           = "vllm:e2e_request_latency_seconds"
	// TwinMaxTokens is the histogram of the requests' max_tokens parameter: the twin's
	// generated requests carry its mean, so that outputs the history shows are not cut at the
	// simulator's default of 1024 tokens.
	TwinMaxTokens      = "vllm:request_params_max_tokens" // #nosec G101 -- a metric name, not a credential
	twinWindowNotation = "%s%s[%s]"
)

// TwinIncreasePromQL is the increase of counter metric of job over w, summed:
// sum(increase(metric{job="…"}[w])).
func TwinIncreasePromQL(metric, job string, w time.Duration) string {
	return "sum(increase(" + twinRange(metric, job, w) + "))"
}

// TwinMeanGaugePromQL is the mean of gauge metric of job over w, averaged over its series:
// avg(avg_over_time(metric{job="…"}[w])).
func TwinMeanGaugePromQL(metric, job string, w time.Duration) string {
	return "avg(avg_over_time(" + twinRange(metric, job, w) + "))"
}

// TwinBucketsPromQL is the increase over w of histogram metric's buckets of job, one series
// per le: sum by (le) (increase(metric_bucket{job="…"}[w])).
func TwinBucketsPromQL(metric, job string, w time.Duration) string {
	return "sum by (le) (increase(" + twinRange(metric+"_bucket", job, w) + "))"
}

// TwinCacheConfigPromQL is job's latest vllm:cache_config_info series within w (its labels
// carry num_gpu_blocks, block_size and enable_prefix_caching).
func TwinCacheConfigPromQL(job string, w time.Duration) string {
	return "last_over_time(" + twinRange(TwinCacheConfig, job, w) + ")"
}

// TwinRatePromQL is job's finished-request rate (req/s) over step, for a range query at
// step: sum(rate(vllm:request_success_total{job="…"}[step])).
func TwinRatePromQL(job string, step time.Duration) string {
	return "sum(rate(" + twinRange(TwinFinished, job, step) + "))"
}

func twinRange(metric, job string, w time.Duration) string {
	return fmt.Sprintf(twinWindowNotation, metric, JobSelector(job), model.Duration(w))
}

// TwinEnginesPromQL is how many vLLM engines (values of the `engine` label, vLLM's
// data-parallel rank) of job finished requests' counters exist within w:
// count(count by (engine) (last_over_time(vllm:request_success_total{job="…"}[w]))). The twin
// models one engine; more than one is a data-parallel target it cannot model.
func TwinEnginesPromQL(job string, w time.Duration) string {
	return "count(count by (engine) (last_over_time(" + twinRange(TwinFinished, job, w) + ")))"
}

// TwinWindowRatioPromQL is the ratio of two counters' increases of job over each window w,
// for a range query at step w: sum(increase(num{job="…"}[w])) / sum(increase(den{job="…"}[w]))
// (issue 35: the mean inter-token latency per window, for the step-time law's fit).
func TwinWindowRatioPromQL(num, den, job string, w time.Duration) string {
	return TwinIncreasePromQL(num, job, w) + " / " + TwinIncreasePromQL(den, job, w)
}
