package plugin

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/backend"
	"github.com/grafana/grafana-plugin-sdk-go/data"
	"github.com/grafana/grafana-plugin-sdk-go/experimental"
	"github.com/prometheus/prometheus/tsdb"
	"github.com/stretchr/testify/require"

	"github.com/inferscope/inferscope-llm-datasource/pkg/settings"
	"github.com/inferscope/inferscope-llm-datasource/pkg/sim"
	"github.com/inferscope/inferscope-llm-datasource/pkg/source"
)

// The golden frame tests pin every frame QueryData returns, per query type
// and format, over one fixed stored history (goldenFixture). They are the
// contract of issue 18: dashboards, alert rules and the query editors rely on
// these field names, labels, types, units and notices, so a refactor of the
// query path must pass them unchanged. TestGoldenCallResource does the same
// for the resource routes the editors and template variables call.
//
// Regenerate after an intended change (and review the diff) with
//
//	go test ./pkg/plugin -run Golden -update-golden
//
// or INFERSCOPE_UPDATE_GOLDEN=1 go test ./pkg/plugin -run Golden.

var updateGolden = flag.Bool("update-golden", false, "rewrite pkg/plugin/testdata/golden/*.jsonc from the current frames")

// goldenDir holds one <case>.jsonc per golden case (experimental.CheckGoldenJSONResponse).
const goldenDir = "testdata/golden"

func goldenUpdate() bool {
	return *updateGolden || os.Getenv("INFERSCOPE_UPDATE_GOLDEN") == "1"
}

// goldenScrape is the fixture's scrape interval (and the settings' one).
const goldenScrape = 15 * time.Second

// goldenSpan is how much simulated history the fixture stores.
const goldenSpan = 30 * time.Minute

// goldenSettings is the data source of the fixture: three simulated vLLM
// targets (one with the simulated Inferscope GPU agent, priced per GPU-hour; one
// priced per hour; one without a price), an energy price, one dcgm-exporter
// agent with a constant page (dcgmLabPage, with its throttle bitmask and
// DCGM blank sentinels) and two SLO profiles (latency objectives on and off a
// bucket bound, and an error-ratio objective). Every URL is fixed text.
const goldenSettings = `{"scrapeInterval":"15s","energyPricePerKWh":0.2,
 "targets":[
  {"name":"vllm-a","url":"http://vllm-a:8000/metrics","agent":"vllm-a-gpu"},
  {"name":"vllm-b","url":"http://vllm-b:8000/metrics","costPerHour":3.6},
  {"name":"vllm-c","url":"http://vllm-c:8000/metrics"}],
 "gpuAgents":[
  {"name":"vllm-a-gpu","url":"http://vllm-a-gpu:9400/metrics","costPerGPUHour":2.5},
  {"name":"dcgm-lab","url":"http://lab-1:9400/metrics","kind":"dcgm"}],
 "sloProfiles":[
  {"name":"chat","objectives":[
   {"name":"ttft-1s","signal":"ttft","threshold":1,"target":0.95},
   {"name":"e2e-1.7s","signal":"e2e","threshold":1.7,"target":0.99},
   {"name":"errors","kind":"error_ratio","target":0.99}]},
  {"name":"batch","objectives":[
   {"name":"e2e-20s","signal":"e2e","threshold":20,"target":0.9,"targets":["vllm-b"]}]}]}`

// goldenTargets are the simulated targets of the fixture: scenario, seed and
// served model are fixed, so the stored samples are the same on every run.
var goldenTargets = []struct {
	name, scenario, model string
	seed                  uint64
	gpu                   bool
}{
	{"vllm-a", "healthy", "meta-llama/Llama-3.1-8B-Instruct", 1, true},
	{"vllm-b", "restart", "Qwen/Qwen3-0.6B", 2, false},
	{"vllm-c", "queue-saturated", "meta-llama/Llama-3.1-8B-Instruct", 3, false},
}

type goldenFix struct {
	inst  *Instance
	start time.Time // the simulation start (sim.DefaultStart for every target)
	err   error
}

var (
	goldenOnce sync.Once
	goldenFx   goldenFix
)

