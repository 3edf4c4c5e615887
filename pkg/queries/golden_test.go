package queries

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/backend"
	"github.com/stretchr/testify/require"

	"github.com/inferscope/inferscope-llm-datasource/pkg/bench"
	"github.com/inferscope/inferscope-llm-datasource/pkg/collect"
	"github.com/inferscope/inferscope-llm-datasource/pkg/fetch"
	"github.com/inferscope/inferscope-llm-datasource/pkg/queries/goldentest"
	"github.com/inferscope/inferscope-llm-datasource/pkg/source"
)

// The golden frame tests pin every frame a query type returns, per format, over fixed stored
// histories (goldentest.Golden; goldentest.Probe for the probe cases). They are the contract
// of issue 18: dashboards, alert rules and the query editors rely on these field names,
// labels, types, units and notices, so a refactor of the query path must pass them
// unchanged. Each type's cases sit in <type>_golden_test.go beside its file and run as
// Test<Type>Golden (go test ./pkg/queries -run Latency checks latency's); the files are
// testdata/golden/<case>.jsonc (<case>.json for an error). A case runs as the plugin's
// QueryData runs it (refId A, the same fetch.Env, the edge's error statuses); the edge's own
// goldens (routing by the JSON's queryType, an unknown type, the resource routes) stay in
// pkg/plugin.
//
// Regenerate after an intended change (and review the diff) with
//
//	go test ./pkg/queries -run Golden -update-golden
//
// or INFERSCOPE_UPDATE_GOLDEN=1 go test ./pkg/queries -run Golden.

var updateGolden = flag.Bool("update-golden", false, "rewrite pkg/queries/testdata/golden/* from the current responses")

// goldenDir holds one golden file per case.
const goldenDir = "testdata/golden"

// goldenDataDir is where the fixtures' TSDBs live (TestMain removes it).
var goldenDataDir string

// TestMain gives the fixtures a directory of this run and capacity queries a long wait: a
// loaded machine must not turn the capacity goldens into the partial answer a query gives
// past its wait (pkg/plugin's TestMain does the same).
func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "inferscope-queries-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "queries tests: temp dir:", err)
		os.Exit(1)
	}
	goldenDataDir = dir
	code := m.Run()
	_ = os.RemoveAll(dir)
	os.Exit(code)
}

// goldenTwinWait is how long a golden capacity query waits for its twins' simulations: long
// enough that every what-if is computed on a loaded machine, as pkg/plugin's TestMain sets
// INFERSCOPE_CAPACITY_WAIT for its instances.
const goldenTwinWait = 10 * time.Minute

// goldenCase is one golden query (goldentest.Case); gq builds its JSON (goldentest.Q).
type goldenCase = goldentest.Case

var gq = goldentest.Q

// goldenSets are the golden cases of each query type, in <type>_golden_test.go.
var goldenSets = map[string][]goldenCase{
	"latency": latencyGoldens, "breakdown": breakdownGoldens, "throughput": throughputGoldens,
	"saturation": saturationGoldens, "targets": targetsGoldens, "raw": rawGoldens, "gpu": gpuGoldens,
	"events": eventsGoldens, "diagnosis": diagnosisGoldens, "slo": sloGoldens, "burn_rate": burnRateGoldens,
	"goodput": goodputGoldens, "buckets": bucketsGoldens, "benchmark": benchmarkGoldens,
	"regression": regressionGoldens, "probe": probeGoldens, "cost": costGoldens, "capacity": capacityGoldens,
	"errors": errorsGoldens, "tokens": tokensGoldens,
}

// goldenEnv is a fixture's fetch.Env as the plugin's instance builds it (Instance.env): the
// fixture's settings and querier, no collector (every status unknown, no scrape errors), the
// clock at the end of the history, and a name cache, shared work and baseline cache kept for
// the fixture's life as an instance keeps them for its own.
type goldenEnv struct {
	fx        *goldentest.Fixture
	names     *fetch.NameCache
	shared    *fetch.SharedWork
	baselines *bench.Cache
	twins     *fetch.Twins
}

func (g *goldenEnv) env() *fetch.Env {
	end := g.fx.End
	return &fetch.Env{Settings: &g.fx.Settings, Querier: g.fx.Querier,
		Statuses: func() map[string]collect.TargetStatus { return map[string]collect.TargetStatus{} },
		Now:      func() time.Time { return end }, Names: g.names, Logger: slog.Default(),
		Shared: g.shared, Baselines: g.baselines, Twins: g.twins}
}

var (
	goldenEnvs   = map[bool]*goldenEnv{}
	goldenEnvsMu sync.Mutex
)

