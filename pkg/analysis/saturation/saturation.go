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
	"github.com/inferscope/inferscope-llm-datasource/pkg/catalog"
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
	// WaitingByReason is vLLM's waiting gauge split by reason (capacity: no room in the batch
	// or the KV cache; deferred: waiting on grammar compilation or a remote KV transfer),
	// summed by the group labels and reason; nil when no target exports it.
	WaitingByReason model.Matrix
	// PromptCached and PromptTokens are per-second rates of cached prompt tokens (local
	// prefix cache plus external KV transfer) and of all prompt tokens, by the group labels;
	// PromptCached is nil when no target exports it.
	PromptCached, PromptTokens model.Matrix
	// LoRAInfo is vLLM's lora_requests_info, one series per label set (max by the group
	// labels and running_lora_adapters, waiting_lora_adapters, max_lora): its value is a
	// timestamp, so only the labels are read (catalog.ParseLoRAInfo). A changed adapter list is
	// a new series; the old one goes stale at the next scrape. nil when no target exports it.
	LoRAInfo model.Matrix
	// LoRALoaded is vLLM's lora_adapter_loaded summed by the group labels and level (gpu,
	// cpu): adapters resident at each level. nil when no target exports it.
	LoRALoaded model.Matrix
	// EndpointQueue is the llm-d router's per-endpoint queue gauge summed by the group labels,
	// the pool (name) and the endpoint (model_server_endpoint; model_server_pod under the
	// deprecated name); PoolQueueStdDev and PoolKVStdDev its pool standard deviations by the
	// group labels and name. nil when no target exports them.
	EndpointQueue, PoolQueueStdDev, PoolKVStdDev model.Matrix
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
	for _, w := range analysis.FromMatrix(in.WaitingByReason, steps, "waiting", "short", map[string]string{"signal": "requests_waiting_by_reason"}) {
		if r, ok := w.Labels["reason"]; ok {
			w.Name = "waiting " + r
		}
		out = append(out, w)
	}
	out = append(out, ratio(in.PromptCached, in.PromptTokens, steps, "prefix-cache token hit ratio", "prefix_cache_token_hit_ratio")...)
	out = append(out, endpointQueues(in.EndpointQueue, steps)...)
	out = append(out, poolSeries(analysis.FromMatrix(in.PoolQueueStdDev, steps, "pool queue std dev", "short", map[string]string{"signal": "pool_queue_stddev"}))...)
	out = append(out, poolSeries(analysis.FromMatrix(in.PoolKVStdDev, steps, "pool KV-cache std dev", "percentunit", map[string]string{"signal": "pool_kv_stddev"}))...)
	out = append(out, loraInfo(in.LoRAInfo, steps)...)
	for _, l := range analysis.FromMatrix(in.LoRALoaded, steps, "LoRA adapters loaded", "short", map[string]string{"signal": "lora_adapters_loaded"}) {
		if lv, ok := l.Labels["level"]; ok {
			l.Name += " " + lv
		}
		out = append(out, l)
	}
	return out
}

// endpointQueues turns the llm-d router's per-endpoint queue gauge into one series per endpoint
// ("endpoint queue <endpoint>", label endpoint, signal endpoint_queue) and, per pool (label
// pool) and step, the spread max − min over the pool's endpoints with a value there ("endpoint
// queue spread", signal endpoint_queue_spread): the pool's queue imbalance, 0 when the router
// keeps every endpoint's queue level.
func endpointQueues(m model.Matrix, steps []time.Time) []analysis.Series {
	var out []analysis.Series
	type acc struct {
		labels   map[string]string
		min, max []float64
	}
	pools := map[string]*acc{}
	for _, s := range analysis.FromMatrix(m, steps, "endpoint queue", "short", map[string]string{"signal": "endpoint_queue"}) {
		ep := s.Labels["model_server_endpoint"]
		if ep == "" {
			ep = s.Labels["model_server_pod"]
		}
		delete(s.Labels, "model_server_endpoint")
		delete(s.Labels, "model_server_pod")
		pool := s.Labels["name"]
		delete(s.Labels, "name")
		s.Labels["pool"] = pool
		pl := copyLabels(s.Labels)
		s.Labels["endpoint"] = ep
		s.Name += " " + ep
		out = append(out, s)
		pl["signal"] = "endpoint_queue_spread"
		k := analysis.LabelsKey(pl)
		a, ok := pools[k]
		if !ok {
			a = &acc{labels: pl, min: analysis.NaNs(len(steps)), max: analysis.NaNs(len(steps))}
			pools[k] = a
		}
		for i, v := range s.Values {
			if math.IsNaN(v) {
				continue
			}
			if math.IsNaN(a.min[i]) || v < a.min[i] {
				a.min[i] = v
			}
			if math.IsNaN(a.max[i]) || v > a.max[i] {
				a.max[i] = v
			}
		}
	}
	for _, k := range slices.Sorted(maps.Keys(pools)) {
		a := pools[k]
		spread := make([]float64, len(steps))
		for i := range spread {
			spread[i] = a.max[i] - a.min[i] // NaN where no endpoint has a value
		}
		out = append(out, analysis.Series{Name: "endpoint queue spread", Labels: a.labels, Unit: "short", Times: steps, Values: spread})
	}
	return out
}

