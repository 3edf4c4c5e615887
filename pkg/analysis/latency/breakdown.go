package latency

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

// BreakdownStages are the stages of the "where does the time go" view, in
// stacking order. Overhead is E2E − queue − inference: frontend time
// (tokenisation, IPC, detokenisation) in vLLM V1, 0 by identity in V0.
var BreakdownStages = []string{"queue", "prefill", "decode", "overhead"}

// MeanInput is the windowed rate of a stage histogram's _sum and _count
// (grouped by the group labels) on the step grid, in the metric's unit;
// Scale converts it to seconds.
type MeanInput struct {
	Sum, Count model.Matrix
	Scale      float64
}

// BreakdownRow is the mean time per stage of one group over a window, in
// seconds. Overhead is E2E − Queue − Inference; Total equals the mean E2E.
type BreakdownRow struct {
	Labels                           map[string]string
	Queue, Prefill, Decode, Overhead float64
	Total                            float64
	// Requests is the number of requests finished in the window (rate × window).
	Requests float64
}

// Breakdown computes mean stage times per group and step. Quantiles do not
// add, so the stacked view uses means: rate(_sum)/rate(_count) per stage over
// the same window, all observed when requests finish, so every stage averages
// the same set of requests. in must hold queue_time, prefill_time,
// decode_time, inference_time and e2e; a group missing any of them yields NaN.
// Series are labelled stage ∈ BreakdownStages, in seconds.
func Breakdown(in map[catalog.Signal]MeanInput, steps []time.Time) []analysis.Series {
	means := map[catalog.Signal]map[string][]float64{}
	groups := map[string]map[string]string{}
	for sig, mi := range in {
		sums, _ := analysis.Align(mi.Sum, steps)
		counts, labels := analysis.Align(mi.Count, steps)
		scale := mi.Scale
		if scale == 0 {
			scale = 1
		}
		m := map[string][]float64{}
		for k, c := range counts {
			s := sums[k]
			v := make([]float64, len(steps))
			for i := range v {
				v[i] = math.NaN()
				if s != nil {
					v[i] = hist.Mean(s[i]*scale, c[i])
				}
			}
			m[k] = v
			groups[k] = labels[k]
		}
		means[sig] = m
	}
	keys := slices.Sorted(maps.Keys(groups))
	var out []analysis.Series
	for _, k := range keys {
		get := func(s catalog.Signal) []float64 {
			if v := means[s][k]; v != nil {
				return v
			}
			v := make([]float64, len(steps))
			for i := range v {
				v[i] = math.NaN()
			}
			return v
		}
		queue, prefill, decode := get(catalog.QueueTime), get(catalog.PrefillTime), get(catalog.DecodeTime)
		inference, e2e := get(catalog.InferenceTime), get(catalog.E2E)
		overhead := make([]float64, len(steps))
		for i := range steps {
			overhead[i] = e2e[i] - queue[i] - inference[i]
		}
		for _, st := range []struct {
			name string
			v    []float64
		}{{"queue", queue}, {"prefill", prefill}, {"decode", decode}, {"overhead", overhead}} {
			l := map[string]string{"stage": st.name}
			for lk, lv := range groups[k] {
				l[lk] = lv
			}
			out = append(out, analysis.Series{Name: st.name, Labels: l, Unit: "s", Times: steps, Values: st.v})
		}
	}
	return out
}

// BreakdownTable computes one BreakdownRow per group from instant results
// (rate over the whole range) of each stage's _sum and _count. window is the
// range length, used to turn the count rate into a number of requests.
func BreakdownTable(in map[catalog.Signal]InstantMean, window time.Duration) []BreakdownRow {
	type acc struct {
		labels map[string]string
		mean   map[catalog.Signal]float64
		reqs   float64
	}
	rows := map[string]*acc{}
	for sig, im := range in {
		scale := im.Scale
		if scale == 0 {
			scale = 1
		}
		sums := map[string]float64{}
		for _, s := range im.Sum {
			k, _ := analysis.Key(s.Metric)
			sums[k] += float64(s.Value)
		}
		for _, c := range im.Count {
			k, l := analysis.Key(c.Metric)
			a, ok := rows[k]
			if !ok {
				a = &acc{labels: l, mean: map[catalog.Signal]float64{}}
				rows[k] = a
			}
			s, ok := sums[k]
			if !ok {
				s = math.NaN()
			}
			a.mean[sig] = hist.Mean(s*scale, float64(c.Value))
			if sig == catalog.E2E {
				a.reqs = float64(c.Value) * window.Seconds()
			}
		}
	}
	keys := slices.Sorted(maps.Keys(rows))
	out := make([]BreakdownRow, 0, len(keys))
	for _, k := range keys {
		a := rows[k]
		get := func(s catalog.Signal) float64 {
			if v, ok := a.mean[s]; ok {
				return v
			}
			return math.NaN()
		}
		r := BreakdownRow{Labels: a.labels, Queue: get(catalog.QueueTime), Prefill: get(catalog.PrefillTime),
			Decode: get(catalog.DecodeTime), Total: get(catalog.E2E), Requests: a.reqs}
		r.Overhead = r.Total - r.Queue - get(catalog.InferenceTime)
		out = append(out, r)
	}
	return out
}

// InstantMean is an instant result of a stage's _sum and _count rates.
type InstantMean struct {
	Sum, Count model.Vector
	Scale      float64
}
