package queries

import (
	"context"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"sort"

	"github.com/grafana/grafana-plugin-sdk-go/data"
	"github.com/prometheus/common/model"

	"github.com/inferscope/inferscope-llm-datasource/pkg/analysis"
	"github.com/inferscope/inferscope-llm-datasource/pkg/catalog"
	"github.com/inferscope/inferscope-llm-datasource/pkg/fetch"
	"github.com/inferscope/inferscope-llm-datasource/pkg/frames"
	"github.com/inferscope/inferscope-llm-datasource/pkg/settings"
)

// Raw is the raw query: one stored metric, from configured targets (or GPU agents) only.
type Raw struct {
	Common
	// Metric is the stored metric name (e.g. vllm:num_requests_running).
	Metric string `json:"metric,omitempty"`
	// Matchers are equality matchers, label → value.
	Matchers map[string]string `json:"matchers,omitempty"`
}

func (q *Raw) validate(s *settings.Settings) error {
	_, err := rawSelector(q, s)
	return err
}

// runRaw reads the metric's range over its selector (rawSelector), with a notice of what the
// collector stores when no series matched.
func runRaw(ctx context.Context, env *fetch.Env, p fetch.Plan, q *Raw) (data.Frames, error) {
	sel, _ := rawSelector(q, env.Settings) // validated while decoding
	r := fetch.NewRun(ctx, env, p)
	m, err := r.Range(ctx, sel)
	if err != nil {
		return nil, err
	}
	if len(m) == 0 {
		note := "the collector stores only the families the catalogue reads, other engine families without their _bucket samples, and process_start_time_seconds; the data source setting storeAllSeries stores every series of the pages"
		if env.Settings != nil && env.Settings.StoreAllSeries {
			note = "storeAllSeries is set: every series of the pages scraped since is stored"
		}
		r.Notes.Add(analysis.Info, fmt.Sprintf("no series named %s is stored for the selected targets in the queried range (%s)", q.Metric, note))
	}
	return frames.TimeSeries(analysis.FromMatrix(m, r.Steps, q.Metric, "", nil), meta(r, nil)), nil
}

// maxMatchers is the most label matchers of a raw query (the edge refuses more before
// decoding: bounds.Query).
const maxMatchers = 16

var labelNameRE = regexp.MustCompile(`^[a-zA-Z_][a-zA-Z0-9_]*$`)

// rawSelector builds the PromQL selector of a raw query: the metric by name, restricted to
// configured targets (job label) and to the given equality matchers
// (catalog.RawMetricSelector).
func rawSelector(q *Raw, s *settings.Settings) (string, error) {
	if q.Metric == "" {
		return "", badQueryf("metric: a raw query needs a metric name such as vllm:num_requests_running")
	}
	if !model.LegacyValidation.IsValidMetricName(q.Metric) || len(q.Metric) > 200 {
		return "", badQueryf("metric: %q is not a metric name", q.Metric)
	}
	targets := q.Targets
	if len(targets) == 0 {
		targets = s.TargetNames()
		for _, a := range s.GPUAgents {
			targets = append(targets, a.Name)
		}
	}
	sort.Strings(targets)
	if len(q.Matchers) > maxMatchers {
		return "", badQueryf("matchers: %d label matchers; a raw query takes at most %d", len(q.Matchers), maxMatchers)
	}
	for _, k := range slices.Sorted(maps.Keys(q.Matchers)) {
		if !labelNameRE.MatchString(k) || k == "job" || k == "__name__" {
			return "", badQueryf("matchers: %q is not a label you can match on", k)
		}
	}
	return catalog.RawMetricSelector(q.Metric, targets, q.Matchers), nil
}
