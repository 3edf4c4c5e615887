package plugin

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"

	"github.com/inferscope/inferscope-llm-datasource/pkg/analysis/diagnose"
	"github.com/inferscope/inferscope-llm-datasource/pkg/settings"
	"github.com/inferscope/inferscope-llm-datasource/pkg/sim"
	"github.com/inferscope/inferscope-llm-datasource/pkg/source"
)

// The diagnosis evaluation: randomized workloads from the simulator
// (sim.GenerateFamily) with their ground truth, diagnosed end to end through
// the instance's QueryData (timeline format) at both cadences of the issue:
// 15 s steps over 60 s windows (the dashboard) and 1 m steps over 5 m
// windows. Seeds are split: the tune set (seeds 1…), the report set (seeds
// 1 000 001…, never used while changing the rules) and the CI set (seeds
// 2 000 001…, one workload per family). DIAGNOSIS_EVAL=full runs the tune
// and report sets (scripts/diagnosis-eval.sh); without it the CI set runs.

const (
	evalSpan   = 40 * time.Minute // simulated per workload
	evalWarmUp = 10 * time.Minute // windows before this are not scored
	evalScrape = 15 * time.Second
)

// evalCadences are the two step/window pairs scored.
var evalCadences = []struct {
	name   string
	step   time.Duration
	window time.Duration
}{{"15s/1m", 15 * time.Second, time.Minute}, {"1m/5m", time.Minute, 5 * time.Minute}}

// causeClasses maps each injected cause to the diagnosis classes that name it.
var causeClasses = map[string][]string{
	sim.BottleneckNone:           {"healthy"},
	sim.BottleneckIdle:           {"under_utilised"},
	sim.BottleneckQueue:          {"queue_saturation"},
	sim.BottleneckKVCache:        {"kv_cache_pressure"},
	sim.BottleneckPrefillCompute: {"prefill_compute_bound"},
	sim.BottleneckTokenBudget:    {"prefill_compute_bound"},
	sim.BottleneckDecodeMemory:   {"decode_memory_bound"},
	sim.BottleneckThermal:        {"gpu_throttled"},
	sim.BottleneckPowerCap:       {"power_capped"},
	sim.BottleneckStalled:        {"stalled"},
	sim.BottleneckStaleGauges:    {"idle_stale_gauges"},
	sim.BottleneckAborted:        {"aborted_traffic"},
	sim.BottleneckFrontend:       {"frontend_overhead"},
	sim.BottleneckHOL:            {"head_of_line_blocking"},
	sim.BottleneckNoGPUData:      {"insufficient_data"},
}

// performanceCauses are the causes that are a problem only when they break
// the SLO: in a window whose requests meet it, healthy is also correct.
var performanceCauses = []string{sim.BottleneckPowerCap, sim.BottleneckQueue, sim.BottleneckKVCache, sim.BottleneckPrefillCompute,
	sim.BottleneckTokenBudget, sim.BottleneckDecodeMemory, sim.BottleneckFrontend, sim.BottleneckHOL, sim.BottleneckNoGPUData}

// evalWindow is one scored window of one workload at one cadence.
type evalWindow struct {
	family  string
	accept  []string
	got     string
	healthy bool // the window is expected healthy (no fault, SLO met): a warning here is a false alarm
	sloMet  bool
}

type evalResult struct {
	alerts     []alertOutcome // 1m/5m result only: the provisioned diagnosis alert rules replayed
	rules      []evalAlertRule
	breached   map[string]float64 // per workload: share of scored windows whose SLO is breached
	windows    []evalWindow
	flaps      int
	hours      float64
	perFamily  map[string][2]int // correct, total
	confusions map[string]map[string]int
	// breachedSteps: steps whose objectives the diagnosis read breached, all
	// checked against issue 35's invariant (breachInvariant)
	breachedSteps int
}

