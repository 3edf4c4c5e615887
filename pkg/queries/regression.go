package queries

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/data"
	"github.com/prometheus/common/model"

	"github.com/inferscope/inferscope-llm-datasource/pkg/analysis"
	"github.com/inferscope/inferscope-llm-datasource/pkg/analysis/events"
	"github.com/inferscope/inferscope-llm-datasource/pkg/analysis/regress"
	"github.com/inferscope/inferscope-llm-datasource/pkg/catalog"
	"github.com/inferscope/inferscope-llm-datasource/pkg/fetch"
	"github.com/inferscope/inferscope-llm-datasource/pkg/frames"
	"github.com/inferscope/inferscope-llm-datasource/pkg/settings"
)

// Regression is the regression query: around each change the events query finds in the
// range (restart, engine or version change, model change, vLLM cache configuration change),
// or between two ranges the user picks, a verdict per latency stage (regressed, improved,
// no change, not comparable) with the size of the change, its 95 % bootstrap interval and
// what was held comparable (pkg/analysis/regress, docs/benchmarks.md).
type Regression struct {
	Common
	// Stages are latency stages (catalog.LatencyStages); default ttft, tpot, itl, e2e.
	Stages []string `json:"stages,omitempty"`
	// Format is table (default), annotations or numeric (alert rules: verdict_value of the
	// latest change per target and stage).
	Format string `json:"format,omitempty"`
	// Span is how long before and after each change is compared (Prometheus notation,
	// default 30m); shorter where another change of the same target comes first.
	Span string `json:"span,omitempty"`
	// Before and After are two ranges to compare instead of the changes (both or neither).
	Before *TimeRange `json:"before,omitempty"`
	After  *TimeRange `json:"after,omitempty"`
	// MinEffect is the relative change a verdict needs with 95 % confidence; default 0.05.
	MinEffect *float64 `json:"minEffect,omitempty"`
}

// TimeRange is a user-picked range: from and to in RFC 3339 or Unix milliseconds.
type TimeRange struct {
	From string `json:"from"`
	To   string `json:"to"`
}

// Regression formats.
const (
	regressionTable       = "table"
	regressionAnnotations = "annotations"
	regressionNumeric     = "numeric"
)

var regressionEnums = map[string][]string{"stages": signalNames(catalog.LatencyStages), "format": {regressionTable, regressionAnnotations, regressionNumeric}}

func (q *Regression) lists() []namedList { return []namedList{{"stages", &q.Stages}} }

func (q *Regression) validate(*settings.Settings) error {
	if q.Format != "" && !slices.Contains(regressionEnums["format"], q.Format) {
		return badQueryf("format: %q is not one of table, annotations, numeric", q.Format)
	}
	if (q.Before == nil) != (q.After == nil) {
		return badQueryf("before: give both before and after ranges, or neither to compare around each change")
	}
	if q.MinEffect != nil && !(*q.MinEffect >= 0 && *q.MinEffect < 1) {
		return badQueryf("minEffect: %v must be a ratio in [0, 1), such as 0.05", *q.MinEffect)
	}
	if q.GroupBy != "" && q.GroupBy != "none" {
		return badQueryf("groupBy: the regression query gives one verdict per change and target; select targets instead")
	}
	if _, err := q.stages(); err != nil {
		return err
	}
	if _, err := q.span(); err != nil {
		return err
	}
	if q.Before != nil {
		if _, err := q.ranges(); err != nil {
			return err
		}
	}
	return nil
}

// stages returns the asked stages, default ttft, tpot, itl and e2e.
func (q *Regression) stages() ([]catalog.Signal, error) {
	return parseStages(q.Stages, []catalog.Signal{catalog.TTFT, catalog.TPOT, catalog.ITL, catalog.E2E})
}

// span returns the span field, default 30 minutes.
func (q *Regression) span() (time.Duration, error) {
	if q.Span == "" {
		return 30 * time.Minute, nil
	}
	d, err := model.ParseDuration(q.Span)
	if err != nil || d <= 0 {
		return 0, badQueryf("span: %q is not a duration such as 30m or 2h", q.Span)
	}
	return time.Duration(d), nil
}

// ranges returns the one change of the user's before and after ranges (both given).
func (q *Regression) ranges() (regressionChange, error) {
	bf, bt, err := q.Before.parse("before")
	if err != nil {
		return regressionChange{}, err
	}
	af, at, err := q.After.parse("after")
	if err != nil {
		return regressionChange{}, err
	}
	return regressionChange{at: af, kind: "ranges", title: "the picked ranges", beforeFrom: bf, beforeTo: bt, afterFrom: af, afterTo: at}, nil
}

