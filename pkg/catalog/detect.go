package catalog

import (
	"fmt"
	"strconv"
	"strings"
)

// Detection is what Detect concludes about the software behind a page.
type Detection struct {
	Engine Engine
	// Generation is "v0" or "v1" for vLLM (engine generation), "" otherwise or when the page
	// does not tell (or carries markers of both, as hand-merged fixtures do).
	Generation string
	// Version is the narrowest release range the names allow: "0.11-0.12", "0.13+", "0.4",
	// VersionSGLangPrerelease, or "" when nothing narrows it (or markers conflict).
	Version string
	// Evidence lists, in a fixed order, each fact the conclusion rests on, as sentences.
	Evidence []string
	// ReExporter is set when the page is a gateway's re-export of other servers' engine series
	// (ReExporterProductionStack, ReExporterSMG), "" for an engine's own page. Engine is then
	// the engine whose names the copies carry. See ReExportLabels.
	ReExporter string
}

// openEnd is the upper bound of an open version range ("0.13+").
const openEnd = 99

// marker ties the presence of one family to an engine generation and a range of minor
// versions 0.lo … 0.hi (openEnd = no upper bound).
type marker struct {
	name   string
	gen    string
	lo, hi int
	why    string
}

// vllmMarkers: version facts from engines.md §1.1–1.4.
var vllmMarkers = []marker{
	{"vllm:num_requests_swapped", "v0", 2, 7, "swap queue exists only in V0 (hidden from 0.8)"},
	{"vllm:cpu_cache_usage_perc", "v0", 2, 7, "CPU swap cache exists only in V0 (hidden from 0.8)"},
	{"vllm:gpu_prefix_cache_hit_rate", "v0", 6, 7, "prefix-cache hit-rate gauge is V0, 0.6-0.7"},
	{"vllm:cpu_prefix_cache_hit_rate", "v0", 6, 7, "prefix-cache hit-rate gauge is V0, 0.6-0.7"},
	{"vllm:avg_prompt_throughput_toks_per_s", "v0", 2, 7, "throughput gauges removed in 0.7.1"},
	{"vllm:avg_generation_throughput_toks_per_s", "v0", 2, 7, "throughput gauges removed in 0.7.1"},
	{"vllm:request_params_best_of", "v0", 4, 6, "best_of removed in 0.6"},
	{"vllm:time_in_queue_requests", "v0", 6, 7, "duplicate queue histogram is V0 only"},
	{"vllm:model_forward_time_milliseconds", "v0", 6, 10, "model forward time is V0 only"},
	{"vllm:model_execute_time_milliseconds", "v0", 6, 10, "model execute time is V0 only"},
	{"vllm:spec_decode_draft_acceptance_rate", "v0", 5, 10, "spec-decode gauges are V0 only"},
	{"vllm:spec_decode_efficiency", "v0", 5, 10, "spec-decode gauges are V0 only"},
	{"vllm:gpu_cache_usage_perc", "", 2, 10, "gpu_cache_usage_perc gone by 0.11"},
	{"vllm:kv_cache_usage_perc", "v1", 9, openEnd, "kv_cache_usage_perc since 0.9 (V1)"},
	{"vllm:gpu_prefix_cache_queries_total", "v1", 8, 10, "gpu_prefix_cache counters are V1 0.8-0.10"},
	{"vllm:gpu_prefix_cache_hits_total", "v1", 8, 10, "gpu_prefix_cache counters are V1 0.8-0.10"},
	{"vllm:prefix_cache_queries_total", "v1", 9, openEnd, "prefix_cache counters since 0.9 (V1)"},
	{"vllm:prefix_cache_hits_total", "v1", 9, openEnd, "prefix_cache counters since 0.9 (V1)"},
	{"vllm:spec_decode_num_drafts_total", "v1", 9, openEnd, "V1 spec-decode counters"},
	{"vllm:time_per_prefill_token_request_seconds", "v1", 10, 10, "per-prefill-token histogram seen only in 0.10"},
	{"vllm:time_per_output_token_seconds", "", 2, 12, "time_per_output_token removed in 0.13"},
	{"vllm:inter_token_latency_seconds", "v1", 11, openEnd, "inter_token_latency since 0.11"},
	{"vllm:request_time_per_output_token_seconds", "v1", 11, openEnd, "per-request TPOT since 0.11"},
	{"vllm:engine_sleep_state", "v1", 11, openEnd, "engine_sleep_state since 0.11"},
	{"vllm:kv_block_lifetime_seconds", "v1", 12, openEnd, "KV residency histograms since 0.12"},
	{"vllm:prompt_tokens_by_source_total", "v1", 13, openEnd, "prompt_tokens_by_source since 0.13"},
	{"vllm:prompt_tokens_cached_total", "v1", 13, openEnd, "prompt_tokens_cached since 0.13"},
	{"vllm:prompt_tokens_recomputed_total", "v1", 13, openEnd, "prompt_tokens_recomputed since 0.13"},
	{"vllm:request_prefill_kv_computed_tokens", "v1", 13, openEnd, "request_prefill_kv_computed_tokens since 0.13"},
	{"vllm:num_requests_waiting_by_reason", "v1", 13, openEnd, "waiting-by-reason gauge is newer than 0.13"},
	{"vllm:external_prefix_cache_queries_total", "v1", 7, openEnd, "KV-connector cache counters are V1"},
	{"vllm:mm_cache_queries_total", "v1", 7, openEnd, "multimodal cache counters are V1"},
	{"vllm:e2e_request_latency_seconds", "", 4, openEnd, "request histograms since 0.4"},
	{"vllm:iteration_tokens_total", "", 4, openEnd, "iteration_tokens since 0.4"},
	{"vllm:request_queue_time_seconds", "", 5, openEnd, "request-phase histograms since 0.5"},
	{"vllm:lora_requests_info", "", 6, openEnd, "lora_requests_info since 0.6.4"},
	{"vllm:tool_call_parser_invocations_total", "v1", 24, openEnd, "tool-call parser counter since 0.24 (PR #44448)"},
	{"vllm:admission_rejections_total", "v1", 7, openEnd, "admission rejections are counted by the V1 front end"},
	{"vllm:nixl_xfer_time_seconds", "v1", 9, openEnd, "NIXL connector metrics are V1"},
	{"vllm:kv_offload_total_bytes_total", "v1", 11, openEnd, "KV offloading connector metrics are V1"},
	{"vllm:lora_adapter_loaded", "v1", 7, openEnd, "loaded-adapter residency gauge is V1"},
}

