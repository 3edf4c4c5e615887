package fetch

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/prometheus/common/model"

	"github.com/inferscope/inferscope-llm-datasource/pkg/analysis"
	"github.com/inferscope/inferscope-llm-datasource/pkg/analysis/events"
	"github.com/inferscope/inferscope-llm-datasource/pkg/catalog"
	"github.com/inferscope/inferscope-llm-datasource/pkg/source"
)

// eventCounters are the signals whose counters (or histogram _count) show
// restarts as resets.
var eventCounters = []catalog.Signal{catalog.RequestsFinished, catalog.PromptTokens, catalog.GenerationTokens, catalog.E2E, catalog.TTFT}

// events reads what events.Detect needs from the store over [from, to] for
// every target in scope, with one query per kind of evidence for all targets
// together (split by job afterwards), and returns the events in time order.
// full=false reads only what restarts and model changes need (for query
// notices).
//
// The panels of one dashboard refresh share the answer (Env.Shared): the change notices of
// every panel over the same targets, range and step, and the events annotation, read the
// store once. The returned slice is shared: callers do not modify it.
func (r *Run) Events(ctx context.Context, from, to time.Time, full bool) ([]events.Event, error) {
	var jobs []string
	for _, v := range r.Views(ctx) {
		jobs = append(jobs, v.Name)
	}
	key := fmt.Sprintf("events\x00%t\x00%d\x00%d\x00%d\x00%d\x00%d\x00%s", full, from.UnixMilli(), to.UnixMilli(),
		r.Plan.Step, r.NamesFrom().UnixMilli(), r.Plan.End.UnixMilli(), strings.Join(jobs, "\x00"))
	v, err := r.shared(ctx, key, func(ctx context.Context, sub *Run) (any, error) { return sub.events(ctx, from, to, full) })
	if err != nil {
		return nil, err
	}
	return v.([]events.Event), nil
}

// events is Events without sharing.
func (r *Run) events(ctx context.Context, from, to time.Time, full bool) ([]events.Event, error) {
	rng := to.Sub(from)
	if rng < r.Env.Settings.ScrapeInterval {
		rng = r.Env.Settings.ScrapeInterval
	}
	views := r.Views(ctx)
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
	raw := func(q string) (map[string]model.Matrix, error) {
		val, err := r.Exec(ctx, Query{PromQL: q, To: to})
		if err != nil {
			return nil, err
		}
		m, _ := val.(model.Matrix)
		return byJob(m), nil
	}
	ranged := func(q string) (map[string]model.Matrix, error) {
		m, err := r.rangeAt(ctx, q, from, to)
		return byJob(m), err
	}
	var startTimes, counts, models, ups, names, configs map[string]model.Matrix
	var err error
	if startTimes, err = raw(catalog.ProcessStartPromQL(jobs, rng)); err != nil {
		return nil, err
	}
	if len(counters) > 0 {
		if counts, err = raw(catalog.RawNamesPromQL(jobs, counters, rng)); err != nil {
			return nil, err
		}
	}
	if len(modelNames) > 0 {
		if models, err = ranged(catalog.ServedModelsPromQL(jobs, modelNames)); err != nil {
			return nil, err
		}
	}
	if full {
		if ups, err = raw(catalog.UpRawPromQL(jobs, rng)); err != nil {
			return nil, err
		}
		if names, err = r.namesByJob(ctx, views, from, to); err != nil {
			return nil, err
		}
		if configs, err = ranged(catalog.CacheConfigPromQL(jobs)); err != nil {
			return nil, err
		}
	}
	statuses := r.Env.statuses()
	var out []events.Event
	for _, v := range views {
		in := events.Input{Target: v.Name, Interval: r.Env.Settings.ScrapeInterval, From: from, To: to,
			StartTimes: startTimes[v.Name], Counters: counts[v.Name], Models: models[v.Name],
			Up: ups[v.Name], Names: names[v.Name], Config: configs[v.Name]}
		if st, ok := statuses[v.Name]; ok && !st.Up {
			in.DownError = SanitizeError(st.LastError)
		}
		if r.Env.ScrapeErrors != nil && full {
			for _, e := range r.Env.ScrapeErrors(v.Name, from.Add(-r.Env.Settings.ScrapeInterval), to) {
				in.Errors = append(in.Errors, events.ScrapeError{At: e.At, Error: SanitizeError(e.Error)})
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

// namesByJob is each target's series counted by metric name at every step of [from, to]
// (count by (job, __name__), what events.Input.Names holds), without evaluating the
// classic-histogram `_bucket` series: their names come from the index (the names stored for
// the target, Env.MetricNames, over the range and the lookback before it), and a `_bucket`
// name is present at the steps where its `_count` is, the two being written by the same
// scrape of the same page. `_bucket` names stored without a `_count` are evaluated as before.
func (r *Run) namesByJob(ctx context.Context, views []TargetView, from, to time.Time) (map[string]model.Matrix, error) {
	var jobs, orphans []string
	buckets := map[string]map[string]bool{} // job → `_count` names whose `_bucket` is stored
	for _, v := range views {
		jobs = append(jobs, v.Name)
		stored := map[string]bool{}
		for _, n := range r.Env.MetricNames(ctx, v.Name, from.Add(-source.DefaultLookbackDelta), to) {
			stored[n] = true
		}
		for n := range stored {
			base, ok := strings.CutSuffix(n, "_bucket")
			if !ok || base == "" {
				continue
			}
			if !stored[base+"_count"] {
				orphans = append(orphans, n)
				continue
			}
			if buckets[v.Name] == nil {
				buckets[v.Name] = map[string]bool{}
			}
			buckets[v.Name][base+"_count"] = true
		}
	}
	sort.Strings(jobs)
	sort.Strings(orphans)
	m, err := r.rangeAt(ctx, catalog.NamesByJobNoBucketsPromQL(jobs, orphans), from, to)
	if err != nil {
		return nil, err
	}
	out := byJob(m)
	for job, ms := range out {
		for _, s := range ms {
			name := string(s.Metric[model.MetricNameLabel])
			if !buckets[job][name] {
				continue
			}
			b := s.Metric.Clone()
			b[model.MetricNameLabel] = model.LabelValue(strings.TrimSuffix(name, "_count") + "_bucket")
			out[job] = append(out[job], &model.SampleStream{Metric: b, Values: s.Values})
		}
	}
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

// ChangeNotices says when the query's range (with its first rate window)
// spans a restart or a change of served models of a target in scope: rates
// over windows that span it count a reset or mix two models.
func (r *Run) ChangeNotices(ctx context.Context) error {
	evs, err := r.Events(ctx, r.NamesFrom(), r.Plan.End, false)
	if err != nil {
		return err
	}
	for _, e := range evs {
		at := e.Time.UTC().Format(time.RFC3339)
		switch e.Kind {
		case events.Restart:
			r.Notes.Add(analysis.Warning, fmt.Sprintf("target %s restarted at %s: windows that span it count its counters from zero again (rate() treats it as a counter reset); see the events query", e.Target, at))
		case events.ModelChange:
			r.Notes.Add(analysis.Warning, fmt.Sprintf("target %s changed its served models at %s: %s Windows that span it mix the two", e.Target, at, e.Text))
		}
	}
	return nil
}