// fixtureEnv returns the golden fixture's environment, or the probe fixture's when onProbe.
func fixtureEnv(t *testing.T, onProbe bool) *goldenEnv {
	t.Helper()
	goldenEnvsMu.Lock()
	defer goldenEnvsMu.Unlock()
	if g := goldenEnvs[onProbe]; g != nil {
		return g
	}
	var fx *goldentest.Fixture
	var err error
	if onProbe {
		fx, err = goldentest.Probe(goldenDataDir)
	} else {
		fx, err = goldentest.Golden(goldenDataDir, filepath.Join("testdata", "baselines"))
	}
	require.NoError(t, err)
	g := &goldenEnv{fx: fx, names: fetch.NewNameCache(), shared: fetch.NewSharedWork(fetch.DefaultSharedMaxAge), baselines: bench.NewCache(0),
		twins: fetch.NewTwins(goldenTwinWait, fetch.NewTwinSlots(runtime.GOMAXPROCS(0)))}
	goldenEnvs[onProbe] = g
	return g
}

// runGoldenCase answers c as the plugin's QueryData does, past its routing and size limits:
// Decode, Run over the fixture's environment (with the request's notes), refId A on every
// frame; an error becomes the edge's response for it (goldenErrorResponse).
func runGoldenCase(t *testing.T, c goldenCase) backend.DataResponse {
	t.Helper()
	g := fixtureEnv(t, c.OnProbe)
	qt, _ := c.Query["queryType"].(string)
	dq := goldentest.DataQuery(t, c, qt, g.fx.Start)
	d, err := Decode(qt, dq, &g.fx.Settings)
	if err != nil {
		return goldenErrorResponse(err)
	}
	ctx, _ := source.WithNotes(context.Background())
	fr, err := d.Run(ctx, g.env())
	if err != nil {
		return goldenErrorResponse(err)
	}
	for _, f := range fr {
		f.RefID = dq.RefID
	}
	return backend.DataResponse{Frames: fr}
}

// goldenErrorResponse is the plugin's errorResponse for the errors a golden case can give:
// query mistakes (BadQuery) and downstream errors are 400s from downstream, anything else
// the plugin's 500.
func goldenErrorResponse(err error) backend.DataResponse {
	if IsBadQuery(err) || backend.IsDownstreamError(err) {
		return backend.DataResponse{Error: err, Status: backend.StatusBadRequest, ErrorSource: backend.ErrorSourceDownstream}
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return backend.DataResponse{Error: err, Status: backend.StatusTimeout, ErrorSource: backend.ErrorSourcePlugin}
	}
	return backend.DataResponse{Error: err, Status: backend.Status(http.StatusInternalServerError), ErrorSource: backend.ErrorSourcePlugin}
}

// checkGoldens runs the golden cases of queryType, one subtest per case, each against its
// golden file; every case is of that type.
func checkGoldens(t *testing.T, queryType string) {
	cases := goldenSets[queryType]
	require.NotEmpty(t, cases, "no golden cases for %s", queryType)
	for _, c := range cases {
		t.Run(c.Name, func(t *testing.T) {
			require.Equal(t, queryType, c.Query["queryType"], "golden case %s is in %s's set", c.Name, queryType)
			goldentest.Check(t, goldenDir, c.Name, runGoldenCase(t, c), goldentest.Update(*updateGolden))
		})
	}
}

// TestGoldenCoversEveryQueryTypeAndFormat fails when a query type or format is served
// without a golden case (a new one needs its golden file), when two cases share a name, and
// when a golden file has no case.
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
	for _, qt := range Names() {
		require.Contains(t, want, qt, "query type %s is registered but has no golden case", qt)
		require.Contains(t, goldenSets, qt, "query type %s is registered but has no golden set", qt)
	}
	names := map[string]bool{}
	for qt, cases := range goldenSets {
		var formats []string
		for _, c := range cases {
			require.False(t, names[c.Name], "two golden cases named %s", c.Name)
			names[c.Name] = true
			if !strings.HasPrefix(c.Name, "error_") {
				f, _ := c.Query["format"].(string)
				formats = append(formats, f)
			}
		}
		for _, f := range want[qt] {
			require.True(t, slices.Contains(formats, f), "no golden case for query type %s, format %q", qt, f)
		}
	}
	files, err := filepath.Glob(filepath.Join(goldenDir, "*.json*"))
	require.NoError(t, err)
	require.NotEmpty(t, files)
	for _, p := range files {
		name := strings.TrimSuffix(strings.TrimSuffix(filepath.Base(p), ".jsonc"), ".json")
		require.True(t, names[name], "golden file %s has no case", filepath.Base(p))
	}
}
