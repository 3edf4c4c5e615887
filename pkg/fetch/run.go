package fetch

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/backend"
	"github.com/prometheus/common/model"

	"github.com/inferscope/inferscope-llm-datasource/pkg/analysis"
	"github.com/inferscope/inferscope-llm-datasource/pkg/source"
)

// Run is one query's working state: its environment and plan, its step grid, the PromQL it
// ran (in order) and the notices it gathered. Notes is the query's one channel for notices:
// fetch guards, availability and the analysis packages all add to it, and the server's own
// warnings (source.Notes of the request's context) join them in Meta.
type Run struct {
	Env   *Env
	Plan  Plan
	Steps []time.Time
	// Notes are the query's notices; not safe for concurrent use.
	Notes analysis.Notices

	mu      sync.Mutex // guards queries while parts run concurrently (and Notes where a part adds to them)
	queries []string
	server  *source.Notes
	// unbounded: Exec leaves tenant folding (boundTenants) to the caller. Set on the sub-runs
	// that compute a shared read, whose answer each sharing run folds by its own plan.
	unbounded bool

	viewsOnce   sync.Once
	targetViews []TargetView
}

// NewRun starts a query's run over p; ctx carries the request's source.Notes, if any.
func NewRun(ctx context.Context, env *Env, p Plan) *Run {
	r := &Run{Env: env, Plan: p, Steps: analysis.Steps(p.Start, p.End, p.Step), server: source.NotesFrom(ctx)}
	for _, n := range p.Notes {
		r.Notes.Add(n.Severity, n.Text)
	}
	return r
}

// Sub returns a run over another plan sharing nothing with r (used for per-objective reads:
// its PromQL is not recorded in r).
func (r *Run) Sub(p Plan) *Run {
	return &Run{Env: r.Env, Plan: p, Steps: r.Steps, server: r.server}
}

// Queries returns the PromQL the run recorded, in order.
func (r *Run) Queries() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.queries
}

// ServerNotes returns the server's warnings gathered so far for the request (remote mode),
// sanitised for viewers (SanitizeError).
func (r *Run) ServerNotes() []string { return sanitized(r.server) }

// ServerNotes returns the server's warnings gathered so far in the request's context
// (source.WithNotes), sanitised for viewers: for answers that run no PromQL of their own.
func ServerNotes(ctx context.Context) []string { return sanitized(source.NotesFrom(ctx)) }

// sanitized returns the notes' messages through SanitizeError.
func sanitized(n *source.Notes) []string {
	list := n.List()
	for k, m := range list {
		list[k] = SanitizeError(m)
	}
	return list
}

// Query is one PromQL evaluation for Run.Exec.
type Query struct {
	// PromQL is the expression.
	PromQL string
	// Step > 0 asks for a range query over [From, To] at Step; else an instant query at To.
	From, To time.Time
	Step     time.Duration
	// Chunked splits a range query into pieces of at most MaxRangePoints steps and joins the
	// pieces' series by label set.
	Chunked bool
	// Unrecorded leaves the PromQL out of the executed query string (raw sample reads of
	// the fetch guards).
	Unrecorded bool
}

// MaxRangePoints is the most steps one range query asks for: Prometheus's HTTP API refuses
// more than 11,000 points per series.
const MaxRangePoints = 10000

// Exec is the one query executor: it records the PromQL, evaluates it (range or instant)
// and names the PromQL in its error.
//
// A request whose context has ended (the viewer left, the deadline passed) evaluates nothing
// more: every loop that builds or evaluates a query's PromQL goes through Exec.
func (r *Run) Exec(ctx context.Context, q Query) (model.Value, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if !q.Unrecorded {
		r.mu.Lock()
		r.queries = append(r.queries, q.PromQL)
		r.mu.Unlock()
	}
	if r.Env.Querier == nil {
		return nil, fmt.Errorf("PromQL %s: the data source has no store to read", q.PromQL)
	}
	var (
		v   model.Value
		err error
	)
	switch {
	case q.Step > 0 && q.Chunked:
		v, err = r.chunked(ctx, q)
	case q.Step > 0:
		v, err = r.Env.Querier.QueryRange(ctx, q.PromQL, q.From, q.To, q.Step)
	default:
		v, err = r.Env.Querier.Query(ctx, q.PromQL, q.To)
	}
	if err != nil {
		return nil, fmt.Errorf("PromQL %s: %w", q.PromQL, err)
	}
	if r.unbounded {
		return v, nil
	}
	return r.boundTenants(q.PromQL, v), nil
}

