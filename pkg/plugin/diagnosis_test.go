package plugin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/backend"
	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/textparse"
	"github.com/prometheus/prometheus/tsdb"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/inferscope/inferscope-llm-datasource/pkg/analysis/diagnose"
	"github.com/inferscope/inferscope-llm-datasource/pkg/settings"
	"github.com/inferscope/inferscope-llm-datasource/pkg/sim"
	"github.com/inferscope/inferscope-llm-datasource/pkg/source"
)

// simTarget is one simulated target for a diagnosis test.
type simTarget struct {
	name     string
	scenario string
	gpu      bool                // also write the simulated GPU agent
	tweak    func(c *sim.Config) // optional change after the scenario
}

// simDiagnosisInstance fast-forwards each target's scenario for span at the
// given scrape interval into one TSDB and returns an instance over it and
// the common start.
func simDiagnosisInstance(t testing.TB, span, scrape time.Duration, targets ...simTarget) (*Instance, time.Time) {
	t.Helper()
	db := openDiagDB(t)
	js, agents, start := fastForwardInto(t, db, span, scrape, targets)
	return diagInstance(t, db, scrape, js, agents), start
}

func openDiagDB(t testing.TB) *tsdb.DB {
	t.Helper()
	opts := tsdb.DefaultOptions()
	opts.MinBlockDuration = (24 * time.Hour).Milliseconds()
	opts.MaxBlockDuration = opts.MinBlockDuration
	db, err := tsdb.Open(t.TempDir(), nil, nil, opts, nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = db.Close() })
	return db
}

// fastForwardInto writes the simulated targets into db and returns their
// settings entries (targets, GPU agents) and the simulation start.
func fastForwardInto(t testing.TB, db *tsdb.DB, span, scrape time.Duration, targets []simTarget) (js, agents []map[string]any, start time.Time) {
	t.Helper()
	start = sim.DefaultStart
	for k, tg := range targets {
		cfg := sim.DefaultConfig()
		require.NoError(t, sim.ApplyScenario(&cfg, tg.scenario))
		cfg.Seed = uint64(k + 1)
		if tg.tweak != nil {
			tg.tweak(&cfg)
		}
		s, err := sim.New(cfg, sim.Options{})
		require.NoError(t, err)
		start = s.Start()
		ff := sim.FastForwardOptions{Duration: span, ScrapeInterval: scrape, VLLM: sim.Target{Job: tg.name, Instance: tg.name + ":8000"}}
		tj := map[string]any{"name": tg.name, "url": "http://" + tg.name + ":8000/metrics"}
		if tg.gpu {
			agent := tg.name + "-gpu"
			ff.GPU = sim.Target{Job: agent, Instance: agent + ":9400"}
			agents = append(agents, map[string]any{"name": agent, "url": "http://" + agent + ":9400/metrics"})
			tj["agent"] = agent
		}
		_, err = s.FastForward(context.Background(), db, ff)
		require.NoError(t, err)
		js = append(js, tj)
	}
	return js, agents, start
}

// The data source has no SLO profile (an explicit empty list): these tests
// check the rules' patterns on the fixed thresholds; the SLO anchor (a
// met objective turns a performance class into an observation) is tested
// in pkg/analysis/diagnose and by TestDiagnosisEvaluation.
func diagInstance(t testing.TB, db *tsdb.DB, scrape time.Duration, js, agents []map[string]any) *Instance {
	t.Helper()
	raw, _ := json.Marshal(map[string]any{"targets": js, "gpuAgents": agents, "scrapeInterval": durText(scrape), "sloProfiles": []any{}})
	st, err := settings.Load(raw, nil)
	require.NoError(t, err)
	return newInstanceForTest(st, source.NewEmbedded(db, source.EmbeddedOptions{}))
}

func durText(d time.Duration) string { return fmt.Sprintf("%ds", int(d.Seconds())) }

