// Package gpu turns per-GPU PromQL results (from the Inferscope NVML agent or
// dcgm-exporter, already in SI units) into per-GPU series, a saturation
// signal that prefers SM activity over GPU utilisation, and the throttle
// (clock-event) reasons as states over time.
package gpu

import (
	"fmt"
	"math"
	"sort"
	"strings"
	"time"

	"github.com/prometheus/common/model"

	"github.com/inferscope/inferscope-llm-datasource/pkg/analysis"
	"github.com/inferscope/inferscope-llm-datasource/pkg/catalog"
)

// Units of the canonical GPU signals (Grafana unit ids).
var Units = map[catalog.Signal]string{
	catalog.GPUUtil: "percentunit", catalog.SMActive: "percentunit", catalog.DRAMActive: "percentunit",
	catalog.TensorActive: "percentunit", catalog.FBUsed: "bytes", catalog.FBTotal: "bytes",
	catalog.Power: "watt", catalog.PowerLimit: "watt", catalog.Temperature: "celsius",
	catalog.SMClock: "hertz", catalog.SMClockMax: "hertz",
}

// Series converts one signal's per-GPU result (labels job, gpu, uuid,
// hostname, …) into series labelled signal, with the signal's unit.
func Series(sig catalog.Signal, m model.Matrix, steps []time.Time) []analysis.Series {
	return analysis.FromMatrix(m, steps, string(sig), Units[sig], map[string]string{"signal": string(sig)})
}

// Saturation returns one compute-saturation series per GPU (signal
// "saturation", ratio 0..1): SM active where the GPU reports it (NVML GPM on
// Hopper and newer, DCGM profiling), else GPU utilisation, which only says a
// kernel was running and reads 100% for one tiny kernel. Each fallback adds
// a notice naming the GPUs concerned.
func Saturation(smActive, util model.Matrix, steps []time.Time, notes *analysis.Notices) []analysis.Series {
	sm, smLabels := analysis.Align(smActive, steps)
	ut, utLabels := analysis.Align(util, steps)
	var out []analysis.Series
	var fallback []string
	keys := make([]string, 0, len(utLabels)+len(smLabels))
	for k := range smLabels {
		keys = append(keys, k)
	}
	for k := range utLabels {
		if _, ok := smLabels[k]; !ok {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	for _, k := range keys {
		vals, labels, source := sm[k], smLabels[k], "sm_active"
		if vals == nil || allNaN(vals) {
			if ut[k] == nil {
				continue
			}
			vals, labels, source = ut[k], utLabels[k], "gpu_util"
			fallback = append(fallback, describe(labels))
		}
		l := map[string]string{"signal": "saturation", "source": source}
		for lk, lv := range labels {
			l[lk] = lv
		}
		out = append(out, analysis.Series{Name: "saturation", Labels: l, Unit: "percentunit", Times: steps, Values: vals})
	}
	if len(fallback) > 0 {
		notes.Add(analysis.Info, fmt.Sprintf("saturation falls back to GPU utilisation (time a kernel ran, not SM activity) for %s: no SM-active metric (NVML GPM on Hopper+ or DCGM profiling) was found", strings.Join(fallback, ", ")))
	}
	return out
}

func allNaN(v []float64) bool {
	for _, x := range v {
		if !math.IsNaN(x) {
			return false
		}
	}
	return true
}

func describe(l map[string]string) string {
	if l["target"] != "" && l["gpu"] != "" {
		return l["target"] + "/gpu " + l["gpu"]
	}
	return analysis.LabelsKey(l)
}

// DCGMReasonBits maps NVML clocks-event reason bits (nvmlClocksEventReason*,
// same bitmask in DCGM_FI_DEV_CLOCKS_EVENT_REASONS) to the reason names the
// Inferscope agent uses in its throttle_reason{reason} label (dcgm-exporter's
// clock_event names), so both sources show the same states.
var DCGMReasonBits = []struct {
	Bit  uint64
	Name string
}{
	{0x1, "gpu_idle"}, {0x2, "clocks_setting"}, {0x4, "power_cap"},
	{0x8, "hw_slowdown"}, {0x10, "sync_boost"}, {0x20, "sw_thermal"},
	{0x40, "hw_thermal"}, {0x80, "hw_power_brake"}, {0x100, "display_clocks"},
}

// State is the throttle state of one GPU over time: at each step, the active
// reasons joined by ", ", "none" when no reason is active, "" with no data.
type State struct {
	Labels map[string]string
	Times  []time.Time
	Values []string
}

// ThrottleStates builds per-GPU throttle states from either per-reason 0/1
// series (the Inferscope agent: label reason) or a DCGM bitmask series
// (decoded with DCGMReasonBits). gpu_idle alone is not throttling but is
// reported as "gpu_idle" so an idle GPU is not mistaken for a throttled one.
func ThrottleStates(perReason, bitmask model.Matrix, steps []time.Time) []State {
	active := map[string][][]string{}
	labels := map[string]map[string]string{}
	seen := map[string][]bool{}
	ensure := func(k string, l map[string]string) {
		if _, ok := active[k]; !ok {
			active[k] = make([][]string, len(steps))
			seen[k] = make([]bool, len(steps))
			labels[k] = l
		}
	}
	idx := map[int64]int{}
	for i, t := range steps {
		idx[t.UnixMilli()] = i
	}
	for _, s := range perReason {
		reason := string(s.Metric["reason"])
		k, l := analysis.Key(s.Metric, "reason")
		ensure(k, l)
		for _, p := range s.Values {
			if i, ok := idx[int64(p.Timestamp)]; ok {
				seen[k][i] = true
				if p.Value > 0 {
					active[k][i] = append(active[k][i], reason)
				}
			}
		}
	}
	for _, s := range bitmask {
		k, l := analysis.Key(s.Metric)
		ensure(k, l)
		for _, p := range s.Values {
			i, ok := idx[int64(p.Timestamp)]
			if !ok || math.IsNaN(float64(p.Value)) || p.Value < 0 {
				continue
			}
			seen[k][i] = true
			mask := uint64(p.Value)
			for _, b := range DCGMReasonBits {
				if mask&b.Bit != 0 {
					active[k][i] = append(active[k][i], b.Name)
				}
			}
		}
	}
	keys := make([]string, 0, len(active))
	for k := range active {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	out := make([]State, 0, len(keys))
	for _, k := range keys {
		vals := make([]string, len(steps))
		for i := range steps {
			switch {
			case !seen[k][i]:
			case len(active[k][i]) == 0:
				vals[i] = "none"
			default:
				r := active[k][i]
				sort.Strings(r)
				vals[i] = strings.Join(r, ", ")
			}
		}
		out = append(out, State{Labels: labels[k], Times: steps, Values: vals})
	}
	return out
}
