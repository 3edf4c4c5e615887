package source

import (
	"context"
	"errors"
	"fmt"
	"math"
	"regexp"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/value"
	"github.com/prometheus/prometheus/promql/parser"
	"github.com/prometheus/prometheus/schema"
	"github.com/prometheus/prometheus/storage"
	"github.com/prometheus/prometheus/tsdb/chunkenc"
	"github.com/prometheus/prometheus/util/kahansum"
)

// RangeBatcher is a Querier that evaluates several range queries over one time grid together,
// so that the queries' selectors in common are read once. QueryRanges returns one matrix per
// query, in order, each what QueryRange would return for it (series sorted by labels).
type RangeBatcher interface {
	QueryRanges(ctx context.Context, queries []string, start, end time.Time, step time.Duration) ([]model.Matrix, error)
}

// QueryRanges implements RangeBatcher for the embedded engine with a one-pass evaluator: every
// query built only of rate, increase, delta and resets over plain range selectors (no offset,
// no @), `or` and `unless` (with on/ignoring), comparison filters against a number, sum and max
// by/without, and label_replace (the shape of catalog.HistogramQueries) is evaluated in Go:
// each distinct selector's series are selected once from the storage over the range plus the
// window, each series' samples decoded once, and every range function the queries ask of it
// computed per step from those samples. The arithmetic is that of the promql package of the
// Prometheus version in go.mod (v0.316.0: promql's extrapolatedRate and funcResets, its
// engine's aggregation with Kahan–Neumaier summation, util/kahansum; VectorOr,
// VectorUnless, VectorscalarBinop, evalLabelReplace): the results are the same floats, except
// that a `sum` over more than two series may differ in the last bits because the engine adds
// the inputs of an `or` in map order (its own results vary between runs that way).
//
// A query outside that shape, a selector holding native histograms, a result that would hold
// two series with one label set, or a batch whose samples read plus step points held pass
// EmbeddedOptions.MaxSamples is evaluated by the PromQL engine instead (QueryRange), so the
// answer, or the engine's refusal, does not depend on which path ran. EmbeddedOptions.Timeout
// bounds the batch as it bounds one engine query.
func (e *embedded) QueryRanges(ctx context.Context, queries []string, start, end time.Time, step time.Duration) ([]model.Matrix, error) {
	out, _, err := e.queryRanges(ctx, queries, start, end, step)
	return out, err
}

// queryRanges is QueryRanges that also says which queries the one-pass evaluator answered.
func (e *embedded) queryRanges(ctx context.Context, queries []string, start, end time.Time, step time.Duration) ([]model.Matrix, []bool, error) {
	out := make([]model.Matrix, len(queries))
	inGo := make([]bool, len(queries))
	if len(queries) == 0 {
		return out, inGo, nil
	}
	if e.q == nil {
		return nil, nil, errors.New("embedded range query: no storage")
	}
	if step <= 0 || end.Before(start) {
		// QueryRange words the error.
		_, err := e.QueryRange(ctx, queries[0], start, end, step)
		return nil, nil, err
	}
	p := &onePass{start: start.UnixMilli(), end: end.UnixMilli(), step: step.Milliseconds(),
		sels: map[string]*passSelector{}, maxSamples: e.opts.MaxSamples}
	if p.step <= 0 {
		p.start, p.end = 1, 0 // no steps: every query goes to the engine
	}
	defer p.release()
	for t := p.start; t <= p.end; t += p.step {
		p.n++
	}
	// One series' points alone pass the limit: the engine answers (and words the refusal).
	over := p.maxSamples > 0 && p.n > p.maxSamples
	// The engine's time limit (EmbeddedOptions.Timeout) holds for the batch as a whole.
	ctx, cancel := context.WithTimeout(ctx, e.opts.Timeout)
	defer cancel()
	exprs := make([]parser.Expr, len(queries))
	for k, q := range queries {
		ex, err := e.parser.ParseExpr(q)
		if err == nil && p.step > 0 && !over && p.plan(ex) {
			exprs[k] = ex
		}
	}
	err := p.read(ctx, e.q)
	if err != nil && !errors.Is(err, errUnsupported) {
		return nil, nil, err
	}
	for k, q := range queries {
		if err := ctx.Err(); err != nil {
			return nil, nil, err
		}
		if exprs[k] != nil && err == nil {
			if p.maxSamples > 0 && p.samples > p.maxSamples {
				exprs[k] = nil // its aggregations would pass the limit: the engine answers
			}
		}
		if exprs[k] != nil && err == nil {
			v, perr := p.eval(exprs[k])
			if perr == nil {
				out[k], inGo[k] = p.toModel(v), true
				continue
			}
			if !errors.Is(perr, errUnsupported) {
				return nil, nil, fmt.Errorf("range query %q: %w", q, perr)
			}
		}
		m, qerr := e.QueryRange(ctx, q, start, end, step)
		if qerr != nil {
			return nil, nil, qerr
		}
		out[k] = m
	}
	return out, inGo, nil
}

