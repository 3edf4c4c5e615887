package asgrafana

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/data"
	"github.com/grafana/grafana-plugin-sdk-go/genproto/pluginv2"
	"github.com/prometheus/prometheus/promql"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const (
	ttftBase = "vllm:time_to_first_token_seconds"
	e2eBase  = "vllm:e2e_request_latency_seconds"
)

// sloFixture is one replayed vLLM 0.11 target whose counters grow at the
// vllmModel's known rates, and a data source with two SLO profiles.
type sloFixture struct {
	model vllmModel
	page  *linearPage
	host  *pluginHost
	ds    dataSource
	start time.Time
}

// TestAsGrafanaSLO drives the slo, burn_rate, goodput and buckets query
// types (and latency with a profile) through the built plugin binary, with
// every expected number computed from the replay's model: attainment with
// promql.BucketFraction on the model's bucket rates, quantiles with
// promql.BucketQuantile, error ratios from the finish-reason rates.
func TestAsGrafanaSLO(t *testing.T) {
	if _, err := os.Stat(pageV1); err != nil {
		t.Skipf("testdata page missing: %v", err)
	}
	f := &sloFixture{model: newVLLMModel()}
	f.page = newLinearPage(t, f.model)
	settings := map[string]any{
		"scrapeInterval": "1s",
		"scrapeTimeout":  "500ms",
		"targets":        []map[string]any{{"name": "vllm-v1", "url": serve(t, f.page)}},
		"sloProfiles": []map[string]any{
			{"name": "chat", "objectives": []map[string]any{
				// 0.3 s is not a TTFT bound (0.25 and 0.5 are).
				{"name": "ttft-300ms", "signal": "ttft", "threshold": 0.3, "target": 0.9},
				// The page spells its bound le="2.0".
				{"name": "e2e-2s", "signal": "e2e", "threshold": 2, "target": 0.5},
				// Aborts count only when asked (issue 19: vLLM V1's abort includes client disconnects).
				{"name": "errors", "kind": "error_ratio", "target": 0.99, "includeAborts": true},
			}},
			{"name": "fast", "objectives": []map[string]any{
				{"name": "ttft-1s", "signal": "ttft", "threshold": 1, "target": 0.9},
				{"name": "e2e-10s", "signal": "e2e", "threshold": 10, "target": 0.9},
			}},
		},
	}
	jd, err := json.Marshal(settings)
	require.NoError(t, err)
	f.ds = dataSource{id: 11, uid: "inferscope-slo", jsonData: jd, secure: map[string]string{}, updatedMS: time.Now().UnixMilli()}
	f.host = startPlugin(t)
	f.start = time.Now()
	deadline := time.Now().Add(40 * time.Second)
	for f.page.scrapes() < 24 {
		require.True(t, time.Now().Before(deadline), "replay not scraped 24 times in 40 s (%d)", f.page.scrapes())
		// Queries keep the instance (and its collector) alive.
		f.host.query(t, f.ds, time.Now().Add(-time.Minute), time.Now(), map[string]map[string]any{"T": {"queryType": "targets"}})
		time.Sleep(250 * time.Millisecond)
	}
	t.Run("slo", f.testSLO)
	t.Run("burn_rate/alert-rule", f.testBurnRateAlertRule)
	t.Run("goodput", f.testGoodput)
	t.Run("buckets", f.testBuckets)
	t.Run("latency/profile-thresholds", f.testLatencyThresholds)
	t.Run("bad-profile", f.testBadProfile)
}

func (f *sloFixture) query(t *testing.T, m map[string]any) queryResult {
	t.Helper()
	to := time.Now().Add(-1500 * time.Millisecond)
	r := f.host.query(t, f.ds, f.start, to, map[string]map[string]any{"A": m})["A"]
	require.Empty(t, r.err, "query %v failed (status %d, source %s)", m, r.status, r.source)
	return r
}

// fraction is the oracle attainment: Prometheus's histogram_fraction on the
// model's bucket rates over the page's own bounds.
func (f *sloFixture) fraction(base string, threshold float64) float64 {
	return promql.BucketFraction(math.Inf(-1), threshold, f.page.buckets(base))
}

