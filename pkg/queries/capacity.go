package queries

import (
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/data"
	"github.com/prometheus/common/model"

	"github.com/inferscope/inferscope-llm-datasource/pkg/analysis"
	"github.com/inferscope/inferscope-llm-datasource/pkg/catalog"
	"github.com/inferscope/inferscope-llm-datasource/pkg/fetch"
	"github.com/inferscope/inferscope-llm-datasource/pkg/frames"
	"github.com/inferscope/inferscope-llm-datasource/pkg/hist"
	"github.com/inferscope/inferscope-llm-datasource/pkg/settings"
	"github.com/inferscope/inferscope-llm-datasource/pkg/twin"
)

// Capacity is the capacity query: per vLLM V1 target, a twin of the engine (pkg/twin over
// pkg/enginemodel) calibrated on the target's history over the query's range, and per SLO
// profile the load it served, the knee (the highest req/s at which the profile still holds),
// the headroom, the days until the load trend reaches the knee, the replicas that keep each
// at Utilisation of its knee, the calibrated parameters with their sources, what-if
// predictions with their error bands, and the recommended replicas over the range
// (docs/capacity.md).
type Capacity struct {
	Common
	// Format is table (default: one row per target and profile), parameters (the calibrated
	// parameters and their source), whatif (predicted TTFT/TPOT/E2E p50/p99 and attainment
	// under changes) or replicas (time series: ⌈load / (utilisation × knee)⌉ at every step,
	// for an HPA/KEDA external metric).
	Format string `json:"format,omitempty"`
	// Profiles are the SLO profiles (sloProfiles) to find knees for; empty: every profile.
	Profiles []string `json:"profiles,omitempty"`
	// Utilisation is the share of its knee each replica is kept at: 0 < u ≤ 1, default 0.8.
	Utilisation *float64 `json:"utilisation,omitempty"`
	// MaxNumSeqs and MaxNumBatchedTokens are the targets' --max-num-seqs and
	// --max-num-batched-tokens, which vLLM does not export; 0: vLLM's defaults 256 and 8192.
	MaxNumSeqs          int `json:"maxNumSeqs,omitempty"`
	MaxNumBatchedTokens int `json:"maxNumBatchedTokens,omitempty"`
	// WhatIf, with format whatif, is the one change to predict (besides the current
	// configuration); absent: the default set (max_num_seqs halved and doubled, +1 replica,
	// prompts ×2, prefix caching at 50 %).
	WhatIf *CapacityWhatIf `json:"whatIf,omitempty"`

	utilisation float64
}

// CapacityWhatIf is one change to a target's configuration or load; zero fields change
// nothing, and at least one must be set.
type CapacityWhatIf struct {
	// MaxNumSeqs sets --max-num-seqs (≥ 1).
	MaxNumSeqs int `json:"maxNumSeqs,omitempty"`
	// AddReplicas adds this many identical replicas (the load spread evenly over Replicas +
	// AddReplicas); Replicas is how many serve the target's load now (default 1).
	AddReplicas int `json:"addReplicas,omitempty"`
	Replicas    int `json:"replicas,omitempty"`
	// PromptScale multiplies every prompt length (2: prompts twice as long; 0 < k ≤ 16).
	PromptScale float64 `json:"promptScale,omitempty"`
	// PrefixCachingPercent sets the prefix-cache hit ratio to this percentage of prompt
	// tokens (prefix caching on; 0 < X ≤ 100).
	PrefixCachingPercent float64 `json:"prefixCachingPercent,omitempty"`
	// LoadScale multiplies the target's arrival rate on the same replicas (2: twice the load;
	// 0 < k ≤ 100). Its p99s carry no error band yet (not calibrated on the validation set).
	LoadScale float64 `json:"loadScale,omitempty"`
}

// Capacity formats.
const (
	capacityTable      = "table"
	capacityParameters = "parameters"
	capacityWhatIf     = "whatif"
	capacityReplicas   = "replicas"
)

var capacityEnums = map[string][]string{"format": {capacityTable, capacityParameters, capacityWhatIf, capacityReplicas}}

// Bounds of the capacity query: the history the twin needs, and how long a calibrated twin
// and its knees are reused.
const (
	// capacityMinHistory is the shortest history calibrated on (the validation used 30 min).
	capacityMinHistory = 30 * time.Minute
	// capacityMinRequests is the fewest finished requests in the history calibrated on.
	capacityMinRequests = 100
	// capacityBucket aligns the history's end (and start) down, so that queries within the
	// same 5 minutes share one calibrated twin.
	capacityBucket = 5 * time.Minute
	// capacityTTL is how long a calibrated twin, its knees and its what-ifs are reused.
	capacityTTL = 5 * time.Minute
	// capacityCacheSize caps the cached entries (oldest dropped first): per target one
	// observation, one twin, one knee per profile and six what-ifs (the current configuration
	// and the five default changes), so about a hundred targets' worth.
	capacityCacheSize = 1024
	// capacityBackgroundLimit bounds one detached twin computation (a calibration, a knee
	// search, a what-if), which goes on after the query that started it has answered.
	capacityBackgroundLimit = 10 * time.Minute
	// capacityWaitDefault is how long a capacity query waits for twin simulations before it
	// answers with the rows that are ready (capacityWait).
	capacityWaitDefault = 20 * time.Second
)

// capacitySims bounds the twin simulations running at once in the process: one per CPU the
// runtime uses. They are CPU-bound; more at once would only slow each down.
var capacitySims = make(chan struct{}, runtime.GOMAXPROCS(0))

// capacityWait is how long a capacity query waits for its twins' simulations: the first
// calibration of ten targets with their knees and what-ifs takes minutes of CPU, longer than
// Grafana waits for a panel, so a query answers after capacityWaitDefault with the rows that
// are ready and a notice naming the targets still computing; their simulations go on
// (detached) and a refresh finds them in the cache. INFERSCOPE_CAPACITY_WAIT (a Go
// duration, e.g. "2m") sets another wait; an unreadable value keeps the default.
func capacityWait() time.Duration {
	if d, err := time.ParseDuration(os.Getenv("INFERSCOPE_CAPACITY_WAIT")); err == nil && d > 0 {
		return d
	}
	return capacityWaitDefault
}

