// Package queries holds Inferscope's query types: one file per type with its request struct
// (the JSON a panel or an alert rule sends, decoded and validated here with errors naming the
// field) and its run function (fetch → analysis → frames), and the registry that maps each
// `queryType` to them (registry.go). The request structs are the one query schema:
// src/generated/queryschema.json and queryTypes.ts are generated from them (generate.go).
package queries

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/backend"
	"github.com/grafana/grafana-plugin-sdk-go/data"
	"github.com/prometheus/common/model"

	"github.com/inferscope/inferscope-llm-datasource/pkg/analysis"
	"github.com/inferscope/inferscope-llm-datasource/pkg/catalog"
	"github.com/inferscope/inferscope-llm-datasource/pkg/fetch"
	"github.com/inferscope/inferscope-llm-datasource/pkg/frames"
	"github.com/inferscope/inferscope-llm-datasource/pkg/settings"
)

// Common holds the fields every query type shares, embedded in each type's request struct
// (its keys sit at the top level of the query JSON). Targets and agents are names from the
// data-source settings, never URLs.
type Common struct {
	QueryType string   `json:"queryType"`
	Targets   []string `json:"targets,omitempty"`
	Models    []string `json:"models,omitempty"`
	// GroupBy is none|target|model|engine|adapter|tenant|priority (engine = vLLM data-parallel
	// rank within its target: one group per target and engine, since engine "0" of two servers
	// are two engines, and a mean of them hides the one under pressure; adapter = LoRA adapter, where an engine labels its request metrics by adapter, else
	// a notice; tenant and priority = the llm-d router's fairness_id and priority labels, at most
	// catalog.TenantBound tenants, the rest folded into catalog.OverflowTenant; target_model =
	// one group per target and model, the overview's rows).
	GroupBy string `json:"groupBy,omitempty"`
	// Window is the rate window in Prometheus notation; default max(step, 4 × scrape
	// interval); Grafana's interval variables are expanded (expandMacros).
	Window string `json:"window,omitempty"`
}

// commonEnums are the enumerated values of the common fields (the query schema).
var commonEnums = map[string][]string{"groupBy": {"none", "target", "model", "target_model", "engine", "adapter", "tenant", "priority", "provider"}}

// common returns the embedded common fields.
func (c *Common) common() *Common { return c }

// Request is the decoded JSON of one query type: a struct embedding Common.
type Request interface{ common() *Common }

// lister is a request with list fields of its own, deduplicated and capped like the common ones.
type lister interface{ lists() []namedList }

// validator is a request that checks its own fields after the common ones.
type validator interface {
	validate(s *settings.Settings) error
}

// namedList is a list field of a request and its JSON name.
type namedList struct {
	name string
	list *[]string
}

// BadQuery marks an error in the query itself (HTTP 400, downstream source). Its message
// names the field.
type BadQuery struct{ msg string }

// Error returns the message.
func (e BadQuery) Error() string { return e.msg }

// badQueryf builds a BadQuery.
func badQueryf(format string, a ...any) error { return BadQuery{fmt.Sprintf(format, a...)} }

// Badf builds a BadQuery error for the SDK edge (e.g. a resource asked in the wrong mode).
func Badf(format string, a ...any) error { return badQueryf(format, a...) }

// IsBadQuery reports whether err is (or wraps) a BadQuery.
func IsBadQuery(err error) bool {
	var bq BadQuery
	return errors.As(err, &bq)
}

// Decoded is one query decoded against the settings: its type, its time grid and scope, and
// its request.
type Decoded struct {
	Type *Type
	Plan fetch.Plan
	Req  Request
}

// Run computes the query's frames over env.
func (d *Decoded) Run(ctx context.Context, env *fetch.Env) (data.Frames, error) {
	p := d.Plan
	if !d.Type.agentsAsTargets {
		p = fetch.GatewayPlan(ctx, env, p) // the llm-d router's gateway-side view (see there)
	}
	return d.Type.run(ctx, env, p, d.Req)
}