// sloMet reports whether the requests that finished in (from, to] (simulated
// seconds) meet w's SLO: 99th percentile of TTFT and of TPOT (the mean
// inter-token gap of each request, standing in for ITL) at or under the
// objectives. No finished request: met is true and n is 0.
func sloMet(reqs []*sim.Request, v sim.Version, slo sim.SLO, from, to float64) (met bool, n int) {
	var ttft, tpot []float64
	for _, r := range reqs {
		if r.Finished <= from || r.Finished > to {
			continue
		}
		tr, ok := r.Truth(v)
		if !ok {
			continue
		}
		ttft = append(ttft, tr.TTFT)
		if tr.TPOT > 0 {
			tpot = append(tpot, tr.TPOT)
		}
	}
	return p99(ttft) <= slo.TTFT && p99(tpot) <= slo.ITL, len(ttft)
}

// kvTruth reports whether the engine preempted at least one request per
// twenty that finished in the window ending at rel (minute resolution).
func kvTruth(pre []float64, reqs []*sim.Request, rel, window time.Duration) bool {
	at := func(m int) float64 { // cumulative preemptions at minute m
		if m < 1 || len(pre) == 0 {
			return 0
		}
		return pre[min(m, len(pre))-1]
	}
	end := int(rel / time.Minute)
	start := min(int((rel-window)/time.Minute), end-1)
	n := at(end) - at(start)
	var fin int
	for _, r := range reqs {
		if r.Finished > (rel-window).Seconds() && r.Finished <= rel.Seconds() {
			fin++
		}
	}
	return n > 0 && n >= 0.05*float64(max(fin, 1))
}

func p99(x []float64) float64 {
	if len(x) == 0 {
		return 0
	}
	sort.Float64s(x)
	return x[int(math.Ceil(0.99*float64(len(x))))-1]
}