// goldenFixture builds, once per test binary, the stored history every golden
// case reads: goldenSpan of each goldenTargets scenario fast-forwarded at
// goldenScrape into one TSDB, plus dcgmLabPage stored every scrape interval
// for the dcgm-lab agent. The instance's clock is fixed at the end of the
// history. The TSDB lives under GF_PATHS_DATA, which TestMain removes.
func goldenFixture(t *testing.T) (*Instance, time.Time) {
	t.Helper()
	goldenOnce.Do(func() { goldenFx = buildGoldenFixture(t) })
	require.NoError(t, goldenFx.err)
	require.NotNil(t, goldenFx.inst, "the golden fixture failed to build in an earlier test")
	return goldenFx.inst, goldenFx.start
}

func buildGoldenFixture(t *testing.T) goldenFix {
	dir, err := os.MkdirTemp(os.Getenv("GF_PATHS_DATA"), "golden-tsdb-")
	if err != nil {
		return goldenFix{err: err}
	}
	opts := tsdb.DefaultOptions()
	opts.MinBlockDuration = (24 * time.Hour).Milliseconds()
	opts.MaxBlockDuration = opts.MinBlockDuration
	db, err := tsdb.Open(dir, nil, nil, opts, nil)
	if err != nil {
		return goldenFix{err: err}
	}
	start := sim.DefaultStart
	for _, tg := range goldenTargets {
		cfg := sim.DefaultConfig()
		if err := sim.ApplyScenario(&cfg, tg.scenario); err != nil {
			return goldenFix{err: err}
		}
		cfg.Seed = tg.seed
		cfg.Model.Name = tg.model
		s, err := sim.New(cfg, sim.Options{})
		if err != nil {
			return goldenFix{err: err}
		}
		start = s.Start()
		ff := sim.FastForwardOptions{Duration: goldenSpan, ScrapeInterval: goldenScrape,
			VLLM: sim.Target{Job: tg.name, Instance: tg.name + ":8000"}}
		if tg.gpu {
			ff.GPU = sim.Target{Job: tg.name + "-gpu", Instance: tg.name + "-gpu:9400"}
		}
		if _, err := s.FastForward(context.Background(), db, ff); err != nil {
			return goldenFix{err: err}
		}
	}
	if err := appendConstantPage(t, db, "dcgm-lab", []byte(dcgmLabPage), start, goldenSpan, goldenScrape); err != nil {
		return goldenFix{err: err}
	}
	// The head hands series to the PromQL engine in the order they were
	// created, which the simulators' scrape order does not fix from one run
	// to the next, and float sums (avg, sum) depend on that order in their
	// last bit. A persisted block holds its series sorted by labels: compact
	// the whole head into one.
	head := db.Head()
	mint, maxt := head.MinTime(), head.MaxTime()
	if err := db.CompactHead(tsdb.NewRangeHead(head, mint, maxt)); err != nil {
		return goldenFix{err: err}
	}
	if b := db.Blocks(); len(b) != 1 || b[0].MinTime() > mint || b[0].MaxTime() <= maxt {
		return goldenFix{err: fmt.Errorf("the golden history was not compacted into one block holding [%d, %d]", mint, maxt)}
	}
	st, err := settings.Load([]byte(goldenSettings), nil)
	if err != nil {
		return goldenFix{err: err}
	}
	// The benchmark cases read their baselines from testdata (an absolute path, as settings require).
	if st.BaselinesPath, err = filepath.Abs(filepath.Join("testdata", "baselines")); err != nil {
		return goldenFix{err: err}
	}
	inst := newInstanceForTest(st, source.NewEmbedded(db, source.EmbeddedOptions{}))
	end := start.Add(goldenSpan)
	inst.now = func() time.Time { return end }
	return goldenFix{inst: inst, start: start}
}

// appendConstantPage stores every sample of an exposition page for job at
// each scrape from start to start+span (appendPage).
func appendConstantPage(t *testing.T, db *tsdb.DB, job string, page []byte, start time.Time, span, every time.Duration) error {
	var times []int64
	for at := start; !at.After(start.Add(span)); at = at.Add(every) {
		times = append(times, at.UnixMilli())
	}
	app := db.Appender(context.Background())
	appendPage(t, app, job, page, times)
	return app.Commit()
}

// goldenCase is one QueryData request of the golden set: the query JSON (its
// queryType included) over the fixture's range [from, to) at interval.
type goldenCase struct {
	name  string
	query map[string]any
	// from and to are offsets from the simulation start; zero means the default range.
	from, to time.Duration
	interval time.Duration
}

