package main

// Panels of issue 33's parity rows (vLLM's speculative-decoding dashboard, its prompt and
// generation length heatmaps, tokens per engine step, dcgm-exporter's error and interconnect
// fields). Kept in their own file, added to the dashboards by one line each (Overview, GPU).

import (
	"github.com/grafana/grafana-foundation-sdk/go/dashboard"
	"github.com/grafana/grafana-foundation-sdk/go/heatmap"
	"github.com/grafana/grafana-foundation-sdk/go/timeseries"
)

// withParityRows adds the overview's collapsed rows of issue 33: speculative decoding (empty
// without --speculative-config) and engine steps and request lengths.
func withParityRows(b *dashboard.DashboardBuilder) {
	spec := row("Speculative decoding (vLLM with --speculative-config: vllm:spec_decode_*)").Collapsed(true)
	for _, p := range specDecodePanels() {
		spec.WithPanel(p)
	}
	b.WithRow(spec)
	steps := row("Engine steps and request lengths (vLLM: iteration_tokens, request_prompt_tokens, request_generation_tokens)").Collapsed(true)
	steps.WithPanel(tokensPerStepPanel())
	steps.WithPanel(tokenLengthHeatmap("prompt_length", "Prompt length heatmap", "Prompt tokens per finished request (vllm:request_prompt_tokens): requests per second in each bucket over the rate window, all selected targets and models merged (the tokens query with groupBy target gives one frame per target). A band moving up is longer prompts: more prefill per request and a higher TTFT at the same load."))
	steps.WithPanel(tokenLengthHeatmap("generation_length", "Generation length heatmap", "Generated tokens per finished request (vllm:request_generation_tokens): requests per second in each bucket over the rate window, all selected targets and models merged. A band at max_tokens is requests cut by their length limit (see finish reasons)."))
	b.WithRow(steps)
}

// specDecodeNoValue is the hint of a speculative-decoding panel without data.
const specDecodeNoValue = "No speculative decoding: vLLM exports vllm:spec_decode_* only with --speculative-config"

// specDecodePanels are the speculative-decoding panels: acceptance rate, mean acceptance
// length, accepted and draft tokens/s, acceptance by draft position (the throughput query's
// output="spec_decode" series, per target).
func specDecodePanels() []*timeseries.PanelBuilder {
	q := func() queryBuilder { return query(sel("queryType", "throughput", "groupBy", "target")...) }
	return []*timeseries.PanelBuilder{
		ts("Draft acceptance rate", "Per target: accepted draft tokens / proposed draft tokens over the rate window (vllm:spec_decode_num_accepted_tokens_total over _num_draft_tokens_total). Low acceptance means the draft model (or n-gram lookup) guesses badly and speculation costs compute for little gain.",
			unitRatio, 6, legendH, q()).
			Transformations([]dashboard.DataTransformerConfig{keepFields(`spec decode: acceptance rate.*`)}).
			Min(0).Max(1).Legend(legendTable()).NoValue(specDecodeNoValue),
		ts("Mean acceptance length", "Per target: tokens emitted per draft, 1 + accepted / drafts (the bonus token included). 1 means no draft token is ever accepted; the ceiling is 1 + the number of speculative tokens.",
			unitCount, 6, legendH, q()).
			Transformations([]dashboard.DataTransformerConfig{keepFields(`spec decode: mean acceptance length.*`)}).
			Min(1).Legend(legendTable()).NoValue(specDecodeNoValue),
		ts("Accepted and draft tokens/s", "Per target: draft tokens proposed per second and the accepted ones; the gap is speculation the target model threw away.",
			unitTokens, 6, legendH, q()).
			Transformations([]dashboard.DataTransformerConfig{keepFields(`spec decode: (accepted|draft) tok/s.*`)}).
			Min(0).Legend(legendTable()).NoValue(specDecodeNoValue),
		ts("Acceptance rate by draft position", "Per target and draft position: accepted tokens at the position / drafts (vllm:spec_decode_num_accepted_tokens_per_pos_total). It falls with the position; a steep fall says fewer speculative tokens would do as well.",
			unitRatio, 6, legendH, q()).
			Transformations([]dashboard.DataTransformerConfig{keepFields(`spec decode: position.*`)}).
			Min(0).Max(1).Legend(legendTable()).NoValue(specDecodeNoValue),
	}
}

// tokensPerStepPanel draws the mean, p50, p95 and p99 tokens per engine step per target (the
// tokens query on vllm:iteration_tokens_total).
func tokensPerStepPanel() *timeseries.PanelBuilder {
	return ts("Tokens per engine step", "Per target: mean, p50, p95 and p99 of the tokens (prompt and generated) the engine scheduled per step over the rate window (vllm:iteration_tokens_total). Small steps under load mean the batch is not filling (a low --max-num-seqs or KV-cache pressure); steps at --max-num-batched-tokens mean the token budget is the limit.",
		unitCount, 12, legendH, query(sel("queryType", "tokens", "signals", []string{"iteration_tokens"}, "stats", []string{"mean", "p50", "p95", "p99"}, "groupBy", "target")...)).
		Min(0).Legend(legendTable()).
		NoValue("No tokens per step: vLLM exports vllm:iteration_tokens_total (other engines do not)")
}

