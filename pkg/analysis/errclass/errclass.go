// Package errclass turns a gateway's failed-request rates into the five error classes
// (catalog.ErrorClasses) and their shares of requests, per group (target, model, provider),
// beside each class's allowed share. It is pure: PromQL results in, series and rows out.
package errclass

import (
	"maps"
	"math"
	"slices"
	"time"

	"github.com/prometheus/common/model"

	"github.com/inferscope/inferscope-llm-datasource/pkg/analysis"
	"github.com/inferscope/inferscope-llm-datasource/pkg/catalog"
	"github.com/inferscope/inferscope-llm-datasource/pkg/hist"
)

// ClassLabel is the label of a class on the output series.
const ClassLabel = "error_class"

// Input holds the rates of one errors query on the step grid's instants.
type Input struct {
	// Errors are failed requests/s by the groups and catalog.ErrorLabels (CounterRatePromQL of
	// catalog.RequestErrors).
	Errors model.Matrix
	// Requests are requests/s by the groups (catalog.RequestsFinished), failures included.
	Requests model.Matrix
	// Spend is the gateway's spend/s (catalog.GatewaySpend) by the groups; Tokens are prompt
	// plus generation tokens/s by the groups. Either may be empty.
	Spend, Tokens model.Matrix
	// TTFT and ITL are bucket rates by le and the groups (HistogramPromQL Buckets); either may
	// be empty. The table reads their median at the last step.
	TTFT, ITL model.Matrix
	// Classes are the classes to show, in catalog.ErrorClasses order; Allowed their allowed
	// shares (0..1).
	Classes []catalog.ErrorClass
	Allowed map[catalog.ErrorClass]float64
}

// group is one group's aligned values.
type group struct {
	labels   map[string]string
	requests []float64
	errors   map[catalog.ErrorClass][]float64
}

// classify sums the error series of each group by class, on steps.
func classify(in Input, steps []time.Time) (map[string]*group, []string) {
	groups := map[string]*group{}
	get := func(l map[string]string) *group {
		k := analysis.LabelsKey(l)
		g, ok := groups[k]
		if !ok {
			g = &group{labels: l, errors: map[catalog.ErrorClass][]float64{}}
			groups[k] = g
		}
		return g
	}
	reqs, rl := analysis.Align(in.Requests, steps)
	for k, v := range reqs {
		get(rl[k]).requests = v
	}
	for _, s := range in.Errors {
		labels := map[string]string{}
		for _, l := range catalog.ErrorLabels {
			labels[l] = string(s.Metric[model.LabelName(l)])
		}
		c := catalog.ClassifyError(labels)
		_, gl := analysis.Key(s.Metric, catalog.ErrorLabels...)
		vals, _ := analysis.Align(model.Matrix{s}, steps, catalog.ErrorLabels...)
		g := get(gl)
		acc, ok := g.errors[c]
		if !ok {
			acc = make([]float64, len(steps))
			g.errors[c] = acc
		}
		for _, v := range vals {
			for i, x := range v {
				if !math.IsNaN(x) {
					acc[i] += x
				}
			}
		}
	}
	return groups, slices.Sorted(maps.Keys(groups))
}

// Series returns, per group and class, the class's share of requests at each step (errors/s
// of the class ÷ requests/s; NaN where no request was counted), labelled with the group and
// ClassLabel, named "<class> share", unit percentunit. A group with requests and no failure
// of a class reads 0 for it.
func Series(in Input, steps []time.Time) []analysis.Series {
	groups, keys := classify(in, steps)
	var out []analysis.Series
	for _, k := range keys {
		g := groups[k]
		for _, c := range in.Classes {
			vals := make([]float64, len(steps))
			for i := range steps {
				vals[i] = share(g, c, i)
			}
			l := maps.Clone(g.labels)
			l[ClassLabel] = string(c)
			out = append(out, analysis.Series{Name: string(c) + " share", Labels: l, Unit: "percentunit", Times: steps, Values: vals})
		}
	}
	return out
}