// goldenCases covers every query type of the registry (pkg/queries) and every format
// each accepts, plus the option variants dashboards and alert rules use.
var goldenCases = []goldenCase{
	// latency: default stages and stats; explicit stages/stats with bounds and
	// the refined estimator; grouped by target and by model; a profile's
	// thresholds drawn on its stages.
	{name: "latency_default", query: q("latency")},
	{name: "latency_bounds_refined", query: q("latency", "stages", []string{"ttft", "itl", "e2e"}, "stats", []string{"p50", "p99", "mean"}, "bounds", true, "estimator", "refined")},
	{name: "latency_by_target", query: q("latency", "stages", []string{"ttft", "e2e"}, "stats", []string{"p90"}, "groupBy", "target")},
	{name: "latency_by_model", query: q("latency", "stages", []string{"queue_time", "tpot"}, "stats", []string{"p50", "mean"}, "groupBy", "model")},
	{name: "latency_by_target_model", query: q("latency", "stages", []string{"ttft"}, "stats", []string{"p99", "max"}, "groupBy", "target_model", "bounds", false)},
	{name: "latency_profile_thresholds", query: q("latency", "stages", []string{"ttft", "e2e"}, "stats", []string{"p99"}, "profile", "chat")},
	{name: "latency_window_rate_interval", query: q("latency", "stages", []string{"e2e"}, "stats", []string{"p50"}, "window", "$__rate_interval", "targets", []string{"vllm-a"})},

	// breakdown: timeseries (default) and table, ungrouped and by target / model.
	{name: "breakdown_timeseries", query: q("breakdown")},
	{name: "breakdown_timeseries_by_target", query: q("breakdown", "format", "timeseries", "groupBy", "target")},
	{name: "breakdown_table", query: q("breakdown", "format", "table")},
	{name: "breakdown_table_by_model", query: q("breakdown", "format", "table", "groupBy", "model")},

	{name: "throughput", query: q("throughput")},
	{name: "throughput_by_target", query: q("throughput", "groupBy", "target")},

	{name: "saturation", query: q("saturation")},
	{name: "saturation_by_target", query: q("saturation", "groupBy", "target")},

	// targets: table (default) and telemetry.
	{name: "targets_table", query: q("targets")},
	{name: "targets_table_selected", query: q("targets", "format", "table", "targets", []string{"vllm-b", "dcgm-lab"})},
	{name: "targets_telemetry", query: q("targets", "format", "telemetry")},

	{name: "raw", query: q("raw", "metric", "vllm:num_requests_running")},
	{name: "raw_matchers", query: q("raw", "metric", "vllm:request_success_total", "targets", []string{"vllm-b"}, "matchers", map[string]string{"finished_reason": "stop"})},

	// gpu: default signals (with saturation), explicit signals, and
	// throttle_reasons alone (the state-timeline frame).
	{name: "gpu_default", query: q("gpu")},
	{name: "gpu_signals", query: q("gpu", "signals", []string{"power", "temperature", "saturation"}, "agents", []string{"vllm-a-gpu"})},
	{name: "gpu_throttle_reasons", query: q("gpu", "signals", []string{"throttle_reasons"})},
	{name: "gpu_by_target", query: q("gpu", "targets", []string{"vllm-a"}, "signals", []string{"gpu_util"})},
	{name: "gpu_errors", query: q("gpu", "signals", []string{"xid_last", "xid_errors", "ecc_sbe_volatile", "ecc_dbe_volatile", "pcie_replays", "nvlink_tx"})},
	{name: "tokens", query: q("tokens", "groupBy", "target")},
	{name: "tokens_heatmap", query: q("tokens", "groupBy", "target", "format", "heatmap", "signals", []string{"prompt_length"})},

	{name: "events", query: q("events")},
	{name: "events_one_target", query: q("events", "targets", []string{"vllm-b"})},

	// diagnosis: table (default), annotations, timeline, numeric, and numeric for one class.
	{name: "diagnosis_table", query: q("diagnosis")},
	{name: "diagnosis_annotations", query: q("diagnosis", "format", "annotations")},
	{name: "diagnosis_timeline", query: q("diagnosis", "format", "timeline")},
	{name: "diagnosis_numeric", query: q("diagnosis", "format", "numeric")},
	{name: "diagnosis_numeric_classes", query: q("diagnosis", "format", "numeric", "classes", []string{"stalled", "queue_saturation"})},

	// slo: every profile, one profile, chosen objectives.
	{name: "slo_all_profiles", query: q("slo")},
	{name: "slo_profile", query: q("slo", "profile", "chat")},
	{name: "slo_objectives", query: q("slo", "profile", "chat", "objectives", []string{"errors"}, "groupBy", "target")},
	// The overview's rows: one per objective × target × model (issue 33).
	{name: "slo_by_target_model", query: q("slo", "profile", "chat", "groupBy", "target_model")},

	// burn_rate: timeseries (default) and status.
	{name: "burn_rate_timeseries", query: q("burn_rate", "profile", "chat")},
	{name: "burn_rate_status", query: q("burn_rate", "format", "status")},

	{name: "goodput", query: q("goodput", "profile", "chat")},
	{name: "goodput_by_target", query: q("goodput", "profile", "chat", "objectives", []string{"ttft-1s", "e2e-1.7s"}, "groupBy", "target")},

	{name: "buckets_default", query: q("buckets")},

	// cost: every stat of every target (priced per GPU-hour with energy, per hour, and
	// unpriced), and the alert rule's stat with a profile's cost of goodput.
	{name: "cost", query: q("cost")},
	{name: "cost_goodput", query: q("cost", "profile", "chat", "series", []string{"cost_per_1m_tokens", "cost_per_1m_good_tokens"}, "targets", []string{"vllm-a", "vllm-b"})},
	{name: "cost_spike_ratio", query: q("cost", "series", []string{"cost_spike_ratio"}, "baseline", "1h", "window", "5m")},
	{name: "buckets_profile_thresholds", query: q("buckets", "profile", "chat", "thresholds", []float64{0.25, 3}, "stats", []string{"p50", "p99"})},
	// Per target (issue 33: the latency dashboard's bucket advice pooled both targets and had
	// no target column): one row group per target, the target a column.
	{name: "buckets_by_target", query: q("buckets", "profile", "chat", "stats", []string{"p99"}, "stages", []string{"ttft"}, "groupBy", "target")},

	// capacity: the twins of vllm-a (healthy) and vllm-b (restarts, a small model) over the
	// whole 30 minutes under both profiles (chat's e2e p99 ≤ 1.7 s holds at no load: the long
	// outputs alone take longer; batch applies to vllm-b only), then vllm-b under batch in
	// every format, and a range too short to calibrate on. Twins and knees are cached, so the
	// cases after the first reuse them.
	{name: "capacity", query: q("capacity", "targets", []string{"vllm-a", "vllm-b"}), from: 0, to: goldenSpan},
	{name: "capacity_short_range", query: q("capacity", "targets", []string{"vllm-a"})},
	// errors: the fixture holds engines only, which count no gateway errors: the frames' shape
	// and the not-exported notices (values: TestHostedGatewaysThroughQueryData).
	{name: "errors", query: q("errors", "groupBy", "model")},
	{name: "errors_table", query: q("errors", "format", "table", "groupBy", "model")},
	{name: "capacity_parameters", query: q("capacity", "format", "parameters", "targets", []string{"vllm-b"}), from: 0, to: goldenSpan},
	{name: "capacity_whatif", query: q("capacity", "format", "whatif", "targets", []string{"vllm-b"}, "profiles", []string{"batch"}, "whatIf", map[string]any{"addReplicas": 1}), from: 0, to: goldenSpan},
	{name: "capacity_replicas", query: q("capacity", "format", "replicas", "targets", []string{"vllm-b"}, "profiles", []string{"batch"}, "utilisation", 0.5), from: 0, to: goldenSpan},

	// benchmark: production at the baseline's request rate (4 req/s) next to it.
	{name: "benchmark", query: q("benchmark", "targets", []string{"vllm-a"}, "baseline", "vllm-a-rate4")},

	// regression: around vllm-b's restarts (table, annotations, numeric for alert rules),
	// and two picked ranges of vllm-a.
	{name: "regression", query: q("regression", "targets", []string{"vllm-b"})},
	{name: "regression_annotations", query: q("regression", "targets", []string{"vllm-b"}, "format", "annotations")},
	{name: "regression_numeric", query: q("regression", "targets", []string{"vllm-b"}, "format", "numeric")},
	{name: "regression_ranges", query: q("regression", "targets", []string{"vllm-a"}, "stages", []string{"ttft", "itl"},
		"before", map[string]string{"from": "2026-01-01T00:00:00Z", "to": "2026-01-01T00:15:00Z"},
		"after", map[string]string{"from": "2026-01-01T00:15:00Z", "to": "2026-01-01T00:30:00Z"})},

	// A query routed by the queryType of its JSON alone (DataQuery.QueryType empty).
	{name: "routed_by_json_throughput", query: q("", "queryType", "throughput", "targets", []string{"vllm-a"})},

	// Errors are part of the contract too: status, source and sentence.
	{name: "error_unknown_query_type", query: q("", "queryType", "nope")},
	{name: "error_breakdown_format", query: q("breakdown", "format", "heatmap")},
	{name: "error_diagnosis_format", query: q("diagnosis", "format", "graph")},
	{name: "error_burn_rate_format", query: q("burn_rate", "format", "table")},
	{name: "error_targets_format", query: q("targets", "format", "graph")},
	{name: "error_goodput_no_profile", query: q("goodput")},
	{name: "error_unknown_target", query: q("latency", "targets", []string{"nowhere"})},
	{name: "error_benchmark_unknown_baseline", query: q("benchmark", "baseline", "nope")},
	{name: "error_capacity_utilisation", query: q("capacity", "utilisation", 1.5)},
	{name: "error_errors_class", query: q("errors", "errorClasses", []string{"rate_limit", "quota"})},
	{name: "error_capacity_whatif_empty", query: q("capacity", "format", "whatif", "whatIf", map[string]any{})},
	{name: "error_regression_one_range", query: q("regression", "before", map[string]string{"from": "2026-01-01T00:00:00Z", "to": "2026-01-01T00:15:00Z"})},
}

