package catalog

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// HTTPRequestsName is the request counter of vLLM's OpenAI-compatible server
// (prometheus-fastapi-instrumentator): http_requests_total{handler, method,
// status}, where status is the class ("2xx", "4xx", "5xx") by default or
// the code. It is the only place a crashed or overloaded server's 5xx
// answers show up.
const HTTPRequestsName = "http_requests_total"

// AdmissionRejectionsBase is vLLM's (≥ 0.32) counter of requests refused
// before they reach the engine, by `reason` (answered HTTP 503), without the
// vllm: prefix (vllmNames adds it and the ray_vllm: variant).
const AdmissionRejectionsBase = "admission_rejections_total"

// InferenceHandlerMatchers select the inference handlers of
// http_requests_total: the OpenAI API under /v1/, without /v1/models (a
// listing, not an inference) and the server's own /metrics and /health.
const InferenceHandlerMatchers = `handler=~"/v1/.*", handler!~"/v1/models|/metrics|/health"`

// ErrorSLINames are the stored names an error_ratio objective reads besides
// the finished-request counter; KeepMetricNames includes them.
func ErrorSLINames() []string {
	out := []string{HTTPRequestsName}
	for _, m := range Lookup(EngineVLLM, Rejections).Metrics {
		out = append(out, m.Name)
	}
	return out
}

// ErrorSLIQueries are the rate queries of an error_ratio objective over one
// window, each summed by the target (job), the scope's groups and:
//
//	HTTP:       sum by (job, status) (rate(http_requests_total{job=~"a", handler=~"/v1/.*", handler!~"/v1/models|/metrics|/health"}[5m]))
//	Finishes:   CounterRatePromQL(RequestsFinished, …, "finished_reason")
//	Rejections: CounterRatePromQL(Rejections, …) without the model restriction and groups:
//	            sum by (job) (rate(vllm:admission_rejections_total{job=~"a"}[5m]) or rate(ray_vllm:…[5m]))
//
// slo.ErrorRatioCounts classifies them (5xx bad, 4xx by option, error
// finishes bad, aborts by option, rejections bad). The HTTP and rejection
// counters carry no model label: a Scope.Models restriction applies to the
// finishes only (ModelsNote says so).
type ErrorSLIQueries struct {
	HTTP, Finishes, Rejections string
}

// ErrorSLIPromQL builds ErrorSLIQueries for scope sc (job always among the
// group labels, so each target is classified on its own) over window.
// Errors: unknown group, empty names in scope, window under 1ms.
func ErrorSLIPromQL(sc Scope, window time.Duration) (ErrorSLIQueries, error) {
	w, err := windowString(window)
	if err != nil {
		return ErrorSLIQueries{}, err
	}
	withJob := sc
	withJob.By = append([]string{"target"}, slices.DeleteFunc(slices.Clone(sc.By), func(s string) bool { return s == "target" })...)
	groups, err := groupLabels(withJob, nil)
	if err != nil {
		return ErrorSLIQueries{}, err
	}
	jobSel, err := jobMatchers(sc)
	if err != nil {
		return ErrorSLIQueries{}, err
	}
	httpGroups := append(slices.DeleteFunc(slices.Clone(groups), func(s string) bool { return s == "model_name" || s == "engine" }), "status")
	httpSel := strings.Join(append(slices.Clone(jobSel), InferenceHandlerMatchers), ", ")
	q := ErrorSLIQueries{
		HTTP: aggregate("sum", httpGroups, "rate("+selector(HTTPRequestsName, httpSel)+"["+w+"])"),
	}
	if q.Finishes, err = CounterRatePromQL(RequestsFinished, withJob, window, "finished_reason"); err != nil {
		return ErrorSLIQueries{}, err
	}
	// Rejections: the catalogue's rejections signal (one entry, also read by throughput),
	// without the model restriction and model/engine groups its family does not carry.
	rej := withJob
	rej.Models = nil
	rej.By = slices.DeleteFunc(slices.Clone(withJob.By), func(s string) bool { return s == "model" || s == "engine" })
	if q.Rejections, err = CounterRatePromQL(Rejections, rej, window); err != nil {
		return ErrorSLIQueries{}, err
	}
	return q, nil
}

// ModelsNote is the notice for an error_ratio objective restricted to
// models: HTTP answers and admission rejections cannot be.
func ModelsNote(models []string) string {
	if len(models) == 0 {
		return ""
	}
	return fmt.Sprintf("error ratio: HTTP answers and admission rejections carry no model label, so the restriction to models %s applies to engine finishes only; HTTP 5xx and rejections are those of the whole target", strings.Join(models, ", "))
}