func (f *sloFixture) testSLO(t *testing.T) {
	r := f.query(t, map[string]any{"queryType": "slo", "profile": "chat"})
	require.Len(t, r.frames, 1)
	fr := r.frames[0]
	requirePromQLMeta(t, r.frames, data.FrameTypeTable, "slo")
	notices := allNotices(r.frames)

	// ttft-300ms: interpolated between le=0.25 and le=0.5, flagged, with the
	// exact fractions at those bounds as its bracket.
	row := tableRow(t, fr, "objective", "ttft-300ms")
	ttft := f.model.hist(ttftBase)
	att := f.fraction(ttftBase, 0.3)
	requireNear(t, att, cellFloat(t, fr, "attainment", row), rel, "ttft attainment")
	requireNear(t, ttft.cdf(0.25), cellFloat(t, fr, "attainment_lower", row), rel, "ttft attainment lower")
	requireNear(t, ttft.cdf(0.5), cellFloat(t, fr, "attainment_upper", row), rel, "ttft attainment upper")
	assert.Equal(t, "false", cellString(t, fr, "threshold_exact", row))
	require.True(t, containsText(notices, "0.3 s is not a bucket bound: it lies between le=0.25 and le=0.5"), "notices: %v", notices)
	qv, ql, qu := quantileOracle(0.9, f.page.buckets(ttftBase))
	requireNear(t, qv, cellFloat(t, fr, "quantile", row), rel, "ttft p90")
	requireNear(t, ql, cellFloat(t, fr, "quantile_lower", row), rel, "ttft p90 lower")
	requireNear(t, qu, cellFloat(t, fr, "quantile_upper", row), rel, "ttft p90 upper")
	burn := (1 - att) / (1 - 0.9)
	requireNear(t, 1-burn, cellFloat(t, fr, "budget_remaining", row), rel, "ttft budget")
	requireNear(t, burn, cellFloat(t, fr, "burn_5m", row), rel, "ttft burn 5m")
	// The store holds seconds: every longer window would read the same requests as 5m, so
	// none has a burn rate yet (issue 33: with an hour stored, 2h … 3d repeated the 1h one).
	for _, w := range []string{"30m", "1h", "2h", "6h", "1d", "3d"} {
		require.True(t, math.IsNaN(cellFloat(t, fr, "burn_"+w, row)), "ttft burn %s from seconds of history", w)
	}
	// The store holds seconds, not the hour of the shortest long window: no
	// burn-rate row is evaluated, whatever the burn (issue 19), and the table says so.
	assert.Equal(t, "ok", cellString(t, fr, "status", row))
	assert.Equal(t, 0.0, cellFloat(t, fr, "status_value", row))
	assert.Equal(t, "page 6h/30m, ticket 1d/2h, ticket 3d/6h", cellString(t, fr, "not_evaluated", row))
	// At target 0.9 no burn exceeds 1/(1 − 0.9) = 10: the 1h/5m row (14.4) can never fire.
	assert.Contains(t, cellString(t, fr, "never_fires", row), "row page 1h/5m can never fire for a 30d period at target 0.9")
	assert.Contains(t, cellString(t, fr, "reason", row), "not evaluated")

	// e2e-2s against le="2.0": exact, bracket collapsed.
	row = tableRow(t, fr, "objective", "e2e-2s")
	e2e := f.model.hist(e2eBase).cdf(2)
	requireNear(t, e2e, cellFloat(t, fr, "attainment", row), rel, "e2e attainment at le=\"2.0\"")
	requireNear(t, e2e, cellFloat(t, fr, "attainment_lower", row), rel, "e2e lower")
	requireNear(t, e2e, cellFloat(t, fr, "attainment_upper", row), rel, "e2e upper")
	assert.Equal(t, "true", cellString(t, fr, "threshold_exact", row))
	requireNear(t, 1-(1-e2e)/0.5, cellFloat(t, fr, "budget_remaining", row), rel, "e2e budget")

	// errors (aborts included): abort 0.1 of 2.0 finished per second → 5 % bad, 1 % allowed.
	row = tableRow(t, fr, "objective", "errors")
	requireNear(t, 0.95, cellFloat(t, fr, "attainment", row), rel, "error-ratio attainment")
	requireNear(t, -4, cellFloat(t, fr, "budget_remaining", row), rel, "error-ratio budget")
	// The 5m window: seconds of history give no 1h burn rate (issue 33).
	requireNear(t, 5, cellFloat(t, fr, "burn_5m", row), rel, "error-ratio burn 5m")
	require.True(t, math.IsNaN(cellFloat(t, fr, "burn_1h", row)), "error-ratio burn 1h from seconds of history")
	assert.Equal(t, "ok", cellString(t, fr, "status", row), "no row is evaluated on seconds of history")

	// The history is the few seconds collected, far short of 30 days.
	hist := cellFloat(t, fr, "history", row)
	elapsed := time.Since(f.start).Seconds()
	assert.True(t, hist > 5 && hist <= elapsed+2, "history %v s, %v s elapsed", hist, elapsed)
	require.True(t, containsText(notices, "the stored history covers about"), "notices: %v", notices)
}