// q builds a query JSON: the query type (set as DataQuery.QueryType too,
// unless empty) and key/value pairs.
func q(queryType string, kv ...any) map[string]any {
	m := map[string]any{}
	if queryType != "" {
		m["queryType"] = queryType
	}
	for k := 0; k+1 < len(kv); k += 2 {
		m[kv[k].(string)] = kv[k+1]
	}
	return m
}

// goldenFrom and goldenTo bound the default range of a golden case: the last
// 25 minutes of the stored history, with an end that is not step-aligned
// (Grafana's "now" rarely is) to pin the table formats' real-end evaluation.
const (
	goldenFrom     = 5 * time.Minute
	goldenTo       = goldenSpan - 7*time.Second
	goldenInterval = time.Minute
)

// runGolden sends one case through QueryData, as Grafana would, and returns its response.
func runGolden(t *testing.T, inst *Instance, start time.Time, c goldenCase) backend.DataResponse {
	t.Helper()
	from, to, interval := c.from, c.to, c.interval
	if from == 0 && to == 0 {
		from, to = goldenFrom, goldenTo
	}
	if interval == 0 {
		interval = goldenInterval
	}
	js, err := json.Marshal(c.query)
	require.NoError(t, err)
	qt := ""
	if c.query["queryType"] != nil && !strings.HasPrefix(c.name, "routed_by_json") && !strings.HasPrefix(c.name, "error_unknown_query_type") {
		qt = c.query["queryType"].(string)
	}
	resp, err := inst.QueryData(context.Background(), &backend.QueryDataRequest{Queries: []backend.DataQuery{{
		RefID: "A", QueryType: qt, JSON: js, Interval: interval, MaxDataPoints: 1000,
		TimeRange: backend.TimeRange{From: start.Add(from), To: start.Add(to)},
	}}})
	require.NoError(t, err)
	dr, ok := resp.Responses["A"]
	require.True(t, ok, "no response for refId A")
	return dr
}

