package fetch

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/prometheus/common/model"

	"github.com/inferscope/inferscope-llm-datasource/pkg/analysis"
	"github.com/inferscope/inferscope-llm-datasource/pkg/settings"
	"github.com/inferscope/inferscope-llm-datasource/pkg/source"
	"github.com/inferscope/inferscope-llm-datasource/pkg/twin"
)

// The capacity twin's work on the instance's cache (Env.Twins), shared by the capacity query
// and the diagnosis's advice: a target's observation and calibrated twin, a profile's knee and
// a change's what-if, each cached TwinTTL per querier, target, history and known flags, and
// the newest twin a capacity query left for a target.

// TwinTarget is one target's calibrated twin over a history, or why there is none.
type TwinTarget struct {
	// Name is the target's name; Key the twin's cache key (TwinKey).
	Name, Key string
	// Observed is what the twin is calibrated on; Twin the calibrated twin.
	Observed twin.Observed
	Twin     twin.Twin
	// From and To are the history the twin is calibrated on.
	From, To time.Time
	// Skip, when set, is the notice saying why the target has no twin.
	Skip string
}

// TwinProfile is a settings profile in the twin's terms for one target: its latency
// objectives that apply to the target, and their names in words
// ("ttft-3s (ttft ≤ 3s for 0.99)"), one per objective.
type TwinProfile struct {
	Profile twin.Profile
	Names   []string
}

// TwinMinRequests is the fewest finished requests in a history a twin is calibrated on.
const TwinMinRequests = 100

// Clock returns Env.Now() or time.Now().
func (e *Env) Clock() time.Time { return e.now() }

// TwinKey is the cache key of target's twin over [from, to] with known flags k, on e's
// querier: "twin|<querier>|<target>|<from>|<to>|<seqs>|<tokens>" (Unix seconds).
func TwinKey(e *Env, target string, from, to time.Time, k twin.Known) string {
	return fmt.Sprintf("%s%d|%d|%d|%d", twinKeyPrefix(e, target), from.Unix(), to.Unix(), k.MaxNumSeqs, k.MaxNumBatchedTokens)
}

// twinKeyPrefix is the part of TwinKey naming the querier and target.
func twinKeyPrefix(e *Env, target string) string {
	return fmt.Sprintf("twin|%p|%s|", e.Querier, target)
}

// TwinObservedKey is the cache key of the observation a twin of key is calibrated on.
func TwinObservedKey(key string) string { return "observed|" + key }

// TwinWhatIfKey is the cache key of change c on t's twin scored under p.
func TwinWhatIfKey(t TwinTarget, c twin.Change, p twin.Profile) string {
	return fmt.Sprintf("whatif|%s|%+v|%+v|%v", t.Key, c, p, t.Observed.Rate)
}

// TwinCalibrate observes and calibrates target's twin over [from, to] with known flags k.
// The observation is read on the query's own context through r (Run.TwinQuerier); the
// calibration, seconds of simulation, is detached (Twins.GetDetached): when wait ends first,
// the error is wait's and the twin is kept for a later query. A history with fewer than
// TwinMinRequests finished requests, or one the twin cannot be calibrated on, gives a
// TwinTarget whose Skip says so.
func (e *Env) TwinCalibrate(ctx, wait context.Context, r *Run, target string, from, to time.Time, k twin.Known) (TwinTarget, error) {
	key := TwinKey(e, target, from, to, k)
	span := to.Sub(from)
	v, err := e.Twins.Get(ctx, TwinObservedKey(key), e.Clock(), func(ctx context.Context) (any, error) {
		return twin.Observe(ctx, r.TwinQuerier(), target, to, span)
	})
	if err != nil {
		return TwinTarget{}, err
	}
	t := TwinTarget{Name: target, Key: key, Observed: v.(twin.Observed), From: from, To: to}
	if n := t.Observed.Rate * span.Seconds(); !(n >= TwinMinRequests) {
		t.Skip = fmt.Sprintf("target %s finished %.0f requests in the %s of history: too little history to calibrate its twin (it needs at least %d); no capacity figures", target, n, model.Duration(span), TwinMinRequests)
		return t, nil
	}
	o := t.Observed
	v, err = e.Twins.GetDetached(wait, key, e.Clock(), func(ctx context.Context) (any, error) {
		tw, err := twin.Calibrate(ctx, o, k)
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		if err != nil {
			return fmt.Sprintf("target %s: its twin cannot be calibrated on this history: %v; no capacity figures", target, err), nil
		}
		return tw, nil
	})
	if err != nil {
		return TwinTarget{}, err
	}
	switch c := v.(type) {
	case string:
		t.Skip = c
	case twin.Twin:
		t.Twin = c
	}
	return t, nil
}

