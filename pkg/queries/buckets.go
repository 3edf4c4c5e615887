package queries

import (
	"context"
	"fmt"
	"math"
	"slices"
	"time"

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

// bucketsAsk is what a buckets query places: its stages, its quantiles, and per stage the
// profile's latency thresholds.
type bucketsAsk struct {
	stages     []catalog.Signal
	quantiles  []float64
	thresholds map[string][]float64
}

func (q *Buckets) validate(s *settings.Settings) error {
	_, err := q.ask(s)
	return err
}

// ask parses the query's stages (default the profile's objective stages, else ttft, itl and
// e2e), thresholds and stats (default p50, p90, p99: quantiles only).
func (q *Buckets) ask(s *settings.Settings) (bucketsAsk, error) {
	a := bucketsAsk{thresholds: map[string][]float64{}}
	var def []catalog.Signal
	if q.Profile != "" {
		pr, ok := s.Profile(q.Profile)
		if !ok {
			return a, badQueryf("profile: %q is not an SLO profile of this data source", q.Profile)
		}
		for _, o := range pr.Objectives {
			if o.Kind != settings.KindLatency {
				continue
			}
			if !slices.Contains(def, catalog.Signal(o.Signal)) {
				def = append(def, catalog.Signal(o.Signal))
			}
			a.thresholds[o.Signal] = append(a.thresholds[o.Signal], o.Threshold)
		}
	}
	if len(def) == 0 {
		def = []catalog.Signal{catalog.TTFT, catalog.ITL, catalog.E2E}
	}
	var err error
	if a.stages, err = parseStages(q.Stages, def); err != nil {
		return a, err
	}
	for _, t := range q.Thresholds {
		if !(t > 0) || math.IsInf(t, 0) {
			return a, badQueryf("thresholds: %v is not a positive number of seconds", t)
		}
	}
	statNames := q.Stats
	if len(statNames) == 0 {
		statNames = []string{"p50", "p90", "p99"}
	}
	for _, s := range statNames {
		st, err := latency.ParseStat(s)
		if err != nil {
			return a, badQueryf("stats: %v", err)
		}
		if st.IsMean() {
			return a, badQueryf("stats: the buckets query places quantiles (p50, p99, …), not the mean")
		}
		a.quantiles = append(a.quantiles, st.Quantile)
	}
	return a, nil
}

// runBuckets answers the buckets query: for each latency stage (stages;
// default the profile's objective stages, else ttft, itl and e2e), each
// quantile (stats, default p50, p90, p99) and each threshold (thresholds,
// plus the profile's thresholds on that stage), the bucket the value falls
// in over the whole range, its width relative to the value, clamping, and
// the extra bounds that would bring the error under 10 %, as the JSON of
// vLLM's --custom-histogram-buckets.
func runBuckets(ctx context.Context, env *fetch.Env, p fetch.Plan, q *Buckets) (data.Frames, error) {
	a, _ := q.ask(env.Settings) // validated while decoding
	r := fetch.NewRun(ctx, env, p)
	r.ScopeNotices(ctx, a.stages)
	window := p.To.Sub(p.From)
	if window < p.Window {
		window = p.Window
	}
	vs, err := r.HistogramsAt(ctx, a.stages, window, p.To)
	if err != nil {
		return nil, err
	}
	var rows []buckets.Row
	for k, s := range a.stages {
		ths := append(slices.Clone(q.Thresholds), a.thresholds[string(s)]...)
		slices.Sort(ths)
		rows = append(rows, bucketRows(r, s, vs[k], a.quantiles, slices.Compact(ths), window)...)
	}
	r.Notes.Add(analysis.Info, "relative width = (bucket upper − bucket lower) / value: the worst-case error of a value read from that bucket; extra bounds bring it under 10 % (a threshold made a bound is exact). custom_histogram_buckets is the value for vLLM's --custom-histogram-buckets; the option replaces the family's whole list")
	return frames.BucketsTable(rows, meta(r, nil)), nil
}

// bucketRows places each quantile and threshold in the bucket layout of each group of stage
// s (buckets.ForQuantile, ForThreshold), leaving out groups whose histogram its own _sum or
// _count disproves (sanity.JudgeWindow) with the verdict's sentence.
func bucketRows(r *fetch.Run, s catalog.Signal, v fetch.StageVectors, qs, ths []float64, window time.Duration) []buckets.Row {
	verdicts := sanity.JudgeWindow(string(s), v.Buckets, v.Sums, v.Counts, r.Plan.To)
	groups, bs, _ := slo.BucketVector(v.Buckets)
	if len(groups) == 0 {
		r.Notes.Add(analysis.Info, fmt.Sprintf("%s: no histogram data in scope over %s", s, model.Duration(window)))
		return nil
	}
	var rows []buckets.Row
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
	return rows
}