func (q *Capacity) lists() []namedList { return []namedList{{"profiles", &q.Profiles}} }

func (q *Capacity) validate(s *settings.Settings) error {
	if q.Format != "" && !slices.Contains(capacityEnums["format"], q.Format) {
		return badQueryf("format: %q is not one of table, parameters, whatif, replicas", q.Format)
	}
	// "none" is what the editor's new query carries (a latency query switched to capacity keeps
	// it, and the capacity editor shows no groupBy control): the answer is per target anyway.
	if q.GroupBy != "" && q.GroupBy != "none" && q.GroupBy != "target" {
		return badQueryf("groupBy: %q: the twin models one engine per target, so the capacity query is grouped by target (leave groupBy empty or none, or set it to target)", q.GroupBy)
	}
	if len(q.Models) > 0 {
		return badQueryf("models: the twin models a target's whole engine, so the capacity query cannot be restricted to models (select targets instead)")
	}
	for _, name := range q.Profiles {
		if _, ok := s.Profile(name); !ok {
			return badQueryf("profiles: %q is not an SLO profile of this data source (sloProfiles: %s)", name, strings.Join(s.ProfileNames(), ", "))
		}
	}
	q.utilisation = 0.8
	if q.Utilisation != nil {
		if u := *q.Utilisation; !(u > 0 && u <= 1) {
			return badQueryf("utilisation: %v must be a share of the knee in (0, 1], such as 0.8", u)
		}
		q.utilisation = *q.Utilisation
	}
	if q.MaxNumSeqs < 0 || q.MaxNumSeqs > 65536 {
		return badQueryf("maxNumSeqs: %d must be vLLM's --max-num-seqs, from 1 to 65536 (0: the default 256)", q.MaxNumSeqs)
	}
	if q.MaxNumBatchedTokens < 0 || q.MaxNumBatchedTokens > 1<<20 || (q.MaxNumBatchedTokens > 0 && q.MaxNumBatchedTokens < max(q.MaxNumSeqs, 1)) {
		return badQueryf("maxNumBatchedTokens: %d must be vLLM's --max-num-batched-tokens, at least maxNumSeqs and at most 1048576 (0: the default 8192)", q.MaxNumBatchedTokens)
	}
	if w := q.WhatIf; w != nil {
		if q.Format != capacityWhatIf {
			return badQueryf("whatIf: a change is predicted only with format whatif")
		}
		switch {
		case w.MaxNumSeqs < 0 || w.MaxNumSeqs > 65536:
			return badQueryf("whatIf.maxNumSeqs: %d must be from 1 to 65536", w.MaxNumSeqs)
		case w.AddReplicas < 0 || w.AddReplicas > 1000:
			return badQueryf("whatIf.addReplicas: %d must be from 1 to 1000", w.AddReplicas)
		case w.Replicas < 0 || w.Replicas > 1000:
			return badQueryf("whatIf.replicas: %d must be from 1 to 1000 (the replicas serving the load now)", w.Replicas)
		case w.PromptScale < 0 || w.PromptScale > 16 || math.IsNaN(w.PromptScale):
			return badQueryf("whatIf.promptScale: %v must be a factor in (0, 16], such as 2", w.PromptScale)
		case w.PrefixCachingPercent < 0 || w.PrefixCachingPercent > 100 || math.IsNaN(w.PrefixCachingPercent):
			return badQueryf("whatIf.prefixCachingPercent: %v must be a percentage in (0, 100]", w.PrefixCachingPercent)
		case w.LoadScale < 0 || w.LoadScale > 100 || math.IsNaN(w.LoadScale):
			return badQueryf("whatIf.loadScale: %v must be a factor in (0, 100], such as 2", w.LoadScale)
		case w.MaxNumSeqs == 0 && w.AddReplicas == 0 && w.PromptScale == 0 && w.PrefixCachingPercent == 0 && w.LoadScale == 0:
			return badQueryf("whatIf: set at least one of maxNumSeqs, addReplicas, promptScale, prefixCachingPercent, loadScale")
		}
	}
	return nil
}

// change is the twin's form of the query's what-if.
func (w *CapacityWhatIf) change() twin.Change {
	c := twin.Change{MaxNumSeqs: w.MaxNumSeqs, AddReplicas: w.AddReplicas, Replicas: w.Replicas, PromptScale: w.PromptScale, PrefixHitRatio: w.PrefixCachingPercent / 100, LoadScale: w.LoadScale}
	var parts []string
	if w.MaxNumSeqs > 0 {
		parts = append(parts, fmt.Sprintf("max-num-seqs %d", w.MaxNumSeqs))
	}
	if w.AddReplicas > 0 {
		parts = append(parts, fmt.Sprintf("+%d replica(s), %d in all", w.AddReplicas, max(w.Replicas, 1)+w.AddReplicas))
	}
	if w.PromptScale > 0 && w.PromptScale != 1 {
		parts = append(parts, "prompts x"+strconv.FormatFloat(w.PromptScale, 'g', 4, 64))
	}
	if w.PrefixCachingPercent > 0 {
		parts = append(parts, "prefix caching "+strconv.FormatFloat(w.PrefixCachingPercent, 'g', 4, 64)+"%")
	}
	if w.LoadScale > 0 && w.LoadScale != 1 {
		parts = append(parts, "load x"+strconv.FormatFloat(w.LoadScale, 'g', 4, 64)+" on the same replicas")
	}
	c.Name = strings.Join(parts, ", ")
	return c
}

// capacityTarget is one target's calibrated twin over the history, or why there is none.
type capacityTarget struct {
	name, key string
	observed  twin.Observed
	twin      twin.Twin
	// from and to are the history the twin is calibrated on.
	from, to time.Time
	// skip, when set, is the notice saying why the target has no twin.
	skip string
}

// twinProfile is a settings profile in the twin's terms for one target: its latency
// objectives that apply to the target, named.
type twinProfile struct {
	profile twin.Profile
	names   []string
}

