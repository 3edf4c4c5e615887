package plugin

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Item 2: target a has TTFT bounds {0.1, 1} with every request at 0.05 s,
// target b has {0.5} with every request at 0.3 s, 2 requests per 15 s scrape
// each. Adding their buckets put b's requests above 1 s (p75 "clamped at 1 s,
// the true value is higher"); merged as distributions, the true p75 and p90
// (0.3 s) lie inside the bounds and a notice names the layouts.
func TestDifferentBucketLayoutsAcrossTargets(t *testing.T) {
	h := newHandHistory(t)
	t0 := time.Unix(1_700_000_100, 0)
	fa, fb := newHandHist(0.1, 1), newHandHist(0.5)
	m := map[string]string{"model_name": "m"}
	for i := 0; i <= 40; i++ {
		if i > 0 {
			fa.observe(0.05, 2)
			fb.observe(0.3, 2)
		}
		ts := t0.Add(time.Duration(i) * 15 * time.Second)
		h.scrape(ts, "a", "vllm:time_to_first_token_seconds", m, fa)
		h.scrape(ts, "b", "vllm:time_to_first_token_seconds", m, fb)
	}
	inst := h.instance(histTarget("a"), histTarget("b"))
	for _, groupBy := range []string{"none", "model"} {
		dr := runHistQuery(t, inst, t0.Add(5*time.Minute), t0.Add(10*time.Minute), time.Minute, map[string]any{
			"queryType": "latency", "stages": []string{"ttft"}, "stats": []string{"p25", "p75", "p90"}, "groupBy": groupBy, "window": "5m"})
		require.NoError(t, dr.Error)
		requireFinite(t, dr, groupBy)
		f := fieldsBy(dr, "stat", "bound")
		require.Len(t, f, 9, groupBy)
		// By hand (equal request rates r): merged interpolated cumulative rate at 0.1 is
		// r + r·0.1/0.5 = 1.2r, at 0.5 it is 2r. p75 (rank 1.5r) = 0.1 + 0.4·0.3/0.8 = 0.25,
		// p90 (rank 1.8r) = 0.1 + 0.4·0.6/0.8 = 0.4; both certainly ≤ 0.5, possibly ≤ 0.1.
		for stat, want := range map[string]float64{"p75": 0.25, "p90": 0.4} {
			v, _ := lastFloat(f[stat+"/"])
			lo, _ := lastFloat(f[stat+"/lower"])
			hi, _ := lastFloat(f[stat+"/upper"])
			assert.InDelta(t, want, v, 1e-9, "%s %s", groupBy, stat)
			assert.Equal(t, 0.0, lo, "%s %s lower", groupBy, stat)
			assert.Equal(t, 0.5, hi, "%s %s upper", groupBy, stat)
			assert.True(t, lo <= 0.3 && 0.3 <= hi, "the true value 0.3 s lies in the band")
		}
		// p25 (rank 0.5r): at least r requests are ≤ 0.1 → upper 0.1, value 0.1·0.5/1.2.
		v, _ := lastFloat(f["p25/"])
		hi, _ := lastFloat(f["p25/upper"])
		assert.InDelta(t, 0.1*0.5/1.2, v, 1e-9)
		assert.Equal(t, 0.1, hi)
		notes := strings.Join(responseNotices(dr), "\n")
		assert.Contains(t, notes, "bucket layouts differ across target (a: 0.1, 1; b: 0.5)", groupBy)
		assert.NotContains(t, notes, "clamped", groupBy)
	}
	// Grouped by target, each target's own histogram: a's p90 is 0.09 in [0, 0.1], b's 0.45 in [0, 0.5].
	dr := runHistQuery(t, inst, t0.Add(5*time.Minute), t0.Add(10*time.Minute), time.Minute, map[string]any{
		"queryType": "latency", "stages": []string{"ttft"}, "stats": []string{"p90"}, "groupBy": "target", "window": "5m"})
	require.NoError(t, dr.Error)
	f := fieldsBy(dr, "target", "bound")
	va, _ := lastFloat(f["a/"])
	vb, _ := lastFloat(f["b/"])
	assert.InDelta(t, 0.09, va, 1e-9)
	assert.InDelta(t, 0.45, vb, 1e-9)
	assert.NotContains(t, strings.Join(responseNotices(dr), "\n"), "layouts differ")
}