// diagnosisQuery runs one diagnosis query and returns its response.
func diagnosisQuery(t testing.TB, inst *Instance, from, to time.Time, step time.Duration, q map[string]any) backend.DataResponse {
	t.Helper()
	q["queryType"] = "diagnosis"
	raw, _ := json.Marshal(q)
	resp, err := inst.QueryData(context.Background(), &backend.QueryDataRequest{Queries: []backend.DataQuery{{
		RefID: "A", QueryType: "diagnosis", JSON: raw, Interval: step, MaxDataPoints: 100000,
		TimeRange: backend.TimeRange{From: from, To: to},
	}}})
	require.NoError(t, err)
	return resp.Responses["A"]
}

// timeline runs a diagnosis timeline query and returns the primary class per
// step for each target.
func timeline(t testing.TB, inst *Instance, from, to time.Time, step time.Duration, window string) (times []time.Time, classes map[string][]string) {
	t.Helper()
	q := map[string]any{"format": "timeline"}
	if window != "" {
		q["window"] = window
	}
	dr := diagnosisQuery(t, inst, from, to, step, q)
	require.NoError(t, dr.Error)
	require.Len(t, dr.Frames, 1)
	f := dr.Frames[0]
	classes = map[string][]string{}
	for i := 0; i < f.Fields[0].Len(); i++ {
		times = append(times, f.Fields[0].At(i).(time.Time))
	}
	for _, fld := range f.Fields[1:] {
		vals := make([]string, fld.Len())
		for i := range vals {
			if p := fld.At(i).(*string); p != nil {
				vals[i] = *p
			}
		}
		classes[fld.Labels["target"]] = vals
	}
	return times, classes
}

// TestDiagnosisStallFromSimulator: the simulator's stall (progress counters
// frozen, /metrics still answering), once with the running gauge dropping
// to 0 and once with it frozen above 0, is diagnosed as stalled within 3
// scrape intervals of the stall, and cleared once progress resumes (a
// restart cures the stall in the simulator; it recurs StallAt later).
func TestDiagnosisStallFromSimulator(t *testing.T) {
	const scrape = 15 * time.Second
	restart := func(c *sim.Config) { c.RestartEvery = 10 * time.Minute; c.RestartDowntime = 20 * time.Second }
	inst, start := simDiagnosisInstance(t, 14*time.Minute, scrape,
		simTarget{name: "dropped", scenario: "stalled", tweak: restart},
		simTarget{name: "frozen", scenario: "stalled-running", tweak: restart})
	times, classes := timeline(t, inst, start.Add(2*time.Minute), start.Add(14*time.Minute), scrape, "")
	stallAt := start.Add(5 * time.Minute)
	resumed := start.Add(10*time.Minute + 20*time.Second) // restart over: the engine runs again
	for _, name := range []string{"dropped", "frozen"} {
		c := classes[name]
		require.Len(t, c, len(times))
		first := time.Time{}
		for i, ts := range times {
			if c[i] == "stalled" && first.IsZero() {
				first = ts
			}
			if ts.Before(stallAt) {
				assert.NotEqual(t, "stalled", c[i], "%s at %s: before the stall", name, ts.Sub(start))
			}
			if !ts.Before(stallAt.Add(3*scrape)) && ts.Before(start.Add(10*time.Minute)) {
				assert.Equal(t, "stalled", c[i], "%s at %s", name, ts.Sub(start))
			}
			if !ts.Before(resumed.Add(3 * scrape)) {
				assert.NotEqual(t, "stalled", c[i], "%s at %s: progress resumed", name, ts.Sub(start))
			}
		}
		require.False(t, first.IsZero(), "%s: never stalled: %v", name, c)
		assert.LessOrEqual(t, first.Sub(stallAt), 3*scrape, "%s: stalled at %s", name, first.Sub(start))
	}

	// What the stalled-engine alert rule asks: numeric, stalled class only,
	// one series per target, 3 (critical) while the stall holds.
	dr := diagnosisQuery(t, inst, start.Add(8*time.Minute), start.Add(9*time.Minute), scrape,
		map[string]any{"queryType": "diagnosis", "format": "numeric", "classes": []string{"stalled"}})
	require.NoError(t, dr.Error)
	require.Len(t, dr.Frames, 2)
	for _, f := range dr.Frames {
		require.Equal(t, "stalled", f.Fields[0].Labels["class"])
		v, ok := f.Fields[0].ConcreteAt(0)
		require.True(t, ok)
		assert.Equal(t, 3.0, v, "target %s", f.Fields[0].Labels["target"])
	}
	// A model no target serves (a typo in an alert rule): no series, and a
	// notice, so the rule reports no data instead of "all clear".
	dr = diagnosisQuery(t, inst, start.Add(8*time.Minute), start.Add(9*time.Minute), scrape,
		map[string]any{"queryType": "diagnosis", "format": "numeric", "models": []string{"no-such-model"}})
	require.NoError(t, dr.Error)
	for _, f := range dr.Frames {
		assert.Empty(t, f.Fields, "no series for a selection without data")
	}
	require.NotEmpty(t, dr.Frames)
	var said bool
	for _, n := range dr.Frames[0].Meta.Notices {
		said = said || strings.Contains(n.Text, "no engine data in the range for models no-such-model")
	}
	assert.True(t, said, "%v", dr.Frames[0].Meta.Notices)
	dr = diagnosisQuery(t, inst, start.Add(8*time.Minute), start.Add(9*time.Minute), scrape,
		map[string]any{"queryType": "diagnosis", "format": "numeric", "classes": []string{"stall"}})
	require.ErrorContains(t, dr.Error, `classes: "stall" is not a diagnosis class`)
}

