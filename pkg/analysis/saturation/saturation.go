// Package saturation builds the pressure signals of an inference server:
// running and waiting requests, KV-cache usage, preemptions per second and
// the prefix-cache hit ratio.
package saturation

import (
	"maps"
	"math"
	"slices"
	"time"

	"github.com/prometheus/common/model"

	"github.com/inferscope/inferscope-llm-datasource/pkg/analysis"
)

// Input holds PromQL range results, grouped by the same group labels:
// Running and Waiting summed gauges (requests), KVUsage the gauge averaged
// across engines and targets (ratio 0..1 — never summed), Preemptions a
// per-second counter rate, PrefixHits and PrefixQueries per-second rates of
// the prefix-cache counters (tokens/s).
type Input struct {
	Running, Waiting, KVUsage, Preemptions, PrefixHits, PrefixQueries model.Matrix
	// PrefixHitRatio is used instead of the counters for engines that only
	// export a hit-rate gauge (vLLM V0), already averaged and with the −1
	// "caching disabled" sentinel filtered out.
	PrefixHitRatio model.Matrix
}

// Compute returns series labelled signal ∈ {requests_running,
// requests_waiting, kv_cache_usage, preemptions, prefix_cache_hit_ratio}.
// The hit ratio is rate(hits)/rate(queries) per group and step (NaN when no
// queries), falling back to the gauge where a group has no counters.
func Compute(in Input, steps []time.Time) []analysis.Series {
	var out []analysis.Series
	out = append(out, analysis.FromMatrix(in.Running, steps, "running", "short", map[string]string{"signal": "requests_running"})...)
	out = append(out, analysis.FromMatrix(in.Waiting, steps, "waiting", "short", map[string]string{"signal": "requests_waiting"})...)
	out = append(out, analysis.FromMatrix(in.KVUsage, steps, "KV-cache usage", "percentunit", map[string]string{"signal": "kv_cache_usage"})...)
	out = append(out, analysis.FromMatrix(in.Preemptions, steps, "preemptions/s", "short", map[string]string{"signal": "preemptions"})...)

	hits, hitLabels := analysis.Align(in.PrefixHits, steps)
	queries, _ := analysis.Align(in.PrefixQueries, steps)
	seen := map[string]bool{}
	for _, k := range slices.Sorted(maps.Keys(hitLabels)) {
		q := queries[k]
		if q == nil {
			continue
		}
		seen[k] = true
		h := hits[k]
		v := make([]float64, len(steps))
		for i := range steps {
			v[i] = math.NaN()
			if q[i] > 0 {
				v[i] = h[i] / q[i]
			}
		}
		l := copyLabels(hitLabels[k])
		l["signal"] = "prefix_cache_hit_ratio"
		out = append(out, analysis.Series{Name: "prefix-cache hit ratio", Labels: l, Unit: "percentunit", Times: steps, Values: v})
	}
	gauge, gaugeLabels := analysis.Align(in.PrefixHitRatio, steps)
	for _, k := range slices.Sorted(maps.Keys(gaugeLabels)) {
		if seen[k] {
			continue
		}
		l := copyLabels(gaugeLabels[k])
		l["signal"] = "prefix_cache_hit_ratio"
		out = append(out, analysis.Series{Name: "prefix-cache hit ratio", Labels: l, Unit: "percentunit", Times: steps, Values: gauge[k]})
	}
	return out
}

func copyLabels(l map[string]string) map[string]string {
	out := make(map[string]string, len(l)+1)
	for k, v := range l {
		out[k] = v
	}
	return out
}
