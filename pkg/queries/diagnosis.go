package queries

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/grafana/grafana-plugin-sdk-go/data"
	"github.com/prometheus/common/model"

	"github.com/inferscope/inferscope-llm-datasource/pkg/analysis"
	"github.com/inferscope/inferscope-llm-datasource/pkg/analysis/diagnose"
	"github.com/inferscope/inferscope-llm-datasource/pkg/fetch"
	"github.com/inferscope/inferscope-llm-datasource/pkg/frames"
	"github.com/inferscope/inferscope-llm-datasource/pkg/settings"
)

// Diagnosis is the diagnosis query: the bottleneck of each target with evidence.
type Diagnosis struct {
	Common
	// Format is table (default), annotations, timeline or numeric.
	Format string `json:"format,omitempty"`
	// Classes keeps only these classes' findings and numeric series (e.g. ["stalled"] for an
	// alert rule); empty: all.
	Classes []string `json:"classes,omitempty"`
}

func (q *Diagnosis) lists() []namedList { return []namedList{{"classes", &q.Classes}} }

var diagnosisEnums = map[string][]string{
	"format":  {diagnosisTable, diagnosisAnnotations, diagnosisTimeline, diagnosisNumeric},
	"classes": classNames(),
}

// Diagnosis formats (the query's `format` field).
const (
	diagnosisTable       = "table"       // current findings (default)
	diagnosisAnnotations = "annotations" // every finding in the range except healthy, annotation-shaped
	diagnosisTimeline    = "timeline"    // primary class over time per target (state timeline)
	diagnosisNumeric     = "numeric"     // one number per target and class, for alert rules
)

// validate checks the format and the classes.
func (q *Diagnosis) validate(*settings.Settings) error {
	if !slices.Contains(diagnosisEnums["format"], q.format()) {
		return badQueryf("format: %q is not one of table, annotations, timeline, numeric", q.Format)
	}
	for _, c := range q.Classes {
		if !slices.Contains(diagnose.Classes, diagnose.Class(c)) {
			return badQueryf("classes: %q is not a diagnosis class (one of %s)", c, classList())
		}
	}
	return nil
}

// format is the query's format, table when empty.
func (q *Diagnosis) format() string {
	if q.Format == "" {
		return diagnosisTable
	}
	return q.Format
}

// diagnosed is one diagnosis run's input and result, shared by the panels of one refresh.
type diagnosed struct {
	in  diagnose.Input
	res diagnose.Result
}

// runDiagnosis diagnoses each target in scope over the range with the
// same PromQL the latency, saturation, throughput and gpu queries run (the
// catalogue's gauge, counter-rate, mean and per-GPU builders, grouped by
// target), plus three short-window queries for the stall rule: progress
// counter rates and the lowest `up` over StallScrapes scrape intervals, and
// the span of the waiting gauge over the same window (fetch.Run.DiagnosisReads).
func runDiagnosis(ctx context.Context, env *fetch.Env, p fetch.Plan, q *Diagnosis) (data.Frames, error) {
	// The reads and the rules are the same for every format and class list: the panels of one
	// refresh asking for the same models share them (the overview's tables and timeline).
	r, v, err := fetch.SharedRun(ctx, env, p, "diagnosis\x00"+fmt.Sprintf("%q", q.Models), func(ctx context.Context, run *fetch.Run) (any, error) {
		in, err := diagnosisInputOn(ctx, run, q.Models)
		if err != nil {
			return nil, err
		}
		return diagnosed{in, diagnose.Diagnose(in, env.Settings.Diagnosis)}, nil
	})
	if err != nil {
		return nil, err
	}
	in, res := v.(diagnosed).in, ownResult(v.(diagnosed).res)
	noData := noEngineData(r, in, q.Models)
	if len(q.Classes) > 0 {
		res = diagnose.KeepClasses(res, q.Classes)
	}
	format := q.format()
	if format == diagnosisTable || format == diagnosisAnnotations {
		diagnosisTwinAdvice(ctx, env, r, &res)
	}
	switch format {
	case diagnosisTimeline:
		return frames.DiagnosisTimeline(res, meta(r, nil)), nil
	case diagnosisNumeric:
		// Only the asked classes, and no series for targets without engine data.
		return frames.DiagnosisNumeric(res, func(l data.Labels) bool {
			return !noData[l["target"]] && (len(q.Classes) == 0 || slices.Contains(q.Classes, l["class"]))
		}, meta(r, nil)), nil
	case diagnosisAnnotations:
		return frames.DiagnosisFindings(res, false, meta(r, nil)), nil
	}
	return frames.DiagnosisFindings(res, true, meta(r, nil)), nil
}

