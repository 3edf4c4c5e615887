package queries

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/backend"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/inferscope/inferscope-llm-datasource/pkg/settings"
)

func testSettings(t *testing.T) settings.Settings {
	t.Helper()
	s, err := settings.Load([]byte(`{"targets":[{"name":"vllm-a","url":"http://a:8000/metrics"},{"name":"si.m","url":"http://b:8000/metrics"}],
		"gpuAgents":[{"name":"node-a","url":"http://a:9400/metrics"}]}`), nil)
	require.NoError(t, err)
	return s
}

// decodeQuery decodes q by its QueryType, else the queryType of its JSON, else as a latency
// query (the common fields' checks are the same for every type).
func decodeQuery(q backend.DataQuery, s *settings.Settings) (*Decoded, error) {
	name := q.QueryType
	if name == "" {
		var m struct {
			QueryType any `json:"queryType"`
		}
		_ = json.Unmarshal(q.JSON, &m)
		name, _ = m.QueryType.(string)
	}
	if name == "" {
		name = "latency"
	}
	return Decode(name, q, s)
}

func TestDecodeQueryStepWindowAndErrors(t *testing.T) {
	s := testSettings(t)
	to := time.Unix(1_800_000_000, 0)
	dq := func(js string, from time.Time) backend.DataQuery {
		return backend.DataQuery{RefID: "A", JSON: json.RawMessage(js), Interval: time.Second, MaxDataPoints: 1000,
			TimeRange: backend.TimeRange{From: from, To: to}}
	}
	// 6 h over at most 1000 points: step 21.6 s truncated to 21 s; window max(step, 4 × 15 s scrape) = 60 s.
	p, err := decodeQuery(dq(`{"queryType":"latency"}`, to.Add(-6*time.Hour)), &s)
	require.NoError(t, err)
	assert.Equal(t, 21*time.Second, p.Plan.Step)
	assert.Equal(t, time.Minute, p.Plan.Window)
	assert.Equal(t, 0, int(p.Plan.Start.Unix()%21))
	assert.Equal(t, to, p.Plan.To, "the unaligned end is kept for instant queries")

	for js, want := range map[string]string{
		`{"models":[""]}`:            "models",
		`{"targets":["http://x/"]}`:  "not a target configured",
		`{"groupBy":"pod"}`:          "groupBy",
		`{"window":"-1s"}`:           "window",
		`{"estimator":"magic"}`:      "estimator",
		`{"queryType": 3}`:           "query JSON is invalid",
		`{"targets":["vllm-a","x"]}`: `"x"`,
	} {
		_, err := decodeQuery(dq(js, to.Add(-time.Hour)), &s)
		require.Error(t, err, js)
		assert.Contains(t, err.Error(), want, js)
		assert.IsType(t, BadQuery{}, err, js)
	}
	_, err = decodeQuery(dq(`{}`, to.Add(-200*365*24*time.Hour)), &s)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "time range")
}

func TestRawSelectorQuotesEverything(t *testing.T) {
	s := testSettings(t)
	p := &Raw{Metric: "vllm:num_requests_running", Matchers: map[string]string{"model_name": `a"}) or vector(1`}}
	sel, err := rawSelector(p, &s)
	require.NoError(t, err)
	// Target names are regex-quoted (the dot in si.m is literal) and matcher values string-quoted.
	assert.Equal(t, `{__name__="vllm:num_requests_running", job=~"node-a|si\\.m|vllm-a", model_name="a\"}) or vector(1"}`, sel)
	for _, bad := range []Raw{{Metric: ""}, {Metric: "up{x=1}"}, {Metric: "up", Matchers: map[string]string{"job": "x"}}, {Metric: "up", Matchers: map[string]string{"a-b": "x"}}} {
		_, err := rawSelector(&bad, &s)
		assert.Error(t, err, "%+v", bad)
	}
}

