package sanity

import (
	"math"
	"testing"
	"time"

	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var t0 = time.Date(2026, 11, 30, 22, 0, 0, 0, time.UTC)

// grid returns n steps of 15 s from t0.
func grid(n int) []time.Time {
	out := make([]time.Time, n)
	for i := range out {
		out[i] = t0.Add(time.Duration(i) * 15 * time.Second)
	}
	return out
}

func stream(labels model.Metric, from int, vals ...float64) *model.SampleStream {
	s := &model.SampleStream{Metric: labels}
	for i, v := range vals {
		s.Values = append(s.Values, model.SamplePair{Timestamp: model.TimeFromUnixNano(t0.Add(time.Duration(from+i) * 15 * time.Second).UnixNano()), Value: model.SampleValue(v)})
	}
	return s
}

func TestImpossibleValues(t *testing.T) {
	// What catalog.ImpossiblePromQL returns for a history in which engine 3 goes negative at
	// step 4 and stays so for 3 steps, and engine 1's running gauge reads NaN once at step 7.
	m := model.Matrix{
		stream(model.Metric{"job": "a", "engine": "3", "model_name": "m", "instance": "h:1"}, 4, -0.3875, -0.39, -0.4),
	}
	fs := ImpossibleValues("kv_cache_usage", m, 0, 1, "left out of the average")
	require.Len(t, fs, 1)
	f := fs[0]
	assert.Equal(t, "a", f.Target)
	assert.Equal(t, map[string]string{"engine": "3", "model_name": "m"}, f.Labels)
	assert.Equal(t, -0.3875, f.Value)
	assert.Equal(t, t0.Add(60*time.Second), f.At)
	assert.Equal(t, 3, f.Count)
	assert.Equal(t, `target a: kv_cache_usage {engine="3", model_name="m"} read -0.3875 at 2026-11-30 22:01:00 UTC (3 times in the range): a ratio outside 0..1, left out of the average`, f.Text())

	fs = ImpossibleValues("requests_running", model.Matrix{
		stream(model.Metric{"job": "b", "engine": "1"}, 7, math.NaN()),
		stream(model.Metric{"job": "a", "engine": "2"}, 2, math.Inf(1)),
		stream(model.Metric{"job": "a", "engine": "0"}, 5, -2),
	}, 0, math.Inf(1), "left out of the sum")
	require.Len(t, fs, 3)
	assert.Equal(t, []string{"a", "a", "b"}, []string{fs[0].Target, fs[1].Target, fs[2].Target})
	assert.Equal(t, "negative, which this quantity cannot be", fs[0].Why)
	assert.Equal(t, "infinite", fs[1].Why)
	assert.Equal(t, "not a number", fs[2].Why)
	assert.Contains(t, fs[2].Text(), "read NaN at 2026-11-30 22:01:45 UTC: not a number, left out of the sum")

	// A clean history selects nothing, so nothing is found.
	assert.Empty(t, ImpossibleValues("kv_cache_usage", model.Matrix{}, 0, 1, ""))
}

func TestCounterBackwards(t *testing.T) {
	// 100, 110, 120, 115 (backwards without a restart at step 3), 125, 3 (a restart at step
	// 5: the process counts again from zero), 10.
	m := model.Matrix{stream(model.Metric{"job": "a", "model_name": "m"}, 0, 100, 110, 120, 115, 125, 3, 10)}
	fs := CounterBackwards("generation_tokens", m, "its rate windows are left out")
	require.Len(t, fs, 1)
	assert.Equal(t, 115.0, fs[0].Value)
	assert.Equal(t, t0.Add(45*time.Second), fs[0].At)
	assert.Equal(t, 1, fs[0].Count)
	assert.Contains(t, fs[0].Text(), "went back from 120 without a restart")

	// The same shape with only the restart: clean.
	clean := model.Matrix{stream(model.Metric{"job": "a"}, 0, 100, 110, 120, 125, 130, 3, 10)}
	assert.Empty(t, CounterBackwards("generation_tokens", clean, ""))
	// A restart to exactly zero is a restart too.
	assert.Empty(t, CounterBackwards("x", model.Matrix{stream(model.Metric{"job": "a"}, 0, 10, 0, 2)}, ""))
}

func nanSlice(n int) []float64 {
	out := make([]float64, n)
	for i := range out {
		out[i] = math.NaN()
	}
	return out
}

// frozenHistory: 40 steps of 15 s. Load moves until step 19 (running and waiting change
// every step, tokens flow); from step 20 running holds 7, waiting 2 and KV 0.35, and, after a
// rate window of 4 steps, every counter rate is 0.
func frozenHistory(freeze bool) FrozenInput {
	const n = 40
	run, wait, kv := make([]float64, n), make([]float64, n), make([]float64, n)
	gen, prompt, fin := make([]float64, n), make([]float64, n), make([]float64, n)
	for i := 0; i < n; i++ {
		if i < 20 || !freeze {
			run[i], wait[i], kv[i] = float64(3+i%5), float64(i%3), 0.1+0.01*float64(i%7)
		} else {
			run[i], wait[i], kv[i] = 7, 2, 0.35
		}
		if i < 24 || !freeze {
			gen[i], prompt[i], fin[i] = 120, 300, 0.5
		}
	}
	return FrozenInput{Steps: grid(n), Gauges: map[string][]float64{
		"requests_running": run, "requests_waiting": wait, "kv_cache_usage": kv,
	}, Activity: [][]float64{prompt, gen, fin}, MinDuration: 150 * time.Second}
}

func TestFrozen(t *testing.T) {
	spans := Frozen(frozenHistory(true))
	require.Len(t, spans, 1)
	s := spans[0]
	// The gauges took their frozen values at step 20 (22:05:00) and never changed again.
	assert.Equal(t, t0.Add(20*15*time.Second), s.Since)
	assert.Equal(t, t0.Add(39*15*time.Second), s.Until)
	assert.True(t, s.ToEnd)
	assert.Equal(t, map[string]float64{"requests_running": 7, "requests_waiting": 2, "kv_cache_usage": 0.35}, s.Values)
	assert.Contains(t, s.Text("vllm-a"), "target vllm-a: request gauges frozen since 2026-11-30 22:05:00 UTC (kv_cache_usage 0.35, requests_running 7, requests_waiting 2)")

	// The same shape with load that keeps moving: nothing.
	assert.Empty(t, Frozen(frozenHistory(false)))

	// Steady gauges while tokens flow (a busy engine at a constant batch size): not frozen.
	busy := frozenHistory(true)
	for _, a := range busy.Activity {
		for i := range a {
			a[i] = 1
		}
	}
	assert.Empty(t, Frozen(busy))

	// An idle engine: gauges at 0, no activity: not frozen.
	idle := frozenHistory(true)
	for _, g := range idle.Gauges {
		for i := range g {
			g[i] = 0
		}
	}
	for _, a := range idle.Activity {
		for i := range a {
			a[i] = 0
		}
	}
	assert.Empty(t, Frozen(idle))

	// No activity series at all (an engine without counters): cannot tell, not frozen.
	none := frozenHistory(true)
	none.Activity = [][]float64{nanSlice(40)}
	assert.Empty(t, Frozen(none))

	// Too short: frozen for 285 s, less than the 300 s asked.
	short := frozenHistory(true)
	short.Steps, short.MinDuration = grid(40), 300*time.Second
	assert.Empty(t, Frozen(short))

	// A span that thaws: reported from … to ….
	thaw := frozenHistory(true)
	for i := 35; i < 40; i++ {
		thaw.Gauges["requests_running"][i] = float64(i)
		for _, a := range thaw.Activity {
			a[i] = 2
		}
	}
	spans = Frozen(thaw)
	require.Len(t, spans, 1)
	assert.False(t, spans[0].ToEnd)
	assert.Equal(t, t0.Add(34*15*time.Second), spans[0].Until)
	assert.Contains(t, spans[0].Text("x"), "frozen from 2026-11-30 22:05:00 to 22:08:30 UTC")
}

// histHistory builds one group's bucket, _sum and _count rate results over n steps of 15 s:
// clean (le 0.1: 2/s, 0.5: 8/s, +Inf: 10/s; _sum 2/s; _count 10/s, mean 0.2 s) until step
// from, then bad(step) rewrites the rates.
func histHistory(n, from int, bad func(b map[string]float64) (sum, count float64)) (model.Matrix, model.Matrix, model.Matrix) {
	les := []string{"0.1", "0.5", "+Inf"}
	bs := map[string]*model.SampleStream{}
	var buckets model.Matrix
	for _, le := range les {
		s := &model.SampleStream{Metric: model.Metric{"job": "a", "model_name": "m", "le": model.LabelValue(le)}}
		bs[le] = s
		buckets = append(buckets, s)
	}
	sum := &model.SampleStream{Metric: model.Metric{"job": "a", "model_name": "m"}}
	count := &model.SampleStream{Metric: model.Metric{"job": "a", "model_name": "m"}}
	for i := 0; i < n; i++ {
		ts := model.TimeFromUnixNano(t0.Add(time.Duration(i) * 15 * time.Second).UnixNano())
		b := map[string]float64{"0.1": 2, "0.5": 8, "+Inf": 10}
		s, c := 2.0, 10.0
		if i >= from && bad != nil {
			s, c = bad(b)
		}
		for _, le := range les {
			bs[le].Values = append(bs[le].Values, model.SamplePair{Timestamp: ts, Value: model.SampleValue(b[le])})
		}
		sum.Values = append(sum.Values, model.SamplePair{Timestamp: ts, Value: model.SampleValue(s)})
		count.Values = append(count.Values, model.SamplePair{Timestamp: ts, Value: model.SampleValue(c)})
	}
	return buckets, model.Matrix{sum}, model.Matrix{count}
}

func TestHistogramChecks(t *testing.T) {
	steps := grid(20)
	at := t0.Add(12 * 15 * time.Second)

	// Clean history: nothing.
	b, s, c := histHistory(20, 12, nil)
	assert.Empty(t, HistogramChecks("ttft", b, s, c, steps))

	// _count 12/s against a +Inf bucket of 10/s from step 12: 2/12 = 16.7 % apart.
	b, s, c = histHistory(20, 12, func(map[string]float64) (float64, float64) { return 2.4, 12 })
	fs := HistogramChecks("ttft", b, s, c, steps)
	require.Len(t, fs, 1)
	assert.Equal(t, "count", fs[0].Kind)
	assert.Equal(t, at, fs[0].At)
	assert.Equal(t, 8, fs[0].Count)
	assert.InDelta(t, 2.0/12, fs[0].Off, 1e-12)
	assert.Equal(t, `ttft {model="m", target="a"}: histogram inconsistent at 2026-11-30 22:03:00 UTC (8 steps): _count is 12/s but the +Inf bucket 10/s (17% apart); quantiles are still computed from the buckets`, fs[0].Text())
	// Without a _count query the check is skipped, the mean uses the +Inf bucket (0.24 s: fine).
	assert.Empty(t, HistogramChecks("ttft", b, s, nil, steps))

	// Every observation in the lowest bucket (≤ 0.1 s) while the mean is 2 s: 20× its bound.
	b, s, c = histHistory(20, 12, func(m map[string]float64) (float64, float64) {
		m["0.1"], m["0.5"], m["+Inf"] = 10, 10, 10
		return 20, 10
	})
	fs = HistogramChecks("e2e", b, s, c, steps)
	require.Len(t, fs, 1)
	assert.Equal(t, "lowest-bucket", fs[0].Kind)
	assert.Equal(t, at, fs[0].At)
	assert.InDelta(t, 20, fs[0].Off, 1e-12)
	assert.Contains(t, fs[0].Text(), "every observation is in the lowest bucket (≤ 0.1) but the mean is 2, 20× that bound")

	// Mean above the most the buckets allow: 2 at ≤ 0.1 and 8 at ≤ 0.5 allow at most
	// (2·0.1 + 8·0.5) / 10 = 0.42 s; a mean of 1 s is 2.38× that.
	b, s, c = histHistory(20, 12, func(m map[string]float64) (float64, float64) {
		m["0.5"] = 10
		return 10, 10
	})
	fs = HistogramChecks("itl", b, s, c, steps)
	require.Len(t, fs, 1)
	assert.Equal(t, "mean-high", fs[0].Kind)
	assert.InDelta(t, 1/0.42, fs[0].Off, 1e-12)

	// Mean below the least they allow: everything above 0.5 s (lowest edge 0.5) but mean 0.1 s.
	b, s, c = histHistory(20, 12, func(m map[string]float64) (float64, float64) {
		m["0.1"], m["0.5"] = 0, 0
		return 1, 10
	})
	fs = HistogramChecks("itl", b, s, c, steps)
	require.Len(t, fs, 1)
	assert.Equal(t, "mean-low", fs[0].Kind)
	assert.InDelta(t, 0.8, fs[0].Off, 1e-12)
	assert.Equal(t, at, fs[0].At)
}

func TestStuckAtZero(t *testing.T) {
	steps := grid(12)
	// SM active stops at step 4 (reads 0) while utilisation stays at 0.9–0.95.
	sm := []float64{0.6, 0.62, 0.61, 0.6, 0, 0, 0, 0, 0, 0, 0, 0}
	util := []float64{0.9, 0.9, 0.92, 0.9, 0.9, 0.95, 0.9, 0.9, 0.9, 0.9, 0.9, 0.9}
	spans := StuckAtZero(sm, util, steps, 3)
	require.Len(t, spans, 1)
	assert.Equal(t, t0.Add(4*15*time.Second), spans[0].Since)
	assert.Equal(t, t0.Add(11*15*time.Second), spans[0].Until)
	assert.Equal(t, 8, spans[0].Steps)
	assert.Equal(t, 0.95, spans[0].Other)
	// The reverse does not hold.
	assert.Empty(t, StuckAtZero(util, sm, steps, 3))
	// A clean history of the same shape: both idle from step 4 (the load stopped).
	idle := []float64{0.9, 0.9, 0.92, 0.9, 0, 0, 0, 0, 0, 0, 0, 0}
	assert.Empty(t, StuckAtZero(sm, idle, steps, 3))
	// Two steps of disagreement (a scrape skew at a load edge) are not several.
	short := []float64{0.6, 0.62, 0.61, 0.6, 0, 0, 0.6, 0.6, 0.6, 0.6, 0.6, 0.6}
	assert.Empty(t, StuckAtZero(short, util, steps, 3))
	// One small kernel: utilisation busy, SM activity far below 1 % but not 0: consistent.
	tiny := []float64{0.008, 0.008, 0.008, 0.008, 0.008, 0.008, 0.008, 0.008, 0.008, 0.008, 0.008, 0.008}
	assert.Empty(t, StuckAtZero(tiny, util, steps, 3))
	// Missing values break a run.
	gap := []float64{0.6, 0, 0, math.NaN(), 0, 0, 0.6, 0.6, 0.6, 0.6, 0.6, 0.6}
	assert.Empty(t, StuckAtZero(gap, util, steps, 3))
}

func TestLeaveOut(t *testing.T) {
	// Aggregate of target a: engine 0 contributes 1/s, engine 1 contributes 1/s except in the
	// windows (60 s = 4 steps) holding its backwards step at step 5, where PromQL counted the
	// whole value again (+20/s). Target b has one series that went backwards at step 5.
	agg := model.Matrix{
		stream(model.Metric{"job": "a"}, 0, 2, 2, 2, 2, 2, 22, 22, 22, 22, 2),
		stream(model.Metric{"job": "b"}, 0, 1, 1, 1, 1, 1, 21, 21, 21, 21, 1),
	}
	one := model.Matrix{stream(model.Metric{"job": "a"}, 0, 1, 1, 1, 1, 1, 21, 21, 21, 21, 1)}
	at := []time.Time{t0.Add(5 * 15 * time.Second)}
	assert.Equal(t, 4, LeaveOut(agg, one, at, 60*time.Second))
	var got []float64
	for _, p := range agg[0].Values {
		got = append(got, float64(p.Value))
	}
	assert.Equal(t, []float64{2, 2, 2, 2, 2, 1, 1, 1, 1, 2}, got)
	// b's only series left out: no data in those windows, not zero.
	onlyB := model.Matrix{stream(model.Metric{"job": "b"}, 0, 1, 1, 1, 1, 1, 21, 21, 21, 21, 1)}
	assert.Equal(t, 4, LeaveOut(agg, onlyB, at, 60*time.Second))
	assert.Len(t, agg[1].Values, 6)
	// Nothing to leave out: unchanged.
	assert.Equal(t, 0, LeaveOut(agg, onlyB, nil, 60*time.Second))
}

// TestNonFinite: a counter with NaN at 10:02 and +Inf at 10:04 is named once, at its first
// such sample, with the count; a clean counter of the same shape raises nothing.
func TestNonFinite(t *testing.T) {
	t0 := time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)
	series := func(vals ...float64) *model.SampleStream {
		s := &model.SampleStream{Metric: model.Metric{"__name__": "vllm:generation_tokens_total", "job": "a", "instance": "a:8000", "engine": "1"}}
		for i, v := range vals {
			s.Values = append(s.Values, model.SamplePair{Timestamp: model.TimeFromUnixNano(t0.Add(time.Duration(i) * time.Minute).UnixNano()), Value: model.SampleValue(v)})
		}
		return s
	}
	fs := NonFinite("generation_tokens", model.Matrix{series(0, 60, math.NaN(), 180, math.Inf(1), 300)}, "left out")
	require.Len(t, fs, 1)
	assert.Equal(t, `target a: generation_tokens {engine="1"} read NaN at 2026-11-30 10:02:00 UTC (2 times in the range): not a number, left out`, fs[0].Text())
	fs = NonFinite("x_bucket", model.Matrix{series(0, math.Inf(-1))}, "left out")
	require.Len(t, fs, 1)
	assert.Equal(t, "infinite", fs[0].Why)
	assert.Empty(t, NonFinite("generation_tokens", model.Matrix{series(0, 60, 120, 180, 240, 300)}, "left out"))
}

