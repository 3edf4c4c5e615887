package fetch

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/prometheus/common/model"

	"github.com/inferscope/inferscope-llm-datasource/pkg/analysis"
	"github.com/inferscope/inferscope-llm-datasource/pkg/analysis/sanity"
	"github.com/inferscope/inferscope-llm-datasource/pkg/catalog"
)

// effectNonFiniteRate says what a counter's rate does with a NaN or infinite sample.
const effectNonFiniteRate = "left out of the rate in the windows that contain it"

// maxFindings caps the notices of one check per signal; the rest are counted in one line.
const maxFindings = 5

// frozenScrapes is how many scrape intervals the request gauges must stay unchanged, with no
// request arriving, producing a token or finishing, before saturation calls them frozen.
const frozenScrapes = 10

// Skipped reports a sanity check that could not run (a PromQL error, a sample limit): the
// query's own result stands, with an Info notice saying which check is missing and why.
func (r *Run) Skipped(what string, err error) {
	r.Notes.Add(analysis.Info, fmt.Sprintf("%s was Skipped: %v", what, err))
}

// addFindings turns findings into Warning notices, at most maxFindings per call.
func (r *Run) addFindings(fs []sanity.Finding, signal string) {
	for k, f := range fs {
		if k == maxFindings {
			r.Notes.Add(analysis.Warning, fmt.Sprintf("%s: %d more series with values that cannot be true were left out", signal, len(fs)-maxFindings))
			return
		}
		r.Notes.Add(analysis.Warning, f.Text())
	}
}

// ImpossibleNotices names every gauge sample of the signals that the aggregates left out
// because it cannot be true (catalog.ValueRange): target, labels, value and time.
func (r *Run) ImpossibleNotices(ctx context.Context, signals []catalog.Signal) error {
	sc := r.Plan.Scope
	sc.By = nil
	for _, s := range signals {
		q, err := catalog.ImpossiblePromQL(s, sc)
		if err != nil {
			return err
		}
		m, err := r.Range(ctx, q)
		if err != nil {
			return err
		}
		lo, hi, _ := catalog.ValueRange(s)
		r.addFindings(sanity.ImpossibleValues(string(s), m, lo, hi, impossibleEffect(s)), string(s))
	}
	return nil
}

// impossibleEffect says what a gauge signal's aggregate does with a sample that cannot be
// true: left out of the sum (counts) or of the average (ratios), as catalog.PartitionAgg.
func impossibleEffect(s catalog.Signal) string {
	if catalog.PartitionAgg(s) == "avg" {
		return "left out of the average"
	}
	return "left out of the sum"
}

// GPUImpossibleNotices names, per signal, the GPU readings that cannot be true
// (catalog.GPUImpossiblePromQL's result: one series per GPU and signal, the signal in the
// label "signal"), each left out of that GPU's series. Signals in sorted order.
func (r *Run) GPUImpossibleNotices(m model.Matrix) {
	per := map[string]model.Matrix{}
	for _, s := range m {
		sig := string(s.Metric["signal"])
		met := s.Metric.Clone()
		delete(met, "signal")
		per[sig] = append(per[sig], &model.SampleStream{Metric: met, Values: s.Values})
	}
	for _, sig := range slices.Sorted(maps.Keys(per)) {
		lo, hi, _ := catalog.ValueRange(catalog.Signal(sig))
		r.addFindings(sanity.ImpossibleValues(sig, per[sig], lo, hi, "left out of that GPU's series"), sig)
	}
}

