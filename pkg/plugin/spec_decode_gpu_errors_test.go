package plugin

import (
	"context"
	"encoding/json"
	"math"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/backend"
	"github.com/grafana/grafana-plugin-sdk-go/data"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// specDecodePage is the new-families page plus vLLM's speculative-decoding counters and the
// token-count histograms (iteration, prompt and generation tokens) with round numbers.
const specDecodePage = "testdata/vllm-0.24-v1-spec-decode-token-lengths.prom"

// queryLive sends one query to inst over the last 5 s and returns its frames.
func queryLive(t *testing.T, inst interface {
	QueryData(context.Context, *backend.QueryDataRequest) (*backend.QueryDataResponse, error)
}, q map[string]any) data.Frames {
	t.Helper()
	js, err := json.Marshal(q)
	require.NoError(t, err)
	now := time.Now()
	resp, err := inst.QueryData(context.Background(), &backend.QueryDataRequest{Queries: []backend.DataQuery{{
		RefID: "A", QueryType: q["queryType"].(string), JSON: js, Interval: time.Second, MaxDataPoints: 100,
		TimeRange: backend.TimeRange{From: now.Add(-5 * time.Second), To: now}}}})
	require.NoError(t, err)
	r := resp.Responses["A"]
	require.NoError(t, r.Error)
	return r.Frames
}

// TestSpecDecodeAndTokenDistributions (issue 33): one target serving specDecodePage, counters
// growing by 0.05 of the page per second, so a rate is the page's value × 0.05 and a ratio of
// two counters (or a quantile of buckets) is the page's own, worked out by hand:
//
//   - spec decode: accepted 3000 → 150 tok/s, draft tokens 5000 → 250 tok/s, drafts 1250 →
//     62.5/s; acceptance rate 3000/5000 = 0.6; mean acceptance length 1 + 3000/1250 = 3.4;
//     by position (accepted at N / drafts): 1000/1250 = 0.8, 800/1250 = 0.64, 700/1250 = 0.56,
//     500/1250 = 0.4.
//   - tokens per step (buckets 1:10, 8:30, 16:60, 32:90, 64:100, +Inf:100; sum 2000, count
//     100): mean 20; p50 rank 50 in (8, 16] → 8 + 8·20/30 = 13.333; p99 rank 99 in (32, 64] →
//     32 + 32·9/10 = 60.8.
//   - prompt tokens per request (10:20, 20:20, 50:60, 100:90, 200:100; sum 5000): mean 50; p50
//     rank 50 in (20, 50] → 20 + 30·30/40 = 42.5; p99 rank 99 in (100, 200] → 190.
//   - generated tokens per request (10:50, 20:80, 50:100; sum 1500): mean 15; p99 rank 99 in
//     (20, 50] → 20 + 30·19/20 = 48.5. Heatmap rows (requests/s per bucket, × 0.05): le 10 →
//     2.5, le 20 → 1.5, le 50 → 1, +Inf → 0.
func TestSpecDecodeAndTokenDistributions(t *testing.T) {
	if testing.Short() {
		t.Skip("scrapes a loopback target for about ten seconds")
	}
	srv := httptest.NewServer(newScaledPage(t, specDecodePage, textFormatType, time.Now(), 0.05))
	defer srv.Close()
	inst := newLiveInstance(t, "specdecode", map[string]any{"storagePath": t.TempDir(),
		"scrapeInterval": "1s", "scrapeTimeout": "1s", "retention": "1h",
		"targets": []map[string]any{{"name": "spec", "url": srv.URL + "/metrics"}}})
	defer inst.Dispose()
	time.Sleep(9 * time.Second)
	common := map[string]any{"targets": []string{"spec"}, "groupBy": "target", "window": "4s"}
	with := func(kv ...any) map[string]any {
		q := map[string]any{}
		for k, v := range common {
			q[k] = v
		}
		for i := 0; i+1 < len(kv); i += 2 {
			q[kv[i].(string)] = kv[i+1]
		}
		return q
	}

	thr := lastValues(t, queryLive(t, inst, with("queryType", "throughput")))
	for name, want := range map[string]float64{
		"spec decode: accepted tok/s": 150, "spec decode: draft tok/s": 250, "spec decode: drafts/s": 62.5,
	} {
		if got, ok := thr[name]; assert.True(t, ok, "no %q frame (have %v)", name, thr) {
			assert.InEpsilon(t, want, got, 5e-2, name)
		}
	}
	for name, want := range map[string]float64{
		"spec decode: acceptance rate": 0.6, "spec decode: mean acceptance length": 3.4,
		"spec decode: position 0 acceptance rate": 0.8, "spec decode: position 1 acceptance rate": 0.64,
		"spec decode: position 2 acceptance rate": 0.56, "spec decode: position 3 acceptance rate": 0.4,
	} {
		if got, ok := thr[name]; assert.True(t, ok, "no %q frame (have %v)", name, thr) {
			assert.InEpsilon(t, want, got, 1e-6, name)
		}
	}

	tok := lastValues(t, queryLive(t, inst, with("queryType", "tokens", "stats", []string{"mean", "p50", "p99"})))
	for name, want := range map[string]float64{
		"tokens per step mean": 20, "tokens per step p50": 8 + 8.0*20/30, "tokens per step p99": 60.8,
		"prompt tokens per request mean": 50, "prompt tokens per request p50": 42.5, "prompt tokens per request p99": 190,
		"generated tokens per request mean": 15, "generated tokens per request p99": 48.5,
	} {
		if got, ok := tok[name]; assert.True(t, ok, "no %q frame (have %v)", name, tok) {
			assert.InEpsilon(t, want, got, 1e-6, name)
		}
	}

	hm := queryLive(t, inst, with("queryType", "tokens", "format", "heatmap", "signals", []string{"generation_length"}))
	require.Len(t, hm, 1)
	assert.Equal(t, "generation_length · target=spec", hm[0].Name)
	assert.Equal(t, data.FrameType("heatmap-rows"), hm[0].Meta.Type)
	rows := map[string]float64{}
	for _, f := range hm[0].Fields[1:] {
		for i := f.Len() - 1; i >= 0; i-- {
			if v, ok := f.At(i).(*float64); ok && v != nil && !math.IsNaN(*v) {
				rows[f.Name] = *v
				break
			}
		}
	}
	for le, want := range map[string]float64{"10": 2.5, "20": 1.5, "50": 1} {
		assert.InEpsilon(t, want, rows[le], 5e-2, "le %s", le)
	}
	assert.InDelta(t, 0, rows["+Inf"], 1e-9)

	// Bad input names the field.
	js, _ := json.Marshal(with("queryType", "tokens", "signals", []string{"ttft"}))
	resp, err := inst.QueryData(context.Background(), &backend.QueryDataRequest{Queries: []backend.DataQuery{{RefID: "A", QueryType: "tokens", JSON: js,
		TimeRange: backend.TimeRange{From: time.Now().Add(-time.Minute), To: time.Now()}}}})
	require.NoError(t, err)
	require.Error(t, resp.Responses["A"].Error)
	assert.Contains(t, resp.Responses["A"].Error.Error(), "signals:")
}

// TestGPUErrorsAndInterconnect (issue 33): a dcgm-exporter agent serving
// testdata/dcgm-errors-interconnect.prom, counters growing by 0.05 of the page per second, read
// with the gpu query's error and interconnect signals over a 4 s window. Worked out by hand:
// a counter's increase in the window is its value × 0.05 × 4 (ECC DBE volatile 40 → 8, SBE
// volatile 200 → 40, SBE aggregate 1000 → 200, DBE aggregate 60 → 12, PCIe replays 100 → 20,
// NVLink CRC flit 20 → 4, NVLink replay 10 → 2); the NVLink bandwidth counter's rate 1e6 ×
// 0.05 = 5e4 per second; the gauges as on the page: XID 79, NVLink TX 1.5e9 B/s, RX 5e8 B/s.
func TestGPUErrorsAndInterconnect(t *testing.T) {
	if testing.Short() {
		t.Skip("scrapes a loopback agent for about ten seconds")
	}
	srv := httptest.NewServer(newScaledPage(t, "testdata/dcgm-errors-interconnect.prom", textFormatType, time.Now(), 0.05))
	defer srv.Close()
	inst := newLiveInstance(t, "gpuerrors", map[string]any{"storagePath": t.TempDir(),
		"scrapeInterval": "1s", "scrapeTimeout": "1s", "retention": "1h",
		"gpuAgents": []map[string]any{{"name": "g", "url": srv.URL + "/metrics", "kind": "dcgm"}}})
	defer inst.Dispose()
	time.Sleep(9 * time.Second)
	fs := queryLive(t, inst, map[string]any{"queryType": "gpu", "agents": []string{"g"}, "window": "4s", "signals": []string{
		"xid_last", "ecc_sbe_volatile", "ecc_dbe_volatile", "ecc_sbe_aggregate", "ecc_dbe_aggregate", "pcie_replays",
		"nvlink_bandwidth_total", "nvlink_tx", "nvlink_rx", "nvlink_crc_flit_errors", "nvlink_replay_errors"}})
	got := lastValues(t, fs)
	for name, want := range map[string]float64{
		"ecc_dbe_volatile": 8, "ecc_sbe_volatile": 40, "ecc_sbe_aggregate": 200, "ecc_dbe_aggregate": 12,
		"pcie_replays": 20, "nvlink_crc_flit_errors": 4, "nvlink_replay_errors": 2, "nvlink_bandwidth_total": 5e4,
	} {
		if v, ok := got[name]; assert.True(t, ok, "no %q frame (have %v)", name, got) {
			assert.InEpsilon(t, want, v, 0.15, name)
		}
	}
	for name, want := range map[string]float64{"xid_last": 79, "nvlink_tx": 1.5e9, "nvlink_rx": 5e8} {
		if v, ok := got[name]; assert.True(t, ok, "no %q frame (have %v)", name, got) {
			assert.InDelta(t, want, v, 1e-6, name)
		}
	}
	for _, f := range fs {
		if len(f.Fields) > 1 {
			assert.Equal(t, "node1", f.Fields[1].Labels["hostname"], f.Name)
		}
	}
}