// runCapacity calibrates a twin per selected vLLM V1 target on the history of the query's
// range (aligned down to 5 minutes; at least 30 minutes and 100 finished requests, else a
// notice and no row), finds each profile's knee on it, and answers in the asked format.
// Calibrated twins and knees are cached for capacityTTL per target, history and settings.
// Simulations run detached from the request (at most capacityBackgroundLimit each); the
// query waits capacityWait for them, then answers with the rows that are ready and a notice
// naming the targets whose simulations go on.
func runCapacity(ctx context.Context, env *fetch.Env, p fetch.Plan, q *Capacity) (data.Frames, error) {
	p.Scope.By = []string{"target"}
	r := fetch.NewRun(ctx, env, p)
	r.ScopeNotices(ctx, []catalog.Signal{catalog.RequestsFinished, catalog.PromptTokens, catalog.GenerationTokens})
	profiles := q.Profiles
	if len(profiles) == 0 {
		profiles = env.Settings.ProfileNames()
	}
	if len(profiles) == 0 {
		r.Notes.Add(analysis.Warning, "no SLO profile is configured (sloProfiles): the twin has no objective to find a knee for")
	}
	to := p.End.Truncate(capacityBucket)
	from := p.Start.Truncate(capacityBucket)
	wait, cancel := answerDeadline(ctx, capacityWait())
	defer cancel()
	targets, err := capacityTargets(ctx, wait, env, r, q, from, to)
	if err != nil {
		return nil, err
	}
	switch q.Format {
	case capacityParameters:
		var rows []frames.CapacityParamRow
		for _, t := range targets {
			for _, prm := range t.twin.Params {
				rows = append(rows, frames.CapacityParamRow{Target: t.name, Parameter: prm.Name, Value: prm.Value, Source: string(prm.Source), FitError: prm.FitError})
			}
		}
		return frames.CapacityParameters(rows, meta(r, nil)), nil
	case capacityWhatIf:
		rows, err := capacityWhatIfs(ctx, wait, env, r, q, targets, profiles)
		if err != nil {
			return nil, err
		}
		return frames.CapacityWhatIf(rows, meta(r, nil)), nil
	}
	type pair struct {
		t  capacityTarget
		tp twinProfile
	}
	var pairs []pair
	for _, t := range targets {
		for _, name := range profiles {
			// Its notices are said below, in order with the knee's.
			if tp, ok := twinProfileFor(env.Settings, name, t.name, &analysis.Notices{}); ok {
				pairs = append(pairs, pair{t, tp})
			}
		}
	}
	// Every knee search goes out at once (capacitySims bounds the simulations).
	knees, pending, err := capacityAll(ctx, r, len(pairs), func(k int) (float64, error) {
		return capacityKnee(wait, env, pairs[k].t, pairs[k].tp)
	})
	if err != nil {
		return nil, err
	}
	var checks []twin.CurrentCheck
	if q.Format != capacityReplicas {
		if checks, err = capacityCurrentChecks(ctx, wait, env, r, targets, profiles); err != nil {
			return nil, err
		}
	}
	var rows []frames.CapacityRow
	var late []string
	k := -1
	for ti, t := range targets {
		for _, name := range profiles {
			tp, ok := twinProfileFor(env.Settings, name, t.name, &r.Notes)
			if !ok {
				continue
			}
			k++
			knee := knees[k]
			if pending[k] {
				late = append(late, t.name)
				continue
			}
			load := t.observed.Rate
			replicas := float64(twin.Replicas(load, knee, q.utilisation))
			if knee == 0 {
				replicas = math.NaN()
				r.Notes.Add(analysis.Warning, fmt.Sprintf("profile %s does not hold on target %s's twin even at %.3g req/s (1/64 of its load): its objectives are out of reach at any load, so no replica count meets them", name, t.name, math.Max(load, 0.5)/64))
			}
			days := twin.DaysToKnee(t.observed.RateSeries, knee)
			rows = append(rows, frames.CapacityRow{Target: t.name, Profile: name, Load: load, Knee: knee, KneeError: twin.KneeBand(knee, load),
				Headroom: twin.Headroom(knee, load), DaysToKnee: days,
				Replicas: replicas, Utilisation: q.utilisation, Objectives: strings.Join(tp.names, ", "), DaysToKneeNote: twin.DaysToKneeWords(days)})
			if ti < len(checks) {
				rows[len(rows)-1].KneeNote = capacityKneeNote(checks[ti])
			}
		}
	}
	capacityLate(r, late, "its knees are", "their knees are")
	if q.Format != capacityReplicas {
		return frames.CapacityTable(rows, meta(r, nil)), nil
	}
	return capacityReplicaSeries(ctx, r, p, q, rows)
}

// capacityCurrentChecks is, per target in order, the twin check of its current configuration
// (twin.CheckCurrent of the what-if's current row: the same simulation, cached, under all the
// profiles' objectives); "" where it is pending, has no objective or nothing to check.
func capacityCurrentChecks(ctx, wait context.Context, env *fetch.Env, r *fetch.Run, targets []capacityTarget, profiles []string) ([]twin.CurrentCheck, error) {
	alls := make([]twin.Profile, len(targets))
	for i, t := range targets {
		alls[i] = twin.Profile{Name: "all"}
		for _, name := range profiles {
			if tp, ok := twinProfileFor(env.Settings, name, t.name, &analysis.Notices{}); ok {
				alls[i].Objectives = append(alls[i].Objectives, tp.profile.Objectives...)
			}
		}
	}
	outs, pending, err := capacityAll(ctx, r, len(targets), func(k int) (twin.Outcome, error) {
		if len(alls[k].Objectives) == 0 {
			return twin.Outcome{}, nil
		}
		return capacityChangeOutcome(wait, env, targets[k], twin.Change{Name: "current"}, alls[k])
	})
	if err != nil {
		return nil, err
	}
	checks := make([]twin.CurrentCheck, len(targets))
	for k, t := range targets {
		if pending[k] || len(alls[k].Objectives) == 0 {
			continue
		}
		observed, err := capacityObservedP99(ctx, r, t)
		if err != nil {
			return nil, err
		}
		checks[k] = twin.CompareCurrent(outs[k].P99, observed, "ttft", "e2e")
	}
	return checks, nil
}