// errUnsupported sends a query to the PromQL engine.
var errUnsupported = errors.New("not evaluated in one pass")

// onePass is the state of one QueryRanges call: the step grid (milliseconds, as the engine
// truncates it), the selectors to read and what each must yield.
type onePass struct {
	start, end, step int64
	n                int // steps
	sels             map[string]*passSelector
	maxSamples       int
	samples          int
	win              map[int64]*passWindows
	slabs            []*passSlab // the pooled memory of the step arrays, returned by release
}

// passSlabSize is the number of floats and of flags in one pooled slab of step arrays.
const passSlabSize = 1 << 16

// passSlab is memory for step arrays: floats and flags carved in order (nf, nb used); every
// flag past nb is false.
type passSlab struct {
	f      []float64
	b      []bool
	nf, nb int
}

// passSlabs keeps the slabs between calls: a stage's step arrays are tens of megabytes per
// dashboard refresh, needed only until the matrices are built.
var passSlabs = sync.Pool{New: func() any {
	return &passSlab{f: make([]float64, passSlabSize), b: make([]bool, passSlabSize)}
}}

func (p *onePass) slab(nf, nb int) *passSlab {
	if k := len(p.slabs); k > 0 {
		if s := p.slabs[k-1]; s.nf+nf <= len(s.f) && s.nb+nb <= len(s.b) {
			return s
		}
	}
	s := passSlabs.Get().(*passSlab)
	p.slabs = append(p.slabs, s)
	return s
}

// floats returns n floats of undefined value (each step array is written before it is read:
// a value counts only where its flag is set).
func (p *onePass) floats(n int) []float64 {
	if n > passSlabSize {
		return make([]float64, n)
	}
	s := p.slab(n, 0)
	out := s.f[s.nf : s.nf+n : s.nf+n]
	s.nf += n
	return out
}

// bools returns n flags, all false.
func (p *onePass) bools(n int) []bool {
	if n > passSlabSize {
		return make([]bool, n)
	}
	s := p.slab(0, n)
	out := s.b[s.nb : s.nb+n : s.nb+n]
	s.nb += n
	return out
}

// release returns the slabs to the pool, their flags cleared; nothing of them may be used after.
func (p *onePass) release() {
	for _, s := range p.slabs {
		clear(s.b[:s.nb])
		s.nf, s.nb = 0, 0
		passSlabs.Put(s)
	}
	p.slabs = nil
}

// passSelector is one distinct vector selector of the batch and the range functions asked of it.
type passSelector struct {
	vs    *parser.VectorSelector
	fns   map[passFn]passVec
	order []passFn
}

// passFn is a range function over a window (milliseconds).
type passFn struct {
	name  string // "rate", "increase", "delta" or "resets"
	rng   int64
	rngOf time.Duration
}

// passSeries is one series of a vector over the step grid: ok[i] says whether it has a value
// at step i.
type passSeries struct {
	lbls labels.Labels
	v    []float64
	ok   []bool
}

