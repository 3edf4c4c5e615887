package queries

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/grafana/grafana-plugin-sdk-go/data"
	"github.com/prometheus/common/model"

	"github.com/inferscope/inferscope-llm-datasource/pkg/analysis"
	"github.com/inferscope/inferscope-llm-datasource/pkg/analysis/gpu"
	"github.com/inferscope/inferscope-llm-datasource/pkg/catalog"
	"github.com/inferscope/inferscope-llm-datasource/pkg/fetch"
	"github.com/inferscope/inferscope-llm-datasource/pkg/frames"
	"github.com/inferscope/inferscope-llm-datasource/pkg/settings"
)

// GPU is the gpu query: per-GPU series of the agents' signals.
type GPU struct {
	Common
	// Agents are GPU agent names (empty: the agents of the selected targets, else all).
	Agents []string `json:"agents,omitempty"`
	// GPUs keeps the GPUs whose index or UUID it lists.
	GPUs []string `json:"gpus,omitempty"`
	// Signals are GPU signals (gpuSignals), saturation, or the error and interconnect signals
	// (catalog.GPUErrorSignals: XID, ECC, PCIe replays, NVLink; only when named, never by
	// default); empty: all but throttle_reasons, plus saturation.
	Signals []string `json:"signals,omitempty"`
}

func (q *GPU) lists() []namedList {
	return []namedList{{"agents", &q.Agents}, {"gpus", &q.GPUs}, {"signals", &q.Signals}}
}

var gpuEnums = map[string][]string{"signals": append(append(signalNames(gpuSignals), gpuSaturation), signalNames(catalog.GPUErrorSignals)...)}

// gpuCounterFn says how the gpu query reads a GPU counter signal of catalog.GPUErrorSignals:
// "increase" (the error and event counters: how many in the window ending at each step, unit
// short) or "rate" (NVLink's bandwidth counter: per second). The other error signals (xid_last,
// nvlink_tx, nvlink_rx) are gauges.
var gpuCounterFn = map[catalog.Signal]string{
	catalog.XIDErrors: "increase", catalog.ECCSBEVolatile: "increase", catalog.ECCDBEVolatile: "increase",
	catalog.ECCSBEAggregate: "increase", catalog.ECCDBEAggregate: "increase", catalog.PCIeReplays: "increase",
	catalog.NVLinkBandwidthTotal: "rate", catalog.NVLinkCRCFlitErrors: "increase", catalog.NVLinkCRCDataErrors: "increase",
	catalog.NVLinkReplayErrors: "increase", catalog.NVLinkRecoveryErrors: "increase",
}

// gpuSaturation names the derived saturation series in a gpu query's signals.
const gpuSaturation = "saturation"

// gpuSignals are the canonical GPU signals a gpu query may ask for, in display order
// (throttle_reasons last: the default is every other one).
var gpuSignals = []catalog.Signal{catalog.GPUUtil, catalog.SMActive, catalog.GREngineActive, catalog.DRAMActive, catalog.TensorActive,
	catalog.FBUsed, catalog.FBTotal, catalog.Power, catalog.PowerLimit, catalog.PowerLimitDefault, catalog.Temperature,
	catalog.SMClock, catalog.SMClockMax, catalog.ThrottleReasons}

// signalNames renders signals as strings.
func signalNames(sigs []catalog.Signal) []string {
	out := make([]string, 0, len(sigs))
	for _, s := range sigs {
		out = append(out, string(s))
	}
	return out
}

