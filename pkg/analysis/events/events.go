// Package events finds, per target, the moments a dashboard must mark: engine
// restarts (counter resets or a new process start time), down periods (failed
// scrapes), a change of served model names on the same URL, a change of
// engine, engine generation or version family, a change of vLLM's cache
// configuration (cache_config_info labels), and counters that went backwards
// without a restart. A decrease is classed by sanity.ResetRule, the rule every
// query type applies: below half the previous value (or to 0) a restart, else
// backwards. Pure functions over PromQL results.
package events

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/prometheus/common/model"

	"github.com/inferscope/inferscope-llm-datasource/pkg/analysis/sanity"
	"github.com/inferscope/inferscope-llm-datasource/pkg/catalog"
)

// Kind names what happened.
type Kind string

// Event kinds; each is also the event's first tag.
const (
	Restart          Kind = "restart"           // the engine process restarted
	Down             Kind = "down"              // scrapes failed from Time to TimeEnd
	ModelChange      Kind = "model_change"      // the set of served model names changed
	EngineChange     Kind = "engine_change"     // engine, generation or version family changed
	ConfigChange     Kind = "config_change"     // vLLM cache_config_info labels changed
	CounterBackwards Kind = "counter_backwards" // a counter decreased to at least half its value (sanity.ResetRule)
)

// Event is one annotation: an instant (TimeEnd == Time) or a region.
type Event struct {
	Time, TimeEnd time.Time
	Target        string
	Kind          Kind
	Title, Text   string
	// Tags are the kind and the target, for Grafana's annotation filters.
	Tags []string
}

// Input is what the store holds about one target over [From, To].
type Input struct {
	Target string
	// Interval is the scrape interval: evidence of one restart seen by several series within
	// two intervals is one event.
	Interval time.Duration
	From, To time.Time
	// Up holds the raw samples of the target's `up` series (range selector, not a range query).
	Up model.Matrix
	// StartTimes holds raw samples of process_start_time_seconds (seconds since the epoch).
	StartTimes model.Matrix
	// Counters holds raw samples of monotonic counters (counters and histogram _count).
	Counters model.Matrix
	// Models is a range-query result with one series per model_name, present at the steps
	// where the target served that model.
	Models model.Matrix
	// Names is a range-query result with one series per stored metric name (label
	// __name__), present at the steps where the family was on the page.
	Names model.Matrix
	// Config is a range-query result of vllm:cache_config_info: one series per label set.
	Config model.Matrix
	// DownError is the target's current scrape error, given to a down period lasting to To.
	DownError string
	// Errors are the failed scrapes the collector remembers (when they started and their
	// error text, already sanitised); a down period names those that fall in it.
	Errors []ScrapeError
}

// ScrapeError is one failed scrape: when it started and its error text.
type ScrapeError struct {
	At    time.Time
	Error string
}

// Detect returns the target's events in time order. Restart evidence (every counter series
// reset, a new process start time) within two scrape intervals is merged into one event at
// the earliest sample; a counter that went backwards at a restart is part of it.
func Detect(in Input) []Event {
	var out []Event
	tol := 2 * in.Interval
	if tol <= 0 {
		tol = 30 * time.Second
	}

	type cand struct {
		at  time.Time
		why string
	}
	var restarts []cand
	for _, s := range in.StartTimes {
		for k := 1; k < len(s.Values); k++ {
			prev, cur := float64(s.Values[k-1].Value), float64(s.Values[k].Value)
			if cur > prev+0.5 {
				restarts = append(restarts, cand{s.Values[k].Timestamp.Time(), fmt.Sprintf("process_start_time_seconds moved from %s to %s", epoch(prev), epoch(cur))})
			}
		}
	}
	type back struct {
		at       time.Time
		name     string
		prev     float64
		cur      float64
		labelSet string
	}
	var backs []back
	resets := map[time.Time][]string{}
	for _, s := range in.Counters {
		name := string(s.Metric[model.MetricNameLabel])
		for k := 1; k < len(s.Values); k++ {
			prev, cur := float64(s.Values[k-1].Value), float64(s.Values[k].Value)
			if !(cur < prev) {
				continue
			}
			at := s.Values[k].Timestamp.Time()
			// One rule with the latency, throughput and saturation queries (sanity.ResetRule).
			if sanity.IsRestart(prev, cur) {
				resets[at] = append(resets[at], name)
				continue
			}
			backs = append(backs, back{at, name, prev, cur, labelText(s.Metric)})
		}
	}
	for at, names := range resets {
		slices.Sort(names)
		names = slices.Compact(names)
		restarts = append(restarts, cand{at, fmt.Sprintf("counters fell to less than half their value (%s)", strings.Join(names, ", "))})
	}
	sort.Slice(restarts, func(a, b int) bool {
		if restarts[a].at.Equal(restarts[b].at) {
			return restarts[a].why < restarts[b].why
		}
		return restarts[a].at.Before(restarts[b].at)
	})
	var restartTimes []time.Time
	for k := 0; k < len(restarts); {
		first := restarts[k]
		whys := []string{first.why}
		k++
		for k < len(restarts) && restarts[k].at.Sub(first.at) <= tol {
			whys = append(whys, restarts[k].why)
			k++
		}
		restartTimes = append(restartTimes, first.at)
		if len(in.StartTimes) == 0 {
			whys = append(whys, "a restart by the counters alone: this page exports no process_start_time_seconds to confirm it")
		}
		out = append(out, Event{Time: first.at, TimeEnd: first.at, Target: in.Target, Kind: Restart,
			Title: fmt.Sprintf("%s restarted", in.Target),
			Text:  fmt.Sprintf("%s restarted: %s. Rates over windows that span it count from zero again.", in.Target, strings.Join(whys, "; "))})
	}
	for _, b := range backs {
		if near(b.at, restartTimes, tol) {
			continue
		}
		out = append(out, Event{Time: b.at, TimeEnd: b.at, Target: in.Target, Kind: CounterBackwards,
			Title: fmt.Sprintf("%s: counter went backwards", in.Target),
			Text: fmt.Sprintf("%s%s went from %s to %s, still at least half its value, so not a restart: another process's counters may be served on this URL, or the exporter is broken; the queries leave the step out of their rates.",
				b.name, b.labelSet, num(b.prev), num(b.cur))})
	}

	out = append(out, downPeriods(in)...)
	out = append(out, setChanges(in, in.Models, "model_name", ModelChange)...)
	out = append(out, identityChanges(in)...)
	out = append(out, configChanges(in)...)
	for k := range out {
		out[k].Tags = []string{string(out[k].Kind), in.Target}
	}
	sort.SliceStable(out, func(a, b int) bool { return out[a].Time.Before(out[b].Time) })
	return out
}

