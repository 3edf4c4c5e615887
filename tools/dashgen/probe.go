package main

import (
	"github.com/grafana/grafana-foundation-sdk/go/cog"
	"github.com/grafana/grafana-foundation-sdk/go/dashboard"
)

// probePanels are the client-side probe's panels of the overview (issue 26),
// in a collapsed row:
// TTFT as users see it beside the engine's, and the per-request token jitter.
// They stay empty (with a notice) for targets without a probe (settings probes[]).
func probePanels() []cog.Builder[dashboard.Panel] {
	return []cog.Builder[dashboard.Panel]{ts("TTFT p99: client (probe) vs engine",
		"99th percentile time to first token per target, as the engine's histogram counts it (source engine) and as the client-side probe measured it on its own small requests (source probe: API server, tokenizer, gateway and network included). The gap between the two is time spent outside the engine; see docs/probe.md. "+estimatorNote,
		"s", 12, 8,
		query(sel("queryType", "latency", "stages", []string{"ttft"}, "stats", []string{"p99"}, "groupBy", "target", "bounds", false, "source", "engine")...)).
		WithTarget(queryRef("B", sel("queryType", "latency", "stages", []string{"ttft"}, "stats", []string{"p99"}, "groupBy", "target", "bounds", false, "source", "probe")...)),
		ts("Token jitter (probe)",
			"Per probe request: the largest gap between two streamed tokens (max_gap, exact per request, not a bucket bound), and the mean of each request's gap standard deviation (stddev_mean), in seconds (the query's variance_max, in s², is hidden: one unit per axis). One stalled token shows as a max_gap spike while the averages stay flat.",
			unitSeconds, 12, 8, query(sel("queryType", "probe", "view", "jitter")...)).
			// variance_max is in s², not seconds: one unit per axis, so it is hidden here
			// (the probe query's jitter view still returns it).
			OverrideByRegexp(`.*variance_max.*`, props(prop("custom.hideFrom", map[string]any{"viz": true, "legend": true, "tooltip": true}))).
			Id(9)} // the probe's sustained-token-stalls alert rule links here
}
