package source

import (
	"context"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql/parser"
)

// TargetSelector says where the series of one target (or GPU agent) live on
// a remote server: the plugin asks for `job="<Job>"`, the server holds the
// series selected by Matchers (e.g. {namespace="prod", pod="vllm-0"}).
type TargetSelector struct {
	// Job is the target's name: the job label the plugin's PromQL selects
	// and groups by, exactly as the embedded collector stores it.
	Job string
	// Matchers select the target's series on the server.
	Matchers []*labels.Matcher
}

// MapTargets returns a Querier that lets PromQL written for the embedded
// store (targets selected and grouped by their job label) run on a server
// where each target is a label selector. Every vector selector is narrowed
// to the targets its job matchers accept (all targets when it has none: the
// embedded store holds nothing else) and expanded per target:
//
//	rate(x{job=~"a|b"}[5m])
//	→ (label_replace(rate(x{<a's matchers>}[5m]), "job", "a", "", "")
//	   or label_replace(rate(x{<b's matchers>}[5m]), "job", "b", "", ""))
//
// The expansion happens at the innermost per-series expression (the
// selector, or the function over a range selector), so rate, increase,
// *_over_time and the aggregations above see the same series, labelled with
// the target's name as job, as on the embedded store. Targets whose selector
// is exactly {job="<name>"} share one branch with a job regex and no
// label_replace. Two series of one target that differ only in job on the
// server collide after the relabelling (PromQL's "vector cannot contain
// metrics with the same labelset"): give such a target a narrower selector.
//
// MetricNames and LabelValues map job matchers the same way (one request
// with several match[] when q implements MultiLabelValuer).
func MapTargets(q Querier, targets []TargetSelector) Querier {
	m := &mapped{q: q, p: parser.NewParser(parser.Options{}), group: map[string]*valueGroup{}}
	for _, t := range targets {
		if len(t.Matchers) == 1 && t.Matchers[0].Name == "job" && t.Matchers[0].Type == labels.MatchEqual && t.Matchers[0].Value == t.Job {
			m.identity = append(m.identity, t.Job)
		} else if l, rest, v, ok := varying(t.Matchers); ok {
			key := l + "\x00" + selectorString(rest)
			g := m.group[t.Job]
			if g == nil {
				for _, other := range m.group {
					if other.key == key {
						g = other
						break
					}
				}
			}
			if g == nil {
				g = &valueGroup{key: key, label: l, rest: rest, job: map[string]string{}}
				m.groups = append(m.groups, g)
				g.marker = fmt.Sprintf("%s%d:", groupMarker, len(m.groups)-1)
			}
			if _, dup := g.job[v]; !dup {
				g.job[v] = t.Job
				g.values = append(g.values, v)
				m.group[t.Job] = g
			}
		}
		m.targets = append(m.targets, t)
	}
	return m
}

// valueGroup is a set of targets whose selectors differ only in the value of
// one equality matcher (e.g. {job="vllm", instance="<each>"}): one branch
// selects them all with a regex on that label, and a chain of
// label_replace calls names each series's target from the label's value
// (label_replace leaves a series unchanged when its regex does not match).
// The server then selects and computes once, not once per target.
type valueGroup struct {
	marker string // job prefix while on the server: groupMarker + index + ":"
	key    string
	label  string
	rest   []*labels.Matcher
	values []string          // in configuration order
	job    map[string]string // label value → target name
}

// varying picks the label of a selector whose value tells targets apart:
// instance, else pod, else the only matcher's label; every matcher must be
// an equality.
func varying(ms []*labels.Matcher) (label string, rest []*labels.Matcher, value string, ok bool) {
	for _, mt := range ms {
		if mt.Type != labels.MatchEqual || mt.Value == "" {
			return "", nil, "", false
		}
	}
	pick := -1
	for k, mt := range ms {
		if mt.Name == "instance" {
			pick = k
		}
	}
	if pick < 0 {
		for k, mt := range ms {
			if mt.Name == "pod" {
				pick = k
			}
		}
	}
	if pick < 0 && len(ms) == 1 {
		pick = 0
	}
	if pick < 0 {
		return "", nil, "", false
	}
	for k, mt := range ms {
		if k != pick {
			rest = append(rest, mt)
		}
	}
	return ms[pick].Name, rest, ms[pick].Value, true
}

type mapped struct {
	q        Querier
	p        parser.Parser
	targets  []TargetSelector
	identity []string
	group    map[string]*valueGroup // target name → its group
	groups   []*valueGroup
}

// groupMarker starts the temporary job value of a grouped branch's series
// on the server (see expand and rename).
const groupMarker = "__inferscope_group_"