// testBurnRateAlertRule sends what a Grafana-managed alert rule sends: the
// stored query model (no front end), a relative range and Grafana's alerting
// header, and checks that every frame is one series with a unique label set.
func (f *sloFixture) testBurnRateAlertRule(t *testing.T) {
	model := map[string]any{
		"refId":         "A",
		"datasource":    map[string]any{"type": pluginID, "uid": f.ds.uid},
		"queryType":     "burn_rate",
		"profile":       "chat",
		"objectives":    []string{"errors", "e2e-2s"},
		"intervalMs":    1000,
		"maxDataPoints": 43200,
	}
	b, err := json.Marshal(model)
	require.NoError(t, err)
	// The range ends 3 s back: its last 4 s rate window is then scraped in
	// full even on a busy machine.
	now := time.Now().Add(-3 * time.Second)
	req := &pluginv2.QueryDataRequest{
		PluginContext: f.ds.pluginContext(),
		Headers:       map[string]string{"FromAlert": "true"},
		Queries: []*pluginv2.DataQuery{{
			RefId: "A", MaxDataPoints: 43200, IntervalMS: 1000, Json: b,
			TimeRange: &pluginv2.TimeRange{FromEpochMS: now.Add(-10 * time.Minute).UnixMilli(), ToEpochMS: now.UnixMilli()},
		}},
	}
	ctx, cancel := context.WithTimeout(context.Background(), rpcTimeout)
	defer cancel()
	resp, err := f.host.data.QueryData(ctx, req)
	require.NoError(t, err)
	dr := resp.Responses["A"]
	require.Empty(t, dr.Error)
	frames, err := data.UnmarshalArrowFrames(dr.Frames)
	require.NoError(t, err)
	seen := map[string]bool{}
	e2e := f.model.hist(e2eBase).cdf(2)
	want := map[string]float64{"errors": 5, "e2e-2s": (1 - e2e) / 0.5}
	statuses := 0
	for _, s := range seriesOf(t, frames) {
		key := s.labels.String()
		require.False(t, seen[key], "duplicate label set %s", key)
		seen[key] = true
		obj := s.labels["objective"]
		require.Contains(t, want, obj)
		if s.name == "status" {
			statuses++
			// Seconds of history: no row is evaluated yet (issue 19), status 0.
			requireLast(t, s, 0, 0, obj+" status")
			continue
		}
		require.NotEmpty(t, s.labels["window"], "burn series without window label: %s", key)
		if s.labels["window"] != "5m" {
			// Seconds of history: only the 5m window is drawn (issue 33).
			requireNoData(t, s, fmt.Sprintf("%s burn %s", obj, s.labels["window"]))
			continue
		}
		requireLast(t, s, want[obj], rel, fmt.Sprintf("%s burn %s", obj, s.labels["window"]))
	}
	assert.Equal(t, 2, statuses)
	assert.Len(t, seen, 2*8)
	for _, fr := range frames {
		require.Len(t, fr.Fields, 2, "an alert rule reduces one value field per frame")
	}
}

