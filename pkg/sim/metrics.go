package sim

import (
	"strconv"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/inferscope/inferscope-llm-datasource/pkg/enginemodel"
)

// family kinds
type famKind int

const (
	famGauge famKind = iota
	famCounter
	famHist
)

// family is one exposed metric family of one version.
type family struct {
	name  string // exposed name (counters end in _total)
	help  string
	kind  famKind
	extra string // extra label name ("" none)
	lazy  bool   // V0: no sample until first observation
	desc  *prometheus.Desc
	value func(c *enginemodel.Snapshot) []sample // gauge/counter samples
	hist  func(s *enginemodel.Stats) *enginemodel.Histogram
}

type sample struct {
	extra string
	v     float64
}

func one(v float64) []sample { return []sample{{v: v}} }

// families builds the metric families of version v for cfg
// (names/HELP from engines.md §1.2–1.4 and the corpus pages).
func families(v Version, cfg *Config) []*family {
	runningHelp := "Number of requests in model execution batches."
	e2eHelp := "Histogram of e2e request latency in seconds."
	if !v.V1() {
		runningHelp = "Number of requests currently running on GPU."
		e2eHelp = "Histogram of end to end request latency in seconds."
	}
	g := func(name, help string, f func(c *enginemodel.Snapshot) []sample) *family {
		return &family{name: name, help: help, kind: famGauge, value: f}
	}
	ctr := func(name, help string, f func(c *enginemodel.Snapshot) []sample) *family {
		return &family{name: name, help: help, kind: famCounter, value: f}
	}
	h := func(name, help string, f func(s *enginemodel.Stats) *enginemodel.Histogram) *family {
		return &family{name: name, help: help, kind: famHist, hist: f, lazy: !v.V1()}
	}
	var fs []*family
	add := func(f ...*family) { fs = append(fs, f...) }

	add(g("vllm:num_requests_running", runningHelp, func(c *enginemodel.Snapshot) []sample { return one(c.Running) }))
	if !v.V1() {
		add(g("vllm:num_requests_swapped", "Number of requests swapped to CPU.", func(c *enginemodel.Snapshot) []sample { return one(c.Swapped) }))
	}
	add(g("vllm:num_requests_waiting", "Number of requests waiting to be processed.", func(c *enginemodel.Snapshot) []sample { return one(c.Waiting) }))
	switch v {
	case V06:
		add(g("vllm:gpu_cache_usage_perc", "GPU KV-cache usage. 1 means 100 percent usage.", func(c *enginemodel.Snapshot) []sample { return one(c.KVUsage) }),
			g("vllm:cpu_cache_usage_perc", "CPU KV-cache usage. 1 means 100 percent usage.", func(c *enginemodel.Snapshot) []sample { return one(c.CPUCacheUsage) }),
			g("vllm:cpu_prefix_cache_hit_rate", "CPU prefix cache block hit rate.", func(c *enginemodel.Snapshot) []sample {
				if !c.PrefixCaching {
					return one(-1)
				}
				return one(0)
			}),
			g("vllm:gpu_prefix_cache_hit_rate", "GPU prefix cache block hit rate.", func(c *enginemodel.Snapshot) []sample {
				if !c.PrefixCaching {
					return one(-1)
				}
				if c.Stats.PrefixQueries == 0 {
					return one(0)
				}
				return one(c.Stats.PrefixHits / c.Stats.PrefixQueries)
			}),
			g("vllm:avg_prompt_throughput_toks_per_s", "Average prefill throughput in tokens/s.", func(c *enginemodel.Snapshot) []sample { return one(c.PromptRate) }),
			g("vllm:avg_generation_throughput_toks_per_s", "Average generation throughput in tokens/s.", func(c *enginemodel.Snapshot) []sample { return one(c.GenRate) }),
		)
	case V010:
		add(g("vllm:gpu_cache_usage_perc", "GPU KV-cache usage. 1 means 100 percent usage.DEPRECATED: Use vllm:kv_cache_usage_perc instead.", func(c *enginemodel.Snapshot) []sample { return one(c.KVUsage) }),
			ctr("vllm:gpu_prefix_cache_queries_total", "GPU prefix cache queries, in terms of number of queriedtokens. DEPRECATED: Use vllm:prefix_cache_queries instead.", func(c *enginemodel.Snapshot) []sample { return one(c.Stats.PrefixQueries) }),
			ctr("vllm:gpu_prefix_cache_hits_total", "GPU prefix cache hits, in terms of number of cached tokens. DEPRECATED: Use vllm:prefix_cache_hits instead.", func(c *enginemodel.Snapshot) []sample { return one(c.Stats.PrefixHits) }),
		)
	}
	if v.V1() {
		if v == V013 {
			add(&family{name: "vllm:engine_sleep_state", kind: famGauge, extra: "sleep_state",
				help: "Engine sleep state; awake = 0 means engine is sleeping; awake = 1 means engine is awake; weights_offloaded = 1 means sleep level 1; discard_all = 1 means sleep level 2.",
				value: func(*enginemodel.Snapshot) []sample {
					return []sample{{"awake", 1}, {"weights_offloaded", 0}, {"discard_all", 0}}
				}})
		}
		add(g("vllm:kv_cache_usage_perc", "KV-cache usage. 1 means 100 percent usage.", func(c *enginemodel.Snapshot) []sample { return one(c.KVUsage) }),
			ctr("vllm:prefix_cache_queries_total", "Prefix cache queries, in terms of number of queried tokens.", func(c *enginemodel.Snapshot) []sample { return one(c.Stats.PrefixQueries) }),
			ctr("vllm:prefix_cache_hits_total", "Prefix cache hits, in terms of number of cached tokens.", func(c *enginemodel.Snapshot) []sample { return one(c.Stats.PrefixHits) }),
		)
	}
	add(ctr("vllm:num_preemptions_total", "Cumulative number of preemption from the engine.", func(c *enginemodel.Snapshot) []sample { return one(c.Stats.Preemptions) }),
		ctr("vllm:prompt_tokens_total", "Number of prefill tokens processed.", func(c *enginemodel.Snapshot) []sample { return one(c.Stats.PromptTokensTotal) }))
	if v == V013 {
		add(&family{name: "vllm:prompt_tokens_by_source_total", help: "Number of prompt tokens by source.", kind: famCounter, extra: "source",
			value: func(c *enginemodel.Snapshot) []sample {
				return []sample{{"local_compute", c.Stats.PromptTokensTotal - c.Stats.PromptCached}, {"local_cache_hit", c.Stats.PromptCached}, {"external_kv_transfer", 0}}
			}},
			ctr("vllm:prompt_tokens_cached_total", "Number of cached prompt tokens (local + external).", func(c *enginemodel.Snapshot) []sample { return one(c.Stats.PromptCached) }),
			ctr("vllm:prompt_tokens_recomputed_total", "Number of cached tokens recomputed for forward pass.", func(*enginemodel.Snapshot) []sample { return one(0) }),
		)
	}
	add(ctr("vllm:generation_tokens_total", "Number of generation tokens processed.", func(c *enginemodel.Snapshot) []sample { return one(c.Stats.GenerationTokens) }),
		&family{name: "vllm:request_success_total", help: "Count of successfully processed requests.", kind: famCounter, extra: "finished_reason", lazy: !v.V1(),
			value: func(c *enginemodel.Snapshot) []sample {
				out := make([]sample, 0, 3)
				for i, r := range enginemodel.Reasons {
					out = append(out, sample{r, c.Stats.Success[i]})
				}
				return out
			}},
		h("vllm:request_prompt_tokens", "Number of prefill tokens processed.", func(s *enginemodel.Stats) *enginemodel.Histogram { return s.PromptTokensH }),
		h("vllm:request_generation_tokens", "Number of generation tokens processed.", func(s *enginemodel.Stats) *enginemodel.Histogram { return s.GenTokensH }),
		h("vllm:iteration_tokens_total", "Histogram of number of tokens per engine_step.", func(s *enginemodel.Stats) *enginemodel.Histogram { return s.IterationTokens }),
		h("vllm:request_max_num_generation_tokens", "Histogram of maximum number of requested generation tokens.", func(s *enginemodel.Stats) *enginemodel.Histogram { return s.MaxGenTokensH }),
		h("vllm:request_params_n", "Histogram of the n request parameter.", func(s *enginemodel.Stats) *enginemodel.Histogram { return s.ParamsN }),
		h("vllm:request_params_max_tokens", "Histogram of the max_tokens request parameter.", func(s *enginemodel.Stats) *enginemodel.Histogram { return s.MaxTokensH }),
		h("vllm:time_to_first_token_seconds", "Histogram of time to first token in seconds.", func(s *enginemodel.Stats) *enginemodel.Histogram { return s.TTFT }),
	)
	switch v {
	case V06, V010:
		add(h("vllm:time_per_output_token_seconds", "Histogram of time per output token in seconds.", func(s *enginemodel.Stats) *enginemodel.Histogram { return s.ITL }))
	case V011:
		add(h("vllm:time_per_output_token_seconds", "Histogram of time per output token in seconds.DEPRECATED: Use vllm:inter_token_latency_seconds instead.", func(s *enginemodel.Stats) *enginemodel.Histogram { return s.ITL }))
	}
	if v == V011 || v == V013 {
		add(h("vllm:inter_token_latency_seconds", "Histogram of inter-token latency in seconds.", func(s *enginemodel.Stats) *enginemodel.Histogram { return s.ITL }),
			h("vllm:request_time_per_output_token_seconds", "Histogram of time_per_output_token_seconds per request.", func(s *enginemodel.Stats) *enginemodel.Histogram { return s.ReqTPOT }))
	}
	add(h("vllm:e2e_request_latency_seconds", e2eHelp, func(s *enginemodel.Stats) *enginemodel.Histogram { return s.E2E }),
		h("vllm:request_queue_time_seconds", "Histogram of time spent in WAITING phase for request.", func(s *enginemodel.Stats) *enginemodel.Histogram { return s.Queue }),
		h("vllm:request_inference_time_seconds", "Histogram of time spent in RUNNING phase for request.", func(s *enginemodel.Stats) *enginemodel.Histogram { return s.Inference }),
		h("vllm:request_prefill_time_seconds", "Histogram of time spent in PREFILL phase for request.", func(s *enginemodel.Stats) *enginemodel.Histogram { return s.Prefill }),
		h("vllm:request_decode_time_seconds", "Histogram of time spent in DECODE phase for request.", func(s *enginemodel.Stats) *enginemodel.Histogram { return s.Decode }),
	)
	if !v.V1() {
		add(h("vllm:time_in_queue_requests", "Histogram of time the request spent in the queue in seconds.", func(s *enginemodel.Stats) *enginemodel.Histogram { return s.Queue }))
	}
	if v == V013 {
		add(h("vllm:request_prefill_kv_computed_tokens", "Histogram of new KV tokens computed during prefill (excluding cached tokens).", func(s *enginemodel.Stats) *enginemodel.Histogram { return s.PrefillKVComputed }))
	}
	return fs
}