// TestDecodeQueryBoundsWhatAQueryCosts: a window beyond a month is refused
// with a sentence (a 292-year window once made diagnosis allocate tens of
// GB); repeated names are one name (a multi-value variable may repeat one,
// and each copy cost a copy of the work and a duplicate alert series); lists
// are capped; GPU agents are targets only for the gpu, raw and targets types.
func TestDecodeQueryBoundsWhatAQueryCosts(t *testing.T) {
	s := testSettings(t)
	to := time.Unix(1_800_000_000, 0)
	dq := func(js string) backend.DataQuery {
		return backend.DataQuery{RefID: "A", JSON: json.RawMessage(js), Interval: time.Second, MaxDataPoints: 1000,
			TimeRange: backend.TimeRange{From: to.Add(-time.Hour), To: to}}
	}
	_, err := decodeQuery(dq(`{"queryType":"diagnosis","window":"292y"}`), &s)
	require.ErrorContains(t, err, `window: "292y" is longer than 31d`)
	p, err := decodeQuery(dq(`{"queryType":"diagnosis","window":"31d"}`), &s)
	require.NoError(t, err)
	assert.Equal(t, 31*24*time.Hour, p.Plan.Window)

	p, err = decodeQuery(dq(`{"queryType":"diagnosis","format":"numeric","targets":["vllm-a","vllm-a","si.m","vllm-a"],"models":["m","m"],"classes":["stalled","stalled"]}`), &s)
	require.NoError(t, err)
	q := p.Req.(*Diagnosis)
	assert.Equal(t, []string{"vllm-a", "si.m"}, q.Targets)
	assert.Equal(t, []string{"vllm-a", "si.m"}, p.Plan.Scope.Targets)
	assert.Equal(t, []string{"m"}, q.Models)
	assert.Equal(t, []string{"stalled"}, q.Classes)

	many := make([]string, 1001)
	for k := range many {
		many[k] = fmt.Sprintf("model-%d", k)
	}
	js, _ := json.Marshal(map[string]any{"queryType": "latency", "models": many})
	_, err = decodeQuery(dq(string(js)), &s)
	require.ErrorContains(t, err, "models: 1001 distinct values, more than the 1000 a query may list")

	_, err = decodeQuery(dq(`{"queryType":"diagnosis","targets":["node-a"]}`), &s)
	require.ErrorContains(t, err, `targets: "node-a" is a GPU agent; a diagnosis query reads inference targets`)
	for qt, more := range map[string]string{"gpu": "", "raw": `,"metric":"up"`, "targets": ""} {
		_, err = decodeQuery(dq(`{"queryType":"`+qt+`","targets":["node-a"]`+more+`}`), &s)
		require.NoError(t, err, qt)
	}
}

// Grafana's interval variables are expanded from the request (the end-to-end case, through
// PromQL, is pkg/plugin's TestWindowMacrosExpandedFromTheRequest).
func TestExpandMacros(t *testing.T) {
	to := time.Unix(1_700_000_400, 0)
	from := to.Add(-5 * time.Minute)
	// At a 15 s interval, $__rate_interval is 4 × the scrape interval.
	q := backend.DataQuery{Interval: 15 * time.Second, TimeRange: backend.TimeRange{From: from, To: to}}
	assert.Equal(t, "1m", expandMacros("$__rate_interval", q, 15*time.Second, 15*time.Second))
	assert.Equal(t, "60000ms", expandMacros("${__rate_interval_ms}ms", q, 15*time.Second, 15*time.Second))
	assert.Equal(t, "300", expandMacros("$__range_s", q, 15*time.Second, 15*time.Second))
	assert.Equal(t, "300000", expandMacros("$__range_ms", q, 15*time.Second, 15*time.Second))
}

// TestGroupByAdapterSaysWhyNotSplit: groupBy adapter is accepted by every query type; no
// engine labels its request metrics by LoRA adapter, so the answer is not split and the plan
// carries the notice saying so.
func TestGroupByAdapterSaysWhyNotSplit(t *testing.T) {
	s := testSettings(t)
	to := time.Unix(1_800_000_000, 0)
	for _, qt := range []string{"latency", "throughput", "saturation", "slo", "goodput", "breakdown"} {
		d, err := decodeQuery(backend.DataQuery{RefID: "A", QueryType: qt, JSON: json.RawMessage(`{"groupBy":"adapter","profile":"p"}`),
			Interval: time.Second, MaxDataPoints: 100, TimeRange: backend.TimeRange{From: to.Add(-time.Hour), To: to}}, &s)
		if err != nil {
			assert.NotContains(t, err.Error(), "groupBy", qt)
			continue
		}
		assert.Empty(t, d.Plan.Scope.By, qt)
		var texts []string
		for _, n := range d.Plan.Notes {
			texts = append(texts, n.Text)
		}
		assert.Contains(t, strings.Join(texts, "\n"), "groupBy adapter: no engine in scope labels its request metrics by LoRA adapter", qt)
	}
}

// TestGroupByEngineKeepsTargetsApart: engine "0" of two targets are two engines. Grouped by
// the engine label alone, the demo's healthy server (KV cache ~7 %) and its saturated one
// (~96 %) were averaged into one engine at ~52 %, and the overview's KV-cache peak showed
// that mean instead of the saturated engine. groupBy engine therefore groups by target and
// engine.
func TestGroupByEngineKeepsTargetsApart(t *testing.T) {
	s := testSettings(t)
	to := time.Unix(1_800_000_000, 0)
	d, err := decodeQuery(backend.DataQuery{RefID: "A", QueryType: "saturation", JSON: json.RawMessage(`{"groupBy":"engine"}`),
		Interval: time.Second, MaxDataPoints: 100, TimeRange: backend.TimeRange{From: to.Add(-time.Hour), To: to}}, &s)
	require.NoError(t, err)
	assert.ElementsMatch(t, []string{"target", "engine"}, d.Plan.Scope.By)
}
