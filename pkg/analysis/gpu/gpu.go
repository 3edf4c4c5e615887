// Package gpu turns per-GPU PromQL results (from the Inferscope NVML agent or
// dcgm-exporter, already in SI units) into per-GPU series, a saturation
// signal that prefers SM activity over GPU utilisation, and the throttle
// (clock-event) reasons as states over time.
package gpu

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/prometheus/common/model"

	"github.com/inferscope/inferscope-llm-datasource/pkg/analysis"
	"github.com/inferscope/inferscope-llm-datasource/pkg/analysis/sanity"
	"github.com/inferscope/inferscope-llm-datasource/pkg/catalog"
)

// Units of the canonical GPU signals (Grafana unit ids).
var Units = map[catalog.Signal]string{
	catalog.GPUUtil: "percentunit", catalog.SMActive: "percentunit", catalog.GREngineActive: "percentunit",
	catalog.DRAMActive: "percentunit", catalog.TensorActive: "percentunit", catalog.FBUsed: "bytes",
	catalog.FBTotal: "bytes", catalog.Power: "watt", catalog.PowerLimit: "watt", catalog.PowerLimitDefault: "watt",
	catalog.Temperature: "celsius", catalog.SMClock: "hertz", catalog.SMClockMax: "hertz",
	// The error and interconnect signals (the gpu query reads the counters as events in the
	// window, the bandwidth counter as a rate, XID's last number and the NVLink byte rates as
	// gauges).
	catalog.XIDLast: "none", catalog.XIDErrors: "short", catalog.ECCSBEVolatile: "short", catalog.ECCDBEVolatile: "short",
	catalog.ECCSBEAggregate: "short", catalog.ECCDBEAggregate: "short", catalog.PCIeReplays: "short",
	catalog.NVLinkBandwidthTotal: "short", catalog.NVLinkTx: "Bps", catalog.NVLinkRx: "Bps",
	catalog.NVLinkCRCFlitErrors: "short", catalog.NVLinkCRCDataErrors: "short", catalog.NVLinkReplayErrors: "short",
	catalog.NVLinkRecoveryErrors: "short",
}

// Series converts one signal's per-GPU result (labels job, gpu, uuid,
// hostname, name: catalog.GPUPromQL) into series labelled signal (and target
// for job), with the signal's unit.
func Series(sig catalog.Signal, m model.Matrix, steps []time.Time) []analysis.Series {
	return analysis.FromMatrix(m, steps, string(sig), Units[sig], map[string]string{"signal": string(sig)})
}

// saturationSources are the saturation signal's sources in preference order,
// with the notice text used when a GPU falls back to the source.
var saturationSources = []struct {
	source catalog.Signal
	why    string
}{
	{catalog.SMActive, ""},
	{catalog.GREngineActive, "graphics-engine active (DCGM_FI_PROF_GR_ENGINE_ACTIVE: time the engine was busy, not the share of SMs at work)"},
	{catalog.GPUUtil, "GPU utilisation (time a kernel ran, not the share of SMs at work)"},
}

// Saturation returns one compute-saturation series per GPU (signal
// "saturation", ratio 0..1, label source naming the signal used), from the
// first source with any value in the range: SM active (NVML GPM on Hopper
// and newer, DCGM profiling DCGM_FI_PROF_SM_ACTIVE, off by default in
// dcgm-exporter), else graphics-engine active (DCGM_FI_PROF_GR_ENGINE_ACTIVE,
// on by default), else GPU utilisation, which only says a kernel was running
// and reads 100% for one tiny kernel (order from
// ../shared/reference/gpu-slo-bench.md §1.1 and §1.5). A GPU keeps one source
// for the whole range. Each fallback adds one Info notice naming the GPUs
// concerned. Where the chosen profiling source and GPU utilisation contradict
// each other (sanity.StuckAtZero: one at 0 while the other reads busy for
// StuckSteps steps or more), the one at 0 looks stuck: if it is the profiling
// source, the GPU uses utilisation instead; either way a Warning names the
// GPU, the stuck source and when. The matrices are catalog.GPUPromQL results; a GPU is matched
// across them by its full label set.
func Saturation(smActive, grActive, util model.Matrix, steps []time.Time, notes *analysis.Notices) []analysis.Series {
	return SaturationJudged(smActive, grActive, util, nil, steps, notes)
}