// TestGoldenQueryData pins the response of every golden case
// (testdata/golden/<case>.jsonc).
func TestGoldenQueryData(t *testing.T) {
	inst, start := goldenFixture(t)
	seen := map[string]bool{}
	for _, c := range goldenCases {
		require.False(t, seen[c.name], "two golden cases named %s", c.name)
		seen[c.name] = true
		t.Run(c.name, func(t *testing.T) {
			dr := runGolden(t, inst, start, c)
			normaliseGoldenResponse(&dr)
			if dr.Error != nil {
				checkGoldenError(t, c.name, dr)
				return
			}
			experimental.CheckGoldenJSONResponse(t, goldenDir, c.name, &dr, goldenUpdate())
		})
	}
}

// TestGoldenCoversEveryQueryTypeAndFormat fails when a query type or format
// is served without a golden case: a new one needs its golden file.
func TestGoldenCoversEveryQueryTypeAndFormat(t *testing.T) {
	want := map[string][]string{
		"latency": {""}, "breakdown": {"", "timeseries", "table"}, "throughput": {""},
		"saturation": {""}, "targets": {"", "table", "telemetry"}, "raw": {""},
		"gpu": {""}, "events": {""},
		"diagnosis": {"", "annotations", "timeline", "numeric"},
		"slo":       {""}, "burn_rate": {"", "status"}, "goodput": {""}, "buckets": {""},
		"benchmark": {""}, "regression": {"", "annotations", "numeric"},
		"probe": {"", "sustained"}, "cost": {""},
		"capacity": {"", "parameters", "whatif", "replicas"},
		"errors":   {"", "table"},
		"tokens":   {"", "heatmap"},
	}
	have := map[string][]string{}
	// probeGoldenCases run on the probe fixture.
	for _, c := range append(slices.Clone(goldenCases), probeGoldenCases...) {
		if strings.HasPrefix(c.name, "error_") {
			continue
		}
		qt, _ := c.query["queryType"].(string)
		f, _ := c.query["format"].(string)
		have[qt] = append(have[qt], f)
	}
	for qt, formats := range want {
		for _, f := range formats {
			require.Contains(t, have[qt], f, "no golden case for query type %s, format %q", qt, f)
		}
	}
	// Every query type the dispatcher routes has a case (its list is in its error sentence).
	dr := runGoldenNoFixture(t, q("", "queryType", "no-such-type"))
	msg := dr.Error.Error()
	list := msg[strings.Index(msg, "one of ")+len("one of "):]
	for _, qt := range strings.Split(list, ", ") {
		require.Contains(t, want, qt, "query type %s is routed by the dispatcher but has no golden case", qt)
	}
}

