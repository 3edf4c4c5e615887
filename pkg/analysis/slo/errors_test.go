package slo

import (
	"testing"
	"time"

	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func smp(v float64, kv ...string) *model.Sample {
	m := model.Metric{}
	for i := 0; i < len(kv); i += 2 {
		m[model.LabelName(kv[i])] = model.LabelValue(kv[i+1])
	}
	return &model.Sample{Metric: m, Value: model.SampleValue(v)}
}

func TestErrorRatioFromHTTPAndFinishes(t *testing.T) {
	// The inference handler served 960 2xx, 20 4xx and 20 5xx; the engine
	// finished 970 (stop 950, length 20), none with error or abort.
	in := ErrorInputs{
		HTTP: model.Vector{
			smp(960, "job", "a", "status", "2xx"), smp(20, "job", "a", "status", "4xx"), smp(20, "job", "a", "status", "5xx"),
		},
		Finishes: model.Vector{smp(950, "job", "a", "model_name", "m", "finished_reason", "stop"), smp(20, "job", "a", "model_name", "m", "finished_reason", "length")},
	}
	// Error ratio 20 / 1000 = 2 %: at target 0.98 the burn is exactly 1.
	bs, notes := ErrorRatioCounts(in, ErrorOptions{}, nil)
	require.Len(t, bs, 1)
	assert.Empty(t, notes)
	c := bs[0].Counts
	assert.Equal(t, Counts{Good: 980, GoodLower: 980, GoodUpper: 980, Total: 1000}, c)
	assert.InDelta(t, 1, BurnRate(c, 0.98), 1e-9)
	// With 4xx included: 40 / 1000 = 4 %.
	bs, _ = ErrorRatioCounts(in, ErrorOptions{Include4xx: true}, nil)
	assert.Equal(t, 960.0, bs[0].Counts.Good)
	// Grouped by model: the HTTP counter has no model label; the target
	// serves only m, so its requests go to m.
	bs, notes = ErrorRatioCounts(in, ErrorOptions{}, []string{"model"})
	require.Len(t, bs, 1)
	assert.Empty(t, notes)
	assert.Equal(t, map[string]string{"model": "m"}, bs[0].Group.Labels)
	assert.Equal(t, 1000.0, bs[0].Counts.Total)
}

func TestErrorRatioRejectionsAndEngineErrors(t *testing.T) {
	// 1000 inference requests: 975 2xx, 25 5xx of which 8 admission
	// rejections (503 before the engine); 5 engine error finishes (streamed
	// after a 200, or answered 500: not exported which) and 12 aborts.
	in := ErrorInputs{
		HTTP:       model.Vector{smp(975, "job", "a", "status", "2xx"), smp(25, "job", "a", "status", "5xx")},
		Finishes:   model.Vector{smp(950, "job", "a", "finished_reason", "stop"), smp(5, "job", "a", "finished_reason", "error"), smp(12, "job", "a", "finished_reason", "abort")},
		Rejections: model.Vector{smp(8, "job", "a", "reason", "queue_full")},
	}
	// X = 25, Y = 5, R = 8: bad in [max(25, 8 + 5), 25 + 5] = [25, 30];
	// point 30 (the pessimistic count), favourable 25.
	bs, _ := ErrorRatioCounts(in, ErrorOptions{}, nil)
	assert.Equal(t, Counts{Good: 970, GoodLower: 970, GoodUpper: 975, Total: 1000}, bs[0].Counts)
	assert.Equal(t, 8.0, bs[0].Rejections)
	// Aborts included: Y = 17 → [max(25, 25), 42].
	bs, _ = ErrorRatioCounts(in, ErrorOptions{IncludeAborts: true}, nil)
	assert.Equal(t, Counts{Good: 958, GoodLower: 958, GoodUpper: 975, Total: 1000}, bs[0].Counts)
	// Favourable bound of the burn at target 0.98: 25/1000/0.02 = 1.25;
	// pessimistic 42/1000/0.02 = 2.1.
	f, p := BurnBracket(bs[0].Counts, 0.98)
	assert.InDelta(t, 1.25, f, 1e-9)
	assert.InDelta(t, 2.1, p, 1e-9)
}

func TestErrorRatioWithoutHTTPCounter(t *testing.T) {
	// No http_requests_total (a server without the instrumentator): total =
	// finishes + rejections = 990 + 4 + 6 + 10 = 1010, bad = errors +
	// rejections = 4 + 10 = 14 (aborts: + 6 = 20 with IncludeAborts).
	in := ErrorInputs{
		Finishes:   model.Vector{smp(990, "job", "b", "finished_reason", "stop"), smp(4, "job", "b", "finished_reason", "error"), smp(6, "job", "b", "finished_reason", "abort")},
		Rejections: model.Vector{smp(10, "job", "b")},
	}
	bs, _ := ErrorRatioCounts(in, ErrorOptions{}, nil)
	require.Len(t, bs, 1)
	assert.True(t, bs[0].NoHTTP)
	assert.Equal(t, Counts{Good: 996, GoodLower: 996, GoodUpper: 996, Total: 1010}, bs[0].Counts)
	bs, _ = ErrorRatioCounts(in, ErrorOptions{IncludeAborts: true}, nil)
	assert.Equal(t, 990.0, bs[0].Counts.Good)
	// Two targets added under groupBy none: a (HTTP, 20 bad of 1000) and b
	// (14 of 1010): 34 of 2010.
	in.HTTP = model.Vector{smp(980, "job", "a", "status", "2xx"), smp(20, "job", "a", "status", "503")}
	bs, _ = ErrorRatioCounts(in, ErrorOptions{}, nil)
	assert.Equal(t, 2010.0, bs[0].Counts.Total)
	assert.Equal(t, 2010.0-34, bs[0].Counts.Good)
	bs, _ = ErrorRatioCounts(in, ErrorOptions{}, []string{"target"})
	require.Len(t, bs, 2)
	assert.Equal(t, 980.0, bs[0].Counts.Good)
	assert.False(t, bs[0].NoHTTP)
}

func TestAvailabilityCountsDownTime(t *testing.T) {
	// One hour at 1-minute resolution. Target a answered and served for 55
	// minutes, was down (up = 0) for 5: availability 55/60 = 0.9167; at
	// target 0.999 the burn is (5/60)/0.001 = 83.3. Target b was up all hour
	// but stalled for 6 minutes (serving 0) and the collector has no sample
	// for 4 further minutes (unknown, left out): 50 of 56 known minutes.
	good := model.Vector{smp(55, "job", "a"), smp(50, "job", "b")}
	known := model.Vector{smp(60, "job", "a"), smp(56, "job", "b")}
	groups, cs := AvailabilityVector(good, known, time.Minute, []string{"target"})
	require.Len(t, groups, 2)
	a, b := cs[groups[0].Key], cs[groups[1].Key]
	assert.Equal(t, Counts{Good: 3300, GoodLower: 3300, GoodUpper: 3300, Total: 3600}, a)
	assert.InDelta(t, (5.0/60)/0.001, BurnRate(a, 0.999), 1e-9)
	assert.Equal(t, 3000.0, b.Good)
	assert.Equal(t, 3360.0, b.Total)
	// groupBy none: 105 of 116 minutes.
	groups, cs = AvailabilityVector(good, known, time.Minute, nil)
	require.Len(t, groups, 1)
	assert.Equal(t, 105*60.0, cs[""].Good)
	assert.Equal(t, 116*60.0, cs[""].Total)
	// A dead server is bad time, never "no traffic": 0 of 60 → budget
	// 1 − 1/0.001 = −999.
	_, cs = AvailabilityVector(model.Vector{smp(0, "job", "dead")}, model.Vector{smp(60, "job", "dead")}, time.Minute, nil)
	assert.InDelta(t, -999, BudgetRemaining(cs[""], 0.999).Remaining, 1e-9)

	// The same as a range result: a is down in minutes 10-14 → a 5-minute
	// window ending at minute 14 holds 5 bad minutes (burn 1000), the 1h
	// window 5 of 60.
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var steps []time.Time
	var vals []model.SamplePair
	for i := range 60 {
		ts := t0.Add(time.Duration(i+1) * time.Minute)
		steps = append(steps, ts)
		v := 1.0
		if i >= 10 && i < 15 {
			v = 0
		}
		vals = append(vals, model.SamplePair{Timestamp: model.TimeFromUnixNano(ts.UnixNano()), Value: model.SampleValue(v)})
	}
	gs, hs := AvailabilityHistory(model.Matrix{{Metric: model.Metric{"job": "a"}, Values: vals}}, steps, time.Minute, nil)
	require.Len(t, gs, 1)
	h := hs[gs[0].Key]
	assert.InDelta(t, 1000, BurnRate(h.Window(5 * time.Minute)[14], 0.999), 1e-9)
	assert.InDelta(t, (5.0/60)/0.001, BurnRate(h.Window(time.Hour)[59], 0.999), 1e-9)
}

func TestBurnDownAndCalendarMonth(t *testing.T) {
	// Hourly steps ending 2026-01-31 21:00 … 2026-02-01 03:00 (7 steps), 100
	// requests each; 2 bad in every step that lies in January (ends ≤ 00:00),
	// 1 bad in February's. Target 0.99 allows 1 bad per 100.
	t0 := time.Date(2026, 1, 31, 21, 0, 0, 0, time.UTC)
	h := History{Resolution: time.Hour}
	for i := range 7 {
		ts := t0.Add(time.Duration(i) * time.Hour)
		bad := 2.0
		if ts.After(time.Date(2026, 2, 1, 0, 0, 0, 0, time.UTC)) {
			bad = 1
		}
		h.Times = append(h.Times, ts)
		h.Counts = append(h.Counts, ErrorCounts(bad, 100))
	}
	cal := h.BurnDown(0.99, 30*day, true)
	// 22:00: two January steps, 4 bad of 200 = 2 % → 1 − 2 = −1.
	assert.InDelta(t, -1, cal[1].Remaining, 1e-9)
	// 23:00: 6 of 300 → −1. At Feb 1 00:00 February has begun and holds no
	// step yet (23:00-00:00 is January's): 100 %.
	assert.InDelta(t, -1, cal[2].Remaining, 1e-9)
	assert.Equal(t, 1.0, cal[3].Remaining)
	// 01:00: the month starts again: 1 of 100 → 0; 03:00: 3 of 300 → 0.
	assert.InDelta(t, 0, cal[4].Remaining, 1e-9)
	assert.InDelta(t, 0, cal[6].Remaining, 1e-9)
	// Rolling 3 d at 03:00: all 7 steps, 4·2 + 3·1 = 11 of 700 → 1 − 11/7.
	roll := h.BurnDown(0.99, 3*day, false)
	assert.InDelta(t, 1-11.0/7, roll[6].Remaining, 1e-9)
	// Rolling 2 h at 03:00: the steps ending 02:00 and 03:00, 2 of 200 → 0.
	assert.InDelta(t, 0, h.BurnDown(0.99, 2*time.Hour, false)[6].Remaining, 1e-9)

	assert.Equal(t, 31*day, MonthLength(t0))
	assert.Equal(t, 28*day, MonthLength(t0.Add(4*time.Hour)))
	assert.Equal(t, time.Date(2026, 2, 1, 0, 0, 0, 0, time.UTC), PeriodStart(t0.Add(5*time.Hour), 0, true))
	// A 31-day month's 1h/5m page factor: 0.02·744 = 14.88.
	assert.InDelta(t, 14.88, PlanRows(MonthLength(t0), 0.99)[0].Factor, 1e-9)
}
