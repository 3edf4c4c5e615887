package plugin

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/data"
	"github.com/prometheus/common/model"

	"github.com/inferscope/inferscope-llm-datasource/pkg/analysis"
	"github.com/inferscope/inferscope-llm-datasource/pkg/analysis/events"
	"github.com/inferscope/inferscope-llm-datasource/pkg/catalog"
	"github.com/inferscope/inferscope-llm-datasource/pkg/frames"
)

// QueryTypeEvents is the annotation query type: restarts, down periods and
// changes of model, engine or configuration per target.
const QueryTypeEvents = "events"

// queryEvents returns every event of the targets in scope in the selected
// range as one annotation-shaped table.
func (i *Instance) queryEvents(ctx context.Context, p *plan) (data.Frames, error) {
	r := i.newRun(p)
	evs, err := r.events(ctx, p.from, p.to, true)
	if err != nil {
		return nil, err
	}
	if len(evs) == 0 {
		var names []string
		for _, v := range r.views(ctx) {
			names = append(names, v.Name)
		}
		r.notes.Add(analysis.Info, fmt.Sprintf("no restart, down period, counter going backwards, or change of served models, engine or vLLM cache configuration for %s in the selected range", strings.Join(names, ", ")))
	}
	return frames.Events(evs, r.meta()), nil
}

// eventCounters are the signals whose counters (or histogram _count) show
// restarts as resets.
var eventCounters = []catalog.Signal{catalog.RequestsFinished, catalog.PromptTokens, catalog.GenerationTokens, catalog.E2E, catalog.TTFT}

// events reads what events.Detect needs from the store over [from, to] for
// every target in scope, with one query per kind of evidence for all targets
// together (split by job afterwards), and returns the events in time order.
// full=false reads only what restarts and model changes need (for query
// notices).
func (r *run) events(ctx context.Context, from, to time.Time, full bool) ([]events.Event, error) {
	rng := to.Sub(from)
	if rng < r.i.settings.ScrapeInterval {
		rng = r.i.settings.ScrapeInterval
	}
	sel := "[" + model.Duration(rng).String() + "]"
	views := r.views(ctx)
	if len(views) == 0 {
		return nil, nil
	}
	var jobs, counters, modelNames []string
	for _, v := range views {
		jobs = append(jobs, v.Name)
		for _, a := range catalog.AssessAll(v.Det, v.Names) {
			if !a.Exported() {
				continue
			}
			for _, m := range a.Metrics {
				switch m.Kind {
				case catalog.KindHistogram:
					if slices.Contains(eventCounters, a.Signal) {
						counters = append(counters, m.Name+"_count")
					}
				case catalog.KindCounter:
					if slices.Contains(eventCounters, a.Signal) {
						counters = append(counters, m.Name)
						modelNames = append(modelNames, m.Name)
					}
				case catalog.KindGauge:
					modelNames = append(modelNames, m.Name)
				}
			}
		}
	}
	sort.Strings(jobs)
	job := `job=~"` + escapeLabel(alternation(jobs)) + `"`
	raw := func(q string) (map[string]model.Matrix, error) {
		val, err := r.query(ctx, q, to)
		if err != nil {
			return nil, err
		}
		m, _ := val.(model.Matrix)
		return byJob(m), nil
	}
	ranged := func(q string) (map[string]model.Matrix, error) {
		m, err := r.rangeQueryAt(ctx, q, from, to)
		return byJob(m), err
	}
	var startTimes, counts, models, ups, names, configs map[string]model.Matrix
	var err error
	if startTimes, err = raw(catalog.ProcessStartTime + "{" + job + "}" + sel); err != nil {
		return nil, err
	}
	if len(counters) > 0 {
		if counts, err = raw(`{` + job + `, __name__=~"` + nameAlternation(counters) + `"}` + sel); err != nil {
			return nil, err
		}
	}
	if len(modelNames) > 0 {
		if models, err = ranged(`group by (job, model_name) ({` + job + `, model_name!="", __name__=~"` + nameAlternation(modelNames) + `"})`); err != nil {
			return nil, err
		}
	}
	if full {
		if ups, err = raw(`up{` + job + `}` + sel); err != nil {
			return nil, err
		}
		if names, err = ranged(`count by (job, __name__) ({` + job + `})`); err != nil {
			return nil, err
		}
		if configs, err = ranged(`vllm:cache_config_info{` + job + `}`); err != nil {
			return nil, err
		}
	}
	statuses := r.i.statuses()
	var out []events.Event
	for _, v := range views {
		in := events.Input{Target: v.Name, Interval: r.i.settings.ScrapeInterval, From: from, To: to,
			StartTimes: startTimes[v.Name], Counters: counts[v.Name], Models: models[v.Name],
			Up: ups[v.Name], Names: names[v.Name], Config: configs[v.Name]}
		if st, ok := statuses[v.Name]; ok && !st.Up {
			in.DownError = sanitizeError(st.LastError)
		}
		if r.i.collector != nil && full {
			for _, e := range r.i.collector.ScrapeErrors(v.Name, from.Add(-r.i.settings.ScrapeInterval), to) {
				in.Errors = append(in.Errors, events.ScrapeError{At: e.At, Error: sanitizeError(e.Error)})
			}
		}
		for _, e := range events.Detect(in) {
			if e.Time.Before(from) || e.Time.After(to) {
				continue
			}
			if !full && e.Kind != events.Restart && e.Kind != events.ModelChange {
				continue
			}
			out = append(out, e)
		}
	}
	sort.SliceStable(out, func(a, b int) bool { return out[a].Time.Before(out[b].Time) })
	return out, nil
}

