package plugin

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/backend"
	"github.com/grafana/grafana-plugin-sdk-go/data"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// ownHistogramsPage is what a Python service instrumented with prometheus_client writes for
// Histogram("llm_ttft_seconds", labelnames=["model","dtype"], buckets=[0.05, 0.1, 0.2, 0.5,
// 1, 2, 5, 10, 30]), llm_tpot_seconds (0.01 … 0.2), llm_queue_seconds (0.1 … 30) and a
// Counter llm_prompt_tokens, for two dtypes of one model.
const ownHistogramsPage = "testdata/python-own-histograms-llm-ttft-tpot-queue.prom"

// tableColumn returns, per row, the values of the named field of a table frame, with the
// value of the key field (e.g. "objective") as the map key.
func tableColumn(t *testing.T, fs data.Frames, key, field string) map[string]float64 {
	t.Helper()
	out := map[string]float64{}
	for _, f := range fs {
		ki, vi := -1, -1
		for i, fl := range f.Fields {
			if fl.Name == key && ki < 0 {
				ki = i
			}
			if fl.Name == field && vi < 0 {
				vi = i
			}
		}
		if ki < 0 || vi < 0 {
			continue
		}
		for r := 0; r < f.Rows(); r++ {
			k, _ := f.Fields[ki].ConcreteAt(r)
			v, ok := f.Fields[vi].ConcreteAt(r)
			if !ok {
				continue
			}
			if x, ok := v.(float64); ok {
				out[k.(string)] = x
			}
		}
	}
	return out
}

