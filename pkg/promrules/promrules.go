// Package promrules generates Prometheus recording and alerting rules from
// SLO profiles (settings.Profile), so that a Prometheus that scrapes vLLM
// directly records and alerts on the same objectives the plugin's slo and
// burn_rate queries evaluate. The output is one rule file (YAML text);
// provisioning/prometheus/inferscope-slo.rules.yml is Generate of the
// default profiles, and `promtool test rules` checks it against histories
// worked out by hand (provisioning/prometheus/tests).
//
// What each objective gets, with labels profile and objective on every
// series (per job and model_name for latency objectives, per job otherwise):
//
//   - tiles: inferscope_slo:bad:increase5m and inferscope_slo:total:increase5m,
//     recorded every 5 minutes (non-overlapping 5-minute increases). Long
//     windows (2h … 3d) and the period sum them with sum_over_time, as Pyrra
//     does, instead of asking increase() over days of raw samples every 30 s;
//   - error ratios: inferscope_slo:sli_error:ratio_rate{5m,30m,1h} from the raw
//     counters and ratio_rate{2h,6h,1d,3d} and ratio_period from the tiles, a
//     ratio of summed increases (request weighted), never a mean of ratios;
//   - the error budget over the period: inferscope_slo:budget_remaining:ratio
//     = 1 − error ratio / (1 − target);
//   - alerts: the multi-window multi-burn-rate page and ticket rows with the
//     factors scaled to the period (slo.PlanRows; rows that can never fire are
//     left out and named in a comment), each row only once the tiles cover its
//     long window; a "quantile above its threshold for 5 minutes" page for
//     latency objectives; a bound-missing alert where a job's histogram has no
//     bucket bound at the threshold; a histogram-missing alert where a vLLM job
//     exports no histogram of the objective's stage.
//
// A latency threshold must be a bucket bound: a bucket selector counts whole
// buckets only. `le` is matched in both spellings ("3" and "3.0": Prometheus 2
// stores what the page wrote, Prometheus 3 normalises). A job whose layout
// lacks the bound produces no ratio (the division drops it: it is never
// counted as all bad or all good, so a fleet with mixed layouts stays exact
// per job) and raises InferscopeSLOBucketBoundMissing instead.
package promrules

import (
	"fmt"
	"math"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/common/model"

	"github.com/inferscope/inferscope-llm-datasource/pkg/analysis/slo"
	"github.com/inferscope/inferscope-llm-datasource/pkg/catalog"
	"github.com/inferscope/inferscope-llm-datasource/pkg/settings"
)

// Options tune the generated rules.
type Options struct {
	// Interval is the evaluation interval of the ratio and alert groups (30s).
	Interval time.Duration
	// SpikeWindow is the increase window of the "quantile above its
	// threshold for 5 minutes" alert (2m: at least two samples at a 1m scrape
	// interval, or the condition would vanish between them and reset `for`).
	// A spike holds the condition for at most its length plus this window.
	SpikeWindow time.Duration
}

// DefaultOptions are the options of the shipped rule file.
var DefaultOptions = Options{Interval: 30 * time.Second, SpikeWindow: 2 * time.Minute}

// tile is the length of the recorded short increases.
const tile = 5 * time.Minute

// shortWindows are read from the raw counters; the others from the tiles.
var shortWindows = []time.Duration{5 * time.Minute, 30 * time.Minute, time.Hour}

// objective is one objective with the PromQL pieces the rules need.
type objective struct {
	profile string
	o       settings.Objective
	by      string // "job, model_name" or "job"
	sel     string // label selector of the objective's series on recorded rules
	names   []string
	le      string // regex of the threshold's le spellings
}