// byJob splits a query result by its job label.
func byJob(m model.Matrix) map[string]model.Matrix {
	out := map[string]model.Matrix{}
	for _, s := range m {
		j := string(s.Metric["job"])
		out[j] = append(out[j], s)
	}
	return out
}

// changeNotices says when the query's range (with its first rate window)
// spans a restart or a change of served models of a target in scope: rates
// over windows that span it count a reset or mix two models.
func (r *run) changeNotices(ctx context.Context) error {
	evs, err := r.events(ctx, r.namesFrom(), r.p.end, false)
	if err != nil {
		return err
	}
	for _, e := range evs {
		at := e.Time.UTC().Format(time.RFC3339)
		switch e.Kind {
		case events.Restart:
			r.notes.Add(analysis.Warning, fmt.Sprintf("target %s restarted at %s: windows that span it count its counters from zero again (rate() treats it as a counter reset); see the events query", e.Target, at))
		case events.ModelChange:
			r.notes.Add(analysis.Warning, fmt.Sprintf("target %s changed its served models at %s: %s Windows that span it mix the two", e.Target, at, e.Text))
		}
	}
	return nil
}

// nameAlternation renders metric names as a PromQL regex alternation.
func nameAlternation(names []string) string {
	parts := make([]string, 0, len(names))
	seen := map[string]bool{}
	for _, n := range names {
		if seen[n] {
			continue
		}
		seen[n] = true
		parts = append(parts, regexp.QuoteMeta(n))
	}
	return escapeLabel(strings.Join(parts, "|"))
}

// query runs an instant query of any result type, recording the PromQL.
func (r *run) query(ctx context.Context, q string, ts time.Time) (model.Value, error) {
	r.mu.Lock()
	r.queries = append(r.queries, q)
	r.mu.Unlock()
	v, err := r.i.querier.Query(ctx, q, ts)
	if err != nil {
		return nil, fmt.Errorf("PromQL %s: %w", q, err)
	}
	return v, nil
}

// rangeQueryAt is rangeQuery over [from, to] at the query's step, aligned to
// the step like the query's own range.
func (r *run) rangeQueryAt(ctx context.Context, q string, from, to time.Time) (model.Matrix, error) {
	r.mu.Lock()
	r.queries = append(r.queries, q)
	r.mu.Unlock()
	m, err := r.i.querier.QueryRange(ctx, q, alignToStep(from, r.p.step), to, r.p.step)
	if err != nil {
		return nil, fmt.Errorf("PromQL %s: %w", q, err)
	}
	return m, nil
}