// sglangPrerelease are the never-released names of the 2024 work-in-progress builds
// (sgl-project/sglang PR #1461 and the first "Production Metrics" page).
var sglangPrerelease = []string{"sglang:new_seq", "sglang:new_token", "sglang:cached_token",
	"sglang:queue_req", "sglang:num_requests_running", "sglang:num_requests_waiting",
	"sglang:waiting_request_latency_seconds"}

var sglangMarkers = []marker{
	{"sglang:max_prefill_tokens", "", 3, 3, "config gauges of the first release (0.3)"},
	{"sglang:max_running_requests", "", 3, 3, "config gauges of the first release (0.3)"},
	{"sglang:time_per_output_token_seconds", "", 3, 4, "running-average TPOT replaced by ITL in 0.4.x"},
	{"sglang:func_latency_seconds", "", 4, 4, "func_latency histogram of 0.4"},
	{"sglang:num_queue_reqs", "", 4, openEnd, "scheduler gauges renamed in 0.4"},
	{"sglang:num_running_reqs", "", 4, openEnd, "scheduler gauges renamed in 0.4"},
	{"sglang:num_used_tokens", "", 4, openEnd, "scheduler gauges renamed in 0.4"},
	{"sglang:inter_token_latency_seconds", "", 4, openEnd, "ITL histogram since 0.4.x"},
	{"sglang:num_prefill_prealloc_queue_reqs", "", 4, openEnd, "PD-disaggregation queues since 0.4.4"},
	{"sglang:queue_time_seconds", "", 5, openEnd, "scheduler queue histogram since 0.5"},
	{"sglang:num_retracted_reqs", "", 5, openEnd, "retraction metrics since 0.5"},
	{"sglang:num_retracted_requests_total", "", 5, openEnd, "retraction metrics since 0.5"},
	{"sglang:per_stage_req_latency_seconds", "", 5, openEnd, "per-stage latency since 0.5"},
	{"sglang:realtime_tokens_total", "", 5, openEnd, "realtime token counters since 0.5"},
	{"sglang:cuda_graph_passes_total", "", 5, openEnd, "CUDA-graph pass counters since 0.5"},
	{"sglang:kv_used_tokens", "", 5, openEnd, "kv_*_tokens gauges since 0.5.11"},
}