// FrozenNotices looks, per target, for request gauges that stopped updating (sanity.Frozen):
// running, waiting and KV usage unchanged for frozenScrapes scrape intervals while no prompt
// token, generated token, finished request or (where the engine exports it) decode step was
// counted in the rate window.
func (r *Run) FrozenNotices(ctx context.Context) error {
	sc := r.Plan.Scope
	sc.By = []string{"target"}
	gauges := []catalog.Signal{catalog.RequestsRunning, catalog.RequestsWaiting, catalog.KVCacheUsage}
	activity := []catalog.Signal{catalog.PromptTokens, catalog.GenerationTokens, catalog.RequestsFinished}
	if r.Exporting(ctx, catalog.DecodeSteps) {
		// llama.cpp: tokens are counted at a request's first token and end, decode steps on
		// every step; gauges are frozen only while every activity counter is still.
		activity = append(activity, catalog.DecodeSteps)
	}
	in := map[string]*sanity.FrozenInput{}
	target := func(labels map[string]string) *sanity.FrozenInput {
		t := labels["target"]
		if in[t] == nil {
			in[t] = &sanity.FrozenInput{Steps: r.Steps, Gauges: map[string][]float64{},
				MinDuration: frozenScrapes * r.Env.Settings.ScrapeInterval}
		}
		return in[t]
	}
	for _, s := range gauges {
		q, err := catalog.GaugePromQL(s, sc, catalog.PartitionAgg(s))
		if err != nil {
			return err
		}
		m, err := r.Range(ctx, q)
		if err != nil {
			return err
		}
		vals, labels := analysis.Align(m, r.Steps)
		for k, v := range vals {
			target(labels[k]).Gauges[string(s)] = v
		}
	}
	for _, s := range activity {
		q, err := catalog.CounterRatePromQL(s, sc, r.Plan.Window)
		if err != nil {
			return err
		}
		m, err := r.Range(ctx, q)
		if err != nil {
			return err
		}
		vals, labels := analysis.Align(m, r.Steps)
		for k, v := range vals {
			t := target(labels[k])
			t.Activity = append(t.Activity, v)
		}
	}
	for _, t := range slices.Sorted(maps.Keys(in)) {
		for _, span := range sanity.Frozen(*in[t]) {
			r.Notes.Add(analysis.Warning, span.Text(t))
		}
	}
	return nil
}

// Verdicts is the one sanity verdict of a stage's histogram per group and step
// (sanity.JudgeHistogram over the delta() increases of its buckets, _sum and _count, windows
// holding a reset left out): where it contradicts itself, latency.ApplyVerdicts blanks the
// quantiles and bounds, and histogramNotices says so with the verdict's sentence.
// A stage from LatencyStage is judged once (its Checks are not changed after it returns); the
// verdicts returned are shared by the calls, read-only.
func (r *Run) Verdicts(s Stage) sanity.Verdicts {
	judge := func() sanity.Verdicts {
		in := s.Checks
		return sanity.JudgeHistogram(string(in.Stage), in.Buckets, in.Sum, in.Count, r.Steps)
	}
	if s.verdicts == nil {
		return judge()
	}
	s.verdicts.once.Do(func() { s.verdicts.v = judge() })
	return s.verdicts.v
}

// histogramNotices adds a Warning for each group whose histogram contradicts itself
// (Verdicts): _count against the +Inf bucket, the mean against what the bucket counts allow;
// no quantile or bound is drawn there.
func (r *Run) histogramNotices(s Stage) {
	texts := r.Verdicts(s).Sentences()
	for k, t := range texts {
		if k == maxFindings {
			r.Notes.Add(analysis.Warning, fmt.Sprintf("%s: %d more groups have histograms that contradict themselves", s.Checks.Stage, len(texts)-maxFindings))
			return
		}
		r.Notes.Add(analysis.Warning, t)
	}
}

