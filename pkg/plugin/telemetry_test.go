package plugin

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/value"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestTelemetryMissing: target "a" (vLLM V1) exports TTFT buckets and the
// KV gauge for 20 minutes; at minute 10 the TTFT family leaves its page (the
// scrape loop then writes a staleness marker, as Prometheus does). Target
// "b" keeps both. A telemetry query over the last 15 minutes says TTFT is
// missing on "a" only (1), with a warning naming the family; KV is present
// on both (0). Over minutes 0–9 nothing is missing.
func TestTelemetryMissing(t *testing.T) {
	db := openDiagDB(t)
	t0 := time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)
	app := db.Appender(context.Background())
	add := func(job, name string, extra []string, k int, v float64) {
		kv := append([]string{"__name__", name, "job", job, "instance", job + ":8000", "model_name", "m"}, extra...)
		_, err := app.Append(0, labels.FromStrings(kv...), t0.Add(time.Duration(k)*15*time.Second).UnixMilli(), v)
		require.NoError(t, err)
	}
	const scrapes = 80 // 20 minutes at 15 s
	for k := 0; k < scrapes; k++ {
		for _, job := range []string{"a", "b"} {
			add(job, "up", nil, k, 1)
			add(job, "vllm:kv_cache_usage_perc", nil, k, 0.5)
			ttft := float64(10 * k)
			if job == "a" && k >= 40 {
				if k == 40 { // the first scrape without the family marks it stale
					for _, le := range []string{"0.5", "+Inf"} {
						add(job, "vllm:time_to_first_token_seconds_bucket", []string{"le", le}, k, math.Float64frombits(value.StaleNaN))
					}
				}
				continue
			}
			add(job, "vllm:time_to_first_token_seconds_bucket", []string{"le", "0.5"}, k, ttft)
			add(job, "vllm:time_to_first_token_seconds_bucket", []string{"le", "+Inf"}, k, ttft)
		}
	}
	require.NoError(t, app.Commit())
	js := []map[string]any{{"name": "a", "url": "http://a:8000/metrics"}, {"name": "b", "url": "http://b:8000/metrics"}}
	inst := diagInstance(t, db, 15*time.Second, js, nil)
	end := t0.Add(time.Duration(scrapes-1) * 15 * time.Second)

	dr := sloRun(t, inst, map[string]any{"queryType": "targets", "format": "telemetry"}, end.Add(-15*time.Minute), end, 15*time.Second)
	require.NoError(t, dr.Error)
	got := map[string]float64{}
	for _, f := range dr.Frames {
		if len(f.Fields) == 0 {
			continue
		}
		l := f.Fields[0].Labels
		v, ok := f.Fields[0].ConcreteAt(0)
		require.True(t, ok)
		key := l["target"] + "/" + l["signal"]
		_, dup := got[key]
		require.False(t, dup, "label sets are unique: %s", key)
		got[key] = v.(float64)
	}
	assert.Equal(t, map[string]float64{"a/ttft": 1, "a/kv_cache_usage": 0, "b/ttft": 0, "b/kv_cache_usage": 0}, got)
	var warned bool
	for _, n := range dr.Frames[0].Meta.Notices {
		if n.Text == "target a stopped exporting ttft: vllm:time_to_first_token_seconds_bucket was stored in the range but is not on its latest scrape" {
			warned = true
		}
	}
	assert.True(t, warned, "notices: %v", dr.Frames[0].Meta.Notices)

	early := t0.Add(9 * time.Minute)
	dr = sloRun(t, inst, map[string]any{"queryType": "targets", "format": "telemetry"}, early.Add(-5*time.Minute), early, 15*time.Second)
	require.NoError(t, dr.Error)
	for _, f := range dr.Frames {
		if len(f.Fields) == 1 {
			v, _ := f.Fields[0].ConcreteAt(0)
			assert.Equal(t, 0.0, v, "%v before the family left", f.Fields[0].Labels)
		}
	}

	dr = sloRun(t, inst, map[string]any{"queryType": "targets", "format": "heatmap"}, early.Add(-5*time.Minute), early, 15*time.Second)
	require.ErrorContains(t, dr.Error, "format")
}