func (f *sloFixture) testGoodput(t *testing.T) {
	r := f.query(t, map[string]any{"queryType": "goodput", "profile": "fast", "window": "4s"})
	a := f.fraction(ttftBase, 1)
	b := f.fraction(e2eBase, 10)
	var lo, hi, req *series
	ss := seriesOf(t, r.frames)
	for k := range ss {
		switch {
		case ss[k].labels["bound"] == "lower":
			lo = &ss[k]
		case ss[k].labels["bound"] == "upper":
			hi = &ss[k]
		case ss[k].labels["stat"] == "requests":
			req = &ss[k]
		}
	}
	require.NotNil(t, lo)
	require.NotNil(t, hi)
	require.NotNil(t, req)
	rate := f.model.reqRate
	requireLast(t, *lo, math.Max(0, a+b-1)*rate, rel, "goodput lower")
	requireLast(t, *hi, math.Min(a, b)*rate, rel, "goodput upper")
	requireLast(t, *req, rate, rel, "request rate")
	assert.Equal(t, "reqps", lo.unit)
	require.True(t, containsText(allNotices(r.frames), "known only within bounds"))
}

func (f *sloFixture) testBuckets(t *testing.T) {
	r := f.query(t, map[string]any{"queryType": "buckets", "stages": []string{"ttft"}, "stats": []string{"p99"}, "thresholds": []float64{0.3, 0.25}})
	require.Len(t, r.frames, 1)
	fr := r.frames[0]
	require.Equal(t, 3, fr.Rows())
	qv, ql, qu := quantileOracle(0.99, f.page.buckets(ttftBase))
	requireNear(t, qv, cellFloat(t, fr, "value", 0), rel, "ttft p99")
	requireNear(t, ql, cellFloat(t, fr, "bucket_lower", 0), rel, "ttft p99 bucket lower")
	requireNear(t, qu, cellFloat(t, fr, "bucket_upper", 0), rel, "ttft p99 bucket upper")
	requireNear(t, (qu-ql)/qv, cellFloat(t, fr, "relative_width", 0), rel, "relative width")
	custom := cellString(t, fr, "custom_histogram_buckets", 0)
	var parsed map[string][]float64
	require.NoError(t, json.Unmarshal([]byte(custom), &parsed), custom)
	require.Contains(t, parsed, "time_to_first_token")
	// Every bound of the page is kept, plus the extra ones.
	assert.Greater(t, len(parsed["time_to_first_token"]), len(f.page.bounds[ttftBase])-1)
	// Rows are quantiles first, then thresholds in increasing order: 0.25 is a bound, 0.3 is not.
	assert.Equal(t, "threshold", cellString(t, fr, "kind", 1))
	assert.Equal(t, "true", cellString(t, fr, "exact", 1))
	assert.Equal(t, "false", cellString(t, fr, "exact", 2))
	assert.Equal(t, "[0.3]", cellString(t, fr, "extra_bounds", 2))
	requireNear(t, 0.25, cellFloat(t, fr, "bucket_lower", 2), rel, "0.3 s lower bound")
	requireNear(t, 0.5, cellFloat(t, fr, "bucket_upper", 2), rel, "0.3 s upper bound")
}

func (f *sloFixture) testLatencyThresholds(t *testing.T) {
	r := f.query(t, map[string]any{"queryType": "latency", "profile": "chat", "stages": []string{"ttft", "itl"}, "stats": []string{"p99"}})
	var ttft, itl int
	for _, fr := range r.frames {
		v := fr.Fields[1]
		switch v.Labels["stage"] {
		case "ttft":
			ttft++
			require.NotNil(t, v.Config.Thresholds, "ttft frame has no threshold")
			steps := v.Config.Thresholds.Steps
			require.Len(t, steps, 2)
			assert.Equal(t, 0.3, float64(steps[1].Value))
		case "itl":
			itl++
			assert.Nil(t, v.Config.Thresholds, "chat has no ITL objective")
		}
	}
	assert.Positive(t, ttft)
	assert.Positive(t, itl)
}

func (f *sloFixture) testBadProfile(t *testing.T) {
	r := f.host.query(t, f.ds, f.start, time.Now(), map[string]map[string]any{"A": {"queryType": "goodput"}, "B": {"queryType": "slo", "profile": "nope"}})
	assert.Contains(t, r["A"].err, "profile:")
	assert.Equal(t, int32(http.StatusBadRequest), r["A"].status)
	assert.True(t, strings.Contains(r["B"].err, `"nope" is not an SLO profile`), r["B"].err)
}