// runGPU returns per-GPU series of the asked signals (default: all but
// throttle reasons, plus the derived saturation signal, which explicit
// signals include only when they name "saturation"), one series per agent and
// GPU. Series carry the labels target (agent name), gpu, uuid, hostname and
// name whether the agent is the Inferscope agent or dcgm-exporter
// (catalog.GPUPromQL normalises dcgm-exporter's UUID/uuid/gpu_uuid,
// Hostname/hostname and modelName, and drops DCGM blank sentinels). The gpus
// field keeps GPUs whose index or uuid it lists; a query selecting targets
// shows the GPUs those targets use (settings targets[].gpus, all when empty). Asking for throttle_reasons
// alone returns a state-timeline frame.
func runGPU(ctx context.Context, env *fetch.Env, p fetch.Plan, q *GPU) (data.Frames, error) {
	agents := q.Agents
	// perAgent restricts an agent to the GPU indices its selected targets use
	// (settings targets[].gpus); an agent absent from it shows every GPU.
	perAgent := map[string]map[string]bool{}
	allGPUs := map[string]bool{}
	if len(agents) == 0 {
		// Targets may name agents too; otherwise the agents of the selected targets, else all.
		for _, t := range q.Targets {
			if a, ok := env.Settings.Agent(t); ok {
				agents = append(agents, a.Name)
				allGPUs[a.Name] = true
			} else if tt, ok := env.Settings.Target(t); ok && tt.Agent != "" {
				agents = append(agents, tt.Agent)
				if len(tt.GPUs) == 0 {
					allGPUs[tt.Agent] = true
					continue
				}
				if perAgent[tt.Agent] == nil {
					perAgent[tt.Agent] = map[string]bool{}
				}
				for _, g := range tt.GPUs {
					perAgent[tt.Agent][strconv.Itoa(g)] = true
				}
			}
		}
		slices.Sort(agents)
		agents = slices.Compact(agents)
	}
	for a := range allGPUs {
		delete(perAgent, a)
	}
	if len(agents) == 0 {
		for _, a := range env.Settings.GPUAgents {
			agents = append(agents, a.Name)
		}
	}
	for _, a := range agents {
		if _, ok := env.Settings.Agent(a); !ok {
			return nil, badQueryf("agents: %q is not a GPU agent configured in this data source", a)
		}
	}
	r := fetch.NewRun(ctx, env, p)
	if len(agents) == 0 {
		r.Notes.Add(analysis.Warning, "no GPU agent is configured: add the Inferscope GPU agent or dcgm-exporter under GPU agents in the data source settings")
		return frames.TimeSeries(nil, meta(r, nil)), nil
	}
	var want []catalog.Signal
	valid := map[string]bool{}
	for _, s := range append(slices.Clone(gpuSignals), catalog.GPUErrorSignals...) {
		valid[string(s)] = true
	}
	// The derived saturation series comes with the default signal set, or
	// when asked for by name; explicit signals return only what they name.
	withSaturation := len(q.Signals) == 0
	for _, s := range q.Signals {
		if s == gpuSaturation {
			withSaturation = true
			continue
		}
		if !valid[s] {
			return nil, badQueryf("signals: %q is not one of %s", s, strings.Join(gpuEnums["signals"], ", "))
		}
		want = append(want, catalog.Signal(s))
	}
	if len(q.Signals) == 0 {
		want = gpuSignals[:len(gpuSignals)-1]
	}
	var views []fetch.TargetView
	for _, a := range agents {
		views = append(views, env.ViewOf(ctx, a, r.NamesFrom(), p.End))
	}
	r.AvailabilityNotices(views, want)
	keepGPU := map[string]bool{}
	for _, g := range q.GPUs {
		keepGPU[g] = true
	}
	// keepSeries keeps the series of the GPUs the query shows (gpus field, targets' GPUs).
	matched := map[string]bool{} // gpus entries that matched a stored GPU
	// noteUnmatched says which gpus entries matched no GPU; called once the
	// series are fetched, before the frames are built.
	noteUnmatched := func() {
		var none []string
		for _, g := range q.GPUs {
			if !matched[g] {
				none = append(none, strconv.Quote(g))
			}
		}
		if len(none) > 0 {
			r.Notes.Add(analysis.Warning, fmt.Sprintf("gpus: %s matched no GPU index or UUID of the selected agents in the range", strings.Join(none, ", ")))
		}
	}
	keepSeries := func(m model.Matrix) model.Matrix {
		if len(keepGPU) == 0 && len(perAgent) == 0 {
			return m
		}
		out := m[:0]
		for _, s := range m {
			gpuIdx, uuid := string(s.Metric["gpu"]), string(s.Metric["uuid"])
			if len(keepGPU) > 0 && !keepGPU[gpuIdx] && !keepGPU[uuid] {
				continue
			}
			if keepGPU[gpuIdx] {
				matched[gpuIdx] = true
			}
			if keepGPU[uuid] {
				matched[uuid] = true
			}
			if only, ok := perAgent[string(s.Metric["job"])]; ok && !only[gpuIdx] {
				continue
			}
			out = append(out, s)
		}
		return out
	}
	fetch := func(sig catalog.Signal, agg string, by ...string) (model.Matrix, error) {
		q, err := catalog.GPUPromQL(sig, agents, agg, by...)
		if err != nil {
			return nil, err
		}
		m, err := r.Range(ctx, q)
		if err != nil {
			return nil, err
		}
		return keepSeries(m), nil
	}
	// impossible names the readings of the fetched signals that GPUPromQL left out because
	// they cannot be true, on the GPUs shown.
	impossible := func(sigs []catalog.Signal) {
		q, err := catalog.GPUImpossiblePromQL(sigs, agents)
		if err == nil {
			var m model.Matrix
			if m, err = r.Range(ctx, q); err == nil {
				r.GPUImpossibleNotices(keepSeries(m))
			}
		}
		if err != nil {
			r.Skipped("the check for impossible GPU readings", err)
		}
	}

	if len(want) == 1 && want[0] == catalog.ThrottleReasons {
		m, err := fetch(catalog.ThrottleReasons, "max", catalog.AgentThrottleReasonLabel)
		if err != nil {
			return nil, err
		}
		var perReason, bitmask model.Matrix
		for _, s := range m {
			if _, ok := s.Metric[catalog.AgentThrottleReasonLabel]; ok {
				perReason = append(perReason, s)
			} else {
				bitmask = append(bitmask, s)
			}
		}
		impossible([]catalog.Signal{catalog.ThrottleReasons})
		noteUnmatched()
		states := gpu.ThrottleStates(perReason, bitmask, r.Steps)
		for i := range states {
			labelServingOf(env.Settings, states[i].Labels)
		}
		return frames.States(states, meta(r, nil)), nil
	}

	var series []analysis.Series
	got := map[catalog.Signal]model.Matrix{}
	for _, sig := range want {
		if sig == catalog.ThrottleReasons {
			continue
		}
		if fn, ok := gpuCounterFn[sig]; ok {
			// A counter: events in the window (or per second), never in the impossible-reading
			// check (which reads gauges).
			var by []string
			if sig == catalog.XIDErrors {
				by = []string{catalog.LabelXID}
			}
			q, err := catalog.GPUCounterPromQL(sig, agents, fn, p.Window, by...)
			if err != nil {
				return nil, err
			}
			m, err := r.Range(ctx, q)
			if err != nil {
				return nil, err
			}
			ss := gpu.Series(sig, keepSeries(m), r.Steps)
			for i := range ss {
				if x, ok := ss[i].Labels[catalog.LabelXID]; ok {
					ss[i].Name += " " + x
				}
			}
			series = append(series, ss...)
			continue
		}
		agg := "avg"
		if sig == catalog.XIDLast {
			agg = "max"
		}
		m, err := fetch(sig, agg)
		if err != nil {
			return nil, err
		}
		got[sig] = m
		series = append(series, gpu.Series(sig, m, r.Steps)...)
	}
	if !withSaturation {
		impossible(slices.Sorted(maps.Keys(got)))
		noteUnmatched()
		labelServing(env.Settings, series)
		return frames.TimeSeries(series, meta(r, nil)), nil
	}
	// The saturation signal: SM active, else graphics-engine active, else GPU utilisation.
	for _, sig := range []catalog.Signal{catalog.SMActive, catalog.GREngineActive, catalog.GPUUtil} {
		if _, ok := got[sig]; !ok {
			m, err := fetch(sig, "avg")
			if err != nil {
				return nil, err
			}
			got[sig] = m
		}
	}
	// The stuck-counter check reads each source over the scrapes before
	// each step (gpu.StuckScrapes of them), not over query steps.
	var windows map[catalog.Signal]gpu.ScrapeWindow
	if scrape := r.Env.Settings.ScrapeInterval; scrape > 0 {
		res := model.Duration(scrape).String()
		windows = map[catalog.Signal]gpu.ScrapeWindow{}
		for _, sig := range []catalog.Signal{catalog.SMActive, catalog.GREngineActive, catalog.GPUUtil} {
			if len(got[sig]) == 0 {
				continue
			}
			var w gpu.ScrapeWindow
			for _, agg := range []string{"max", "min", "count"} {
				q, err := catalog.GPUPromQL(sig, agents, "avg")
				if err != nil {
					return nil, err
				}
				m, err := r.Range(ctx, catalog.OverTimePromQL(agg, q, gpu.StuckLookback(scrape), res))
				if err != nil {
					return nil, err
				}
				switch agg {
				case "max":
					w.Max = keepSeries(m)
				case "min":
					w.Min = keepSeries(m)
				default:
					w.Count = keepSeries(m)
				}
			}
			windows[sig] = w
		}
	}
	series = append(series, gpu.SaturationJudged(got[catalog.SMActive], got[catalog.GREngineActive], got[catalog.GPUUtil], windows, r.Steps, &r.Notes)...)
	impossible(slices.Sorted(maps.Keys(got)))
	noteUnmatched()
	labelServing(env.Settings, series)
	return frames.TimeSeries(series, meta(r, nil)), nil
}

