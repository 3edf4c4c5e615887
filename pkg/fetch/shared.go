package fetch

import (
	"context"
	"sync"
	"time"
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
	// MaxAge is how long a result is reused after it was computed (one refresh's spread).
	MaxAge time.Duration

	mu      sync.Mutex
	entries map[string]*sharedEntry
}

// DefaultSharedMaxAge is how long a shared result is reused: the panels of one refresh arrive
// within it, and a dashboard refreshing every 5 s (Grafana's shortest auto-refresh) computes
// again each time.
const DefaultSharedMaxAge = 2 * time.Second

// maxSharedEntries bounds the cache; it is emptied of finished entries when full.
const maxSharedEntries = 256

type sharedEntry struct {
	done    chan struct{}
	at      time.Time
	val     any
	queries []string
	err     error
}

// NewSharedWork returns an empty cache whose results live for maxAge.
func NewSharedWork(maxAge time.Duration) *SharedWork {
	return &SharedWork{MaxAge: maxAge, entries: map[string]*sharedEntry{}}
}

// shared returns fn's result for key, computed once for the requests that ask for it at the
// same time or within MaxAge, with the PromQL fn ran (recorded into r, in order, as if r had
// run it). fn runs on a sub-run of r (same plan, own query list). Errors are not shared: a
// waiting request whose leader failed (or was cancelled) computes for itself.
func (r *Run) shared(ctx context.Context, key string, fn func(sub *Run) (any, error)) (any, error) {
	s := r.Env.Shared
	if s == nil {
		return fn(r)
	}
	key = r.Env.SettingsGeneration + "\x00" + key
	now := r.Env.now()
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
			r.record(e.queries)
			return e.val, nil
		}
		return r.sharedRun(fn)
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
	sub := r.Sub(r.Plan)
	func() {
		defer close(e.done)
		defer func() {
			if p := recover(); p != nil {
				e.err = errSharedPanic
				panic(p)
			}
		}()
		e.val, e.err = fn(sub)
		e.queries = sub.Queries()
		e.at = r.Env.now()
	}()
	if e.err != nil {
		s.mu.Lock()
		if s.entries[key] == e {
			delete(s.entries, key)
		}
		s.mu.Unlock()
		return nil, e.err
	}
	r.record(e.queries)
	return e.val, nil
}

// sharedRun computes fn on a sub-run and records its PromQL into r.
func (r *Run) sharedRun(fn func(sub *Run) (any, error)) (any, error) {
	sub := r.Sub(r.Plan)
	v, err := fn(sub)
	r.record(sub.Queries())
	return v, err
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