// poolSeries shows the llm-d router's pool label name as pool.
func poolSeries(ss []analysis.Series) []analysis.Series {
	for _, s := range ss {
		if n, ok := s.Labels["name"]; ok {
			delete(s.Labels, "name")
			s.Labels["pool"] = n
		}
	}
	return ss
}

// loraInfo turns lora_requests_info series into three series per group: the number of
// distinct adapters with running requests, with waiting requests, and the adapter slots
// (max_lora). Per step, every info series of the group that has a sample there counts (one
// per engine); a step with none is NaN. Adapters are counted once per engine series, so two
// engines running the same adapter count it twice (it occupies a slot in each).
func loraInfo(m model.Matrix, steps []time.Time) []analysis.Series {
	if len(m) == 0 {
		return nil
	}
	type acc struct {
		labels                 map[string]string
		running, waiting, slot []float64
	}
	groups := map[string]*acc{}
	idx := make(map[int64]int, len(steps))
	for i, t := range steps {
		idx[t.UnixMilli()] = i
	}
	add := func(v []float64, i int, x float64) {
		if math.IsNaN(v[i]) {
			v[i] = 0
		}
		v[i] += x
	}
	for _, ss := range m {
		raw := map[string]string{}
		group := map[string]string{}
		for k, v := range ss.Metric {
			raw[string(k)] = string(v)
			if g, ok := analysis.GroupLabels[string(k)]; ok {
				group[g] = string(v)
			}
		}
		key := model.LabelSet{}
		for k, v := range group {
			key[model.LabelName(k)] = model.LabelValue(v)
		}
		a := groups[key.String()]
		if a == nil {
			a = &acc{labels: group, running: analysis.NaNs(len(steps)), waiting: analysis.NaNs(len(steps)), slot: analysis.NaNs(len(steps))}
			groups[key.String()] = a
		}
		info := catalog.ParseLoRAInfo(raw, 0)
		for _, p := range ss.Values {
			i, ok := idx[int64(p.Timestamp)]
			if !ok {
				continue
			}
			add(a.running, i, float64(len(info.Running)))
			add(a.waiting, i, float64(len(info.Waiting)))
			if info.MaxLoRA >= 0 {
				add(a.slot, i, float64(info.MaxLoRA))
			}
		}
	}
	var out []analysis.Series
	for _, k := range slices.Sorted(maps.Keys(groups)) {
		a := groups[k]
		for _, s := range []struct {
			name string
			v    []float64
		}{{"LoRA adapters running", a.running}, {"LoRA adapters waiting", a.waiting}, {"LoRA adapter slots", a.slot}} {
			l := copyLabels(a.labels)
			l["signal"] = "lora_requests_info"
			out = append(out, analysis.Series{Name: s.name, Labels: l, Unit: "short", Times: steps, Values: s.v})
		}
	}
	return out
}

// ratio is num/den per group and step (NaN where den is 0 or missing), for groups of num.
// The token-weighted prefix-cache hit ratio is rate(prompt_tokens_cached) /
// rate(prompt_tokens): the share of prompt tokens not computed locally (vLLM's
// prompt_tokens_by_source: local_cache_hit + external_kv_transfer over all sources).
func ratio(num, den model.Matrix, steps []time.Time, name, signal string) []analysis.Series {
	if len(num) == 0 {
		return nil
	}
	n, nl := analysis.Align(num, steps)
	d, _ := analysis.Align(den, steps)
	var out []analysis.Series
	for _, k := range slices.Sorted(maps.Keys(nl)) {
		dk := d[k]
		v := make([]float64, len(steps))
		for i := range steps {
			v[i] = math.NaN()
			if dk != nil && dk[i] > 0 {
				v[i] = n[k][i] / dk[i]
			}
		}
		l := copyLabels(nl[k])
		l["signal"] = signal
		out = append(out, analysis.Series{Name: name, Labels: l, Unit: "percentunit", Times: steps, Values: v})
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
