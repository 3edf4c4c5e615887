package plugin

import (
	"context"
	"fmt"
	"maps"
	"slices"

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
