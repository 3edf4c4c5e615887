package queries

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
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

	// utilisation is Utilisation or its default; profiles are Profiles, or every profile of
	// the settings when empty (validate).
	utilisation float64
	profiles    []string
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

// Bounds of the capacity query's history: the twin needs enough of it, and queries within the
// same 5 minutes share one calibrated twin (its cache: fetch.Twins, TwinTTL).
const (
	// capacityMinHistory is the shortest history calibrated on (the validation used 30 min).
	capacityMinHistory = 30 * time.Minute
	// capacityBucket aligns the history's end (and start) down, so that queries within the
	// same 5 minutes share one calibrated twin.
	capacityBucket = 5 * time.Minute
)

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
	q.profiles = q.Profiles
	if len(q.profiles) == 0 {
		q.profiles = s.ProfileNames()
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
	if q.WhatIf != nil {
		if q.Format != capacityWhatIf {
			return badQueryf("whatIf: a change is predicted only with format whatif")
		}
		return q.WhatIf.validate()
	}
	return nil
}

// validate checks the what-if's fields, each in its range, at least one set.
func (w *CapacityWhatIf) validate() error {
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
	return nil
}

// known is what the query says of the targets' flags that vLLM does not export.
func (q *Capacity) known() twin.Known {
	return twin.Known{MaxNumSeqs: q.MaxNumSeqs, MaxNumBatchedTokens: q.MaxNumBatchedTokens}
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

// runCapacity calibrates a twin per selected vLLM V1 target on the history of the query's
// range (aligned down to 5 minutes; at least 30 minutes and 100 finished requests, else a
// notice and no row), finds each profile's knee on it, and answers in the asked format.
// Calibrated twins and knees are cached (the instance's fetch.Twins) for fetch.TwinTTL per
// target, history and settings. Simulations run detached from the request; the query waits
// Twins.Wait for them, then answers with the rows that are ready and a notice naming the
// targets whose simulations go on.
func runCapacity(ctx context.Context, env *fetch.Env, p fetch.Plan, q *Capacity) (data.Frames, error) {
	if env.Twins == nil {
		return nil, errors.New("capacity: this data source has no twin cache")
	}
	p.Scope.By = []string{"target"}
	r := fetch.NewRun(ctx, env, p)
	r.ScopeNotices(ctx, []catalog.Signal{catalog.RequestsFinished, catalog.PromptTokens, catalog.GenerationTokens})
	if len(q.profiles) == 0 {
		r.Notes.Add(analysis.Warning, "no SLO profile is configured (sloProfiles): the twin has no objective to find a knee for")
	}
	wait, cancel := env.Twins.Deadline(ctx)
	defer cancel()
	targets, err := capacityTargets(ctx, wait, env, r, q, p.Start.Truncate(capacityBucket), p.End.Truncate(capacityBucket))
	if err != nil {
		return nil, err
	}
	switch q.Format {
	case capacityParameters:
		return frames.CapacityParameters(capacityParamRows(targets), meta(r, nil)), nil
	case capacityWhatIf:
		rows, err := capacityWhatIfs(ctx, wait, env, r, q, targets)
		if err != nil {
			return nil, err
		}
		return frames.CapacityWhatIf(rows, meta(r, nil)), nil
	}
	rows, err := capacityRows(ctx, wait, env, r, q, targets)
	if err != nil {
		return nil, err
	}
	if q.Format == capacityReplicas {
		return capacityReplicaSeries(ctx, r, p, q, rows)
	}
	return frames.CapacityTable(rows, meta(r, nil)), nil
}

// capacityParamRows is the parameters format: per target, its twin's calibrated parameters
// with their source and fit error.
func capacityParamRows(targets []fetch.TwinTarget) []frames.CapacityParamRow {
	var rows []frames.CapacityParamRow
	for _, t := range targets {
		for _, prm := range t.Twin.Params {
			rows = append(rows, frames.CapacityParamRow{Target: t.Name, Parameter: prm.Name, Value: prm.Value, Source: string(prm.Source), FitError: prm.FitError})
		}
	}
	return rows
}

// capacityRows is the table (and replicas) format's rows: per target and profile with a
// latency objective for it, the knee on its twin and what follows from it; the table's rows
// also carry the twin check of the current configuration (capacityKneeNote). Rows whose knee
// is still being computed are left out and named (fetch.Run.TwinsLate).
func capacityRows(ctx, wait context.Context, env *fetch.Env, r *fetch.Run, q *Capacity, targets []fetch.TwinTarget) ([]frames.CapacityRow, error) {
	type pair struct {
		t  fetch.TwinTarget
		tp fetch.TwinProfile
	}
	var pairs []pair
	for _, t := range targets {
		for _, name := range q.profiles {
			// Its notices are said below, in order with the knee's.
			if tp, ok := fetch.TwinProfileFor(env.Settings, name, t.Name, &analysis.Notices{}); ok {
				pairs = append(pairs, pair{t, tp})
			}
		}
	}
	// Every knee search goes out at once (the twin slots bound the simulations).
	knees, pending, err := capacityAll(ctx, r, len(pairs), func(k int) (float64, error) {
		return env.TwinKnee(wait, pairs[k].t, pairs[k].tp.Profile)
	})
	if err != nil {
		return nil, err
	}
	var checks []twin.CurrentCheck
	if q.Format != capacityReplicas {
		if checks, err = capacityCurrentChecks(ctx, wait, env, r, q, targets); err != nil {
			return nil, err
		}
	}
	var rows []frames.CapacityRow
	var late []string
	k := -1
	for ti, t := range targets {
		for _, name := range q.profiles {
			tp, ok := fetch.TwinProfileFor(env.Settings, name, t.Name, &r.Notes)
			if !ok {
				continue
			}
			k++
			if pending[k] {
				late = append(late, t.Name)
				continue
			}
			row := capacityRow(r, q, t, name, tp, knees[k])
			if ti < len(checks) {
				row.KneeNote = capacityKneeNote(checks[ti])
			}
			rows = append(rows, row)
		}
	}
	r.TwinsLate(late, "its knees are", "their knees are")
	return rows, nil
}

// capacityRow is target t's row for profile name (tp): its load, the knee, headroom, days to
// the knee and the replicas that keep each at the utilisation of its knee; a knee of 0 (the
// profile holds at no load) has no replica count, and a warning says so.
func capacityRow(r *fetch.Run, q *Capacity, t fetch.TwinTarget, name string, tp fetch.TwinProfile, knee float64) frames.CapacityRow {
	load := t.Observed.Rate
	replicas := float64(twin.Replicas(load, knee, q.utilisation))
	if knee == 0 {
		replicas = math.NaN()
		r.Notes.Add(analysis.Warning, fmt.Sprintf("profile %s does not hold on target %s's twin even at %.3g req/s (1/64 of its load): its objectives are out of reach at any load, so no replica count meets them", name, t.Name, math.Max(load, 0.5)/64))
	}
	days := twin.DaysToKnee(t.Observed.RateSeries, knee)
	return frames.CapacityRow{Target: t.Name, Profile: name, Load: load, Knee: knee, KneeError: twin.KneeBand(knee, load),
		Headroom: twin.Headroom(knee, load), DaysToKnee: days,
		Replicas: replicas, Utilisation: q.utilisation, Objectives: strings.Join(tp.Names, ", "), DaysToKneeNote: twin.DaysToKneeWords(days)}
}

// capacityCurrentChecks is, per target in order, the twin check of its current configuration
// (twin.CheckCurrent of the what-if's current row: the same simulation, cached, under all the
// profiles' objectives); "" where it is pending, has no objective or nothing to check.
func capacityCurrentChecks(ctx, wait context.Context, env *fetch.Env, r *fetch.Run, q *Capacity, targets []fetch.TwinTarget) ([]twin.CurrentCheck, error) {
	alls := make([]twin.Profile, len(targets))
	for i, t := range targets {
		alls[i] = fetch.TwinProfileAll(env.Settings, q.profiles, t.Name)
	}
	outs, pending, err := capacityAll(ctx, r, len(targets), func(k int) (twin.Outcome, error) {
		if len(alls[k].Objectives) == 0 {
			return twin.Outcome{}, nil
		}
		return env.TwinWhatIf(wait, targets[k], twin.Change{Name: "current"}, alls[k])
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
// a notice and no twin, and so do those whose calibration outlasts wait (fetch.Run.TwinsLate).
func capacityTargets(ctx, wait context.Context, env *fetch.Env, r *fetch.Run, q *Capacity, from, to time.Time) ([]fetch.TwinTarget, error) {
	if span := to.Sub(from); span < capacityMinHistory {
		r.Notes.Add(analysis.Warning, fmt.Sprintf("the time range holds %s of history (aligned to 5 minutes): the twin is calibrated on at least %s, so no target is modelled; widen the time range", model.Duration(span), model.Duration(capacityMinHistory)))
		return nil, nil
	}
	type cand struct {
		name string
		from time.Time
	}
	var cands []cand
	for _, v := range r.Views(ctx) {
		tFrom, ok, err := capacityCandidate(ctx, env, r, v, from, to)
		if err != nil {
			return nil, err
		}
		if ok {
			cands = append(cands, cand{v.Name, tFrom})
		}
	}
	// Every target's calibration goes out at once (the twin slots bound the simulations),
	// and is read back in settings order.
	ts, pending, err := capacityAll(ctx, r, len(cands), func(k int) (fetch.TwinTarget, error) {
		return env.TwinCalibrate(ctx, wait, r, cands[k].name, cands[k].from, to, q.known())
	})
	if err != nil {
		return nil, err
	}
	var out []fetch.TwinTarget
	var late []string
	for k, t := range ts {
		switch {
		case pending[k]:
			late = append(late, cands[k].name)
		case t.Skip != "":
			r.Notes.Add(analysis.Warning, t.Skip)
		default:
			out = append(out, t)
		}
	}
	r.TwinsLate(late, "its twin is", "their twins are")
	return out, nil
}

// capacityCandidate says whether target view v is one the twin models over [from, to], and
// from when its stored history starts (capacityHistoryStart); a notice says why one is not:
// nothing stored or no known family (said by ScopeNotices already), not vLLM V1, several
// data-parallel engines, or less than capacityMinHistory stored.
func capacityCandidate(ctx context.Context, env *fetch.Env, r *fetch.Run, v fetch.TargetView, from, to time.Time) (time.Time, bool, error) {
	span := to.Sub(from)
	if !v.OK {
		return from, false, nil
	}
	if v.Det.Engine != catalog.EngineVLLM || v.Det.Generation == "v0" {
		eng := string(v.Det.Engine)
		if v.Det.Generation != "" {
			eng += " " + v.Det.Generation
		}
		r.Notes.Add(analysis.Info, fmt.Sprintf("target %s runs %s: the capacity twin models the vLLM V1 engine only, so it has no capacity figures", v.Name, eng))
		return from, false, nil
	}
	// The twin is one engine: a data-parallel target's requests are several engines'
	// (docs/capacity.md, What is missing), and one engine at their load is no answer.
	engines, err := r.Instant(ctx, catalog.TwinEnginesPromQL(v.Name, span), to)
	if err != nil {
		return from, false, err
	}
	if len(engines) > 0 && engines[0].Value > 1 {
		r.Notes.Add(analysis.Info, fmt.Sprintf("target %s runs %g data-parallel vLLM engines (engine label): the capacity twin models one engine, so it has no capacity figures", v.Name, float64(engines[0].Value)))
		return from, false, nil
	}
	tFrom, err := capacityHistoryStart(ctx, env, r, v.Name, from, to)
	if err != nil {
		return from, false, err
	}
	if held := to.Sub(tFrom); held < capacityMinHistory {
		r.Notes.Add(analysis.Warning, fmt.Sprintf("target %s has %s of stored history in the time range (aligned to 5 minutes): the twin is calibrated on at least %s, so it has no capacity figures", v.Name, model.Duration(held), model.Duration(capacityMinHistory)))
		return from, false, nil
	} else if held < span {
		r.Notes.Add(analysis.Info, fmt.Sprintf("target %s has %s of stored history in the %s time range: its load and twin are those of the stored part, not its requests spread over the whole range", v.Name, model.Duration(held), model.Duration(span)))
	}
	return tFrom, true, nil
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

// capacityAll runs compute(0..n-1), GOMAXPROCS at a time (fetch.Run.Parallel; each waits on
// the cache, and the twin slots bound the simulations behind it), and returns their values in
// order, with pending[k] set where compute(k) outlasted the query's wait while the request
// goes on (fetch.TwinPending): those have no value and go on detached.
func capacityAll[T any](ctx context.Context, r *fetch.Run, n int, compute func(k int) (T, error)) (vals []T, pending []bool, err error) {
	vals, pending = make([]T, n), make([]bool, n)
	err = r.Parallel(n, func(k int) error {
		v, err := compute(k)
		if fetch.TwinPending(ctx, err) {
			pending[k] = true
			return nil
		}
		vals[k] = v
		return err
	})
	return vals, pending, err
}

// capacityWhatIfs predicts, per target, the current configuration and each change at the
// target's current load, scored under every profile (one simulation per change: the
// profiles' objectives are scored together).
func capacityWhatIfs(ctx, wait context.Context, env *fetch.Env, r *fetch.Run, q *Capacity, targets []fetch.TwinTarget) ([]frames.WhatIfRow, error) {
	// Every what-if simulation goes out at once (the twin slots bound them); the rows are
	// built below in order from their outcomes.
	type sim struct {
		t   fetch.TwinTarget
		c   twin.Change
		all twin.Profile
	}
	var sims []sim
	for _, t := range targets {
		all := fetch.TwinProfileAll(env.Settings, q.profiles, t.Name)
		for _, c := range capacityChanges(q, t) {
			sims = append(sims, sim{t, c, all})
		}
	}
	outs, pending, err := capacityAll(ctx, r, len(sims), func(k int) (twin.Outcome, error) {
		if len(sims[k].all.Objectives) == 0 {
			return twin.Outcome{}, nil
		}
		return env.TwinWhatIf(wait, sims[k].t, sims[k].c, sims[k].all)
	})
	if err != nil {
		return nil, err
	}
	var rows []frames.WhatIfRow
	var late []string
	next := 0
	for _, t := range targets {
		changes := capacityChanges(q, t)
		base := next
		next += len(changes)
		tr, tlate, err := capacityWhatIfTarget(ctx, env, r, q, t, changes, outs[base:next], pending[base:next])
		if err != nil {
			return nil, err
		}
		if tlate {
			late = append(late, t.Name)
		}
		rows = append(rows, tr...)
	}
	r.TwinsLate(late, "its what-ifs are", "their what-ifs are")
	return rows, nil
}

// capacityWhatIfTarget is target t's what-if rows: per change (outs and pending in the order
// of changes, the current configuration first) and per profile with a latency objective for
// t; late when a change's simulation is still being computed (no rows for it).
func capacityWhatIfTarget(ctx context.Context, env *fetch.Env, r *fetch.Run, q *Capacity, t fetch.TwinTarget, changes []twin.Change, outs []twin.Outcome, pending []bool) (rows []frames.WhatIfRow, late bool, err error) {
	var tps []fetch.TwinProfile
	for _, name := range q.profiles {
		if tp, ok := fetch.TwinProfileFor(env.Settings, name, t.Name, &r.Notes); ok {
			tps = append(tps, tp)
		}
	}
	if len(tps) == 0 {
		return nil, false, nil
	}
	observed, err := capacityObservedP99(ctx, r, t)
	if err != nil {
		return nil, false, err
	}
	for j, c := range changes {
		if pending[j] {
			late = true
			continue
		}
		name, load := capacityChangeName(c, t)
		k := 0
		for _, tp := range tps {
			row := capacityWhatIfRow(t, tp, c, name, load, outs[j], k)
			switch {
			case j == 0:
				row.TTFTP99Observed, row.E2EP99Observed = observed["ttft"].Value, observed["e2e"].Value
				row.Note = twin.CheckCurrent(outs[j].P99, observed, "ttft", "e2e")
			case !pending[0] && twin.SameOutcome(outs[j], outs[0]):
				row.Note = capacitySameNote(c, t)
			}
			k += len(tp.Profile.Objectives)
			rows = append(rows, row)
		}
	}
	return rows, late, nil
}

// capacityChangeName is change c's name on t's twin, with what the change had to raise with
// it (a max_num_seqs above the token budget is also a larger budget; a longer prompt a longer
// max-model-len), and the load it runs at.
func capacityChangeName(c twin.Change, t fetch.TwinTarget) (string, float64) {
	cfg, load := c.Apply(t.Twin.Config, t.Observed.Rate)
	name := c.Name
	if cfg.MaxNumBatchedTokens != t.Twin.Config.MaxNumBatchedTokens {
		name += fmt.Sprintf(" (max-num-batched-tokens raised from %d to %d: vLLM needs at least max-num-seqs)", t.Twin.Config.MaxNumBatchedTokens, cfg.MaxNumBatchedTokens)
	}
	if cfg.Model.MaxModelLen != t.Twin.Config.Model.MaxModelLen {
		name += fmt.Sprintf(" (max-model-len raised from %d to %d to admit the longest prompt)", t.Twin.Config.Model.MaxModelLen, cfg.Model.MaxModelLen)
	}
	return name, load
}

// capacityWhatIfRow is the what-if row of change c (named name, at load) for profile tp,
// whose objectives are scored at out.Attainment[k:]: the predicted p50s and p99s with their
// error bands, whether every objective holds, the worst one and the twin's advice.
func capacityWhatIfRow(t fetch.TwinTarget, tp fetch.TwinProfile, c twin.Change, name string, load float64, out twin.Outcome, k int) frames.WhatIfRow {
	row := frames.WhatIfRow{Target: t.Name, Profile: tp.Profile.Name, Change: name, Load: load,
		TTFTP50: out.P50["ttft"], TTFTP99: out.P99["ttft"], TTFTP99Error: twin.ErrorBand(c, "ttft"),
		TPOTP50: out.P50["tpot"], TPOTP99: out.P99["tpot"], TPOTP99Error: twin.ErrorBand(c, "tpot"),
		E2EP50: out.P50["e2e"], E2EP99: out.P99["e2e"], E2EP99Error: twin.ErrorBand(c, "e2e"),
		Attainment: math.Inf(1), Holds: out.Finished > 0, Advice: twin.Advice(c, t.Twin.Config, out),
		TTFTP99Observed: math.NaN(), E2EP99Observed: math.NaN()}
	for i, o := range tp.Profile.Objectives {
		a := out.Attainment[k+i]
		if !(a >= o.Target) {
			row.Holds = false
		}
		if a < row.Attainment || math.IsNaN(a) {
			row.Attainment, row.WorstObjective = a, tp.Names[i]
		}
	}
	return row
}

// capacityObservedP99 is t's observed TTFT and E2E p99 over the history its twin is
// calibrated on (the buckets' increase over it, Prometheus's interpolation with the edges of
// the bucket the rank fell in, seconds; NaN where the histogram is empty or not exported):
// what the current configuration's prediction is checked against (twin.CheckCurrent).
func capacityObservedP99(ctx context.Context, r *fetch.Run, t fetch.TwinTarget) (map[string]twin.ObservedP99, error) {
	out := map[string]twin.ObservedP99{}
	for _, sig := range []struct{ name, metric string }{{"ttft", catalog.TwinTTFT}, {"e2e", catalog.TwinE2E}} {
		vec, err := r.Instant(ctx, catalog.TwinBucketsPromQL(sig.metric, t.Name, t.To.Sub(t.From)), t.To)
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
func capacitySameNote(c twin.Change, t fetch.TwinTarget) string {
	if c.MaxNumSeqs > 0 {
		return fmt.Sprintf("same as current: max-num-seqs does not bind at this load (%.3g requests running on average, the twin's current max-num-seqs %d)", t.Observed.RunningMean, t.Twin.Config.MaxNumSeqs)
	}
	return "same as current: this change does not bind at this load"
}

// capacityChanges is what the what-if format simulates for t: its current configuration,
// then the query's what-if, or else the default changes.
func capacityChanges(q *Capacity, t fetch.TwinTarget) []twin.Change {
	if q.WhatIf != nil {
		return []twin.Change{{Name: "current"}, q.WhatIf.change()}
	}
	return append([]twin.Change{{Name: "current"}}, twin.DefaultChanges(t.Twin)...)
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
