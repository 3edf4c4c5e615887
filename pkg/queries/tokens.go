package queries

import (
	"context"
	"maps"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/data"
	"github.com/prometheus/common/model"

	"github.com/inferscope/inferscope-llm-datasource/pkg/analysis"
	"github.com/inferscope/inferscope-llm-datasource/pkg/analysis/latency"
	"github.com/inferscope/inferscope-llm-datasource/pkg/catalog"
	"github.com/inferscope/inferscope-llm-datasource/pkg/fetch"
	"github.com/inferscope/inferscope-llm-datasource/pkg/frames"
	"github.com/inferscope/inferscope-llm-datasource/pkg/hist"
	"github.com/inferscope/inferscope-llm-datasource/pkg/settings"
)

// Tokens is the tokens query (issue 33): the token-count histograms of an engine, per group.
// Signals are iteration_tokens (tokens per engine step, vllm:iteration_tokens_total),
// prompt_length and generation_length (prompt and generated tokens per finished request,
// vllm:request_prompt_tokens and vllm:request_generation_tokens); empty: all three.
// Format timeseries (default) returns the asked statistics of each (stats: mean, p50, p90,
// p95, p99; default mean, p50, p99), in tokens; heatmap returns one heatmap-rows frame per
// signal and group (Grafana's heatmap panel, cell layout le), each bucket field valued in
// observations per second (requests/s for the lengths, engine steps/s for iteration_tokens).
type Tokens struct {
	Common
	// Signals are the histograms to read (tokensSignals); empty: all.
	Signals []string `json:"signals,omitempty"`
	// Stats are mean and quantiles p50, p90, p95, p99 (timeseries only); empty: mean, p50, p99.
	Stats []string `json:"stats,omitempty"`
	// Format is timeseries (default) or heatmap.
	Format string `json:"format,omitempty"`
}

func (q *Tokens) lists() []namedList {
	return []namedList{{"signals", &q.Signals}, {"stats", &q.Stats}}
}

// tokensSignals are the histograms of the tokens query, in display order.
var tokensSignals = []catalog.Signal{catalog.IterationTokens, catalog.PromptLength, catalog.GenerationLength}

// tokensStats are the statistics of the tokens query's timeseries format.
var tokensStats = []string{"mean", "p50", "p90", "p95", "p99"}

var tokensEnums = map[string][]string{"signals": signalNames(tokensSignals), "stats": tokensStats, "format": {"timeseries", "heatmap"}}

// tokensNames are the series names of each signal, followed by the statistic.
var tokensNames = map[catalog.Signal]string{
	catalog.IterationTokens:  "tokens per step",
	catalog.PromptLength:     "prompt tokens per request",
	catalog.GenerationLength: "generated tokens per request",
}

func (q *Tokens) validate(*settings.Settings) error {
	if q.Format != "" && q.Format != "timeseries" && q.Format != "heatmap" {
		return badQueryf("format: %q is neither timeseries nor heatmap", q.Format)
	}
	for _, s := range q.Signals {
		if !slices.Contains(tokensEnums["signals"], s) {
			return badQueryf("signals: %q is not one of %s", s, strings.Join(tokensEnums["signals"], ", "))
		}
	}
	for _, s := range q.Stats {
		if !slices.Contains(tokensStats, s) {
			return badQueryf("stats: %q is not one of %s", s, strings.Join(tokensStats, ", "))
		}
	}
	return nil
}

// runTokens reads each asked histogram's bucket rates (and, for the mean, its _sum and _count
// rates) per group with catalog.HistogramPromQL, and returns per group and step: the mean
// (rate of _sum / rate of _count, hist.Mean) and the quantiles (hist.Quantile, Prometheus's
// histogram_quantile), or with format heatmap the observations per second of each bucket
// (latency.HeatmapRows: the cumulative rates de-accumulated).
func runTokens(ctx context.Context, env *fetch.Env, p fetch.Plan, q *Tokens) (data.Frames, error) {
	sigs := tokensSignals
	if len(q.Signals) > 0 {
		sigs = nil
		for _, s := range q.Signals {
			sigs = append(sigs, catalog.Signal(s))
		}
	}
	stats := q.Stats
	if len(stats) == 0 {
		stats = []string{"mean", "p50", "p99"}
	}
	r := fetch.NewRun(ctx, env, p)
	r.ScopeNotices(ctx, sigs)
	if err := r.ChangeNotices(ctx); err != nil {
		return nil, err
	}
	reads := make([]tokensRead, len(sigs))
	err := r.Parallel(len(sigs), func(k int) error {
		hq, err := catalog.HistogramPromQL(sigs[k], p.Scope, p.Window)
		if err != nil {
			return err
		}
		if reads[k].buckets, err = r.Range(ctx, hq.Buckets); err != nil {
			return err
		}
		if q.Format == "heatmap" || !slices.Contains(stats, "mean") {
			return nil
		}
		if reads[k].sum, err = r.Range(ctx, hq.Sum); err != nil {
			return err
		}
		reads[k].count, err = r.Range(ctx, hq.Count)
		return err
	})
	if err != nil {
		return nil, err
	}
	if q.Format == "heatmap" {
		return tokensHeatmap(r, sigs, reads), nil
	}
	var series []analysis.Series
	for k, s := range sigs {
		series = append(series, tokenStats(s, stats, reads[k].buckets, reads[k].sum, reads[k].count, r.Steps)...)
	}
	return frames.TimeSeries(series, meta(r, nil)), nil
}

// tokensRead is one token histogram's bucket rates and, for the mean, its _sum and _count
// rates.
type tokensRead struct{ buckets, sum, count model.Matrix }

