package plugin

import (
	"context"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/inferscope/inferscope-llm-datasource/pkg/catalog"
	"github.com/inferscope/inferscope-llm-datasource/pkg/hist"
)

// thresholdLe returns the `le` label values, spelled as stored, that an
// attainment at threshold needs: in each target's own bucket layout, the
// bound equal to the threshold or the two bounds around it, plus +Inf.
// Bounds are compared numerically (le="2" and le="2.0" are both 2), so the
// exact strings read from the store are what the PromQL then selects; a
// threshold is never rounded to a bound. Selecting these few buckets gives
// the same fraction and bracket as the whole layout (interpolation only
// reads the bucket holding the threshold) at a fraction of the PromQL cost.
// ok is false when a target's engine or stored le values are unknown: the
// caller then reads the whole layout.
func (i *Instance) thresholdLe(ctx context.Context, p *plan, stage catalog.Signal, threshold float64, from, to time.Time) ([]string, bool) {
	var out []string
	sr := &run{i: i, p: p}
	for _, v := range sr.views(ctx) {
		if !v.OK {
			if len(v.Names) > 0 {
				return nil, false
			}
			continue
		}
		a := v.assess(stage)
		if !a.Exported() {
			continue
		}
		var names []string
		for _, m := range a.Metrics {
			if m.Kind == catalog.KindHistogram && m.Scale == 1 {
				names = append(names, regexp.QuoteMeta(m.Name+"_bucket"))
			}
		}
		if len(names) == 0 {
			continue
		}
		sel := `{__name__=~"` + strings.Join(names, "|") + `", job="` + escapeLabel(v.Name) + `"}`
		les, err := i.querier.LabelValues(ctx, "le", sel, from, to)
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

var (
	bucketSelWithMatchers = regexp.MustCompile(`(_bucket)\{`)
	bucketSelBare         = regexp.MustCompile(`(_bucket)\[`)
)

// withLe adds an le matcher selecting exactly the given stored values to
// every _bucket selector of a catalogue bucket-rate query
// (`rate(x_bucket{…}[w])` or `rate(x_bucket[w])`).
func withLe(q string, les []string) string {
	quoted := make([]string, len(les))
	for k, s := range les {
		quoted[k] = regexp.QuoteMeta(s)
	}
	m := `le=~` + strconv.Quote(strings.Join(quoted, "|"))
	q = bucketSelWithMatchers.ReplaceAllString(q, "${1}{"+strings.ReplaceAll(m, "$", "$$")+", ")
	return bucketSelBare.ReplaceAllString(q, "${1}{"+strings.ReplaceAll(m, "$", "$$")+"}[")
}
