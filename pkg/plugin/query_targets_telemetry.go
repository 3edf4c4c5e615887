package plugin

import (
	"context"
	"fmt"
	"strings"

	"github.com/grafana/grafana-plugin-sdk-go/data"
	"github.com/prometheus/common/model"

	"github.com/inferscope/inferscope-llm-datasource/pkg/analysis"
	"github.com/inferscope/inferscope-llm-datasource/pkg/catalog"
	"github.com/inferscope/inferscope-llm-datasource/pkg/frames"
)

// targetsTelemetry answers a targets query with format "telemetry": per
// target in scope and per signal it exported in the queried range (the one
// availability answer, catalog.AssessAll over the names stored in the range),
// whether its latest scrape still carries it (catalog.MissingNow). The
// latest scrape's names come from an instant PromQL query at the range end,
// `count by (__name__) ({job="<target>"})`: a family that left the page got
// Prometheus staleness markers at the next scrape, so it is not returned.
// A target whose latest scrape failed is left out with a notice: that is the
// target-down alert's case, not missing telemetry.
func (i *Instance) targetsTelemetry(ctx context.Context, p *plan) (data.Frames, error) {
	r := i.newRun(p)
	statuses := i.statuses()
	var rows []frames.TelemetryRow
	for _, t := range i.targetsInScope(p.Targets) {
		if st, ok := statuses[t.Name]; ok && !st.Up && !st.LastScrape.IsZero() {
			r.notes.Add(analysis.Info, fmt.Sprintf("target %s is down: its telemetry is not checked (see the target's up series)", t.Name))
			continue
		}
		v := i.viewOf(ctx, t.Name, p.start.Add(-p.window), p.to)
		if !v.OK {
			r.notes.Add(analysis.Info, fmt.Sprintf("target %s: no known engine's metrics are stored in the range, nothing to check", t.Name))
			continue
		}
		vec, err := r.instantQuery(ctx, `count by (__name__) ({job="`+escapeLabel(t.Name)+`"})`, p.to)
		if err != nil {
			return nil, err
		}
		present := make([]string, 0, len(vec))
		for _, s := range vec {
			present = append(present, string(s.Metric[model.MetricNameLabel]))
		}
		for _, m := range catalog.MissingNow(catalog.AssessAll(v.Det, v.Names), present) {
			row := frames.TelemetryRow{Target: t.Name, Signal: string(m.Signal)}
			if m.Missing {
				row.Missing = 1
				r.notes.Add(analysis.Warning, fmt.Sprintf("target %s stopped exporting %s: %s was stored in the range but is not on its latest scrape",
					t.Name, m.Signal, strings.Join(m.Had, " / ")))
			}
			rows = append(rows, row)
		}
	}
	return frames.Telemetry(rows, r.meta()), nil
}
