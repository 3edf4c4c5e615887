package catalog

import (
	"fmt"
	"time"
)

// SampleCountPromQL builds the number of stored samples of a histogram
// (its _count series) or counter signal over window, for the most-sampled
// series in scope:
//
//	max(count_over_time(vllm:time_to_first_token_seconds_count{job=~"a"}[30d]) or …)
//
// Multiplied by the scrape interval it tells how much of an SLO period the
// stored history covers. Groups in sc are ignored (one number for the
// scope). Errors: unknown signal, a signal with neither histogram nor
// counter, empty names in scope, window under 1ms.
func SampleCountPromQL(s Signal, sc Scope, window time.Duration) (string, error) {
	if err := checkSignal(s); err != nil {
		return "", err
	}
	w, err := windowString(window)
	if err != nil {
		return "", err
	}
	order, per := collect(s, sc, func(m Metric) bool { return m.Kind == KindHistogram || m.Kind == KindCounter })
	if len(order) == 0 {
		return "", fmt.Errorf("catalog: signal %q is not read from a histogram or counter by any engine", s)
	}
	inner, err := join(order, per, Scope{Targets: sc.Targets, Models: sc.Models}, nil, false, func(m Metric, sel string) string {
		name := m.Name
		if m.Kind == KindHistogram {
			name += "_count"
		}
		return "count_over_time(" + selector(name, sel) + "[" + w + "])"
	})
	if err != nil {
		return "", err
	}
	return "max(" + inner + ")", nil
}