// TwinKnee is the knee (req/s) of profile p on t's twin, searched from its load (at least
// 0.5 req/s): cached with the twin, detached as the calibration is.
func (e *Env) TwinKnee(wait context.Context, t TwinTarget, p twin.Profile) (float64, error) {
	key := fmt.Sprintf("knee|%s|%+v", t.Key, p)
	v, err := e.Twins.GetDetached(wait, key, e.Clock(), func(ctx context.Context) (any, error) {
		return twin.Knee(ctx, t.Twin.Config, p, math.Max(t.Observed.Rate, 0.5))
	})
	if err != nil {
		return 0, err
	}
	return v.(float64), nil
}

// TwinWhatIf is change c on t's twin at its current load, scored under p: cached with the
// twin, as the knees are (one simulation each, the twin deterministic for its calibration),
// detached as the calibration is.
func (e *Env) TwinWhatIf(wait context.Context, t TwinTarget, c twin.Change, p twin.Profile) (twin.Outcome, error) {
	v, err := e.Twins.GetDetached(wait, TwinWhatIfKey(t, c, p), e.Clock(), func(ctx context.Context) (any, error) {
		return twin.WhatIf(ctx, t.Twin, t.Observed.Rate, c, p)
	})
	if err != nil {
		return twin.Outcome{}, err
	}
	return v.(twin.Outcome), nil
}

// CachedTwin returns the newest calibrated twin of target on e's querier in e.Twins, less
// than TwinTTL old, with its observation and its history in words; false when none is there
// (not calibrated, still computing, failed, expired, or no cache). It starts nothing.
func (e *Env) CachedTwin(target string) (TwinTarget, string, bool) {
	prefix := twinKeyPrefix(e, target)
	now := e.Clock()
	var best TwinTarget
	var history string
	var bestAt time.Time
	found := false
	for key, ent := range e.Twins.finished(prefix) {
		tw, ok := ent.val.(twin.Twin)
		if !ok || strings.Count(key[len(prefix):], "|") != 3 || now.Sub(ent.at) >= TwinTTL || now.Before(ent.at) || (found && !ent.at.After(bestAt)) {
			continue
		}
		v, _ := e.Twins.peek(TwinObservedKey(key))
		obs, ok := v.(twin.Observed)
		if !ok {
			continue
		}
		best, history = TwinTarget{Name: target, Key: key, Observed: obs, Twin: tw}, twinKeyHistory(key[len(prefix):])
		bestAt, found = ent.at, true
	}
	return best, history, found
}

// twinKeyHistory says the history of a twin key's tail ("from|to|seqs|tokens", Unix
// seconds) in words: "the history 12:00–12:30 UTC".
func twinKeyHistory(tail string) string {
	var from, to int64
	var seqs, tokens int
	if _, err := fmt.Sscanf(strings.ReplaceAll(tail, "|", " "), "%d %d %d %d", &from, &to, &seqs, &tokens); err != nil {
		return "a recent capacity query's range"
	}
	f, t := time.Unix(from, 0).UTC(), time.Unix(to, 0).UTC()
	return fmt.Sprintf("the history %s–%s UTC", f.Format("2006-01-02 15:04"), t.Format("15:04"))
}

