package plugin

import (
	"strconv"
	"strings"

	"github.com/grafana/grafana-plugin-sdk-go/backend"
)

// orgOf is the Grafana organisation a request comes from, read from its
// plugin context's Namespace as Grafana writes it: "default" is organisation
// 1, "org-<id>" organisation <id>, and a Grafana Cloud stack's
// "stack-<id>"/"stacks-<id>" organisation 1 (a stack has one organisation).
// A context without a namespace it can read (a Grafana older than the
// plugin's grafanaDependency, a test host) falls back to the deprecated
// OrgID field; 0 means unknown, which the per-organisation stores read as 1
// (collect.OrgDataSourceDir, bench.OrgDir).
func orgOf(pc backend.PluginContext) int64 {
	ns := pc.Namespace
	switch {
	case ns == "default", strings.HasPrefix(ns, "stack-"), strings.HasPrefix(ns, "stacks-"):
		return 1
	case strings.HasPrefix(ns, "org-"):
		if id, err := strconv.ParseInt(strings.TrimPrefix(ns, "org-"), 10, 64); err == nil && id > 0 {
			return id
		}
	}
	return pc.OrgID //nolint:staticcheck // SA1019: the fallback for a context that carries no readable Namespace
}
