package catalog

import (
	"fmt"
	"slices"
	"strings"
)

// GPULabels are the per-GPU identity labels every GPUPromQL result carries (besides job and
// the extraBy labels), under the Inferscope GPU agent's names whatever the source:
//
//	gpu                  GPU index (both sources)
//	uuid                 agent uuid; dcgm-exporter UUID, uuid (--use-old-namespace), gpu_uuid (NVLink families)
//	hostname             agent hostname; dcgm-exporter Hostname (releases before 2026-05), hostname (later)
//	name                 agent name; dcgm-exporter modelName, model_name (NVLink families)
//	gpu_instance_id      agent gpu_instance_id; dcgm-exporter GPU_I_ID (MIG only)
//	compute_instance_id  agent only (MIG only)
//
// A label a source does not set is absent from the result (PromQL drops empty labels), never
// an empty string.
var GPULabels = []string{"gpu", "uuid", "hostname", "name", "gpu_instance_id", "compute_instance_id"}

// gpuEngines are the sources a GPU agent can be (settings.GPUAgent.Kind "inferscope", "dcgm").
var gpuEngines = []Engine{EngineInferscopeGPU, EngineDCGM}

// dcgmLabelCopies copies dcgm-exporter label names onto the GPULabels names, applied in order
// with label_replace, so a later entry wins when a series has both source labels (never the
// case on real pages). A source label that is absent or empty leaves the target unchanged.
// Source: dcgm-exporter internal/pkg/rendermetrics (see ../shared/reference/gpu-slo-bench.md
// §1.1, "Label set").
var dcgmLabelCopies = []struct{ to, from string }{
	{"uuid", "gpu_uuid"}, {"uuid", "UUID"},
	{"hostname", "Hostname"},
	{"name", "model_name"}, {"name", "modelName"},
	{"gpu_instance_id", "GPU_I_ID"},
}

// GPUPromQL builds the per-GPU query of a GPU gauge signal over GPU agents (job names; empty
// means every job), aggregated with agg ("sum", "avg", "max" or "min") by job, GPULabels and
// extraBy (raw label names such as "reason" for the agent's per-reason throttle series). Only
// the GPU agent sources are read: the Inferscope agent and dcgm-exporter. Each metric term is
// filtered (DCGM blank sentinels dropped: see sentinelFilter), scaled to SI units (ratio 0..1,
// bytes, W, °C, Hz; the throttle bitmask as is), filtered again to what the quantity can be
// (ValueRange: a utilisation or activity ratio outside 0..1, a negative power, temperature,
// clock or memory reading, NaN and ±Inf are dropped; GPUImpossiblePromQL lists them), its
// dcgm-exporter labels are copied onto the
// agent's names, and it is aggregated onto the normalised label set before the terms are
// joined with `or`, so two names for one signal (DCGM_FI_DEV_CLOCKS_EVENT_REASONS and the older
// DCGM_FI_DEV_CLOCK_THROTTLE_REASONS) are matched on the normalised labels and never counted
// twice, and an exporter upgrade that renamed Hostname to hostname keeps one series per GPU:
//
//	avg by (job, gpu, uuid, …) (inferscope_gpu_fb_used_bytes{job=~"a", gpu!=""})
//	  or avg by (job, gpu, uuid, …) (label_replace(…((DCGM_FI_DEV_FB_USED{job=~"a", gpu!=""} < 2147483632) * 1048576)…))
//
// Series without a GPU index (gpu!="" fails: the dummy unlabelled samples of DataDog's dcgm
// fixture) cannot be attributed to a GPU and are not read. Errors: unknown signal or
// aggregation, invalid extraBy label, empty agent name, or a signal no GPU source exports as a
// gauge (Energy is a counter: use CounterRatePromQL).
func GPUPromQL(s Signal, agents []string, agg string, extraBy ...string) (string, error) {
	if err := checkSignal(s); err != nil {
		return "", err
	}
	if !slices.Contains(gaugeAggs, agg) {
		return "", fmt.Errorf("catalog: aggregation %q not supported (want sum, avg, max or min)", agg)
	}
	groups, base, err := gpuGroupsAndBase(agents, extraBy)
	if err != nil {
		return "", err
	}
	var parts []string
	for _, e := range gpuEngines {
		a := Lookup(e, s)
		for _, m := range a.Metrics {
			if m.Kind != KindGauge {
				continue
			}
			sel := slices.Clone(base)
			if m.Match != "" {
				sel = append(sel, m.Match)
			}
			t := "(" + gaugeTerm(m, strings.Join(sel, ", ")) + rangeFilter(s) + ")"
			if e == EngineDCGM {
				for _, c := range dcgmLabelCopies {
					t = `label_replace(` + t + `, "` + c.to + `", "$1", "` + c.from + `", "(.+)")`
				}
			}
			parts = append(parts, aggregate(agg, groups, t))
		}
	}
	if len(parts) == 0 {
		return "", fmt.Errorf("catalog: signal %q is not read from a gauge by any GPU agent (Inferscope agent or dcgm-exporter)", s)
	}
	return strings.Join(parts, " or "), nil
}