// TestHistogramBackwards: a histogram observing one request a minute below 0.5 s. (1) Its
// le="0.5" bucket goes back from 5 to 1 at 10:05 while _count and +Inf keep growing: not a
// restart (the drop is below half, so the counter rule alone would have missed it), named at
// 10:05 and 10:05 is returned. (2) A restart at 10:05 (every series falls to 1): nothing. (3)
// _count goes back from 5 to 4 while +Inf grows: named.
func TestHistogramBackwards(t *testing.T) {
	t0 := time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)
	mk := func(name, le string, vals ...float64) *model.SampleStream {
		m := model.Metric{"__name__": model.LabelValue(name), "job": "a", "instance": "a:8000", "engine": "0"}
		if le != "" {
			m["le"] = model.LabelValue(le)
		}
		s := &model.SampleStream{Metric: m}
		for i, v := range vals {
			s.Values = append(s.Values, model.SamplePair{Timestamp: model.TimeFromUnixNano(t0.Add(time.Duration(i) * time.Minute).UnixNano()), Value: model.SampleValue(v)})
		}
		return s
	}
	grow := []float64{0, 1, 2, 3, 4, 5, 6, 7}
	restart := []float64{0, 1, 2, 3, 4, 1, 2, 3}
	set := model.Matrix{
		mk("x_bucket", "0.1", 0, 0, 0, 0, 0, 0, 0, 0),
		mk("x_bucket", "0.5", 0, 1, 2, 3, 5, 1, 2, 3),
		mk("x_bucket", "+Inf", grow...),
		mk("x_count", "", grow...),
	}
	fs, at := HistogramBackwards("ttft", set, "left out")
	require.Len(t, fs, 1)
	assert.Equal(t, `target a: x_bucket {engine="0", le="0.5"} read 1 at 2026-11-30 10:05:00 UTC: a histogram series of ttft that went back from 5 while the histogram's count did not fall (not a restart), left out`, fs[0].Text())
	assert.Equal(t, []time.Time{t0.Add(5 * time.Minute)}, at)

	clean := model.Matrix{mk("x_bucket", "0.1", 0, 0, 0, 0, 0, 0, 0, 0), mk("x_bucket", "0.5", restart...), mk("x_bucket", "+Inf", restart...), mk("x_count", "", restart...)}
	fs, at = HistogramBackwards("ttft", clean, "left out")
	assert.Empty(t, fs, "a restart is not backwards")
	assert.Empty(t, at)

	count := model.Matrix{mk("x_bucket", "+Inf", grow...), mk("x_count", "", 0, 1, 2, 3, 5, 4, 6, 7)}
	fs, at = HistogramBackwards("ttft", count, "left out")
	require.Len(t, fs, 1)
	assert.Equal(t, "x_count", fs[0].Signal)
	assert.Equal(t, []time.Time{t0.Add(5 * time.Minute)}, at)
}

