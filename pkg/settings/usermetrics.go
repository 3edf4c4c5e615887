package settings

import (
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strings"

	"github.com/prometheus/common/model"
)

// UserMetricKind says how a user-mapped metric is read: a classic histogram (the name is the
// base name, without _bucket/_sum/_count), a counter (the sample name, normally ending in
// _total) or a gauge.
type UserMetricKind string

// User metric kinds.
const (
	UserHistogram UserMetricKind = "histogram"
	UserCounter   UserMetricKind = "counter"
	UserGauge     UserMetricKind = "gauge"
)

// UserSignals are the signals a target's metrics map may name, with the kind each is read as:
// the latency stages (histograms, seconds), the token and finished-request counters, and the
// running and waiting gauges.
var UserSignals = map[string]UserMetricKind{
	"queue_time": UserHistogram, "prefill_time": UserHistogram, "decode_time": UserHistogram,
	"inference_time": UserHistogram, "ttft": UserHistogram, "itl": UserHistogram, "tpot": UserHistogram, "e2e": UserHistogram,
	"prompt_tokens": UserCounter, "generation_tokens": UserCounter, "requests_finished": UserCounter,
	"requests_running": UserGauge, "requests_waiting": UserGauge,
}

// metricNameRE is a legacy Prometheus metric name.
var metricNameRE = regexp.MustCompile(`^[a-zA-Z_:][a-zA-Z0-9_:]*$`)

// checkUserMetrics validates targets[i].metrics and targets[i].modelLabel (f is "targets[i]").
func checkUserMetrics(f string, t Target, remote bool) error {
	if len(t.Metrics) == 0 {
		if t.ModelLabel != "" {
			return fmt.Errorf("%s.modelLabel: set only with %s.metrics (an engine's own pages name their model themselves)", f, f)
		}
		return nil
	}
	if remote {
		return fmt.Errorf("%s.metrics: mapping your own metrics to signals works in embedded mode only (the collector renames them while scraping); in remote mode, record them under an engine's names with Prometheus recording rules", f)
	}
	if t.Engine != "" {
		return fmt.Errorf("%s.metrics: a target with its own metrics map is read as engine \"custom\"; leave %s.engine empty", f, f)
	}
	keys := make([]string, 0, len(t.Metrics))
	for k := range t.Metrics {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	seen := map[string]string{}
	for _, k := range keys {
		kind, ok := UserSignals[k]
		if !ok {
			names := make([]string, 0, len(UserSignals))
			for s := range UserSignals {
				names = append(names, s)
			}
			slices.Sort(names)
			return fmt.Errorf("%s.metrics: %q is not a signal that can be mapped (one of %s)", f, k, strings.Join(names, ", "))
		}
		n := t.Metrics[k]
		if !metricNameRE.MatchString(n) {
			return fmt.Errorf("%s.metrics.%s: %q is not a metric name", f, k, n)
		}
		if kind == UserHistogram {
			for _, suf := range []string{"_bucket", "_sum", "_count"} {
				if strings.HasSuffix(n, suf) {
					return fmt.Errorf("%s.metrics.%s: %q: give the histogram's base name, without %s", f, k, n, suf)
				}
			}
		}
		if prev, dup := seen[n]; dup {
			return fmt.Errorf("%s.metrics.%s: %q is already mapped to %s", f, k, n, prev)
		}
		seen[n] = k
	}
	if t.ModelLabel != "" && (!model.LegacyValidation.IsValidLabelName(t.ModelLabel) || strings.HasPrefix(t.ModelLabel, "__") || reservedLabels[t.ModelLabel]) {
		return fmt.Errorf("%s.modelLabel: %q is not a usable label name", f, t.ModelLabel)
	}
	return nil
}
