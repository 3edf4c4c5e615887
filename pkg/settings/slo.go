package settings

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"time"
)

// Objective kinds.
const (
	// KindLatency: the share of requests whose latency stage is at or under
	// Threshold seconds must be at least Target.
	KindLatency = "latency"
	// KindErrorRatio: the share of inference requests that did not fail on
	// the server side must be at least Target. Bad: HTTP 5xx answers of the
	// inference handlers (/v1/…, /v1/models excluded), engine `error`
	// finishes and admission rejections; 4xx answers and client aborts only
	// with Include4xx and IncludeAborts (slo.ErrorRatioCounts).
	KindErrorRatio = "error_ratio"
	// KindAvailability: the share of the period in which the target answered
	// its scrape and was serving (not stalled) must be at least Target. Time
	// based: down time is bad time, never "no traffic".
	KindAvailability = "availability"
)

// PeriodCalendarMonth is the period value for a calendar month in UTC: the
// budget resets on the 1st, and burn-rate factors scale with the month's
// length (28 to 31 days).
const PeriodCalendarMonth = "month"

// DefaultSLOPeriod is an objective's compliance period when none is set: the
// 30 days the SRE Workbook's multi-window burn-rate table is built for.
const DefaultSLOPeriod = 30 * 24 * time.Hour

// minSLOPeriod is the shortest period accepted: the longest burn-rate window
// (3 d) must not exceed the period it spends the budget of.
const minSLOPeriod = 72 * time.Hour

// LatencyStageNames are the latency stages an objective may name; the same
// names as the catalogue's canonical latency signals (catalog.LatencyStages).
var LatencyStageNames = []string{"queue_time", "prefill_time", "decode_time", "inference_time", "ttft", "itl", "tpot", "e2e"}

// Objective is one service-level objective: a latency objective ("Target of
// requests have Signal ≤ Threshold seconds") or an error-ratio objective
// ("Target of finished requests end without abort or error"), measured over
// Period and restricted to Targets and Models (empty: all).
type Objective struct {
	Name string `json:"name"`
	// Kind is KindLatency (default), KindErrorRatio or KindAvailability.
	Kind string `json:"kind,omitempty"`
	// Signal is a latency stage from LatencyStageNames (latency objectives only).
	Signal string `json:"signal,omitempty"`
	// Threshold in seconds (latency objectives only); used exactly as written,
	// never rounded to a bucket bound.
	Threshold float64 `json:"threshold,omitempty"`
	// Target is the required ratio of good requests, strictly between 0 and 1 (0.99).
	Target float64 `json:"target"`
	// Include4xx (error_ratio only) also counts HTTP 4xx answers as bad.
	Include4xx bool `json:"include4xx,omitempty"`
	// IncludeAborts (error_ratio only) also counts finished_reason="abort"
	// as bad (on vLLM V1 this includes client disconnects; V0 never counts
	// aborts).
	IncludeAborts bool `json:"includeAborts,omitempty"`
	// PeriodRaw is the compliance period in Prometheus notation ("30d"), or
	// "month" for the calendar month (UTC); default 30d.
	PeriodRaw string `json:"period,omitempty"`
	// Targets and Models restrict the objective to these target and model names.
	Targets []string `json:"targets,omitempty"`
	Models  []string `json:"models,omitempty"`

	// Period is PeriodRaw parsed (DefaultSLOPeriod when empty; 30 d, the
	// nominal month, for a calendar month: use slo.MonthLength at evaluation).
	Period time.Duration `json:"-"`
	// CalendarMonth is true when PeriodRaw is PeriodCalendarMonth.
	CalendarMonth bool `json:"-"`
}

// Profile is a named set of objectives a workload is held to (interactive
// chat, code completion, batch analysis, …).
type Profile struct {
	Name       string      `json:"name"`
	Objectives []Objective `json:"objectives"`
}

// SLOSettings is the part of jsonData holding SLO profiles. Settings embeds
// it, so its key sits at the top level of jsonData.
type SLOSettings struct {
	// Profiles are the SLO profiles; when the key is absent from jsonData the
	// DefaultProfiles apply, an explicit empty list means none.
	Profiles []Profile `json:"sloProfiles,omitempty"`
}

// DefaultProfiles returns the field's usual objectives over 30 days: three
// workloads at the 99th percentile, interactive chat (TTFT ≤ 3 s, TPOT ≤
// 50 ms), code completion (TTFT ≤ 500 ms, TPOT ≤ 30 ms) and batch analysis
// (TTFT ≤ 30 s, TPOT ≤ 200 ms), where TPOT is the per-request histogram
// (vLLM ≥ 0.11; older versions read the inter-token histogram as an
// approximation, with a notice); and a service as a whole: TTFT p95 ≤ 2 s,
// ITL p95 ≤ 100 ms, error ratio ≤ 2 % and availability ≥ 99.9 %.
func DefaultProfiles() []Profile {
	p := func(name string, ttft, tpot float64) Profile {
		return Profile{Name: name, Objectives: []Objective{
			{Name: "ttft-p99", Kind: KindLatency, Signal: "ttft", Threshold: ttft, Target: 0.99, PeriodRaw: "30d"},
			{Name: "tpot-p99", Kind: KindLatency, Signal: "tpot", Threshold: tpot, Target: 0.99, PeriodRaw: "30d"},
		}}
	}
	return []Profile{
		p("interactive-chat", 3, 0.05),
		p("code-completion", 0.5, 0.03),
		p("batch-analysis", 30, 0.2),
		{Name: "service", Objectives: []Objective{
			{Name: "ttft-p95", Kind: KindLatency, Signal: "ttft", Threshold: 2, Target: 0.95, PeriodRaw: "30d"},
			{Name: "itl-p95", Kind: KindLatency, Signal: "itl", Threshold: 0.1, Target: 0.95, PeriodRaw: "30d"},
			{Name: "error-ratio", Kind: KindErrorRatio, Target: 0.98, PeriodRaw: "30d"},
			{Name: "availability", Kind: KindAvailability, Target: 0.999, PeriodRaw: "30d"},
		}},
	}
}

