package slo

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/prometheus/common/model"

	"github.com/inferscope/inferscope-llm-datasource/pkg/analysis"
	"github.com/inferscope/inferscope-llm-datasource/pkg/catalog"
	"github.com/inferscope/inferscope-llm-datasource/pkg/hist"
	"github.com/inferscope/inferscope-llm-datasource/pkg/settings"
)

// Objective is one SLO objective of a profile as the SLO query types count it: the profile's
// name, the objective as the settings hold it, the user's group labels of the query
// ("target", "model", "engine", a dimension's stored label name; empty for none) and the data
// source's scrape interval (the sample an availability objective's serving state stands for).
type Objective struct {
	Profile string
	settings.Objective
	GroupBy []string
	Scrape  time.Duration
}

// Spec is the objective's row description: its threshold in seconds (NaN for an error-ratio
// objective, which has none) and its period as the profile names it ("30d", or "month" for
// the calendar month).
func (o Objective) Spec() Spec {
	th := o.Threshold
	if o.Kind == settings.KindErrorRatio {
		th = math.NaN()
	}
	period := model.Duration(o.Period).String()
	if o.CalendarMonth {
		period = settings.PeriodCalendarMonth
	}
	return Spec{Profile: o.Profile, Objective: o.Name, Kind: o.Kind, Signal: o.Signal,
		Threshold: th, Target: o.Target, Period: o.Period, PeriodName: period}
}

// FactorPeriod is the period the burn-rate factors scale with at instant at: the objective's
// period, or the length of at's calendar month (MonthLength).
func (o Objective) FactorPeriod(at time.Time) time.Duration {
	if o.CalendarMonth {
		return MonthLength(at)
	}
	return o.Period
}

// BudgetWindow is the window the error budget is counted over, ending at at: the objective's
// period, or the time since the 1st of at's month (UTC; whole minutes, at least one).
func (o Objective) BudgetWindow(at time.Time) time.Duration {
	if !o.CalendarMonth {
		return o.Period
	}
	w := at.Sub(PeriodStart(at, 0, true)).Truncate(time.Minute)
	if w < time.Minute {
		w = time.Minute
	}
	return w
}

// AvailabilityResolution is the resolution of the serving-state subquery over window w: the
// scrape interval (settings.DefaultScrapeInterval when unset), coarsened so that a window
// holds at most 10,000 samples (30 d at a 15 s scrape: 4m20s; each sample stands for that
// much time).
func AvailabilityResolution(scrape, w time.Duration) time.Duration {
	res := scrape
	if res <= 0 {
		res = settings.DefaultScrapeInterval
	}
	if min := w / 10000; res < min {
		res = min.Truncate(time.Second) + time.Second
	}
	return res
}

// Scaled returns the counts multiplied by f (rates × seconds: the requests of a window).
func (c Counts) Scaled(f float64) Counts {
	return Counts{Good: c.Good * f, GoodLower: c.GoodLower * f, GoodUpper: c.GoodUpper * f, Total: c.Total * f}
}

// DescribeGroup renders a group's labels for a notice: " (k=v,k=v)", empty for no label.
func DescribeGroup(l map[string]string) string {
	if len(l) == 0 {
		return ""
	}
	return " (" + strings.TrimSuffix(analysis.LabelsKey(l), ",") + ")"
}

// ShortDuration renders d rounded to a readable precision ("2h10m", "45s"): minutes from an
// hour on, seconds below.
func ShortDuration(d time.Duration) string {
	if d >= time.Hour {
		d = d.Round(time.Minute)
	} else {
		d = d.Round(time.Second)
	}
	return model.Duration(d).String()
}

// splitErrorInputs separates the concatenated results of the error SLI's three queries
// (catalog.ErrorSLIPromQL) by their labels: status (HTTP), finished_reason (finishes),
// neither (rejections).
func splitErrorInputs(v model.Vector) ErrorInputs {
	var in ErrorInputs
	for _, s := range v {
		switch {
		case s.Metric["status"] != "":
			in.HTTP = append(in.HTTP, s)
		case s.Metric["finished_reason"] != "":
			in.Finishes = append(in.Finishes, s)
		default:
			in.Rejections = append(in.Rejections, s)
		}
	}
	return in
}

// splitStat separates the serving-state query's samples by their stat label: good, and known
// (every other value); the stat label is dropped.
func splitStat(v model.Vector) (good, known model.Vector) {
	for _, s := range v {
		m := s.Metric.Clone()
		delete(m, "stat")
		c := &model.Sample{Metric: m, Value: s.Value, Timestamp: s.Timestamp}
		if s.Metric["stat"] == "good" {
			good = append(good, c)
		} else {
			known = append(known, c)
		}
	}
	return good, known
}

