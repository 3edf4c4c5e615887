package catalog

import (
	"fmt"
	"strings"
)

// IdleSentence says, for a user, why a target's exported request signal has no data over a
// queried range. The caller evaluates the signal's growth query (HistogramPromQLFor's Count, or
// CounterRatePromQL) by target over the whole range: a target absent from the result had no
// series matching the selector (matched false), one present with 0 had series that did not grow
// (matched true). Only the second is "no requests"; the first is said as what it is:
//   - with a models filter: the filter matched none of the target's series of the signal;
//   - without: the stored names are there, but no series carries the labels the catalogue
//     selects (a label value spelt otherwise, e.g. TGIS's method="{'method': 'prefill'}"
//     before the catalogue learnt it), so no data is not "no requests".
//
// kind is the metric kind read (KindHistogram or KindCounter).
func IdleSentence(target string, s Signal, kind Kind, matched bool, models []string) string {
	what := "its counter"
	if kind == KindHistogram {
		what = "its histogram's count"
	}
	switch {
	case matched:
		return fmt.Sprintf("target %s: no requests in the queried range for %s (%s did not grow): no data, not zero", target, s, what)
	case len(models) > 0:
		return fmt.Sprintf("target %s: the models filter (%s) matched none of its %s series in the queried range: no data for it, which says nothing about its requests", target, strings.Join(models, ", "), s)
	}
	return fmt.Sprintf("target %s: its %s families are stored, but none of their series carries the labels the catalogue selects in the queried range: no data, which says nothing about its requests", target, s)
}