func share(g *group, c catalog.ErrorClass, i int) float64 {
	if g.requests == nil || i >= len(g.requests) || math.IsNaN(g.requests[i]) || g.requests[i] <= 0 {
		return math.NaN()
	}
	e := 0.0
	if v, ok := g.errors[c]; ok {
		e = v[i]
	}
	return e / g.requests[i]
}

// Row is one group of the errors table, read at the last step: requests/s, failed
// requests/s, the share of each class (Shares, in Input.Classes order), the worst class's
// burn (its share ÷ its allowed share) and which class it is, and, where the gateway exports
// its spend, spend per request and per million tokens (NaN otherwise).
type Row struct {
	Labels           map[string]string
	Requests, Errors float64
	Shares           []float64
	WorstBurn        float64
	WorstClass       string
	SpendPerRequest  float64
	SpendPerMTokens  float64
	// TTFTP50 and ITLP50 are the medians (s) of the group's summed bucket rates at the last
	// step, interpolated within the bucket as Prometheus does (NaN without buckets).
	TTFTP50, ITLP50 float64
}

// median returns, per group key (analysis.Key of the labels without le), the median of the
// bucket rates at the last step.
func median(m model.Matrix, steps []time.Time) map[string]float64 {
	last := steps[len(steps)-1].UnixMilli()
	parts := map[string][]hist.Bucket{}
	for _, s := range m {
		le, err := hist.ParseLe(string(s.Metric["le"]))
		if err != nil {
			continue
		}
		k, _ := analysis.Key(s.Metric, "le")
		for _, p := range s.Values {
			if int64(p.Timestamp) == last && !math.IsNaN(float64(p.Value)) {
				parts[k] = append(parts[k], hist.Bucket{UpperBound: le, Count: float64(p.Value)})
			}
		}
	}
	out := map[string]float64{}
	for k, b := range parts {
		out[k] = hist.Quantile(0.5, b).Value
	}
	return out
}

// Table returns one Row per group (groups ordered by their labels).
func Table(in Input, steps []time.Time) []Row {
	if len(steps) == 0 {
		return nil
	}
	last := len(steps) - 1
	groups, keys := classify(in, steps)
	ttft, itl := median(in.TTFT, steps), median(in.ITL, steps)
	spend, sl := analysis.Align(in.Spend, steps)
	tokens, tl := analysis.Align(in.Tokens, steps)
	at := func(vals map[string][]float64, labels map[string]map[string]string, want map[string]string) float64 {
		k := analysis.LabelsKey(want)
		for key, v := range vals {
			if analysis.LabelsKey(labels[key]) == k {
				return v[last]
			}
		}
		return math.NaN()
	}
	out := make([]Row, 0, len(keys))
	for _, k := range keys {
		g := groups[k]
		r := Row{Labels: g.labels, Requests: math.NaN(), Errors: 0, WorstBurn: math.NaN(), SpendPerRequest: math.NaN(), SpendPerMTokens: math.NaN(),
			TTFTP50: math.NaN(), ITLP50: math.NaN()}
		if v, ok := ttft[k]; ok {
			r.TTFTP50 = v
		}
		if v, ok := itl[k]; ok {
			r.ITLP50 = v
		}
		if g.requests != nil {
			r.Requests = g.requests[last]
		}
		for _, c := range in.Classes {
			if v, ok := g.errors[c]; ok {
				r.Errors += v[last]
			}
			s := share(g, c, last)
			r.Shares = append(r.Shares, s)
			if a := in.Allowed[c]; a > 0 && !math.IsNaN(s) && (math.IsNaN(r.WorstBurn) || s/a > r.WorstBurn) {
				r.WorstBurn, r.WorstClass = s/a, string(c)
			}
		}
		if sp := at(spend, sl, g.labels); !math.IsNaN(sp) {
			if r.Requests > 0 {
				r.SpendPerRequest = sp / r.Requests
			}
			if tk := at(tokens, tl, g.labels); tk > 0 {
				r.SpendPerMTokens = sp / tk * 1e6
			}
		}
		out = append(out, r)
	}
	return out
}