func near(t time.Time, list []time.Time, tol time.Duration) bool {
	for _, x := range list {
		if d := t.Sub(x); d <= tol && d >= -tol {
			return true
		}
	}
	return false
}

func epoch(v float64) string {
	sec, frac := math.Modf(v)
	return time.Unix(int64(sec), int64(frac*1e9)).UTC().Format(time.RFC3339)
}

func num(v float64) string { return model.SampleValue(v).String() }

// labelText renders a series' labels without __name__, job and instance: {a="1", b="2"}.
func labelText(m model.Metric) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		switch k {
		case model.MetricNameLabel, "job", "instance":
			continue
		}
		keys = append(keys, string(k))
	}
	if len(keys) == 0 {
		return ""
	}
	slices.Sort(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s=%q", k, string(m[model.LabelName(k)]))
	}
	return "{" + strings.Join(parts, ", ") + "}"
}

// downPeriods turns runs of up == 0 into region events.
func downPeriods(in Input) []Event {
	var out []Event
	for _, s := range in.Up {
		var start time.Time
		failed := 0
		for _, v := range s.Values {
			t := v.Timestamp.Time()
			if v.Value == 0 {
				if failed == 0 {
					start = t
				}
				failed++
				continue
			}
			if failed > 0 {
				text := fmt.Sprintf("%s: %d scrapes failed from %s; scrapes succeed again from %s", in.Target, failed, start.UTC().Format(time.RFC3339), t.UTC().Format(time.RFC3339))
				if errs := errorsIn(in, start, t); errs != "" {
					text += "; scrape errors: " + errs
				}
				out = append(out, Event{Time: start, TimeEnd: t, Target: in.Target, Kind: Down,
					Title: fmt.Sprintf("%s down", in.Target), Text: text + "."})
				failed = 0
			}
		}
		if failed > 0 {
			text := fmt.Sprintf("%s: %d scrapes failed from %s and it was still down at the last scrape in the range", in.Target, failed, start.UTC().Format(time.RFC3339))
			end := s.Values[len(s.Values)-1].Timestamp.Time()
			switch errs := errorsIn(in, start, end); {
			case errs != "":
				text += "; scrape errors: " + errs
			case in.DownError != "":
				text += "; scrape error: " + in.DownError
			}
			out = append(out, Event{Time: start, TimeEnd: end, Target: in.Target, Kind: Down, Title: fmt.Sprintf("%s down", in.Target), Text: text + "."})
		}
	}
	return out
}

// errorsIn lists the distinct scrape errors remembered between the scrape
// before from and to, with how often each occurred: "connection refused (3×)".
func errorsIn(in Input, from, to time.Time) string {
	count := map[string]int{}
	var order []string
	for _, e := range in.Errors {
		if e.At.Before(from.Add(-in.Interval)) || e.At.After(to) {
			continue
		}
		if count[e.Error] == 0 {
			order = append(order, e.Error)
		}
		count[e.Error]++
	}
	parts := make([]string, len(order))
	for i, e := range order {
		parts[i] = e
		if count[e] > 1 {
			parts[i] += fmt.Sprintf(" (%d×)", count[e])
		}
	}
	return strings.Join(parts, "; ")
}

// sameSteps reports whether every series of m is present at exactly the same steps: then
// every step holds the same set and nothing changed (the usual case, answered without
// building the sets).
func sameSteps(m model.Matrix) bool {
	for _, s := range m[min(1, len(m)):] {
		if len(s.Values) != len(m[0].Values) {
			return false
		}
		for k, v := range s.Values {
			if v.Timestamp != m[0].Values[k].Timestamp {
				return false
			}
		}
	}
	return true
}

