package slo

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"

	"github.com/prometheus/common/model"

	"github.com/inferscope/inferscope-llm-datasource/pkg/analysis"
)

// ErrorOptions choose which classes of failure an error_ratio objective
// counts besides the server-side ones (HTTP 5xx of the inference handlers,
// engine `error` finishes, admission rejections).
type ErrorOptions struct {
	// Include4xx counts HTTP 4xx answers of the inference handlers as bad
	// (client errors: bad requests, unknown models, over-long prompts).
	Include4xx bool
	// IncludeAborts counts finished_reason="abort" as bad. vLLM V1's abort
	// includes client disconnects, which cannot be told apart; vLLM V0 never
	// counts aborts (aborted groups are freed before they are counted).
	IncludeAborts bool
}

// ErrorInputs are one window's instant results for an error_ratio
// objective, each summed by the target (job) and the output group labels
// (catalog.ErrorSLIPromQL):
//   - HTTP: inference-handler request rates by `status` (http_requests_total
//     on /v1/… handlers, /v1/models excluded; status "2xx" … "5xx" as
//     prometheus-fastapi-instrumentator groups them, or codes);
//   - Finishes: finished-request rates by `finished_reason`;
//   - Rejections: admission-rejection rates (vllm:admission_rejections_total,
//     vLLM ≥ 0.32; requests answered with HTTP 503 before reaching the engine).
type ErrorInputs struct {
	HTTP, Finishes, Rejections model.Vector
}

// ErrorBreakdown is one group's request classes over the window (counts or
// rates, as the inputs), for the table and for tests.
type ErrorBreakdown struct {
	Group Group
	// HTTP total of the inference handlers, its 4xx and 5xx.
	HTTP, HTTP4xx, HTTP5xx float64
	// Finishes by class: engine errors, aborts, all reasons.
	Errors, Aborts, Finished float64
	Rejections               float64
	// Counts: Total requests, Good the point value (every bad event of the
	// two sources counted), GoodLower/GoodUpper the bracket (see
	// ErrorRatioCounts).
	Counts Counts
	// NoHTTP is true when some target of the group exports no inference
	// HTTP counter: its 5xx answers are unseen.
	NoHTTP bool
}