// ServingLabel is the label a gpu query adds to every per-GPU series: the
// inference targets the GPU serves and its agent, "vllm-a on node-1-gpu"
// (several targets comma-separated, in settings order), or the agent name
// alone where no target names the agent (settings targets[].agent) or every
// target naming it lists other GPUs (targets[].gpus). Dashboards name GPU
// series by it, so a legend says whose GPU burns.
const ServingLabel = "serving"

// Serving returns the ServingLabel value of GPU gpu (its index as the
// agent reports it) of agent: the targets whose agent is agent and whose
// gpus list is empty or holds gpu, joined with ", ", then " on " and the
// agent; the agent alone when there is none.
func Serving(s *settings.Settings, agent, gpu string) string {
	var names []string
	for _, t := range s.Targets {
		if t.UsesGPU(agent, gpu) {
			names = append(names, t.Name)
		}
	}
	if len(names) == 0 {
		return agent
	}
	return strings.Join(names, ", ") + " on " + agent
}

// labelServing sets ServingLabel on every series that has a job (the
// agent) and a gpu label.
func labelServing(s *settings.Settings, series []analysis.Series) {
	for i := range series {
		labelServingOf(s, series[i].Labels)
	}
}

// labelServingOf sets ServingLabel on one label set that has a job (or
// target: the agent) and a gpu label; the throttle-reason states get it
// too (issue 33: their rows read "throttle · gpu=0, host…" alike).
func labelServingOf(s *settings.Settings, l map[string]string) {
	agent, ok := l["job"]
	if !ok {
		agent, ok = l["target"]
	}
	g, hasGPU := l["gpu"]
	if !ok || !hasGPU || l == nil {
		return
	}
	l[ServingLabel] = Serving(s, agent, g)
}
