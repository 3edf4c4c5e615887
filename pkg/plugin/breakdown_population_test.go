package plugin

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Item 4: a vLLM target (queue 0.1, prefill 0.3, decode 0.5, inference 0.8,
// E2E 1.0 s per request) and an SGLang target without inference (queue 0.2,
// E2E 3.0 s), 2 requests per 15 s scrape each. Under groupBy none, E2E
// averaged over both minus inference of vLLM alone gave "overhead 0.9 s";
// every part of the row now averages vLLM's requests (overhead 0.1 s) and a
// notice says the SGLang target was left out and why.
func TestBreakdownRowsFromOneTargetPopulation(t *testing.T) {
	h := newHandHistory(t)
	t0 := time.Unix(1_700_000_100, 0)
	m := map[string]string{"model_name": "m"}
	values := map[string]float64{
		"vllm:request_queue_time_seconds": 0.1, "vllm:request_prefill_time_seconds": 0.3, "vllm:request_decode_time_seconds": 0.5,
		"vllm:request_inference_time_seconds": 0.8, "vllm:e2e_request_latency_seconds": 1.0,
	}
	vllm := map[string]*handHist{}
	for name := range values {
		vllm[name] = newHandHist(0.5, 2.5)
	}
	sg := map[string]*handHist{"sglang:queue_time_seconds": newHandHist(0.5, 2.5), "sglang:e2e_request_latency_seconds": newHandHist(0.5, 2.5)}
	sgValues := map[string]float64{"sglang:queue_time_seconds": 0.2, "sglang:e2e_request_latency_seconds": 3.0}
	for i := 0; i <= 40; i++ {
		ts := t0.Add(time.Duration(i) * 15 * time.Second)
		for name, f := range vllm {
			if i > 0 {
				f.observe(values[name], 2)
			}
			h.scrape(ts, "a", name, m, f)
		}
		for name, f := range sg {
			if i > 0 {
				f.observe(sgValues[name], 2)
			}
			h.scrape(ts, "b", name, m, f)
		}
	}
	inst := h.instance(histTarget("a"), histTarget("b"))
	from, to := t0.Add(5*time.Minute), t0.Add(10*time.Minute)

	dr := runHistQuery(t, inst, from, to, time.Minute, map[string]any{"queryType": "breakdown", "window": "5m"})
	require.NoError(t, dr.Error)
	f := fieldsBy(dr, "stage")
	for stage, want := range map[string]float64{"queue": 0.1, "prefill": 0.3, "decode": 0.5, "overhead": 0.1} {
		v, at := lastFloat(f[stage])
		require.NotNil(t, at, stage)
		assert.InDelta(t, want, v, 1e-9, stage)
	}
	notes := strings.Join(responseNotices(dr), "\n")
	assert.Contains(t, notes, "breakdown: target b is left out of every stage in 6 of 6 steps because it has no prefill_time, decode_time, inference_time")

	// The table: same population, and the request count is vLLM's alone (2 per 15 s over 5 min).
	dr = runHistQuery(t, inst, from, to, time.Minute, map[string]any{"queryType": "breakdown", "format": "table"})
	require.NoError(t, dr.Error)
	fr := dr.Frames[0]
	require.Equal(t, 1, fr.Rows())
	for col, want := range map[string]float64{"queue": 0.1, "prefill": 0.3, "decode": 0.5, "overhead": 0.1, "e2e": 1.0, "requests": 40} {
		fld, _ := fr.FieldByName(col)
		require.NotNil(t, fld, col)
		assert.InDelta(t, want, *fld.At(0).(*float64), 1e-6, col)
	}
	assert.Contains(t, strings.Join(responseNotices(dr), "\n"), "breakdown: target b is left out of every stage because it has no prefill_time")

	// Grouped by target, b's row has its own queue and nothing it cannot support.
	dr = runHistQuery(t, inst, from, to, time.Minute, map[string]any{"queryType": "breakdown", "groupBy": "target", "window": "5m"})
	require.NoError(t, dr.Error)
	f = fieldsBy(dr, "target", "stage")
	q, _ := lastFloat(f["b/queue"])
	assert.InDelta(t, 0.2, q, 1e-9)
	_, at := lastFloat(f["b/overhead"])
	assert.Nil(t, at, "no inference histogram: no overhead")
	o, _ := lastFloat(f["a/overhead"])
	assert.InDelta(t, 0.1, o, 1e-9)
}