// maxPoints caps the steps of a query's range.
const maxPoints = 11000

// maxRange is the longest time range a query may span.
const maxRange = 100 * 365 * 24 * time.Hour

// maxWindow is the longest rate window a query may ask for: a month, above the longest
// burn-rate window (3d) and any dashboard's $__rate_interval. Longer windows only cost (a
// 292-year window made the diagnosis subqueries allocate tens of GB).
const maxWindow = 31 * 24 * time.Hour

// maxListLen caps each list of a query (targets, models, stages, …) after duplicates are removed.
const maxListLen = 1000

// Decode decodes q as a query of type name (its DataQuery.QueryType, else the queryType of its
// JSON): the type's request struct, the time grid (step from the interval, the scrape
// interval and max data points, aligned to the step since the epoch), the rate window, and the
// checks every type shares. Unknown JSON fields are ignored (Grafana adds refId, datasource, …).
func Decode(name string, q backend.DataQuery, s *settings.Settings) (*Decoded, error) {
	t, ok := Lookup(name)
	if !ok {
		return nil, badQueryf("queryType %q is not one of %s", name, strings.Join(Names(), ", "))
	}
	req := t.new()
	if len(q.JSON) > 0 {
		if err := json.Unmarshal(q.JSON, req); err != nil {
			return nil, badQueryf("query JSON is invalid: %v", err)
		}
	}
	c := req.common()
	c.QueryType = name
	p, err := plan(q, c, s)
	if err != nil {
		return nil, err
	}
	// Lists are sets: a multi-value variable may repeat a name, and every repetition would
	// cost a copy of the work (and duplicate alert series).
	lists := []namedList{{"targets", &c.Targets}, {"models", &c.Models}}
	if l, ok := req.(lister); ok {
		lists = append(lists, l.lists()...)
	}
	for _, l := range lists {
		*l.list = dedupe(*l.list)
		if len(*l.list) > maxListLen {
			return nil, badQueryf("%s: %d distinct values, more than the %d a query may list", l.name, len(*l.list), maxListLen)
		}
	}
	for _, tn := range c.Targets {
		if _, ok := s.Target(tn); !ok {
			if _, ok := s.Agent(tn); !ok {
				return nil, badQueryf("targets: %q is not a target configured in this data source", tn)
			}
			if !t.agentsAsTargets {
				return nil, badQueryf("targets: %q is a GPU agent; a %s query reads inference targets (GPU agents are read by gpu, raw and targets queries)", tn, name)
			}
		}
	}
	for _, m := range c.Models {
		if strings.TrimSpace(m) == "" {
			return nil, badQueryf("models: an empty model name; leave models empty to select every model")
		}
	}
	by, err := groupBy(c.GroupBy, s, c.Targets)
	if err != nil {
		return nil, err
	}
	if c.GroupBy == "adapter" {
		p.Notes = append(p.Notes, analysis.Notice{Severity: analysis.Info, Text: noteNoAdapterLabel})
	}
	p.Scope = catalog.Scope{Targets: c.Targets, Models: c.Models, By: by, User: userMetricsInScope(s, c.Targets)}
	if s.IsRemote() {
		// A remote store gets no staleness marker when its server's targets are relabelled or
		// moved (the embedded store does: collect/stale.go), so a gauge series counts only with
		// a sample in the last three scrape intervals (catalog.Scope.Fresh).
		p.Scope.Fresh = 3 * s.ScrapeInterval
	}
	if v, ok := req.(validator); ok {
		if err := v.validate(s); err != nil {
			return nil, err
		}
	}
	return &Decoded{Type: t, Plan: p, Req: req}, nil
}