// TestFrozenOverlappingSpansSaidOnce (issue 40): a freeze with two moments of activity in it
// (steps 28 and 33: a token counted while the gauges keep their values) gave three spans whose
// Since all reached back to step 20, and three warnings. It is one freeze: one span, from step
// 20 to the end.
func TestFrozenOverlappingSpansSaidOnce(t *testing.T) {
	in := frozenHistory(true)
	for _, a := range in.Activity {
		a[28], a[33] = 1, 1
	}
	spans := Frozen(in)
	require.Len(t, spans, 1)
	assert.Equal(t, t0.Add(20*15*time.Second), spans[0].Since)
	assert.True(t, spans[0].ToEnd)
}

// TestFrozenNotWhileDecodeStepsMove (issue 40): llama.cpp counts tokens only at a request's
// first token and end, so its token counters read 0 in most windows while 4 slots decode; its
// decode-step counter moves every step. With that counter among the activity series the
// steady gauges are not frozen.
func TestFrozenNotWhileDecodeStepsMove(t *testing.T) {
	in := frozenHistory(true)
	decode := make([]float64, len(in.Steps))
	for i := range decode {
		decode[i] = 2.1 // decode steps per second
	}
	assert.NotEmpty(t, Frozen(in), "without the decode counter the still token counters read as frozen")
	in.Activity = append(in.Activity, decode)
	assert.Empty(t, Frozen(in))
}