// rename replaces the temporary job values of grouped branches by the
// targets' names.
func (m *mapped) rename(ls model.Metric) {
	j, ok := ls["job"]
	if !ok || !strings.HasPrefix(string(j), groupMarker) {
		return
	}
	rest := strings.TrimPrefix(string(j), groupMarker)
	i := strings.IndexByte(rest, ':')
	if i < 0 {
		return
	}
	k, err := strconv.Atoi(rest[:i])
	if err != nil || k < 0 || k >= len(m.groups) {
		return
	}
	if name, ok := m.groups[k].job[rest[i+1:]]; ok {
		ls["job"] = model.LabelValue(name)
	}
}

// Unwrap returns the server's own Querier (for discovery, which looks
// beyond the configured targets).
func (m *mapped) Unwrap() Querier { return m.q }

// Query implements Querier.
func (m *mapped) Query(ctx context.Context, query string, ts time.Time) (model.Value, error) {
	if e, err := m.p.ParseExpr(query); err == nil {
		if ms, ok := unparen(e).(*parser.MatrixSelector); ok {
			return m.rawSamples(ctx, ms, ts)
		}
	}
	q, err := m.Rewrite(query)
	if err != nil {
		return nil, err
	}
	v, err := m.q.Query(ctx, q, ts)
	if err != nil || len(m.groups) == 0 {
		return v, err
	}
	switch r := v.(type) {
	case model.Vector:
		for _, smp := range r {
			m.rename(smp.Metric)
		}
	case model.Matrix:
		for _, ss := range r {
			m.rename(ss.Metric)
		}
		sort.Sort(r)
	}
	return v, nil
}

// QueryRange implements Querier.
func (m *mapped) QueryRange(ctx context.Context, query string, start, end time.Time, step time.Duration) (model.Matrix, error) {
	q, err := m.Rewrite(query)
	if err != nil {
		return nil, err
	}
	r, err := m.q.QueryRange(ctx, q, start, end, step)
	if err != nil || len(m.groups) == 0 {
		return r, err
	}
	for _, ss := range r {
		m.rename(ss.Metric)
	}
	sort.Sort(r)
	return r, nil
}

// MetricNames implements Querier.
func (m *mapped) MetricNames(ctx context.Context, matchers string, start, end time.Time) ([]string, error) {
	return m.LabelValues(ctx, model.MetricNameLabel, matchers, start, end)
}

// LabelValues implements Querier.
func (m *mapped) LabelValues(ctx context.Context, name, matchers string, start, end time.Time) ([]string, error) {
	var ms []*labels.Matcher
	if s := strings.TrimSpace(matchers); s != "" && s != "{}" {
		var err error
		if ms, err = m.p.ParseMetricSelector(s); err != nil {
			return nil, fmt.Errorf("label values of %q: selector %q: %w", name, matchers, err)
		}
	}
	jobs, rest := splitJob(ms)
	var sels []string
	for _, t := range m.targets {
		if !matchesAll(jobs, t.Job) {
			continue
		}
		sels = append(sels, selectorString(append(append([]*labels.Matcher{}, t.Matchers...), rest...)))
	}
	if len(sels) == 0 {
		return []string{}, nil
	}
	if mv, ok := m.q.(MultiLabelValuer); ok {
		return mv.LabelValuesAny(ctx, name, sels, start, end)
	}
	set := map[string]bool{}
	for _, s := range sels {
		vals, err := m.q.LabelValues(ctx, name, s, start, end)
		if err != nil {
			return nil, err
		}
		for _, v := range vals {
			set[v] = true
		}
	}
	out := slices.AppendSeq(make([]string, 0, len(set)), maps.Keys(set))
	sort.Strings(out)
	return out, nil
}