// plan resolves the time grid and the rate window of a query.
func plan(q backend.DataQuery, c *Common, s *settings.Settings) (fetch.Plan, error) {
	var p fetch.Plan
	p.Start, p.End = q.TimeRange.From, q.TimeRange.To
	if p.Start.Year() < 1970 || p.End.Year() > 9999 || p.End.Sub(p.Start) > maxRange {
		return p, badQueryf("time range %s to %s is outside what can be queried (at most %d years, from 1970)", p.Start.Format(time.RFC3339), p.End.Format(time.RFC3339), int(maxRange.Hours()/24/365))
	}
	if !p.End.After(p.Start) {
		p.End = p.Start.Add(time.Second)
	}
	p.From, p.To = p.Start, p.End
	p.Step = q.Interval
	if p.Step < s.ScrapeInterval {
		p.Step = s.ScrapeInterval
	}
	rng := p.End.Sub(p.Start)
	if q.MaxDataPoints > 0 && rng/time.Duration(q.MaxDataPoints) > p.Step {
		p.Step = rng / time.Duration(q.MaxDataPoints)
	}
	if rng/p.Step > maxPoints {
		p.Step = rng / maxPoints
	}
	p.Step = p.Step.Truncate(time.Second)
	if p.Step < time.Second {
		p.Step = time.Second
	}
	// Align to multiples of the step since the Unix epoch, like Grafana's Prometheus data
	// source, so a refresh evaluates the same instants.
	p.Start = fetch.AlignToStep(p.Start, p.Step)
	p.End = fetch.AlignToStep(p.End, p.Step)
	if p.End.Before(p.Start) {
		p.End = p.Start
	}
	p.Window = p.Step
	if min := 4 * s.ScrapeInterval; p.Window < min {
		p.Window = min
	}
	if c.Window == "" {
		return p, nil
	}
	w := expandMacros(c.Window, q, p.Step, s.ScrapeInterval)
	d, err := model.ParseDuration(w)
	if err != nil || d <= 0 {
		if w != c.Window {
			return p, badQueryf("window: %q (expanded to %q) is not a duration such as 1m or 5m", c.Window, w)
		}
		return p, badQueryf("window: %q is not a duration such as 1m, 5m or $__rate_interval", c.Window)
	}
	p.Window = time.Duration(d)
	if p.Window > maxWindow {
		return p, badQueryf("window: %q is longer than %s, the longest rate window a query may use (retention is at most 90d; SLO periods are set on objectives, not here)", c.Window, model.Duration(maxWindow))
	}
	if min := minWindow(s.ScrapeInterval); p.Window < min {
		p.Notes = append(p.Notes, analysis.Notice{Severity: analysis.Warning, Text: fmt.Sprintf(
			"window %s is shorter than two scrape intervals (%s at a %s scrape interval), too short to hold the two samples a rate needs; raised to %s",
			model.Duration(p.Window), model.Duration(min), model.Duration(s.ScrapeInterval), model.Duration(min))})
		p.Window = min
	}
	return p, nil
}

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

// minWindow is the shortest usable rate window: two scrape intervals, so that every window
// holds at least two samples of a series scraped on time (a window is left-open, (t−w, t]).
// Shorter windows are raised to it with a notice, as Grafana's $__rate_interval never goes
// below the scrape interval.
func minWindow(scrape time.Duration) time.Duration { return 2 * scrape }

// macros are Grafana's interval variables a window may be written with, in the order they are
// replaced (longer names first, so $__interval_ms is not read as $__interval followed by "_ms").
var macros = []string{"__rate_interval_ms", "__rate_interval", "__interval_ms", "__interval", "__range_ms", "__range_s", "__range"}

// expandMacros replaces Grafana's interval variables in a window, as Grafana's front end does
// before a query reaches a data source, so alert rules (which send the query JSON as saved) get
// the same window:
//
//   - $__interval: the request's interval (q.Interval, Grafana's max(range/max data points,
//     min interval)); the plan's step when the request carries none;
//   - $__rate_interval: max($__interval + scrape interval, 4 × scrape interval), Grafana's
//     definition for Prometheus data sources;
//   - $__range: the request's time range (To − From);
//   - the _ms variants give whole milliseconds and $__range_s whole seconds, to be followed
//     by a unit as in Grafana ("${__interval_ms}ms").
//
// Both $name and ${name} spellings are replaced. Durations are written in Prometheus notation
// (1m30s).
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