// WindowCounts turns the rates of one window (v: the window's queries' results concatenated;
// seconds: its length) into per-group Counts (rates × seconds) for the objective's kind: the
// error SLI (ErrorRatioCounts), the serving state (AvailabilityVector) or the bucket rates
// counted per layout (LayeredVector). It also returns the layouts of a latency objective's
// groups, and the groups; the kinds' notices go to notes.
func (o Objective) WindowCounts(v model.Vector, seconds float64, notes *analysis.Notices) (map[string]Counts, map[string]Layered, []Group) {
	out := map[string]Counts{}
	var groups []Group
	switch o.Kind {
	case settings.KindErrorRatio:
		bs, ns := ErrorRatioCounts(splitErrorInputs(v), ErrorOptions{Include4xx: o.Include4xx, IncludeAborts: o.IncludeAborts}, o.GroupBy)
		for _, n := range ns {
			notes.Add(analysis.Info, fmt.Sprintf("objective %s/%s: %s", o.Profile, o.Name, n))
		}
		for _, b := range bs {
			out[b.Group.Key] = b.Counts.Scaled(seconds)
			groups = append(groups, b.Group)
			if b.NoHTTP {
				notes.Add(analysis.Info, fmt.Sprintf("objective %s/%s%s: no inference HTTP counter (http_requests_total) for some target, so its 5xx answers are not counted there; the ratio is engine error finishes and admission rejections over finished and rejected requests", o.Profile, o.Name, DescribeGroup(b.Group.Labels)))
			}
		}
		return out, nil, groups
	case settings.KindAvailability:
		good, known := splitStat(v)
		w := time.Duration(seconds * float64(time.Second))
		gs, cs := AvailabilityVector(good, known, AvailabilityResolution(o.Scrape, w), o.GroupBy)
		return cs, nil, gs
	}
	ls, bad := LayeredVector(v, o.GroupBy)
	if bad > 0 {
		notes.Add(analysis.Warning, fmt.Sprintf("%s: %d bucket series had an le label that is not a number and were ignored", o.Signal, bad))
	}
	layered := map[string]Layered{}
	for _, l := range ls {
		out[l.Group.Key] = l.Counts(o.Threshold).Scaled(seconds)
		layered[l.Group.Key] = l
		groups = append(groups, l.Group)
	}
	return out, layered, groups
}

// ReasonCounts is WindowCounts for an error-ratio objective read from finished-request rates
// carrying a finished_reason label (a client-side probe's outcomes: ReasonVector), grouped by
// their own labels; series without a finish reason are left out with a warning.
func (o Objective) ReasonCounts(v model.Vector, seconds float64, notes *analysis.Notices) (map[string]Counts, []Group) {
	out := map[string]Counts{}
	groups, cs, noReason := ReasonVector(v)
	if noReason > 0 {
		notes.Add(analysis.Warning, fmt.Sprintf("objective %s/%s: %d finished-request series carry no finish reason (the engine does not report one) and are left out of the error ratio", o.Profile, o.Name, noReason))
	}
	for k, c := range cs {
		out[k] = c.Scaled(seconds)
	}
	return out, groups
}

// HistoryOf builds each group's History from a range result m of the objective's window
// queries at steps of res (windows of res): LayeredHistory for a latency objective, the
// window counts of every step for the other kinds. Groups are sorted by key.
func (o Objective) HistoryOf(m model.Matrix, steps []time.Time, res time.Duration, notes *analysis.Notices) ([]Group, map[string]History, map[string]Layered) {
	if o.Kind == settings.KindLatency {
		return LayeredHistory(m, steps, res, o.Threshold, o.GroupBy)
	}
	idx := make(map[int64]int, len(steps))
	for k, t := range steps {
		idx[t.UnixMilli()] = k
	}
	perStep := make([]model.Vector, len(steps))
	for _, ss := range m {
		for _, p := range ss.Values {
			if k, ok := idx[int64(p.Timestamp)]; ok && !math.IsNaN(float64(p.Value)) {
				perStep[k] = append(perStep[k], &model.Sample{Metric: ss.Metric, Value: p.Value})
			}
		}
	}
	hs := map[string]History{}
	var groups []Group
	for k, v := range perStep {
		if len(v) == 0 {
			continue
		}
		cs, _, gs := o.WindowCounts(v, res.Seconds(), notes)
		for _, g := range gs {
			h, ok := hs[g.Key]
			if !ok {
				h = History{Times: steps, Resolution: res, Counts: make([]Counts, len(steps))}
				groups = append(groups, g)
			}
			h.Counts[k] = cs[g.Key]
			hs[g.Key] = h
		}
	}
	slices.SortFunc(groups, func(a, b Group) int { return strings.Compare(a.Key, b.Key) })
	return groups, hs, nil
}

// LayeredNotice says, for a latency objective whose threshold is not a bound of every layout
// of group l, that good and total requests are counted per target and added when the group
// holds several layouts (where the threshold is not a bound is said once per objective, by
// the read layer's threshold notice).
func (o Objective) LayeredNotice(l Layered, notes *analysis.Notices) {
	if o.Kind != settings.KindLatency || len(l.Parts) == 0 {
		return
	}
	if loc := l.Locate(o.Threshold); loc.Exact {
		return
	}
	if n := l.Layouts(); n > 1 {
		notes.Add(analysis.Info, fmt.Sprintf("objective %s/%s: %d bucket layouts in one group; good and total requests are counted per target and added, which is exact whatever the layouts", o.Profile, o.Name, n))
	}
}

// FirstLayout is the first target's bucket layout of the group (nil when none): where a
// threshold's neighbouring bounds are named when the stored layouts cannot be read.
func (l Layered) FirstLayout() []hist.Bucket {
	if len(l.Parts) == 0 {
		return nil
	}
	return l.Parts[0]
}

// ReadSignal is the signal the objective reads: its latency stage, the finished requests for
// an error-ratio objective (its SLI's request counter).
func (o Objective) ReadSignal() catalog.Signal {
	if o.Kind == settings.KindErrorRatio {
		return catalog.RequestsFinished
	}
	return catalog.Signal(o.Signal)
}
