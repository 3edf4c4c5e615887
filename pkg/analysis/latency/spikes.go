package latency

import (
	"math"
	"time"

	"github.com/inferscope/inferscope-llm-datasource/pkg/analysis"
	"github.com/inferscope/inferscope-llm-datasource/pkg/hist"
)

// Spikes marks, per group, the windows in which a latency stage crossed an
// SLO threshold (seconds): 1 when the window's p99 is above it or when the
// highest occupied bucket lies wholly above it (its lower edge at or above
// the threshold: some request was certainly slower), 0 otherwise, NaN
// without requests. Series are labelled stage, stat="spike" and the group
// labels. A spike is shown, not paged: the sustained-degradation rule pages
// only after 5 minutes out of the objective (docs/slo.md).
func Spikes(in Input, steps []time.Time, threshold float64) []analysis.Series {
	var scratch analysis.Notices
	opt := Options{Stats: []Stat{{Name: "p99", Quantile: 0.99}, {Name: "highest", Quantile: 1}}, Estimator: hist.EstimatorPrometheus, Bounds: true}
	byGroup := map[string]map[string]analysis.Series{}
	labels := map[string]map[string]string{}
	var order []string
	for _, s := range Compute(in, steps, opt, &scratch) {
		gl := map[string]string{}
		for k, v := range s.Labels {
			if k != "stage" && k != "stat" && k != "bound" {
				gl[k] = v
			}
		}
		key := analysis.LabelsKey(gl)
		if _, ok := byGroup[key]; !ok {
			byGroup[key] = map[string]analysis.Series{}
			labels[key] = gl
			order = append(order, key)
		}
		byGroup[key][s.Labels["stat"]+"/"+s.Labels["bound"]] = s
	}
	var out []analysis.Series
	for _, key := range order {
		g := byGroup[key]
		p99, hi := g["p99/"], g["highest/lower"]
		vals := make([]float64, len(steps))
		for i := range steps {
			v, lo := at(p99, i), at(hi, i)
			switch {
			case math.IsNaN(v) && math.IsNaN(lo):
				vals[i] = math.NaN()
			case v > threshold || lo >= threshold:
				vals[i] = 1
			}
		}
		out = append(out, series(in.Stage, "spike", "", labels[key], steps, vals))
		out[len(out)-1].Unit = "short"
	}
	return out
}

func at(s analysis.Series, i int) float64 {
	if i < len(s.Values) {
		return s.Values[i]
	}
	return math.NaN()
}
