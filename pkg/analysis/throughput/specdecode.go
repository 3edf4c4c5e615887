package throughput

import (
	"maps"
	"math"
	"slices"
	"time"

	"github.com/prometheus/common/model"

	"github.com/inferscope/inferscope-llm-datasource/pkg/analysis"
)

// OutputSpecDecode is the value of the label output on the speculative-decoding series, the
// breakdown a panel filters on (as output="kv_transfer" for the KV transfer series).
const OutputSpecDecode = "spec_decode"

// specDecode returns the speculative-decoding series of vLLM's counters, each labelled
// output=OutputSpecDecode, per group (the series' group labels; the per-position counter
// adds position):
//
//	spec decode: accepted tok/s            rate(accepted)                      count:tok/s
//	spec decode: draft tok/s               rate(draft tokens)                  count:tok/s
//	spec decode: drafts/s                  rate(drafts)                        short
//	spec decode: acceptance rate           rate(accepted) / rate(draft tokens) percentunit
//	spec decode: mean acceptance length    1 + rate(accepted) / rate(drafts)   short (tokens per draft)
//	spec decode: position N acceptance rate
//	                                       rate(accepted at N) / rate(drafts)  percentunit
//
// (the formulas of vLLM's speculative-decoding dashboard and vllm/v1/spec_decode/metrics.py;
// the rate's window cancels in the ratios). A ratio is NaN at a step whose denominator is 0
// (no draft in the window) or missing. Names hold no "tokens/s", so no panel pattern that
// sums prompt and generation rates picks them up.
func specDecode(accepted, draftTokens, drafts, perPos model.Matrix, steps []time.Time) []analysis.Series {
	extra := func(signal string) map[string]string {
		return map[string]string{"signal": signal, "output": OutputSpecDecode}
	}
	var out []analysis.Series
	out = append(out, analysis.FromMatrix(accepted, steps, "spec decode: accepted tok/s", UnitTokensPerSecond, extra("spec_decode_accepted_tokens"))...)
	out = append(out, analysis.FromMatrix(draftTokens, steps, "spec decode: draft tok/s", UnitTokensPerSecond, extra("spec_decode_draft_tokens"))...)
	out = append(out, analysis.FromMatrix(drafts, steps, "spec decode: drafts/s", "short", extra("spec_decode_drafts"))...)
	accV, accL := analysis.Align(accepted, steps)
	dtV, _ := analysis.Align(draftTokens, steps)
	drV, _ := analysis.Align(drafts, steps)
	ratio := func(num, den []float64, plus float64) []float64 {
		v := make([]float64, len(steps))
		for i := range v {
			v[i] = math.NaN()
			if i < len(num) && i < len(den) && den[i] > 0 && !math.IsNaN(num[i]) {
				v[i] = plus + num[i]/den[i]
			}
		}
		return v
	}
	withExtra := func(l map[string]string, signal string) map[string]string {
		c := make(map[string]string, len(l)+2)
		for k, x := range l {
			c[k] = x
		}
		for k, x := range extra(signal) {
			c[k] = x
		}
		return c
	}
	for _, k := range slices.Sorted(maps.Keys(accV)) {
		if den, ok := dtV[k]; ok {
			out = append(out, analysis.Series{Name: "spec decode: acceptance rate", Labels: withExtra(accL[k], "spec_decode_acceptance_rate"),
				Unit: "percentunit", Times: steps, Values: ratio(accV[k], den, 0)})
		}
		if den, ok := drV[k]; ok {
			out = append(out, analysis.Series{Name: "spec decode: mean acceptance length", Labels: withExtra(accL[k], "spec_decode_acceptance_length"),
				Unit: "short", Times: steps, Values: ratio(accV[k], den, 1)})
		}
	}
	// The per-position counter carries position besides the group labels: its series are
	// matched to the drafts of the same group with position dropped from the key.
	posV, posL := analysis.Align(perPos, steps)
	posKeys := slices.Sorted(maps.Keys(posV))
	slices.SortStableFunc(posKeys, func(a, b string) int { return positionOrder(posL[a]["position"], posL[b]["position"]) })
	for _, k := range posKeys {
		l := posL[k]
		group := make(map[string]string, len(l))
		for n, x := range l {
			if n != "position" {
				group[n] = x
			}
		}
		den, ok := drV[analysis.LabelsKey(group)]
		if !ok {
			continue
		}
		pos := l["position"]
		out = append(out, analysis.Series{Name: "spec decode: position " + pos + " acceptance rate", Labels: withExtra(l, "spec_decode_acceptance_by_position"),
			Unit: "percentunit", Times: steps, Values: ratio(posV[k], den, 0)})
	}
	return out
}

// positionOrder orders draft positions numerically ("2" before "10"); non-numbers after numbers.
func positionOrder(a, b string) int {
	na, ea := atoi(a)
	nb, eb := atoi(b)
	switch {
	case ea && eb:
		return na - nb
	case ea:
		return -1
	case eb:
		return 1
	}
	return 0
}

// atoi parses a small non-negative decimal; ok is false for anything else.
func atoi(s string) (n int, ok bool) {
	if s == "" || len(s) > 6 {
		return 0, false
	}
	for _, c := range s {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int(c-'0')
	}
	return n, true
}