// runEvaluation fast-forwards the workloads into one TSDB (each its own
// target and, when it has one, GPU agent), runs the timeline query at both
// cadences and scores every window after the warm-up.
func runEvaluation(t *testing.T, ws []sim.Workload) map[string]*evalResult {
	t.Helper()
	db := openDiagDB(t)
	var js, agents []map[string]any
	var objectives []settings.Objective
	truth := map[string][]*sim.Request{}
	preempted := map[string][]float64{} // cumulative preemptions at the end of each simulated minute
	var start time.Time
	for k, w := range ws {
		name := fmt.Sprintf("w%02d-%s", k, w.Family)
		s, err := sim.New(w.Config, sim.Options{RecordTruth: true})
		require.NoError(t, err, w.Summary)
		if w.LlamaCpp {
			require.NoError(t, s.ExposeLlamaCpp())
		}
		start = s.Start()
		agent := name + "-gpu"
		ff := sim.FastForwardOptions{Duration: evalSpan, ScrapeInterval: evalScrape, VLLM: sim.Target{Job: name, Instance: name + ":8000"}}
		tj := map[string]any{"name": name, "url": "http://" + name + ":8000/metrics"}
		if w.GPUAgent {
			ff.GPU = sim.Target{Job: agent, Instance: agent + ":9400"}
			agents = append(agents, map[string]any{"name": agent, "url": "http://" + agent + ":9400/metrics"})
			tj["agent"] = agent
		}
		// Fast-forward a minute at a time, reading the engine's own
		// preemption count: a window whose engine preempted (recomputed)
		// for at least one request in twenty had its KV cache exhausted,
		// whatever the injected cause, and kv_cache_pressure is also right.
		app := sim.FaultAppender(db, w.Faults, s.Start(), name, agent)
		ff.Duration = time.Minute
		var pre []float64
		for m := 0; m < int(evalSpan/time.Minute); m++ {
			_, err = s.FastForward(context.Background(), app, ff)
			require.NoError(t, err)
			pre = append(pre, s.State().Preemptions)
		}
		preempted[name] = pre
		js = append(js, tj)
		truth[name] = s.Finished()
		objectives = append(objectives,
			settings.Objective{Name: name + "-ttft", Kind: settings.KindLatency, Signal: "ttft", Threshold: w.SLO.TTFT, Target: 0.99, Targets: []string{name}},
			settings.Objective{Name: name + "-tpot", Kind: settings.KindLatency, Signal: "tpot", Threshold: w.SLO.ITL, Target: 0.99, Targets: []string{name}})
	}
	raw, _ := json.Marshal(map[string]any{"targets": js, "gpuAgents": agents, "scrapeInterval": durText(evalScrape),
		"sloProfiles": []settings.Profile{{Name: "evaluation", Objectives: objectives}}})
	st, err := settings.Load(raw, nil)
	require.NoError(t, err)
	inst := newInstanceForTest(st, source.NewEmbedded(db, source.EmbeddedOptions{}))

	out := map[string]*evalResult{}
	rules := provisionedDiagnosisRules(t)
	defer func() {
		out[evalCadences[1].name].alerts = replayAlerts(t, inst, start, ws, rules, out[evalCadences[1].name].breached)
		out[evalCadences[1].name].rules = rules
	}()
	for _, cad := range evalCadences {
		res := &evalResult{perFamily: map[string][2]int{}, confusions: map[string]map[string]int{}, breached: map[string]float64{}}
		out[cad.name] = res
		times, classes := timeline(t, inst, start.Add(evalWarmUp), start.Add(evalSpan), cad.step, evalDur(cad.window))
		res.breachedSteps = breachInvariant(t, inst, start.Add(evalWarmUp), start.Add(evalSpan), cad.step, evalDur(cad.window), times, classes)
		dumpInputs(t, inst, start.Add(evalWarmUp), start.Add(evalSpan), cad.step, evalDur(cad.window), classes)
		nScored := map[string]float64{}
		for k, w := range ws {
			name := fmt.Sprintf("w%02d-%s", k, w.Family)
			c := classes[name]
			require.Len(t, c, len(times), name)
			res.hours += (evalSpan - evalWarmUp).Hours()
			grace := cad.window + cad.step
			if w.Family == "stall-low-traffic" {
				grace = max(grace, 6*time.Minute)
			}
			for i, ts := range times {
				rel := ts.Sub(start)
				phase := w.Causes
				if rel < w.Onset {
					phase = []string{w.Before}
				} else if rel < w.Onset+grace && w.Onset > 0 {
					continue // the cause is starting: not scored
				}
				met, _ := sloMet(truth[name], w.Config.Version, w.SLO, (rel - cad.window).Seconds(), rel.Seconds())
				var accept []string
				perf := true
				for _, cause := range phase {
					accept = append(accept, causeClasses[cause]...)
					perf = perf && slices.Contains(performanceCauses, cause)
				}
				if perf && met {
					accept = append(accept, "healthy")
				}
				// Under-use claims idle SMs: without a GPU agent it is
				// not raised (issue 22), and healthy is right.
				if slices.Equal(phase, []string{sim.BottleneckIdle}) && !w.GPUAgent {
					accept = append(accept, "healthy")
				}
				if kvTruth(preempted[name], truth[name], rel, cad.window) {
					accept = append(accept, "kv_cache_pressure")
				}
				healthy := slices.Equal(phase, []string{sim.BottleneckNone}) && met
				if !met {
					res.breached[name]++
				}
				nScored[name]++
				res.windows = append(res.windows, evalWindow{family: w.Family, accept: accept, got: c[i], healthy: healthy, sloMet: met})
				pf := res.perFamily[w.Family]
				pf[1]++
				if slices.Contains(accept, c[i]) {
					pf[0]++
				} else {
					if res.confusions[w.Family] == nil {
						res.confusions[w.Family] = map[string]int{}
					}
					res.confusions[w.Family][c[i]]++
				}
				res.perFamily[w.Family] = pf
			}
			flaps := 0
			for i := 2; i < len(c); i++ {
				if c[i] == c[i-2] && c[i] != c[i-1] && c[i] != "cannot_tell" && c[i-1] != "cannot_tell" {
					flaps++
				}
			}
			res.flaps += flaps
			if d := os.Getenv("DIAGNOSIS_EVAL_DEBUG"); d != "" && (d == w.Family || d == "flaps" && flaps > 0) {
				t.Logf("%s %s (flaps %d): %s\n%v", cad.name, name, flaps, w.Summary, runLengths(c))
			}
		}
		for k, n := range nScored {
			res.breached[k] /= n
		}
	}
	return out
}

// runLengths renders a class sequence as "class×n" runs.
func runLengths(c []string) string {
	var b strings.Builder
	for i := 0; i < len(c); {
		k := i
		for k < len(c) && c[k] == c[i] {
			k++
		}
		fmt.Fprintf(&b, "%s×%d ", c[i], k-i)
		i = k
	}
	return b.String()
}

