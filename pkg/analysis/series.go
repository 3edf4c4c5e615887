// Package analysis holds the result types shared by the analysis packages
// (latency, throughput, saturation, …): plain Go time series and notices,
// computed from PromQL results (prometheus/common model types) without any
// Grafana SDK types. The frames package turns them into data frames.
package analysis

import (
	"maps"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/prometheus/common/model"
)

// Series is one time series of a result. Labels identify it within its
// result (e.g. target, model, stage, stat, bound); Times and Values have the
// same length, Times ascending. Values carry NaN where a step had no data.
type Series struct {
	Name   string
	Labels map[string]string
	// Unit is a Grafana unit id: "s" (seconds), "percentunit" (ratio 0..1),
	// "reqps" (requests/s), "short" (counts, tokens/s).
	Unit   string
	Times  []time.Time
	Values []float64
}

// Severity of a Notice, matching Grafana's notice severities.
type Severity string

// Notice severities.
const (
	Info    Severity = "info"
	Warning Severity = "warning"
)

// Notice is a sentence shown beside a panel: a partial failure, an
// approximation, a clamped quantile.
type Notice struct {
	Severity Severity
	Text     string
}

// Notices collects notices without repeating the same text.
type Notices struct {
	list []Notice
	seen map[string]bool
}

// Add appends a notice unless the same text was already added.
func (n *Notices) Add(sev Severity, text string) {
	if n.seen == nil {
		n.seen = map[string]bool{}
	}
	if n.seen[text] {
		return
	}
	n.seen[text] = true
	n.list = append(n.list, Notice{Severity: sev, Text: text})
}

// List returns the notices in the order they were added.
func (n *Notices) List() []Notice { return n.list }

// GroupLabels maps stored label names to the names shown to users
// ("job" → "target", "model_name" → "model", "engine" → "engine", "fairness_id" → "tenant",
// the llm-d router's tenant label).
var GroupLabels = map[string]string{"job": "target", "model_name": "model", "engine": "engine", "fairness_id": "tenant"}

// OutputLabels are the label names Inferscope writes on result series
// besides the renamed GroupLabels: a stored label with one of these names, or
// with a name a GroupLabels entry renames to ("target", "model"), would
// compete with the plugin's own label.
var OutputLabels = map[string]bool{"target": true, "model": true, "stage": true, "stat": true, "bound": true, "signal": true, "source": true}

// Key returns a stable identity of metric with the given labels removed and
// the remaining labels renamed with GroupLabels. Used to join the bucket,
// _sum and _count results of one group.
//
// Collisions are resolved in one fixed order, whatever the map order: the
// GroupLabels renames win (job → target, model_name → model), and a stored
// label named like one of OutputLabels (e.g. a target label "target" set in
// the settings, or a page's own "model") is kept as exported_<name>, with
// more "exported_" prefixes while that name is taken, as Prometheus renames
// a scraped label that collides with a target label.
func Key(metric model.Metric, drop ...string) (string, map[string]string) {
	out := map[string]string{}
	var clash []string
	for k, v := range metric {
		name := string(k)
		if name == model.MetricNameLabel || slices.Contains(drop, name) {
			continue
		}
		if n, ok := GroupLabels[name]; ok {
			name = n
		} else if OutputLabels[name] {
			clash = append(clash, name)
			continue
		}
		out[name] = string(v)
	}
	slices.Sort(clash)
	for _, name := range clash {
		to := "exported_" + name
		for {
			if _, taken := out[to]; !taken {
				break
			}
			to = "exported_" + to
		}
		out[to] = string(metric[model.LabelName(name)])
	}
	return LabelsKey(out), out
}

// LabelsKey renders labels as a sorted `k=v,` string, usable as a map key.
func LabelsKey(l map[string]string) string {
	keys := slices.Sorted(maps.Keys(l))
	var b strings.Builder
	for _, k := range keys {
		b.WriteString(k)
		b.WriteByte('=')
		b.WriteString(l[k])
		b.WriteByte(',')
	}
	return b.String()
}

// Steps returns the evaluation instants of a range query: start, start+step, … ≤ end.
func Steps(start, end time.Time, step time.Duration) []time.Time {
	if step <= 0 || end.Before(start) {
		return nil
	}
	n := int(end.Sub(start)/step) + 1
	out := make([]time.Time, 0, n)
	for t := start; !t.After(end); t = t.Add(step) {
		out = append(out, t)
	}
	return out
}

// NaNs returns n values, every one NaN: a series on an n-step grid with no
// sample at any step yet.
func NaNs(n int) []float64 {
	v := make([]float64, n)
	for i := range v {
		v[i] = math.NaN()
	}
	return v
}

// Align places matrix samples on the step grid: one value slice per series
// (NaN where a step has no sample), keyed like Key(metric, drop...).
func Align(m model.Matrix, steps []time.Time, drop ...string) (map[string][]float64, map[string]map[string]string) {
	x := NewStepIndex(steps)
	vals := map[string][]float64{}
	labels := map[string]map[string]string{}
	for _, s := range m {
		key, l := Key(s.Metric, drop...)
		v, ok := vals[key]
		if !ok {
			v = NaNs(len(steps))
			vals[key] = v
			labels[key] = l
		}
		x.Walk(s.Values, func(i int, pv model.SampleValue) {
			if math.IsNaN(v[i]) {
				v[i] = float64(pv)
			} else {
				// Two stored series collapsed into one group (e.g. le="1" and
				// le="1.0"): their rates add.
				v[i] += float64(pv)
			}
		})
	}
	return vals, labels
}

// FromMatrix converts a PromQL range result into Series on the step grid,
// renaming group labels with GroupLabels and adding extra labels.
func FromMatrix(m model.Matrix, steps []time.Time, name, unit string, extra map[string]string) []Series {
	vals, labels := Align(m, steps)
	keys := slices.Sorted(maps.Keys(vals))
	out := make([]Series, 0, len(keys))
	for _, k := range keys {
		l := labels[k]
		for ek, ev := range extra {
			l[ek] = ev
		}
		out = append(out, Series{Name: name, Labels: l, Unit: unit, Times: steps, Values: vals[k]})
	}
	return out
}
