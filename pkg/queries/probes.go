package queries

import (
	"fmt"
	"strings"

	"github.com/inferscope/inferscope-llm-datasource/pkg/analysis"
	"github.com/inferscope/inferscope-llm-datasource/pkg/fetch"
)

// This file holds the client-side probes of a query's targets, which the probe, latency
// (source probe), breakdown (outside the engine) and slo (source probe) queries read.

// probeScope is the probes of a query's targets: their names and the target
// each exercises. A query with no probe for its targets is answered with a
// notice and no frames, never an error (a panel of a target without a probe).
type probeScope struct {
	names  []string
	target map[string]string
}

// probesOf returns the probes (settings probes[]) of the plan's targets, every probe when it
// names none.
func probesOf(env *fetch.Env, p fetch.Plan) probeScope {
	ps := probeScope{target: map[string]string{}}
	for _, n := range env.Settings.ProbesOf(p.Scope.Targets) {
		pr, _ := env.Settings.Probe(n)
		ps.names = append(ps.names, n)
		ps.target[n] = pr.Target
	}
	return ps
}

// noProbeNotice says that no probe is configured for the run's targets.
func noProbeNotice(r *fetch.Run) {
	t := "every target"
	if len(r.Plan.Scope.Targets) > 0 {
		t = strings.Join(r.Plan.Scope.Targets, ", ")
	}
	r.Notes.Add(analysis.Info, fmt.Sprintf("no client-side probe is configured for %s (settings probes[]); see docs/probe.md", t))
}