// scenarioClass is the class each labelled scenario is meant to produce;
// restart and flaky are not diagnosis classes (see the events query) and
// are measured only.
var scenarioClass = []struct{ scenario, class string }{
	{"healthy", "healthy"}, {"queue-saturated", "queue_saturation"}, {"kv-pressure", "kv_cache_pressure"},
	{"prefill-heavy", "prefill_compute_bound"}, {"decode-bound", "decode_memory_bound"},
	{"thermal-throttled", "gpu_throttled"}, {"stalled", "stalled"}, {"stalled-running", "stalled"},
	{"frontend-bound", "frontend_overhead"}, {"under-utilised", "under_utilised"},
	{"restart", ""}, {"flaky", ""},
	{"long-prompt-hol", "head_of_line_blocking"}, {"client-cancels", "aborted_traffic"},
	{"power-capped", "power_capped"},
}

// TestDiagnosisScenarioAccuracy fast-forwards every labelled simulator
// scenario for an hour (vLLM 0.11 and the simulated GPU agent, 15 s
// scrapes) and diagnoses it at 1-minute steps over 5-minute windows. After
// a 10-minute warm-up (the stalled scenarios stall at 5 minutes) the
// intended class must be the primary class in ≥ 95 % of the windows, the
// healthy scenario must show nothing but healthy, and the primary class
// must never flap (A → B → A within three consecutive windows, neither
// being cannot_tell, which says the page did not answer). The table
// it logs is the README's.
func TestDiagnosisScenarioAccuracy(t *testing.T) {
	if testing.Short() {
		t.Skip("fast-forwards 12 simulated hours")
	}
	const scrape, span, warm = 15 * time.Second, time.Hour, 10 * time.Minute
	var targets []simTarget
	for _, sc := range scenarioClass {
		targets = append(targets, simTarget{name: sc.scenario, scenario: sc.scenario, gpu: true})
	}
	inst, start := simDiagnosisInstance(t, span, scrape, targets...)
	_, classes := timeline(t, inst, start.Add(warm), start.Add(span), time.Minute, "5m")
	var table strings.Builder
	table.WriteString("| scenario | intended class | windows | intended | other classes seen | class changes |\n|---|---|---|---|---|---|\n")
	for _, sc := range scenarioClass {
		c := classes[sc.scenario]
		require.NotEmpty(t, c, sc.scenario)
		counts := map[string]int{}
		changes := 0
		for i, x := range c {
			counts[x]++
			if i > 0 && c[i-1] != x {
				changes++
			}
			// cannot_tell (the page did not answer) is the absence of a
			// diagnosis, not a class to flap to.
			if i > 1 && c[i-2] == x && c[i-1] != x && x != "cannot_tell" && c[i-1] != "cannot_tell" {
				t.Errorf("%s: flapping %s → %s → %s at window %d", sc.scenario, x, c[i-1], x, i)
			}
		}
		var others []string
		for _, k := range slices.Sorted(maps.Keys(counts)) {
			if k != sc.class {
				others = append(others, fmt.Sprintf("%s %d", k, counts[k]))
			}
		}
		share := float64(counts[sc.class]) / float64(len(c))
		intended, shown := sc.class, fmt.Sprintf("%.1f %%", 100*share)
		if sc.class == "" {
			intended, shown = "— (not a diagnosis class)", "—"
		} else {
			assert.GreaterOrEqual(t, share, 0.95, "%s: %v", sc.scenario, counts)
		}
		if sc.scenario == "healthy" {
			assert.Equal(t, len(c), counts["healthy"], "healthy shows only healthy: %v", counts)
		}
		fmt.Fprintf(&table, "| %s | %s | %d | %s | %s | %d |\n", sc.scenario, intended, len(c), shown, strings.Join(others, ", "), changes)
	}
	t.Log("\n" + table.String())
}

