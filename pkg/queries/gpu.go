package queries

import (
	"context"
	"maps"
	"slices"
	"strings"
	"time"

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

// gpuSaturation names the derived saturation series in a gpu query's signals.
const gpuSaturation = "saturation"

// gpuSignals are the canonical GPU signals a gpu query may ask for, in display order
// (throttle_reasons last: the default is every other one).
var gpuSignals = []catalog.Signal{catalog.GPUUtil, catalog.SMActive, catalog.GREngineActive, catalog.DRAMActive, catalog.TensorActive,
	catalog.FBUsed, catalog.FBTotal, catalog.Power, catalog.PowerLimit, catalog.PowerLimitDefault, catalog.Temperature,
	catalog.SMClock, catalog.SMClockMax, catalog.ThrottleReasons}

func (q *GPU) validate(s *settings.Settings) error {
	agents := fetch.SelectGPUAgents(s, q.Agents, q.Targets).Agents
	for _, a := range agents {
		if _, ok := s.Agent(a); !ok {
			return badQueryf("agents: %q is not a GPU agent configured in this data source", a)
		}
	}
	if len(agents) == 0 {
		return nil // no agent to read: answered with a notice, whatever the signals
	}
	_, _, err := gpuWant(q.Signals)
	return err
}

// gpuWant parses the signals field: the signals to read (default every gpuSignals signal
// but throttle_reasons) and whether the derived saturation series comes too (with the
// default set, or when asked for by name; explicit signals return only what they name).
func gpuWant(signals []string) ([]catalog.Signal, bool, error) {
	if len(signals) == 0 {
		return gpuSignals[:len(gpuSignals)-1], true, nil
	}
	valid := map[string]bool{}
	for _, s := range append(slices.Clone(gpuSignals), catalog.GPUErrorSignals...) {
		valid[string(s)] = true
	}
	var want []catalog.Signal
	withSaturation := false
	for _, s := range signals {
		if s == gpuSaturation {
			withSaturation = true
			continue
		}
		if !valid[s] {
			return nil, false, badQueryf("signals: %q is not one of %s", s, strings.Join(gpuEnums["signals"], ", "))
		}
		want = append(want, catalog.Signal(s))
	}
	return want, withSaturation, nil
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
	sel := fetch.SelectGPUAgents(env.Settings, q.Agents, q.Targets)
	r := fetch.NewRun(ctx, env, p)
	if len(sel.Agents) == 0 {
		r.Notes.Add(analysis.Warning, "no GPU agent is configured: add the Inferscope GPU agent or dcgm-exporter under GPU agents in the data source settings")
		return frames.TimeSeries(nil, meta(r, nil)), nil
	}
	want, withSaturation, _ := gpuWant(q.Signals) // validated while decoding
	g := r.GPUReads(sel, q.GPUs)
	g.AvailabilityNotices(ctx, want)
	if len(want) == 1 && want[0] == catalog.ThrottleReasons {
		return gpuThrottle(ctx, env, r, g)
	}
	series, got, err := gpuSignalSeries(ctx, g, want, p.Window, r.Steps)
	if err != nil {
		return nil, err
	}
	if withSaturation {
		sat, err := gpuSaturationSeries(ctx, r, g, got)
		if err != nil {
			return nil, err
		}
		series = append(series, sat...)
	}
	g.ImpossibleNotices(ctx, slices.Sorted(maps.Keys(got)))
	g.UnmatchedNotice()
	labelServing(env.Settings, series)
	return frames.TimeSeries(series, meta(r, nil)), nil
}

// gpuThrottle answers throttle_reasons asked alone: a state timeline per GPU of its
// throttle reasons (gpu.ThrottleStates, from the per-reason series where the agent splits
// them, else the bitmask).
func gpuThrottle(ctx context.Context, env *fetch.Env, r *fetch.Run, g *fetch.GPUReads) (data.Frames, error) {
	m, err := g.Gauge(ctx, catalog.ThrottleReasons, "max", catalog.AgentThrottleReasonLabel)
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
	g.ImpossibleNotices(ctx, []catalog.Signal{catalog.ThrottleReasons})
	g.UnmatchedNotice()
	states := gpu.ThrottleStates(perReason, bitmask, r.Steps)
	for i := range states {
		labelServingOf(env.Settings, states[i].Labels)
	}
	return frames.States(states, meta(r, nil)), nil
}

// gpuSignalSeries reads the wanted signals but throttle_reasons (asked beside others, it is
// a state, not a series) and returns their series with the gauges' matrices by signal: a
// counter (fetch.IsGPUCounter) gives its events in the window, or per second, each XID code
// its own series, and never joins the impossible-reading check (which reads gauges).
func gpuSignalSeries(ctx context.Context, g *fetch.GPUReads, want []catalog.Signal, window time.Duration, steps []time.Time) ([]analysis.Series, map[catalog.Signal]model.Matrix, error) {
	var series []analysis.Series
	got := map[catalog.Signal]model.Matrix{}
	for _, sig := range want {
		if sig == catalog.ThrottleReasons {
			continue
		}
		if fetch.IsGPUCounter(sig) {
			m, err := g.Counter(ctx, sig, window)
			if err != nil {
				return nil, nil, err
			}
			ss := gpu.Series(sig, m, steps)
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
		m, err := g.Gauge(ctx, sig, agg)
		if err != nil {
			return nil, nil, err
		}
		got[sig] = m
		series = append(series, gpu.Series(sig, m, steps)...)
	}
	return series, got, nil
}

// gpuSaturationSources are the saturation signal's sources, in order of preference.
var gpuSaturationSources = []catalog.Signal{catalog.SMActive, catalog.GREngineActive, catalog.GPUUtil}

// gpuSaturationSeries is the derived saturation signal: SM active, else graphics-engine
// active, else GPU utilisation (gpu.SaturationJudged), reading the sources got lacks into
// it; the stuck-counter check reads each source over the scrapes before each step
// (GPUReads.StuckWindows), not over query steps.
func gpuSaturationSeries(ctx context.Context, r *fetch.Run, g *fetch.GPUReads, got map[catalog.Signal]model.Matrix) ([]analysis.Series, error) {
	for _, sig := range gpuSaturationSources {
		if _, ok := got[sig]; !ok {
			m, err := g.Gauge(ctx, sig, "avg")
			if err != nil {
				return nil, err
			}
			got[sig] = m
		}
	}
	windows, err := g.StuckWindows(ctx, gpuSaturationSources, got)
	if err != nil {
		return nil, err
	}
	return gpu.SaturationJudged(got[catalog.SMActive], got[catalog.GREngineActive], got[catalog.GPUUtil], windows, r.Steps, &r.Notes), nil
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