// tokenLengthHeatmap is the heatmap of a tokens-query length histogram (requests per second
// per bucket; y axis in tokens).
func tokenLengthHeatmap(signal, title, desc string) *heatmap.PanelBuilder {
	return bucketHeatmap(title, desc, 6, 8, query(sel("queryType", "tokens", "signals", []string{signal}, "format", "heatmap", "groupBy", "none")...), unitCount, "Blues", "dark-blue")
}

// withGPUErrorRow adds the GPU dashboard's collapsed row of XID, ECC, PCIe and NVLink panels
// (the gpu query's error and interconnect signals, asked by name), each saying what fills it.
func withGPUErrorRow(b *dashboard.DashboardBuilder, gq func(signals ...string) queryBuilder) {
	r := row("Errors and interconnect (XID, ECC, PCIe replays, NVLink: dcgm-exporter fields or the Inferscope GPU agent)").Collapsed(true)
	errTS := func(title, desc, unit string, w uint32, noValue string, signals ...string) *timeseries.PanelBuilder {
		name := gpuName
		if len(signals) > 1 {
			name = gpuSignalName
		}
		return ts(title, desc, unit, w, legendH, gq(signals...)).Legend(legendTable()).DisplayName(name).Min(0).NoValue(noValue)
	}
	r.WithPanel(errTS("Last XID error", "dcgm-exporter's DCGM_FI_DEV_XID_ERRORS per GPU: the number of the last XID error (0: none), not a count; a step to a new value is a new error (79: fallen off the bus, 48: double-bit ECC, 94/95: contained/uncontained ECC).",
		unitNone, 6, "No XID field: dcgm-exporter exports DCGM_FI_DEV_XID_ERRORS by default; the Inferscope agent counts XID events instead (next panel)", "xid_last"))
	r.WithPanel(errTS("XID events in the window", "Inferscope GPU agent: XID critical-error events per GPU and XID number in the rate window, from NVML's event API.",
		unitCount, 6, "No XID events counted: the Inferscope GPU agent counts them (dcgm-exporter keeps only the last XID, left panel)", "xid_errors"))
	r.WithPanel(errTS("ECC errors in the window", "Single-bit (corrected) and double-bit (uncorrected) ECC errors per GPU in the rate window: volatile since the driver loaded, aggregate over the GPU's life. Any double-bit error needs the GPU drained and checked; a rising single-bit count is memory wearing out.",
		unitCount, 12, "No ECC counters: enable DCGM_FI_DEV_ECC_SBE/DBE_VOL/AGG_TOTAL in dcgm-exporter's counters file, or run the Inferscope GPU agent; GPUs without ECC report none",
		"ecc_sbe_volatile", "ecc_dbe_volatile", "ecc_sbe_aggregate", "ecc_dbe_aggregate"))
	r.WithPanel(errTS("PCIe replays in the window", "PCIe link-level retries per GPU in the rate window (DCGM_FI_DEV_PCIE_REPLAY_COUNTER, or the agent's NVML nvmlDeviceGetPcieReplayCounter). A steady rise is a marginal link: riser, slot or cable.",
		unitCount, 6, "No PCIe replay counter: dcgm-exporter exports DCGM_FI_DEV_PCIE_REPLAY_COUNTER by default, the Inferscope GPU agent inferscope_gpu_pcie_replays_total", "pcie_replays"))
	r.WithPanel(errTS("NVLink bandwidth", "NVLink payload sent and received per GPU, bytes/s (DCGM profiling fields DCGM_FI_PROF_NVLINK_TX_BYTES and _RX_BYTES, off by default). Tensor-parallel serving moves activations over NVLink every step: a GPU far below its peers is a link down or a topology problem.",
		"Bps", 6, "No NVLink byte rates: enable DCGM_FI_PROF_NVLINK_TX_BYTES and _RX_BYTES in dcgm-exporter's counters file (GPUs without NVLink report none)", "nvlink_tx", "nvlink_rx"))
	r.WithPanel(errTS("NVLink bandwidth counter", "dcgm-exporter's default NVLink field DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL (all links) as a rate per second. DCGM does not document the counter's unit: read it as a trend against the other GPUs, not as bytes/s.",
		unitCount, 6, "No NVLink bandwidth counter: dcgm-exporter exports DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL by default on GPUs with NVLink", "nvlink_bandwidth_total"))
	r.WithPanel(errTS("NVLink errors in the window", "NVLink CRC (flit and data), replay and recovery errors per GPU in the rate window, all links summed. Recovery errors are link retrains; a rising count degrades tensor-parallel step times.",
		unitCount, 6, "No NVLink error counters: enable DCGM_FI_DEV_NVLINK_*_ERROR_COUNT_TOTAL in dcgm-exporter's counters file",
		"nvlink_crc_flit_errors", "nvlink_crc_data_errors", "nvlink_replay_errors", "nvlink_recovery_errors"))
	b.WithRow(r)
}
