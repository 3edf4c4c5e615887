package catalog

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
	"sync"
)

// State is what the evidence says about one signal of one target: the catalogue's Status
// (what an engine can export) refined by the metric names stored for that target in a range.
type State string

// Availability states, decided by Assess from stored names, never from the catalogue alone.
const (
	// StateExported: a family carrying the signal exactly is stored for the target.
	StateExported State = "exported"
	// StateApproximate: a family is stored, but it carries a related quantity; the Note says how
	// it differs.
	StateApproximate State = "approximate"
	// StateNotSeen: the engine (or version) can export the signal, but none of the names it
	// would use (TargetSignal.LookedFor) is stored for the target in the range.
	StateNotSeen State = "not_seen"
	// StateAbsent: this engine or version never exports the signal.
	StateAbsent State = "absent"
)

// TargetSignal is the availability of one signal for one target in one range.
type TargetSignal struct {
	Signal Signal
	State  State
	// Note is a sentence for users: why the value is approximate, why it is absent, or empty.
	Note string
	// Metrics are the catalogue's metrics for the signal that are stored, in preference order;
	// empty unless State is StateExported or StateApproximate. Builders read only these.
	Metrics []Metric
	// LookedFor are the stored sample names that would have carried the signal (a histogram's
	// _bucket sample, a counter's or gauge's name), in preference order; set for every state
	// but StateAbsent.
	LookedFor []string
}

// Exported reports whether the target has data for the signal (exactly or approximately).
func (t TargetSignal) Exported() bool {
	return t.State == StateExported || t.State == StateApproximate
}

// sampleName is the stored sample whose presence shows that m is exported: a histogram's
// _bucket (quantiles need buckets), a counter's or gauge's own name.
func sampleName(m Metric) string {
	if m.Kind == KindHistogram {
		return m.Name + "_bucket"
	}
	return m.Name
}

// Assess decides, for one target, how it provides signal s: d is the target's detection (see
// DetectStored) and stored the sample names stored for the target in the queried range (order
// and duplicates do not matter). Pure: the same inputs always give the same answer. An unknown
// engine gives StateAbsent with a Note saying the engine is unknown.
func Assess(d Detection, stored []string, s Signal) TargetSignal {
	return assess(d, storedSet(stored), s)
}

// AssessAll returns Assess for every signal in AllSignals, in that order.
func AssessAll(d Detection, stored []string) []TargetSignal {
	set := storedSet(stored)
	out := make([]TargetSignal, 0, len(AllSignals))
	for _, s := range AllSignals {
		out = append(out, assess(d, set, s))
	}
	return out
}

// storedAll reports whether every gauge a derived metric reads is stored.
func storedAll(stored map[string]bool, m Metric) bool {
	return stored[m.Name] && stored[m.Over] && (m.Plus == "" || stored[m.Plus])
}

func storedSet(names []string) map[string]bool {
	set := make(map[string]bool, len(names))
	for _, n := range names {
		set[n] = true
	}
	return set
}

func assess(d Detection, stored map[string]bool, s Signal) TargetSignal {
	if d.Engine == "" || d.Engine == EngineUnknown {
		return TargetSignal{Signal: s, State: StateAbsent, Note: "no known engine was detected for this target"}
	}
	a := LookupFor(d, s)
	ts := TargetSignal{Signal: s, Note: a.Note}
	if a.Status == Absent {
		ts.State = StateAbsent
		return ts
	}
	for _, m := range a.Metrics {
		n := sampleName(m)
		if !slices.Contains(ts.LookedFor, n) {
			ts.LookedFor = append(ts.LookedFor, n)
		}
		if stored[n] {
			ts.Metrics = append(ts.Metrics, m)
		}
	}
	switch {
	case len(ts.Metrics) == 0 && d.Engine == EngineLlamaCpp && s == KVCacheUsage:
		// Current llama.cpp builds never export it (removed by PR #13660): absent, said as
		// such, not a warning that a family went missing (issue 40 point 6).
		ts.State = StateAbsent
		ts.Note = "current llama.cpp builds do not export KV-cache usage (llamacpp:kv_cache_usage_ratio was removed by llama.cpp PR #13660, mid-2025); only older builds have it"
	case len(ts.Metrics) == 0:
		ts.State = StateNotSeen
		ts.Note = ""
	case ts.Metrics[0].Over != "" && storedAll(stored, ts.Metrics[0]):
		// A ratio of the engine's own counts (SGLang's physical KV occupancy) is exact.
		ts.State = StateExported
		ts.Note = notePhysicalKV
	case ts.Metrics[0].Over != "":
		// The ratio's other gauges are missing: read the next metric, if any.
		ts.Metrics = ts.Metrics[1:]
		if len(ts.Metrics) == 0 {
			ts.State = StateNotSeen
			ts.Note = ""
		} else if a.Status == Approximate {
			ts.State = StateApproximate
		} else {
			ts.State = StateExported
		}
	case a.Status == Approximate:
		ts.State = StateApproximate
	default:
		ts.State = StateExported
	}
	return ts
}

// NotSeenSentence says, for a user, that target did not export s in the range: which names
// were looked for, and that the panel shows no data rather than zero.
func (t TargetSignal) NotSeenSentence(target string, engine Engine) string {
	return fmt.Sprintf("target %s (%s): %s not seen in the queried range: none of %s is stored for it (no data, not zero)",
		target, engine, t.Signal, strings.Join(t.LookedFor, ", "))
}

// AbsentSentence says, for a user, that target's engine never exports s.
func (t TargetSignal) AbsentSentence(target string, engine Engine) string {
	msg := fmt.Sprintf("target %s (%s) does not export %s (no data, not zero)", target, engine, t.Signal)
	if t.Note != "" {
		msg += ": " + t.Note
	}
	return msg
}

