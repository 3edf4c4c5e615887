package fetch

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/common/model"

	"github.com/inferscope/inferscope-llm-datasource/pkg/source"
)

// SharedWork lets the panels of one dashboard refresh share what they would each compute the
// same way: Grafana sends a dashboard's panels as separate requests at once, over the same
// targets, range and step, and each would read the same events evidence (change notices,
// the events annotation, the regression verdicts' restarts). The first request computes a
// result, requests asking for the same key meanwhile wait for it (one flight), and later ones
// reuse it for MaxAge. One per data-source instance: the instance, and so this cache, is
// created again when the data source's settings change, and the settings generation is part
// of every key as well (Env.SettingsGeneration), so nothing computed under other settings is
// ever reused.
type SharedWork struct {
	// MaxAge is how long a result is reused after it was computed (one refresh's spread),
	// measured on the machine's monotonic clock, never a query's own clock.
	MaxAge time.Duration
	// Now is the clock of MaxAge (time.Now when nil; tests set it).
	Now func() time.Time

	mu      sync.Mutex
	entries map[string]*sharedEntry
}

// DefaultSharedMaxAge is how long a shared result is reused: the panels of one refresh arrive
// within it (Grafana sends 8 at a time, the rest as those finish; seconds on a loaded
// machine). Keys hold the exact range, and a relative range ("last 6 hours") moves at every
// refresh, so only panels of one refresh, or refreshes of one absolute range, meet; a
// dashboard refreshing every 5 s (Grafana's shortest auto-refresh) computes again each time.
const DefaultSharedMaxAge = 4 * time.Second

func (s *SharedWork) now() time.Time {
	if s.Now == nil {
		return time.Now()
	}
	return s.Now()
}

// maxSharedEntries bounds the cache; it is emptied of finished entries when full.
const maxSharedEntries = 256

type sharedEntry struct {
	done    chan struct{}
	at      time.Time
	val     any
	queries []string
	notes   []string // the server's warnings met while computing (remote mode)
	err     error
}

// NewSharedWork returns an empty cache whose results live for maxAge.
func NewSharedWork(maxAge time.Duration) *SharedWork {
	return &SharedWork{MaxAge: maxAge, entries: map[string]*sharedEntry{}}
}