// vllmCollector exposes a Sim's vLLM metrics. It is an unchecked collector
// (Describe sends nothing) so that families may appear lazily as in V0.
type vllmCollector struct {
	s        *Sim
	fams     []*family
	cacheCfg *prometheus.Desc
	cacheLV  []string
	procDesc *prometheus.Desc
	loraDesc *prometheus.Desc
	labels   []string // base label values
}

func newVLLMCollector(s *Sim) *vllmCollector {
	cfgv := s.Config()
	cfg := &cfgv
	v := cfg.Version
	base := []string{"model_name"}
	lv := []string{cfg.Model.Name}
	if v.V1() {
		base = []string{"engine", "model_name"}
		lv = []string{"0", cfg.Model.Name}
	}
	c := &vllmCollector{s: s, fams: families(v, cfg), labels: lv}
	for _, f := range c.fams {
		names := base
		if f.extra != "" {
			names = append(append([]string{}, base...), f.extra)
		}
		f.desc = prometheus.NewDesc(f.name, f.help, names, nil)
	}
	pyBool := func(b bool) string {
		if b {
			return "True"
		}
		return "False"
	}
	gmu := strconv.FormatFloat(cfg.GPUMemoryUtil, 'f', -1, 64)
	nblocks := strconv.Itoa(cfg.NumGPUBlocks)
	if v.V1() {
		names := []string{"block_size", "cache_dtype", "calculate_kv_scales", "cpu_kvcache_space_bytes", "cpu_offload_gb",
			"enable_prefix_caching", "engine", "gpu_memory_utilization", "is_attention_free", "kv_sharing_fast_prefill",
			"mamba_cache_dtype", "mamba_page_size_padded", "mamba_ssm_cache_dtype", "num_cpu_blocks", "num_gpu_blocks",
			"num_gpu_blocks_override", "prefix_caching_hash_algo", "sliding_window", "swap_space", "swap_space_bytes"}
		c.cacheLV = []string{strconv.Itoa(cfg.BlockSize), "auto", "False", "None", "0.0", pyBool(cfg.PrefixCaching), "0", gmu,
			"False", "False", "auto", "None", "auto", "None", nblocks, "None", "sha256", "None", "4.0", "4294967296.0"}
		if v != V010 {
			names = append(names, "kv_cache_memory_bytes")
			c.cacheLV = append(c.cacheLV, "None")
		}
		c.cacheCfg = prometheus.NewDesc("vllm:cache_config_info", "Information of the LLMEngine CacheConfig", names, nil)
	} else {
		names := []string{"block_size", "cache_dtype", "cpu_offload_gb", "enable_prefix_caching", "gpu_memory_utilization",
			"num_cpu_blocks", "num_gpu_blocks", "num_gpu_blocks_override", "sliding_window", "swap_space_bytes"}
		cpuBlocks := strconv.Itoa(int(4294967296 / (cfg.Model.KVBytesPerToken * float64(cfg.BlockSize))))
		c.cacheLV = []string{strconv.Itoa(cfg.BlockSize), "auto", "0", pyBool(cfg.PrefixCaching), gmu, cpuBlocks, nblocks, "None", "None", "4294967296"}
		c.cacheCfg = prometheus.NewDesc("vllm:cache_config_info", "Information of the LLMEngine CacheConfig", names, nil)
		c.loraDesc = prometheus.NewDesc("vllm:lora_requests_info", "Running stats on lora requests.",
			[]string{"max_lora", "running_lora_adapters", "waiting_lora_adapters"}, nil)
	}
	c.procDesc = prometheus.NewDesc("process_start_time_seconds", "Start time of the process since unix epoch in seconds.", nil, nil)
	return c
}