func evalDur(d time.Duration) string { return strconv.Itoa(int(d.Seconds())) + "s" }

// evalAlertRule is one provisioned diagnosis alert rule: its uid, the
// class its numeric query keeps, and its `for` duration.
type evalAlertRule struct {
	uid, class string
	window     string // the query's window ("": the default)
	forDur     time.Duration
}

// provisionedDiagnosisRules reads the diagnosis alert rules from
// provisioning/alerting/inferscope-rules.yaml (a numeric diagnosis query
// keeping one class): what Grafana would evaluate.
func provisionedDiagnosisRules(t *testing.T) []evalAlertRule {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("..", "..", "provisioning", "alerting", "inferscope-rules.yaml"))
	require.NoError(t, err)
	var f struct {
		Groups []struct {
			Rules []struct {
				UID  string `yaml:"uid"`
				For  string `yaml:"for"`
				Data []struct {
					Model map[string]any `yaml:"model"`
				} `yaml:"data"`
			} `yaml:"rules"`
		} `yaml:"groups"`
	}
	require.NoError(t, yaml.Unmarshal(raw, &f))
	var out []evalAlertRule
	for _, g := range f.Groups {
		for _, r := range g.Rules {
			for _, d := range r.Data {
				cls, _ := d.Model["classes"].([]any)
				if d.Model["queryType"] != "diagnosis" || len(cls) != 1 {
					continue
				}
				fd, err := time.ParseDuration(r.For)
				require.NoError(t, err, r.UID)
				w, _ := d.Model["window"].(string)
				out = append(out, evalAlertRule{uid: r.UID, class: fmt.Sprint(cls[0]), window: w, forDur: fd})
			}
		}
	}
	require.NotEmpty(t, out)
	return out
}

// evalForCandidates are the `for` durations the replay also tries, to
// re-derive each rule's: the shortest that never fires on a healthy
// workload while firing on its cause within for + 2 minutes.
var evalForCandidates = []time.Duration{0, time.Minute, 2 * time.Minute, 3 * time.Minute, 5 * time.Minute, 10 * time.Minute}

// alertOutcome is one rule on one workload: whether the workload's cause is
// the rule's class, whether it is healthy, the minute its cause became
// scorable (onset, or the warm-up's end), and, per minute from the
// warm-up's end, whether the rule's condition held at that evaluation.
type alertOutcome struct {
	family, class    string
	onCause, healthy bool
	accepted         bool // the rule's class is right for the workload (its cause, whatever the SLO)
	from             time.Duration
	holds            []bool
}

// firedAt is the first minute (from the simulation's start) the rule fires
// with the given `for`: its condition held at every evaluation for that
// long; −1 never.
func (o alertOutcome) firedAt(forDur time.Duration) time.Duration {
	since := -1
	for k, h := range o.holds {
		if !h {
			since = -1
			continue
		}
		if since < 0 {
			since = k
		}
		if time.Duration(k-since)*time.Minute >= forDur {
			return evalWarmUp + time.Duration(k)*time.Minute
		}
	}
	return -1
}

