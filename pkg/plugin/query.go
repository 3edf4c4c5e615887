package plugin

import (
	"encoding/json"
	"fmt"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/backend"
	"github.com/prometheus/common/model"

	"github.com/inferscope/inferscope-llm-datasource/pkg/analysis"
	"github.com/inferscope/inferscope-llm-datasource/pkg/catalog"
	"github.com/inferscope/inferscope-llm-datasource/pkg/hist"
	"github.com/inferscope/inferscope-llm-datasource/pkg/settings"
)

// Query types served by QueryData (the `queryType` of a query's JSON).
const (
	QueryTypeLatency    = "latency"
	QueryTypeBreakdown  = "breakdown"
	QueryTypeThroughput = "throughput"
	QueryTypeSaturation = "saturation"
	QueryTypeTargets    = "targets"
	QueryTypeRaw        = "raw"
	QueryTypeGPU        = "gpu"
)

// Query is the JSON model of every Inferscope query. It stands alone: alert
// rules send it without the front end. Targets and agents are names from the
// data-source settings, never URLs.
type Query struct {
	QueryType string   `json:"queryType"`
	Targets   []string `json:"targets,omitempty"`
	Models    []string `json:"models,omitempty"`
	// GroupBy is none|target|model|engine (engine = vLLM data-parallel rank).
	GroupBy string `json:"groupBy,omitempty"`
	// Window is the rate window in Prometheus notation; default max(step, 4 × scrape interval).
	Window string `json:"window,omitempty"`

	// latency
	Stages    []string `json:"stages,omitempty"`
	Stats     []string `json:"stats,omitempty"`
	Estimator string   `json:"estimator,omitempty"`
	Bounds    *bool    `json:"bounds,omitempty"`

	// Format: breakdown timeseries (default) or table; diagnosis table,
	// annotations, timeline or numeric; burn_rate timeseries or status;
	// targets table or telemetry.
	Format string `json:"format,omitempty"`

	// Classes restricts a diagnosis query's findings and numeric series to
	// these classes (e.g. ["stalled"] for an alert rule); empty: all.
	Classes []string `json:"classes,omitempty"`

	// raw
	Metric   string            `json:"metric,omitempty"`
	Matchers map[string]string `json:"matchers,omitempty"`

	// gpu
	Agents  []string `json:"agents,omitempty"`
	GPUs    []string `json:"gpus,omitempty"`
	Signals []string `json:"signals,omitempty"`

	// slo, burn_rate, goodput, buckets (query_slo.go); latency draws the
	// profile's thresholds.
	SLOQuery
}

// badQuery marks an error in the query itself (HTTP 400, downstream source).
type badQuery struct{ msg string }

func (e badQuery) Error() string { return e.msg }

func badQueryf(format string, a ...any) error { return badQuery{fmt.Sprintf(format, a...)} }

// plan is a decoded query with its time grid resolved.
type plan struct {
	Query
	start, end time.Time // step-aligned range of range queries
	from, to   time.Time // the range as Grafana sent it
	step       time.Duration
	window     time.Duration
	scope      catalog.Scope
	estimator  hist.Estimator
	// notes are notices decided while decoding (e.g. a window raised to
	// the usable minimum); every run of the plan starts with them.
	notes []analysis.Notice
}

const maxPoints = 11000

// maxRange is the longest time range a query may span.
const maxRange = 100 * 365 * 24 * time.Hour