// TestOwnHistogramsMappedToSignals: a target whose settings map its own metrics to signals
// ({"ttft": "llm_ttft_seconds", "tpot": "llm_tpot_seconds", "queue_time":
// "llm_queue_seconds", "prompt_tokens": "llm_prompt_tokens_total"}, modelLabel "model") is
// read like an engine's own. Worked out by hand from the page, both dtypes summed:
//
//   - TTFT cumulative: 0.05→30, 0.1→100, 0.2→160, 0.5→190, 1→200; sum 32 s. p90: rank 180
//     in (0.2, 0.5] holding 160…190, 0.2 + 0.3·20/30 = 0.4 s, bounds 0.2 and 0.5; mean 0.16 s.
//   - TPOT: 0.01→25, 0.02→130, 0.05→195, 0.1→200; p50: 0.01 + 0.01·75/105 = 0.0171429 s.
//   - Queue: 0.1→170, 0.5→195, 1→200; p50: 0.1·100/170 = 0.0588235 s.
//   - Prompt tokens 80000, growing by 0.05 of the page per second: 4000 tokens/s.
//   - SLO attainment: TTFT ≤ 0.5 s: 190/200 = 0.95; TPOT ≤ 0.05 s: 195/200 = 0.975 (both
//     thresholds on a bucket bound, so exact).
//
// groupBy model shows the model from the `model` label; burn_rate, goodput and buckets answer
// without error on the same target.
func TestOwnHistogramsMappedToSignals(t *testing.T) {
	if testing.Short() {
		t.Skip("scrapes a loopback target for about ten seconds")
	}
	srv := httptest.NewServer(newScaledPage(t, ownHistogramsPage, textFormatType, time.Now(), 0.05))
	defer srv.Close()
	inst := newLiveInstance(t, "own", map[string]any{"storagePath": t.TempDir(),
		"scrapeInterval": "1s", "scrapeTimeout": "1s", "retention": "1h",
		"targets": []map[string]any{{"name": "svc", "url": srv.URL + "/metrics", "modelLabel": "model",
			"metrics": map[string]string{"ttft": "llm_ttft_seconds", "tpot": "llm_tpot_seconds", "queue_time": "llm_queue_seconds", "prompt_tokens": "llm_prompt_tokens_total"}}},
		"sloProfiles": []map[string]any{{"name": "chat", "objectives": []map[string]any{
			{"name": "ttft-500ms", "signal": "ttft", "threshold": 0.5, "target": 0.95},
			{"name": "tpot-50ms", "signal": "tpot", "threshold": 0.05, "target": 0.9}}}}})
	defer inst.Dispose()
	time.Sleep(9 * time.Second)

	query := func(q map[string]any) data.Frames {
		t.Helper()
		q["window"] = "4s"
		js, err := json.Marshal(q)
		require.NoError(t, err)
		now := time.Now()
		resp, err := inst.QueryData(context.Background(), &backend.QueryDataRequest{Queries: []backend.DataQuery{{
			RefID: "A", QueryType: q["queryType"].(string), JSON: js, Interval: time.Second, MaxDataPoints: 100,
			TimeRange: backend.TimeRange{From: now.Add(-5 * time.Second), To: now}}}})
		require.NoError(t, err)
		r := resp.Responses["A"]
		require.NoError(t, r.Error, q["queryType"])
		require.NotEmpty(t, r.Frames, q["queryType"])
		return r.Frames
	}
	lat := lastValues(t, query(map[string]any{"queryType": "latency", "stages": []string{"ttft", "tpot", "queue_time"}, "stats": []string{"p50", "p90", "mean"}}))
	for name, want := range map[string]float64{"ttft p90": 0.4, "ttft p90 lower": 0.2, "ttft p90 upper": 0.5, "ttft mean": 0.16,
		"tpot p50": 0.01 + 0.01*75/105, "queue_time p50": 0.1 * 100 / 170} {
		if got, ok := lat[name]; assert.True(t, ok, "no %q frame (have %v)", name, lat) {
			assert.InDelta(t, want, got, 1e-9*want, name)
		}
	}
	byModel := query(map[string]any{"queryType": "latency", "stages": []string{"ttft"}, "stats": []string{"p90"}, "groupBy": "model"})
	assert.Equal(t, "llama-3-8b", byModel[0].Fields[1].Labels["model"], "modelLabel model is the model")

	// groupBy dtype, a label of the service's own metrics. TTFT p50 per dtype: bf16 rank 50 in
	// (0.1, 0.2] holding 40…70, 0.1 + 0.1·10/30; fp8 rank 50 in (0.05, 0.1] holding 20…60,
	// 0.05 + 0.05·30/40 = 0.0875. Attainment of TTFT ≤ 0.5 s: bf16 90/100, fp8 100/100.
	perDtype := map[string]float64{}
	for _, f := range query(map[string]any{"queryType": "latency", "stages": []string{"ttft"}, "stats": []string{"p50"}, "bounds": false, "groupBy": "dtype"}) {
		l := f.Fields[1].Labels
		if v := lastValues(t, data.Frames{f}); len(v) == 1 {
			perDtype[l["dtype"]] = v["ttft p50"]
		}
	}
	assert.InDelta(t, 0.1+0.1*10/30, perDtype["bf16"], 1e-9, "%v", perDtype)
	assert.InDelta(t, 0.0875, perDtype["fp8"], 1e-9, "%v", perDtype)
	checked := 0
	for _, f := range query(map[string]any{"queryType": "slo", "profile": "chat", "groupBy": "dtype"}) {
		for r := 0; r < f.Rows(); r++ {
			row := map[string]any{}
			for _, fl := range f.Fields {
				if v, ok := fl.ConcreteAt(r); ok {
					row[fl.Name] = v
				}
			}
			if row["objective"] == "ttft-500ms" {
				dtype, _ := row["dtype"].(string)
				require.NotEmpty(t, dtype, "row without its dtype group: %v", row)
				want := map[string]float64{"bf16": 0.9, "fp8": 1}[dtype]
				assert.InDelta(t, want, row["attainment"], 1e-9, "%v", row)
				checked++
			}
		}
	}
	assert.Equal(t, 2, checked, "one ttft-500ms row per dtype")

	thr := lastValues(t, query(map[string]any{"queryType": "throughput"}))
	if got, ok := thr["prompt tokens/s"]; assert.True(t, ok, "have %v", thr) {
		assert.InEpsilon(t, 4000, got, 5e-2)
	}
	att := tableColumn(t, query(map[string]any{"queryType": "slo", "profile": "chat"}), "objective", "attainment")
	assert.InDelta(t, 0.95, att["ttft-500ms"], 1e-9, "%v", att)
	assert.InDelta(t, 0.975, att["tpot-50ms"], 1e-9, "%v", att)
	for _, qt := range []map[string]any{{"queryType": "burn_rate", "profile": "chat"}, {"queryType": "goodput", "profile": "chat"},
		{"queryType": "buckets", "stages": []string{"ttft"}}} {
		query(qt)
	}
}

