package latency

import (
	"maps"
	"math"

	"github.com/inferscope/inferscope-llm-datasource/pkg/analysis"
	"github.com/inferscope/inferscope-llm-datasource/pkg/analysis/sanity"
)

// ApplyVerdicts blanks (NaN: no data) every quantile and bound of out at the steps where the
// stage's histogram contradicts itself for that group (sanity.JudgeHistogram over the same
// buckets, _sum and _count and the same steps): the buckets are disproved there by their own
// _sum or _count, so no value or bound drawn from them may be shown. The mean (from _sum and
// _count) stays. It returns how many values were blanked; the caller adds vs.Sentences() to
// the notices.
func ApplyVerdicts(out []analysis.Series, vs sanity.Verdicts) int {
	if len(vs) == 0 {
		return 0
	}
	n := 0
	for _, s := range out {
		if s.Labels["stat"] == "mean" {
			continue
		}
		gl := maps.Clone(s.Labels)
		stage := gl["stage"]
		delete(gl, "stage")
		delete(gl, "stat")
		delete(gl, "bound")
		v, ok := vs.Find(gl)
		if !ok || v.Stage != stage {
			continue
		}
		for i := range s.Values {
			if v.Disproved(i) && !math.IsNaN(s.Values[i]) {
				s.Values[i] = math.NaN()
				n++
			}
		}
	}
	return n
}