// passVec is a vector over the step grid, its series in the engine's input order.
type passVec []*passSeries

// plan records the selectors and functions of ex and reports whether ex is of the shape
// evaluated here.
func (p *onePass) plan(ex parser.Expr) bool {
	switch n := ex.(type) {
	case *parser.ParenExpr:
		return p.plan(n.Expr)
	case *parser.StepInvariantExpr:
		return false
	case *parser.AggregateExpr:
		if (n.Op != parser.SUM && n.Op != parser.MAX) || n.Param != nil {
			return false
		}
		return p.plan(n.Expr)
	case *parser.BinaryExpr:
		if n.LHS.Type() != parser.ValueTypeVector {
			return false
		}
		switch {
		case n.Op == parser.LOR || n.Op == parser.LUNLESS:
			return n.RHS.Type() == parser.ValueTypeVector && n.VectorMatching != nil &&
				n.VectorMatching.Card == parser.CardManyToMany && p.plan(n.LHS) && p.plan(n.RHS)
		case n.Op.IsComparisonOperator() && !n.ReturnBool:
			if _, ok := scalarOf(n.RHS); !ok {
				return false
			}
			return p.plan(n.LHS)
		}
		return false
	case *parser.Call:
		switch n.Func.Name {
		case "label_replace":
			if len(n.Args) != 5 {
				return false
			}
			for _, a := range n.Args[1:] {
				if _, ok := unparen(a).(*parser.StringLiteral); !ok {
					return false
				}
			}
			return p.plan(n.Args[0])
		case "rate", "increase", "delta", "resets":
			if len(n.Args) != 1 {
				return false
			}
			ms, ok := unparen(n.Args[0]).(*parser.MatrixSelector)
			if !ok || ms.Range <= 0 {
				return false
			}
			vs, ok := ms.VectorSelector.(*parser.VectorSelector)
			if !ok || vs.Offset != 0 || vs.OriginalOffset != 0 || vs.Timestamp != nil || vs.StartOrEnd != 0 ||
				vs.Anchored || vs.Smoothed {
				return false
			}
			key := vs.String()
			s := p.sels[key]
			if s == nil {
				s = &passSelector{vs: vs, fns: map[passFn]passVec{}}
				p.sels[key] = s
			}
			f := passFn{name: n.Func.Name, rng: ms.Range.Milliseconds(), rngOf: ms.Range}
			if _, seen := s.fns[f]; !seen {
				s.fns[f] = nil
				s.order = append(s.order, f)
			}
			return true
		}
	}
	return false
}

// scalarOf is the value of a number literal (possibly negated or in parentheses).
func scalarOf(e parser.Expr) (float64, bool) {
	switch n := unparen(e).(type) {
	case *parser.NumberLiteral:
		return n.Val, true
	case *parser.UnaryExpr:
		v, ok := scalarOf(n.Expr)
		if !ok {
			return 0, false
		}
		if n.Op == parser.SUB {
			return -v, true
		}
		return v, n.Op == parser.ADD
	}
	return 0, false
}