// trtllmUnprefixed are the core names the first trtllm-serve metrics exposed without prefix.
var trtllmUnprefixed = []string{"time_to_first_token_seconds", "time_per_output_token_seconds",
	"e2e_request_latency_seconds", "request_queue_time_seconds", "request_success_total"}

var tritonPrefixes = []string{"nv_inference_", "nv_trt_llm_", "nv_gpu_", "nv_cache_", "nv_energy_", "nv_cpu_"}

// nameSet holds normalised names and the exposure oddities met while normalising.
type nameSet struct {
	has         map[string]bool
	ray, smgRaw bool
}

// normalise maps an exposure variant to the engine's own name: `ray_vllm:x` and `ray_vllm_x`
// (Ray metrics agent) → `vllm:x`; `sglang_x` (smg router) → `sglang:x`.
func normalise(n string) (string, string) {
	switch {
	case strings.HasPrefix(n, "ray_vllm:"):
		return "vllm:" + strings.TrimPrefix(n, "ray_vllm:"), "ray"
	case strings.HasPrefix(n, "ray_vllm_"):
		return "vllm:" + strings.TrimPrefix(n, "ray_vllm_"), "ray"
	case strings.HasPrefix(n, "sglang_"):
		return "sglang:" + strings.TrimPrefix(n, "sglang_"), "smg"
	}
	return n, ""
}

var sampleSuffixes = []string{"_bucket", "_sum", "_count", "_created", "_total", "_info"}

func newNameSet(names []string) nameSet {
	ns := nameSet{has: make(map[string]bool, 2*len(names))}
	for _, raw := range names {
		n, how := normalise(strings.TrimSpace(raw))
		if n == "" {
			continue
		}
		switch how {
		case "ray":
			ns.ray = true
		case "smg":
			ns.smgRaw = true
		}
		ns.has[n] = true
		for _, suf := range sampleSuffixes {
			if b, ok := strings.CutSuffix(n, suf); ok && b != "" {
				ns.has[b] = true
			}
		}
	}
	return ns
}

// has reports whether a family is present. Counter markers are written with _total; a page may
// give the family as declared (without _total), so both forms are tried.
func (ns nameSet) present(name string) bool {
	if ns.has[name] {
		return true
	}
	if b, ok := strings.CutSuffix(name, "_total"); ok {
		return ns.has[b] || ns.has[b+"_total"]
	}
	return false
}

func (ns nameSet) countPrefix(prefixes ...string) int {
	c := 0
	for n := range ns.has {
		for _, p := range prefixes {
			if strings.HasPrefix(n, p) {
				c++
				break
			}
		}
	}
	return c
}