// ErrorSLINotes returns the sentences an error_ratio objective shows for a
// target's detected software (its version decides which classes of failure
// it can show): aborts on vLLM V0 (never counted) and V1 (client
// disconnects included), engine error finishes before vLLM 0.10,
// admission rejections before vLLM 0.32. includeAborts is the objective's
// option.
func ErrorSLINotes(target string, d Detection, includeAborts bool) []string {
	if d.Engine != EngineVLLM {
		return []string{fmt.Sprintf("target %s (%s): the error ratio counts what this engine exports; HTTP 5xx answers are counted only where http_requests_total is on the page, and finishes carry no error reason", target, d.Engine)}
	}
	var out []string
	lo, hi, ok := parseVersionRange(d.Version)
	switch {
	case includeAborts && d.Generation == "v0":
		out = append(out, fmt.Sprintf("target %s: vLLM V0 never counts aborted requests (aborted groups are freed before they are counted), so includeAborts adds nothing there", target))
	case includeAborts:
		out = append(out, fmt.Sprintf("target %s: vLLM V1's finished_reason=\"abort\" includes client disconnects, which cannot be told apart from server aborts", target))
	}
	if ok && hi < 10 {
		out = append(out, fmt.Sprintf("target %s: this vLLM (before 0.10) has no finished_reason=\"error\"; engine errors show only as HTTP 5xx", target))
	}
	if !ok || lo < 32 {
		out = append(out, fmt.Sprintf("target %s: admission rejections are exported from vLLM 0.32 (vllm:admission_rejections_total); before that they show only as HTTP 503", target))
	}
	return out
}

// ServingPromQL is the 0/1 state of each target (by job) that an
// availability objective measures: 1 when the last scrape answered (up = 1)
// and the engine is not stalled, 0 when it is down or stalled:
//
//	(max by (job) (up{…}) unless on (job) STALLED) or on (job) (max by (job) (up{…}) * 0)
//
// STALLED: vLLM requests running or waiting and no generated token in the
// last 5 minutes (the stall alert's condition). Engines without
// vllm:generation_tokens_total are never stalled here: serving is answering.
// A range query of it at a fixed step, or sum_over_time/count_over_time of a
// subquery, gives slo.AvailabilityHistory or slo.AvailabilityVector.
func ServingPromQL(sc Scope) (string, error) {
	job, err := jobMatchers(sc)
	if err != nil {
		return "", err
	}
	jobSel := strings.Join(job, ", ")
	up := "max by (job) (" + selector("up", jobSel) + ")"
	pending := `sum by (job) ({__name__=~"vllm:num_requests_running|vllm:num_requests_waiting"` + prefixSel(jobSel) + `}) > 0`
	idle := "sum by (job) (increase(" + selector("vllm:generation_tokens_total", jobSel) + "[5m])) == 0"
	stalled := "(" + pending + ") and on (job) (" + idle + ")"
	return "(" + up + " unless on (job) (" + stalled + ")) or on (job) (" + up + " * 0)", nil
}

func prefixSel(s string) string {
	if s == "" {
		return ""
	}
	return ", " + s
}

// AvailabilityPromQL returns the two instant queries of an availability
// objective over window at resolution res: good = sum_over_time of the
// serving state and known = count_over_time of it (samples with a state),
// each a subquery at res, by job.
func AvailabilityPromQL(sc Scope, window, res time.Duration) (good, known string, err error) {
	s, err := ServingPromQL(sc)
	if err != nil {
		return "", "", err
	}
	w, err := windowString(window)
	if err != nil {
		return "", "", err
	}
	r, err := windowString(res)
	if err != nil {
		return "", "", err
	}
	sub := "(" + s + ")[" + w + ":" + r + "]"
	return "sum_over_time(" + sub + ")", "count_over_time(" + sub + ")", nil
}

// AvailabilityStatPromQL is AvailabilityPromQL as one query: per job, the
// serving samples labelled stat="good" and the samples with a state
// labelled stat="known".
func AvailabilityStatPromQL(sc Scope, window, res time.Duration) (string, error) {
	good, known, err := AvailabilityPromQL(sc, window, res)
	if err != nil {
		return "", err
	}
	return `label_replace(` + good + `, "stat", "good", "", "") or label_replace(` + known + `, "stat", "known", "", "")`, nil
}

// UpSampleCountPromQL is the number of `up` samples of the most-sampled
// target in scope over window; times the scrape interval, how much of an
// availability objective's period the store holds.
func UpSampleCountPromQL(sc Scope, window time.Duration) (string, error) {
	w, err := windowString(window)
	if err != nil {
		return "", err
	}
	job, err := jobMatchers(sc)
	if err != nil {
		return "", err
	}
	return "max(count_over_time(" + selector("up", strings.Join(job, ", ")) + "[" + w + "]))", nil
}