// rawSamples answers an instant query that is a bare range selector (the
// raw samples of a window, e.g. process_start_time_seconds{job=~"a|b"}[1h]):
// its result is a matrix, which label_replace cannot relabel, so each
// branch of expand is asked on its own and the series are named in Go.
func (m *mapped) rawSamples(ctx context.Context, ms *parser.MatrixSelector, ts time.Time) (model.Value, error) {
	vs := ms.VectorSelector.(*parser.VectorSelector)
	jobs, rest := splitJob(vs.LabelMatchers)
	ask := func(sel []*labels.Matcher, name func(model.Metric) (string, bool)) (model.Matrix, error) {
		c := *vs
		c.LabelMatchers = append(append([]*labels.Matcher{}, rest...), sel...)
		cm := *ms
		cm.VectorSelector = &c
		v, err := m.q.Query(ctx, cm.String(), ts)
		if err != nil {
			return nil, err
		}
		mat, _ := v.(model.Matrix)
		var out model.Matrix
		for _, ss := range mat {
			if n, ok := name(ss.Metric); ok {
				ss.Metric["job"] = model.LabelValue(n)
				out = append(out, ss)
			}
		}
		return out, nil
	}
	var all model.Matrix
	done := map[string]bool{}
	var ident []string
	for _, j := range m.identity {
		if matchesAll(jobs, j) {
			ident = append(ident, j)
			done[j] = true
		}
	}
	if len(ident) > 0 {
		sort.Strings(ident)
		mt := labels.MustNewMatcher(labels.MatchRegexp, "job", alternation(ident))
		got, err := ask([]*labels.Matcher{mt}, func(l model.Metric) (string, bool) { return string(l["job"]), true })
		if err != nil {
			return nil, err
		}
		all = append(all, got...)
	}
	for _, t := range m.targets {
		if done[t.Job] || !matchesAll(jobs, t.Job) {
			continue
		}
		if g := m.group[t.Job]; g != nil {
			var members []string
			for _, v := range g.values {
				if j := g.job[v]; !done[j] && matchesAll(jobs, j) {
					members = append(members, v)
					done[j] = true
				}
			}
			mt := labels.MustNewMatcher(labels.MatchRegexp, g.label, alternation(members))
			got, err := ask(append(append([]*labels.Matcher{}, g.rest...), mt), func(l model.Metric) (string, bool) {
				n, ok := g.job[string(l[model.LabelName(g.label)])]
				return n, ok
			})
			if err != nil {
				return nil, err
			}
			all = append(all, got...)
			continue
		}
		done[t.Job] = true
		job := t.Job
		got, err := ask(t.Matchers, func(model.Metric) (string, bool) { return job, true })
		if err != nil {
			return nil, err
		}
		all = append(all, got...)
	}
	sort.Sort(all)
	return all, nil
}

// Rewrite returns query with every selector expanded per target (see MapTargets).
func (m *mapped) Rewrite(query string) (string, error) {
	e, err := m.p.ParseExpr(query)
	if err != nil {
		return "", fmt.Errorf("query %q: %w", query, err)
	}
	e, err = m.walk(e, true)
	if err != nil {
		return "", fmt.Errorf("query %q: %w", query, err)
	}
	return e.String(), nil
}

// walk rewrites e. needJob is false below an aggregation that drops the job
// label (sum by (le) (…)): there the branches need no relabelling, since no
// one reads job, and the server skips the label_replace work.
func (m *mapped) walk(e parser.Expr, needJob bool) (parser.Expr, error) {
	var err error
	switch n := e.(type) {
	case *parser.VectorSelector:
		return m.expand(needJob, n, func(vs *parser.VectorSelector) parser.Expr { return vs })
	case *parser.MatrixSelector:
		vs := n.VectorSelector.(*parser.VectorSelector)
		return m.expand(needJob, vs, func(v *parser.VectorSelector) parser.Expr {
			c := *n
			c.VectorSelector = v
			return &c
		})
	case *parser.Call:
		for k, a := range n.Args {
			if ms, ok := a.(*parser.MatrixSelector); ok {
				// A function of a range vector is per series: expand the call.
				vs := ms.VectorSelector.(*parser.VectorSelector)
				return m.expand(needJob, vs, func(v *parser.VectorSelector) parser.Expr {
					c := *n
					c.Args = append(parser.Expressions{}, n.Args...)
					cm := *ms
					cm.VectorSelector = v
					c.Args[k] = &cm
					return &c
				})
			}
		}
		if n.Func != nil && n.Func.Name == "timestamp" && len(n.Args) == 1 {
			if vs, ok := unparen(n.Args[0]).(*parser.VectorSelector); ok {
				// timestamp() reads sample times only straight from a
				// selector: expand the call, not its argument.
				return m.expand(needJob, vs, func(v *parser.VectorSelector) parser.Expr {
					c := *n
					c.Args = parser.Expressions{v}
					return &c
				})
			}
		}
		for k := range n.Args {
			if n.Args[k], err = m.walk(n.Args[k], needJob); err != nil {
				return nil, err
			}
		}
	case *parser.AggregateExpr:
		inner := needJob
		switch {
		case n.Without:
			inner = needJob && !slices.Contains(n.Grouping, "job")
		case dropsLabels[n.Op]:
			inner = slices.Contains(n.Grouping, "job")
		}
		if n.Expr, err = m.walk(n.Expr, inner); err != nil {
			return nil, err
		}
		if n.Param != nil {
			if n.Param, err = m.walk(n.Param, true); err != nil {
				return nil, err
			}
		}
	case *parser.BinaryExpr:
		// Vector matching may be on job: both sides keep it.
		if n.LHS, err = m.walk(n.LHS, true); err != nil {
			return nil, err
		}
		if n.RHS, err = m.walk(n.RHS, true); err != nil {
			return nil, err
		}
	case *parser.ParenExpr:
		n.Expr, err = m.walk(n.Expr, needJob)
	case *parser.UnaryExpr:
		n.Expr, err = m.walk(n.Expr, needJob)
	case *parser.SubqueryExpr:
		n.Expr, err = m.walk(n.Expr, needJob)
	case *parser.StepInvariantExpr:
		n.Expr, err = m.walk(n.Expr, needJob)
	}
	return e, err
}