// replayAlerts evaluates each provisioned diagnosis alert rule once a
// minute as Grafana does: the numeric query over the last 10 minutes at the
// alert's default step (the scrape interval, 15 s, with its 60 s window),
// the last value per target and class; it records, per workload and rule,
// whether the condition held at each evaluation (firedAt applies a `for`).
//
// A rule on a performance class (one the SLO anchor turns into an
// observation while every objective is met) is expected to fire only on
// workloads whose cause breaches the SLO: its cause counts where at least
// half the workload's scored 5-minute windows breach it (breached).
func replayAlerts(t *testing.T, inst *Instance, start time.Time, ws []sim.Workload, rules []evalAlertRule, breached map[string]float64) []alertOutcome {
	t.Helper()
	var seqs = map[string][]bool{} // target/class → condition per evaluation
	windows := map[string]bool{}
	for _, r := range rules {
		windows[r.window] = true
	}
	for m := evalWarmUp; m <= evalSpan; m += time.Minute {
		to := start.Add(m)
		now := map[string]bool{} // window/target/class
		for win := range windows {
			q := map[string]any{"format": "numeric"}
			if win != "" {
				q["window"] = win
			}
			dr := diagnosisQuery(t, inst, to.Add(-10*time.Minute), to, evalScrape, q)
			require.NoError(t, dr.Error)
			for _, f := range dr.Frames {
				if len(f.Fields) != 1 || f.Fields[0].Len() == 0 {
					continue
				}
				if v, ok := f.Fields[0].ConcreteAt(0); ok && v.(float64) > 0 {
					now[win+"/"+f.Fields[0].Labels["target"]+"/"+f.Fields[0].Labels["class"]] = true
				}
			}
		}
		for k, w := range ws {
			name := fmt.Sprintf("w%02d-%s", k, w.Family)
			for _, r := range rules {
				key := name + "/" + r.class
				seqs[key] = append(seqs[key], now[r.window+"/"+key])
			}
		}
	}
	var out []alertOutcome
	for k, w := range ws {
		name := fmt.Sprintf("w%02d-%s", k, w.Family)
		for _, r := range rules {
			o := alertOutcome{family: w.Family, class: r.class, from: max(w.Onset, evalWarmUp), holds: seqs[name+"/"+r.class]}
			for _, cause := range w.Causes {
				perf := slices.Contains(performanceCauses, cause)
				o.onCause = o.onCause || (slices.Contains(causeClasses[cause], r.class) && (!perf || breached[name] >= 0.5))
			}
			o.healthy = slices.Equal(w.Causes, []string{sim.BottleneckNone})
			for _, cause := range append(slices.Clone(w.Causes), w.Before) {
				o.accepted = o.accepted || slices.Contains(causeClasses[cause], r.class)
			}
			out = append(out, o)
		}
	}
	return out
}

// alertFigures are one rule's figures with a given `for`: workloads with
// its cause, those it fired on within for + 2 minutes of the cause, the
// median delay, and how many healthy workloads (of how many) it fired on.
func alertFigures(al []alertOutcome, class string, forDur time.Duration) (n, ok int, median string, fp, healthy, wrong int) {
	var delays []float64
	for _, o := range al {
		if o.class != class {
			continue
		}
		f := o.firedAt(forDur)
		if o.onCause {
			n++
			if f >= 0 && f-o.from <= forDur+2*time.Minute {
				ok++
			}
			if f >= 0 {
				delays = append(delays, (f - o.from).Minutes())
			}
		}
		if o.healthy {
			healthy++
			if f >= 0 {
				fp++
			}
		}
		if !o.healthy && !o.accepted && f >= 0 {
			wrong++
		}
	}
	median = "—"
	if len(delays) > 0 {
		sort.Float64s(delays)
		median = fmt.Sprintf("%.0f min", delays[len(delays)/2])
	}
	return n, ok, median, fp, healthy, wrong
}

// evalSummary is the figures of one result: share of windows naming the
// injected cause, false alarms (warning or critical on an expected-healthy
// window) over expected-healthy windows, and A→B→A flaps per target-hour.
func evalSummary(r *evalResult) (accuracy, falseAlarms, flapsPerHour float64, n, nHealthy int) {
	var ok, fa int
	for _, w := range r.windows {
		if slices.Contains(w.accept, w.got) {
			ok++
		}
		if w.healthy {
			nHealthy++
			if s := diagnose.Class(w.got).Severity(); s == diagnose.Warning || s == diagnose.Critical {
				fa++
			}
		}
	}
	n = len(r.windows)
	return float64(ok) / float64(max(n, 1)), float64(fa) / float64(max(nHealthy, 1)), float64(r.flaps) / math.Max(r.hours, 1e-9), n, nHealthy
}

// evalSet builds the workloads of a seed set: perFamily seeds per family,
// seeds from base on.
func evalSet(base uint64, perFamily int, world string) []sim.Workload {
	var fams []string
	for _, f := range sim.WorkloadFamilies {
		if !slices.Contains(fams, f) {
			fams = append(fams, f)
		}
	}
	var only []string // DIAGNOSIS_EVAL_FAMILIES: keep only these (same seeds)
	if v := os.Getenv("DIAGNOSIS_EVAL_FAMILIES"); v != "" {
		only = strings.Split(v, ",")
	}
	var out []sim.Workload
	seed := base
	for k := 0; k < perFamily; k++ {
		for _, f := range fams {
			if only == nil || slices.Contains(only, f) {
				out = append(out, sim.GenerateFamilyWorld(seed, f, evalSpan, world))
			}
			seed++
		}
	}
	// The families of issues 39 and 40 on seeds of their own (base + 100 000 …), so the
	// seeds of the families above keep their workloads.
	extra := base + 100_000
	for k := 0; k < perFamily; k++ {
		for _, f := range sim.ExtraFamilies {
			if only == nil || slices.Contains(only, f) {
				out = append(out, sim.GenerateFamily(extra, f, evalSpan))
			}
			extra++
		}
	}
	return out
}