// ErrorRatioCounts computes the error_ratio objective's counts per output
// group (groupBy as in LayeredVector), per target first, then added:
//
// With the HTTP counter, Total is the inference handlers' requests (every
// status, so a page whose handler served 960 2xx, 20 4xx and 20 5xx has
// error ratio 20 / 1000 = 2 %). Bad events come from two sources: X = HTTP
// 5xx (+ 4xx with Include4xx), which already hold the admission rejections
// R (they are answered 503), and Y = engine `error` finishes (+ aborts
// with IncludeAborts), which a streamed response reports after its 200.
// Which of Y also answered 5xx is not exported, so the bad count lies in
// [max(X, R + Y), X + Y]; the point value is X + Y (GoodLower), the
// favourable bound max(X, R + Y) (GoodUpper). Without the HTTP counter,
// Total is finishes + R and bad is Y + R, exact but blind to 5xx.
//
// Series of the HTTP and rejection results carry no model label: under
// groupBy "model" they go to the target's model when the target's finishes
// name exactly one, else to the group with no model (and a notice).
func ErrorRatioCounts(in ErrorInputs, opts ErrorOptions, groupBy []string) ([]ErrorBreakdown, []string) {
	type per struct {
		labels                             map[string]string
		http, h4, h5, errs, aborts, fin, r float64
		hasHTTP                            bool
	}
	parts := map[string]*per{}
	// A part is one target within one output group: counts of the HTTP,
	// finish and rejection results meet there.
	get := func(m model.Metric) *per {
		_, l := analysis.Key(m)
		out := project(l, groupBy)
		k := string(m["job"]) + "|" + analysis.LabelsKey(out)
		p, ok := parts[k]
		if !ok {
			p = &per{labels: l}
			parts[k] = p
		}
		return p
	}
	val := func(s *model.Sample) float64 {
		v := float64(s.Value)
		if math.IsNaN(v) || v < 0 {
			return 0
		}
		return v
	}
	// Models per target, from the finishes; targets with the HTTP counter.
	models := map[string][]string{}
	for _, s := range in.Finishes {
		t, m := string(s.Metric["job"]), string(s.Metric["model_name"])
		if m != "" && !slices.Contains(models[t], m) {
			models[t] = append(models[t], m)
		}
	}
	withHTTP := map[string]bool{}
	for _, s := range in.HTTP {
		withHTTP[string(s.Metric["job"])] = true
	}
	var notes []string
	wantModel := slices.Contains(groupBy, "model")
	// attach gives HTTP and rejection series the target's only model; for
	// a target with HTTP counts and several models, the finishes lose their
	// model too, so that all its counts meet in one part.
	attach := func(s *model.Sample, drop string, finish bool) model.Metric {
		m := s.Metric.Clone()
		if drop != "" {
			delete(m, model.LabelName(drop))
		}
		if !wantModel {
			return m
		}
		t := string(m["job"])
		ms := models[t]
		switch {
		case finish:
			if withHTTP[t] && len(ms) > 1 {
				delete(m, "model_name")
			}
		case m["model_name"] == "" && len(ms) == 1:
			m["model_name"] = model.LabelValue(ms[0])
		case m["model_name"] == "":
			notes = append(notes, fmt.Sprintf("target %s: HTTP and admission counters carry no model label and the target serves %d models; its error ratio is shown without a model", t, len(ms)))
		}
		return m
	}
	for _, s := range in.HTTP {
		p := get(attach(s, "status", false))
		v := val(s)
		p.http += v
		switch st := string(s.Metric["status"]); {
		case strings.HasPrefix(st, "5"):
			p.h5 += v
		case strings.HasPrefix(st, "4"):
			p.h4 += v
		}
	}
	for _, s := range in.Finishes {
		p := get(attach(s, "finished_reason", true))
		v := val(s)
		p.fin += v
		switch string(s.Metric["finished_reason"]) {
		case "error":
			p.errs += v
		case "abort":
			p.aborts += v
		}
	}
	for _, s := range in.Rejections {
		get(attach(s, "reason", false)).r += val(s)
	}
	out := map[string]*ErrorBreakdown{}
	for _, k := range slices.Sorted(maps.Keys(parts)) {
		p := parts[k]
		g := groupOf(p.labels, groupBy)
		b, ok := out[g.Key]
		if !ok {
			b = &ErrorBreakdown{Group: g}
			out[g.Key] = b
		}
		b.HTTP += p.http
		b.HTTP4xx += p.h4
		b.HTTP5xx += p.h5
		b.Errors += p.errs
		b.Aborts += p.aborts
		b.Finished += p.fin
		b.Rejections += p.r
		y := p.errs
		if opts.IncludeAborts {
			y += p.aborts
		}
		var c Counts
		if p.hasHTTP = withHTTP[p.labels["target"]]; p.hasHTTP {
			x := p.h5
			if opts.Include4xx {
				x += p.h4
			}
			total := p.http
			hi := math.Min(x+y, total)
			lo := math.Min(math.Max(x, p.r+y), total)
			if total > 0 {
				c = Counts{Good: total - hi, GoodLower: total - hi, GoodUpper: total - lo, Total: total}
			}
		} else {
			b.NoHTTP = true
			c = ErrorCounts(y+p.r, p.fin+p.r)
		}
		b.Counts = b.Counts.Add(c)
	}
	res := make([]ErrorBreakdown, 0, len(out))
	for _, k := range slices.Sorted(maps.Keys(out)) {
		res = append(res, *out[k])
	}
	slices.Sort(notes)
	return res, slices.Compact(notes)
}