// capacityKneeNote is the capacity row's knee_note from its target's twin check: when the
// current configuration's prediction is off the observed p99, the knee (found on the same
// twin) is in doubt beyond its error band; else "".
func capacityKneeNote(check twin.CurrentCheck) string {
	if !check.Off() {
		return ""
	}
	return "in doubt: the twin's current configuration is off this target's history (" + check.Evidence() + "), so the knee may be off by more than its error band; see the what-if table's twin check"
}

// capacityTargets returns the selected targets' twins over [from, to], in settings order;
// targets the twin cannot model (not vLLM V1, too little history, a failed calibration) get
// a notice and no twin, and so do those whose calibration outlasts wait (capacityLate).
func capacityTargets(ctx, wait context.Context, env *fetch.Env, r *fetch.Run, q *Capacity, from, to time.Time) ([]capacityTarget, error) {
	span := to.Sub(from)
	if span < capacityMinHistory {
		r.Notes.Add(analysis.Warning, fmt.Sprintf("the time range holds %s of history (aligned to 5 minutes): the twin is calibrated on at least %s, so no target is modelled; widen the time range", model.Duration(span), model.Duration(capacityMinHistory)))
		return nil, nil
	}
	type cand struct {
		name string
		from time.Time
	}
	var cands []cand
	for _, v := range r.Views(ctx) {
		if !v.OK {
			continue // ScopeNotices said why: nothing stored in the range, or no known family
		}
		if v.Det.Engine != catalog.EngineVLLM || v.Det.Generation == "v0" {
			eng := string(v.Det.Engine)
			if v.Det.Generation != "" {
				eng += " " + v.Det.Generation
			}
			r.Notes.Add(analysis.Info, fmt.Sprintf("target %s runs %s: the capacity twin models the vLLM V1 engine only, so it has no capacity figures", v.Name, eng))
			continue
		}
		// The twin is one engine: a data-parallel target's requests are several engines'
		// (docs/capacity.md, What is missing), and one engine at their load is no answer.
		engines, err := r.Instant(ctx, catalog.TwinEnginesPromQL(v.Name, span), to)
		if err != nil {
			return nil, err
		}
		if len(engines) > 0 && engines[0].Value > 1 {
			r.Notes.Add(analysis.Info, fmt.Sprintf("target %s runs %g data-parallel vLLM engines (engine label): the capacity twin models one engine, so it has no capacity figures", v.Name, float64(engines[0].Value)))
			continue
		}
		tFrom, err := capacityHistoryStart(ctx, env, r, v.Name, from, to)
		if err != nil {
			return nil, err
		}
		if held := to.Sub(tFrom); held < capacityMinHistory {
			r.Notes.Add(analysis.Warning, fmt.Sprintf("target %s has %s of stored history in the time range (aligned to 5 minutes): the twin is calibrated on at least %s, so it has no capacity figures", v.Name, model.Duration(held), model.Duration(capacityMinHistory)))
			continue
		} else if held < span {
			r.Notes.Add(analysis.Info, fmt.Sprintf("target %s has %s of stored history in the %s time range: its load and twin are those of the stored part, not its requests spread over the whole range", v.Name, model.Duration(held), model.Duration(span)))
		}
		cands = append(cands, cand{v.Name, tFrom})
	}
	// Every target's calibration goes out at once (capacitySims bounds the simulations),
	// and is read back in settings order.
	ts, pending, err := capacityAll(ctx, r, len(cands), func(k int) (capacityTarget, error) {
		return capacityCalibrate(ctx, wait, env, r, q, cands[k].name, cands[k].from, to)
	})
	if err != nil {
		return nil, err
	}
	var out []capacityTarget
	var late []string
	for k, t := range ts {
		switch {
		case pending[k]:
			late = append(late, cands[k].name)
		case t.skip != "":
			r.Notes.Add(analysis.Warning, t.skip)
		default:
			out = append(out, t)
		}
	}
	capacityLate(r, late, "its twin is", "their twins are")
	return out, nil
}

// capacityLate says which targets' simulations outlasted the query's answer deadline
// (capacityWait): they go on, and a refresh once they are done has their rows.
func capacityLate(r *fetch.Run, targets []string, one, many string) {
	targets = slices.Compact(targets) // a target's rows are adjacent
	if len(targets) == 0 {
		return
	}
	what := one
	if len(targets) > 1 {
		what = many
	}
	r.Notes.Add(analysis.Warning, fmt.Sprintf("target(s) %s: %s still being computed (twin simulations take seconds to minutes per target the first time, then are kept for %s): no rows for them yet; refresh the panel in a minute", strings.Join(targets, ", "), what, model.Duration(capacityTTL)))
}

// capacityHistoryStart is where target's stored history in [from, to] begins: to minus its
// `up` samples over the span times the scrape interval (as the SLO query's coverage), aligned
// up to 5 minutes; from when the store holds the whole span (or says nothing). A target
// first scraped after from would otherwise have its requests spread over the whole range: a
// load far below what it serves, and a twin calibrated at that load.
func capacityHistoryStart(ctx context.Context, env *fetch.Env, r *fetch.Run, target string, from, to time.Time) (time.Time, error) {
	q, err := catalog.UpSampleCountPromQL(catalog.Scope{Targets: []string{target}}, to.Sub(from))
	if err != nil {
		return from, err
	}
	vec, err := r.Instant(ctx, q, to)
	if err != nil || len(vec) == 0 {
		return from, err
	}
	held := time.Duration(float64(vec[0].Value) * float64(env.Settings.ScrapeInterval))
	if held >= to.Sub(from)-capacityBucket {
		return from, nil
	}
	start := to.Add(-held)
	if a := start.Truncate(capacityBucket); a.Before(start) {
		start = a.Add(capacityBucket)
	}
	return start, nil
}