// checkGoldenError pins an error response (its JSON: error sentence, error
// source and status) in testdata/golden/<case>.json. The SDK's
// CheckGoldenJSONResponse cannot read back a file it wrote for a response
// with an error (v0.299.0: its header then lacks the machine-generated
// marker the reader splits on), so errors get this plain JSON file instead.
func checkGoldenError(t *testing.T, name string, dr backend.DataResponse) {
	t.Helper()
	got, err := json.MarshalIndent(dr, "", "  ")
	require.NoError(t, err)
	path := filepath.Join(goldenDir, name+".json")
	if goldenUpdate() {
		require.NoError(t, os.WriteFile(path, append(got, '\n'), 0o600))
		return
	}
	want, err := os.ReadFile(path)
	require.NoError(t, err, "golden file of %s (write it with -update-golden)", name)
	require.JSONEq(t, string(want), string(got))
}

// runGoldenNoFixture runs a query on an instance with no store (for routing checks).
func runGoldenNoFixture(t *testing.T, query map[string]any) backend.DataResponse {
	t.Helper()
	st, err := settings.Load([]byte(goldenSettings), nil)
	require.NoError(t, err)
	inst := newInstanceForTest(st, nil)
	js, _ := json.Marshal(query)
	resp, err := inst.QueryData(context.Background(), &backend.QueryDataRequest{Queries: []backend.DataQuery{{
		RefID: "A", JSON: js, TimeRange: backend.TimeRange{From: sim.DefaultStart, To: sim.DefaultStart.Add(time.Hour)},
	}}})
	require.NoError(t, err)
	return resp.Responses["A"]
}

// normaliseGoldenResponse makes a response byte-stable across runs without
// dropping any field. What it changes, and why:
//
//   - Meta.ExecutedQueryString: the PromQL a query ran, one per line, is
//     collected from stages fetched concurrently (run.parallel), so the order
//     of lines varies between runs; the lines are sorted (all kept).
//
//   - targets table, field last_scrape: the wall-clock time of the
//     collector's last scrape; non-null values become goldenWallClock.
//
//   - targets table, field scrape_duration: the wall-clock duration of the
//     last scrape; non-zero values become 0.001 s.
//
//   - float64 values (fields of float64 and *float64): rounded to
//     goldenDigits significant digits. PromQL aggregations (avg, sum, the
//     `or` of partitions) add series in an order that varies between
//     processes, which moves results in their last bit (seen: KV-cache usage
//     0.020412171202022805 vs …808); the golden files keep every value.
//
// The fixture has no collector (no wall-clock scrape, no temporary paths or
// random ports in URLs: every URL is fixed settings text), so the last two
// are no-ops today; they keep the contract stable if the fixture ever scrapes.
func normaliseGoldenResponse(dr *backend.DataResponse) {
	for _, f := range dr.Frames {
		if f.Meta != nil && f.Meta.ExecutedQueryString != "" {
			lines := strings.Split(f.Meta.ExecutedQueryString, "\n")
			slices.Sort(lines)
			f.Meta.ExecutedQueryString = strings.Join(lines, "\n")
		}
		for _, fld := range f.Fields {
			roundFloats(fld)
			switch fld.Name {
			case "last_scrape":
				if fld.Type() != data.FieldTypeNullableTime {
					continue
				}
				for k := 0; k < fld.Len(); k++ {
					if v, ok := fld.At(k).(*time.Time); ok && v != nil {
						w := goldenWallClock
						fld.Set(k, &w)
					}
				}
			case "scrape_duration":
				if fld.Type() != data.FieldTypeFloat64 {
					continue
				}
				for k := 0; k < fld.Len(); k++ {
					if v := fld.At(k).(float64); v != 0 {
						fld.Set(k, 0.001)
					}
				}
			}
		}
	}
}

