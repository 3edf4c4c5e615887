package plugin

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/backend"
	"github.com/grafana/grafana-plugin-sdk-go/data"
	"github.com/prometheus/prometheus/tsdb"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/inferscope/inferscope-llm-datasource/pkg/settings"
	"github.com/inferscope/inferscope-llm-datasource/pkg/source"
)

const routerPagesModel = "Qwen/Qwen3-0.6B"

// writeClassicHistogram writes one classic histogram's buckets (cumulative counts at the given bounds,
// +Inf = count), _sum and _count with the given labels.
func writeClassicHistogram(sb *strings.Builder, name, lbl string, les []string, cum []float64, sum float64) {
	for i, le := range les {
		fmt.Fprintf(sb, "%s_bucket{%s,le=%q} %g\n", name, lbl, le, cum[i])
	}
	fmt.Fprintf(sb, "%s_sum{%s} %g\n%s_count{%s} %g\n", name, lbl, sum, name, lbl, cum[len(cum)-1])
}

// routerHandPages are hand-written router pages (values per page; stored with growth 0.01/s,
// so a rate is 0.01 × the value and a mean is the page's):
//
//   - r1 (current names only): tenant `a"b` (a quote), priority 0: 100 requests, TTFT (streamed)
//     on bounds 0.1, 0.5: 50, 100; sum 20 → mean 0.2. Tenant `ü-テナント`, priority 1: 300
//     requests, TTFT on other bounds 0.2, 1: 0, 300; sum 150 → mean 0.5; plus 100 non-streamed
//     requests, 10 s each (left out). Router TTFT mean 170/400 = 0.425; requests 4/s; tenant
//     `a"b` 1/s, `ü-テナント` 3/s; priority 0 1/s, priority 1 3/s.
//   - r2 (deprecated names only): 200 requests, TTFT sum 100 → mean 0.5; requests 2/s.
//   - r3 (both generations, different values): llm_d_epp_request_total 50 (0.5/s),
//     inference_objective_request_total 70 (must not be read); TTFT new sum 10 / 50 → 0.2, old
//     sum 70 / 70 → 1.0.
//   - r4 (current names): 999 tenants t0000…t0998, 10 requests each (0.1/s each).
func routerHandPages() map[string]string {
	var r1, r2, r3, r4 strings.Builder
	ttftLes := func(b ...string) []string { return append(b, "+Inf") }
	r1.WriteString("# TYPE llm_d_epp_request_total counter\n")
	fmt.Fprintf(&r1, "llm_d_epp_request_total{fairness_id=\"a\\\"b\",model_name=%q,priority=\"0\",target_model_name=%q} 100\n", routerPagesModel, routerPagesModel)
	fmt.Fprintf(&r1, "llm_d_epp_request_total{fairness_id=\"ü-テナント\",model_name=%q,priority=\"1\",target_model_name=%q} 400\n", routerPagesModel, routerPagesModel)
	r1.WriteString("# TYPE llm_d_epp_request_ttft_seconds histogram\n")
	writeClassicHistogram(&r1, "llm_d_epp_request_ttft_seconds", fmt.Sprintf(`fairness_id="a\"b",model_name=%q,priority="0",streaming="true",target_model_name=%q`, routerPagesModel, routerPagesModel),
		ttftLes("0.1", "0.5"), []float64{50, 100, 100}, 20)
	writeClassicHistogram(&r1, "llm_d_epp_request_ttft_seconds", fmt.Sprintf(`fairness_id="ü-テナント",model_name=%q,priority="1",streaming="true",target_model_name=%q`, routerPagesModel, routerPagesModel),
		ttftLes("0.2", "1.0"), []float64{0, 300, 300}, 150)
	writeClassicHistogram(&r1, "llm_d_epp_request_ttft_seconds", fmt.Sprintf(`fairness_id="ü-テナント",model_name=%q,priority="1",streaming="false",target_model_name=%q`, routerPagesModel, routerPagesModel),
		ttftLes("0.2", "1.0"), []float64{0, 0, 100}, 1000)

	r2.WriteString("# TYPE inference_objective_request_total counter\n")
	fmt.Fprintf(&r2, "inference_objective_request_total{model_name=%q,priority=\"0\",target_model_name=%q} 200\n", routerPagesModel, routerPagesModel)
	r2.WriteString("# TYPE inference_objective_request_ttft_seconds histogram\n")
	writeClassicHistogram(&r2, "inference_objective_request_ttft_seconds", fmt.Sprintf(`model_name=%q,target_model_name=%q`, routerPagesModel, routerPagesModel),
		ttftLes("0.4", "0.6"), []float64{0, 200, 200}, 100)

	r3.WriteString("# TYPE llm_d_epp_request_total counter\n")
	fmt.Fprintf(&r3, "llm_d_epp_request_total{fairness_id=\"x\",model_name=%q,priority=\"0\",target_model_name=%q} 50\n", routerPagesModel, routerPagesModel)
	r3.WriteString("# TYPE inference_objective_request_total counter\n")
	fmt.Fprintf(&r3, "inference_objective_request_total{model_name=%q,priority=\"0\",target_model_name=%q} 70\n", routerPagesModel, routerPagesModel)
	r3.WriteString("# TYPE llm_d_epp_request_ttft_seconds histogram\n")
	writeClassicHistogram(&r3, "llm_d_epp_request_ttft_seconds", fmt.Sprintf(`fairness_id="x",model_name=%q,priority="0",streaming="true",target_model_name=%q`, routerPagesModel, routerPagesModel),
		ttftLes("0.4"), []float64{50, 50}, 10)
	r3.WriteString("# TYPE inference_objective_request_ttft_seconds histogram\n")
	writeClassicHistogram(&r3, "inference_objective_request_ttft_seconds", fmt.Sprintf(`model_name=%q,target_model_name=%q`, routerPagesModel, routerPagesModel),
		ttftLes("0.4"), []float64{0, 70}, 70)

	r4.WriteString("# TYPE llm_d_epp_request_total counter\n")
	for i := 0; i < 999; i++ {
		fmt.Fprintf(&r4, "llm_d_epp_request_total{fairness_id=\"t%04d\",model_name=%q,priority=\"0\",target_model_name=%q} 10\n", i, routerPagesModel, routerPagesModel)
	}
	var r5 strings.Builder
	r5.WriteString("# TYPE llm_d_epp_request_total counter\n")
	for _, tn := range []string{`(`, `.*`, `a|b`} {
		fmt.Fprintf(&r5, "llm_d_epp_request_total{fairness_id=%q,model_name=%q,priority=\"0\",target_model_name=%q} 10\n", tn, routerPagesModel, routerPagesModel)
	}
	// r6: current names for requests, TTFT only under the deprecated name (sum 90 / 100 → 0.9).
	var r6 strings.Builder
	r6.WriteString("# TYPE llm_d_epp_request_total counter\n")
	fmt.Fprintf(&r6, "llm_d_epp_request_total{fairness_id=\"x\",model_name=%q,priority=\"0\",target_model_name=%q} 100\n", routerPagesModel, routerPagesModel)
	r6.WriteString("# TYPE inference_objective_request_ttft_seconds histogram\n")
	writeClassicHistogram(&r6, "inference_objective_request_ttft_seconds", fmt.Sprintf(`model_name=%q,target_model_name=%q`, routerPagesModel, routerPagesModel),
		ttftLes("1.0"), []float64{100, 100}, 90)
	return map[string]string{"r1": r1.String(), "r2": r2.String(), "r3": r3.String(), "r4": r4.String(), "r5": r5.String(), "r6": r6.String()}
}

