package fetch

import (
	"context"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/inferscope/inferscope-llm-datasource/pkg/catalog"
)

// Lookback is how far back the health check, the targets table and the resources read the
// stored metric names and models of a target.
const Lookback = time.Hour

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

// NameCache remembers the stored names of each target per queried range for one scrape
// interval: a query asks for them once per signal. One per data-source instance.
type NameCache struct {
	mu      sync.Mutex
	entries map[nameKey]cachedNames
}

// NewNameCache returns an empty cache.
func NewNameCache() *NameCache { return &NameCache{entries: map[nameKey]cachedNames{}} }

// MetricNames returns the sample names stored for a target between from and to (the queried
// range, widened by the rate window by callers; the last hour for health and resources).
// Results are cached per range for one scrape interval. Nil when nothing is stored or the
// store failed.
func (e *Env) MetricNames(ctx context.Context, name string, from, to time.Time) []string {
	if e.Querier == nil {
		return nil
	}
	key := nameKey{name, from.UnixMilli(), to.UnixMilli()}
	c := e.Names
	if c != nil {
		c.mu.Lock()
		if ent, ok := c.entries[key]; ok && e.now().Sub(ent.at) < e.Settings.ScrapeInterval {
			c.mu.Unlock()
			return ent.names
		}
		c.mu.Unlock()
	}
	names, err := e.Querier.MetricNames(ctx, catalog.JobSelector(name), from, to)
	if err != nil {
		return nil
	}
	if c != nil {
		c.mu.Lock()
		if len(c.entries) >= maxCachedRanges {
			clear(c.entries)
		}
		c.entries[key] = cachedNames{at: e.now(), names: names}
		c.mu.Unlock()
	}
	return names
}

// TargetView is the one detection of a target over a range, shared by the health check, the
// targets table, /signals and every query: the names stored for it in the range,
// catalog.DetectStored over them (with the settings' engine override), and catalog.Assess on
// demand.
type TargetView struct {
	Name  string
	Names []string
	Det   catalog.Detection
	// OK is false when no engine is known (nothing stored, or no known family and no override).
	OK bool
}

// Assess returns the availability of one signal for the target (catalog.Assess).
func (v TargetView) Assess(s catalog.Signal) catalog.TargetSignal {
	return catalog.Assess(v.Det, v.Names, s)
}

// ViewOf builds the target's view from the names stored in [from, to].
func (e *Env) ViewOf(ctx context.Context, name string, from, to time.Time) TargetView {
	return e.ViewFromNames(name, e.MetricNames(ctx, name, from, to))
}

// ViewFromNames builds a target's view from sample names; the health check passes the probed
// page's names filtered by catalog.StoredNames, so it concludes what a query over the stored
// samples concludes.
func (e *Env) ViewFromNames(name string, names []string) TargetView {
	override := catalog.Engine("")
	if t, ok := e.Settings.Target(name); ok {
		override = catalog.Engine(t.Engine)
	}
	v := TargetView{Name: name, Names: names}
	if len(names) == 0 && override == "" {
		v.Det = catalog.Detection{Engine: catalog.EngineUnknown}
		return v
	}
	v.Det, v.OK = catalog.DetectStored(names, override)
	return v
}

// NamesFrom is the start of the range whose stored names decide a query's detection and
// availability: the first step's rate window starts there.
func (r *Run) NamesFrom() time.Time { return r.Plan.Start.Add(-r.Plan.Window) }

// Views returns each target in scope with its one detection over the queried range (computed
// once per run).
func (r *Run) Views(ctx context.Context) []TargetView {
	r.viewsOnce.Do(func() {
		for _, t := range r.Env.Targets(r.Plan.Scope.Targets) {
			r.targetViews = append(r.targetViews, r.Env.ViewOf(ctx, t.Name, r.NamesFrom(), r.Plan.End))
		}
	})
	return r.targetViews
}

// quotedRE matches a long quoted fragment inside an error message: scrape parsers quote the
// offending page content, which may echo request headers.
var quotedRE = regexp.MustCompile(`"[^"]*"`)

// maxQuoted is the longest quoted fragment kept in an error (parser tokens such as "INVALID"
// stay readable).
const maxQuoted = 12

// maxErrorLen caps an error shown in notices, tables and health messages.
const maxErrorLen = 300

// SanitizeError prepares a scrape error for panel viewers: long quoted page content is elided
// (a page may echo an Authorization header back) and the message is capped at 300 bytes.
func SanitizeError(s string) string {
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
