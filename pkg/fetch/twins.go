package fetch

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"time"
)

// Bounds of the capacity twin's work (docs/capacity.md, Bounds).
const (
	// TwinTTL is how long a calibrated twin, its knees and its what-ifs are reused.
	TwinTTL = 5 * time.Minute
	// DefaultTwinWait is how long a query waits for its twin simulations before it answers
	// with what is ready (Twins.Wait; INFERSCOPE_CAPACITY_WAIT sets another when the
	// instance is built).
	DefaultTwinWait = 20 * time.Second
	// twinCacheSize caps the cached entries (oldest dropped first): per target one
	// observation, one twin, one knee per profile and six what-ifs (the current configuration
	// and the five default changes), so about a hundred targets' worth.
	twinCacheSize = 1024
	// twinQueueLimit bounds the detached twin simulations of one data source (waiting for
	// a slot or running): one query over ten targets starts about a hundred (a twin, a knee
	// per profile and six what-ifs each), so this holds two such queries'.
	twinQueueLimit = 256
	// twinBackgroundLimit bounds one detached twin computation (a calibration, a knee
	// search, a what-if), which goes on after the query that started it has answered.
	twinBackgroundLimit = 10 * time.Minute
)

// TwinSlots bounds the twin simulations running at once, whatever data source started them:
// a buffered channel with one slot per simulation. They are CPU-bound, so the process holds
// one TwinSlots of runtime.GOMAXPROCS(0) slots (NewTwinSlots) that every instance's Twins
// shares; more at once would only slow each down.
type TwinSlots chan struct{}

// NewTwinSlots returns n slots (at least 1).
func NewTwinSlots(n int) TwinSlots { return make(TwinSlots, max(n, 1)) }

// Twins is a data-source instance's cache of capacity-twin work: observations, calibrated
// twins, knees and what-ifs, kept TwinTTL each, at most twinCacheSize entries (the oldest
// dropped first, finished or not). Twin runs cost CPU-seconds (docs/capacity.md), and a
// dashboard's panels ask for the same target and range at once: concurrent requests for one
// key wait for the one computation; a computation that fails is not kept (a waiter then
// computes it itself). Detached computations (GetDetached) run in one of the shared slots,
// at most twinQueueLimit of this data source's waiting or running at once. One nobody waits
// for any more, because every request that waited for it ended, is cancelled and dropped;
// one left by an answer deadline (Deadline) goes on for the next refresh. Close, when the
// instance is disposed, cancels those nobody waits for and keeps none for a refresh.
type Twins struct {
	// Wait is how long a query waits for its twins' simulations (Deadline) before it answers
	// with the rows that are ready; set when the instance is built, before any query.
	Wait time.Duration

	slots   TwinSlots
	mu      sync.Mutex
	entries map[string]*twinEntry
	// max caps the entries (twinCacheSize when 0); queue caps the detached computations
	// (twinQueueLimit when 0). Tests lower them.
	max, queue int
	// detached counts the detached computations not finished.
	detached int
	// closed is set by Close: no computation is kept for a refresh any more.
	closed bool
}

type twinEntry struct {
	at   time.Time
	done chan struct{} // closed when val and err are set
	val  any
	err  error
	// Detached computations only (guarded by Twins.mu): their cancel, the requests waiting
	// now, and whether a request left it for a refresh to find.
	cancel  context.CancelFunc
	waiters int
	wanted  bool
}

// NewTwins returns an empty cache whose queries wait wait (DefaultTwinWait when ≤ 0) and
// whose detached computations run in slots (slots of its own, one per CPU, when nil).
func NewTwins(wait time.Duration, slots TwinSlots) *Twins {
	if wait <= 0 {
		wait = DefaultTwinWait
	}
	if slots == nil {
		slots = NewTwinSlots(runtime.GOMAXPROCS(0))
	}
	return &Twins{Wait: wait, slots: slots, entries: map[string]*twinEntry{}}
}

// errAnswerDeadline is the cause of a query's answer deadline (Deadline): a waiter leaving
// for it leaves its simulation running for the next refresh, while one whose request ended
// (cancelled, or Grafana's own deadline) leaves it to be dropped.
var errAnswerDeadline = errors.New("the capacity query's answer deadline (INFERSCOPE_CAPACITY_WAIT) passed")