// stepSets turns a range-query result into, per step (ascending), the sorted set of
// key(series) for the series present at that step.
func stepSets(m model.Matrix, key func(model.Metric) string) ([]time.Time, [][]string) {
	keys := make([]string, len(m))
	order := make([]int, len(m))
	for i, s := range m {
		keys[i], order[i] = key(s.Metric), i
	}
	// Visiting the series in key order appends each step's keys sorted; equal keys are
	// adjacent, so a repeat is the last one appended.
	slices.SortStableFunc(order, func(a, b int) int { return strings.Compare(keys[a], keys[b]) })
	per := map[model.Time][]string{}
	for _, i := range order {
		for _, v := range m[i].Values {
			l := per[v.Timestamp]
			if n := len(l); n == 0 || l[n-1] != keys[i] {
				per[v.Timestamp] = append(l, keys[i])
			}
		}
	}
	ts := slices.Sorted(maps.Keys(per))
	times := make([]time.Time, len(ts))
	sets := make([][]string, len(ts))
	for i, t := range ts {
		times[i] = t.Time()
		sets[i] = per[t]
	}
	return times, sets
}

// setChanges reports each step whose set of label values differs from the last non-empty
// set before it (steps with nothing stored, such as down periods, are skipped).
func setChanges(in Input, m model.Matrix, label model.LabelName, kind Kind) []Event {
	if sameSteps(m) {
		return nil
	}
	times, sets := stepSets(m, func(x model.Metric) string { return string(x[label]) })
	return changeEvents(in, times, sets, kind, "served models changed", func(last, set []string) string {
		return fmt.Sprintf("%s served %s and now serves %s on the same URL; per-model series and baselines before and after are different models.",
			in.Target, strings.Join(last, ", "), strings.Join(set, ", "))
	})
}

// changeEvents is one event of kind at each step whose set differs from the last non-empty
// set before it (empty sets skipped), titled "<target>: <what>" with text(last, set).
func changeEvents(in Input, times []time.Time, sets [][]string, kind Kind, what string, text func(last, set []string) string) []Event {
	var out []Event
	var last []string
	for i, set := range sets {
		if len(set) == 0 {
			continue
		}
		if last != nil && !slices.Equal(last, set) {
			out = append(out, Event{Time: times[i], TimeEnd: times[i], Target: in.Target, Kind: kind,
				Title: fmt.Sprintf("%s: %s", in.Target, what), Text: text(last, set)})
		}
		last = set
	}
	return out
}

// identityChanges detects the software at each step from the names present there and
// reports when it stops being the same software (catalog.SameSoftware).
func identityChanges(in Input) []Event {
	if sameSteps(in.Names) {
		return nil
	}
	times, sets := stepSets(in.Names, func(x model.Metric) string { return string(x[model.MetricNameLabel]) })
	var out []Event
	var last *catalog.Detection
	var lastSet []string
	for i, set := range sets {
		if len(set) == 0 || slices.Equal(set, lastSet) {
			continue
		}
		lastSet = set
		d := catalog.Detect(set)
		if d.Engine == catalog.EngineUnknown {
			continue
		}
		if last != nil && !catalog.SameSoftware(*last, d) {
			out = append(out, Event{Time: times[i], TimeEnd: times[i], Target: in.Target, Kind: EngineChange,
				Title: fmt.Sprintf("%s: engine changed", in.Target),
				Text:  fmt.Sprintf("%s was %s and is now %s (detected from the metric names on its page).", in.Target, last.Describe(), d.Describe())})
		}
		last = &d
	}
	return out
}

// configChanges reports changes of the set of cache_config_info label sets.
func configChanges(in Input) []Event {
	if sameSteps(in.Config) {
		return nil
	}
	times, sets := stepSets(in.Config, labelText)
	return changeEvents(in, times, sets, ConfigChange, "vLLM cache configuration changed", func(last, set []string) string {
		return fmt.Sprintf("%s cache_config_info changed: %s.", in.Target, diffLabels(last, set))
	})
}

// diffLabels names the label pairs that appear only before or only after.
func diffLabels(before, after []string) string {
	pairs := func(sets []string) map[string]bool {
		m := map[string]bool{}
		for _, s := range sets {
			for _, p := range strings.Split(strings.Trim(s, "{}"), ", ") {
				if p != "" {
					m[p] = true
				}
			}
		}
		return m
	}
	b, a := pairs(before), pairs(after)
	var gone, added []string
	for p := range b {
		if !a[p] {
			gone = append(gone, p)
		}
	}
	for p := range a {
		if !b[p] {
			added = append(added, p)
		}
	}
	slices.Sort(gone)
	slices.Sort(added)
	if len(gone) == 0 && len(added) == 0 {
		return fmt.Sprintf("%d label sets before, %d after", len(before), len(after))
	}
	return fmt.Sprintf("before %s; after %s", orNone(gone), orNone(added))
}

func orNone(s []string) string {
	if len(s) == 0 {
		return "(none)"
	}
	return strings.Join(s, ", ")
}