// Detect names the engine behind a page from its metric names, with the engine generation
// (vLLM) and the narrowest version range the names allow. names are stored sample names
// (with _bucket/_sum/_count/_total suffixes) or family names from HELP/TYPE lines; order and
// duplicates do not matter. Labels are not needed (and vLLM's `engine` label could not tell
// V0 from V1 anyway: it appeared within V1). The engine with the most recognised families
// wins among LLM engines; GPU exporters win only when no LLM engine family is present.
// Never fails: an empty or unknown page gives EngineUnknown.
func Detect(names []string) Detection {
	ns := newNameSet(names)
	unpref := 0
	for _, n := range trtllmUnprefixed {
		if ns.present(n) {
			unpref++
		}
	}
	counts := map[Engine]int{
		EngineVLLM:          ns.countPrefix("vllm:"),
		EngineSGLang:        ns.countPrefix("sglang:"),
		EngineTGI:           ns.countPrefix("tgi_"),
		EngineLlamaCpp:      ns.countPrefix("llamacpp:"),
		EngineTRTLLM:        ns.countPrefix("trtllm_") + unpref,
		EngineTriton:        ns.countPrefix(tritonPrefixes...),
		EngineCustom:        ns.countPrefix(UserMetricPrefix),
		EngineLLMDEPP:       ns.countPrefix(eppMarkers...),
		EngineLiteLLM:       ns.countPrefix(liteLLMMarker),
		EngineOTelGenAI:     ns.countPrefix(otelGenAIMarker),
		EngineDCGM:          ns.countPrefix("DCGM_FI_"),
		EngineInferscopeGPU: ns.countPrefix(GPUAgentPrefix),
	}
	best, bestN := EngineUnknown, 0
	for _, e := range Engines {
		if e == EngineDCGM || e == EngineInferscopeGPU {
			continue
		}
		if counts[e] > bestN {
			best, bestN = e, counts[e]
		}
	}
	if bestN == 0 {
		for _, e := range []Engine{EngineInferscopeGPU, EngineDCGM} {
			if counts[e] > bestN {
				best, bestN = e, counts[e]
			}
		}
	}
	d := Detection{Engine: best}
	if best == EngineUnknown {
		d.Evidence = []string{"no known engine or GPU exporter metric family"}
		return d
	}
	d.Evidence = []string{fmt.Sprintf("%d %s metric families", bestN, best)}
	switch best {
	case EngineVLLM:
		detectVLLM(ns, &d)
	case EngineSGLang:
		detectSGLang(ns, &d)
	case EngineTRTLLM:
		if ns.countPrefix("trtllm_") == 0 {
			d.Evidence = append(d.Evidence, "unprefixed core names (time_to_first_token_seconds, …): first trtllm-serve metrics (TensorRT-LLM PR #5785, 2025)")
		}
	case EngineLLMDEPP:
		detectEPP(ns, &d)
	case EngineLiteLLM, EngineOTelGenAI:
		detectHosted(ns, &d)
	case EngineLlamaCpp:
		if ns.present("llamacpp:kv_cache_usage_ratio") {
			d.Evidence = append(d.Evidence, "kv-cache gauges present: a build from before mid-2025 (removed by llama.cpp PR #13660)")
		}
	case EngineTriton:
		if ns.countPrefix("vllm:") > 0 {
			d.Evidence = append(d.Evidence, "vllm:* families present: Triton vLLM backend")
		}
		if ns.countPrefix("nv_trt_llm_") > 0 {
			d.Evidence = append(d.Evidence, "nv_trt_llm_* families present: Triton TensorRT-LLM backend")
		}
	}
	detectReExporter(ns, &d)
	return d
}

type rangeAcc struct {
	lo, hi   int
	set      bool
	conflict bool
}

func (r *rangeAcc) add(lo, hi int) {
	if !r.set {
		r.lo, r.hi, r.set = lo, hi, true
		return
	}
	r.lo, r.hi = max(r.lo, lo), min(r.hi, hi)
	if r.lo > r.hi {
		r.conflict = true
	}
}

func (r rangeAcc) String() string {
	if !r.set || r.conflict {
		return ""
	}
	return formatRange(r.lo, r.hi)
}

func formatRange(lo, hi int) string {
	switch {
	case hi >= openEnd:
		return fmt.Sprintf("0.%d+", lo)
	case lo == hi:
		return fmt.Sprintf("0.%d", lo)
	default:
		return fmt.Sprintf("0.%d-0.%d", lo, hi)
	}
}