// TestPageMetricsOffersTheOwnHistograms: GET /pagemetrics?target=svc probes the saved target's
// page and sorts its names as the configuration editor offers them: the three histograms by
// base name, the counter by sample name (its _created samples and the histograms' parts left
// out), the process gauge, and the label names model and dtype (le left out). An unknown
// target is a 400 naming the field.
func TestPageMetricsOffersTheOwnHistograms(t *testing.T) {
	srv := httptest.NewServer(newScaledPage(t, ownHistogramsPage, textFormatType, time.Now(), 0))
	defer srv.Close()
	inst := newLiveInstance(t, "pagemetrics", map[string]any{"storagePath": t.TempDir(),
		"targets": []map[string]any{{"name": "svc", "url": srv.URL + "/metrics"}}})
	defer inst.Dispose()
	call := func(url string) *backend.CallResourceResponse {
		var got *backend.CallResourceResponse
		require.NoError(t, inst.CallResource(context.Background(), &backend.CallResourceRequest{Path: "pagemetrics", Method: "GET", URL: url},
			backend.CallResourceResponseSenderFunc(func(r *backend.CallResourceResponse) error { got = r; return nil })))
		require.NotNil(t, got)
		return got
	}
	r := call("pagemetrics?target=svc")
	require.Equal(t, 200, r.Status, string(r.Body))
	var pm PageMetrics
	require.NoError(t, json.Unmarshal(r.Body, &pm))
	assert.Equal(t, PageMetrics{
		Histograms: []string{"llm_queue_seconds", "llm_tpot_seconds", "llm_ttft_seconds"},
		Counters:   []string{"llm_prompt_tokens_total"},
		Gauges:     []string{"process_start_time_seconds"},
		Labels:     []string{"dtype", "model"},
	}, pm)
	bad := call("pagemetrics?target=nope")
	assert.Equal(t, 400, bad.Status)
	assert.Contains(t, string(bad.Body), `target: \"nope\" is not a target configured`)
}

// TestHealthOfOwnMetricsTarget: Save & test on a target with its own metrics map concludes what
// a query over the stored samples concludes: engine custom, the mapped signals exported, the
// model from modelLabel.
func TestHealthOfOwnMetricsTarget(t *testing.T) {
	srv := httptest.NewServer(newScaledPage(t, ownHistogramsPage, textFormatType, time.Now(), 0))
	defer srv.Close()
	inst := newLiveInstance(t, "ownhealth", map[string]any{"storagePath": t.TempDir(),
		"targets": []map[string]any{{"name": "svc", "url": srv.URL + "/metrics", "modelLabel": "model",
			"metrics": map[string]string{"ttft": "llm_ttft_seconds", "tpot": "llm_tpot_seconds", "queue_time": "llm_queue_seconds", "prompt_tokens": "llm_prompt_tokens_total"}}}})
	defer inst.Dispose()
	res, err := inst.CheckHealth(context.Background(), &backend.CheckHealthRequest{})
	require.NoError(t, err)
	require.Equal(t, backend.HealthStatusOk, res.Status, res.Message)
	var details struct {
		Targets []healthTarget `json:"targets"`
	}
	require.NoError(t, json.Unmarshal(res.JSONDetails, &details))
	require.Len(t, details.Targets, 1)
	h := details.Targets[0]
	assert.Equal(t, "custom", h.Engine)
	assert.ElementsMatch(t, []string{"queue_time", "ttft", "tpot", "prompt_tokens"}, h.Exported)
	assert.Contains(t, h.NotSeen, "e2e")
	assert.Equal(t, []string{"llama-3-8b"}, h.Models)
}
