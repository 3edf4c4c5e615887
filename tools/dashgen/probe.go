package main

import "github.com/grafana/grafana-foundation-sdk/go/dashboard"

// probePanels adds the client-side probe's panels to the overview (issue 26):
// TTFT as users see it beside the engine's, and the per-request token jitter.
// They stay empty (with a notice) for targets without a probe (settings probes[]).
func probePanels(b *dashboard.DashboardBuilder) {
	b.WithPanel(ts("TTFT p99: client (probe) vs engine",
		"99th percentile time to first token per target, as the engine's histogram counts it (source engine) and as the client-side probe measured it on its own small requests (source probe: API server, tokenizer, gateway and network included). The gap between the two is time spent outside the engine; see docs/probe.md.",
		"s", 12, 8,
		query(sel("queryType", "latency", "stages", []string{"ttft"}, "stats", []string{"p99"}, "groupBy", "target", "bounds", false, "source", "engine")...)).
		WithTarget(queryRef("B", sel("queryType", "latency", "stages", []string{"ttft"}, "stats", []string{"p99"}, "groupBy", "target", "bounds", false, "source", "probe")...)))
	b.WithPanel(ts("Token jitter (probe)",
		"Per probe request: the largest gap between two streamed tokens (max_gap, exact per request, not a bucket bound), the mean of each request's gap standard deviation (stddev_mean) and the largest gap variance (variance_max, s²). One stalled token shows as a max_gap spike while the averages stay flat.",
		"", 12, 8, query(sel("queryType", "probe", "view", "jitter")...)))
}