func decodeQuery(q backend.DataQuery, s *settings.Settings) (*plan, error) {
	var m Query
	if len(q.JSON) > 0 {
		if err := json.Unmarshal(q.JSON, &m); err != nil {
			return nil, badQueryf("query JSON is invalid: %v", err)
		}
	}
	if m.QueryType == "" {
		m.QueryType = q.QueryType
	}
	p := &plan{Query: m}
	p.start, p.end = q.TimeRange.From, q.TimeRange.To
	if p.start.Year() < 1970 || p.end.Year() > 9999 || p.end.Sub(p.start) > maxRange {
		return nil, badQueryf("time range %s to %s is outside what can be queried (at most %d years, from 1970)", p.start.Format(time.RFC3339), p.end.Format(time.RFC3339), int(maxRange.Hours()/24/365))
	}
	if !p.end.After(p.start) {
		p.end = p.start.Add(time.Second)
	}
	p.from, p.to = p.start, p.end
	p.step = q.Interval
	if p.step < s.ScrapeInterval {
		p.step = s.ScrapeInterval
	}
	rng := p.end.Sub(p.start)
	if q.MaxDataPoints > 0 && rng/time.Duration(q.MaxDataPoints) > p.step {
		p.step = rng / time.Duration(q.MaxDataPoints)
	}
	if rng/p.step > maxPoints {
		p.step = rng / maxPoints
	}
	p.step = p.step.Truncate(time.Second)
	if p.step < time.Second {
		p.step = time.Second
	}
	// Align to multiples of the step since the Unix epoch, like Grafana's
	// Prometheus data source, so a refresh evaluates the same instants.
	p.start = alignToStep(p.start, p.step)
	p.end = alignToStep(p.end, p.step)
	if p.end.Before(p.start) {
		p.end = p.start
	}
	p.window = p.step
	if min := 4 * s.ScrapeInterval; p.window < min {
		p.window = min
	}
	if m.Window != "" {
		w := expandMacros(m.Window, q, p.step, s.ScrapeInterval)
		d, err := model.ParseDuration(w)
		if err != nil || d <= 0 {
			if w != m.Window {
				return nil, badQueryf("window: %q (expanded to %q) is not a duration such as 1m or 5m", m.Window, w)
			}
			return nil, badQueryf("window: %q is not a duration such as 1m, 5m or $__rate_interval", m.Window)
		}
		p.window = time.Duration(d)
		if p.window > maxWindow {
			return nil, badQueryf("window: %q is longer than %s, the longest rate window a query may use (retention is at most 90d; SLO periods are set on objectives, not here)", m.Window, model.Duration(maxWindow))
		}
		if min := minWindow(s.ScrapeInterval); p.window < min {
			p.notes = append(p.notes, analysis.Notice{Severity: analysis.Warning, Text: fmt.Sprintf(
				"window %s is shorter than two scrape intervals (%s at a %s scrape interval), too short to hold the two samples a rate needs; raised to %s",
				model.Duration(p.window), model.Duration(min), model.Duration(s.ScrapeInterval), model.Duration(min))})
			p.window = min
		}
	}
	// Lists are sets: a multi-value variable may repeat a name, and every
	// repetition would cost a copy of the work (and duplicate alert series).
	for _, l := range []struct {
		name string
		list *[]string
	}{{"targets", &m.Targets}, {"models", &m.Models}, {"agents", &m.Agents}, {"gpus", &m.GPUs},
		{"stages", &m.Stages}, {"stats", &m.Stats}, {"signals", &m.Signals}, {"classes", &m.Classes}, {"objectives", &m.Objectives}} {
		*l.list = dedupe(*l.list)
		if len(*l.list) > maxListLen {
			return nil, badQueryf("%s: %d distinct values, more than the %d a query may list", l.name, len(*l.list), maxListLen)
		}
	}
	p.Query = m
	agentsAsTargets := m.QueryType == QueryTypeGPU || m.QueryType == QueryTypeRaw || m.QueryType == QueryTypeTargets
	for _, t := range m.Targets {
		if _, ok := s.Target(t); !ok {
			if _, ok := s.Agent(t); !ok {
				return nil, badQueryf("targets: %q is not a target configured in this data source", t)
			}
			if !agentsAsTargets {
				return nil, badQueryf("targets: %q is a GPU agent; a %s query reads inference targets (GPU agents are read by gpu, raw and targets queries)", t, m.QueryType)
			}
		}
	}
	for _, model := range m.Models {
		if strings.TrimSpace(model) == "" {
			return nil, badQueryf("models: an empty model name; leave models empty to select every model")
		}
	}
	by, err := groupBy(m.GroupBy)
	if err != nil {
		return nil, err
	}
	p.scope = catalog.Scope{Targets: m.Targets, Models: m.Models, By: by}
	switch m.Estimator {
	case "", string(hist.EstimatorPrometheus):
		p.estimator = hist.EstimatorPrometheus
	case string(hist.EstimatorRefined):
		p.estimator = hist.EstimatorRefined
	default:
		return nil, badQueryf("estimator: %q is neither prometheus nor refined", m.Estimator)
	}
	return p, nil
}

// maxWindow is the longest rate window a query may ask for: a month, above
// the longest burn-rate window (3d) and any dashboard's $__rate_interval.
// Longer windows only cost (a 292-year window made the diagnosis subqueries
// allocate tens of GB).
const maxWindow = 31 * 24 * time.Hour

// maxListLen caps each list of a query (targets, models, stages, …) after
// duplicates are removed.
const maxListLen = 1000

// dedupe returns list without repeated values, first occurrence kept.
func dedupe(list []string) []string {
	if len(list) < 2 {
		return list
	}
	seen := make(map[string]bool, len(list))
	out := list[:0:0]
	for _, v := range list {
		if !seen[v] {
			seen[v] = true
			out = append(out, v)
		}
	}
	return out
}

// minWindow is the shortest usable rate window: two scrape intervals, so
// that every window holds at least two samples of a series scraped on time
// (a window is left-open, (t−w, t]). Shorter windows are raised to it with a
// notice, as Grafana's $__rate_interval never goes below the scrape interval.
func minWindow(scrape time.Duration) time.Duration { return 2 * scrape }

