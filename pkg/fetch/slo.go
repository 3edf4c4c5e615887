package fetch

import (
	"context"
	"math"
	"slices"
	"time"

	"github.com/inferscope/inferscope-llm-datasource/pkg/catalog"
	"github.com/inferscope/inferscope-llm-datasource/pkg/hist"
)

// ThresholdLe returns the `le` label values, spelled as stored, that an
// attainment at threshold needs: in each target's own bucket layout, the
// bound equal to the threshold or the two bounds around it, plus +Inf.
// Bounds are compared numerically (le="2" and le="2.0" are both 2), so the
// exact strings read from the store are what the PromQL then selects; a
// threshold is never rounded to a bound. Selecting these few buckets gives
// the same fraction and bracket as the whole layout (interpolation only
// reads the bucket holding the threshold) at a fraction of the PromQL cost.
// ok is false when a target's engine or stored le values are unknown: the
// caller then reads the whole layout.
func (r *Run) ThresholdLe(ctx context.Context, stage catalog.Signal, threshold float64, from, to time.Time) ([]string, bool) {
	var out []string
	for _, v := range r.Views(ctx) {
		if !v.OK {
			if len(v.Names) > 0 {
				return nil, false
			}
			continue
		}
		les, err := r.storedLe(ctx, v, stage, from, to)
		if err != nil {
			return nil, false
		}
		below, above := math.Inf(-1), math.Inf(1)
		for _, s := range les {
			v, err := hist.ParseLe(s)
			if err != nil || math.IsInf(v, 1) {
				continue
			}
			if v <= threshold && v > below {
				below = v
			}
			if v > threshold && v < above {
				above = v
			}
		}
		for _, s := range les {
			v, err := hist.ParseLe(s)
			if err != nil {
				continue
			}
			if (v == below || v == above || math.IsInf(v, 1)) && !slices.Contains(out, s) {
				out = append(out, s)
			}
		}
	}
	if len(out) == 0 {
		return nil, false
	}
	slices.Sort(out)
	return out, true
}

// ThresholdLayouts returns, per target in scope that exports stage, its stored bucket bounds
// (the le values of its histogram families stored in [from, to], as buckets without counts),
// for slo.ThresholdNotices: which targets' layouts lack an objective's threshold as a bound.
// Targets whose le values cannot be read are left out.
func (r *Run) ThresholdLayouts(ctx context.Context, stage catalog.Signal, from, to time.Time) map[string][]hist.Bucket {
	out := map[string][]hist.Bucket{}
	for _, v := range r.Views(ctx) {
		if !v.OK {
			continue
		}
		les, err := r.storedLe(ctx, v, stage, from, to)
		if err != nil {
			continue
		}
		var b []hist.Bucket
		for _, s := range les {
			if x, err := hist.ParseLe(s); err == nil {
				b = append(b, hist.Bucket{UpperBound: x})
			}
		}
		if len(b) > 0 {
			out[v.Name] = b
		}
	}
	return out
}

// storedLe returns the le values stored in [from, to] of the target of view v for the
// histogram families of stage it exports as stored (scale 1: no unit conversion); none when it
// exports no such family.
func (r *Run) storedLe(ctx context.Context, v TargetView, stage catalog.Signal, from, to time.Time) ([]string, error) {
	a := v.Assess(stage)
	if !a.Exported() {
		return nil, nil
	}
	var names []string
	for _, m := range a.Metrics {
		if m.Kind == catalog.KindHistogram && m.Scale == 1 {
			names = append(names, m.Name)
		}
	}
	if len(names) == 0 {
		return nil, nil
	}
	return r.Env.labelValues(ctx, "le", catalog.LeSelector(names, v.Name), from, to)
}
