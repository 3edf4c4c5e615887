package sanity

import (
	"fmt"
	"strings"
	"time"

	"github.com/prometheus/common/model"

	"github.com/inferscope/inferscope-llm-datasource/pkg/analysis"
)

// Verdict is the one sanity judgement of a histogram, per group and window, that every query
// type reading the histogram applies (latency, slo, burn_rate, goodput, buckets): where the
// histogram contradicts itself (HistogramChecks: _count ≠ +Inf bucket, a mean outside what the
// buckets allow, every observation in the lowest bucket with a mean above its bound) its
// buckets are disproved by its own _sum or _count, and nothing is drawn from them:
//   - latency: no quantile and no bound at those steps (the mean, from _sum/_count, stays);
//   - slo, burn_rate, goodput: no attainment, burn rate or goodput for that window, never "ok";
//   - buckets: no advice on the bucket layout.
//
// Every query type says so with Verdict.Sentence, so one histogram reads the same everywhere.
type Verdict struct {
	Stage string
	// Labels are the group labels (target, model, …) as analysis.Key gives them; Key is their
	// analysis.LabelsKey.
	Labels map[string]string
	Key    string
	// Bad has one element per step (per window: one element for an instant query): true where
	// the histogram contradicts itself.
	Bad []bool
	// Findings say what disagrees, one per kind (HistogramFinding), first step first.
	Findings []HistogramFinding
}

// Contradicted reports whether the histogram contradicts itself at any step.
func (v Verdict) Contradicted() bool { return len(v.Findings) > 0 }

// Disproved reports whether step i is one at which the histogram contradicts itself.
func (v Verdict) Disproved(i int) bool { return i >= 0 && i < len(v.Bad) && v.Bad[i] }

// Sentence is the notice every query type gives for a contradicted histogram (empty when it is
// consistent): stage, group, from when and on how many steps, what disagrees, and what is not
// drawn from it.
func (v Verdict) Sentence() string {
	if !v.Contradicted() {
		return ""
	}
	var b strings.Builder
	b.WriteString(v.Stage)
	if len(v.Labels) > 0 {
		b.WriteString(" " + FormatLabels(v.Labels))
	}
	f := v.Findings[0]
	fmt.Fprintf(&b, ": the histogram contradicts itself from %s", f.At.UTC().Format("2006-01-02 15:04:05 UTC"))
	if n := v.bad(); n > 1 {
		fmt.Fprintf(&b, " (%d steps)", n)
	}
	details := make([]string, 0, len(v.Findings))
	for _, f := range v.Findings {
		details = append(details, f.Detail)
	}
	b.WriteString(": " + strings.Join(details, "; "))
	b.WriteString(". No quantile, bound, SLO attainment, burn rate, goodput or bucket advice is drawn from it there; its mean (_sum/_count) is shown as it is")
	return b.String()
}

func (v Verdict) bad() int {
	n := 0
	for _, b := range v.Bad {
		if b {
			n++
		}
	}
	return n
}

// Verdicts are the verdicts of one histogram's groups.
type Verdicts []Verdict

// JudgeWindow is JudgeHistogram for one window read by instant queries (the SLO, burn-rate,
// goodput and buckets queries: the increases or rates of buckets, _sum and _count over the
// window, grouped alike), evaluated at at. Each Verdict has one step.
func JudgeWindow(stage string, buckets, sum, count model.Vector, at time.Time) Verdicts {
	return JudgeHistogram(stage, vectorMatrix(buckets), vectorMatrix(sum), vectorMatrix(count), []time.Time{at})
}

// vectorMatrix turns an instant vector into a one-step matrix.
func vectorMatrix(v model.Vector) model.Matrix {
	if v == nil {
		return nil
	}
	m := make(model.Matrix, 0, len(v))
	for _, s := range v {
		m = append(m, &model.SampleStream{Metric: s.Metric, Values: []model.SamplePair{{Timestamp: s.Timestamp, Value: s.Value}}})
	}
	return m
}

// Find returns the verdict of the group with these labels (as analysis.Key gives them). When
// the histogram was judged per finer partition (per target within a group, as the SLO paths
// count each target's layout on its own), it returns the first partition of the group that
// contradicts itself, else the first partition of the group: one bad target spoils the group's
// row, as its counts are added into it.
func (vs Verdicts) Find(labels map[string]string) (Verdict, bool) {
	k := analysis.LabelsKey(labels)
	for _, v := range vs {
		if v.Key == k {
			return v, true
		}
	}
	var first *Verdict
	for i, v := range vs {
		if !within(labels, v.Labels) {
			continue
		}
		if v.Contradicted() {
			return v, true
		}
		if first == nil {
			first = &vs[i]
		}
	}
	if first != nil {
		return *first, true
	}
	return Verdict{}, false
}

// within reports whether every label of group is in part with the same value.
func within(group, part map[string]string) bool {
	for k, v := range group {
		if part[k] != v {
			return false
		}
	}
	return true
}

// Disproved reports whether the group with these labels contradicts itself at step i.
func (vs Verdicts) Disproved(labels map[string]string, i int) bool {
	v, ok := vs.Find(labels)
	return ok && v.Disproved(i)
}

// Sentences are the notices of the contradicted groups, in group order.
func (vs Verdicts) Sentences() []string {
	var out []string
	for _, v := range vs {
		if s := v.Sentence(); s != "" {
			out = append(out, s)
		}
	}
	return out
}
