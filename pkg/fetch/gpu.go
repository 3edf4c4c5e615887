package fetch

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/common/model"

	"github.com/inferscope/inferscope-llm-datasource/pkg/analysis"
	"github.com/inferscope/inferscope-llm-datasource/pkg/analysis/gpu"
	"github.com/inferscope/inferscope-llm-datasource/pkg/catalog"
	"github.com/inferscope/inferscope-llm-datasource/pkg/settings"
)

// GPUSelection is which GPU agents a gpu query reads and which of their GPUs it shows.
type GPUSelection struct {
	// Agents are the agent names to read: the asked ones as given, else the agents the
	// selected targets name (sorted, each once), else every configured agent in settings
	// order. An asked name need not be a configured agent (the query's validation says so).
	Agents []string
	// PerAgent restricts an agent to the GPU indices (as the agent reports them) its selected
	// targets use (settings targets[].gpus); an agent absent from it shows every GPU, as does
	// an agent named directly or by a target with no gpus list.
	PerAgent map[string]map[string]bool
}

// SelectGPUAgents returns the GPU selection of a gpu query asking for agents (empty: none
// named) over targets (target or agent names of s; empty: all).
func SelectGPUAgents(s *settings.Settings, agents, targets []string) GPUSelection {
	sel := GPUSelection{Agents: agents, PerAgent: map[string]map[string]bool{}}
	allGPUs := map[string]bool{}
	if len(sel.Agents) == 0 {
		// Targets may name agents too; otherwise the agents of the selected targets, else all.
		for _, t := range targets {
			if a, ok := s.Agent(t); ok {
				sel.Agents = append(sel.Agents, a.Name)
				allGPUs[a.Name] = true
			} else if tt, ok := s.Target(t); ok && tt.Agent != "" {
				sel.Agents = append(sel.Agents, tt.Agent)
				if len(tt.GPUs) == 0 {
					allGPUs[tt.Agent] = true
					continue
				}
				if sel.PerAgent[tt.Agent] == nil {
					sel.PerAgent[tt.Agent] = map[string]bool{}
				}
				for _, g := range tt.GPUs {
					sel.PerAgent[tt.Agent][strconv.Itoa(g)] = true
				}
			}
		}
		slices.Sort(sel.Agents)
		sel.Agents = slices.Compact(sel.Agents)
	}
	for a := range allGPUs {
		delete(sel.PerAgent, a)
	}
	if len(sel.Agents) == 0 {
		for _, a := range s.GPUAgents {
			sel.Agents = append(sel.Agents, a.Name)
		}
	}
	return sel
}

// GPUReads reads per-GPU series of a selection's agents for one run, keeping the series of
// the GPUs the query shows: those its gpus field lists (by index or UUID; all when empty)
// and, per agent, those its selected targets use (GPUSelection.PerAgent). It remembers which
// gpus entries matched a stored GPU, for UnmatchedNotice. Not safe for concurrent use.
type GPUReads struct {
	r       *Run
	sel     GPUSelection
	gpus    []string
	keep    map[string]bool
	matched map[string]bool
}

// GPUReads starts the reads of sel on r, showing the GPUs gpus lists (index or UUID; empty:
// every GPU of the selection).
func (r *Run) GPUReads(sel GPUSelection, gpus []string) *GPUReads {
	g := &GPUReads{r: r, sel: sel, gpus: gpus, keep: map[string]bool{}, matched: map[string]bool{}}
	for _, x := range gpus {
		g.keep[x] = true
	}
	return g
}

// AvailabilityNotices adds the availability notices of the signals on the selection's agents
// (Run.AvailabilityNotices over their stored names since the run's names start).
func (g *GPUReads) AvailabilityNotices(ctx context.Context, signals []catalog.Signal) {
	var views []TargetView
	for _, a := range g.sel.Agents {
		views = append(views, g.r.Env.ViewOf(ctx, a, g.r.NamesFrom(), g.r.Plan.End))
	}
	g.r.AvailabilityNotices(views, signals)
}

// keepSeries keeps the series of the GPUs the query shows and marks the gpus entries that
// matched (before the per-agent restriction: an entry naming a GPU of the agent matched it).
func (g *GPUReads) keepSeries(m model.Matrix) model.Matrix {
	if len(g.keep) == 0 && len(g.sel.PerAgent) == 0 {
		return m
	}
	out := m[:0]
	for _, s := range m {
		gpuIdx, uuid := string(s.Metric["gpu"]), string(s.Metric["uuid"])
		if len(g.keep) > 0 && !g.keep[gpuIdx] && !g.keep[uuid] {
			continue
		}
		if g.keep[gpuIdx] {
			g.matched[gpuIdx] = true
		}
		if g.keep[uuid] {
			g.matched[uuid] = true
		}
		if only, ok := g.sel.PerAgent[string(s.Metric["job"])]; ok && !only[gpuIdx] {
			continue
		}
		out = append(out, s)
	}
	return out
}

