package plugin

import (
	"context"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/data"

	"github.com/inferscope/inferscope-llm-datasource/pkg/analysis/inventory"
	"github.com/inferscope/inferscope-llm-datasource/pkg/catalog"
	"github.com/inferscope/inferscope-llm-datasource/pkg/collect"
	"github.com/inferscope/inferscope-llm-datasource/pkg/frames"
	"github.com/inferscope/inferscope-llm-datasource/pkg/settings"
)

// lookback is how far back the stored metric names and models of a target are read.
const lookback = time.Hour

// targetsInScope returns the configured targets a query selects (all when none named).
func (i *Instance) targetsInScope(names []string) []settings.Target {
	if len(names) == 0 {
		return i.settings.Targets
	}
	var out []settings.Target
	for _, n := range names {
		if t, ok := i.settings.Target(n); ok {
			out = append(out, t)
		}
	}
	return out
}

// statuses returns the collector's view of every target and agent by name.
// Collector.Status rebuilds every entry, so callers ask once per query.
func (i *Instance) statuses() map[string]collect.TargetStatus {
	if i.remote != nil {
		ctx, cancel := context.WithTimeout(context.Background(), i.settings.Remote.Timeout)
		defer cancel()
		return i.remoteStatuses(ctx)
	}
	out := map[string]collect.TargetStatus{}
	if i.collector == nil {
		return out
	}
	for _, st := range i.collector.Status() {
		out[st.Name] = st
	}
	return out
}

// detectionCache remembers each target's detected engine for one scrape interval.
type detectionCache struct {
	mu   sync.Mutex
	at   map[string]time.Time
	det  map[string]catalog.Detection
	name map[string][]string
}

func newDetectionCache() *detectionCache {
	return &detectionCache{at: map[string]time.Time{}, det: map[string]catalog.Detection{}, name: map[string][]string{}}
}

func (i *Instance) cache() *detectionCache { return i.detections }

// metricNames returns the stored sample names of a target in the hour
// before at (the end of the query range; now for health and resources).
// Results are cached for one scrape interval.
func (i *Instance) metricNames(ctx context.Context, name string, at time.Time) []string {
	c := i.cache()
	c.mu.Lock()
	if t, ok := c.at[name]; ok && i.now().Sub(t) < i.settings.ScrapeInterval {
		n := c.name[name]
		c.mu.Unlock()
		return n
	}
	c.mu.Unlock()
	names, err := i.querier.MetricNames(ctx, `{job="`+escapeLabel(name)+`"}`, at.Add(-lookback), at)
	if err != nil {
		return nil
	}
	c.mu.Lock()
	c.at[name], c.name[name], c.det[name] = i.now(), names, catalog.Detect(names)
	c.mu.Unlock()
	return names
}

// detectionOf returns what the catalogue knows of a target: its settings
// override (engine only), else Detect on the stored names. ok is false before
// the first successful scrape.
func (i *Instance) detectionOf(ctx context.Context, name string, at time.Time) (catalog.Detection, bool) {
	if t, ok := i.settings.Target(name); ok && t.Engine != "" {
		d := catalog.Detection{Engine: catalog.Engine(t.Engine)}
		if i.querier != nil && len(i.metricNames(ctx, name, at)) > 0 {
			c := i.cache()
			c.mu.Lock()
			if det := c.det[name]; det.Engine == d.Engine {
				d = det
			}
			c.mu.Unlock()
		}
		return d, true
	}
	if i.querier == nil || len(i.metricNames(ctx, name, at)) == 0 {
		return catalog.Detection{}, false
	}
	c := i.cache()
	c.mu.Lock()
	defer c.mu.Unlock()
	d := c.det[name]
	return d, d.Engine != "" && d.Engine != catalog.EngineUnknown
}

// engineOf returns the engine of a target (see detectionOf).
func (i *Instance) engineOf(ctx context.Context, name string) (catalog.Engine, bool) {
	d, ok := i.detectionOf(ctx, name, i.now())
	return d.Engine, ok
}

// quotedRE matches a long quoted fragment inside an error message: scrape
// parsers quote the offending page content, which may echo request headers.
var quotedRE = regexp.MustCompile(`"[^"]*"`)

// maxQuoted is the longest quoted fragment kept in an error (parser tokens
// such as "INVALID" stay readable).
const maxQuoted = 12

// maxErrorLen caps an error shown in notices, tables and health messages.
const maxErrorLen = 300

// sanitizeError prepares a scrape error for panel viewers: long quoted page
// content is elided (a page may echo an Authorization header back) and the
// message is capped at maxErrorLen bytes.
func sanitizeError(s string) string {
	s = quotedRE.ReplaceAllStringFunc(s, func(q string) string {
		if len(q)-2 > maxQuoted {
			return `"…"`
		}
		return q
	})
	if len(s) > maxErrorLen {
		s = strings.ToValidUTF8(s[:maxErrorLen], "") + "…"
	}
	return s
}

func escapeLabel(s string) string {
	out := make([]rune, 0, len(s))
	for _, r := range s {
		if r == '\\' || r == '"' {
			out = append(out, '\\')
		}
		out = append(out, r)
	}
	return string(out)
}

// inventory gathers what the collector and the store know about every target and agent.
func (i *Instance) inventory(ctx context.Context) []inventory.Row {
	statuses := i.statuses()
	var obs []inventory.Observed
	add := func(name, kind, url, override string) {
		st := statuses[name]
		o := inventory.Observed{Name: name, Kind: kind, URL: url, EngineOverride: override, Up: st.Up,
			LastScrape: st.LastScrape, LastDuration: st.LastDuration, Series: st.Series, LastError: sanitizeError(st.LastError)}
		if i.querier != nil {
			o.MetricNames = i.metricNames(ctx, name, i.now())
			now := i.now()
			o.Models, _ = i.querier.LabelValues(ctx, "model_name", `{job="`+escapeLabel(name)+`"}`, now.Add(-lookback), now)
		}
		obs = append(obs, o)
	}
	for _, t := range i.settings.Targets {
		add(t.Name, "target", i.shownURL(t.URL, t.SelectorOrDefault()), t.Engine)
	}
	for _, a := range i.settings.GPUAgents {
		add(a.Name, "agent", i.shownURL(a.URL, a.SelectorOrDefault()), "")
	}
	return inventory.Build(obs)
}

func (i *Instance) queryTargets(ctx context.Context, p *plan) (data.Frames, error) {
	rows := i.inventory(ctx)
	if len(p.Targets) > 0 {
		keep := map[string]bool{}
		for _, t := range p.Targets {
			keep[t] = true
		}
		filtered := rows[:0]
		for _, r := range rows {
			if keep[r.Name] {
				filtered = append(filtered, r)
			}
		}
		rows = filtered
	}
	return frames.Targets(rows, frames.Meta{}), nil
}