// TwinProfileFor returns the latency objectives of profile name that apply to target, in
// the twin's terms; objectives of other kinds (error ratio, availability) are left out with
// a notice, and a profile with no latency objective for the target is left out (false).
func TwinProfileFor(s *settings.Settings, name, target string, notes *analysis.Notices) (TwinProfile, bool) {
	sp, _ := s.Profile(name)
	tp := TwinProfile{Profile: twin.Profile{Name: name}}
	var other []string
	for _, o := range sp.Objectives {
		if len(o.Targets) > 0 && !slices.Contains(o.Targets, target) {
			continue
		}
		if o.Kind != "" && o.Kind != settings.KindLatency {
			other = append(other, o.Name)
			continue
		}
		tp.Profile.Objectives = append(tp.Profile.Objectives, twin.Objective{Signal: o.Signal, Threshold: o.Threshold, Target: o.Target})
		tp.Names = append(tp.Names, fmt.Sprintf("%s (%s ≤ %gs for %g)", o.Name, o.Signal, o.Threshold, o.Target))
	}
	if len(other) > 0 {
		notes.Add(analysis.Info, fmt.Sprintf("profile %s: the twin models latency only, so objectives %s are not part of its knee for target %s", name, strings.Join(other, ", "), target))
	}
	if len(tp.Profile.Objectives) == 0 {
		notes.Add(analysis.Info, fmt.Sprintf("profile %s has no latency objective for target %s: no knee", name, target))
		return tp, false
	}
	return tp, true
}

// TwinProfileAll is the profile "all": every latency objective of the profiles named that
// applies to target (TwinProfileFor, its notices dropped), scored together in one
// simulation per change.
func TwinProfileAll(s *settings.Settings, names []string, target string) twin.Profile {
	all := twin.Profile{Name: "all"}
	for _, name := range names {
		if tp, ok := TwinProfileFor(s, name, target, &analysis.Notices{}); ok {
			all.Objectives = append(all.Objectives, tp.Profile.Objectives...)
		}
	}
	return all
}

// TwinsLate says which targets' simulations outlasted the query's answer deadline
// (Twins.Deadline): they go on, and a refresh once they are done has their rows. one and
// many say what is still being computed for one target or several.
func (r *Run) TwinsLate(targets []string, one, many string) {
	targets = slices.Compact(targets) // a target's rows are adjacent
	if len(targets) == 0 {
		return
	}
	what := one
	if len(targets) > 1 {
		what = many
	}
	r.Notes.Add(analysis.Warning, fmt.Sprintf("target(s) %s: %s still being computed (twin simulations take seconds to minutes per target the first time, then are kept for %s): no rows for them yet; refresh the panel in a minute", strings.Join(targets, ", "), what, model.Duration(TwinTTL)))
}

// TwinQuerier is a source.Querier reading through r's executor, so that the twin's PromQL is
// recorded in the query's executed-query string and stops when the request ends; metric names
// and label values pass through to the store.
func (r *Run) TwinQuerier() source.Querier { return runQuerier{r} }

// runQuerier is Run.TwinQuerier's querier.
type runQuerier struct{ r *Run }

// Query evaluates an instant query at ts through Run.Exec.
func (q runQuerier) Query(ctx context.Context, query string, ts time.Time) (model.Value, error) {
	return q.r.Exec(ctx, Query{PromQL: query, To: ts})
}

// QueryRange evaluates a range query through Run.Exec (chunked past MaxRangePoints).
func (q runQuerier) QueryRange(ctx context.Context, query string, start, end time.Time, step time.Duration) (model.Matrix, error) {
	return AsMatrix(q.r.Exec(ctx, Query{PromQL: query, From: start, To: end, Step: step, Chunked: true}))
}

// MetricNames passes through to the store.
func (q runQuerier) MetricNames(ctx context.Context, matchers string, start, end time.Time) ([]string, error) {
	return q.r.Env.Querier.MetricNames(ctx, matchers, start, end)
}

// LabelValues passes through to the store.
func (q runQuerier) LabelValues(ctx context.Context, name, matchers string, start, end time.Time) ([]string, error) {
	return q.r.Env.Querier.LabelValues(ctx, name, matchers, start, end)
}