// capacityCalibrate observes and calibrates one target's twin (cached per querier, target,
// history and known flags). The observation is read on the query's own context; the
// calibration, seconds of simulation, is detached (ttlCache.getDetached): when wait ends
// first, the error is wait's and the twin is kept for a later query.
func capacityCalibrate(ctx, wait context.Context, env *fetch.Env, r *fetch.Run, q *Capacity, target string, from, to time.Time) (capacityTarget, error) {
	key := fmt.Sprintf("twin|%p|%s|%d|%d|%d|%d", env.Querier, target, from.Unix(), to.Unix(), q.MaxNumSeqs, q.MaxNumBatchedTokens)
	span := to.Sub(from)
	v, err := capacityCache.get(ctx, "observed|"+key, capacityNow(env), func(ctx context.Context) (any, error) {
		return twin.Observe(ctx, runQuerier{r}, target, to, span)
	})
	if err != nil {
		return capacityTarget{}, err
	}
	t := capacityTarget{name: target, key: key, observed: v.(twin.Observed), from: from, to: to}
	if n := t.observed.Rate * span.Seconds(); !(n >= capacityMinRequests) {
		t.skip = fmt.Sprintf("target %s finished %.0f requests in the %s of history: too little history to calibrate its twin (it needs at least %d); no capacity figures", target, n, model.Duration(span), capacityMinRequests)
		return t, nil
	}
	o := t.observed
	v, err = capacityCache.getDetached(wait, fmt.Sprintf("%p", env.Querier), key, capacityNow(env), func(ctx context.Context) (any, error) {
		tw, err := twin.Calibrate(ctx, o, twin.Known{MaxNumSeqs: q.MaxNumSeqs, MaxNumBatchedTokens: q.MaxNumBatchedTokens})
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		if err != nil {
			return fmt.Sprintf("target %s: its twin cannot be calibrated on this history: %v; no capacity figures", target, err), nil
		}
		return tw, nil
	})
	if err != nil {
		return capacityTarget{}, err
	}
	switch c := v.(type) {
	case string:
		t.skip = c
	case twin.Twin:
		t.twin = c
	}
	return t, nil
}

// capacityKnee is the knee of profile tp on t's twin (cached with the twin; detached, as the
// calibration is).
func capacityKnee(wait context.Context, env *fetch.Env, t capacityTarget, tp twinProfile) (float64, error) {
	key := fmt.Sprintf("knee|%s|%+v", t.key, tp.profile)
	v, err := capacityCache.getDetached(wait, fmt.Sprintf("%p", env.Querier), key, capacityNow(env), func(ctx context.Context) (any, error) {
		return twin.Knee(ctx, t.twin.Config, tp.profile, math.Max(t.observed.Rate, 0.5))
	})
	if err != nil {
		return 0, err
	}
	return v.(float64), nil
}

// capacityChangeOutcome is change c on t's twin at its current load, scored under p (cached with the
// twin, as the knees are: one simulation each, the twin deterministic for its calibration;
// detached, as the calibration is).
func capacityChangeOutcome(wait context.Context, env *fetch.Env, t capacityTarget, c twin.Change, p twin.Profile) (twin.Outcome, error) {
	key := capacityWhatIfKey(t, c, p)
	v, err := capacityCache.getDetached(wait, fmt.Sprintf("%p", env.Querier), key, capacityNow(env), func(ctx context.Context) (any, error) {
		return twin.WhatIf(ctx, t.twin, t.observed.Rate, c, p)
	})
	if err != nil {
		return twin.Outcome{}, err
	}
	return v.(twin.Outcome), nil
}

// capacityWhatIfKey is the cache key of change c on t's twin scored under p.
func capacityWhatIfKey(t capacityTarget, c twin.Change, p twin.Profile) string {
	return fmt.Sprintf("whatif|%s|%+v|%+v|%v", t.key, c, p, t.observed.Rate)
}

// capacityAll runs compute(0..n-1), GOMAXPROCS at a time (fetch.Run.Parallel; each waits on
// the cache, and capacitySims bounds the simulations behind it), and returns their values in order, with pending[k] set where
// compute(k) outlasted the query's wait while the request goes on (capacityPending): those
// have no value and go on detached.
func capacityAll[T any](ctx context.Context, r *fetch.Run, n int, compute func(k int) (T, error)) (vals []T, pending []bool, err error) {
	vals, pending = make([]T, n), make([]bool, n)
	err = r.Parallel(n, func(k int) error {
		v, err := compute(k)
		if capacityPending(ctx, err) {
			pending[k] = true
			return nil
		}
		vals[k] = v
		return err
	})
	return vals, pending, err
}

// capacityPending reports whether err is the answer deadline (wait) ending while the request
// (ctx) goes on: the simulation continues detached, and the query answers without it.
func capacityPending(ctx context.Context, err error) bool {
	return errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil
}

// twinProfileFor returns the latency objectives of profile name that apply to target, in
// the twin's terms; objectives of other kinds (error ratio, availability) are left out with
// a notice, and a profile with no latency objective for the target is left out.
func twinProfileFor(s *settings.Settings, name, target string, notes *analysis.Notices) (twinProfile, bool) {
	sp, _ := s.Profile(name)
	tp := twinProfile{profile: twin.Profile{Name: name}}
	var other []string
	for _, o := range sp.Objectives {
		if len(o.Targets) > 0 && !slices.Contains(o.Targets, target) {
			continue
		}
		if o.Kind != "" && o.Kind != settings.KindLatency {
			other = append(other, o.Name)
			continue
		}
		tp.profile.Objectives = append(tp.profile.Objectives, twin.Objective{Signal: o.Signal, Threshold: o.Threshold, Target: o.Target})
		tp.names = append(tp.names, fmt.Sprintf("%s (%s ≤ %gs for %g)", o.Name, o.Signal, o.Threshold, o.Target))
	}
	if len(other) > 0 {
		notes.Add(analysis.Info, fmt.Sprintf("profile %s: the twin models latency only, so objectives %s are not part of its knee for target %s", name, strings.Join(other, ", "), target))
	}
	if len(tp.profile.Objectives) == 0 {
		notes.Add(analysis.Info, fmt.Sprintf("profile %s has no latency objective for target %s: no knee", name, target))
		return tp, false
	}
	return tp, true
}