// DetectStored is the one detection of a target: Detect over the sample names stored for it
// (the names the collector keeps, see Stores), with the engine named in the target's settings
// (override, may be empty) taking precedence. When the override names the engine Detect also
// found, Detect's generation and version are kept; otherwise only the engine is known. ok is
// false when there is neither an override nor a recognised engine.
func DetectStored(stored []string, override Engine) (Detection, bool) {
	d := Detect(stored)
	if override != "" {
		if d.Engine != override {
			d = Detection{Engine: override, Evidence: []string{"engine set in the target's settings"}}
		}
		return d, true
	}
	return d, d.Engine != EngineUnknown && d.Engine != ""
}

// llmPrefixes are the name prefixes of LLM engines' own families. The collector keeps every
// sample with one of these prefixes except the _bucket samples of families the catalogue does
// not read (see StoreRelabelRegexes), so detection and availability see each family the page
// carries, at the cost of two samples (_sum, _count) per unused histogram series.
var llmPrefixes = []string{"vllm:", "ray_vllm:", "ray_vllm_", "sglang:", "sglang_", "tgi_", "llamacpp:", "trtllm_", UserMetricPrefix,
	"llm_d_epp_", "inference_objective_", "inference_model_", "inference_pool_", "inference_extension_", liteLLMMarker, otelGenAIMarker}

// ProcessStartTime is the standard process-collector gauge (seconds since the Unix epoch) that
// Python and Go exporters put on their pages; a new value means the process restarted.
const ProcessStartTime = "process_start_time_seconds"

// StoreRegexes returns the regular expressions (RE2, unanchored text; Prometheus relabelling
// anchors them) that decide which samples the collector stores:
//   - keep: the catalogue's names (keepNames) and ProcessStartTime;
//   - family: any name with an LLM engine's prefix;
//   - bucket: the _bucket samples among family, kept only when keep matches them.
//
// A sample is stored when keep matches, or family matches and bucket does not. Stores applies
// the same rule in Go.
func StoreRegexes() (keep, family, bucket string) {
	p := make([]string, len(llmPrefixes))
	for i, x := range llmPrefixes {
		p[i] = regexp.QuoteMeta(x)
	}
	fam := "(?:" + strings.Join(p, "|") + ").*"
	return keepRegex() + "|" + regexp.QuoteMeta(ProcessStartTime), fam, fam + "_bucket"
}

var storeRE = sync.OnceValue(func() [3]*regexp.Regexp {
	k, f, b := StoreRegexes()
	return [3]*regexp.Regexp{regexp.MustCompile("^(?:" + k + ")$"), regexp.MustCompile("^(?:" + f + ")$"), regexp.MustCompile("^(?:" + b + ")$")}
})

// Stores reports whether the collector stores a sample named name (see StoreRegexes). The
// health check filters a probed page with it, so that it detects from the names a query will
// find stored. `_created` samples are never stored.
func Stores(name string) bool {
	if strings.HasSuffix(name, "_created") {
		return false
	}
	re := storeRE()
	return re[0].MatchString(name) || (re[1].MatchString(name) && !re[2].MatchString(name))
}

// StoredNames filters names with Stores, keeping their order.
func StoredNames(names []string) []string {
	out := make([]string, 0, len(names))
	for _, n := range names {
		if Stores(n) {
			out = append(out, n)
		}
	}
	return out
}

// SameSoftware reports whether two detections of one target (say, over two stretches of a
// range) can be the same engine build: same engine, no conflicting generation, and version
// ranges that overlap. A range narrowing as more families appear is not a change; an upgrade
// from 0.10 to 0.13 is. Unknown generations or versions never conflict.
func SameSoftware(a, b Detection) bool {
	if a.Engine != b.Engine {
		return false
	}
	if a.Generation != "" && b.Generation != "" && a.Generation != b.Generation {
		return false
	}
	alo, ahi, aok := parseVersionRange(a.Version)
	blo, bhi, bok := parseVersionRange(b.Version)
	if !aok || !bok {
		return true
	}
	return alo <= bhi && blo <= ahi
}

// Describe renders a detection as users read it: "vllm v1 0.11-0.12".
func (d Detection) Describe() string {
	s := string(d.Engine)
	if d.Generation != "" {
		s += " " + d.Generation
	}
	if d.Version != "" {
		s += " " + d.Version
	}
	return s
}

// Missing is one signal a target exported in a range, checked against the names on its
// latest scrape.
type Missing struct {
	Signal Signal
	// Missing is true when none of the names that carried the signal in the range is on the
	// latest scrape: the target stopped exporting the family (a flag turned off, an upgrade
	// that renamed it, a partial page).
	Missing bool
	// Had lists the names stored for the signal in the range, in preference order.
	Had []string
}

// MissingNow compares what a target exported in a range (AssessAll over the range's stored
// names) with the sample names on its latest scrape (present): one Missing per signal that
// was exported or approximate in the range, in AllSignals order. Signals the target never
// had are not listed: absent is not missing. Pure.
func MissingNow(inRange []TargetSignal, present []string) []Missing {
	now := storedSet(present)
	var out []Missing
	for _, ts := range inRange {
		if !ts.Exported() {
			continue
		}
		m := Missing{Signal: ts.Signal, Missing: true}
		for _, mt := range ts.Metrics {
			n := sampleName(mt)
			m.Had = append(m.Had, n)
			if now[n] {
				m.Missing = false
			}
		}
		out = append(out, m)
	}
	return out
}
