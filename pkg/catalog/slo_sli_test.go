package catalog_test

import (
	"context"
	"testing"
	"time"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql/parser"
	"github.com/prometheus/prometheus/promql/promqltest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/inferscope/inferscope-llm-datasource/pkg/analysis/slo"
	"github.com/inferscope/inferscope-llm-datasource/pkg/catalog"
)

// Every minute from 0 to 10m. Target a's inference handler answers 96 2xx, 2
// 4xx and 2 5xx a minute (the proportions 960 : 20 : 20); /v1/models,
// /metrics and /health get traffic that is not inference. Its engine
// finishes 97 a minute with stop, none with error. Target s answers its
// scrape but is stalled (3 running, no token); target d is down (up 0);
// target a produces tokens.
const sliLoad = `
load 1m
  http_requests_total{job="a",handler="/v1/chat/completions",method="POST",status="2xx"} 0+96x10
  http_requests_total{job="a",handler="/v1/chat/completions",method="POST",status="4xx"} 0+2x10
  http_requests_total{job="a",handler="/v1/chat/completions",method="POST",status="5xx"} 0+2x10
  http_requests_total{job="a",handler="/v1/models",method="GET",status="2xx"} 0+50x10
  http_requests_total{job="a",handler="/metrics",method="GET",status="2xx"} 0+4x10
  http_requests_total{job="a",handler="/health",method="GET",status="5xx"} 0+4x10
  vllm:request_success_total{job="a",model_name="m",engine="0",finished_reason="stop"} 0+97x10
  vllm:admission_rejections_total{job="a",reason="queue_full"} 0+1x10
  up{job="a",instance="a:8000"} 1x10
  up{job="s",instance="s:8000"} 1x10
  up{job="d",instance="d:8000"} 1 1 1 1 1 0 0 0 0 0 0
  vllm:num_requests_running{job="a",model_name="m",engine="0"} 2x10
  vllm:generation_tokens_total{job="a",model_name="m",engine="0"} 0+500x10
  vllm:num_requests_running{job="s",model_name="m",engine="0"} 3x10
  vllm:num_requests_waiting{job="s",model_name="m",engine="0"} 1x10
  vllm:generation_tokens_total{job="s",model_name="m",engine="0"} 700x10
`

func evalSLI(t *testing.T, expr string, at time.Duration) model.Vector {
	t.Helper()
	_, err := parser.NewParser(parser.Options{}).ParseExpr(expr)
	require.NoError(t, err, expr)
	st := promqltest.LoadedStorage(t, sliLoad)
	t.Cleanup(func() { _ = st.Close() })
	ng := promqltest.NewTestEngine(t, false, 0, 1_000_000)
	q, err := ng.NewInstantQuery(context.Background(), st, nil, expr, time.Unix(0, 0).Add(at))
	require.NoError(t, err, expr)
	res := q.Exec(context.Background())
	require.NoError(t, res.Err, expr)
	v, err := res.Vector()
	require.NoError(t, err)
	out := model.Vector{}
	for _, s := range v {
		m := model.Metric{}
		s.Metric.Range(func(l labels.Label) { m[model.LabelName(l.Name)] = model.LabelValue(l.Value) })
		out = append(out, &model.Sample{Metric: m, Value: model.SampleValue(s.F)})
	}
	return out
}

func TestErrorSLIPromQLOnAPage(t *testing.T) {
	q, err := catalog.ErrorSLIPromQL(catalog.Scope{Targets: []string{"a"}}, 5*time.Minute)
	require.NoError(t, err)
	assert.Equal(t, `sum by (job, status) (rate(http_requests_total{job=~"a", handler=~"/v1/.*", handler!~"/v1/models|/metrics|/health"}[5m]))`, q.HTTP)
	// The 5m window at 10m holds 4 one-minute increases, extrapolated to 5
	// minutes: the per-minute counts over 60 s. 2xx 96/60 = 1.6/s, 4xx and
	// 5xx 2/60 each; /v1/models, /metrics and /health are left out.
	http := evalSLI(t, q.HTTP, 10*time.Minute)
	by := map[string]float64{}
	for _, s := range http {
		by[string(s.Metric["status"])] = float64(s.Value)
	}
	assert.InDelta(t, 1.6, by["2xx"], 1e-9)
	assert.InDelta(t, 2.0/60, by["4xx"], 1e-9)
	assert.InDelta(t, 2.0/60, by["5xx"], 1e-9)
	fin := evalSLI(t, q.Finishes, 10*time.Minute)
	rej := evalSLI(t, q.Rejections, 10*time.Minute)
	require.Len(t, rej, 1)
	assert.InDelta(t, 1.0/60, float64(rej[0].Value), 1e-9)
	// Error ratio: 2 5xx of 100 inference requests a minute = 2 % (the one
	// rejection a minute is one of the two 5xx: bad in [max(2, 1 + 0), 2]).
	bs, _ := slo.ErrorRatioCounts(slo.ErrorInputs{HTTP: http, Finishes: fin, Rejections: rej}, slo.ErrorOptions{}, nil)
	require.Len(t, bs, 1)
	v, lo, hi := bs[0].Counts.Attainment()
	assert.InDelta(t, 0.98, v, 1e-9)
	assert.InDelta(t, 0.98, lo, 1e-9)
	assert.InDelta(t, 0.98, hi, 1e-9)
	// By model: the HTTP counts join target a's one model.
	q, err = catalog.ErrorSLIPromQL(catalog.Scope{By: []string{"model"}}, 5*time.Minute)
	require.NoError(t, err)
	assert.Contains(t, q.HTTP, "sum by (job, status)")
	assert.Contains(t, q.Finishes, "sum by (job, model_name, finished_reason)")
}