// Generate returns the rule file for profiles. Errors name the objective
// whose signal has no vLLM histogram.
func Generate(profiles []settings.Profile, opt Options) ([]byte, error) {
	var objs []objective
	for _, p := range profiles {
		for _, o := range p.Objectives {
			if o.Period <= 0 {
				// Profiles not loaded through settings.Load (DefaultProfiles()).
				o.Period = settings.DefaultSLOPeriod
				if d, err := model.ParseDuration(o.PeriodRaw); err == nil && d > 0 {
					o.Period = time.Duration(d)
				}
				o.CalendarMonth = o.PeriodRaw == settings.PeriodCalendarMonth
			}
			if o.Kind == "" {
				o.Kind = settings.KindLatency
			}
			ob := objective{profile: p.Name, o: o, by: "job", sel: fmt.Sprintf(`profile=%q, objective=%q`, p.Name, o.Name)}
			if o.Kind == settings.KindLatency {
				ob.by = "job, model_name"
				names, err := HistogramNames(catalog.Signal(o.Signal))
				if err != nil {
					return nil, fmt.Errorf("profile %s objective %s: %w", p.Name, o.Name, err)
				}
				ob.names = names
				ob.le = LeRegex(o.Threshold)
			}
			objs = append(objs, ob)
		}
	}
	var b strings.Builder
	w := func(format string, a ...any) { fmt.Fprintf(&b, format, a...) }
	w("# Generated by `go run ./pkg/cmd/inferscope-promrules` from the SLO profiles; do not edit by hand.\n")
	w("# How the rules are built and tested: docs/prometheus-rules.md (SLO rules).\n")
	w("#\n# Objectives:\n")
	for _, ob := range objs {
		w("#   %s/%s: %s\n", ob.profile, ob.o.Name, describe(ob.o))
	}
	w("\ngroups:\n")

	// Tiles.
	w("  - name: inferscope-slo-tiles\n    interval: %s\n    rules:\n", dur(tile))
	for _, ob := range objs {
		bad, total := ob.increases(tile)
		w("      - record: inferscope_slo:bad:increase5m\n        labels: {profile: %s, objective: %s}\n        expr: %s\n", ob.profile, ob.o.Name, quote(bad))
		w("      - record: inferscope_slo:total:increase5m\n        labels: {profile: %s, objective: %s}\n        expr: %s\n", ob.profile, ob.o.Name, quote(total))
	}

	// Ratios and budgets.
	w("\n  - name: inferscope-slo-ratios\n    interval: %s\n    rules:\n", dur(opt.Interval))
	if slices.ContainsFunc(objs, func(o objective) bool { return o.o.Kind == settings.KindAvailability }) {
		s, err := catalog.ServingPromQL(catalog.Scope{})
		if err != nil {
			return nil, err
		}
		w("      # 1 when the job answered its last scrape and is not stalled (requests pending, no token\n")
		w("      # in 5 minutes), 0 when it is down or stalled: the availability objectives' state.\n")
		w("      - record: inferscope_slo:serving:bool\n        expr: %s\n", quote(s))
	}
	for _, ob := range objs {
		for _, win := range slo.Windows {
			var expr string
			if slices.Contains(shortWindows, win) {
				bad, total := ob.increases(win)
				expr = "(" + bad + ") / (" + total + ")"
			} else {
				expr = ob.fromTiles(win)
			}
			w("      - record: inferscope_slo:sli_error:ratio_rate%s\n        labels: {profile: %s, objective: %s}\n        expr: %s\n", slo.WindowName(win), ob.profile, ob.o.Name, quote(expr))
		}
		w("      - record: inferscope_slo:sli_error:ratio_period\n        labels: {profile: %s, objective: %s, period: %s}\n        expr: %s\n", ob.profile, ob.o.Name, periodName(ob.o), quote(ob.fromTiles(ob.o.Period)))
		w("      - record: inferscope_slo:budget_remaining:ratio\n        labels: {profile: %s, objective: %s, period: %s}\n        expr: %s\n", ob.profile, ob.o.Name, periodName(ob.o),
			quote(fmt.Sprintf("1 - inferscope_slo:sli_error:ratio_period{%s} / %s", ob.sel, num(1-ob.o.Target))))
	}

	// Alerts.
	w("\n  - name: inferscope-slo-alerts\n    interval: %s\n    rules:\n", dur(opt.Interval))
	for _, sev := range []slo.Status{slo.Page, slo.Ticket} {
		var parts []string
		var never []string
		for _, ob := range objs {
			for _, r := range slo.PlanRows(ob.o.Period, ob.o.Target) {
				if r.Severity != sev {
					continue
				}
				if r.Never != "" {
					never = append(never, fmt.Sprintf("%s/%s: %s", ob.profile, ob.o.Name, r.Never))
					continue
				}
				th := num(r.Factor * (1 - ob.o.Target))
				parts = append(parts, fmt.Sprintf("(inferscope_slo:sli_error:ratio_rate%s{%s} > %s and inferscope_slo:sli_error:ratio_rate%s{%s} > %s and %s)",
					slo.WindowName(r.Long), ob.sel, th, slo.WindowName(r.Short), ob.sel, th, ob.covered(r.Long)))
			}
		}
		for _, n := range never {
			w("      # Never fires, left out: %s\n", n)
		}
		name, forD := "InferscopeSLOBurnPage", "2m"
		summary := "{{ $labels.profile }}/{{ $labels.objective }} on {{ $labels.job }} is burning its error budget fast: error ratio {{ $value | humanizePercentage }}"
		desc := "Both windows of a page row burn faster than its factor (1h/5m: 14.4, 6h/30m: 6 for a 30-day period; scaled to the objective's period), and the stored history covers the long window."
		if sev == slo.Ticket {
			name, forD = "InferscopeSLOBurnTicket", "15m"
			summary = "{{ $labels.profile }}/{{ $labels.objective }} on {{ $labels.job }} spends its error budget faster than the period allows: error ratio {{ $value | humanizePercentage }}"
			desc = "Both windows of a ticket row burn faster than its factor (1d/2h: 3, 3d/6h: 1 for a 30-day period; scaled to the objective's period, never under 1). Inhibited by the page alert of the same objective and job (docs/prometheus-rules.md)."
		}
		w("      - alert: %s\n        expr: |\n", name)
		for i, p := range parts {
			sep := ""
			if i < len(parts)-1 {
				sep = " or"
			}
			w("          %s%s\n", p, sep)
		}
		w("        for: %s\n        labels: {severity: %s}\n        annotations:\n          summary: %s\n          description: %s\n          runbook_url: %s\n",
			forD, sev, quote(summary), quote(desc), RunbookURL)
	}
	for _, ob := range objs {
		if ob.o.Kind != settings.KindLatency {
			continue
		}
		bad, total := ob.increases(opt.SpikeWindow)
		q := quantileName(ob.o.Target)
		w("      # %s/%s: sustained degradation. The share of requests over %s s in the last %s exceeds\n", ob.profile, ob.o.Name, num(ob.o.Threshold), dur(opt.SpikeWindow))
		w("      # 1 − %s, i.e. the %s (counted exactly at the bound, no interpolation) is above the threshold,\n", num(ob.o.Target), q)
		w("      # for 5 minutes. A spike of a few seconds holds it for at most %s plus the spike: never pages.\n", dur(opt.SpikeWindow))
		w("      - alert: InferscopeSLOLatencyAboveThreshold\n        expr: %s\n        for: 5m\n        labels: {severity: page, profile: %s, objective: %s, threshold_seconds: %q}\n        annotations:\n",
			quote(fmt.Sprintf("(%s) / (%s) > %s", bad, total, num(1-ob.o.Target))), ob.profile, ob.o.Name, num(ob.o.Threshold))
		w("          summary: %s\n", quote(fmt.Sprintf("%s of %s on {{ $labels.job }} ({{ $labels.model_name }}) has been above %s s for 5 minutes: {{ $value | humanizePercentage }} of requests over it", q, ob.o.Signal, num(ob.o.Threshold))))
		w("          description: %s\n          runbook_url: %s\n", quote("Sustained degradation, not a spike: the burn-rate rows need longer (at 1000 requests a minute and target 0.99, a 5-minute total failure burns 8.3 over 1 h, under the 14.4 page factor)."), RunbookURL)
		w("      - alert: InferscopeSLOBucketBoundMissing\n        expr: %s\n        for: 10m\n        labels: {severity: ticket, profile: %s, objective: %s, threshold_seconds: %q}\n        annotations:\n",
			quote(fmt.Sprintf(`count by (job) ({__name__=~"%s", le="+Inf"}) unless on (job) count by (job) ({__name__=~"%s", le=~"%s"})`, bucketRegex(ob.names), bucketRegex(ob.names), ob.le)),
			ob.profile, ob.o.Name, num(ob.o.Threshold))
		w("          summary: %s\n", quote(fmt.Sprintf("{{ $labels.job }} has no %s bucket bound at %s s: objective %s/%s is not measured there", ob.o.Signal, num(ob.o.Threshold), ob.profile, ob.o.Name)))
		w("          description: %s\n          runbook_url: %s\n", quote("A bucket selector counts whole buckets: without the bound the job's good requests cannot be counted, so its error ratio is not recorded (never read as all good). Add the bound to the engine's histogram buckets (vLLM --custom-histogram-buckets), or set the threshold to a bound."), RunbookURL)
		w("      - alert: InferscopeSLOHistogramMissing\n        expr: %s\n        for: 10m\n        labels: {severity: ticket, profile: %s, objective: %s}\n        annotations:\n",
			quote(fmt.Sprintf(`count by (job) (vllm:num_requests_running) unless on (job) count by (job) ({__name__=~"%s"})`, bucketRegex(ob.names))), ob.profile, ob.o.Name)
		w("          summary: %s\n", quote(fmt.Sprintf("{{ $labels.job }} serves vLLM but exports no %s histogram: objective %s/%s reads nothing there", ob.o.Signal, ob.profile, ob.o.Name)))
		w("          description: %s\n          runbook_url: %s\n", quote("A vanished histogram is not a healthy objective: without it the error ratio has no series and no burn-rate alert can fire."), RunbookURL)
	}
	return []byte(b.String()), nil
}