// noEngineData returns the targets of in with no engine data for the selection (a model it
// does not serve, a typo in an alert rule), each with a warning: such a target would read
// healthy from its `up` series alone, so it gets no alert series.
func noEngineData(r *fetch.Run, in diagnose.Input, models []string) map[string]bool {
	noData := map[string]bool{}
	for _, t := range in.Targets {
		if !diagnose.HasEngineData(t) {
			noData[t.Name] = true
			sel := ""
			if len(models) > 0 {
				sel = " for models " + strings.Join(models, ", ")
			}
			r.Notes.Add(analysis.Warning, fmt.Sprintf("target %s: no engine data in the range%s, so nothing is diagnosed (no series, not healthy)", t.Name, sel))
		}
	}
	return noData
}

// DiagnosisInput fetches every signal of the targets in scope (p's targets, the given models)
// and places it on the step grid (diagnose.Assemble); the run holds the PromQL and notices.
func DiagnosisInput(ctx context.Context, env *fetch.Env, p fetch.Plan, models []string) (diagnose.Input, *fetch.Run, error) {
	r := fetch.NewRun(ctx, env, p)
	in, err := diagnosisInputOn(ctx, r, models)
	return in, r, err
}

// ownResult copies what the diagnosis query changes in a shared result (the findings, which
// the capacity twin's advice and the class filter edit), so callers never write to another
// panel's result.
func ownResult(shared diagnose.Result) diagnose.Result {
	out := diagnose.Result{Steps: shared.Steps, Targets: slices.Clone(shared.Targets)}
	for k := range out.Targets {
		out.Targets[k].Findings = slices.Clone(out.Targets[k].Findings)
	}
	return out
}

// diagnosisInputOn is DiagnosisInput on the run r (over its plan): the reads of
// fetch.Run.DiagnosisReads placed on the step grid per target (diagnose.Assemble), with each
// target's anchor objectives and their compliance per step (diagnose.AttachObjectives).
func diagnosisInputOn(ctx context.Context, r *fetch.Run, models []string) (diagnose.Input, error) {
	env := r.Env
	th := env.Settings.Diagnosis
	d, err := r.DiagnosisReads(ctx, models)
	in := diagnose.Input{Steps: r.Steps, StallWindow: d.StallWindow, Window: r.Plan.Window, Scrape: env.Settings.ScrapeInterval}
	if err != nil || len(d.Targets) == 0 {
		return in, err
	}
	in = diagnose.Assemble(in, d.Got, d.Targets, d.Agents, d.Stored, th)
	buckets := map[string]model.Matrix{}
	for _, st := range d.Stages {
		buckets[st] = d.Got["objective:"+st]
	}
	if m, ok := d.Got["objective:"+diagnose.TPOTGaps]; ok {
		buckets[diagnose.TPOTGaps] = m
	}
	diagnose.AttachObjectives(&in, env.Settings.Profiles, th.SLOProfile, models, buckets)
	return in, nil
}

// classNames returns diagnose.Classes as strings.
func classNames() []string {
	out := make([]string, 0, len(diagnose.Classes))
	for _, c := range diagnose.Classes {
		out = append(out, string(c))
	}
	return out
}

// classList renders diagnose.Classes for error messages.
func classList() string {
	out := make([]string, 0, len(diagnose.Classes))
	for _, c := range diagnose.Classes {
		out = append(out, string(c))
	}
	return strings.Join(out, ", ")
}