// chunked runs a range query in pieces of at most MaxRangePoints steps.
func (r *Run) chunked(ctx context.Context, q Query) (model.Matrix, error) {
	byKey := map[model.Fingerprint]*model.SampleStream{}
	var order []model.Fingerprint
	for start := q.From; !start.After(q.To); start = start.Add(q.Step * MaxRangePoints) {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		stop := start.Add(q.Step * (MaxRangePoints - 1))
		if stop.After(q.To) {
			stop = q.To
		}
		m, err := r.Env.Querier.QueryRange(ctx, q.PromQL, start, stop, q.Step)
		if err != nil {
			return nil, err
		}
		for _, s := range m {
			fp := s.Metric.Fingerprint()
			if cur, ok := byKey[fp]; ok {
				cur.Values = append(cur.Values, s.Values...)
				continue
			}
			byKey[fp] = s
			order = append(order, fp)
		}
	}
	out := make(model.Matrix, 0, len(order))
	for _, fp := range order {
		out = append(out, byKey[fp])
	}
	return out, nil
}

// Range runs q as a range query over the plan's step-aligned range. The panels of one
// dashboard refresh share the answer (sharedRange) when the environment has a SharedWork.
func (r *Run) Range(ctx context.Context, q string) (model.Matrix, error) {
	if r.Env.Shared != nil {
		return r.sharedRange(ctx, q)
	}
	return r.rangeDirect(ctx, q)
}

// rangeDirect is Range evaluated for this run alone.
func (r *Run) rangeDirect(ctx context.Context, q string) (model.Matrix, error) {
	return AsMatrix(r.Exec(ctx, Query{PromQL: q, From: r.Plan.Start, To: r.Plan.End, Step: r.Plan.Step}))
}

// rangeAt runs q as a range query over [from, to] at the plan's step, aligned to the step
// like the plan's own range.
func (r *Run) rangeAt(ctx context.Context, q string, from, to time.Time) (model.Matrix, error) {
	return AsMatrix(r.Exec(ctx, Query{PromQL: q, From: AlignToStep(from, r.Plan.Step), To: to, Step: r.Plan.Step}))
}

// Instant runs q as an instant query at ts and expects a vector.
//
// The panels of one dashboard refresh share the answer (sharedInstant) when the environment
// has a SharedWork.
func (r *Run) Instant(ctx context.Context, q string, ts time.Time) (model.Vector, error) {
	if r.Env.Shared != nil {
		return r.sharedInstant(ctx, q, ts)
	}
	return r.instantDirect(ctx, q, ts)
}

// instantDirect is Instant evaluated for this run alone.
func (r *Run) instantDirect(ctx context.Context, q string, ts time.Time) (model.Vector, error) {
	v, err := r.Exec(ctx, Query{PromQL: q, To: ts})
	if err != nil {
		return nil, err
	}
	vec, ok := v.(model.Vector)
	if !ok {
		return nil, fmt.Errorf("PromQL %s returned %s, not a vector", q, v.Type())
	}
	return vec, nil
}

// AsMatrix passes a range query's matrix on.
func AsMatrix(v model.Value, err error) (model.Matrix, error) {
	if err != nil {
		return nil, err
	}
	m, _ := v.(model.Matrix)
	return m, nil
}

// Parallel runs fn(0..n-1) on up to GOMAXPROCS goroutines and returns the first error. A panic
// in fn becomes that call's error: the edge's recover does not reach other goroutines, and a
// panic there would end the plugin.
func (r *Run) Parallel(n int, fn func(k int) error) error {
	return r.parallelN(n, runtime.GOMAXPROCS(0), fn)
}

// parallelN is Parallel with at most limit calls at a time.
func (r *Run) parallelN(n, limit int, fn func(k int) error) error {
	sem := make(chan struct{}, limit)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for k := 0; k < n; k++ {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() {
				if p := recover(); p != nil {
					r.Env.logger().Error("query part panicked", "panic", fmt.Sprint(p))
					errs[k] = backend.PluginError(fmt.Errorf("internal error while computing part %d of the query", k))
				}
				<-sem
				wg.Done()
			}()
			errs[k] = fn(k)
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// InstantAll evaluates every distinct query at ts concurrently.
func (r *Run) InstantAll(ctx context.Context, queries []string, ts time.Time) (map[string]model.Vector, error) {
	var uniq []string
	seen := map[string]bool{}
	for _, q := range queries {
		if !seen[q] {
			seen[q] = true
			uniq = append(uniq, q)
		}
	}
	res := make([]model.Vector, len(uniq))
	err := r.Parallel(len(uniq), func(k int) error {
		v, err := r.Instant(ctx, uniq[k], ts)
		res[k] = v
		return err
	})
	if err != nil {
		return nil, err
	}
	out := make(map[string]model.Vector, len(uniq))
	for k, q := range uniq {
		out[q] = res[k]
	}
	return out, nil
}