// RunbookURL is the runbook_url annotation of every generated alert.
const RunbookURL = "https://github.com/inferscope/inferscope-llm-datasource/blob/main/docs/runbooks.md#inferscope-slo-page"

// increases returns the PromQL of the bad and total request (or time)
// counts of the objective over window w, by the objective's labels.
func (ob objective) increases(w time.Duration) (bad, total string) {
	ws := dur(w)
	switch ob.o.Kind {
	case settings.KindErrorRatio:
		job := ob.jobSel()
		http := selector(catalog.HTTPRequestsName, join(job, catalog.InferenceHandlerMatchers))
		status := `status=~"5.."`
		if ob.o.Include4xx {
			status = `status=~"[45].."`
		}
		reasons := `finished_reason="error"`
		if ob.o.IncludeAborts {
			reasons = `finished_reason=~"error|abort"`
		}
		rej := "increase(" + selector("vllm:admission_rejections_total", job) + "[" + ws + "])"
		total = fmt.Sprintf("(sum by (job) (increase(%s[%s])) or sum by (job) (increase(%s[%s]) or %s))",
			http, ws, selector("vllm:request_success_total", job), ws, rej)
		// Bad: 5xx (which hold the rejections where the HTTP counter exists), engine error
		// finishes (streamed after a 200), and rejections of jobs without the HTTP counter.
		b := fmt.Sprintf("sum by (job) (increase(%s[%s]) or increase(%s[%s]) or (%s unless on (job) %s))",
			selector(catalog.HTTPRequestsName, join(job, catalog.InferenceHandlerMatchers, status)), ws,
			selector("vllm:request_success_total", join(job, reasons)), ws, rej, http)
		bad = fmt.Sprintf("(%s or on (job) %s * 0)", b, total)
		return bad, total
	case settings.KindAvailability:
		s := "inferscope_slo:serving:bool" + braces(ob.jobSel())
		total = fmt.Sprintf("count_over_time(%s[%s])", s, ws)
		bad = fmt.Sprintf("(%s - sum_over_time(%s[%s]))", total, s, ws)
		return bad, total
	}
	// A later family counts only for series without an earlier one (by
	// job, model and engine): vLLM 0.11 writes the per-request TPOT and the
	// inter-token histogram side by side, and the threshold's bucket must
	// come from the same family as the +Inf bucket.
	inc := func(le string) string {
		var parts []string
		for i, n := range ob.names {
			p := "increase(" + selector(n+"_bucket", join(ob.jobSel(), ob.modelSel(), le)) + "[" + ws + "])"
			if i > 0 {
				p = "(" + p + " unless on (job, model_name, engine) {__name__=~\"" + bucketRegex(ob.names[:i]) + "\", le=\"+Inf\"})"
			}
			parts = append(parts, p)
		}
		return "sum by (job, model_name) (" + strings.Join(parts, " or ") + ")"
	}
	total = inc(`le="+Inf"`)
	bad = "(" + total + " - " + inc(`le=~"`+ob.le+`"`) + ")"
	return bad, total
}

