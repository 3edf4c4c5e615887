package queries

import (
	"slices"
	"strings"

	"github.com/inferscope/inferscope-llm-datasource/pkg/catalog"
)

// This file holds the parsing of the fields several query types share: latency stages
// (latency, buckets, regression), signal names (the enums of gpu, latency, buckets,
// regression, tokens) and the source field (latency, slo).

// signalNames renders signals as strings.
func signalNames(sigs []catalog.Signal) []string {
	out := make([]string, 0, len(sigs))
	for _, s := range sigs {
		out = append(out, string(s))
	}
	return out
}

// parseStages parses a stages field (catalog.LatencyStages); def when empty.
func parseStages(names []string, def []catalog.Signal) ([]catalog.Signal, error) {
	if len(names) == 0 {
		return def, nil
	}
	valid := map[string]bool{}
	for _, s := range catalog.LatencyStages {
		valid[string(s)] = true
	}
	out := make([]catalog.Signal, 0, len(names))
	for _, n := range names {
		if !valid[n] {
			return nil, badQueryf("stages: %q is not one of %s", n, strings.Join(signalNames(catalog.LatencyStages), ", "))
		}
		out = append(out, catalog.Signal(n))
	}
	return out, nil
}

// sources are the values of the source field of latency and slo.
var sources = []string{"engine", "probe"}

// checkSource validates a source field.
func checkSource(s string) error {
	if s != "" && !slices.Contains(sources, s) {
		return badQueryf("source: %q is neither engine nor probe", s)
	}
	return nil
}