// answerDeadline is ctx with an answer deadline after d.
func answerDeadline(ctx context.Context, d time.Duration) (context.Context, context.CancelFunc) {
	return context.WithTimeoutCause(ctx, d, errAnswerDeadline)
}

// Deadline is ctx with the query's answer deadline after c.Wait: a twin computation waited
// for on it that outlasts it goes on detached (TwinPending).
func (c *Twins) Deadline(ctx context.Context) (context.Context, context.CancelFunc) {
	return answerDeadline(ctx, c.Wait)
}

// TwinPending reports whether err is the answer deadline (Deadline) ending while the
// request (ctx) goes on: the simulation continues detached, and the query answers without it.
func TwinPending(ctx context.Context, err error) bool {
	return errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil
}

// twinQueueError refuses a simulation past the queue limit.
type twinQueueError struct{ limit int }

func (e twinQueueError) Error() string {
	return fmt.Sprintf("capacity: this data source already has %d twin simulations waiting or running (the limit per data source); retry when they have finished", e.limit)
}

// Get returns the value of key computed less than TwinTTL before now, else computes, keeps
// and returns it; while another request computes it, Get waits for that one (or for ctx to
// end). compute runs on the caller's goroutine and ctx.
func (c *Twins) Get(ctx context.Context, key string, now time.Time, compute func(context.Context) (any, error)) (any, error) {
	return c.lookup(ctx, key, now, false, compute)
}

// GetDetached is Get for twin simulations: compute runs on its own goroutine, on a context
// detached from ctx (twinBackgroundLimit at most) and in one of the slots, and GetDetached
// waits for it or for ctx. When ctx ends by its answer deadline (Deadline), the computation
// goes on and its value is kept for the next query to find; when every request waiting for
// it has ended otherwise, it is cancelled and dropped. At most twinQueueLimit of them wait or
// run at once (an error naming the limit past that).
func (c *Twins) GetDetached(ctx context.Context, key string, now time.Time, compute func(context.Context) (any, error)) (any, error) {
	return c.lookup(ctx, key, now, true, compute)
}

// lookup serves key from a fresh entry, waits for one being computed, or starts computing it.
func (c *Twins) lookup(ctx context.Context, key string, now time.Time, detached bool, compute func(context.Context) (any, error)) (any, error) {
	for {
		c.mu.Lock()
		if e, ok := c.entries[key]; ok {
			select {
			case <-e.done:
				if e.err == nil && now.Sub(e.at) < TwinTTL && !now.Before(e.at) {
					c.mu.Unlock()
					return e.val, nil
				}
			default:
				e.waiters++
				c.mu.Unlock()
				if _, again, _ := c.wait(ctx, e, key); again {
					continue
				}
				return nil, ctx.Err()
			}
		}
		if err := c.refuseLocked(ctx, detached); err != nil {
			c.mu.Unlock()
			return nil, err
		}
		c.evictLocked()
		e := &twinEntry{at: now, done: make(chan struct{})}
		c.entries[key] = e
		if !detached {
			c.mu.Unlock()
			val, err := compute(ctx)
			c.finish(ctx, e, key, false, val, err)
			return e.val, e.err
		}
		c.startLocked(ctx, e, key, compute)
		c.mu.Unlock()
		val, _, err := c.wait(ctx, e, key)
		return val, err
	}
}

// wait waits for e, which the caller counts among its waiters, or for ctx: it returns e's
// value when e finished, and again when e finished before ctx ended (a waiter for another
// request's computation then looks the key up again, since a failure is not kept).
func (c *Twins) wait(ctx context.Context, e *twinEntry, key string) (val any, again bool, err error) {
	select {
	case <-e.done:
		c.leave(e, key, nil)
		return e.val, true, e.err
	case <-ctx.Done():
		c.leave(e, key, ctx)
		return nil, false, ctx.Err()
	}
}

