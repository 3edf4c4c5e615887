package plugin

import (
	"context"
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/backend"
	"github.com/stretchr/testify/require"

	"github.com/inferscope/inferscope-llm-datasource/pkg/queries/goldentest"
)

// The golden tests of the SDK edge: what only Instance.QueryData and CallResource answer,
// over the golden fixture (goldentest.Golden) the query types' own golden cases read. Every
// query type's frames are pinned beside its file in pkg/queries (<type>_golden_test.go,
// pkg/queries/testdata/golden); here, the dispatcher's routing (a query routed by the
// queryType of its JSON alone, an unknown query type) and the resource routes the editors
// and template variables call, in testdata/golden.
//
// Regenerate after an intended change (and review the diff) with
//
//	go test ./pkg/plugin -run Golden -update-golden
//
// or INFERSCOPE_UPDATE_GOLDEN=1 go test ./pkg/plugin -run Golden.

var updateGolden = flag.Bool("update-golden", false, "rewrite pkg/plugin/testdata/golden/* from the current responses")

// goldenDir holds one golden file per edge case.
const goldenDir = "testdata/golden"

// q builds a query JSON (goldentest.Q).
var q = goldentest.Q

var (
	goldenOnce  sync.Once
	goldenInst  *Instance
	goldenStart time.Time
	goldenErr   error
)

// goldenFixture returns, built once per test binary, an instance over the golden fixture
// (goldentest.Golden, its TSDB under GF_PATHS_DATA, which TestMain removes; baselines from
// pkg/queries/testdata/baselines) with its clock at the end of the stored history, and the
// simulation start.
func goldenFixture(t *testing.T) (*Instance, time.Time) {
	t.Helper()
	goldenOnce.Do(func() {
		fx, err := goldentest.Golden(os.Getenv("GF_PATHS_DATA"), filepath.Join("..", "queries", "testdata", "baselines"))
		if err != nil {
			goldenErr = err
			return
		}
		goldenInst = newInstanceForTest(fx.Settings, fx.Querier)
		goldenInst.now = func() time.Time { return fx.End }
		goldenStart = fx.Start
	})
	require.NoError(t, goldenErr)
	return goldenInst, goldenStart
}

// TestGoldenDispatchRoutesByQueryType pins how QueryData routes a query: by the queryType of
// its JSON when the DataQuery's QueryType is empty (a request built from the stored model
// alone: the answer is the throughput frames), and, for a type the registry does not hold,
// the 400 naming every type it does.
func TestGoldenDispatchRoutesByQueryType(t *testing.T) {
	inst, start := goldenFixture(t)
	for _, c := range []goldentest.Case{
		{Name: "routed_by_json_throughput", Query: q("", "queryType", "throughput", "targets", []string{"vllm-a"})},
		{Name: "error_unknown_query_type", Query: q("", "queryType", "nope")},
	} {
		t.Run(c.Name, func(t *testing.T) {
			resp, err := inst.QueryData(context.Background(), &backend.QueryDataRequest{Queries: []backend.DataQuery{
				goldentest.DataQuery(t, c, "", start)}})
			require.NoError(t, err)
			dr, ok := resp.Responses["A"]
			require.True(t, ok, "no response for refId A")
			goldentest.Check(t, goldenDir, c.Name, dr, goldentest.Update(*updateGolden))
		})
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
			goldentest.CheckJSON(t, filepath.Join(goldenDir, "resource_"+r.name+".json"), got, goldentest.Update(*updateGolden))
		})
	}
}