// ScrapeWindow is one GPU activity source read over the StuckScrapes scrapes
// before each step (StuckLookback at the scrape interval as the subquery
// resolution: catalog.OverTimePromQL "max", "min" and "count" of the
// source's catalog.GPUPromQL): per GPU, the highest and the lowest reading
// of those scrapes and how many there were, on the query's step grid. A
// step with fewer than StuckScrapes readings (the start of the data) is
// not judged.
type ScrapeWindow struct {
	Max, Min, Count model.Matrix
}

// StuckScrapes is how many consecutive scrapes two GPU activity sources must
// disagree (one at 0 at every scrape, the other busy at every scrape) before
// SaturationJudged calls the one at 0 stuck. It counts scrapes, not query
// steps: a two-step alert query and a month-long panel at one-hour steps are
// judged alike, each step on the scrapes just before it.
const StuckScrapes = 3

// StuckLookback is the subquery range that holds StuckScrapes scrapes at the
// given scrape interval: (StuckScrapes − 1) intervals and a half, so that
// exactly StuckScrapes subquery points at the scrape resolution fall in it.
func StuckLookback(scrape time.Duration) time.Duration {
	return time.Duration(StuckScrapes-1)*scrape + scrape/2
}

// SaturationJudged is Saturation with the stuck check made over scrapes:
// where windows holds a source's ScrapeWindow (keyed by catalog.SMActive,
// catalog.GREngineActive and catalog.GPUUtil), a step is a disagreement when
// one source's highest reading of the step's StuckScrapes scrapes is 0 and
// the other's lowest is busy (sanity.StuckZero, sanity.StuckBusy), and one
// such step is enough. Without windows for a pair (no scrape interval known)
// it falls back to the step values, StuckSteps consecutive steps (all of a
// shorter range).
func SaturationJudged(smActive, grActive, util model.Matrix, windows map[catalog.Signal]ScrapeWindow, steps []time.Time, notes *analysis.Notices) []analysis.Series {
	type aligned struct {
		vals   map[string][]float64
		labels map[string]map[string]string
	}
	srcs := make([]aligned, 0, 3)
	keySet := map[string]bool{}
	for _, m := range []model.Matrix{smActive, grActive, util} {
		v, l := analysis.Align(m, steps)
		srcs = append(srcs, aligned{v, l})
		for k := range l {
			keySet[k] = true
		}
	}
	// Per source, the highest and lowest reading of each step's scrapes.
	type minmax struct{ hi, lo map[string][]float64 }
	win := make([]*minmax, len(saturationSources))
	for i, src := range saturationSources {
		w, ok := windows[src.source]
		if !ok || w.Max == nil || w.Min == nil || w.Count == nil {
			continue
		}
		hi, _ := analysis.Align(w.Max, steps)
		lo, _ := analysis.Align(w.Min, steps)
		cnt, _ := analysis.Align(w.Count, steps)
		// Too few scrapes before a step: neither high nor low is known.
		for k, c := range cnt {
			for j, n := range c {
				if math.IsNaN(n) || n < StuckScrapes {
					if hi[k] != nil {
						hi[k][j] = math.NaN()
					}
					if lo[k] != nil {
						lo[k][j] = math.NaN()
					}
				}
			}
		}
		win[i] = &minmax{hi, lo}
	}
	keys := slices.Sorted(maps.Keys(keySet))
	var out []analysis.Series
	fallback := make([][]string, len(saturationSources))
	utilIdx := len(saturationSources) - 1
	for _, k := range keys {
		for i, src := range srcs {
			vals := src.vals[k]
			if vals == nil || allNaN(vals) {
				continue
			}
			labels := src.labels[k]
			// A profiling source and utilisation that disagree (one at 0 while the
			// other reads busy for StuckSteps steps or more): the one at 0 looks
			// stuck; saturation uses the other, which follows the load.
			switched := false
			// A range shorter than StuckSteps steps (an instant panel, a
			// two-step alert query) is judged on all its steps: each step's
			// value already spans a rate window of several scrapes.
			need := max(1, min(StuckSteps, len(steps)))
			if util := srcs[utilIdx].vals[k]; i < utilIdx && util != nil {
				// srcHi, utilLo: what the stuck-source check compares;
				// utilHi, srcLo: the reverse (utilisation stuck at 0).
				srcHi, utilLo, utilHi, srcLo, n, unit := vals, util, util, vals, need, "steps"
				if ws, wu := win[i], win[utilIdx]; ws != nil && wu != nil && ws.hi[k] != nil && wu.lo[k] != nil {
					srcHi, utilLo, utilHi, srcLo, n = ws.hi[k], wu.lo[k], wu.hi[k], ws.lo[k], 1
					unit = fmt.Sprintf("steps (each judged on its last %d scrapes)", StuckScrapes)
				}
				if spans := sanity.StuckAtZero(srcHi, utilLo, steps, n); len(spans) > 0 {
					notes.Add(analysis.Warning, stuckText(describe(labels), saturationSources[i].source, catalog.GPUUtil, spans, unit)+"; saturation uses GPU utilisation for this GPU over the whole range")
					i, vals, labels, switched = utilIdx, util, srcs[utilIdx].labels[k], true
				} else if spans := sanity.StuckAtZero(utilHi, srcLo, steps, n); utilHi != nil && srcLo != nil && len(spans) > 0 {
					notes.Add(analysis.Warning, stuckText(describe(labels), catalog.GPUUtil, saturationSources[i].source, spans, unit)+"; saturation keeps "+string(saturationSources[i].source))
				}
			}
			if i > 0 && !switched {
				fallback[i] = append(fallback[i], describe(labels))
			}
			l := map[string]string{"signal": "saturation", "source": string(saturationSources[i].source)}
			for lk, lv := range labels {
				l[lk] = lv
			}
			out = append(out, analysis.Series{Name: "saturation", Labels: l, Unit: "percentunit", Times: steps, Values: vals})
			break
		}
	}
	for i, gpus := range fallback {
		if len(gpus) > 0 {
			notes.Add(analysis.Info, fmt.Sprintf("saturation falls back to %s for %s: no SM-active metric (NVML GPM on Hopper+ or DCGM profiling DCGM_FI_PROF_SM_ACTIVE, which dcgm-exporter leaves off by default) was found",
				saturationSources[i].why, strings.Join(gpus, ", ")))
		}
	}
	return out
}