// capacityWhatIfs predicts, per target, the current configuration and each change at the
// target's current load, scored under every profile (one simulation per change: the
// profiles' objectives are scored together).
func capacityWhatIfs(ctx, wait context.Context, env *fetch.Env, r *fetch.Run, q *Capacity, targets []capacityTarget, profiles []string) ([]frames.WhatIfRow, error) {
	// Every what-if simulation goes out at once (capacitySims bounds them); the rows are
	// built below in order from the cache.
	type sim struct {
		t   capacityTarget
		c   twin.Change
		all twin.Profile
	}
	var sims []sim
	for _, t := range targets {
		all := twin.Profile{Name: "all"}
		for _, name := range profiles {
			if tp, ok := twinProfileFor(env.Settings, name, t.name, &analysis.Notices{}); ok {
				all.Objectives = append(all.Objectives, tp.profile.Objectives...)
			}
		}
		for _, c := range capacityChanges(q, t) {
			sims = append(sims, sim{t, c, all})
		}
	}
	outs, pending, err := capacityAll(ctx, r, len(sims), func(k int) (twin.Outcome, error) {
		if len(sims[k].all.Objectives) == 0 {
			return twin.Outcome{}, nil
		}
		return capacityChangeOutcome(wait, env, sims[k].t, sims[k].c, sims[k].all)
	})
	if err != nil {
		return nil, err
	}
	var rows []frames.WhatIfRow
	var late []string
	next := 0
	for _, t := range targets {
		var tps []twinProfile
		all := twin.Profile{Name: "all"}
		for _, name := range profiles {
			if tp, ok := twinProfileFor(env.Settings, name, t.name, &r.Notes); ok {
				tps = append(tps, tp)
				all.Objectives = append(all.Objectives, tp.profile.Objectives...)
			}
		}
		changes := capacityChanges(q, t)
		base := next
		next += len(changes)
		if len(tps) == 0 {
			continue
		}
		observed, err := capacityObservedP99(ctx, r, t)
		if err != nil {
			return nil, err
		}
		for j, c := range changes {
			out := outs[base+j]
			if pending[base+j] {
				late = append(late, t.name)
				continue
			}
			cfg, load := c.Apply(t.twin.Config, t.observed.Rate)
			// What the change had to raise with it, said in its name: the what-if of a
			// max_num_seqs above the token budget is also that of a larger budget.
			name := c.Name
			if cfg.MaxNumBatchedTokens != t.twin.Config.MaxNumBatchedTokens {
				name += fmt.Sprintf(" (max-num-batched-tokens raised from %d to %d: vLLM needs at least max-num-seqs)", t.twin.Config.MaxNumBatchedTokens, cfg.MaxNumBatchedTokens)
			}
			if cfg.Model.MaxModelLen != t.twin.Config.Model.MaxModelLen {
				name += fmt.Sprintf(" (max-model-len raised from %d to %d to admit the longest prompt)", t.twin.Config.Model.MaxModelLen, cfg.Model.MaxModelLen)
			}
			k := 0
			for _, tp := range tps {
				row := frames.WhatIfRow{Target: t.name, Profile: tp.profile.Name, Change: name, Load: load,
					TTFTP50: out.P50["ttft"], TTFTP99: out.P99["ttft"], TTFTP99Error: twin.ErrorBand(c, "ttft"),
					TPOTP50: out.P50["tpot"], TPOTP99: out.P99["tpot"], TPOTP99Error: twin.ErrorBand(c, "tpot"),
					E2EP50: out.P50["e2e"], E2EP99: out.P99["e2e"], E2EP99Error: twin.ErrorBand(c, "e2e"),
					Attainment: math.Inf(1), Holds: out.Finished > 0, Advice: twin.Advice(c, t.twin.Config, out),
					TTFTP99Observed: math.NaN(), E2EP99Observed: math.NaN()}
				switch {
				case j == 0:
					row.TTFTP99Observed, row.E2EP99Observed = observed["ttft"].Value, observed["e2e"].Value
					row.Note = twin.CheckCurrent(out.P99, observed, "ttft", "e2e")
				case !pending[base] && twin.SameOutcome(out, outs[base]):
					row.Note = capacitySameNote(c, t)
				}
				for i, o := range tp.profile.Objectives {
					a := out.Attainment[k+i]
					if !(a >= o.Target) {
						row.Holds = false
					}
					if a < row.Attainment || math.IsNaN(a) {
						row.Attainment, row.WorstObjective = a, tp.names[i]
					}
				}
				k += len(tp.profile.Objectives)
				rows = append(rows, row)
			}
		}
	}
	capacityLate(r, late, "its what-ifs are", "their what-ifs are")
	return rows, nil
}

// capacityObservedP99 is t's observed TTFT and E2E p99 over the history its twin is
// calibrated on (the buckets' increase over it, Prometheus's interpolation with the edges of
// the bucket the rank fell in, seconds; NaN where the histogram is empty or not exported):
// what the current configuration's prediction is checked against (twin.CheckCurrent).
func capacityObservedP99(ctx context.Context, r *fetch.Run, t capacityTarget) (map[string]twin.ObservedP99, error) {
	out := map[string]twin.ObservedP99{}
	for _, sig := range []struct{ name, metric string }{{"ttft", catalog.TwinTTFT}, {"e2e", catalog.TwinE2E}} {
		vec, err := r.Instant(ctx, catalog.TwinBucketsPromQL(sig.metric, t.name, t.to.Sub(t.from)), t.to)
		if err != nil {
			return nil, err
		}
		var b []hist.Bucket
		for _, s := range vec {
			if le, err := hist.ParseLe(string(s.Metric["le"])); err == nil {
				b = append(b, hist.Bucket{UpperBound: le, Count: float64(s.Value)})
			}
		}
		e := hist.Quantile(0.99, b)
		out[sig.name] = twin.ObservedP99{Value: e.Value, Lower: e.Lower, Upper: e.Upper}
	}
	return out, nil
}

// capacitySameNote says why change c predicts what the current configuration does on t's
// twin: the limit it moves does not bind at this load (issue 33: max-num-seqs 128 and 512
// rows identical to the current one read as a broken what-if).
func capacitySameNote(c twin.Change, t capacityTarget) string {
	if c.MaxNumSeqs > 0 {
		return fmt.Sprintf("same as current: max-num-seqs does not bind at this load (%.3g requests running on average, the twin's current max-num-seqs %d)", t.observed.RunningMean, t.twin.Config.MaxNumSeqs)
	}
	return "same as current: this change does not bind at this load"
}