// Profile returns the SLO profile called name.
func (s *SLOSettings) Profile(name string) (Profile, bool) {
	return byName(s.Profiles, name, func(p Profile) string { return p.Name })
}

// ProfileNames returns the profile names in settings order.
func (s *SLOSettings) ProfileNames() []string {
	out := make([]string, 0, len(s.Profiles))
	for _, p := range s.Profiles {
		out = append(out, p.Name)
	}
	return out
}

// applySLODefaults fills the default profiles when the key was absent and
// each objective's kind and period.
func (s *Settings) applySLODefaults() error {
	if s.Profiles == nil {
		s.Profiles = DefaultProfiles()
	}
	for i := range s.Profiles {
		for j := range s.Profiles[i].Objectives {
			o := &s.Profiles[i].Objectives[j]
			if o.Kind == "" {
				o.Kind = KindLatency
			}
			field := fmt.Sprintf("sloProfiles[%d].objectives[%d].period", i, j)
			if o.PeriodRaw == PeriodCalendarMonth {
				o.Period, o.CalendarMonth = DefaultSLOPeriod, true
				continue
			}
			d, err := parseDuration(field, o.PeriodRaw, DefaultSLOPeriod)
			if err != nil {
				return err
			}
			o.Period = d
		}
	}
	return nil
}

// validateSLO checks the profiles and returns one sentence naming the first bad field.
func (s *Settings) validateSLO() error {
	seen := map[string]string{}
	for i, p := range s.Profiles {
		f := fmt.Sprintf("sloProfiles[%d]", i)
		if err := claimName(seen, f, p.Name); err != nil {
			return err
		}
		if len(p.Objectives) == 0 {
			return fmt.Errorf("%s.objectives: a profile needs at least one objective", f)
		}
		names := map[string]int{}
		for j, o := range p.Objectives {
			of := fmt.Sprintf("%s.objectives[%d]", f, j)
			if !nameRE.MatchString(o.Name) {
				return fmt.Errorf("%s.name: %q must be 1-63 letters, digits, '_', '.', ':' or '-'", of, o.Name)
			}
			if prev, dup := names[o.Name]; dup {
				return fmt.Errorf("%s.name: %q is already used by objectives[%d] of this profile", of, o.Name, prev)
			}
			names[o.Name] = j
			if err := s.validateObjective(of, o); err != nil {
				return err
			}
		}
	}
	return nil
}

func (s *Settings) validateObjective(f string, o Objective) error {
	switch o.Kind {
	case KindLatency:
		if !slices.Contains(LatencyStageNames, o.Signal) {
			return fmt.Errorf("%s.signal: %q is not one of %s", f, o.Signal, strings.Join(LatencyStageNames, ", "))
		}
		if !(o.Threshold > 0) || math.IsInf(o.Threshold, 0) {
			return fmt.Errorf("%s.threshold: %v must be a positive number of seconds (0.5 for 500 ms)", f, o.Threshold)
		}
	case KindErrorRatio, KindAvailability:
		what := map[string]string{KindErrorRatio: "counts failed inference requests", KindAvailability: "measures the time the target was serving"}[o.Kind]
		if o.Signal != "" {
			return fmt.Errorf("%s.signal: an %s objective %s and takes no signal", f, o.Kind, what)
		}
		if o.Threshold != 0 {
			return fmt.Errorf("%s.threshold: an %s objective takes no threshold", f, o.Kind)
		}
	default:
		return fmt.Errorf("%s.kind: %q is not one of %s, %s, %s", f, o.Kind, KindLatency, KindErrorRatio, KindAvailability)
	}
	if o.Kind != KindErrorRatio && (o.Include4xx || o.IncludeAborts) {
		opt := "include4xx"
		if !o.Include4xx {
			opt = "includeAborts"
		}
		return fmt.Errorf("%s.%s: only an error_ratio objective counts HTTP answers and aborts", f, opt)
	}
	if !(o.Target > 0 && o.Target < 1) {
		return fmt.Errorf("%s.target: %v must be a ratio strictly between 0 and 1, such as 0.99", f, o.Target)
	}
	if o.Period < minSLOPeriod {
		return fmt.Errorf("%s.period: %s is shorter than the longest burn-rate window (3d)", f, o.PeriodRaw)
	}
	for _, t := range o.Targets {
		if _, ok := s.Target(t); !ok {
			return fmt.Errorf("%s.targets: %q is not a configured target", f, t)
		}
	}
	for _, m := range o.Models {
		if strings.TrimSpace(m) == "" {
			return fmt.Errorf("%s.models: an empty model name; leave models empty to select every model", f)
		}
	}
	return nil
}
