package slo

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/inferscope/inferscope-llm-datasource/pkg/hist"
)

// ThresholdNotices places threshold (seconds) in each target's bucket layout (target → its
// buckets, as Locate takes them) and says, one sentence per placement shared by some targets,
// where it is not a bucket bound, naming those targets, e.g.
//
//	"targets a, c: 3 s is not a bucket bound: it lies between le=2.5 and le=5, so attainment is interpolated between the exact fractions at those bounds (it is a bound for b)"
//
// Targets for which the threshold is a bound get no sentence of their own; they are named
// after the others so that a panel mixing both says which is which. Empty when the threshold
// is a bound for every target.
func ThresholdNotices(threshold float64, layouts map[string][]hist.Bucket) []string {
	type group struct {
		t       Threshold
		targets []string
	}
	var groups []*group
	var exact []string
	for _, name := range slices.Sorted(maps.Keys(layouts)) {
		t := Locate(threshold, layouts[name])
		if t.Exact {
			exact = append(exact, name)
			continue
		}
		placed := false
		for _, g := range groups {
			if g.t == t {
				g.targets = append(g.targets, name)
				placed = true
				break
			}
		}
		if !placed {
			groups = append(groups, &group{t: t, targets: []string{name}})
		}
	}
	out := make([]string, 0, len(groups))
	for _, g := range groups {
		who := "target " + g.targets[0]
		if len(g.targets) > 1 {
			who = "targets " + strings.Join(g.targets, ", ")
		}
		s := who + ": " + g.t.String()
		if len(exact) > 0 {
			s += fmt.Sprintf(" (it is a bound for %s)", strings.Join(exact, ", "))
		}
		out = append(out, s)
	}
	return out
}