func TestLLMDRouterHandPages(t *testing.T) {
	db, err := tsdb.Open(t.TempDir(), nil, nil, tsdb.DefaultOptions(), nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = db.Close() })
	start := time.Now().Add(-30 * time.Minute).Truncate(time.Minute)
	span := 30 * time.Minute
	for job, page := range routerHandPages() {
		appendScaledPage(t, db, page, job, job+":9090", start, span, 15*time.Second, 0.01)
	}
	eng, err := os.ReadFile(pythonFrontendPage)
	require.NoError(t, err)
	appendScaledPage(t, db, string(eng), "engine", "engine:8000", start, span, 15*time.Second, 0.01)
	var targets []map[string]any
	for _, n := range []string{"r1", "r2", "r3", "r4", "r5", "r6"} {
		targets = append(targets, map[string]any{"name": n, "url": "http://" + n + ":9090/metrics"})
	}
	targets = append(targets, map[string]any{"name": "engine", "url": "http://engine:8000/metrics"})
	js, err := json.Marshal(map[string]any{"scrapeInterval": "15s", "targets": targets})
	require.NoError(t, err)
	st, err := settings.Load(js, nil)
	require.NoError(t, err)
	inst := newInstanceForTest(st, source.NewEmbedded(db, source.EmbeddedOptions{}))
	end := start.Add(span)
	inst.now = func() time.Time { return end }

	query := func(q map[string]any) (data.Frames, string) {
		t.Helper()
		q["window"] = "5m"
		js, err := json.Marshal(q)
		require.NoError(t, err)
		resp, err := inst.QueryData(context.Background(), &backend.QueryDataRequest{Queries: []backend.DataQuery{{
			RefID: "A", QueryType: q["queryType"].(string), JSON: js, Interval: time.Minute, MaxDataPoints: 100,
			TimeRange: backend.TimeRange{From: end.Add(-10 * time.Minute), To: end}}}})
		require.NoError(t, err)
		r := resp.Responses["A"]
		require.NoError(t, r.Error, "%v", q)
		return r.Frames, strings.Join(noticeTexts(r.Frames), "\n")
	}
	near := func(want float64, m map[string]float64, key string, rel float64) {
		t.Helper()
		v, ok := m[key]
		if assert.True(t, ok, "no %q in %v", key, m) {
			assert.InDelta(t, want, v, rel*want+1e-12, key)
		}
	}

	fs, notes := query(map[string]any{"queryType": "throughput", "targets": []string{"r1"}, "groupBy": "tenant"})
	byTenant := lastByLabel(t, fs, "tenant")
	t.Logf("r1 by tenant: %v\n%s", byTenant, notes)
	near(1, byTenant, `requests/s a"b`, 1e-6)
	assert.NotContains(t, notes, "none of their series carries the labels", "r1's request series are read (4 requests/s)")
	near(4, byTenant, "requests/s ü-テナント", 1e-6)

	fs, _ = query(map[string]any{"queryType": "throughput", "targets": []string{"r1"}, "groupBy": "priority"})
	byPrio := lastByLabel(t, fs, "priority")
	near(1, byPrio, "requests/s 0", 1e-6)
	near(4, byPrio, "requests/s 1", 1e-6)

	fs, notes = query(map[string]any{"queryType": "latency", "targets": []string{"r1"}, "stages": []string{"ttft"}, "stats": []string{"mean", "p50"}, "bounds": false, "groupBy": "tenant"})
	lat := lastByLabel(t, fs, "tenant")
	t.Logf("r1 ttft by tenant: %v\n%s", lat, notes)
	near(0.2, lat, `ttft mean a"b`, 1e-9)
	near(0.5, lat, "ttft mean ü-テナント", 1e-9)
	// p50 of a"b: rank 50 of 100 at the bound 0.1 (50 in (0, 0.1]): 0.1.
	near(0.1, lat, `ttft p50 a"b`, 1e-9)
	// p50 of ü: rank 150 of 300 in (0.2, 1.0] holding 0…300: 0.2 + 0.8·150/300 = 0.6.
	near(0.6, lat, "ttft p50 ü-テナント", 1e-9)

	fs, notes = query(map[string]any{"queryType": "latency", "targets": []string{"r1"}, "stages": []string{"ttft"}, "stats": []string{"mean", "p50"}, "bounds": false})
	all := lastValues(t, fs)
	t.Logf("r1 ttft: %v\n%s", all, notes)
	near(0.425, all, "ttft mean", 1e-9)

	fs, _ = query(map[string]any{"queryType": "throughput", "targets": []string{"r2"}})
	near(2, lastValues(t, fs), "requests/s", 1e-6)
	fs, _ = query(map[string]any{"queryType": "latency", "targets": []string{"r2"}, "stages": []string{"ttft"}, "stats": []string{"mean"}})
	near(0.5, lastValues(t, fs), "ttft mean", 1e-9)

	fs, notes = query(map[string]any{"queryType": "throughput", "targets": []string{"r3"}})
	t.Logf("r3: %v\n%s", lastValues(t, fs), notes)
	near(0.5, lastValues(t, fs), "requests/s", 1e-6)
	assert.NotContains(t, notes, "none of their series carries the labels", "r3's request series are read")
	fs, _ = query(map[string]any{"queryType": "latency", "targets": []string{"r3"}, "stages": []string{"ttft"}, "stats": []string{"mean"}})
	near(0.2, lastValues(t, fs), "ttft mean", 1e-9)

	// r4 alone: 999 tenants, no fold.
	fs, notes = query(map[string]any{"queryType": "throughput", "targets": []string{"r4"}, "groupBy": "tenant"})
	r4 := lastByLabel(t, fs, "tenant")
	n := 0
	for k := range r4 {
		if strings.HasPrefix(k, "requests/s ") {
			n++
		}
	}
	assert.Equal(t, 999, n)
	assert.NotContains(t, notes, "folded")
	// r1 and r4: 1,001 tenants; in name order a"b, t0000…t0998 are the first 1,000 and
	// ü-テナント (after every ASCII name) folds into other: other = 4/s.
	fs, notes = query(map[string]any{"queryType": "throughput", "targets": []string{"r1", "r4"}, "groupBy": "tenant"})
	both := lastByLabel(t, fs, "tenant")
	n = 0
	for k := range both {
		if strings.HasPrefix(k, "requests/s ") {
			n++
		}
	}
	assert.Equal(t, 1001, n, "1,000 tenants and other")
	near(4, both, "requests/s other", 1e-6)
	near(1, both, `requests/s a"b`, 1e-6)
	assert.Contains(t, notes, "folded")

	// Latency over the same fold: other holds only ü-テナント's TTFT (r4 has none), so its p50
	// from the summed bucket rates is ü's 0.6; a"b keeps its own 0.1.
	fs, notes = query(map[string]any{"queryType": "latency", "targets": []string{"r1", "r4"}, "groupBy": "tenant", "stages": []string{"ttft"}, "stats": []string{"p50", "mean"}, "bounds": false})
	foldLat := lastByLabel(t, fs, "tenant")
	t.Logf("r1+r4 ttft by tenant: other p50 %v, other mean %v, a\"b p50 %v\n%s", foldLat["ttft p50 other"], foldLat["ttft mean other"], foldLat[`ttft p50 a"b`], notes)
	near(0.6, foldLat, "ttft p50 other", 1e-9)
	near(0.1, foldLat, `ttft p50 a"b`, 1e-9)

	// r4 and r5: 1,002 tenants; in name order "(", ".*", "a|b" (regular-expression characters)
	// and t0000…t0996 are kept, t0997 and t0998 fold into other: 2 × 0.1 = 0.2/s.
	fs, _ = query(map[string]any{"queryType": "throughput", "targets": []string{"r4", "r5"}, "groupBy": "tenant"})
	weird := lastByLabel(t, fs, "tenant")
	near(0.2, weird, "requests/s other", 1e-6)
	near(0.1, weird, "requests/s (", 1e-6)
	near(0.1, weird, "requests/s .*", 1e-6)
	near(0.1, weird, "requests/s a|b", 1e-6)
	near(0.1, weird, "requests/s t0996", 1e-6)
	_, ok := weird["requests/s t0997"]
	assert.False(t, ok, "t0997 is past the 1,000th name")

	// The legacy router split by priority: inference_objective_request_total carries it.
	fs, notes = query(map[string]any{"queryType": "throughput", "targets": []string{"r2"}, "groupBy": "priority"})
	t.Logf("r2 by priority: %v\n%s", lastByLabel(t, fs, "priority"), notes)
	near(2, lastByLabel(t, fs, "priority"), "requests/s 0", 1e-6)

	// Two routers with different TTFT layouts (r2: 0.4, 0.6; r3: 0.4), merged as
	// distributions: 2.5/s in all, 0.5/s of r3 at or below 0.4, r2's 2/s in (0.4, 0.6]; p50 rank
	// 1.25 → 0.4 + 0.2 · (1.25 − 0.5) / 2 = 0.475.
	fs, notes = query(map[string]any{"queryType": "latency", "targets": []string{"r2", "r3"}, "stages": []string{"ttft"}, "stats": []string{"p50", "mean"}, "bounds": false})
	mixed := lastValues(t, fs)
	t.Logf("r2+r3 ttft: %v\n%s", mixed, notes)
	near(0.475, mixed, "ttft p50", 1e-9)
	near((100+10)/(200.0+50), mixed, "ttft mean", 1e-9)

	// r6: a dual page whose TTFT exists only under the deprecated name is read from it.
	fs, notes = query(map[string]any{"queryType": "latency", "targets": []string{"r6"}, "stages": []string{"ttft"}, "stats": []string{"mean"}})
	t.Logf("r6 ttft: %v\n%s", lastValues(t, fs), notes)
	near(0.9, lastValues(t, fs), "ttft mean", 1e-9)

	// Gateway and network: r1's TTFT mean 0.425 − the engine's 0.125 = 0.3 s.
	fs, notes = query(map[string]any{"queryType": "breakdown", "targets": []string{"r1", "engine"}})
	var share []float64
	for _, f := range fs {
		if f.Name == "gateway and network" {
			share = append(share, lastValues(t, data.Frames{f})["gateway and network"])
		}
	}
	t.Logf("breakdown r1+engine: %v\n%s", share, notes)
	if assert.Len(t, share, 1) {
		assert.InDelta(t, 0.3, share[0], 1e-9)
	}
	// Only routers named: the engines are every other target. r1 and r3: router TTFT mean
	// (170 + 10)/(400 + 50) = 0.4 − 0.125 = 0.275.
	fs, notes = query(map[string]any{"queryType": "breakdown", "targets": []string{"r1", "r3"}})
	share = nil
	for _, f := range fs {
		if f.Name == "gateway and network" {
			share = append(share, lastValues(t, data.Frames{f})["gateway and network"])
		}
	}
	t.Logf("breakdown r1+r3: %v\n%s", share, notes)
	if assert.Len(t, share, 1) {
		assert.InDelta(t, 0.275, share[0], 1e-9)
	}
	// breakdown table format with a router.
	fs, notes = query(map[string]any{"queryType": "breakdown", "targets": []string{"r1", "engine"}, "format": "table"})
	for _, f := range fs {
		t.Logf("breakdown table frame %s rows %d", f.Name, f.Rows())
	}
	t.Logf("%s", notes)
}