// appendGrowingPage stores a real /metrics page as scrapes every 15 s for
// n scrapes, job=<job>: counters and histogram samples grow by 2 % of their
// value per scrape (so rates are positive and buckets stay cumulative),
// gauges keep the page's value; `up` is 1. keep, when set, filters families
// by name.
func appendGrowingPage(t *testing.T, db *tsdb.DB, job string, page []byte, start time.Time, n int, keep func(family string) bool) {
	t.Helper()
	app := db.Appender(context.Background())
	p := textparse.NewPromParser(page, labels.NewSymbolTable(), false)
	types := map[string]model.MetricType{}
	var family string
	stored := 0
	for {
		et, err := p.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		require.NoError(t, err, job)
		switch et {
		case textparse.EntryType:
			name, typ := p.Type()
			family = string(name)
			types[family] = typ
			continue
		case textparse.EntrySeries:
		default:
			continue
		}
		_, _, v := p.Series()
		var lset labels.Labels
		p.Labels(&lset)
		if keep != nil && !keep(family) {
			continue
		}
		grow := types[family] == model.MetricTypeCounter || types[family] == model.MetricTypeHistogram
		b := labels.NewBuilder(lset)
		b.Set("job", job)
		b.Set("instance", job+":8000")
		ls := b.Labels()
		for k := 0; k < n; k++ {
			x := v
			if grow {
				x = v * (1 + 0.02*float64(k))
			}
			_, err := app.Append(0, ls, start.Add(time.Duration(k)*15*time.Second).UnixMilli(), x)
			require.NoError(t, err, ls.String())
		}
		stored++
	}
	require.NotZero(t, stored, job)
	up := labels.FromStrings("__name__", "up", "job", job, "instance", job+":8000")
	for k := 0; k < n; k++ {
		_, err := app.Append(0, up, start.Add(time.Duration(k)*15*time.Second).UnixMilli(), 1)
		require.NoError(t, err)
	}
	require.NoError(t, app.Commit())
}

// findingRows reads the findings table into one map per row.
func findingRows(t *testing.T, dr backend.DataResponse) []map[string]string {
	t.Helper()
	require.NoError(t, dr.Error)
	require.Len(t, dr.Frames, 1)
	f := dr.Frames[0]
	var rows []map[string]string
	for i := 0; i < f.Rows(); i++ {
		r := map[string]string{}
		for _, fld := range f.Fields {
			r[fld.Name] = fmt.Sprint(fld.At(i))
		}
		rows = append(rows, r)
	}
	return rows
}