// macros are Grafana's interval variables a window may be written with, in
// the order they are replaced (longer names first, so $__interval_ms is not
// read as $__interval followed by "_ms").
var macros = []string{"__rate_interval_ms", "__rate_interval", "__interval_ms", "__interval", "__range_ms", "__range_s", "__range"}

// expandMacros replaces Grafana's interval variables in a window, as
// Grafana's front end does before a query reaches a data source, so alert
// rules (which send the query JSON as saved) get the same window:
//
//   - $__interval: the request's interval (q.Interval, Grafana's
//     max(range/max data points, min interval)); the plan's step when the
//     request carries none;
//   - $__rate_interval: max($__interval + scrape interval, 4 × scrape
//     interval), Grafana's definition for Prometheus data sources;
//   - $__range: the request's time range (To − From);
//   - the _ms variants give whole milliseconds and $__range_s whole
//     seconds, to be followed by a unit as in Grafana ("${__interval_ms}ms").
//
// Both $name and ${name} spellings are replaced. Durations are written in
// Prometheus notation (1m30s).
func expandMacros(w string, q backend.DataQuery, step, scrape time.Duration) string {
	if !strings.Contains(w, "$") {
		return w
	}
	interval := q.Interval
	if interval <= 0 {
		interval = step
	}
	rate := interval + scrape
	if r := 4 * scrape; rate < r {
		rate = r
	}
	rng := q.TimeRange.To.Sub(q.TimeRange.From)
	value := func(name string) string {
		dur := func(d time.Duration) string { return model.Duration(d.Truncate(time.Millisecond)).String() }
		switch name {
		case "__rate_interval_ms":
			return strconv.FormatInt(rate.Milliseconds(), 10)
		case "__rate_interval":
			return dur(rate)
		case "__interval_ms":
			return strconv.FormatInt(interval.Milliseconds(), 10)
		case "__interval":
			return dur(interval)
		case "__range_ms":
			return strconv.FormatInt(rng.Milliseconds(), 10)
		case "__range_s":
			return strconv.FormatInt(int64(rng/time.Second), 10)
		case "__range":
			return dur(rng)
		}
		return ""
	}
	for _, m := range macros {
		w = strings.ReplaceAll(w, "${"+m+"}", value(m))
		w = strings.ReplaceAll(w, "$"+m, value(m))
	}
	return w
}

// alignToStep rounds t down to a multiple of step counted from the Unix epoch.
func alignToStep(t time.Time, step time.Duration) time.Time {
	ms := step.Milliseconds()
	return time.UnixMilli(t.UnixMilli() / ms * ms).In(t.Location())
}

func groupBy(g string) ([]string, error) {
	switch g {
	case "", "none":
		return nil, nil
	case "target", "model", "engine":
		return []string{g}, nil
	}
	return nil, badQueryf("groupBy: %q is not one of none, target, model, engine", g)
}

var labelNameRE = regexp.MustCompile(`^[a-zA-Z_][a-zA-Z0-9_]*$`)

// rawSelector builds the PromQL selector of a raw query: the metric by name,
// restricted to configured targets (job label) and to the given equality matchers.
func rawSelector(p *plan, s *settings.Settings) (string, error) {
	if p.Metric == "" {
		return "", badQueryf("metric: a raw query needs a metric name such as vllm:num_requests_running")
	}
	if !model.LegacyValidation.IsValidMetricName(p.Metric) || len(p.Metric) > 200 {
		return "", badQueryf("metric: %q is not a metric name", p.Metric)
	}
	targets := p.Targets
	if len(targets) == 0 {
		targets = s.TargetNames()
		for _, a := range s.GPUAgents {
			targets = append(targets, a.Name)
		}
	}
	sort.Strings(targets)
	sel := fmt.Sprintf("{__name__=%q, job=~%q", p.Metric, alternation(targets))
	keys := make([]string, 0, len(p.Matchers))
	for k := range p.Matchers {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if !labelNameRE.MatchString(k) || k == "job" || k == "__name__" {
			return "", badQueryf("matchers: %q is not a label you can match on", k)
		}
		sel += fmt.Sprintf(", %s=%q", k, p.Matchers[k])
	}
	return sel + "}", nil
}

// alternation renders names as an anchored PromQL regex alternation with
// every name quoted literally.
func alternation(names []string) string {
	out := ""
	for i, n := range names {
		if i > 0 {
			out += "|"
		}
		out += regexp.QuoteMeta(n)
	}
	if out == "" {
		// No target configured: match nothing rather than everything.
		return "$^"
	}
	return out
}
