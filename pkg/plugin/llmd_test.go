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

// The llm-d router's endpoint picker pages (pkg/catalog/testdata, built from the router's
// families, labels and bucket layouts).
const (
	eppDualPage   = "../catalog/testdata/llm-d-epp-dual-emission-1000-tenants-other.prom"
	eppSecondPage = "../catalog/testdata/llm-d-epp-current-names-second-router-200-tenants.prom"
	eppLegacyPage = "../catalog/testdata/llm-d-epp-legacy-inference-objective-names.prom"
)

// lastByLabel is lastValues keyed by frame name and the value of one label ("ttft mean t0000").
func lastByLabel(t *testing.T, fs data.Frames, label string) map[string]float64 {
	t.Helper()
	out := map[string]float64{}
	for _, f := range fs {
		if len(f.Fields) < 2 {
			continue
		}
		for name, v := range lastValues(t, data.Frames{f}) {
			out[name+" "+f.Fields[1].Labels[label]] = v
		}
	}
	return out
}

// TestLLMDRouterThroughQueryData: three llm-d routers and one vLLM engine scraped live, every
// value worked out by hand from the pages (counters and histograms grow by 0.05 of the page per
// second, so a rate is the page's value × 0.05 and quantiles, means and ratios are the page's):
//
//   - epp (current names and their deprecated twins, dual emission): requests 1000 tenants × 10
//     plus other 500 = 10500 → 525/s, not 1050 (the twin inference_objective_request_total is read
//     only where llm_d_epp_request_total is missing); priority 0 (t0000–t0499 and other) 5500 →
//     275/s, priority 1 250/s; prompt tokens 350000 → 17500/s.
//   - TTFT of streamed requests (t0000: 50 in (0.1, 0.2], 50 in (0.2, 0.4]; t0500: 100 in
//     (0.2, 0.4]; other: 200 in (0.4, 0.6]; sums 20, 30, 100 s): mean 150/400 = 0.375 s (the 40
//     non-streamed requests of t0000, 4.5 s each, left out: with them it would be 0.75); p90 rank
//     360 in (0.4, 0.6] holding 200…400: 0.4 + 0.2·160/200 = 0.56 s. Per tenant: t0000 mean 0.2,
//     p90 rank 90 in (0.2, 0.4] holding 50…100: 0.36; t0500 mean 0.3; other mean 0.5.
//   - errors (error_code ServiceUnavailable) 6 → 0.3/s; SLO violations ttft 12 → 0.6/s, tpot 3 →
//     0.15/s (twins not added); per-endpoint queues 1, 3, 5 (spread 5 − 1 = 4; the page's std dev
//     1.632993 and KV std dev 0.1); eppold's endpoints 0 and 2 (spread 2, no std dev gauges).
//   - SLO TTFT ≤ 0.4 s (a bucket bound): t0000 100/100, t0500 100/100, other 0/200; overall
//     200/400 = 0.5.
//   - groupBy tenant over epp and eppb (tenants t1000–t1199, 10 requests each): 1,200 tenants,
//     so t1000–t1199 fold into other in every frame: other = (500 + 200 × 10) × 0.05 = 125
//     requests/s, t0000 0.5/s; prompt tokens of other (200000) and t1000 (50000) → 12500/s.
//   - breakdown over epp and the engine (vLLM TTFT mean 12.5/100 = 0.125 s, model
//     Qwen/Qwen3-0.6B on both sides): gateway and network = 0.375 − 0.125 = 0.25 s.
//   - a query over all targets leaves the routers out (TTFT mean 0.125, the engine's alone).
//   - eppold (deprecated names only): TTFT mean 30/100 = 0.3 s, requests 100 → 5/s; groupBy
//     tenant says its families carry no fairness_id.
func TestLLMDRouterThroughQueryData(t *testing.T) {
	if testing.Short() {
		t.Skip("scrapes four loopback targets for about ten seconds")
	}
	t0 := time.Now()
	var urls []string
	pages := map[string]*scaledPage{}
	for k, p := range []string{eppDualPage, eppSecondPage, eppLegacyPage, pythonFrontendPage} {
		page := newScaledPage(t, p, textFormatType, t0, 0.05).onGrid(time.Second)
		pages[[]string{"epp", "eppb", "eppold", "engine"}[k]] = page
		srv := httptest.NewServer(page)
		defer srv.Close()
		urls = append(urls, srv.URL+"/metrics")
	}
	inst := newLiveInstance(t, "llmd", map[string]any{"storagePath": t.TempDir(),
		"scrapeInterval": "1s", "scrapeTimeout": "1s", "retention": "1h",
		"targets": []map[string]any{{"name": "epp", "url": urls[0]}, {"name": "eppb", "url": urls[1]},
			{"name": "eppold", "url": urls[2]}, {"name": "engine", "url": urls[3]}},
		"sloProfiles": []map[string]any{{"name": "chat", "objectives": []map[string]any{
			{"name": "ttft-400ms", "signal": "ttft", "threshold": 0.4, "target": 0.9}}}}})
	defer inst.Dispose()
	// Every query's 4 s windows end inside 6 s of complete samples on the pages' own clocks
	// (onGrid), so a loaded machine's late or lost scrapes do not reach the rates.
	end := gridEnd(t, inst, pages, 6*time.Second)

	query := func(q map[string]any) (data.Frames, string) {
		t.Helper()
		q["window"] = "4s"
		js, err := json.Marshal(q)
		require.NoError(t, err)
		to := end.Add(500 * time.Millisecond)
		resp, err := inst.QueryData(context.Background(), &backend.QueryDataRequest{Queries: []backend.DataQuery{{
			RefID: "A", QueryType: q["queryType"].(string), JSON: js, Interval: time.Second, MaxDataPoints: 100,
			TimeRange: backend.TimeRange{From: to.Add(-5 * time.Second), To: to}}}})
		require.NoError(t, err)
		r := resp.Responses["A"]
		require.NoError(t, r.Error, "%v", q)
		return r.Frames, strings.Join(noticeTexts(r.Frames), "\n")
	}
	near := func(want, got float64, ok bool, name string, have any, rel float64) {
		t.Helper()
		if assert.True(t, ok, "no %q (have %v)", name, have) {
			assert.InDelta(t, want, got, rel*want+1e-12, name)
		}
	}
	epp := []string{"epp"}

	fs, _ := query(map[string]any{"queryType": "throughput", "targets": epp})
	thr := lastValues(t, fs)
	v, ok := thr["requests/s"]
	near(525, v, ok, "requests/s", thr, 5e-2)
	v, ok = thr["prompt tokens/s"]
	near(17500, v, ok, "prompt tokens/s", thr, 5e-2)

	for name, want := range map[string]float64{"gateway errors/s ServiceUnavailable": 0.3,
		"SLO violations/s ttft_slo_violation": 0.6, "SLO violations/s tpot_slo_violation": 0.15} {
		v, ok := thr[name]
		near(want, v, ok, name, thr, 5e-2)
	}

	fs, _ = query(map[string]any{"queryType": "saturation", "targets": []string{"epp", "eppold"}, "groupBy": "target"})
	sat := lastByLabel(t, fs, "target")
	for name, want := range map[string]float64{"endpoint queue qwen-decode-0 epp": 1, "endpoint queue qwen-decode-2 epp": 5,
		"endpoint queue spread epp": 4, "pool queue std dev epp": 1.632993, "pool KV-cache std dev epp": 0.1,
		"endpoint queue qwen-old-1 eppold": 2, "endpoint queue spread eppold": 2} {
		v, ok := sat[name]
		near(want, v, ok, name, sat, 1e-9)
	}
	_, ok = sat["pool queue std dev eppold"]
	assert.False(t, ok, "the deprecated names have no pool standard deviation")

	fs, _ = query(map[string]any{"queryType": "throughput", "targets": epp, "groupBy": "priority"})
	byPrio := lastByLabel(t, fs, "priority")
	v, ok = byPrio["requests/s 0"]
	near(275, v, ok, "requests/s priority 0", byPrio, 5e-2)
	v, ok = byPrio["requests/s 1"]
	near(250, v, ok, "requests/s priority 1", byPrio, 5e-2)

	fs, _ = query(map[string]any{"queryType": "latency", "targets": epp, "stages": []string{"ttft"}, "stats": []string{"p90", "mean"}})
	lat := lastValues(t, fs)
	v, ok = lat["ttft mean"]
	near(0.375, v, ok, "ttft mean", lat, 1e-9)
	v, ok = lat["ttft p90"]
	near(0.56, v, ok, "ttft p90", lat, 1e-9)

	fs, _ = query(map[string]any{"queryType": "latency", "targets": epp, "stages": []string{"ttft"}, "stats": []string{"p90", "mean"}, "bounds": false, "groupBy": "tenant"})
	byTenant := lastByLabel(t, fs, "tenant")
	for name, want := range map[string]float64{"ttft mean t0000": 0.2, "ttft p90 t0000": 0.36, "ttft mean t0500": 0.3, "ttft mean other": 0.5} {
		v, ok := byTenant[name]
		near(want, v, ok, name, byTenant, 1e-9)
	}

	checked := 0
	fs, _ = query(map[string]any{"queryType": "slo", "profile": "chat", "targets": epp, "groupBy": "tenant"})
	for _, f := range fs {
		for r := 0; r < f.Rows(); r++ {
			row := map[string]any{}
			for _, fl := range f.Fields {
				if x, ok := fl.ConcreteAt(r); ok {
					row[fl.Name] = x
				}
			}
			tenant, _ := row["tenant"].(string)
			if want, ok := map[string]float64{"t0000": 1, "t0500": 1, "other": 0}[tenant]; ok && row["objective"] == "ttft-400ms" {
				assert.InDelta(t, want, row["attainment"], 1e-9, "%v", row)
				checked++
			}
		}
	}
	assert.Equal(t, 3, checked, "rows of t0000, t0500 and other")
	att := tableColumn(t, func() data.Frames {
		f, _ := query(map[string]any{"queryType": "slo", "profile": "chat", "targets": epp})
		return f
	}(), "objective", "attainment")
	assert.InDelta(t, 0.5, att["ttft-400ms"], 1e-9, "%v", att)
	for _, q := range []map[string]any{{"queryType": "burn_rate", "profile": "chat", "targets": epp, "groupBy": "tenant"},
		{"queryType": "goodput", "profile": "chat", "targets": epp, "groupBy": "priority"}} {
		fs, _ := query(q)
		assert.NotEmpty(t, fs, "%v", q)
	}

	fs, notes := query(map[string]any{"queryType": "throughput", "targets": []string{"epp", "eppb"}, "groupBy": "tenant"})
	folded := lastByLabel(t, fs, "tenant")
	v, ok = folded["requests/s other"]
	near(125, v, ok, "requests/s other", len(folded), 5e-2)
	v, ok = folded["requests/s t0000"]
	near(0.5, v, ok, "requests/s t0000", len(folded), 5e-2)
	v, ok = folded["prompt tokens/s other"]
	near(12500, v, ok, "prompt tokens/s other", len(folded), 5e-2)
	requestGroups := 0
	for k := range folded {
		requestGroups += map[bool]int{true: 1}[strings.HasPrefix(k, "requests/s ")]
		assert.NotContains(t, k, "t1000", "t1000 is beyond the bound: folded into other in every frame")
	}
	assert.Equal(t, 1001, requestGroups, "1,000 tenants and other")
	assert.Contains(t, notes, `tenant "other" is the llm-d router's overflow`)
	assert.Contains(t, notes, `the tenants after the first 1000 in name order are folded into "other"`)

	fs, notes = query(map[string]any{"queryType": "breakdown", "targets": []string{"epp", "engine"}})
	var share []float64
	for _, f := range fs {
		if f.Name == "gateway and network" {
			assert.Equal(t, "Qwen/Qwen3-0.6B", f.Fields[1].Labels["model"])
			share = append(share, lastValues(t, data.Frames{f})["gateway and network"])
		}
	}
	if assert.Len(t, share, 1, notes) {
		assert.InDelta(t, 0.25, share[0], 1e-9)
	}
	assert.Contains(t, notes, "a difference of means")

	fs, notes = query(map[string]any{"queryType": "latency", "stages": []string{"ttft"}, "stats": []string{"mean"}})
	all := lastValues(t, fs)
	v, ok = all["ttft mean"]
	near(0.125, v, ok, "ttft mean over all targets", all, 1e-9)
	assert.Contains(t, notes, "epp, eppb, eppold: the llm-d router's endpoint picker measures the engines' requests again")

	fs, notes = query(map[string]any{"queryType": "latency", "targets": []string{"eppold"}, "stages": []string{"ttft"}, "stats": []string{"mean"}, "groupBy": "tenant"})
	old := lastValues(t, fs)
	v, ok = old["ttft mean"]
	near(0.3, v, ok, "eppold ttft mean", old, 1e-9)
	assert.Contains(t, notes, "groupBy tenant: eppold export the router's deprecated inference_* names")
	fs, _ = query(map[string]any{"queryType": "throughput", "targets": []string{"eppold"}})
	thr = lastValues(t, fs)
	v, ok = thr["requests/s"]
	near(5, v, ok, "eppold requests/s", thr, 5e-2)

	_, notes = query(map[string]any{"queryType": "latency", "targets": []string{"engine"}, "stages": []string{"ttft"}, "stats": []string{"mean"}, "groupBy": "tenant"})
	assert.Contains(t, notes, "no target in scope does, so the series are not split")
}