// GPUImpossiblePromQL selects, per GPU, the samples of the given GPU gauge signals that
// GPUPromQL leaves out because they cannot be true (outside ValueRange, NaN or ±Inf), after
// DCGM blank sentinels are dropped (a blank is "no value", already absent, and is not reported
// again) and Scale applied. One query for every signal: each result series carries the
// signal's name in the label "signal", job, and the normalised GPULabels, and its value is
// the least impossible sample of that GPU and signal at the step (`min by`; one series per
// GPU on real pages):
//
//	label_replace(min by (job, gpu, …) (inferscope_gpu_power_watts{…} unless (inferscope_gpu_power_watts{…} >= 0 < +Inf)), "signal", "power", "", "") or …
//
// Errors as for GPUPromQL; an empty signal list is an error.
func GPUImpossiblePromQL(signals []Signal, agents []string) (string, error) {
	if len(signals) == 0 {
		return "", fmt.Errorf("catalog: no GPU signals given")
	}
	groups, err := groupLabels(Scope{By: []string{"target"}}, slices.Clone(GPULabels))
	if err != nil {
		return "", err
	}
	base := []string{`gpu!=""`}
	if len(agents) > 0 {
		re, err := anyOf("agent", agents)
		if err != nil {
			return "", err
		}
		base = []string{"job=~" + re, `gpu!=""`}
	}
	var parts []string
	for _, s := range signals {
		if err := checkSignal(s); err != nil {
			return "", err
		}
		if _, _, ok := ValueRange(s); !ok {
			return "", fmt.Errorf("catalog: signal %q is not read from a gauge", s)
		}
		n := len(parts)
		for _, e := range gpuEngines {
			for _, m := range Lookup(e, s).Metrics {
				if m.Kind != KindGauge {
					continue
				}
				sel := slices.Clone(base)
				if m.Match != "" {
					sel = append(sel, m.Match)
				}
				g := gaugeTerm(m, strings.Join(sel, ", "))
				t := "(" + g + " unless (" + g + rangeFilter(s) + "))"
				if e == EngineDCGM {
					for _, c := range dcgmLabelCopies {
						t = `label_replace(` + t + `, "` + c.to + `", "$1", "` + c.from + `", "(.+)")`
					}
				}
				parts = append(parts, `label_replace(`+aggregate("min", groups, t)+`, "signal", "`+string(s)+`", "", "")`)
			}
		}
		if len(parts) == n {
			return "", fmt.Errorf("catalog: signal %q is not read from a gauge by any GPU agent (Inferscope agent or dcgm-exporter)", s)
		}
	}
	return strings.Join(parts, " or "), nil
}

// gpuGroupsAndBase is what every per-GPU PromQL builder starts from: the labels to group by
// (the target, GPULabels and extraBy) and the base matchers (gpu!="", and job=~ the agents
// when agents is not empty).
func gpuGroupsAndBase(agents, extraBy []string) (groups, base []string, err error) {
	if groups, err = groupLabels(Scope{By: []string{"target"}}, append(slices.Clone(GPULabels), extraBy...)); err != nil {
		return nil, nil, err
	}
	base = []string{`gpu!=""`}
	if len(agents) > 0 {
		re, err := anyOf("agent", agents)
		if err != nil {
			return nil, nil, err
		}
		base = []string{"job=~" + re, `gpu!=""`}
	}
	return groups, base, nil
}
