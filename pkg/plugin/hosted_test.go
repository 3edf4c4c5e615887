package plugin

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/backend"
	"github.com/grafana/grafana-plugin-sdk-go/data"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The gateway pages of pkg/catalog/testdata, written from LiteLLM's and the OpenTelemetry
// GenAI conventions' documented names (see their headers).
const (
	liteLLMPage    = "../catalog/testdata/litellm-proxy-documented-names-three-models.prom"
	otelClientPage = "../catalog/testdata/otel-genai-collector-client-provider-name-and-system.prom"
)

// tableRows reads a table frame into one map per row: string columns by name, number
// columns by name (nil numbers left out).
func tableRows(t *testing.T, f *data.Frame) []map[string]any {
	t.Helper()
	var out []map[string]any
	for r := 0; r < f.Rows(); r++ {
		row := map[string]any{}
		for _, fld := range f.Fields {
			switch x := fld.At(r).(type) {
			case string:
				row[fld.Name] = x
			case *float64:
				if x != nil {
					row[fld.Name] = *x
				}
			}
		}
		out = append(out, row)
	}
	return out
}

// TestHostedGatewaysThroughQueryData: a LiteLLM proxy, an OpenTelemetry Collector's page of
// GenAI client instruments and a vLLM engine scraped live; counters and histograms grow by 0.05
// of the page per second, so rates are the page's values × 0.05 and shares, means and ratios
// are the page's own. By hand from the pages:
//
//   - LiteLLM requests (litellm_proxy_total_requests_metric_total) 1000 + 500 + 200 = 1700 →
//     85/s; the deprecated litellm_requests_metric_total (another 1700) is not added.
//   - errors by class, per model (requested_model), of LiteLLM: gpt-4o-mini (1000 requests)
//     Openai.RateLimitError 5 → rate_limit 0.005, Openai.Timeout 3 → api_timeout 0.003,
//     Openai.ContentPolicyViolationError 4 → content_filter 0.004, Openai.BadRequestError 3 →
//     client_error 0.003, model_error 0; claude-haiku (500) InternalServerError 1 +
//     APIConnectionError 1 → model_error 2/500 = 0.004; Qwen/Qwen3-0.6B (200) every class 0.
//   - table: worst burn gpt-4o-mini rate_limit 0.005/0.005 = 1 (api_timeout 0.3,
//     content_filter 0.4, client_error 0.6), claude-haiku model_error 0.004/0.001 = 4; spend per
//     request of gpt-4o-mini 0.195 USD / 1000 = 0.000195, per 1M tokens 0.195 / (500000 +
//     200000) × 1e6 = 0.278571…; claude-haiku's spend is under its upstream model name
//     (claude-3-5-haiku-20241022, the only model label of litellm_spend_metric), so its row
//     has none; Qwen 0 USD: 0 per request. TTFT p50 of gpt-4o-mini: rank 500 of 1000 in
//     (0.25, 0.5] holding 0…600: 0.25 + 0.25 × 500/600 = 0.4583; of Qwen rank 100 of 200 in
//     (0.1, 0.25] holding 0…150: 0.1 + 0.15 × 100/150 = 0.2; no ITL (LiteLLM has none).
//   - OpenTelemetry, groupBy provider (gen_ai_provider_name on the openai series, the older
//     gen_ai_system on the anthropic ones, read into one provider label): openai 400 + 4 + 2 +
//     2 = 408 operations, error_type 429 ×4 → rate_limit 4/408 = 0.00980392, timeout ×2 →
//     api_timeout 2/408; anthropic 200 + 2, anthropic.InternalServerError and _OTHER →
//     model_error 2/202 = 0.00990099.
//   - breakdown over litellm and the engine: LiteLLM TTFT of Qwen/Qwen3-0.6B (150 at 0.2 s,
//     50 at 0.4 s) mean 50/200 = 0.25 s, the engine's 12.5/100 = 0.125 s: gateway and network
//     0.25 − 0.125 = 0.125 s; the hosted models have no engine, so no row.
//   - cost of litellm: spend 0.195 + 0.7 + 0 = 0.895 USD over 1700 requests → 0.000526 per
//     request, over 500000 + 250000 + 100000 prompt and 200000 + 100000 + 40000 generated tokens
//     (1190000) → 0.7521 per 1M tokens.
//   - SLO TTFT ≤ 0.5 s (a LiteLLM bucket bound) per model: gpt-4o-mini 600/1000 = 0.6 (600 at
//     0.4 s, the rest at 0.8 and 1.5), claude-haiku 0/500, Qwen 200/200 = 1.
//   - errors over all targets reads the two gateways (the engine counts no gateway errors).
func TestHostedGatewaysThroughQueryData(t *testing.T) {
	if testing.Short() {
		t.Skip("scrapes three loopback targets for about ten seconds")
	}
	t0 := time.Now()
	var urls []string
	for _, p := range []string{liteLLMPage, otelClientPage, pythonFrontendPage} {
		srv := httptest.NewServer(newScaledPage(t, p, textFormatType, t0, 0.05))
		defer srv.Close()
		urls = append(urls, srv.URL+"/metrics")
	}
	inst := newLiveInstance(t, "hosted", map[string]any{"storagePath": t.TempDir(),
		"scrapeInterval": "1s", "scrapeTimeout": "1s", "retention": "1h",
		"targets": []map[string]any{{"name": "litellm", "url": urls[0]}, {"name": "otel", "url": urls[1]},
			{"name": "engine", "url": urls[2]}},
		"sloProfiles": []map[string]any{{"name": "chat", "objectives": []map[string]any{
			{"name": "ttft-500ms", "signal": "ttft", "threshold": 0.5, "target": 0.9}}}}})
	defer inst.Dispose()
	time.Sleep(9 * time.Second)

	query := func(q map[string]any) (data.Frames, string) {
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
		require.NoError(t, r.Error, "%v", q)
		return r.Frames, strings.Join(noticeTexts(r.Frames), "\n")
	}
	lite := []string{"litellm"}

	fs, _ := query(map[string]any{"queryType": "throughput", "targets": lite})
	thr := lastValues(t, fs)
	if assert.Contains(t, thr, "requests/s") {
		assert.InDelta(t, 85, thr["requests/s"], 85*5e-2)
	}

	// Shares are ratios of two rates of the same scrapes: the growth factor cancels.
	fs, _ = query(map[string]any{"queryType": "errors", "targets": lite, "groupBy": "model"})
	got := map[string]float64{}
	for _, f := range fs {
		if len(f.Fields) < 2 {
			continue
		}
		for name, v := range lastValues(t, data.Frames{f}) {
			got[f.Fields[1].Labels["model"]+" "+name] = v
		}
	}
	for name, want := range map[string]float64{
		"gpt-4o-mini rate_limit share": 0.005, "gpt-4o-mini api_timeout share": 0.003,
		"gpt-4o-mini content_filter share": 0.004, "gpt-4o-mini client_error share": 0.003,
		"gpt-4o-mini model_error share": 0, "claude-haiku model_error share": 0.004,
		"claude-haiku rate_limit share": 0, "Qwen/Qwen3-0.6B api_timeout share": 0,
	} {
		if assert.Contains(t, got, name, "%v", got) {
			assert.InDelta(t, want, got[name], 1e-9, name)
		}
	}
	for _, f := range fs {
		if f.Name == "rate_limit share" {
			require.NotNil(t, f.Fields[1].Config.Thresholds)
			assert.Equal(t, 0.005, float64(f.Fields[1].Config.Thresholds.Steps[1].Value), "the allowed share is the threshold")
		}
	}

	fs, _ = query(map[string]any{"queryType": "errors", "targets": lite, "groupBy": "model", "format": "table"})
	require.Len(t, fs, 1)
	rows := map[string]map[string]any{}
	for _, r := range tableRows(t, fs[0]) {
		rows[r["model"].(string)] = r
	}
	require.Len(t, rows, 3, "%v", rows)
	g := rows["gpt-4o-mini"]
	assert.InDelta(t, 1.0, g["worst_burn"], 1e-9)
	assert.Equal(t, "rate_limit", g["worst_class"])
	assert.InDelta(t, 0.000195, g["spend_per_request"], 1e-12)
	assert.InDelta(t, 0.195/700000*1e6, g["spend_per_1m_tokens"], 1e-9)
	assert.InDelta(t, 50, g["requests"], 50*5e-2)
	assert.InDelta(t, 0.25+0.25*500/600, g["ttft_p50"], 1e-9)
	assert.InDelta(t, 0.1+0.15*100/150, rows["Qwen/Qwen3-0.6B"]["ttft_p50"], 1e-9)
	assert.NotContains(t, g, "itl_p50", "LiteLLM has no inter-token histogram")
	c := rows["claude-haiku"]
	assert.InDelta(t, 4.0, c["worst_burn"], 1e-9)
	assert.Equal(t, "model_error", c["worst_class"])
	assert.NotContains(t, c, "spend_per_request", "spend is labelled with the upstream model only")
	assert.InDelta(t, 0.0, rows["Qwen/Qwen3-0.6B"]["spend_per_request"], 1e-12)

	fs, _ = query(map[string]any{"queryType": "errors", "targets": []string{"otel"}, "groupBy": "provider",
		"errorClasses": []string{"rate_limit", "api_timeout", "model_error"}})
	got = map[string]float64{}
	for _, f := range fs {
		for name, v := range lastValues(t, data.Frames{f}) {
			got[f.Fields[1].Labels["provider"]+" "+name] = v
		}
	}
	for name, want := range map[string]float64{"openai rate_limit share": 4.0 / 408, "openai api_timeout share": 2.0 / 408,
		"openai model_error share": 0, "anthropic model_error share": 2.0 / 202, "anthropic rate_limit share": 0} {
		if assert.Contains(t, got, name, "%v", got) {
			assert.InDelta(t, want, got[name], 1e-9, name)
		}
	}
	assert.Len(t, got, 6, "two providers × three classes: %v", got)

	fs, notes := query(map[string]any{"queryType": "breakdown", "targets": []string{"litellm", "engine"}})
	var share []float64
	for _, f := range fs {
		if f.Name == "gateway and network" {
			assert.Equal(t, "Qwen/Qwen3-0.6B", f.Fields[1].Labels["model"])
			share = append(share, lastValues(t, data.Frames{f})["gateway and network"])
		}
	}
	if assert.Len(t, share, 1, notes) {
		assert.InDelta(t, 0.125, share[0], 1e-9)
	}

	fs, notes = query(map[string]any{"queryType": "cost", "targets": lite})
	spend := lastValues(t, fs)
	if assert.Contains(t, spend, "gateway_spend_per_request", "%v", spend) {
		assert.InDelta(t, 0.895/1700, spend["gateway_spend_per_request"], 1e-12)
		assert.InDelta(t, 0.895/1190000*1e6, spend["gateway_spend_per_1m_tokens"], 1e-9)
	}
	assert.Contains(t, notes, "LiteLLM's own cost")

	// The profiles' objectives read the gateway's histograms like an engine's, per model.
	fs, _ = query(map[string]any{"queryType": "slo", "profile": "chat", "targets": lite, "groupBy": "model"})
	att := map[string]float64{}
	for _, f := range fs {
		for _, r := range tableRows(t, f) {
			if m, ok := r["model"].(string); ok && r["objective"] == "ttft-500ms" {
				if v, ok := r["attainment"].(float64); ok {
					att[m] = v
				}
			}
		}
	}
	require.Len(t, att, 3, "%v", att)
	for m, want := range map[string]float64{"gpt-4o-mini": 0.6, "claude-haiku": 0, "Qwen/Qwen3-0.6B": 1} {
		assert.InDelta(t, want, att[m], 1e-9, m)
	}

	fs, _ = query(map[string]any{"queryType": "targets"})
	inv := map[string]string{}
	for _, r := range tableRows(t, fs[0]) {
		if m, ok := r["models"].(string); ok {
			inv[r["target"].(string)] = m
		}
	}
	assert.Contains(t, inv["litellm"], "claude-haiku", "a gateway's models come from its own labels: %v", inv)
	assert.Contains(t, inv["otel"], "gpt-4o-mini", "%v", inv)

	fs, notes = query(map[string]any{"queryType": "errors", "groupBy": "target", "format": "table"})
	targets := map[string]bool{}
	for _, r := range tableRows(t, fs[0]) {
		targets[r["target"].(string)] = true
	}
	assert.Equal(t, map[string]bool{"litellm": true, "otel": true}, targets)
	assert.Contains(t, notes, "reads every gateway")
	assert.NotContains(t, notes, "measures the engines' requests again")

	// An engine named beside the gateway does not dilute its shares: gpt-4o-mini's rate limits
	// stay 5/1000 when the query also names the engine (groupBy none: all of litellm's 1700
	// requests, 5 rate-limited → 5/1700).
	fs, notes = query(map[string]any{"queryType": "errors", "targets": []string{"litellm", "engine"}, "errorClasses": []string{"rate_limit"}})
	if v := lastValues(t, fs); assert.Contains(t, v, "rate_limit share", "%v", v) {
		assert.InDelta(t, 5.0/1700, v["rate_limit share"], 1e-9)
	}
	assert.Contains(t, notes, "engine count no gateway errors")
	assert.NotContains(t, notes, "measures the engines' requests again")
}
