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
}

// Compute returns series labelled signal ∈ {requests_finished,
// prompt_tokens, generation_tokens}: requests/s (unit reqps, with a
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
	return out
}