// noteNoAdapterLabel is the notice of groupBy adapter: no engine the catalogue reads labels its
// request metrics by LoRA adapter (vLLM's model_name is the served model; the adapters are
// only listed in lora_requests_info and lora_adapter_loaded), so the answer is not split.
const noteNoAdapterLabel = "groupBy adapter: no engine in scope labels its request metrics by LoRA adapter (vLLM names the served model in model_name and lists adapters only in lora_requests_info and lora_adapter_loaded), so the series are not split by adapter; the saturation query shows the adapters with running and waiting requests and those loaded"

// notDimensions are labels a groupBy may not name as a dimension: the scrape's, the histogram
// bound, and the plugin's own output labels.
var notDimensions = []string{"job", "instance", "le", "quantile", "model_name", "target", "model", "stage", "stat", "bound", "signal", "source"}

// userMetricsInScope reports whether a target in scope (all when targets is empty) maps its own
// metrics to signals (settings Target.Metrics): only then do the builders read engine "custom".
func userMetricsInScope(s *settings.Settings, targets []string) bool {
	for _, t := range s.Targets {
		if len(t.Metrics) > 0 && (len(targets) == 0 || slices.Contains(targets, t.Name)) {
			return true
		}
	}
	return false
}

// groupBy turns the groupBy field into the scope's canonical groups. adapter has no group:
// no engine labels requests by adapter (see noteNoAdapterLabel).
//
// A target group in scope (remote mode) adds its target and group labels (e.g. "pod",
// "deployment") as dimensions.
//
// Where a target in scope maps its own metrics (settings Target.Metrics), any other label of
// them may be named (e.g. "dtype"): its group is catalog.DimensionPrefix + the label.
func groupBy(g string, s *settings.Settings, targets []string) ([]string, error) {
	switch g {
	case "", "none", "adapter":
		return nil, nil
	case "target", "model", "tenant", "priority", "provider":
		return []string{g}, nil
	case "engine":
		// An engine index names an engine only within its target: grouped by engine alone,
		// the KV-cache usage of engine 0 of a healthy and of a saturated server was averaged
		// into one half-full engine (the overview's KV-cache peak read 52 % while the
		// saturated engine stood at 96 %).
		return []string{"target", "engine"}, nil
	case "target_model":
		return []string{"target", "model"}, nil
	}
	// A label of a remote-mode target group in scope (settings.TargetGroup): one series per
	// discovered target (groupBy "pod") or per group label value (groupBy "deployment").
	if slices.Contains(s.GroupLabelsInScope(targets), g) {
		return []string{catalog.DimensionPrefix + g}, nil
	}
	if userMetricsInScope(s, targets) {
		if !model.LegacyValidation.IsValidLabelName(g) || strings.HasPrefix(g, "__") || slices.Contains(notDimensions, g) {
			return nil, badQueryf("groupBy: %q is not a label of your own metrics that can group them (none, target, model, target_model, engine, adapter, tenant, priority, provider or a label such as dtype)", g)
		}
		return []string{catalog.DimensionPrefix + g}, nil
	}
	if gl := s.GroupLabelsInScope(targets); len(gl) > 0 {
		return nil, badQueryf("groupBy: %q is not one of none, target, model, target_model, engine, adapter, tenant, priority, provider or a label of the target groups in scope (%s)", g, strings.Join(gl, ", "))
	}
	return nil, badQueryf("groupBy: %q is not one of none, target, model, target_model, engine, adapter, tenant, priority, provider", g)
}

// meta is what every frame of a run's answer carries: its PromQL, its notices and the
// server's warnings; thresholds (seconds by stage) are drawn on those stages' series.
func meta(r *fetch.Run, thresholds map[string]float64) frames.Meta {
	return frames.Meta{Queries: r.Queries(), Notices: r.Notes.List(), Thresholds: thresholds, Server: r.ServerNotes()}
}