// fromTiles is the error ratio over w from the recorded 5-minute tiles.
func (ob objective) fromTiles(w time.Duration) string {
	ws := dur(w)
	return fmt.Sprintf("sum_over_time(inferscope_slo:bad:increase5m{%s}[%s]) / sum_over_time(inferscope_slo:total:increase5m{%s}[%s])", ob.sel, ws, ob.sel, ws)
}

// covered is the condition that the tiles cover window w: the oldest tile
// in the window (by a 5-minute subquery of its timestamp) is at most 10
// minutes younger than the window. A new Prometheus holding one hour must
// not read its 6h window over that hour. Timestamps, not tile counts, so the
// condition holds whatever the tiles' evaluation spacing.
func (ob objective) covered(w time.Duration) string {
	return fmt.Sprintf("time() - min_over_time(timestamp(inferscope_slo:total:increase5m{%s})[%s:5m]) >= %d", ob.sel, dur(w), int((w - 2*tile).Seconds()))
}

func (ob objective) jobSel() string {
	if len(ob.o.Targets) == 0 {
		return ""
	}
	return "job=~" + anyOf(ob.o.Targets)
}

func (ob objective) modelSel() string {
	if len(ob.o.Models) == 0 {
		return ""
	}
	return "model_name=~" + anyOf(ob.o.Models)
}

