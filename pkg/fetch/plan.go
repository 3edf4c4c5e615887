package fetch

import (
	"time"

	"github.com/inferscope/inferscope-llm-datasource/pkg/analysis"
	"github.com/inferscope/inferscope-llm-datasource/pkg/catalog"
)

// Plan is a decoded query's time grid and scope: what every read of the query shares.
type Plan struct {
	// Start and End are the step-aligned range of range queries.
	Start, End time.Time
	// From and To are the range as Grafana sent it.
	From, To time.Time
	// Step is the resolution of range queries; Window the rate window.
	Step, Window time.Duration
	// Scope holds the targets and models asked for (empty: all) and the groups.
	Scope catalog.Scope
	// Notes are notices decided while decoding (e.g. a window raised to the usable
	// minimum); every run of the plan starts with them.
	Notes []analysis.Notice
	// Gateways are the targets in the query's selection that are the llm-d router's endpoint
	// picker (GatewayPlan), whether Scope reads them (Scope.Gateway) or leaves them out.
	Gateways []string
	// TenantCutoff, in a query grouped by tenant, is the last tenant kept in name order: the
	// TenantBound-th of the routers' stored fairness_id values; later ones are folded into
	// catalog.OverflowTenant in every result of the run, so all its frames agree. "" keeps all.
	TenantCutoff string
}

// Narrow returns a copy of p whose scope holds the given targets and models.
func (p Plan) Narrow(targets, models []string) Plan {
	p.Scope.Targets, p.Scope.Models = targets, models
	return p
}

// AlignToStep rounds t down to a multiple of step counted from the Unix epoch.
func AlignToStep(t time.Time, step time.Duration) time.Time {
	ms := step.Milliseconds()
	return time.UnixMilli(t.UnixMilli() / ms * ms).In(t.Location())
}