// parseRangeTime reads RFC 3339 or Unix milliseconds.
func parseRangeTime(field, s string) (time.Time, error) {
	if t, err := time.Parse(time.RFC3339, strings.TrimSpace(s)); err == nil {
		return t, nil
	}
	if ms, err := strconv.ParseInt(strings.TrimSpace(s), 10, 64); err == nil && ms > 0 {
		return time.UnixMilli(ms).UTC(), nil
	}
	return time.Time{}, badQueryf("%s: %q is neither RFC 3339 (2026-12-01T10:00:00Z) nor Unix milliseconds", field, s)
}

func (tr *TimeRange) parse(field string) (time.Time, time.Time, error) {
	from, err := parseRangeTime(field+".from", tr.From)
	if err != nil {
		return from, from, err
	}
	to, err := parseRangeTime(field+".to", tr.To)
	if err != nil {
		return from, to, err
	}
	if !to.After(from) {
		return from, to, badQueryf("%s.to: %s is not after %s.from %s", field, to.Format(time.RFC3339), field, from.Format(time.RFC3339))
	}
	return from, to, nil
}

// regressionChange is one change to judge: when, on which target ("" for user ranges:
// every selected target), what, and the ranges compared.
type regressionChange struct {
	at                   time.Time
	target, kind, title  string
	beforeFrom, beforeTo time.Time
	afterFrom, afterTo   time.Time
}

// changeKinds are the event kinds a regression is looked for after.
var changeKinds = []events.Kind{events.Restart, events.EngineChange, events.ModelChange, events.ConfigChange}

// runRegression finds the changes (or takes the user's ranges), reads the windows of each
// side with rate windows one step long (the step at least four scrape intervals, so
// windows do not overlap), and gives the verdicts (regress.Compare).
func runRegression(ctx context.Context, env *fetch.Env, p fetch.Plan, q *Regression) (data.Frames, error) {
	stageSignals, _ := q.stages() // validated while decoding
	opt := regress.DefaultOptions
	if q.MinEffect != nil {
		opt.MinEffect = *q.MinEffect
	}
	sp := p
	sp.Step = max(p.Step, 4*env.Settings.ScrapeInterval)
	sp.Window = sp.Step
	r := fetch.NewRun(ctx, env, sp)
	r.ScopeNotices(ctx, stageSignals)
	changes, err := regressionChanges(ctx, r, q, p)
	if err != nil {
		return nil, err
	}
	rows, err := regressionRows(ctx, r, changes, signalNames(stageSignals), p.Scope, opt)
	if err != nil {
		return nil, err
	}
	m := meta(r, nil)
	switch q.Format {
	case regressionAnnotations:
		return frames.RegressionAnnotations(rows, m), nil
	case regressionNumeric:
		return frames.RegressionNumeric(rows, m), nil
	}
	return frames.RegressionTable(rows, m), nil
}

// regressionChanges returns the user's ranges as one change, else the changes of the
// events in the query's range (changesOf over r's step), with a notice when there is none.
func regressionChanges(ctx context.Context, r *fetch.Run, q *Regression, p fetch.Plan) ([]regressionChange, error) {
	if q.Before != nil {
		c, err := q.ranges()
		if err != nil {
			return nil, err
		}
		return []regressionChange{c}, nil
	}
	span, _ := q.span() // validated while decoding
	evs, err := r.Events(ctx, p.From, p.To, true)
	if err != nil {
		return nil, err
	}
	changes := changesOf(evs, span, r.Plan.Step, p.From.Add(-span), p.To)
	if len(changes) == 0 {
		r.Notes.Add(analysis.Info, "No restart, engine or version change, model change or cache configuration change in the range: pick two ranges (before, after) to compare.")
	}
	return changes, nil
}