// capacityChanges is what the what-if format simulates for t: its current configuration,
// then the query's what-if, or else the default changes.
func capacityChanges(q *Capacity, t capacityTarget) []twin.Change {
	if q.WhatIf != nil {
		return []twin.Change{{Name: "current"}, q.WhatIf.change()}
	}
	return append([]twin.Change{{Name: "current"}}, twin.DefaultChanges(t.twin)...)
}

// capacityReplicaSeries is the replicas format: per target and profile, the recommended
// replica count at every step, ⌈load(t) / (utilisation × knee)⌉ (at least 1; twin.Replicas),
// with load(t) the target's finished-request rate over the query's window at that step and
// the knee of the twin calibrated on the whole range. Steps without a rate are null.
func capacityReplicaSeries(ctx context.Context, r *fetch.Run, p fetch.Plan, q *Capacity, rows []frames.CapacityRow) (data.Frames, error) {
	var out []analysis.Series
	if len(rows) > 0 {
		sc := p.Scope
		sc.Targets = nil
		for _, row := range rows {
			if !slices.Contains(sc.Targets, row.Target) {
				sc.Targets = append(sc.Targets, row.Target)
			}
		}
		m, _, err := r.CounterRate(ctx, catalog.RequestsFinished, sc, p.Window)
		if err != nil {
			return nil, err
		}
		load := map[string]analysis.Series{}
		for _, s := range analysis.FromMatrix(m, r.Steps, "load", "reqps", nil) {
			load[s.Labels["target"]] = s
		}
		for _, row := range rows {
			s := analysis.Series{Name: "replicas", Unit: "none", Times: r.Steps, Values: make([]float64, len(r.Steps)),
				Labels: map[string]string{"target": row.Target, "profile": row.Profile}}
			l, ok := load[row.Target]
			for i := range s.Values {
				s.Values[i] = math.NaN()
				if ok && !math.IsNaN(l.Values[i]) && row.Knee > 0 {
					s.Values[i] = float64(twin.Replicas(l.Values[i], row.Knee, q.utilisation))
				}
			}
			out = append(out, s)
		}
		r.Notes.Add(analysis.Info, fmt.Sprintf("recommended replicas = ⌈load / (%g × knee)⌉, at least 1: the load is each target's finished requests/s over the window at each step, the knee its twin's over the whole range", q.utilisation))
	}
	return frames.TimeSeries(out, meta(r, nil)), nil
}

// capacityNow is the environment's clock (time.Now when it has none).
func capacityNow(env *fetch.Env) time.Time {
	if env.Now == nil {
		return time.Now()
	}
	return env.Now()
}

// runQuerier reads through the run's executor, so that the twin's PromQL is recorded in the
// query's executed-query string and stops when the request ends.
type runQuerier struct{ r *fetch.Run }

// Query evaluates an instant query at ts through Run.Exec.
func (q runQuerier) Query(ctx context.Context, query string, ts time.Time) (model.Value, error) {
	return q.r.Exec(ctx, fetch.Query{PromQL: query, To: ts})
}

// QueryRange evaluates a range query through Run.Exec (chunked past MaxRangePoints).
func (q runQuerier) QueryRange(ctx context.Context, query string, start, end time.Time, step time.Duration) (model.Matrix, error) {
	return fetch.AsMatrix(q.r.Exec(ctx, fetch.Query{PromQL: query, From: start, To: end, Step: step, Chunked: true}))
}

// MetricNames passes through to the store.
func (q runQuerier) MetricNames(ctx context.Context, matchers string, start, end time.Time) ([]string, error) {
	return q.r.Env.Querier.MetricNames(ctx, matchers, start, end)
}

// LabelValues passes through to the store.
func (q runQuerier) LabelValues(ctx context.Context, name, matchers string, start, end time.Time) ([]string, error) {
	return q.r.Env.Querier.LabelValues(ctx, name, matchers, start, end)
}

// capacityCache holds calibrated twins and knees for capacityTTL: twin runs cost CPU-seconds
// (docs/capacity.md), and a dashboard's panels ask for the same target and range at once.
var capacityCache = &ttlCache{entries: map[string]*ttlEntry{}}

// capacityQueuePerSource bounds the detached twin simulations of one data source (waiting for
// one of capacitySims' slots or running): one query over ten targets starts about a hundred
// (a twin, a knee per profile and six what-ifs each), so this holds two such queries'.
const capacityQueuePerSource = 256

// errAnswerDeadline is the cause of a capacity query's answer deadline (capacityWait): a
// waiter leaving for it leaves its simulation running for the next refresh, while one whose
// request ended (cancelled, or Grafana's own deadline) leaves it to be dropped.
var errAnswerDeadline = errors.New("the capacity query's answer deadline (INFERSCOPE_CAPACITY_WAIT) passed")

// answerDeadline is ctx with the capacity query's answer deadline after d.
func answerDeadline(ctx context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	return context.WithTimeoutCause(ctx, d, errAnswerDeadline)
}

// capacityQueueError refuses a simulation past capacityQueuePerSource.
type capacityQueueError struct{ limit int }

func (e capacityQueueError) Error() string {
	return fmt.Sprintf("capacity: this data source already has %d twin simulations waiting or running (the limit per data source); retry when they have finished", e.limit)
}

// ttlCache is a small map of computed values with an expiry, at most capacityCacheSize
// entries (max in tests), the oldest dropped first, finished or not. Concurrent requests for
// one key wait for the one computation; a computation that fails is not kept (a waiter then
// computes it itself). A detached computation nobody waits for any more, because every
// request that waited for it ended, is cancelled and dropped; one left by an answer deadline
// (errAnswerDeadline) goes on for the next refresh.
type ttlCache struct {
	mu      sync.Mutex
	entries map[string]*ttlEntry
	// max caps the entries (capacityCacheSize when 0); perSource caps each data source's
	// detached computations (capacityQueuePerSource when 0).
	max, perSource int
	// detached counts each data source's detached computations not finished.
	detached map[string]int
}

