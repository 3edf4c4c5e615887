// Package throughput turns windowed counter rates into request and token
// throughput series: finished requests per second by finish reason, prompt
// tokens per second and generation tokens per second.
package throughput

import (
	"time"

	"github.com/prometheus/common/model"

	"github.com/inferscope/inferscope-llm-datasource/pkg/analysis"
)

// UnitTokensPerSecond is the Grafana unit of token rates: a custom count
// unit ("count:<text>"), so values read "1.2 K tok/s" and never share an
// axis with request counts.
const UnitTokensPerSecond = "count:tok/s"

// Input holds PromQL range results of per-second counter rates, already
// summed by the group labels (finished additionally by finished_reason).
type Input struct {
	Finished, PromptTokens, GenerationTokens model.Matrix
	// Rejections is the rate of vLLM's admission rejections (requests/s), summed by the group
	// labels and reason; nil when no target in scope exports the family.
	Rejections model.Matrix
	// ToolCalls is the rate of tool-call parser invocations (invocations/s), summed by the
	// group labels, mode, outcome and request_type; nil when no target exports it.
	ToolCalls model.Matrix
	// KVOffloadBytes and KVOffloadTime are the rates of the KV offloading connector's byte
	// (bytes/s) and time (seconds of transfer per second) counters, summed by the group labels
	// and transfer_type; nil when no target exports them.
	KVOffloadBytes, KVOffloadTime model.Matrix
	// NIXLBytesPerTransfer and NIXLSecondsPerTransfer are the windowed means of the NIXL
	// connector's histograms (rate of _sum / rate of _count): bytes and seconds per transfer.
	NIXLBytesPerTransfer, NIXLSecondsPerTransfer model.Matrix
	// GatewayErrors is the rate of the llm-d router's failed requests (requests/s), summed by
	// the group labels and error_code; SLOViolations the rate of its predicted-latency plugin's
	// SLO violations (requests/s), by the group labels and type. nil when no target exports them.
	GatewayErrors, SLOViolations model.Matrix
	// PromptTokensBySource is the rate of vLLM's prompt_tokens_by_source (tokens/s), summed
	// by the group labels and source (local_compute, local_cache_hit, external_kv_transfer);
	// nil when no target in scope exports the family (vLLM 0.13 and later).
	PromptTokensBySource model.Matrix
	// SpecAccepted, SpecDraftTokens and SpecDrafts are the rates of vLLM's speculative-decoding
	// counters (accepted draft tokens/s, proposed draft tokens/s, drafts/s), summed by the
	// group labels; SpecAcceptedPerPos the accepted tokens/s by the group labels and position.
	// nil when no target in scope exports them (see specDecode for the derived ratios).
	SpecAccepted, SpecDraftTokens, SpecDrafts, SpecAcceptedPerPos model.Matrix
}

// Compute returns series labelled signal ∈ {requests_finished,
// prompt_tokens, generation_tokens} (and, where exported, rejections, tool-call
// invocations, gateway errors, SLO violations, prompt_tokens_by_source by source,
// the KV transfer breakdown and the speculative-decoding series of specDecode): requests/s (unit reqps, with a
// finished_reason label renamed reason) and tokens/s (UnitTokensPerSecond,
// Grafana's custom suffix unit: Grafana has no tokens-per-second unit). Rates come from PromQL's
// rate(), which handles counter resets on engine restarts.
func Compute(in Input, steps []time.Time) []analysis.Series {
	var out []analysis.Series
	for _, s := range analysis.FromMatrix(in.Finished, steps, "requests/s", "reqps", map[string]string{"signal": "requests_finished"}) {
		if r, ok := s.Labels["finished_reason"]; ok {
			delete(s.Labels, "finished_reason")
			s.Labels["reason"] = r
			s.Name = "requests/s " + r
		}
		out = append(out, s)
	}
	out = append(out, analysis.FromMatrix(in.PromptTokens, steps, "prompt tokens/s", UnitTokensPerSecond, map[string]string{"signal": "prompt_tokens"})...)
	out = append(out, analysis.FromMatrix(in.GenerationTokens, steps, "generation tokens/s", UnitTokensPerSecond, map[string]string{"signal": "generation_tokens"})...)
	for _, s := range analysis.FromMatrix(in.Rejections, steps, "rejections/s", "reqps", map[string]string{"signal": "rejections"}) {
		if r, ok := s.Labels["reason"]; ok {
			s.Name = "rejections/s " + r
		}
		out = append(out, s)
	}
	for _, s := range analysis.FromMatrix(in.ToolCalls, steps, "tool-call parser invocations/s", "short", map[string]string{"signal": "tool_call_invocations"}) {
		if o, ok := s.Labels["outcome"]; ok {
			s.Name += " " + o
		}
		out = append(out, s)
	}
	for _, s := range analysis.FromMatrix(in.GatewayErrors, steps, "gateway errors/s", "reqps", map[string]string{"signal": "gateway_errors"}) {
		if c, ok := s.Labels["error_code"]; ok {
			s.Name += " " + c
		}
		out = append(out, s)
	}
	for _, s := range analysis.FromMatrix(in.SLOViolations, steps, "SLO violations/s", "reqps", map[string]string{"signal": "slo_violations"}) {
		if ty, ok := s.Labels["type"]; ok {
			s.Name += " " + ty
		}
		out = append(out, s)
	}
	// Labelled token_source; named "prompt tokens by source: <source>", so no "tokens/s" pattern of a panel that
	// sums the prompt and generation rates matches them and counts the prompt twice.
	for _, s := range analysis.FromMatrix(in.PromptTokensBySource, steps, "prompt tokens by source", UnitTokensPerSecond, map[string]string{"signal": "prompt_tokens_by_source"}) {
		// vLLM's label source clashes with the frames' own source label (analysis.Key
		// renames it exported_source): it is token_source here.
		if src, ok := s.Labels["exported_source"]; ok {
			delete(s.Labels, "exported_source")
			s.Labels["token_source"] = src
			s.Name += ": " + src
		}
		out = append(out, s)
	}
	out = append(out, kvTransfer(in.KVOffloadBytes, steps, "KV offload bytes/s", "Bps", "kv_offload_bytes")...)
	out = append(out, kvTransfer(in.KVOffloadTime, steps, "KV offload transfer seconds/s", "short", "kv_offload_time")...)
	out = append(out, kvTransfer(in.NIXLBytesPerTransfer, steps, "NIXL bytes per transfer", "bytes", "nixl_transfer_bytes")...)
	out = append(out, kvTransfer(in.NIXLSecondsPerTransfer, steps, "NIXL seconds per transfer", "s", "nixl_transfer_time")...)
	out = append(out, specDecode(in.SpecAccepted, in.SpecDraftTokens, in.SpecDrafts, in.SpecAcceptedPerPos, steps)...)
	return out
}

// kvTransfer labels the KV transfer series: output="kv_transfer" (the breakdown a panel
// filters on), the signal, and the transfer type in the name where the family has one.
func kvTransfer(m model.Matrix, steps []time.Time, name, unit, signal string) []analysis.Series {
	out := analysis.FromMatrix(m, steps, name, unit, map[string]string{"signal": signal, "output": "kv_transfer"})
	for i := range out {
		if t, ok := out[i].Labels["transfer_type"]; ok {
			out[i].Name += " " + t
		}
	}
	return out
}