func TestServingPromQL(t *testing.T) {
	q, err := catalog.ServingPromQL(catalog.Scope{})
	require.NoError(t, err)
	// At 10m: a answers and produces tokens → 1; s answers but has 4
	// requests pending and no token in 5 minutes → 0; d is down → 0.
	v := evalSLI(t, q, 10*time.Minute)
	got := map[string]float64{}
	for _, s := range v {
		got[string(s.Metric["job"])] = float64(s.Value)
	}
	assert.Equal(t, map[string]float64{"a": 1, "s": 0, "d": 0}, got)
	// Over the 10 minutes to 10m at 1m resolution (subquery steps 1m..10m,
	// 10 samples): d answered at 1m-4m (4 of 10 serving); s is stalled from
	// 5m on (the 5-minute increase is 0 once the window holds no increase:
	// at every step, since its counter never moves) → 0 of 10; a 10 of 10.
	good, known, err := catalog.AvailabilityPromQL(catalog.Scope{}, 10*time.Minute, time.Minute)
	require.NoError(t, err)
	g, k := evalSLI(t, good, 10*time.Minute), evalSLI(t, known, 10*time.Minute)
	groups, cs := slo.AvailabilityVector(g, k, time.Minute, []string{"target"})
	got = map[string]float64{}
	for _, gr := range groups {
		got[gr.Labels["target"]] = cs[gr.Key].Good / 60
		assert.Equal(t, 600.0, cs[gr.Key].Total, gr.Labels["target"])
	}
	assert.Equal(t, map[string]float64{"a": 10, "s": 0, "d": 4}, got)
}

func TestErrorSLINotes(t *testing.T) {
	n := catalog.ErrorSLINotes("a", catalog.Detection{Engine: catalog.EngineVLLM, Generation: "v0", Version: "0.6-0.8"}, true)
	assert.Contains(t, n[0], "V0 never counts aborted requests")
	assert.Contains(t, n[1], "before 0.10")
	assert.Contains(t, n[2], "admission rejections are exported from vLLM 0.32")
	n = catalog.ErrorSLINotes("b", catalog.Detection{Engine: catalog.EngineVLLM, Generation: "v1", Version: "0.32+"}, true)
	assert.Equal(t, []string{`target b: vLLM V1's finished_reason="abort" includes client disconnects, which cannot be told apart from server aborts`}, n)
	assert.Empty(t, catalog.ErrorSLINotes("b", catalog.Detection{Engine: catalog.EngineVLLM, Generation: "v1", Version: "0.32+"}, false))
	assert.Contains(t, catalog.ErrorSLINotes("t", catalog.Detection{Engine: catalog.EngineTGI}, false)[0], "HTTP 5xx answers are counted only where")
}

// TPOT objectives read the per-request histogram; on vLLM before 0.11 they
// read the inter-token histogram, marked approximate with a note.
func TestTPOTObjectiveSource(t *testing.T) {
	a := catalog.LookupFor(catalog.Detection{Engine: catalog.EngineVLLM, Generation: "v1", Version: "0.11-0.12"}, catalog.TPOT)
	assert.Equal(t, catalog.Exact, a.Status)
	assert.Equal(t, "vllm:request_time_per_output_token_seconds", a.Metrics[0].Name)
	a = catalog.LookupFor(catalog.Detection{Engine: catalog.EngineVLLM, Generation: "v1", Version: "0.8-0.10"}, catalog.TPOT)
	assert.Equal(t, catalog.Approximate, a.Status)
	assert.Equal(t, "vllm:time_per_output_token_seconds", a.Metrics[0].Name)
	assert.Contains(t, a.Note, "inter-token latency")
}