func anyOf(vals []string) string {
	q := make([]string, len(vals))
	for i, v := range vals {
		q[i] = regexp.QuoteMeta(v)
	}
	return strconv.Quote(strings.Join(q, "|"))
}

func join(parts ...string) string {
	var out []string
	for _, p := range parts {
		if p != "" {
			out = append(out, p)
		}
	}
	return strings.Join(out, ", ")
}

func selector(name, m string) string { return name + braces(m) }

func braces(m string) string {
	if m == "" {
		return ""
	}
	return "{" + m + "}"
}

// HistogramNames returns the vLLM histogram family names (without _bucket)
// of a latency signal, newest first: the catalogue's names without the Ray
// re-export; for TPOT also time_per_output_token_seconds, the inter-token
// histogram that older vLLM (before 0.11) offers instead of the per-request
// one (an approximation; joined with `or`, the per-request histogram wins
// where both exist).
func HistogramNames(s catalog.Signal) ([]string, error) {
	a := catalog.Lookup(catalog.EngineVLLM, s)
	var out []string
	for _, m := range a.Metrics {
		if m.Kind == catalog.KindHistogram && m.Scale == 1 && strings.HasPrefix(m.Name, "vllm:") {
			out = append(out, m.Name)
		}
	}
	if s == catalog.TPOT {
		out = append(out, "vllm:time_per_output_token_seconds")
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("vLLM exports no histogram of %q", s)
	}
	return out, nil
}

// LeRegex matches both spellings of a bucket bound: as written by the page
// and as Prometheus 3 normalises it ("3" and "3.0"; "0.05" has one).
func LeRegex(v float64) string {
	a := strconv.FormatFloat(v, 'f', -1, 64)
	spell := []string{a}
	if !strings.Contains(a, ".") {
		spell = append(spell, a+".0")
	}
	for i, s := range spell {
		spell[i] = strings.ReplaceAll(s, ".", `\\.`)
	}
	return strings.Join(spell, "|")
}

func bucketRegex(names []string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = n + "_bucket"
	}
	return strings.Join(q, "|")
}

func describe(o settings.Objective) string {
	period := periodName(o)
	switch o.Kind {
	case settings.KindErrorRatio:
		s := "error ratio (HTTP 5xx of the inference handlers, engine error finishes, admission rejections"
		if o.Include4xx {
			s += ", HTTP 4xx"
		}
		if o.IncludeAborts {
			s += ", aborts"
		}
		return fmt.Sprintf("%s) at most %s over %s", s, num(1-o.Target), period)
	case settings.KindAvailability:
		return fmt.Sprintf("available (answering and not stalled) at least %s of the time over %s", num(o.Target), period)
	}
	return fmt.Sprintf("%s of %s at most %s s over %s", quantileName(o.Target), o.Signal, num(o.Threshold), period)
}

func periodName(o settings.Objective) string {
	if o.CalendarMonth {
		// A rolling 30 days: Prometheus rules cannot reset on the 1st.
		return "30d"
	}
	return dur(o.Period)
}

// quantileName renders a target as a quantile: 0.99 → "p99", 0.95 → "p95", 0.999 → "p99.9".
func quantileName(t float64) string {
	return "p" + strconv.FormatFloat(math.Round(t*1e6)/1e4, 'f', -1, 64)
}

func dur(d time.Duration) string { return slo.WindowName(d) }

func num(v float64) string {
	return strconv.FormatFloat(math.Round(v*1e12)/1e12, 'f', -1, 64)
}

// quote writes a YAML double-quoted scalar.
func quote(s string) string { return strconv.Quote(s) }
