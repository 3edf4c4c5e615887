package fetch

import (
	"context"
	"fmt"
	"strings"

	"github.com/inferscope/inferscope-llm-datasource/pkg/analysis"
	"github.com/inferscope/inferscope-llm-datasource/pkg/catalog"
)

// ScopeNotices says, per target in scope, why signals may have no data:
// the target is down, nothing is stored for it in the range, its engine is
// unknown, or per signal asked (catalog.Assess over the names stored in the
// range) that it is approximate, not seen (naming the metric names looked
// for) or absent.
func (r *Run) ScopeNotices(ctx context.Context, signals []catalog.Signal) {
	r.AvailabilityNotices(r.Views(ctx), signals)
}

// AvailabilityNotices is ScopeNotices for the given views (targets or GPU agents).
func (r *Run) AvailabilityNotices(views []TargetView, signals []catalog.Signal) {
	statuses := r.Env.statuses()
	for _, v := range views {
		st, known := statuses[v.Name]
		down := known && !st.Up && !st.LastScrape.IsZero()
		downWhy, downTail := "", "; its samples stop at the last successful scrape"
		if down {
			switch {
			case strings.Contains(st.LastError, "server returned HTTP status 4"):
				// The server answered with a client error (404: no such page): it is not down,
				// its URL serves no metrics page (a server without Prometheus metrics, such as
				// Ollama, or a wrong path). A 5xx or a redirect is the target failing: down.
				downWhy = fmt.Sprintf("target %s answers, but not with a metrics page: %s (a server that exposes no Prometheus metrics at this URL has no engine telemetry here; a client-side probe (settings probes[]) can still measure it)",
					v.Name, SanitizeError(st.LastError))
				downTail = "; nothing is stored from the page while it fails"
			default:
				downWhy = fmt.Sprintf("target %s is down", v.Name)
				if st.LastError != "" {
					downWhy += ": " + SanitizeError(st.LastError)
				}
			}
			if len(v.Names) > 0 { // with nothing stored, the notice below carries downWhy
				r.Notes.Add(analysis.Warning, downWhy+downTail)
			}
			if st.Overloaded {
				r.Notes.Add(analysis.Warning, fmt.Sprintf("target %s: the plugin could not keep up, not the target: its page arrived within the scrape timeout but was still being parsed and stored when it passed (inferscope_scrape_overloads_total counts these); give the plugin's host more CPU, raise scrapeTimeout and scrapeInterval, or drop series at the source", v.Name))
			}
		}
		asked := make([]string, len(signals))
		for k, s := range signals {
			asked[k] = string(s)
		}
		if len(v.Names) == 0 {
			msg := fmt.Sprintf("target %s: nothing is stored for it in the queried range, so %s have no data", v.Name, strings.Join(asked, ", "))
			switch {
			case down:
				msg += " (" + downWhy + ")"
			case !known || st.LastScrape.IsZero():
				msg += " (it has not been scraped yet)"
			}
			r.Notes.Add(analysis.Warning, msg)
			continue
		}
		if !v.OK {
			r.Notes.Add(analysis.Warning, fmt.Sprintf("target %s: no family of a known inference engine or GPU exporter is stored for it in the queried range, so %s have no data; set the engine in the target's settings if it is one", v.Name, strings.Join(asked, ", ")))
			continue
		}
		eng := v.Det.Engine
		for _, s := range signals {
			a := v.Assess(s)
			switch a.State {
			case catalog.StateApproximate:
				r.Notes.Add(analysis.Info, fmt.Sprintf("target %s (%s): %s is approximate: %s", v.Name, eng, s, a.Note))
			case catalog.StateNotSeen:
				r.Notes.Add(analysis.Warning, a.NotSeenSentence(v.Name, eng))
			case catalog.StateAbsent:
				r.Notes.Add(analysis.Info, a.AbsentSentence(v.Name, eng))
			}
		}
	}
}

