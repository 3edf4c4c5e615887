package queries

import (
	"context"
	"fmt"
	"strings"

	"github.com/grafana/grafana-plugin-sdk-go/data"
	"github.com/prometheus/common/model"

	"github.com/inferscope/inferscope-llm-datasource/pkg/analysis"
	"github.com/inferscope/inferscope-llm-datasource/pkg/catalog"
	"github.com/inferscope/inferscope-llm-datasource/pkg/fetch"
	"github.com/inferscope/inferscope-llm-datasource/pkg/frames"
	"github.com/inferscope/inferscope-llm-datasource/pkg/settings"
)

// Targets is the targets query: the inventory table (default), or (format telemetry) one
// number per target and signal it exported in the range, 1 when it left the latest scrape.
type Targets struct {
	Common
	// Format is table (default) or telemetry.
	Format string `json:"format,omitempty"`
}

var targetsEnums = map[string][]string{"format": {"table", "telemetry"}}

func (q *Targets) validate(*settings.Settings) error {
	if q.Format != "" && q.Format != "table" && q.Format != "telemetry" {
		return badQueryf("format: %q is neither table (the inventory) nor telemetry (per target and signal, 1 when a family it exported in the range is missing from its latest scrape)", q.Format)
	}
	return nil
}

// runTargets answers the inventory table of the selected targets (fetch.Env.Inventory), or
// with format telemetry the signals each stopped exporting (targetsTelemetry).
func runTargets(ctx context.Context, env *fetch.Env, p fetch.Plan, q *Targets) (data.Frames, error) {
	if q.Format == "telemetry" {
		return targetsTelemetry(ctx, env, p, q)
	}
	rows := env.Inventory(ctx)
	if len(q.Targets) > 0 {
		keep := map[string]bool{}
		for _, t := range q.Targets {
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
	// The inventory reads names and labels, not samples: no PromQL, and no notices of its own
	// but one per re-exporter (a gateway's page, counted once with its engines), then the
	// server's warnings.
	var notes analysis.Notices
	for _, row := range rows {
		if row.ReExporter != "" {
			notes.Add(analysis.Info, catalog.ReExporterSentence(row.Name, row.ReExporter, nil))
		}
	}
	return frames.Targets(rows, frames.Meta{Notices: notes.List(), Server: fetch.ServerNotes(ctx)}), nil
}

// targetsTelemetry answers a targets query with format "telemetry": per
// target in scope and per signal it exported in the queried range (the one
// availability answer, catalog.AssessAll over the names stored in the range),
// whether its latest scrape still carries it (catalog.MissingNow). The
// latest scrape's names come from an instant PromQL query at the range end,
// `count by (__name__) ({job="<target>"})`: a family that left the page got
// Prometheus staleness markers at the next scrape, so it is not returned.
// A target whose latest scrape failed is left out with a notice: that is the
// target-down alert's case, not missing telemetry.
func targetsTelemetry(ctx context.Context, env *fetch.Env, p fetch.Plan, q *Targets) (data.Frames, error) {
	r := fetch.NewRun(ctx, env, p)
	statuses := env.Status()
	var rows []frames.TelemetryRow
	for _, t := range env.Targets(q.Targets) {
		if st, ok := statuses[t.Name]; ok && !st.Up && !st.LastScrape.IsZero() {
			r.Notes.Add(analysis.Info, fmt.Sprintf("target %s is down: its telemetry is not checked (see the target's up series)", t.Name))
			continue
		}
		v := env.ViewOf(ctx, t.Name, p.Start.Add(-p.Window), p.To)
		if !v.OK {
			r.Notes.Add(analysis.Info, fmt.Sprintf("target %s: no known engine's metrics are stored in the range, nothing to check", t.Name))
			continue
		}
		vec, err := r.Instant(ctx, catalog.LatestNamesPromQL(t.Name), p.To)
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
				r.Notes.Add(analysis.Warning, fmt.Sprintf("target %s stopped exporting %s: %s was stored in the range but is not on its latest scrape",
					t.Name, m.Signal, strings.Join(m.Had, " / ")))
			}
			rows = append(rows, row)
		}
	}
	return frames.Telemetry(rows, meta(r, nil)), nil
}
