package plugin

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/common/model"

	"github.com/inferscope/inferscope-llm-datasource/pkg/analysis"
	"github.com/inferscope/inferscope-llm-datasource/pkg/analysis/latency"
	"github.com/inferscope/inferscope-llm-datasource/pkg/analysis/sanity"
	"github.com/inferscope/inferscope-llm-datasource/pkg/catalog"
)

// maxFindings caps the notices of one check per signal; the rest are counted in one line.
const maxFindings = 5

// frozenScrapes is how many scrape intervals the request gauges must stay unchanged, with no
// request arriving, producing a token or finishing, before saturation calls them frozen.
const frozenScrapes = 10

// skipped reports a sanity check that could not run (a PromQL error, a sample limit): the
// query's own result stands, with an Info notice saying which check is missing and why.
func (r *run) skipped(what string, err error) {
	r.notes.Add(analysis.Info, fmt.Sprintf("%s was skipped: %v", what, err))
}

// addFindings turns findings into Warning notices, at most maxFindings per call.
func (r *run) addFindings(fs []sanity.Finding, signal string) {
	for k, f := range fs {
		if k == maxFindings {
			r.notes.Add(analysis.Warning, fmt.Sprintf("%s: %d more series with values that cannot be true were left out", signal, len(fs)-maxFindings))
			return
		}
		r.notes.Add(analysis.Warning, f.Text())
	}
}

// impossibleNotices names every gauge sample of the signals that the aggregates left out
// because it cannot be true (catalog.ValueRange): target, labels, value and time.
func (r *run) impossibleNotices(ctx context.Context, signals []catalog.Signal) error {
	sc := r.p.scope
	sc.By = nil
	for _, s := range signals {
		q, err := catalog.ImpossiblePromQL(s, sc)
		if err != nil {
			return err
		}
		m, err := r.rangeQuery(ctx, q)
		if err != nil {
			return err
		}
		lo, hi, _ := catalog.ValueRange(s)
		effect := "left out of the sum"
		if catalog.PartitionAgg(s) == "avg" {
			effect = "left out of the average"
		}
		r.addFindings(sanity.ImpossibleValues(string(s), m, lo, hi, effect), string(s))
	}
	return nil
}

// frozenNotices looks, per target, for request gauges that stopped updating (sanity.Frozen):
// running, waiting and KV usage unchanged for frozenScrapes scrape intervals while no prompt
// token, generated token or finished request was counted in the rate window.
func (r *run) frozenNotices(ctx context.Context) error {
	sc := r.p.scope
	sc.By = []string{"target"}
	gauges := []catalog.Signal{catalog.RequestsRunning, catalog.RequestsWaiting, catalog.KVCacheUsage}
	activity := []catalog.Signal{catalog.PromptTokens, catalog.GenerationTokens, catalog.RequestsFinished}
	in := map[string]*sanity.FrozenInput{}
	target := func(labels map[string]string) *sanity.FrozenInput {
		t := labels["target"]
		if in[t] == nil {
			in[t] = &sanity.FrozenInput{Steps: r.steps, Gauges: map[string][]float64{},
				MinDuration: frozenScrapes * r.i.settings.ScrapeInterval}
		}
		return in[t]
	}
	for _, s := range gauges {
		q, err := catalog.GaugePromQL(s, sc, catalog.PartitionAgg(s))
		if err != nil {
			return err
		}
		m, err := r.rangeQuery(ctx, q)
		if err != nil {
			return err
		}
		vals, labels := analysis.Align(m, r.steps)
		for k, v := range vals {
			target(labels[k]).Gauges[string(s)] = v
		}
	}
	for _, s := range activity {
		q, err := catalog.CounterRatePromQL(s, sc, r.p.window)
		if err != nil {
			return err
		}
		m, err := r.rangeQuery(ctx, q)
		if err != nil {
			return err
		}
		vals, labels := analysis.Align(m, r.steps)
		for k, v := range vals {
			t := target(labels[k])
			t.Activity = append(t.Activity, v)
		}
	}
	for _, t := range slices.Sorted(maps.Keys(in)) {
		for _, span := range sanity.Frozen(*in[t]) {
			r.notes.Add(analysis.Warning, span.Text(t))
		}
	}
	return nil
}

// histogramNotices adds a Warning for each group whose histogram contradicts itself
// (sanity.HistogramChecks): _count against the +Inf bucket, the mean against what the bucket
// counts allow. The quantiles are computed all the same.
func (r *run) histogramNotices(in latency.Input, count model.Matrix) {
	fs := sanity.HistogramChecks(string(in.Stage), in.Buckets, in.Sum, count, r.steps)
	for k, f := range fs {
		if k == maxFindings {
			r.notes.Add(analysis.Warning, fmt.Sprintf("%s: %d more groups have inconsistent histograms", in.Stage, len(fs)-maxFindings))
			return
		}
		r.notes.Add(analysis.Warning, f.Text())
	}
}

// leaveOutBackwards finds the stored series of counter signal s (in the query's scope) that
// went backwards without a restart during the range (sanity.BackwardsAt), names each in a
// notice, and leaves it out of agg, the signal's aggregated rate (catalog.CounterRatePromQL
// with the same scope, window and extraBy), in the windows that contain the backwards step.
// Candidates are found in PromQL first (resets() > 0 over the range), so a clean history
// costs one instant query per selector.
func (r *run) leaveOutBackwards(ctx context.Context, s catalog.Signal, sc catalog.Scope, window time.Duration, agg model.Matrix, extraBy ...string) error {
	sels, err := catalog.CounterScanSelectors(s, sc)
	if err != nil {
		return err
	}
	rng := "[" + model.Duration(r.p.end.Sub(r.p.start)+window+r.i.settings.ScrapeInterval).String() + "]"
	var findings []sanity.Finding
	for _, sel := range sels {
		cands, err := r.instantQuery(ctx, sel+" and (resets("+sel+rng+") > 0)", r.p.end)
		if err != nil {
			return err
		}
		for _, c := range cands {
			exact := exactSelector(c.Metric)
			v, err := r.i.querier.Query(ctx, exact+rng, r.p.end)
			if err != nil {
				return fmt.Errorf("PromQL %s: %w", exact+rng, err)
			}
			raw, ok := v.(model.Matrix)
			if !ok {
				continue
			}
			for _, ss := range raw {
				at := sanity.BackwardsAt(ss)
				if len(at) == 0 {
					continue
				}
				findings = append(findings, sanity.CounterBackwards(string(s), model.Matrix{ss}, "left out of the rate in the windows that contain it")...)
				labels := map[string]string{}
				for k, lv := range ss.Metric {
					labels[string(k)] = string(lv)
				}
				q, err := catalog.SeriesRatePromQL(s, labels, sc, window, extraBy...)
				if err != nil {
					return err
				}
				sub, err := r.rangeQuery(ctx, q)
				if err != nil {
					return err
				}
				sanity.LeaveOut(agg, sub, at, window)
			}
		}
	}
	r.addFindings(findings, string(s))
	return nil
}

// exactSelector renders a series' full label set as a PromQL selector.
func exactSelector(m model.Metric) string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(m)) {
		if k == model.MetricNameLabel {
			continue
		}
		parts = append(parts, string(k)+"="+strconv.Quote(string(m[k])))
	}
	return string(m[model.MetricNameLabel]) + "{" + strings.Join(parts, ", ") + "}"
}