// regressionRows reads each change's before and after windows (fetch.Run.Windows, over
// the change's target, else the whole scope) and gives a verdict per stage
// (regress.Compare); a change with an empty side is said, not queried.
func regressionRows(ctx context.Context, r *fetch.Run, changes []regressionChange, stages []string, scope catalog.Scope, opt regress.Options) ([]frames.RegressionRow, error) {
	var rows []frames.RegressionRow
	for _, c := range changes {
		if !c.afterFrom.Before(c.afterTo) || !c.beforeFrom.Before(c.beforeTo) {
			// A change within two steps of the range's end (or start) leaves one side empty:
			// said, not queried (a window past the range end is no window).
			r.Notes.Add(analysis.Info, noSideSentence(c, r.Plan.Step))
			continue
		}
		sc := scope
		if c.target != "" {
			sc.Targets = []string{c.target}
		}
		before, err := r.Windows(ctx, stages, sc, r.Plan.Window, c.beforeFrom, c.beforeTo)
		if err != nil {
			return nil, err
		}
		after, err := r.Windows(ctx, stages, sc, r.Plan.Window, c.afterFrom, c.afterTo)
		if err != nil {
			return nil, err
		}
		target := c.target
		if target == "" {
			target = strings.Join(scope.Targets, ",")
			if target == "" {
				target = "all"
			}
		}
		for _, v := range regress.Compare(regressWindows(before, c.beforeFrom, c.beforeTo), regressWindows(after, c.afterFrom, c.afterTo), stages, opt) {
			rows = append(rows, frames.RegressionRow{Time: c.at, Target: target, Change: c.kind, Title: c.title,
				BeforeFrom: c.beforeFrom, BeforeTo: c.beforeTo, AfterFrom: c.afterFrom, AfterTo: c.afterTo, Verdict: v})
		}
	}
	return rows, nil
}

// changesOf turns events into changes: per target, events of changeKinds within two steps
// of each other are one change (a version upgrade restarts the engine: restart and
// engine_change together). Each side spans span, cut at the neighbouring changes of the
// same target; the after side starts two steps after the change (the restart's downtime
// and warm-up are not compared).
func changesOf(evs []events.Event, span, step time.Duration, from, to time.Time) []regressionChange {
	byTarget := map[string][]events.Event{}
	var targets []string
	for _, e := range evs {
		if !slices.Contains(changeKinds, e.Kind) {
			continue
		}
		if _, ok := byTarget[e.Target]; !ok {
			targets = append(targets, e.Target)
		}
		byTarget[e.Target] = append(byTarget[e.Target], e)
	}
	sort.Strings(targets)
	var out []regressionChange
	for _, t := range targets {
		es := byTarget[t]
		sort.SliceStable(es, func(i, j int) bool { return es[i].Time.Before(es[j].Time) })
		var merged []regressionChange
		for _, e := range es {
			if n := len(merged); n > 0 && e.Time.Sub(merged[n-1].at) <= 2*step {
				last := &merged[n-1]
				if !strings.Contains(last.kind, string(e.Kind)) {
					last.kind += "+" + string(e.Kind)
					last.title += "; " + e.Title
				}
				continue
			}
			merged = append(merged, regressionChange{at: e.Time, target: t, kind: string(e.Kind), title: e.Title})
		}
		for i := range merged {
			c := &merged[i]
			c.beforeFrom, c.beforeTo = c.at.Add(-span), c.at
			if c.beforeFrom.Before(from) {
				c.beforeFrom = from
			}
			if i > 0 && c.beforeFrom.Before(merged[i-1].at.Add(2*step)) {
				c.beforeFrom = merged[i-1].at.Add(2 * step)
			}
			c.afterFrom, c.afterTo = c.at.Add(2*step), c.at.Add(span)
			if c.afterTo.After(to) {
				c.afterTo = to
			}
			if i+1 < len(merged) && c.afterTo.After(merged[i+1].at) {
				c.afterTo = merged[i+1].at
			}
		}
		out = append(out, merged...)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].at.Before(out[j].at) })
	return out
}

// regressWindows converts the read windows that end inside (from, to] (a window at t
// covers (t − step, t]) into regress windows.
func regressWindows(w fetch.WindowReads, from, to time.Time) []regress.Window {
	var out []regress.Window
	for i, x := range w.Windows {
		if !x.At.After(from) || x.At.After(to) {
			continue
		}
		out = append(out, regress.Window{At: x.At, Arrival: x.RequestRate, Running: x.Running,
			PromptLen: w.PromptLength[i], OutLen: w.OutputLength[i], Sum: w.Sum[i], Count: w.Count[i]})
	}
	return out
}

// noSideSentence says why change c is not compared: one of its sides is empty because the
// change lies too close to the range's end (the after side starts two steps after the change)
// or start, or to a neighbouring change.
func noSideSentence(c regressionChange, step time.Duration) string {
	who := "the " + c.title
	if c.target != "" {
		who = "target " + c.target + ": " + c.title
	}
	at := c.at.UTC().Format("2006-01-02 15:04:05 UTC")
	if !c.afterFrom.Before(c.afterTo) {
		return fmt.Sprintf("%s at %s is not compared: it is too close to the end of the range for an after side (it starts two steps, %s, after the change, to leave out the restart's warm-up); widen the range past %s",
			who, at, model.Duration(2*step), c.afterFrom.UTC().Format("15:04:05 UTC"))
	}
	return fmt.Sprintf("%s at %s is not compared: no time before it is left in the range to compare with; widen the range before it", who, at)
}