// expand builds the union over the targets vs's job matchers accept of
// build(vs narrowed to that target), each branch relabelled job="<name>".
func (m *mapped) expand(needJob bool, vs *parser.VectorSelector, build func(*parser.VectorSelector) parser.Expr) (parser.Expr, error) {
	jobs, rest := splitJob(vs.LabelMatchers)
	with := func(ms []*labels.Matcher) *parser.VectorSelector {
		c := *vs
		c.LabelMatchers = append(append([]*labels.Matcher{}, rest...), ms...)
		return &c
	}
	var branches []string
	var ident []string
	for _, j := range m.identity {
		if matchesAll(jobs, j) {
			ident = append(ident, j)
		}
	}
	if len(ident) > 0 {
		sort.Strings(ident)
		mt, err := labels.NewMatcher(labels.MatchRegexp, "job", alternation(ident))
		if err != nil {
			return nil, err
		}
		if len(ident) == 1 {
			mt = labels.MustNewMatcher(labels.MatchEqual, "job", ident[0])
		}
		branches = append(branches, build(with([]*labels.Matcher{mt})).String())
	}
	done := map[string]bool{}
	for _, j := range ident {
		done[j] = true
	}
	for _, t := range m.targets {
		if done[t.Job] || !matchesAll(jobs, t.Job) {
			continue
		}
		g := m.group[t.Job]
		var members []string
		if g != nil {
			for _, v := range g.values {
				if j := g.job[v]; !done[j] && matchesAll(jobs, j) {
					members = append(members, v)
				}
			}
		}
		if len(members) < 2 {
			done[t.Job] = true
			b := build(with(t.Matchers)).String()
			if needJob {
				b = `label_replace(` + b + `, "job", ` + strconv.Quote(t.Job) + `, "", "")`
			}
			branches = append(branches, b)
			continue
		}
		mt, err := labels.NewMatcher(labels.MatchRegexp, g.label, alternation(members))
		if err != nil {
			return nil, err
		}
		e := build(with(append(append([]*labels.Matcher{}, g.rest...), mt))).String()
		for _, v := range members {
			done[g.job[v]] = true
		}
		if needJob {
			// One cheap relabelling on the server: job = marker + the
			// label's value (a bijection, so grouping by job on the server
			// groups by target); the answer's job values are then renamed
			// to the targets' names (rename).
			e = `label_replace(` + e + `, "job", ` + strconv.Quote(g.marker+"$1") + `, ` + strconv.Quote(g.label) + `, "(.*)")`
		}
		branches = append(branches, e)
	}
	if len(branches) == 0 {
		// No configured target accepted: match nothing (job cannot be both
		// empty and non-empty), as the embedded store would.
		none := []*labels.Matcher{labels.MustNewMatcher(labels.MatchEqual, "job", ""), labels.MustNewMatcher(labels.MatchNotEqual, "job", "")}
		branches = append(branches, build(with(none)).String())
	}
	return m.p.ParseExpr("(" + strings.Join(branches, " or ") + ")")
}

// splitJob separates the job matchers from the others.
func splitJob(ms []*labels.Matcher) (jobs, rest []*labels.Matcher) {
	for _, mt := range ms {
		if mt.Name == "job" {
			jobs = append(jobs, mt)
		} else {
			rest = append(rest, mt)
		}
	}
	return jobs, rest
}

func matchesAll(ms []*labels.Matcher, v string) bool {
	for _, mt := range ms {
		if !mt.Matches(v) {
			return false
		}
	}
	return true
}

func selectorString(ms []*labels.Matcher) string {
	parts := make([]string, 0, len(ms))
	for _, mt := range ms {
		parts = append(parts, mt.String())
	}
	return "{" + strings.Join(parts, ", ") + "}"
}

func alternation(names []string) string {
	parts := make([]string, len(names))
	for i, n := range names {
		parts[i] = regexp.QuoteMeta(n)
	}
	return strings.Join(parts, "|")
}

// dropsLabels are the aggregations whose output carries only the grouping
// labels (not topk, bottomk, limitk or count_values, which keep or add labels).
var dropsLabels = map[parser.ItemType]bool{parser.SUM: true, parser.AVG: true, parser.MIN: true, parser.MAX: true,
	parser.COUNT: true, parser.GROUP: true, parser.STDDEV: true, parser.STDVAR: true, parser.QUANTILE: true}

func unparen(e parser.Expr) parser.Expr {
	for {
		p, ok := e.(*parser.ParenExpr)
		if !ok {
			return e
		}
		e = p.Expr
	}
}