// IdleNotices says, per target in scope and exported request signal, when
// no request was counted in the whole queried range (the histogram's count
// or the counter did not grow): its series then have no data, which is not
// an error. One instant query at the range's end per signal and set of
// stored names, grouped by target.
func (r *Run) IdleNotices(ctx context.Context, signals []catalog.Signal) error {
	rng := r.Plan.End.Sub(r.NamesFrom())
	for _, s := range signals {
		type group struct {
			metrics []catalog.Metric
			targets []string
		}
		var groups []group
		for _, v := range r.Views(ctx) {
			if !v.OK {
				continue
			}
			a := v.Assess(s)
			if !a.Exported() || (a.Metrics[0].Kind != catalog.KindHistogram && a.Metrics[0].Kind != catalog.KindCounter) {
				continue
			}
			placed := false
			for k := range groups {
				if sameMetrics(groups[k].metrics, a.Metrics) {
					groups[k].targets = append(groups[k].targets, v.Name)
					placed = true
					break
				}
			}
			if !placed {
				groups = append(groups, group{a.Metrics, []string{v.Name}})
			}
		}
		for _, g := range groups {
			// Gateway as the query's scope: without it the builders leave the llm-d router's
			// families out, and a router whose requests are read would be called unselected.
			sc := catalog.Scope{Targets: g.targets, Models: r.Plan.Scope.Models, By: []string{"target"}, User: r.Plan.Scope.User, Gateway: r.Plan.Scope.Gateway}
			var q string
			kind := g.metrics[0].Kind
			if kind == catalog.KindHistogram {
				hq, err := catalog.HistogramPromQLFor(g.metrics, sc, rng)
				if err != nil {
					return err
				}
				q = hq.Count
			} else {
				cq, err := catalog.CounterRatePromQL(s, sc, rng)
				if err != nil {
					return err
				}
				q = cq
			}
			vec, err := r.Instant(ctx, q, r.Plan.End)
			if err != nil {
				return err
			}
			// A target in the result had series that matched (0: they did not grow); one
			// absent from it had none matching the selector or the models filter, which is
			// not "no requests" (catalog.IdleSentence).
			grew, matched := map[string]bool{}, map[string]bool{}
			for _, smp := range vec {
				matched[string(smp.Metric["job"])] = true
				if float64(smp.Value) > 0 {
					grew[string(smp.Metric["job"])] = true
				}
			}
			for _, t := range g.targets {
				if !grew[t] {
					r.Notes.Add(analysis.Info, catalog.IdleSentence(t, s, kind, matched[t], r.Plan.Scope.Models))
				}
			}
		}
	}
	return nil
}

// Exporting reports whether at least one target in scope exports signal s (exactly or
// approximately) over the queried range, by the targets' one detection (Views). Query types
// read the optional families of newer engines (catalog.NewVLLMSignals) only then, so a panel
// over targets that never had a family runs no query for it and shows nothing about it.
func (r *Run) Exporting(ctx context.Context, s catalog.Signal) bool {
	for _, v := range r.Views(ctx) {
		if v.OK && v.Assess(s).Exported() {
			return true
		}
	}
	return false
}

// OptionalNotices is ScopeNotices for optional signals: for each signal that at least one
// target in scope exports (Exporting), every other target with a known engine gets its
// not_seen or absent sentence (catalog.TargetSignal); signals no target exports add nothing.
// It returns the signals that are exported somewhere, in the order given.
func (r *Run) OptionalNotices(ctx context.Context, signals []catalog.Signal) []catalog.Signal {
	var on []catalog.Signal
	for _, s := range signals {
		if r.Exporting(ctx, s) {
			on = append(on, s)
		}
	}
	for _, v := range r.Views(ctx) {
		if !v.OK {
			continue
		}
		for _, s := range on {
			a := v.Assess(s)
			switch a.State {
			case catalog.StateNotSeen:
				r.Notes.Add(analysis.Warning, a.NotSeenSentence(v.Name, v.Det.Engine))
			case catalog.StateAbsent:
				r.Notes.Add(analysis.Info, a.AbsentSentence(v.Name, v.Det.Engine))
			}
		}
	}
	return on
}