// goldenWallClock replaces wall-clock times in golden frames.
var goldenWallClock = time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)

// goldenDigits is the number of significant digits float values keep in
// golden comparisons (normaliseGoldenResponse).
const goldenDigits = 10

// roundFloats rounds every finite value of a float64 or *float64 field to
// goldenDigits significant digits; NaN, ±Inf and nulls are kept as they are.
func roundFloats(fld *data.Field) {
	round := func(v float64) float64 {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return v
		}
		r, err := strconv.ParseFloat(strconv.FormatFloat(v, 'g', goldenDigits, 64), 64)
		if err != nil {
			return v
		}
		return r
	}
	switch fld.Type() {
	case data.FieldTypeFloat64:
		for k := 0; k < fld.Len(); k++ {
			fld.Set(k, round(fld.At(k).(float64)))
		}
	case data.FieldTypeNullableFloat64:
		for k := 0; k < fld.Len(); k++ {
			if p := fld.At(k).(*float64); p != nil {
				v := round(*p)
				fld.Set(k, &v)
			}
		}
	}
}

// goldenResources are the CallResource routes the editors and template
// variables call, plus what an unknown route and discovery in embedded mode answer.
var goldenResources = []struct{ name, method, path string }{
	{"targets", "GET", "targets"},
	{"agents", "GET", "agents"},
	{"profiles", "GET", "profiles"},
	{"models", "GET", "models"},
	{"gpus", "GET", "gpus"},
	{"signals", "GET", "signals"},
	{"discover_embedded", "GET", "discover"},
	{"unknown_route", "GET", "nope"},
	{"targets_post", "POST", "targets"},
	{"baselines", "GET", "baselines"},
}

// goldenSender keeps the CallResource responses it is sent.
type goldenSender struct {
	got []*backend.CallResourceResponse
}

func (s *goldenSender) Send(r *backend.CallResourceResponse) error {
	s.got = append(s.got, r)
	return nil
}

// TestGoldenCallResource pins each resource route's status, headers and JSON
// body (testdata/golden/resource_<name>.json) over the golden fixture; the
// instance's clock is the end of the stored history, so /models, /gpus and
// /signals read its last hour.
func TestGoldenCallResource(t *testing.T) {
	inst, _ := goldenFixture(t)
	for _, r := range goldenResources {
		t.Run(r.name, func(t *testing.T) {
			var s goldenSender
			err := inst.CallResource(context.Background(), &backend.CallResourceRequest{
				Method: r.method, Path: r.path, URL: r.path,
			}, &s)
			require.NoError(t, err)
			require.Len(t, s.got, 1)
			resp := s.got[0]
			rec := map[string]any{"status": resp.Status, "headers": resp.Headers}
			var body any
			if json.Unmarshal(resp.Body, &body) == nil {
				rec["body"] = body
			} else {
				rec["bodyText"] = string(resp.Body)
			}
			got, err := json.MarshalIndent(rec, "", "  ")
			require.NoError(t, err)
			path := filepath.Join(goldenDir, "resource_"+r.name+".json")
			if goldenUpdate() {
				require.NoError(t, os.WriteFile(path, append(got, '\n'), 0o600))
				return
			}
			want, err := os.ReadFile(path)
			require.NoError(t, err, "golden file of %s (write it with -update-golden)", r.name)
			require.JSONEq(t, string(want), string(got))
		})
	}
}