// Describe sends nothing: an unchecked collector.
func (c *vllmCollector) Describe(chan<- *prometheus.Desc) {}

// Collect reads a snapshot of the simulator under its lock and sends every sample.
func (c *vllmCollector) Collect(ch chan<- prometheus.Metric) {
	c.s.Inspect(func(snap *enginemodel.Snapshot) { c.collect(ch, snap) })
}

// collect sends every sample of snap; the Core's lock is held.
func (c *vllmCollector) collect(ch chan<- prometheus.Metric, snap *enginemodel.Snapshot) {
	ch <- prometheus.MustNewConstMetric(c.procDesc, prometheus.GaugeValue, snap.StartUnix)
	for _, f := range c.fams {
		switch f.kind {
		case famHist:
			h := f.hist(snap.Stats)
			if f.lazy && h.Count() == 0 {
				continue
			}
			ch <- prometheus.MustNewConstHistogram(f.desc, h.Count(), h.Sum(), h.Cumulative(), c.labels...)
		default:
			vt := prometheus.GaugeValue
			if f.kind == famCounter {
				vt = prometheus.CounterValue
			}
			for _, smp := range f.value(snap) {
				if f.lazy && smp.v == 0 {
					continue
				}
				lv := c.labels
				if f.extra != "" {
					lv = append(append(make([]string, 0, len(lv)+1), lv...), smp.extra)
				}
				ch <- prometheus.MustNewConstMetric(f.desc, vt, smp.v, lv...)
			}
		}
	}
	ch <- prometheus.MustNewConstMetric(c.cacheCfg, prometheus.GaugeValue, 1, c.cacheLV...)
	if c.loraDesc != nil {
		ch <- prometheus.MustNewConstMetric(c.loraDesc, prometheus.GaugeValue, snap.NowUnix, "0", "", "")
	}
}