// refuseLocked is why no detached computation starts for ctx: the request has ended (one
// that reached its answer deadline still starts one, for the refresh), or the queue is full.
// c.mu is held.
func (c *Twins) refuseLocked(ctx context.Context, detached bool) error {
	switch {
	case !detached:
		return nil
	case ctx.Err() != nil && !errors.Is(context.Cause(ctx), errAnswerDeadline):
		return ctx.Err()
	case c.detached >= c.queueLimit():
		return twinQueueError{limit: c.queueLimit()}
	}
	return nil
}

// startLocked starts e's detached computation, its requester its first waiter; c.mu is held.
func (c *Twins) startLocked(ctx context.Context, e *twinEntry, key string, compute func(context.Context) (any, error)) {
	bg, cancel := context.WithTimeout(context.WithoutCancel(ctx), twinBackgroundLimit)
	e.cancel, e.waiters = cancel, 1
	c.detached++
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
			case c.slots <- struct{}{}:
				defer func() { <-c.slots }()
			case <-bg.Done():
				return bg.Err()
			}
			val, err = compute(bg)
			return err
		}()
		c.finish(bg, e, key, true, val, err)
	}()
}

// finish sets e's value (cctx's error when compute gave none but cctx ended), drops a failed
// entry and wakes e's waiters.
func (c *Twins) finish(cctx context.Context, e *twinEntry, key string, detached bool, val any, err error) {
	if err == nil {
		err = cctx.Err()
	}
	e.val, e.err = val, err
	c.mu.Lock()
	if e.err != nil && c.entries[key] == e {
		delete(c.entries, key)
	}
	if detached {
		c.detached--
	}
	c.mu.Unlock()
	close(e.done)
}

// leave ends one request's wait for e: ended is the waiter's context when it left before e
// finished (nil when e finished). The last waiter of a detached computation leaving because
// its request ended, with no earlier waiter having left it for a refresh, cancels it and
// drops its entry, so no work goes on that nobody waits for; after Close, the last waiter
// leaving cancels it whatever the reason.
func (c *Twins) leave(e *twinEntry, key string, ended context.Context) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e.cancel == nil {
		return // computed on a caller's goroutine: that caller's context decides
	}
	e.waiters--
	if ended == nil {
		return
	}
	if errors.Is(context.Cause(ended), errAnswerDeadline) && !c.closed {
		e.wanted = true
		return
	}
	if e.waiters <= 0 && (!e.wanted || c.closed) {
		e.cancel()
		if c.entries[key] == e {
			delete(c.entries, key)
		}
	}
}

func (c *Twins) queueLimit() int {
	if c.queue > 0 {
		return c.queue
	}
	return twinQueueLimit
}

func (c *Twins) maxEntries() int {
	if c.max > 0 {
		return c.max
	}
	return twinCacheSize
}

// evictLocked drops entries while the cache is full: the oldest finished one first, else the
// oldest still computing, whose detached computation is cancelled (its waiters get the
// cancellation), so the cap always holds; c.mu is held.
func (c *Twins) evictLocked() {
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

// Close ends the cache with its instance (Dispose): the finished entries are dropped, and so
// are the detached computations no request waits for (cancelled); from then on a detached
// computation is cancelled as soon as no request waits for it, whatever the reason, since no
// refresh will come to this instance. Queries in flight still finish. Safe to call twice, and
// on nil.
func (c *Twins) Close() {
	if c == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.closed = true
	for key, e := range c.entries {
		select {
		case <-e.done:
		default:
			if e.cancel == nil || e.waiters > 0 {
				continue // a request waits for it
			}
			e.cancel()
		}
		delete(c.entries, key)
	}
}

// finished returns the keys with prefix whose computation finished without error, with their
// values and when they were computed (whatever their age); it starts nothing.
func (c *Twins) finished(prefix string) map[string]twinEntry {
	if c == nil {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	out := map[string]twinEntry{}
	for key, e := range c.entries {
		if !strings.HasPrefix(key, prefix) {
			continue
		}
		select {
		case <-e.done:
			if e.err == nil {
				out[key] = twinEntry{at: e.at, val: e.val}
			}
		default:
		}
	}
	return out
}

// peek returns key's value when its computation finished without error (whatever its age);
// it starts nothing.
func (c *Twins) peek(key string) (any, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.entries[key]
	if !ok {
		return nil, false
	}
	select {
	case <-e.done:
		return e.val, e.err == nil
	default:
		return nil, false
	}
}