// TestDiagnosisDegradedInputs: targets without a GPU agent, vLLM V0 names,
// an SGLang page, a TGI page and a vLLM page with half its families each get
// a sensible finding or an explicit cannot-tell, with what could not be
// checked, and never an error or a panic.
func TestDiagnosisDegradedInputs(t *testing.T) {
	const scrape = 15 * time.Second
	db := openDiagDB(t)
	js, agents, start := fastForwardInto(t, db, 20*time.Minute, scrape, []simTarget{
		{name: "prefill-nogpu", scenario: "prefill-heavy"},
		{name: "thermal-nogpu", scenario: "thermal-throttled"},
		{name: "v0", scenario: "healthy", gpu: true, tweak: func(c *sim.Config) { c.Version = sim.V06 }},
	})
	pageStart := start.Add(5 * time.Minute)
	half := 0
	for _, pg := range []struct {
		job, file string
		keep      func(string) bool
	}{
		{"sglang", "sglang-0.4-llama8b-heavy-load-queue2826-docs.prom", nil},
		{"tgi", "tgi-unknown-datadog-fixture-full-under-load.prom", nil},
		{"v0-page", "vllm-0.8-v0-multiproc-qwen3-0.6b-under-load-decommented.prom", nil},
		{"half", "vllm-0.11-v1-qwen05b-created-series.prom", func(string) bool { half++; return half%2 == 0 }},
	} {
		appendGrowingPage(t, db, pg.job, readPage(t, "testdata/"+pg.file), pageStart, 60, pg.keep)
		js = append(js, map[string]any{"name": pg.job, "url": "http://" + pg.job + ":8000/metrics"})
	}
	inst := diagInstance(t, db, scrape, js, agents)
	to := start.Add(20 * time.Minute)
	rows := findingRows(t, diagnosisQuery(t, inst, to.Add(-10*time.Minute), to, time.Minute, map[string]any{"window": "5m"}))
	byTarget := map[string][]map[string]string{}
	for _, r := range rows {
		byTarget[r["target"]] = append(byTarget[r["target"]], r)
	}
	for _, name := range []string{"prefill-nogpu", "thermal-nogpu", "v0", "sglang", "tgi", "v0-page", "half"} {
		require.NotEmpty(t, byTarget[name], "%s has a current finding", name)
		for _, r := range byTarget[name] {
			t.Logf("%s: %s %s (%s) not checked: %s", name, r["class"], r["confidence"], r["confidence_note"], r["not_checked"])
		}
	}
	first := func(name string) map[string]string { return byTarget[name][0] }
	// Without a GPU agent compute-bound prefill cannot be told from a
	// throttled GPU: not guessed (issue 20, point 5); insufficient_data names
	// the class it could not decide and the missing SM signal.
	assert.Equal(t, "insufficient_data", first("prefill-nogpu")["class"])
	assert.Contains(t, first("prefill-nogpu")["summary"], "prefill_compute_bound")
	assert.Contains(t, first("prefill-nogpu")["not_checked"], "sm_active: no GPU agent is configured")
	// Throttling cannot be seen without GPU data: never guessed.
	for _, r := range byTarget["thermal-nogpu"] {
		assert.NotEqual(t, "gpu_throttled", r["class"])
	}
	assert.Contains(t, first("thermal-nogpu")["not_checked"], "slowdown: no GPU agent is configured")
	assert.Equal(t, "healthy", first("v0")["class"], "vLLM V0 names")
	for _, name := range []string{"sglang", "tgi", "v0-page", "half"} {
		assert.NotEqual(t, "stalled", first(name)["class"], "%s: counters grow, so not stalled", name)
		assert.NotEmpty(t, first(name)["summary"], name)
	}
	// TGI has no per-request queue/prefill split and no finish reasons: said, not guessed.
	assert.Contains(t, first("tgi")["not_checked"], "not exported by tgi")
}