// read selects every planned selector once and computes its functions. It returns
// errUnsupported when a selector holds samples that are not floats or the samples read pass
// maxSamples.
func (p *onePass) read(ctx context.Context, qa storage.Queryable) error {
	if len(p.sels) == 0 {
		return nil
	}
	var maxRange int64
	for _, s := range p.sels {
		for _, f := range s.order {
			maxRange = max(maxRange, f.rng)
		}
	}
	// As the engine's querier: from the first window's (exclusive) start to the last step.
	mint := p.start - maxRange + 1
	q, err := qa.Querier(mint, p.end)
	if err != nil {
		return fmt.Errorf("open querier: %w", err)
	}
	defer q.Close()
	keys := make([]string, 0, len(p.sels))
	for k := range p.sels {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var ts []int64
	var fs []float64
	var resets []int
	var it chunkenc.Iterator
	for _, k := range keys {
		s := p.sels[k]
		var rng int64
		for _, f := range s.order {
			rng = max(rng, f.rng)
		}
		hints := &storage.SelectHints{Start: p.start - rng + 1, End: p.end, Step: p.step, Range: rng}
		set := q.Select(ctx, false, hints, s.vs.LabelMatchers...)
		for set.Next() {
			if err := ctx.Err(); err != nil {
				return err
			}
			sr := set.At()
			ts, fs = ts[:0], fs[:0]
			it = sr.Iterator(it)
			for vt := it.Next(); vt != chunkenc.ValNone; vt = it.Next() {
				if vt != chunkenc.ValFloat {
					return errUnsupported
				}
				t, f := it.At()
				if t < hints.Start || t > p.end || value.IsStaleNaN(f) {
					continue
				}
				ts, fs = append(ts, t), append(fs, f)
			}
			if err := it.Err(); err != nil {
				return err
			}
			if len(ts) == 0 {
				continue
			}
			// The samples read and the step points each function of them holds: at least
			// what the engine counts against the same limit, so that a batch the engine
			// would refuse goes to the engine and gets its error.
			p.samples += len(ts) + len(s.order)*p.n
			if p.maxSamples > 0 && p.samples > p.maxSamples {
				return errUnsupported
			}
			resets = resets[:0]
			for j := 1; j < len(fs); j++ {
				if fs[j] < fs[j-1] {
					resets = append(resets, j)
				}
			}
			lbls := sr.Labels().DropReserved(schema.IsMetadataLabel)
			for _, f := range s.order {
				if ps := p.apply(f, lbls, ts, fs, resets); ps != nil {
					s.fns[f] = append(s.fns[f], ps)
				}
			}
		}
		if err := set.Err(); err != nil {
			return err
		}
	}
	return nil
}

// passWindow is one step's window over a series' samples, [lo, hi), with the parts of
// extrapolatedRate that depend only on the timestamps: the durations to the window's start
// (after the half-interval rule, before the counter's zero-point rule) and end, the sampled
// interval, and delta's factor. The buckets, _sum and _count of one histogram are scraped at
// the same instants, so their series share these.
type passWindow struct {
	lo, hi                      int
	toStart, toEnd, sampled, fd float64
}

// windows returns the windows of range rng (milliseconds) over samples at ts at every step,
// reusing the previous series' when it was sampled at the same instants.
func (p *onePass) windows(rng int64, ts []int64) []passWindow {
	c := p.win[rng]
	if c != nil && slices.Equal(c.ts, ts) {
		return c.w
	}
	if c == nil {
		c = &passWindows{}
		if p.win == nil {
			p.win = map[int64]*passWindows{}
		}
		p.win[rng] = c
	}
	c.ts = append(c.ts[:0], ts...)
	if cap(c.w) < p.n {
		c.w = make([]passWindow, p.n)
	}
	c.w = c.w[:p.n]
	lo, hi := 0, 0
	for i := range c.w {
		at := p.start + int64(i)*p.step
		from := at - rng
		for lo < len(ts) && ts[lo] <= from {
			lo++
		}
		for hi < len(ts) && ts[hi] <= at {
			hi++
		}
		w := passWindow{lo: lo, hi: hi}
		if n := hi - lo - 1; n > 0 {
			// promql extrapolatedRate (v0.316.0), the float path without start
			// timestamps, in its order of operations.
			firstT, lastT := ts[lo], ts[hi-1]
			w.toStart = float64(firstT-from) / 1000
			w.toEnd = float64(at-lastT) / 1000
			w.sampled = float64(lastT-firstT) / 1000
			averageDurationBetweenSamples := w.sampled / float64(n)
			extrapolationThreshold := averageDurationBetweenSamples * 1.1
			if w.toStart >= extrapolationThreshold {
				w.toStart = averageDurationBetweenSamples / 2
			}
			if w.toEnd >= extrapolationThreshold {
				w.toEnd = averageDurationBetweenSamples / 2
			}
			w.fd = 1.0
			if w.sampled != 0 {
				w.fd = (w.sampled + w.toStart + w.toEnd) / w.sampled
			}
		}
		c.w[i] = w
	}
	return c.w
}

// passWindows caches windows for one range.
type passWindows struct {
	ts []int64
	w  []passWindow
}

// apply computes f of one series (samples ts, fs without staleness markers; resets the indexes
// j where fs[j] < fs[j-1]) at every step; nil when it has no value at any step.
func (p *onePass) apply(f passFn, lbls labels.Labels, ts []int64, fs []float64, resets []int) *passSeries {
	ps := &passSeries{lbls: lbls, v: p.floats(p.n), ok: p.bools(p.n)}
	any := false
	r0 := 0
	rngSec := f.rngOf.Seconds()
	for i, w := range p.windows(f.rng, ts) {
		lo, hi := w.lo, w.hi
		if hi-lo < 1 {
			continue
		}
		// resets[r0:] are the resets whose later sample is after lo.
		for r0 < len(resets) && resets[r0] <= lo {
			r0++
		}
		var v float64
		switch f.name {
		case "resets":
			n := 0
			for r := r0; r < len(resets) && resets[r] < hi; r++ {
				n++
			}
			v = float64(n)
		case "delta":
			if hi-lo < 2 {
				continue
			}
			v = (fs[hi-1] - fs[lo]) * w.fd
		default: // rate, increase: promql extrapolatedRate with isCounter
			if hi-lo < 2 {
				continue
			}
			resultFloat := fs[hi-1] - fs[lo]
			// The engine adds the value before each reset, in order.
			for r := r0; r < len(resets) && resets[r] < hi; r++ {
				resultFloat += fs[resets[r]-1]
			}
			durationToStart := w.toStart
			durationToZero := durationToStart
			if resultFloat > 0 && fs[lo] >= 0 {
				durationToZero = w.sampled * (fs[lo] / resultFloat)
			}
			if durationToZero < durationToStart {
				durationToStart = durationToZero
			}
			factor := 1.0
			if w.sampled != 0 {
				factor = (w.sampled + durationToStart + w.toEnd) / w.sampled
			}
			if f.name == "rate" {
				factor /= rngSec
			}
			resultFloat *= factor
			v = resultFloat
		}
		ps.v[i], ps.ok[i], any = v, true, true
	}
	if !any {
		return nil
	}
	return ps
}

// eval evaluates a planned expression over the step grid.
func (p *onePass) eval(ex parser.Expr) (passVec, error) {
	var v passVec
	var err error
	switch n := ex.(type) {
	case *parser.ParenExpr:
		return p.eval(n.Expr)
	case *parser.Call:
		switch n.Func.Name {
		case "label_replace":
			v, err = p.labelReplace(n)
		default:
			ms := unparen(n.Args[0]).(*parser.MatrixSelector)
			s := p.sels[ms.VectorSelector.(*parser.VectorSelector).String()]
			src := s.fns[passFn{name: n.Func.Name, rng: ms.Range.Milliseconds(), rngOf: ms.Range}]
			// Each use gets its own series: later operators change their points.
			v = make(passVec, len(src))
			for k, ps := range src {
				ok := p.bools(p.n)
				copy(ok, ps.ok)
				v[k] = &passSeries{lbls: ps.lbls, v: ps.v, ok: ok}
			}
		}
	case *parser.BinaryExpr:
		v, err = p.binary(n)
	case *parser.AggregateExpr:
		v, err = p.aggregate(n)
	default:
		return nil, errUnsupported
	}
	if err != nil {
		return nil, err
	}
	return p.merge(v)
}

// merge joins series with one label set, as the engine does (mergeSeriesWithSameLabelset, and
// rangeEval's output keyed by labels): into the first one's place when they never have a
// value at the same step; when they do, the engine refuses the query, and so it is left to it.
func (p *onePass) merge(v passVec) (passVec, error) {
	var seen map[uint64][]int
	out := v[:0]
	for _, ps := range v {
		if seen == nil {
			seen = make(map[uint64][]int, len(v))
		}
		h := ps.lbls.Hash()
		into := -1
		for _, k := range seen[h] {
			if labels.Equal(out[k].lbls, ps.lbls) {
				into = k
				break
			}
		}
		if into < 0 {
			seen[h] = append(seen[h], len(out))
			out = append(out, ps)
			continue
		}
		m := &passSeries{lbls: out[into].lbls, v: append([]float64(nil), out[into].v...), ok: append([]bool(nil), out[into].ok...)}
		for i, ok := range ps.ok {
			if !ok {
				continue
			}
			if m.ok[i] {
				return nil, errUnsupported
			}
			m.v[i], m.ok[i] = ps.v[i], true
		}
		out[into] = m
	}
	return out, nil
}

func (p *onePass) labelReplace(n *parser.Call) (passVec, error) {
	str := func(k int) string { return unparen(n.Args[k]).(*parser.StringLiteral).Val }
	dst, repl, src, re := str(1), str(2), str(3), str(4)
	regex, err := regexp.Compile("^(?s:" + re + ")$")
	if err != nil || !model.UTF8Validation.IsValidLabelName(dst) || dst == model.MetricNameLabel {
		return nil, errUnsupported
	}
	v, err := p.eval(n.Args[0])
	if err != nil {
		return nil, err
	}
	lb := labels.NewBuilder(labels.EmptyLabels())
	for _, ps := range v {
		srcVal := ps.lbls.Get(src)
		if idx := regex.FindStringSubmatchIndex(srcVal); idx != nil {
			res := regex.ExpandString([]byte{}, repl, srcVal, idx)
			lb.Reset(ps.lbls)
			lb.Set(dst, string(res))
			ps.lbls = lb.Labels()
		}
	}
	return v, nil
}

func (p *onePass) binary(n *parser.BinaryExpr) (passVec, error) {
	lhs, err := p.eval(n.LHS)
	if err != nil {
		return nil, err
	}
	if n.Op.IsComparisonOperator() && n.Op != parser.LOR && n.Op != parser.LUNLESS {
		s, _ := scalarOf(n.RHS)
		out := lhs[:0]
		for _, ps := range lhs {
			any := false
			for i, ok := range ps.ok {
				if ok && !compare(n.Op, ps.v[i], s) {
					ps.ok[i] = false
				}
				any = any || ps.ok[i]
			}
			if any {
				out = append(out, ps)
			}
		}
		return out, nil
	}
	rhs, err := p.eval(n.RHS)
	if err != nil {
		return nil, err
	}
	// The engine's short cuts (VectorOr, VectorUnless): nothing to match against.
	switch {
	case len(rhs) == 0:
		return lhs, nil
	case len(lhs) == 0 && n.Op == parser.LOR:
		return rhs, nil
	case len(lhs) == 0:
		return lhs, nil
	}
	sigf := signature(n.VectorMatching)
	// For each signature, the steps at which some series of the other side has it.
	other := rhs
	if n.Op == parser.LOR {
		other = lhs
	}
	present := map[string][]bool{}
	for _, ps := range other {
		sig := sigf(ps.lbls)
		pr := present[sig]
		if pr == nil {
			pr = p.bools(p.n)
			present[sig] = pr
		}
		for i, ok := range ps.ok {
			pr[i] = pr[i] || ok
		}
	}
	mask := func(ps *passSeries) bool {
		pr := present[sigf(ps.lbls)]
		any := false
		for i, ok := range ps.ok {
			if ok && pr != nil && pr[i] {
				ps.ok[i] = false
			}
			any = any || ps.ok[i]
		}
		return any
	}
	var out passVec
	if n.Op == parser.LOR {
		out = append(out, lhs...)
		for _, ps := range rhs {
			if mask(ps) {
				out = append(out, ps)
			}
		}
		return out, nil
	}
	for _, ps := range lhs {
		if mask(ps) {
			out = append(out, ps)
		}
	}
	return out, nil
}

// signature is the engine's matching signature of a set operation (rangeEval): the `on` labels,
// or every label but the `ignoring` ones and the metadata labels.
func signature(m *parser.VectorMatching) func(labels.Labels) string {
	names := append([]string(nil), m.MatchingLabels...)
	var buf []byte
	if m.On {
		sort.Strings(names)
		return func(l labels.Labels) string { return string(l.BytesWithLabels(buf, names...)) }
	}
	names = append(names, model.MetricNameLabel, model.MetricTypeLabel, model.MetricUnitLabel)
	sort.Strings(names)
	return func(l labels.Labels) string { return string(l.BytesWithoutLabels(buf, names...)) }
}

// compare is a comparison filter's test (vectorElemBinop for floats).
func compare(op parser.ItemType, l, r float64) bool {
	switch op {
	case parser.EQLC:
		return l == r
	case parser.NEQ:
		return l != r
	case parser.GTR:
		return l > r
	case parser.LSS:
		return l < r
	case parser.GTE:
		return l >= r
	case parser.LTE:
		return l <= r
	}
	return false
}

func (p *onePass) aggregate(n *parser.AggregateExpr) (passVec, error) {
	in, err := p.eval(n.Expr)
	if err != nil {
		return nil, err
	}
	type group struct {
		ps *passSeries
		c  []float64
	}
	var groups []*group
	index := map[string]int{}
	of := make([]int, len(in))
	lb := labels.NewBuilder(labels.EmptyLabels())
	for k, ps := range in {
		lb.Reset(ps.lbls)
		switch {
		case n.Without:
			lb.Del(n.Grouping...)
			schema.Metadata{}.SetToLabels(lb)
		case len(n.Grouping) > 0:
			lb.Keep(n.Grouping...)
		default:
			lb.Reset(labels.EmptyLabels())
		}
		l := lb.Labels()
		key := l.String()
		g, ok := index[key]
		if !ok {
			g = len(groups)
			index[key] = g
			c := p.floats(p.n)
			clear(c)
			groups = append(groups, &group{ps: &passSeries{lbls: l, v: p.floats(p.n), ok: p.bools(p.n)}, c: c})
		}
		of[k] = g
	}
	// Series by series: at each step the group still adds its inputs in input order.
	for k, ps := range in {
		grp := groups[of[k]]
		g, c := grp.ps, grp.c
		for i, ok := range ps.ok {
			if !ok {
				continue
			}
			f := ps.v[i]
			if !g.ok[i] {
				g.v[i], g.ok[i] = f, true
				continue
			}
			switch n.Op {
			case parser.SUM:
				g.v[i], c[i] = kahansum.Inc(f, g.v[i], c[i])
			case parser.MAX:
				if g.v[i] < f || math.IsNaN(g.v[i]) {
					g.v[i] = f
				}
			}
		}
	}
	out := make(passVec, 0, len(groups))
	for _, g := range groups {
		if n.Op == parser.SUM {
			for i := range g.ps.v {
				if g.ps.ok[i] {
					g.ps.v[i] += g.c[i]
				}
			}
		}
		out = append(out, g.ps)
	}
	return out, nil
}

// toModel is the matrix QueryRange returns: series with at least one point, sorted by labels.
func (p *onePass) toModel(v passVec) model.Matrix {
	out := make(model.Matrix, 0, len(v))
	for _, ps := range v {
		var vals []model.SamplePair
		for i, ok := range ps.ok {
			if ok {
				vals = append(vals, model.SamplePair{Timestamp: model.Time(p.start + int64(i)*p.step), Value: model.SampleValue(ps.v[i])})
			}
		}
		if len(vals) == 0 {
			continue
		}
		out = append(out, &model.SampleStream{Metric: metricOf(ps.lbls), Values: vals})
	}
	sort.Sort(out)
	return out
}