// reportEval logs the figures of one set as a markdown table and returns it.
func reportEval(t *testing.T, set string, res map[string]*evalResult) string {
	var b strings.Builder
	fmt.Fprintf(&b, "\n#### %s seeds\n\n| cadence | windows | names the cause | healthy windows | false alarms | flaps per target-hour |\n|---|---|---|---|---|---|\n", set)
	for _, cad := range evalCadences {
		acc, fa, fl, n, nh := evalSummary(res[cad.name])
		fmt.Fprintf(&b, "| %s | %d | %.1f %% | %d | %.1f %% | %.2f |\n", cad.name, n, 100*acc, nh, 100*fa, fl)
	}
	b.WriteString(breachSummary(res))
	if al := res[evalCadences[1].name].alerts; len(al) > 0 {
		fmt.Fprintf(&b, "\n| alert rule (for) | workloads with its cause (SLO breached, for performance classes) | fired within for + 2 min | median delay | fired on healthy workloads | fired on other causes | other `for` (in time / healthy / other causes) |\n|---|---|---|---|---|---|---|\n")
		for _, r := range res[evalCadences[1].name].rules {
			n, ok, med, fp, healthy, wrong := alertFigures(al, r.class, r.forDur)
			var alt []string
			for _, fd := range evalForCandidates {
				_, ok2, _, fp2, _, wrong2 := alertFigures(al, r.class, fd)
				alt = append(alt, fmt.Sprintf("%s: %d/%d/%d", evalDur(fd), ok2, fp2, wrong2))
			}
			fmt.Fprintf(&b, "| %s (%s) | %d | %d | %s | %d of %d | %d | %s |\n", r.class, evalDur(r.forDur), n, ok, med, fp, healthy, wrong, strings.Join(alt, ", "))
		}
	}
	fmt.Fprintf(&b, "\n| family | %s | %s | most frequent wrong classes (1m/5m) |\n|---|---|---|---|\n", evalCadences[0].name, evalCadences[1].name)
	fams := map[string]bool{}
	for f := range res[evalCadences[1].name].perFamily {
		fams[f] = true
	}
	names := make([]string, 0, len(fams))
	for f := range fams {
		names = append(names, f)
	}
	sort.Strings(names)
	for _, f := range names {
		a, c := res[evalCadences[0].name].perFamily[f], res[evalCadences[1].name].perFamily[f]
		var wrong []string
		conf := res[evalCadences[1].name].confusions[f]
		keys := make([]string, 0, len(conf))
		for k := range conf {
			keys = append(keys, k)
		}
		sort.Slice(keys, func(i, j int) bool { return conf[keys[i]] > conf[keys[j]] })
		for _, k := range keys {
			wrong = append(wrong, fmt.Sprintf("%s %d", k, conf[k]))
		}
		fmt.Fprintf(&b, "| %s | %.0f %% | %.0f %% | %s |\n", f, 100*float64(a[0])/float64(max(a[1], 1)), 100*float64(c[0])/float64(max(c[1], 1)), strings.Join(wrong, ", "))
	}
	t.Log(b.String())
	return b.String()
}

