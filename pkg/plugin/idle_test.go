package plugin

import (
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/backend"
	"github.com/grafana/grafana-plugin-sdk-go/data"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// busyThenIdle stores 30 minutes of a vLLM target "a" (model m) scraped every
// 15 s: for the first 10 minutes 2 requests per scrape, each with a TTFT of
// 2 s (bounds 0.1, 1: the p95 is clamped into the +Inf bucket) and an E2E of
// 3 s; then no requests at all, the counters unchanged but still scraped.
func busyThenIdle(t *testing.T) (*Instance, time.Time) {
	t.Helper()
	h := newHandHistory(t)
	t0 := time.Unix(1_700_000_100, 0)
	ttft, e2e := newHandHist(0.1, 1), newHandHist(0.5, 5)
	m := map[string]string{"model_name": "m"}
	finished := 0.0
	for i := 0; i <= 120; i++ {
		if i > 0 && i <= 40 {
			ttft.observe(2, 2)
			e2e.observe(3, 2)
			finished += 2
		}
		ts := t0.Add(time.Duration(i) * 15 * time.Second)
		h.scrape(ts, "a", "vllm:time_to_first_token_seconds", m, ttft)
		h.scrape(ts, "a", "vllm:e2e_request_latency_seconds", m, e2e)
		h.sample(ts, "a", "vllm:request_success_total", map[string]string{"model_name": "m", "finished_reason": "stop"}, finished)
		h.sample(ts, "a", "vllm:prompt_tokens_total", m, finished*100)
	}
	return h.instance(histTarget("a")), t0
}

// requireFinite asserts that no number field of a response holds ±Inf or NaN.
func requireFinite(t *testing.T, dr backend.DataResponse, what string) {
	t.Helper()
	for _, f := range dr.Frames {
		for _, fld := range f.Fields {
			for i := 0; i < fld.Len(); i++ {
				var v float64
				switch x := fld.At(i).(type) {
				case *float64:
					if x == nil {
						continue
					}
					v = *x
				case float64:
					v = x
				default:
					continue
				}
				require.False(t, math.IsInf(v, 0) || math.IsNaN(v), "%s: %s row %d is %v", what, fld.Name, i, v)
			}
		}
	}
}

// reduceLastStrict is Grafana's Reduce expression "Last" in its default
// strict mode: the last value of the series, NaN when it is null or the
// series is empty.
func reduceLastStrict(f *data.Field) float64 {
	if f.Len() == 0 {
		return math.NaN()
	}
	if p := f.At(f.Len() - 1).(*float64); p != nil {
		return *p
	}
	return math.NaN()
}

// reduceLastDropNN is "Last" in "Drop non-numeric values" mode: the last
// value that is a number (not null, NaN or ±Inf); NaN when there is none.
func reduceLastDropNN(f *data.Field) float64 {
	for i := f.Len() - 1; i >= 0; i-- {
		if p := f.At(i).(*float64); p != nil && !math.IsNaN(*p) && !math.IsInf(*p, 0) {
			return *p
		}
	}
	return math.NaN()
}

// Item 8: an alert rule "latency p95 (or its upper bound, or the mean),
// reduce last, is above 1 s" over the last 5 minutes, evaluated every minute
// on a model that went idle, neither fires nor flaps; no number field ever
// carries ±Inf or NaN, busy or idle.
func TestIdleModelAlertNeitherFiresNorFlaps(t *testing.T) {
	inst, t0 := busyThenIdle(t)
	lat := map[string]any{"queryType": "latency", "stages": []string{"ttft", "e2e"}, "stats": []string{"mean", "p95"}, "groupBy": "target", "window": "5m"}

	// While busy, the clamped p95's upper edge is unknown: null with a notice, never +Inf.
	busy := runHistQuery(t, inst, t0.Add(4*time.Minute), t0.Add(9*time.Minute), time.Minute, lat)
	require.NoError(t, busy.Error)
	requireFinite(t, busy, "busy latency")
	byKey := fieldsBy(busy, "stage", "stat", "bound")
	p95, at := lastFloat(byKey["ttft/p95/"])
	require.NotNil(t, at)
	assert.Equal(t, 1.0, p95, "clamped at the highest finite bound")
	lo, _ := lastFloat(byKey["ttft/p95/lower"])
	assert.Equal(t, 1.0, lo)
	_, upAt := lastFloat(byKey["ttft/p95/upper"])
	assert.Nil(t, upAt, "the unbounded upper edge is null")
	assert.Contains(t, strings.Join(responseNotices(busy), "\n"), "upper bound is unknown (null)")

	// Idle: evaluate as an alert rule does, every minute, over now-5m..now,
	// from the first minute whose 5-minute windows hold no request.
	var labelSets []string
	for now := t0.Add(16 * time.Minute); !now.After(t0.Add(30 * time.Minute)); now = now.Add(time.Minute) {
		dr := runHistQuery(t, inst, now.Add(-5*time.Minute), now, time.Minute, lat)
		require.NoError(t, dr.Error)
		requireFinite(t, dr, "idle latency at "+now.Format(time.TimeOnly))
		var keys []string
		for k, f := range fieldsBy(dr, "stage", "stat", "bound") {
			keys = append(keys, k)
			strict := reduceLastStrict(f)
			assert.True(t, math.IsNaN(strict), "%s at %s: last value %v, want null (no requests)", k, now.Format(time.TimeOnly), strict)
			assert.False(t, strict > 1, "strict reduce-last fires")
			// Dropping nulls reaches back to the range's first steps, whose
			// windows still held the busy minutes until now−5m−5m ≥ 10 min: only
			// then does that mode see nothing either (docs/values.md says to keep
			// the strict default for latency alerts).
			if !now.Before(t0.Add(20 * time.Minute)) {
				assert.False(t, reduceLastDropNN(f) > 1, "%s at %s: drop-non-numeric reduce-last fires", k, now.Format(time.TimeOnly))
			}
		}
		slices.Sort(keys)
		labelSets = append(labelSets, strings.Join(keys, ","))
	}
	for _, ls := range labelSets[1:] {
		assert.Equal(t, labelSets[0], ls, "the same series every evaluation (no series appearing or vanishing)")
	}
	assert.Contains(t, labelSets[0], "ttft/p95/upper")

	// Throughput of an idle model is a rate that exists and is 0, not null.
	now := t0.Add(30 * time.Minute)
	dr := runHistQuery(t, inst, now.Add(-5*time.Minute), now, time.Minute, map[string]any{"queryType": "throughput", "window": "5m"})
	require.NoError(t, dr.Error)
	requireFinite(t, dr, "idle throughput")
	for k, f := range fieldsBy(dr, "signal") {
		v, at := lastFloat(f)
		require.NotNil(t, at, k)
		assert.Equal(t, 0.0, v, k)
	}
	// The breakdown table of the idle range: 0 requests, means null.
	dr = runHistQuery(t, inst, now.Add(-5*time.Minute), now, time.Minute, map[string]any{"queryType": "breakdown", "format": "table", "window": "5m"})
	require.NoError(t, dr.Error)
	requireFinite(t, dr, "idle breakdown")
	f := dr.Frames[0]
	e2eField, _ := f.FieldByName("e2e")
	require.NotNil(t, e2eField)
	assert.Nil(t, e2eField.At(0))
	reqField, _ := f.FieldByName("requests")
	assert.Equal(t, 0.0, *reqField.At(0).(*float64))
}