// parseVersionRange reads a Version written by Detect ("0.11-0.12", "0.13+", "0.4") back into
// minor-version bounds.
func parseVersionRange(v string) (lo, hi int, ok bool) {
	minor := func(s string) (int, bool) {
		s, found := strings.CutPrefix(strings.TrimSpace(s), "0.")
		if !found {
			return 0, false
		}
		n, err := strconv.Atoi(s)
		return n, err == nil && n >= 0
	}
	if a, found := strings.CutSuffix(v, "+"); found {
		l, ok := minor(a)
		return l, openEnd, ok
	}
	if a, b, found := strings.Cut(v, "-"); found {
		l, ok1 := minor(a)
		h, ok2 := minor(b)
		return l, h, ok1 && ok2 && l <= h
	}
	m, ok := minor(v)
	return m, m, ok
}

func detectVLLM(ns nameSet, d *Detection) {
	if ns.ray {
		d.Evidence = append(d.Evidence, "ray_vllm names: exported through Ray's metrics agent (Ray buckets count a value equal to a bound in the next bucket)")
	}
	var r rangeAcc
	v0, v1 := false, false
	for _, m := range vllmMarkers {
		if !ns.present(m.name) {
			continue
		}
		r.add(m.lo, m.hi)
		gen := ""
		switch m.gen {
		case "v0":
			v0, gen = true, ", V0"
		case "v1":
			v1, gen = true, ", V1"
		}
		d.Evidence = append(d.Evidence, fmt.Sprintf("%s present: %s (%s%s)", m.name, m.why, formatRange(m.lo, m.hi), gen))
	}
	absence := func(present, missing string, lo, hi int, why string) {
		if ns.present(present) && !ns.present(missing) {
			r.add(lo, hi)
			d.Evidence = append(d.Evidence, fmt.Sprintf("%s without %s: %s (%s)", present, missing, why, formatRange(lo, hi)))
		}
	}
	absence("vllm:kv_cache_usage_perc", "vllm:gpu_cache_usage_perc", 11, openEnd, "the deprecated name is gone")
	absence("vllm:prefix_cache_queries_total", "vllm:gpu_prefix_cache_queries_total", 11, openEnd, "the deprecated name is gone")
	absence("vllm:time_per_output_token_seconds", "vllm:inter_token_latency_seconds", 2, 10, "inter_token_latency not yet added")
	absence("vllm:inter_token_latency_seconds", "vllm:time_per_output_token_seconds", 12, openEnd, "the deprecated name is hidden")
	switch {
	case v0 && v1:
		d.Evidence = append(d.Evidence, "markers of both V0 and V1: a merged or hand-edited page; generation unknown")
	case v0:
		d.Generation = "v0"
		r.add(2, 10)
	case v1:
		d.Generation = "v1"
		r.add(7, openEnd)
	default:
		// V1 creates its prefix-cache counters at start-up, so a complete engine page
		// (scheduler gauge plus the per-step histogram) without any is V0; and V0 pages
		// without the swap families are 0.8+ (hidden-deprecated there).
		if ns.present("vllm:num_requests_running") && ns.present("vllm:iteration_tokens_total") {
			d.Generation = "v0"
			r.add(8, 10)
			d.Evidence = append(d.Evidence, "complete page without V1 prefix-cache counters (V1 creates them at start-up) and without V0 swap families (hidden from 0.8): V0, 0.8-0.10")
		}
	}
	if r.conflict {
		d.Evidence = append(d.Evidence, "version markers conflict; version unknown")
	}
	d.Version = r.String()
}

func detectSGLang(ns nameSet, d *Detection) {
	if ns.smgRaw {
		d.Evidence = append(d.Evidence, "sglang_ names: re-exported by the smg router with colons replaced by underscores")
	}
	for _, n := range sglangPrerelease {
		if ns.present(n) {
			d.Version = VersionSGLangPrerelease
			d.Evidence = append(d.Evidence, n+" present: a never-released pre-0.3.5 metric name")
			return
		}
	}
	var r rangeAcc
	for _, m := range sglangMarkers {
		if ns.present(m.name) {
			r.add(m.lo, m.hi)
			d.Evidence = append(d.Evidence, fmt.Sprintf("%s present: %s (%s)", m.name, m.why, formatRange(m.lo, m.hi)))
		}
	}
	if r.conflict {
		d.Evidence = append(d.Evidence, "version markers conflict; version unknown")
	}
	d.Version = r.String()
}
