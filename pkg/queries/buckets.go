package queries

import (
	"context"
	"fmt"
	"math"
	"slices"

	"github.com/grafana/grafana-plugin-sdk-go/data"
	"github.com/prometheus/common/model"

	"github.com/inferscope/inferscope-llm-datasource/pkg/analysis"
	"github.com/inferscope/inferscope-llm-datasource/pkg/analysis/buckets"
	"github.com/inferscope/inferscope-llm-datasource/pkg/analysis/latency"
	"github.com/inferscope/inferscope-llm-datasource/pkg/analysis/sanity"
	"github.com/inferscope/inferscope-llm-datasource/pkg/analysis/slo"
	"github.com/inferscope/inferscope-llm-datasource/pkg/catalog"
	"github.com/inferscope/inferscope-llm-datasource/pkg/fetch"
	"github.com/inferscope/inferscope-llm-datasource/pkg/frames"
	"github.com/inferscope/inferscope-llm-datasource/pkg/settings"
)

// Buckets is the buckets query: where quantiles and thresholds fall in each stage's bucket
// layout, with the bounds that would make them exact.
type Buckets struct {
	Common
	// Stages are latency stages; default the profile's objective stages, else ttft, itl, e2e.
	Stages []string `json:"stages,omitempty"`
	// Stats are quantiles (default p50, p90, p99).
	Stats []string `json:"stats,omitempty"`
	// Thresholds (seconds) to place in the bucket layout.
	Thresholds []float64 `json:"thresholds,omitempty"`
	// Profile adds the profile's latency thresholds.
	Profile string `json:"profile,omitempty"`
}

func (q *Buckets) lists() []namedList {
	return []namedList{{"stages", &q.Stages}, {"stats", &q.Stats}}
}

var bucketsEnums = map[string][]string{"stages": signalNames(catalog.LatencyStages)}

// runBuckets answers the buckets query: for each latency stage (stages;
// default the profile's objective stages, else ttft, itl and e2e), each
// quantile (stats, default p50, p90, p99) and each threshold (thresholds,
// plus the profile's thresholds on that stage), the bucket the value falls
// in over the whole range, its width relative to the value, clamping, and
// the extra bounds that would bring the error under 10 %, as the JSON of
// vLLM's --custom-histogram-buckets.
func runBuckets(ctx context.Context, env *fetch.Env, p fetch.Plan, q *Buckets) (data.Frames, error) {
	r := fetch.NewRun(ctx, env, p)
	thresholds := map[string][]float64{}
	var def []catalog.Signal
	if q.Profile != "" {
		pr, ok := env.Settings.Profile(q.Profile)
		if !ok {
			return nil, badQueryf("profile: %q is not an SLO profile of this data source", q.Profile)
		}
		for _, o := range pr.Objectives {
			if o.Kind != settings.KindLatency {
				continue
			}
			if !slices.Contains(def, catalog.Signal(o.Signal)) {
				def = append(def, catalog.Signal(o.Signal))
			}
			thresholds[o.Signal] = append(thresholds[o.Signal], o.Threshold)
		}
	}
	if len(def) == 0 {
		def = []catalog.Signal{catalog.TTFT, catalog.ITL, catalog.E2E}
	}
	stages, err := parseStages(q.Stages, def)
	if err != nil {
		return nil, err
	}
	for _, t := range q.Thresholds {
		if !(t > 0) || math.IsInf(t, 0) {
			return nil, badQueryf("thresholds: %v is not a positive number of seconds", t)
		}
	}
	statNames := q.Stats
	if len(statNames) == 0 {
		statNames = []string{"p50", "p90", "p99"}
	}
	var qs []float64
	for _, s := range statNames {
		st, err := latency.ParseStat(s)
		if err != nil {
			return nil, badQueryf("stats: %v", err)
		}
		if st.IsMean() {
			return nil, badQueryf("stats: the buckets query places quantiles (p50, p99, …), not the mean")
		}
		qs = append(qs, st.Quantile)
	}
	r.ScopeNotices(ctx, stages)
	window := p.To.Sub(p.From)
	if window < p.Window {
		window = p.Window
	}
	queries := make([][]string, len(stages))
	// sums and counts: each stage's _sum and _count rates over the window, for the histogram's
	// sanity verdict (no advice is drawn from buckets their own _sum or _count disprove).
	sums, counts := make([][]string, len(stages)), make([][]string, len(stages))
	var all []string
	for k, s := range stages {
		hqs, err := r.HistogramQueries(ctx, s, window)
		if err != nil {
			return nil, err
		}
		for _, hq := range hqs {
			queries[k] = append(queries[k], hq.Buckets)
			sums[k] = append(sums[k], hq.Sum)
			counts[k] = append(counts[k], hq.Count)
		}
		all = append(all, queries[k]...)
		all = append(append(all, sums[k]...), counts[k]...)
	}
	vs, err := r.InstantAll(ctx, all, p.To)
	if err != nil {
		return nil, err
	}
	var rows []buckets.Row
	for k, s := range stages {
		var v model.Vector
		for _, q := range queries[k] {
			v = append(v, vs[q]...)
		}
		var sv, cv model.Vector
		for _, q := range sums[k] {
			sv = append(sv, vs[q]...)
		}
		for _, q := range counts[k] {
			cv = append(cv, vs[q]...)
		}
		verdicts := sanity.JudgeWindow(string(s), v, sv, cv, p.To)
		groups, bs, _ := slo.BucketVector(v)
		if len(groups) == 0 {
			r.Notes.Add(analysis.Info, fmt.Sprintf("%s: no histogram data in scope over %s", s, model.Duration(window)))
			continue
		}
		ths := append(slices.Clone(q.Thresholds), thresholds[string(s)]...)
		slices.Sort(ths)
		ths = slices.Compact(ths)
		for _, g := range groups {
			if vd, ok := verdicts.Find(g.Labels); ok && vd.Disproved(0) {
				r.Notes.Add(analysis.Warning, vd.Sentence())
				continue
			}
			b := bs[g.Key]
			add := func(a buckets.Advice) {
				rows = append(rows, buckets.Row{Signal: string(s), Group: g.Labels, Advice: a,
					CustomBuckets: buckets.CustomBucketsJSON(buckets.VLLMFamily(string(s)), a.Bounds)})
			}
			for _, q := range qs {
				a := buckets.ForQuantile(q, b)
				if math.IsNaN(a.Value) {
					r.Notes.Add(analysis.Info, fmt.Sprintf("%s%s: no requests over %s, no quantile to place", s, describeGroup(g.Labels), model.Duration(window)))
					continue
				}
				add(a)
			}
			for _, t := range ths {
				add(buckets.ForThreshold(t, b))
			}
		}
	}
	r.Notes.Add(analysis.Info, "relative width = (bucket upper − bucket lower) / value: the worst-case error of a value read from that bucket; extra bounds bring it under 10 % (a threshold made a bound is exact). custom_histogram_buckets is the value for vLLM's --custom-histogram-buckets; the option replaces the family's whole list")
	return frames.BucketsTable(rows, meta(r, nil)), nil
}
