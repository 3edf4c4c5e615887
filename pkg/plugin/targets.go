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

// nameKey identifies one cached answer: a target and the exact range asked.
type nameKey struct {
	target   string
	from, to int64 // Unix milliseconds
}

// cachedNames is the stored sample names of a target in a range, as read at `at`.
type cachedNames struct {
	at    time.Time
	names []string
}

// maxCachedRanges bounds the name cache; it is emptied when full.
const maxCachedRanges = 1024

// detectionCache remembers the stored names of each target per queried range
// for one scrape interval: a query asks for them once per signal.
type detectionCache struct {
	mu      sync.Mutex
	entries map[nameKey]cachedNames
}

func newDetectionCache() *detectionCache {
	return &detectionCache{entries: map[nameKey]cachedNames{}}
}

// metricNames returns the sample names stored for a target between from and
// to (the queried range, widened by the rate window by callers; the last
// hour for health and resources). Results are cached per range for one
// scrape interval. Nil when nothing is stored or the store failed.
func (i *Instance) metricNames(ctx context.Context, name string, from, to time.Time) []string {
	if i.querier == nil {
		return nil
	}
	key := nameKey{name, from.UnixMilli(), to.UnixMilli()}
	c := i.detections
	c.mu.Lock()
	if e, ok := c.entries[key]; ok && i.now().Sub(e.at) < i.settings.ScrapeInterval {
		c.mu.Unlock()
		return e.names
	}
	c.mu.Unlock()
	names, err := i.querier.MetricNames(ctx, `{job="`+escapeLabel(name)+`"}`, from, to)
	if err != nil {
		return nil
	}
	c.mu.Lock()
	if len(c.entries) >= maxCachedRanges {
		clear(c.entries)
	}
	c.entries[key] = cachedNames{at: i.now(), names: names}
	c.mu.Unlock()
	return names
}

// targetView is the one detection of a target over a range, shared by the
// health check, the targets table, /signals and every query: the names
// stored for it in the range, catalog.DetectStored over them (with the
// settings' engine override), and catalog.AssessAll on demand.
type targetView struct {
	Name  string
	Names []string
	Det   catalog.Detection
	// OK is false when no engine is known (nothing stored, or no known family and no override).
	OK bool
}

// assess returns the availability of one signal for the target (catalog.Assess).
func (v targetView) assess(s catalog.Signal) catalog.TargetSignal {
	return catalog.Assess(v.Det, v.Names, s)
}

// viewOf builds the target's view from the names stored in [from, to].
func (i *Instance) viewOf(ctx context.Context, name string, from, to time.Time) targetView {
	return i.viewFromNames(name, i.metricNames(ctx, name, from, to))
}

// viewFromNames builds a target's view from sample names; the health check
// passes the probed page's names filtered by catalog.StoredNames, so it
// concludes what a query over the stored samples concludes.
func (i *Instance) viewFromNames(name string, names []string) targetView {
	override := catalog.Engine("")
	if t, ok := i.settings.Target(name); ok {
		override = catalog.Engine(t.Engine)
	}
	v := targetView{Name: name, Names: names}
	if len(names) == 0 && override == "" {
		v.Det = catalog.Detection{Engine: catalog.EngineUnknown}
		return v
	}
	v.Det, v.OK = catalog.DetectStored(names, override)
	return v
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
			now := i.now()
			v := i.viewOf(ctx, name, now.Add(-lookback), now)
			o.MetricNames, o.Detection = v.Names, v.Det
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
	switch p.Format {
	case "", "table":
	case "telemetry":
		return i.targetsTelemetry(ctx, p)
	default:
		return nil, badQueryf("format: %q is neither table (the inventory) nor telemetry (per target and signal, 1 when a family it exported in the range is missing from its latest scrape)", p.Format)
	}
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