// tokensHeatmap is the heatmap format: one heatmap-rows frame per signal and group, each
// bucket in observations per second (latency.HeatmapRows).
func tokensHeatmap(r *fetch.Run, sigs []catalog.Signal, reads []tokensRead) data.Frames {
	var names, units []string
	var hs []latency.Heatmap
	for k, s := range sigs {
		groups := map[string]model.Matrix{}
		for _, ss := range reads[k].buckets {
			key, _ := analysis.Key(ss.Metric, model.BucketLabel)
			groups[key] = append(groups[key], ss)
		}
		for _, key := range slices.Sorted(maps.Keys(groups)) {
			_, l := analysis.Key(groups[key][0].Metric, model.BucketLabel)
			names = append(names, heatmapName(string(s), l))
			hs = append(hs, latency.HeatmapRows([]model.Matrix{groups[key]}, r.Steps))
			unit := "reqps" // requests finished per second in the bucket
			if s == catalog.IterationTokens {
				unit = "short" // engine steps per second in the bucket
			}
			units = append(units, unit)
		}
	}
	return frames.HeatmapRowsUnits(names, hs, units, meta(r, nil))
}

// heatmapName names a heatmap frame by its signal and group labels, "prompt_length" alone
// without groups, else "prompt_length · target=a, model=m" (labels in name order).
func heatmapName(signal string, l map[string]string) string {
	if len(l) == 0 {
		return signal
	}
	parts := make([]string, 0, len(l))
	for _, k := range slices.Sorted(maps.Keys(l)) {
		parts = append(parts, k+"="+l[k])
	}
	return signal + " · " + strings.Join(parts, ", ")
}

// tokenGroup is one group's bucket rates: its labels and, per upper bound, the cumulative
// rate at each step (the series of one bound added up).
type tokenGroup struct {
	labels map[string]string
	bs     map[float64][]float64
}

// tokenGroups aligns bucket rates to the steps and groups them by their labels without le,
// adding up series of the same group and bound (NaN only where none has a value).
func tokenGroups(buckets model.Matrix, steps []time.Time) map[string]*tokenGroup {
	groups := map[string]*tokenGroup{}
	for _, ss := range buckets {
		le, err := hist.ParseLe(string(ss.Metric[model.BucketLabel]))
		if err != nil {
			continue
		}
		vals, labels := analysis.Align(model.Matrix{ss}, steps, model.BucketLabel)
		for key, v := range vals {
			g := groups[key]
			if g == nil {
				g = &tokenGroup{labels: labels[key], bs: map[float64][]float64{}}
				groups[key] = g
			}
			if prev, ok := g.bs[le]; ok {
				for i := range prev {
					if !math.IsNaN(v[i]) {
						if math.IsNaN(prev[i]) {
							prev[i] = 0
						}
						prev[i] += v[i]
					}
				}
				continue
			}
			g.bs[le] = v
		}
	}
	return groups
}

// tokenStats returns, per group of the bucket rates, one series per statistic named
// "<tokensNames[s]> <stat>", labelled signal and stat, unit short (tokens): the quantiles
// from the buckets at each step (NaN where the window saw no observation), the mean from
// the _sum and _count rates.
func tokenStats(s catalog.Signal, stats []string, buckets, sum, count model.Matrix, steps []time.Time) []analysis.Series {
	groups := tokenGroups(buckets, steps)
	sumV, _ := analysis.Align(sum, steps)
	cntV, _ := analysis.Align(count, steps)
	name := tokensNames[s]
	var out []analysis.Series
	for _, key := range slices.Sorted(maps.Keys(groups)) {
		g := groups[key]
		for _, st := range stats {
			var vals []float64
			if st == "mean" {
				vals = tokenMean(sumV[key], cntV[key], len(steps))
			} else {
				vals = tokenQuantile(g, st, len(steps))
			}
			l := maps.Clone(g.labels)
			l["signal"], l["stat"] = string(s), st
			out = append(out, analysis.Series{Name: name + " " + st, Labels: l, Unit: "short", Times: steps, Values: vals})
		}
	}
	return out
}

// nanValues returns n NaNs.
func nanValues(n int) []float64 {
	vals := make([]float64, n)
	for i := range vals {
		vals[i] = math.NaN()
	}
	return vals
}

// tokenMean is the mean at each of n steps from a group's aligned _sum and _count rates
// (hist.Mean); NaN throughout when either is missing.
func tokenMean(sv, cv []float64, n int) []float64 {
	vals := nanValues(n)
	if sv == nil || cv == nil {
		return vals
	}
	for i := range vals {
		vals[i] = hist.Mean(sv[i], cv[i])
	}
	return vals
}

// tokenQuantile is quantile stat ("p99") of a group's buckets at each of n steps
// (hist.Quantile over the bounds with a value at the step).
func tokenQuantile(g *tokenGroup, stat string, n int) []float64 {
	vals := nanValues(n)
	les := slices.Sorted(maps.Keys(g.bs))
	qv, _ := strconv.ParseFloat(strings.TrimPrefix(stat, "p"), 64)
	for i := range vals {
		b := make([]hist.Bucket, 0, len(les))
		for _, le := range les {
			if c := g.bs[le][i]; !math.IsNaN(c) {
				b = append(b, hist.Bucket{UpperBound: le, Count: c})
			}
		}
		sort.Slice(b, func(x, y int) bool { return b[x].UpperBound < b[y].UpperBound })
		vals[i] = hist.Quantile(qv/100, b).Value
	}
	return vals
}