// TestDiagnosisFindingEvidence checks the table, annotation and alert
// frames on two scenarios whose evidence is known from their configuration:
// queue-saturated runs max_num_seqs 16 (running plateaus at 16, the ceiling
// threshold is 0.9 × 16 = 14.4) with a 120 s client timeout (aborts), and
// thermal-throttled slows its only GPU (index 0) with sw_thermal.
func TestDiagnosisFindingEvidence(t *testing.T) {
	const scrape = 15 * time.Second
	inst, start := simDiagnosisInstance(t, 30*time.Minute, scrape,
		simTarget{name: "queue", scenario: "queue-saturated", gpu: true},
		simTarget{name: "hot", scenario: "thermal-throttled", gpu: true})
	from, to := start.Add(15*time.Minute), start.Add(30*time.Minute)
	rows := findingRows(t, diagnosisQuery(t, inst, from, to, time.Minute, map[string]any{"window": "5m"}))
	got := map[string]map[string]string{}
	for _, r := range rows {
		got[r["target"]+"/"+r["class"]] = r
		assert.Equal(t, "true", r["current"])
	}
	q := got["queue/queue_saturation"]
	require.NotNil(t, q, "%v", rows)
	assert.Equal(t, "warning", q["severity"])
	assert.Equal(t, "high", q["confidence"])
	// held since earlier steps: the threshold printed is the one used, 14.4 relaxed by 10 % = 12.96
	assert.Contains(t, q["evidence"], "requests_running_avg 16 requests ≥ 13 (ceiling = highest running count in the range")
	assert.Contains(t, q["recommendation"], "Raise --max-num-seqs")
	assert.Equal(t, to, mustTime(t, q["timeEnd"]))
	ab := got["queue/aborted_traffic"]
	require.NotNil(t, ab, "clients give up after 120 s in the queue")
	assert.Contains(t, ab["summary"], "did not")
	h := got["hot/gpu_throttled"]
	require.NotNil(t, h, "%v", rows)
	assert.Contains(t, h["evidence"], "sw_thermal on gpu 0")
	assert.Contains(t, h["title"], "hot: gpu throttled (warning) on gpu 0")
	// the finding names its GPU: the simulator's only GPU, index 0, and its UUID
	assert.Equal(t, "0", h["gpu"])
	assert.Equal(t, sim.DefaultConfig().GPU.UUID, h["uuid"])
	assert.Empty(t, q["gpu"], "queue saturation reads no GPU signal")
	assert.Equal(t, "inferscope,diagnosis,gpu_throttled,hot", h["tags"])

	dr := diagnosisQuery(t, inst, from, to, time.Minute, map[string]any{"window": "5m", "format": "numeric"})
	require.NoError(t, dr.Error)
	levels := map[string]float64{}
	seen := map[string]bool{}
	for _, f := range dr.Frames {
		l := f.Fields[0].Labels
		require.False(t, seen[l.String()], "label sets are unique: %s", l)
		seen[l.String()] = true
		levels[l["target"]+"/"+l["class"]] = f.Fields[0].At(0).(float64)
		if l["class"] == "gpu_throttled" {
			// per GPU: the target names its agent
			assert.Equal(t, "0", l["gpu"], "%s", l)
			assert.Equal(t, sim.DefaultConfig().GPU.UUID, l["uuid"], "%s", l)
		} else {
			assert.Empty(t, l["gpu"], "%s", l)
		}
	}
	assert.Len(t, levels, 2*len(diagnose.Classes), "one value per target and class")
	assert.Equal(t, 2.0, levels["queue/queue_saturation"])
	assert.Equal(t, 1.0, levels["queue/aborted_traffic"])
	assert.Equal(t, 2.0, levels["hot/gpu_throttled"])
	assert.Equal(t, 0.0, levels["queue/stalled"])
	assert.Equal(t, 0.0, levels["hot/healthy"])

	bad := diagnosisQuery(t, inst, from, to, time.Minute, map[string]any{"format": "pie"})
	require.Error(t, bad.Error)
	assert.Contains(t, bad.Error.Error(), `format: "pie" is not one of table, annotations, timeline, numeric`)
}

func mustTime(t *testing.T, s string) time.Time {
	t.Helper()
	ts, err := time.Parse("2006-01-02 15:04:05 -0700 MST", s)
	require.NoError(t, err, s)
	return ts
}