// Gauge reads a GPU gauge signal per GPU (catalog.GPUPromQL with aggregation agg and the
// extra labels), on the GPUs shown.
func (g *GPUReads) Gauge(ctx context.Context, sig catalog.Signal, agg string, by ...string) (model.Matrix, error) {
	q, err := catalog.GPUPromQL(sig, g.sel.Agents, agg, by...)
	if err != nil {
		return nil, err
	}
	m, err := g.r.Range(ctx, q)
	if err != nil {
		return nil, err
	}
	return g.keepSeries(m), nil
}

// gpuCounterFn says how a GPU counter signal of catalog.GPUErrorSignals is read: "increase"
// (the error and event counters: how many in the window ending at each step) or "rate"
// (NVLink's bandwidth counter: per second). The other error signals (xid_last, nvlink_tx,
// nvlink_rx) are gauges.
var gpuCounterFn = map[catalog.Signal]string{
	catalog.XIDErrors: "increase", catalog.ECCSBEVolatile: "increase", catalog.ECCDBEVolatile: "increase",
	catalog.ECCSBEAggregate: "increase", catalog.ECCDBEAggregate: "increase", catalog.PCIeReplays: "increase",
	catalog.NVLinkBandwidthTotal: "rate", catalog.NVLinkCRCFlitErrors: "increase", catalog.NVLinkCRCDataErrors: "increase",
	catalog.NVLinkReplayErrors: "increase", catalog.NVLinkRecoveryErrors: "increase",
}

// IsGPUCounter reports whether a GPU signal is read as a counter (GPUReads.Counter) rather
// than a gauge.
func IsGPUCounter(sig catalog.Signal) bool {
	_, ok := gpuCounterFn[sig]
	return ok
}

// Counter reads a GPU counter signal per GPU over window (catalog.GPUCounterPromQL: increase,
// or rate for NVLink's bandwidth; XID errors by catalog.LabelXID), on the GPUs shown.
func (g *GPUReads) Counter(ctx context.Context, sig catalog.Signal, window time.Duration) (model.Matrix, error) {
	var by []string
	if sig == catalog.XIDErrors {
		by = []string{catalog.LabelXID}
	}
	q, err := catalog.GPUCounterPromQL(sig, g.sel.Agents, gpuCounterFn[sig], window, by...)
	if err != nil {
		return nil, err
	}
	m, err := g.r.Range(ctx, q)
	if err != nil {
		return nil, err
	}
	return g.keepSeries(m), nil
}

// ImpossibleNotices names the readings of the fetched gauge signals that catalog.GPUPromQL
// left out because they cannot be true, on the GPUs shown (Run.GPUImpossibleNotices); a
// failed check is said (Run.Skipped).
func (g *GPUReads) ImpossibleNotices(ctx context.Context, sigs []catalog.Signal) {
	q, err := catalog.GPUImpossiblePromQL(sigs, g.sel.Agents)
	if err == nil {
		var m model.Matrix
		if m, err = g.r.Range(ctx, q); err == nil {
			g.r.GPUImpossibleNotices(g.keepSeries(m))
		}
	}
	if err != nil {
		g.r.Skipped("the check for impossible GPU readings", err)
	}
}

// UnmatchedNotice says which gpus entries matched no GPU of the reads so far; called once
// the series are fetched.
func (g *GPUReads) UnmatchedNotice() {
	var none []string
	for _, x := range g.gpus {
		if !g.matched[x] {
			none = append(none, strconv.Quote(x))
		}
	}
	if len(none) > 0 {
		g.r.Notes.Add(analysis.Warning, fmt.Sprintf("gpus: %s matched no GPU index or UUID of the selected agents in the range", strings.Join(none, ", ")))
	}
}

// StuckWindows reads, for each of sigs with series in got, the max, min and count of its
// per-GPU average over the gpu.StuckScrapes scrapes before each step (catalog.OverTimePromQL
// at the scrape resolution), for the stuck-counter check of gpu.SaturationJudged. Without a
// scrape interval in the settings it returns nil (the check falls back to the steps).
func (g *GPUReads) StuckWindows(ctx context.Context, sigs []catalog.Signal, got map[catalog.Signal]model.Matrix) (map[catalog.Signal]gpu.ScrapeWindow, error) {
	scrape := g.r.Env.Settings.ScrapeInterval
	if scrape <= 0 {
		return nil, nil
	}
	res := model.Duration(scrape).String()
	windows := map[catalog.Signal]gpu.ScrapeWindow{}
	for _, sig := range sigs {
		if len(got[sig]) == 0 {
			continue
		}
		var w gpu.ScrapeWindow
		for _, agg := range []string{"max", "min", "count"} {
			q, err := catalog.GPUPromQL(sig, g.sel.Agents, "avg")
			if err != nil {
				return nil, err
			}
			m, err := g.r.Range(ctx, catalog.OverTimePromQL(agg, q, gpu.StuckLookback(scrape), res))
			if err != nil {
				return nil, err
			}
			switch agg {
			case "max":
				w.Max = g.keepSeries(m)
			case "min":
				w.Min = g.keepSeries(m)
			default:
				w.Count = g.keepSeries(m)
			}
		}
		windows[sig] = w
	}
	return windows, nil
}