// StuckSteps is how many consecutive steps two GPU activity sources must disagree (one at 0,
// the other busy: sanity.StuckAtZero) before Saturation calls the one at 0 stuck when no
// scrape windows are given (SaturationJudged); a range with fewer steps must disagree at
// every one of them.
const StuckSteps = 3

// stuckText words a stuck source for a notice: which GPU, which source read 0 while which
// other read how much, from when and for how many steps.
func stuckText(gpu string, stuck, other catalog.Signal, spans []sanity.StuckSpan, unit string) string {
	first, steps, hi := spans[0], 0, 0.0
	for _, s := range spans {
		steps += s.Steps
		hi = math.Max(hi, s.Other)
	}
	return fmt.Sprintf("%s: %s read 0 while %s read up to %.0f%% for %d %s from %s, so %s looks stuck",
		gpu, stuck, other, 100*hi, steps, unit, first.Since.Format("2006-01-02 15:04:05 UTC"), stuck)
}

func allNaN(v []float64) bool {
	for _, x := range v {
		if !math.IsNaN(x) {
			return false
		}
	}
	return true
}

// describe names a GPU for a notice: target[/hostname]/gpu N, or the uuid
// when there is no index.
func describe(l map[string]string) string {
	if l["target"] == "" || (l["gpu"] == "" && l["uuid"] == "") {
		return analysis.LabelsKey(l)
	}
	s := l["target"]
	if h := l["hostname"]; h != "" {
		s += "/" + h
	}
	if l["gpu"] != "" {
		s += "/gpu " + l["gpu"]
	} else {
		s += "/" + l["uuid"]
	}
	if mig := l["gpu_instance_id"]; mig != "" {
		s += " (MIG " + mig + ")"
	}
	return s
}