type ttlEntry struct {
	at   time.Time
	done chan struct{} // closed when val and err are set
	val  any
	err  error
	// Detached computations only (guarded by ttlCache.mu): their data source, their cancel,
	// the requests waiting now, and whether a request left it for a refresh to find.
	source  string
	cancel  context.CancelFunc
	waiters int
	wanted  bool
}

// get returns the value of key computed less than capacityTTL before now, else computes,
// keeps and returns it; while another request computes it, get waits for that one (or for
// ctx to end). compute runs on the caller's goroutine and ctx.
func (c *ttlCache) get(ctx context.Context, key string, now time.Time, compute func(context.Context) (any, error)) (any, error) {
	return c.lookup(ctx, "", key, now, false, compute)
}

// getDetached is get for twin simulations of data source source: compute runs on its own
// goroutine, on a context detached from ctx (capacityBackgroundLimit at most) and in one of
// capacitySims' slots, and get waits for it or for ctx. When ctx ends by its answer deadline
// (answerDeadline), the computation goes on and its value is kept for the next query to find;
// when every request waiting for it has ended otherwise, it is cancelled and dropped. A data
// source holds at most capacityQueuePerSource of them (capacityQueueError past that).
func (c *ttlCache) getDetached(ctx context.Context, source, key string, now time.Time, compute func(context.Context) (any, error)) (any, error) {
	return c.lookup(ctx, source, key, now, true, compute)
}

func (c *ttlCache) lookup(ctx context.Context, source, key string, now time.Time, detached bool, compute func(context.Context) (any, error)) (any, error) {
	for {
		c.mu.Lock()
		e, ok := c.entries[key]
		if ok {
			select {
			case <-e.done:
				if e.err == nil && now.Sub(e.at) < capacityTTL && !now.Before(e.at) {
					c.mu.Unlock()
					return e.val, nil
				}
			default:
				e.waiters++
				c.mu.Unlock()
				select {
				case <-e.done:
					c.leave(e, key, nil)
					continue
				case <-ctx.Done():
					c.leave(e, key, ctx)
					return nil, ctx.Err()
				}
			}
		}
		if detached && ctx.Err() != nil && !errors.Is(context.Cause(ctx), errAnswerDeadline) {
			// The request has ended: start nothing for it.
			c.mu.Unlock()
			return nil, ctx.Err()
		}
		if detached && c.detached[source] >= c.perSourceLimit() {
			c.mu.Unlock()
			return nil, capacityQueueError{limit: c.perSourceLimit()}
		}
		c.evictLocked()
		e = &ttlEntry{at: now, done: make(chan struct{})}
		c.entries[key] = e
		finish := func(cctx context.Context, val any, err error) {
			if err == nil {
				err = cctx.Err()
			}
			e.val, e.err = val, err
			c.mu.Lock()
			if e.err != nil && c.entries[key] == e {
				delete(c.entries, key)
			}
			if detached {
				if c.detached[source]--; c.detached[source] <= 0 {
					delete(c.detached, source)
				}
			}
			c.mu.Unlock()
			close(e.done)
		}
		if !detached {
			c.mu.Unlock()
			val, err := compute(ctx)
			finish(ctx, val, err)
			return e.val, e.err
		}
		bg, cancel := context.WithTimeout(context.WithoutCancel(ctx), capacityBackgroundLimit)
		e.source, e.cancel, e.waiters = source, cancel, 1
		if c.detached == nil {
			c.detached = map[string]int{}
		}
		c.detached[source]++
		c.mu.Unlock()
		go func() {
			defer cancel()
			var val any
			err := func() (err error) {
				defer func() {
					if p := recover(); p != nil {
						err = fmt.Errorf("internal error in a twin simulation: %v", p)
					}
				}()
				select {
				case capacitySims <- struct{}{}:
					defer func() { <-capacitySims }()
				case <-bg.Done():
					return bg.Err()
				}
				val, err = compute(bg)
				return err
			}()
			finish(bg, val, err)
		}()
		select {
		case <-e.done:
			c.leave(e, key, nil)
			return e.val, e.err
		case <-ctx.Done():
			c.leave(e, key, ctx)
			return nil, ctx.Err()
		}
	}
}

// leave ends one request's wait for e: ended is the waiter's context when it left before e
// finished (nil when e finished). The last waiter of a detached computation leaving because
// its request ended, with no earlier waiter having left it for a refresh, cancels it and
// drops its entry, so no work goes on that nobody waits for.
func (c *ttlCache) leave(e *ttlEntry, key string, ended context.Context) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e.cancel == nil {
		return // computed on a caller's goroutine: that caller's context decides
	}
	e.waiters--
	if ended == nil {
		return
	}
	if errors.Is(context.Cause(ended), errAnswerDeadline) {
		e.wanted = true
		return
	}
	if e.waiters <= 0 && !e.wanted {
		e.cancel()
		if c.entries[key] == e {
			delete(c.entries, key)
		}
	}
}

func (c *ttlCache) perSourceLimit() int {
	if c.perSource > 0 {
		return c.perSource
	}
	return capacityQueuePerSource
}

func (c *ttlCache) maxEntries() int {
	if c.max > 0 {
		return c.max
	}
	return capacityCacheSize
}

// evictLocked drops entries while the cache is full: the oldest finished one first, else the
// oldest still computing, whose detached computation is cancelled (its waiters get the
// cancellation), so the cap always holds; c.mu is held.
func (c *ttlCache) evictLocked() {
	for len(c.entries) >= c.maxEntries() {
		oldest, oldestRunning := "", ""
		for k, e := range c.entries {
			select {
			case <-e.done:
				if oldest == "" || e.at.Before(c.entries[oldest].at) {
					oldest = k
				}
			default:
				if oldestRunning == "" || e.at.Before(c.entries[oldestRunning].at) {
					oldestRunning = k
				}
			}
		}
		if oldest == "" {
			oldest = oldestRunning
			if e := c.entries[oldest]; e.cancel != nil {
				e.cancel()
			}
		}
		delete(c.entries, oldest)
	}
}

// len is the number of entries (tests).
func (c *ttlCache) len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.entries)
}