// LeaveOutBackwards finds the stored series of counter signal s (in the query's scope) that
// went backwards without a restart during the range (sanity.BackwardsAt), names each in a
// notice, and leaves it out of agg, the signal's aggregated rate (catalog.CounterRatePromQL
// with the same scope, window and extraBy), in the windows that contain the backwards step.
// Candidates are found in PromQL first (resets() > 0 over the range), so a clean history
// costs one instant query per selector.
func (r *Run) LeaveOutBackwards(ctx context.Context, s catalog.Signal, sc catalog.Scope, window time.Duration, agg model.Matrix, extraBy ...string) error {
	sels, err := catalog.CounterScanSelectors(s, sc)
	if err != nil {
		return err
	}
	rngD := r.Plan.End.Sub(r.Plan.Start) + window + r.Env.Settings.ScrapeInterval
	rng := "[" + model.Duration(rngD).String() + "]"
	var findings []sanity.Finding
	for _, sel := range sels {
		cands, err := r.Instant(ctx, catalog.ResetCandidatesPromQL(sel, rngD), r.Plan.End)
		if err != nil {
			return err
		}
		for _, c := range cands {
			exact := catalog.ExactSelector(c.Metric)
			v, err := r.Exec(ctx, Query{PromQL: exact + rng, To: r.Plan.End, Unrecorded: true})
			if err != nil {
				return err
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
				sub, err := r.Range(ctx, q)
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

// CounterRate fetches the aggregated rate of counter signal s (catalog.CounterRatePromQL). A
// NaN or ±Inf in the result means a stored series held such samples: they are named
// (nonFiniteNotices) and the rate is fetched again with the finite filters
// (catalog.Scope.Finite), which leave each series out of the windows it spoils. It returns the
// rate and the scope it was built with.
func (r *Run) CounterRate(ctx context.Context, s catalog.Signal, sc catalog.Scope, window time.Duration, extraBy ...string) (model.Matrix, catalog.Scope, error) {
	q, err := catalog.CounterRatePromQL(s, sc, window, extraBy...)
	if err != nil {
		return nil, sc, err
	}
	m, err := r.Range(ctx, q)
	if err != nil || !hasNonFinite(m) {
		return m, sc, err
	}
	if err := r.nonFiniteNotices(ctx, s, sc, window, effectNonFiniteRate); err != nil {
		r.Skipped("the check for NaN and infinite "+string(s)+" samples", err)
	}
	sc.Finite = true
	if q, err = catalog.CounterRatePromQL(s, sc, window, extraBy...); err != nil {
		return nil, sc, err
	}
	m, err = r.Range(ctx, q)
	return m, sc, err
}

// nonFiniteNotices names the stored series of signal s (in sc) that hold NaN or ±Inf samples
// in the samples the query's windows read (catalog.NonFiniteScanPromQL finds them with one
// instant query, then their raw samples are scanned by sanity.NonFinite). The aggregates have
// already left them out (catalog's finite filters); effect says how. Counters are named by
// signal, a histogram's series by stored metric name (le shows which bucket).
func (r *Run) nonFiniteNotices(ctx context.Context, s catalog.Signal, sc catalog.Scope, window time.Duration, effect string) error {
	fs, err := r.nonFiniteScan(ctx, s, sc, window, effect)
	if err != nil {
		return err
	}
	r.addFindings(fs, string(s))
	return nil
}

// nonFiniteScan is nonFiniteNotices without the notices (safe to call concurrently): the
// findings, for the caller to add.
func (r *Run) nonFiniteScan(ctx context.Context, s catalog.Signal, sc catalog.Scope, window time.Duration, effect string) ([]sanity.Finding, error) {
	rng := model.Duration(r.Plan.End.Sub(r.Plan.Start) + window + r.Env.Settings.ScrapeInterval)
	q, err := catalog.NonFiniteScanPromQL(s, sc, time.Duration(rng))
	if err != nil {
		return nil, err
	}
	cands, err := r.Instant(ctx, q, r.Plan.End)
	if err != nil {
		return nil, err
	}
	var findings []sanity.Finding
	for _, c := range cands {
		name := string(c.Metric[catalog.ScanMetricLabel])
		m := c.Metric.Clone()
		delete(m, catalog.ScanMetricLabel)
		m[model.MetricNameLabel] = model.LabelValue(name)
		exact := catalog.ExactSelector(m) + "[" + rng.String() + "]"
		v, err := r.Exec(ctx, Query{PromQL: exact, To: r.Plan.End, Unrecorded: true})
		if err != nil {
			return nil, err
		}
		raw, ok := v.(model.Matrix)
		if !ok {
			continue
		}
		label := string(s)
		if strings.HasSuffix(name, "_bucket") || strings.HasSuffix(name, "_sum") || strings.HasSuffix(name, "_count") {
			label = name
		}
		findings = append(findings, sanity.NonFinite(label, raw, effect)...)
	}
	return findings, nil
}

// backwardsHistogram is one stored histogram that went backwards without a restart: its
// target, its queries (catalog.HistogramSeriesPromQL, grouped as the latency query's) and the
// times of its backwards steps.
type backwardsHistogram struct {
	job string
	q   catalog.HistogramQueries
	at  []time.Time
}

// histogramBackwards finds the stored histograms of stage (in the query's scope) with a bucket
// or _count that went backwards without a restart in the samples the query reads
// (candidates: catalog.HistogramResetScanPromQL, one instant query; then each candidate
// histogram's raw _bucket and _count samples are judged by sanity.HistogramBackwards), names
// each backwards series in a finding, and returns the histograms with their queries grouped
// by the scope's groups plus extraBy (with the finite filters where finite). Safe to call concurrently: the caller adds the findings.
func (r *Run) histogramBackwards(ctx context.Context, stage catalog.Signal, window time.Duration, finite bool, extraBy ...string) ([]backwardsHistogram, []sanity.Finding, error) {
	rng := model.Duration(r.Plan.End.Sub(r.Plan.Start) + window + r.Env.Settings.ScrapeInterval)
	sc := r.Plan.Scope
	sc.By = nil
	q, err := catalog.HistogramResetScanPromQL(stage, sc, time.Duration(rng))
	if err != nil {
		return nil, nil, err
	}
	cands, err := r.Instant(ctx, q, r.Plan.End)
	if err != nil || len(cands) == 0 {
		return nil, nil, err
	}
	// One candidate per stored histogram: its metric name (no suffix) and labels without le.
	type set struct {
		name   string
		labels model.Metric
	}
	sets := map[string]set{}
	for _, c := range cands {
		name := string(c.Metric[catalog.ScanMetricLabel])
		name = strings.TrimSuffix(strings.TrimSuffix(name, "_bucket"), "_count")
		l := c.Metric.Clone()
		delete(l, catalog.ScanMetricLabel)
		delete(l, model.BucketLabel)
		delete(l, model.MetricNameLabel)
		sets[name+l.String()] = set{name, l}
	}
	var out []backwardsHistogram
	var findings []sanity.Finding
	effect := "the whole histogram left out of the " + string(stage) + " quantiles and mean in the windows that contain it"
	for _, k := range slices.Sorted(maps.Keys(sets)) {
		st := sets[k]
		sel := catalog.HistogramRawSelector(st.name, st.labels, time.Duration(rng))
		v, err := r.Exec(ctx, Query{PromQL: sel, To: r.Plan.End, Unrecorded: true})
		if err != nil {
			return nil, nil, err
		}
		raw, _ := v.(model.Matrix)
		var own model.Matrix
		for _, s := range raw {
			l := s.Metric.Clone()
			delete(l, model.BucketLabel)
			delete(l, model.MetricNameLabel)
			if l.Equal(st.labels) {
				own = append(own, s)
			}
		}
		fs, at := sanity.HistogramBackwards(string(stage), own, effect)
		if len(at) == 0 {
			continue
		}
		findings = append(findings, fs...)
		labels := map[string]string{}
		for ln, lv := range st.labels {
			labels[string(ln)] = string(lv)
		}
		hsc := r.Plan.Scope
		hsc.Finite = finite
		hq, err := catalog.HistogramSeriesPromQL(stage, st.name, labels, hsc, window, extraBy...)
		if err != nil {
			return nil, nil, err
		}
		out = append(out, backwardsHistogram{job: labels["job"], q: hq, at: at})
	}
	return out, findings, nil
}

// leaveOutHistogram subtracts one backwards histogram's share (b.q's increases, rates, sums and
// counts) from the latency query's matrices of the same shape, in order: bucket increases,
// bucket rates (may be nil when not fetched), _sum rate, _count rate, _sum increase, _count
// increase; in the windows that contain one of its backwards steps (sanity.LeaveOut).
func (r *Run) leaveOutHistogram(ctx context.Context, b backwardsHistogram, window time.Duration, aggs []model.Matrix) error {
	qs := []string{b.q.Increases, b.q.Buckets, b.q.Sum, b.q.Count, b.q.SumIncrease, b.q.CountIncrease}
	var idx []int
	var batch []string
	for i, agg := range aggs {
		if len(agg) > 0 {
			idx, batch = append(idx, i), append(batch, qs[i])
		}
	}
	// One batch: in embedded mode the histogram's samples are read once (Run.Ranges).
	ms, err := r.Ranges(ctx, batch)
	if err != nil {
		return err
	}
	for k, i := range idx {
		sanity.LeaveOut(aggs[i], ms[k], b.at, window)
	}
	return nil
}