// shared returns fn's result for key, computed once for the requests that ask for it at the
// same time or within MaxAge, with the PromQL fn ran (recorded into r, in order, as if r had
// run it) and the server's warnings it met (added to the request's source.Notes). fn runs on a
// sub-run of r (same plan, own query list) with a context carrying its own source.Notes.
// Errors are not shared: a waiting request whose leader failed (or was cancelled) computes
// for itself.
func (r *Run) shared(ctx context.Context, key string, fn func(ctx context.Context, sub *Run) (any, error)) (any, error) {
	s := r.Env.Shared
	if s == nil {
		return fn(ctx, r)
	}
	key = r.Env.SettingsGeneration + "\x00" + key
	now := s.now()
	s.mu.Lock()
	e, ok := s.entries[key]
	if ok {
		select {
		case <-e.done:
			if e.err != nil || now.Sub(e.at) > s.MaxAge || now.Before(e.at) {
				ok = false
			}
		default:
		}
	}
	if ok {
		s.mu.Unlock()
		select {
		case <-e.done:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		if e.err == nil {
			r.replay(ctx, e)
			return e.val, nil
		}
		return r.sharedRun(ctx, fn)
	}
	if len(s.entries) >= maxSharedEntries {
		for k, old := range s.entries {
			select {
			case <-old.done:
				delete(s.entries, k)
			default:
			}
		}
	}
	e = &sharedEntry{done: make(chan struct{})}
	s.entries[key] = e
	s.mu.Unlock()
	sctx, notes := source.WithNotes(ctx)
	sub := r.Sub(r.Plan)
	sub.unbounded = true
	sub.server = notes
	func() {
		defer close(e.done)
		defer func() {
			if p := recover(); p != nil {
				e.err = errSharedPanic
				panic(p)
			}
		}()
		e.val, e.err = fn(sctx, sub)
		e.queries, e.notes = sub.Queries(), notes.List()
		e.at = s.now()
	}()
	if e.err != nil {
		s.mu.Lock()
		if s.entries[key] == e {
			delete(s.entries, key)
		}
		s.mu.Unlock()
		return nil, e.err
	}
	r.replay(ctx, e)
	return e.val, nil
}

// sharedRun computes fn on a sub-run for r alone and records its PromQL into r.
func (r *Run) sharedRun(ctx context.Context, fn func(ctx context.Context, sub *Run) (any, error)) (any, error) {
	sub := r.Sub(r.Plan)
	sub.unbounded = true
	v, err := fn(ctx, sub)
	r.record(sub.Queries())
	return v, err
}

// replay records a shared result's PromQL into r and its server warnings into the request's
// notes.
func (r *Run) replay(ctx context.Context, e *sharedEntry) {
	r.record(e.queries)
	n := source.NotesFrom(ctx)
	for _, m := range e.notes {
		n.Add(m)
	}
}

// record appends PromQL to the run's executed queries.
func (r *Run) record(qs []string) {
	r.mu.Lock()
	r.queries = append(r.queries, qs...)
	r.mu.Unlock()
}

type sharedPanic struct{}

func (sharedPanic) Error() string { return "a shared computation panicked" }

var errSharedPanic error = sharedPanic{}

// sharedRange is Range shared by the panels of one refresh (a heatmap and a latency panel
// read the same stage's histograms; the overview's saturation panels run the same reads).
// Each caller gets its own copy: the fetch guards edit matrices in place.
func (r *Run) sharedRange(ctx context.Context, q string) (model.Matrix, error) {
	v, err := r.shared(ctx, r.rangeKey(q), func(ctx context.Context, sub *Run) (any, error) { return sub.rangeDirect(ctx, q) })
	if err != nil {
		return nil, err
	}
	// The shared answer is unfolded: each run folds the overflow tenants by its own plan and
	// gets the notices that go with it.
	return AsMatrix(r.boundTenants(q, cloneMatrix(v.(model.Matrix))), nil)
}

// rangeKey is the shared-work key of range query q over the run's grid (sharedRange, Ranges).
func (r *Run) rangeKey(q string) string {
	return "range\x00" + q + "\x00" + strconv.FormatInt(r.Plan.Start.UnixMilli(), 10) + "\x00" +
		strconv.FormatInt(r.Plan.End.UnixMilli(), 10) + "\x00" + strconv.FormatInt(int64(r.Plan.Step), 10)
}

// sharedInstant is Instant shared by the panels of one refresh (the overview's and the SLO
// dashboard's objectives and diagnosis reads repeat). Each caller gets its own copy.
func (r *Run) sharedInstant(ctx context.Context, q string, ts time.Time) (model.Vector, error) {
	key := "instant\x00" + q + "\x00" + strconv.FormatInt(ts.UnixNano(), 10)
	v, err := r.shared(ctx, key, func(ctx context.Context, sub *Run) (any, error) { return sub.instantDirect(ctx, q, ts) })
	if err != nil {
		return nil, err
	}
	vec := v.(model.Vector)
	if vec == nil {
		return nil, nil
	}
	out := make(model.Vector, len(vec))
	for i, smp := range vec {
		c := *smp
		c.Metric = smp.Metric.Clone()
		out[i] = &c
	}
	folded, _ := r.boundTenants(q, out).(model.Vector) // foldTenants keeps a vector a vector
	return folded, nil
}

// cloneMatrix copies a matrix: labels and samples.
func cloneMatrix(m model.Matrix) model.Matrix {
	if m == nil {
		return nil
	}
	out := make(model.Matrix, len(m))
	for i, s := range m {
		c := &model.SampleStream{Metric: s.Metric.Clone()}
		if s.Values != nil {
			c.Values = slices.Clone(s.Values)
		}
		if s.Histograms != nil {
			c.Histograms = slices.Clone(s.Histograms)
		}
		out[i] = c
	}
	return out
}

// SharedRun computes a whole query's reads and analysis once for the panels of one refresh
// that ask the same thing (the overview's two diagnosis tables and its timeline: one
// diagnosis over the same targets, models, range and step, drawn three ways). fn runs on a
// fresh run over plan p (NewRun: the plan's notices first) and returns its result; it must
// read nothing but the plan, the environment and what its query type names in key. The key is
// what, besides the plan and the settings generation (both always part of it), changes fn's
// answer: the query type and its own fields. Each caller gets its own copy of that run (its
// notices and PromQL, in order; the server's warnings replayed into the caller's request), to
// add notices of its own to, and the result, which is shared and must be treated as
// read-only (copy what is to be changed). Errors are not shared.
func SharedRun(ctx context.Context, env *Env, p Plan, key string, fn func(ctx context.Context, run *Run) (any, error)) (*Run, any, error) {
	type computed struct {
		run *Run
		val any
	}
	r := &Run{Env: env, Plan: p, server: source.NotesFrom(ctx)}
	v, err := r.shared(ctx, "run\x00"+planKey(r.Plan)+"\x00"+key, func(ctx context.Context, sub *Run) (any, error) {
		run := NewRun(ctx, r.Env, r.Plan)
		val, err := fn(ctx, run)
		if err != nil {
			return nil, err
		}
		return computed{run, val}, nil
	})
	if err != nil {
		return nil, nil, err
	}
	c := v.(computed)
	own := &Run{Env: r.Env, Plan: r.Plan, Steps: c.run.Steps, server: r.server, queries: slices.Clone(c.run.Queries())}
	for _, n := range c.run.Notes.List() {
		own.Notes.Add(n.Severity, n.Text)
	}
	return own, c.val, nil
}

// planKey is every field of a plan, in words, for the shared-work keys of whole runs
// (SharedRun): two plans with the same key ask the same reads.
func planKey(p Plan) string {
	var b strings.Builder
	for _, t := range []time.Time{p.Start, p.End, p.From, p.To} {
		b.WriteString(strconv.FormatInt(t.UnixNano(), 10) + "\x00")
	}
	b.WriteString(strconv.FormatInt(int64(p.Step), 10) + "\x00" + strconv.FormatInt(int64(p.Window), 10) + "\x00")
	fmt.Fprintf(&b, "%q\x00%q\x00%q\x00%t\x00%t\x00%t\x00%d\x00%q\x00", p.Scope.Targets, p.Scope.Models, p.Scope.By,
		p.Scope.Finite, p.Scope.User, p.Scope.Gateway, p.Scope.Fresh, p.Scope.Upstreams)
	for _, n := range p.Notes {
		fmt.Fprintf(&b, "%q %q\x00", n.Severity, n.Text)
	}
	fmt.Fprintf(&b, "%q\x00%q", p.Gateways, p.TenantCutoff)
	return b.String()
}