// DCGMReasonBits maps NVML clocks-event reason bits (nvmlClocksEventReason*,
// the same bitmask dcgm-exporter serves as DCGM_FI_DEV_CLOCKS_EVENT_REASONS,
// formerly DCGM_FI_DEV_CLOCK_THROTTLE_REASONS) to the reason names the
// Inferscope agent uses in its throttle_reason{reason} label (pkg/gpu
// ThrottleReasons: dcgm-exporter's clock_event names plus board_limit and
// reliability), so both sources show the same states. Bits from
// ../shared/reference/gpu-slo-bench.md §1.4.
var DCGMReasonBits = []struct {
	Bit  uint64
	Name string
}{
	{0x1, "gpu_idle"}, {0x2, "clocks_setting"}, {0x4, "power_cap"},
	{0x8, "hw_slowdown"}, {0x10, "sync_boost"}, {0x20, "sw_thermal"},
	{0x40, "hw_thermal"}, {0x80, "hw_power_brake"}, {0x100, "display_clocks"},
	{0x200, "board_limit"}, {0x400, "reliability"},
}

// knownReasonBits is the union of DCGMReasonBits.
var knownReasonBits = func() uint64 {
	var m uint64
	for _, b := range DCGMReasonBits {
		m |= b.Bit
	}
	return m
}()

// DecodeReasons returns the reason names of a clocks-event bitmask in
// DCGMReasonBits order; bits NVML may add later show as one name
// "unknown_0x<hex of those bits>" rather than vanish. Nil for 0.
func DecodeReasons(mask uint64) []string {
	var out []string
	for _, b := range DCGMReasonBits {
		if mask&b.Bit != 0 {
			out = append(out, b.Name)
		}
	}
	if rest := mask &^ knownReasonBits; rest != 0 {
		out = append(out, fmt.Sprintf("unknown_0x%x", rest))
	}
	return out
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
// (decoded with DecodeReasons). gpu_idle alone is not throttling but is
// reported as "gpu_idle" so an idle GPU is not mistaken for a throttled one.
// Bitmask values that are negative, NaN or not below 2^32 (not a bitmask:
// DCGM blank sentinels, which catalog.GPUPromQL already drops) are no data.
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
	at := analysis.NewStepIndex(steps)
	for _, s := range perReason {
		reason := string(s.Metric["reason"])
		k, l := analysis.Key(s.Metric, "reason")
		ensure(k, l)
		at.Walk(s.Values, func(i int, v model.SampleValue) {
			seen[k][i] = true
			if v > 0 {
				active[k][i] = append(active[k][i], reason)
			}
		})
	}
	for _, s := range bitmask {
		k, l := analysis.Key(s.Metric)
		ensure(k, l)
		at.Walk(s.Values, func(i int, v model.SampleValue) {
			if math.IsNaN(float64(v)) || v < 0 || v >= 1<<32 {
				return
			}
			seen[k][i] = true
			active[k][i] = append(active[k][i], DecodeReasons(uint64(v))...)
		})
	}
	keys := slices.Sorted(maps.Keys(active))
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