// TestDiagnosisEvaluation runs the evaluation. Without DIAGNOSIS_EVAL it
// runs the CI set (one workload per family, seeds 2 000 001…) and checks
// the floors below; with DIAGNOSIS_EVAL=full it runs the tune set and the
// report set (DIAGNOSIS_EVAL_PER_FAMILY workloads per family each, default
// 3) and writes the tables to DIAGNOSIS_EVAL_OUT when set.
func TestDiagnosisEvaluation(t *testing.T) {
	if testing.Short() {
		t.Skip("fast-forwards simulated hours")
	}
	if os.Getenv("DIAGNOSIS_EVAL") != "full" {
		for _, world := range evalWorlds() {
			res := runEvaluation(t, evalSet(2_000_001, 1, world))
			reportEval(t, "CI, world "+world, res)
			floor := evalFloors[world]
			for _, cad := range evalCadences {
				acc, fa, fl, _, _ := evalSummary(res[cad.name])
				assert.GreaterOrEqual(t, acc, floor.accuracy, "%s %s: share of windows naming the cause", world, cad.name)
				assert.LessOrEqual(t, fa, floor.falseAlarms, "%s %s: false alarms", world, cad.name)
				assert.LessOrEqual(t, fl, floor.flaps, "%s %s: flaps per target-hour", world, cad.name)
			}
		}
		return
	}
	per := 3
	if v, err := strconv.Atoi(os.Getenv("DIAGNOSIS_EVAL_PER_FAMILY")); err == nil && v > 0 {
		per = v
	}
	var out strings.Builder
	sets := os.Getenv("DIAGNOSIS_EVAL_SETS") // "tune", "report" or both (default)
	for _, world := range evalWorlds() {
		if sets != "report" {
			out.WriteString(reportEval(t, "tune, world "+world, runEvaluation(t, evalSet(1, per, world))))
		}
		if sets != "tune" {
			out.WriteString(reportEval(t, "report, world "+world, runEvaluation(t, evalSet(reportSeed(), per, world))))
		}
	}
	if p := os.Getenv("DIAGNOSIS_EVAL_OUT"); p != "" {
		require.NoError(t, os.WriteFile(p, []byte(out.String()), 0o644))
	}
}

// evalFloor is what the CI set must keep in the roofline world: measured on
// it after the TPOT objective without a per-request histogram was read from
// the gap histogram (names the cause in 96.8 % / 94.9 % of windows at 15s/1m
// and 1m/5m, false alarms 0 % / 0 % of its 424 / 109 healthy windows, flaps
// 0.57 / 0 per target-hour; before, a vLLM 0.10 stale-gauges workload read
// decode_memory_bound in 31 of its 15 s windows, 7.3 %, and the floor was
// 0.08), with room: a guard against regressions, not the goal (the
// figures that count are the report set's, docs/diagnosis.md). The
// false-alarm floor leaves room for one workload's windows at 15 s steps
// (about 8 of 400) but not for a whole one.
var evalFloor = evalFloorT{0.93, 0.02, 0.7}

type evalFloorT struct{ accuracy, falseAlarms, flaps float64 }

// evalFloors are the CI floors per world (evalFloor for the roofline). The
// two other worlds, measured on the CI set after the per-gap TPOT reading:
// per-sequence 96.2 % / 95.1 % named, 0 % / 0 % false alarms (394 / 101
// healthy windows), 0.19 / 0 flaps; memory-floor 96.3 % / 94.8 %, 0 % / 0 %
// (411 / 105), 0.29 / 0 (before it, 96.0 % and 96.1 % at 15 s, the rest
// the same). The false-alarm floor leaves room for one workload's
// windows at 15 s steps (about 8 of 400) but not for a whole one. The
// scheduler world (preemption policies, random budgets), measured on the CI
// set when it was added: 96.8 % / 95.1 % named, 0 % / 0 % false alarms (424
// / 109 healthy windows), 0.38 / 0 flaps (its flap floor has the roofline's
// room, since its measure sits close to 0.4). After head-of-line blocking read the
// tail's share of the prompt tokens (issue 35, holTailWorkShare): roofline
// 97.0 % / 95.1 %, per-sequence 96.2 % / 95.1 %, memory-floor 96.5 % / 95.1 %,
// scheduler 97.0 % / 95.3 % named, 0 % false alarms, flaps 0.48 / 0.19 / 0.19
// / 0.29 at 15 s and 0 at 1 m; the floors are unchanged.
var evalFloors = map[string]evalFloorT{
	sim.WorldRoofline:    evalFloor,
	sim.WorldPerSequence: {0.93, 0.02, 0.4},
	sim.WorldMemoryFloor: {0.93, 0.02, 0.4},
	sim.WorldScheduler:   {0.93, 0.02, 0.6},
}
