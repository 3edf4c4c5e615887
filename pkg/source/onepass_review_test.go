package source

// Adversarial review of QueryRanges against the PromQL engine over the same
// storage. Each test builds a small TSDB, runs every query through queryRanges (alone and
// in one batch) and through QueryRange, and requires the same outcome: both fail, or the
// same series, timestamps and float64 bits (NaN matches NaN; a sum over more than two series
// may differ by 4 ulps, the tolerance TestOnePassMatchesEngine states).
//
// The review found two differences, both fixed since: the one pass did not count the step
// points it holds against MaxSamples (it answered where the engine refused), and it ignored
// EmbeddedOptions.Timeout (TestOnePassReviewMaxSamples, TestOnePassReviewTimeout).

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/histogram"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/value"
	"github.com/prometheus/prometheus/tsdb"
	"github.com/stretchr/testify/require"
)

// rvPt is a sample at base+t.
type rvPt struct {
	t time.Duration
	v float64
}

type rvSeries struct {
	ls  labels.Labels
	pts []rvPt
}

func rvSer(pts []rvPt, kv ...string) rvSeries {
	return rvSeries{ls: labels.FromStrings(kv...), pts: pts}
}

// rvEvery is n samples every iv from t0, value f(i).
func rvEvery(t0, iv time.Duration, n int, f func(i int) float64) []rvPt {
	out := make([]rvPt, n)
	for i := range out {
		out[i] = rvPt{t0 + time.Duration(i)*iv, f(i)}
	}
	return out
}

func rvDB(t testing.TB, series ...rvSeries) *tsdb.DB {
	t.Helper()
	db, err := tsdb.Open(t.TempDir(), nil, nil, tsdb.DefaultOptions(), nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = db.Close() })
	app := db.Appender(context.Background())
	for _, s := range series {
		for _, p := range s.pts {
			_, err := app.Append(0, s.ls, base.Add(p.t).UnixMilli(), p.v)
			require.NoError(t, err)
		}
	}
	require.NoError(t, app.Commit())
	return db
}

// rvDiff describes how two matrices differ, "" when they are equal under the stated rule.
func rvDiff(q string, want, got model.Matrix) string {
	if len(want) != len(got) {
		return fmt.Sprintf("%d series from the engine, %d from one pass\nengine: %s\nonepass: %s", len(want), len(got), rvShort([]model.Matrix{want}), rvShort([]model.Matrix{got}))
	}
	// The engine adds in map order only where rangeEval or a merge built the input (set
	// operators, comparisons, label_replace); a sum straight over a selector must be exact.
	sum := strings.Contains(q, "sum") && strings.ContainsAny(q, "<>=!") || strings.Contains(q, " or ") ||
		strings.Contains(q, " unless ") || strings.Contains(q, "label_replace") || strings.Contains(q, "__name__=~")
	for s := range want {
		if !want[s].Metric.Equal(got[s].Metric) {
			return fmt.Sprintf("series %d: engine %v, one pass %v", s, want[s].Metric, got[s].Metric)
		}
		if len(want[s].Values) != len(got[s].Values) {
			return fmt.Sprintf("%v: %d points from the engine, %d from one pass", want[s].Metric, len(want[s].Values), len(got[s].Values))
		}
		if len(want[s].Histograms) != len(got[s].Histograms) {
			return fmt.Sprintf("%v: histograms differ", want[s].Metric)
		}
		for i, wp := range want[s].Values {
			gp := got[s].Values[i]
			if wp.Timestamp != gp.Timestamp {
				return fmt.Sprintf("%v point %d: engine at %d, one pass at %d", want[s].Metric, i, wp.Timestamp, gp.Timestamp)
			}
			a, b := float64(wp.Value), float64(gp.Value)
			switch {
			case math.Float64bits(a) == math.Float64bits(b), math.IsNaN(a) && math.IsNaN(b):
			case sum && !math.IsInf(a, 0) && math.Abs(a-b) <= 4*ulp(math.Max(math.Abs(a), math.Abs(b))):
			default:
				return fmt.Sprintf("%v at %d: engine %v (%x), one pass %v (%x)", want[s].Metric, wp.Timestamp, a, math.Float64bits(a), b, math.Float64bits(b))
			}
		}
	}
	return ""
}

// rvCheck runs qs alone and together and reports every difference with the engine; it
// returns, per query, whether the one-pass evaluator answered it alone.
func rvCheck(t *testing.T, e *embedded, qs []string, start, end time.Time, step time.Duration) []bool {
	t.Helper()
	ctx := context.Background()
	inGo := make([]bool, len(qs))
	var ok []string
	for k, q := range qs {
		want, werr := e.QueryRange(ctx, q, start, end, step)
		got, in, gerr := e.queryRanges(ctx, []string{q}, start, end, step)
		switch {
		case werr != nil && gerr != nil:
			continue
		case werr != nil:
			t.Errorf("DIVERGENCE %s [%s..%s step %s]: engine fails (%v), one pass answers (inGo=%v) %s", q, start.Sub(base), end.Sub(base), step, werr, in, rvShort(got))
			continue
		case gerr != nil:
			t.Errorf("DIVERGENCE %s: engine answers %s, one pass fails: %v", q, rvShort([]model.Matrix{want}), gerr)
			continue
		}
		inGo[k] = in[0]
		if d := rvDiff(q, want, got[0]); d != "" {
			t.Errorf("DIVERGENCE %s [%s..%s step %s] (inGo=%v): %s", q, start.Sub(base), end.Sub(base), step, in[0], d)
		}
		ok = append(ok, q)
	}
	// All at once: shared selectors and window caches must not change an answer.
	got, _, err := e.queryRanges(ctx, ok, start, end, step)
	if err != nil {
		t.Errorf("DIVERGENCE batch of %d queries fails: %v", len(ok), err)
		return inGo
	}
	for k, q := range ok {
		want, _ := e.QueryRange(ctx, q, start, end, step)
		if d := rvDiff(q, want, got[k]); d != "" {
			t.Errorf("DIVERGENCE in a batch: %s: %s", q, d)
		}
	}
	return inGo
}

func rvFns(sel, w string) []string {
	var qs []string
	for _, fn := range []string{"rate", "increase", "delta", "resets"} {
		qs = append(qs, fn+"("+sel+"["+w+"])", "sum("+fn+"("+sel+"["+w+"]))", "max by (job) ("+fn+"("+sel+"["+w+"]))")
	}
	return qs
}

// Samples exactly on window edges (the window is (t-range, t]), start == end, a step larger
// than the window, a step that does not divide the range, a range before the first and after
// the last sample, sub-second start and step.
func TestOnePassReviewBoundaries(t *testing.T) {
	db := rvDB(t,
		rvSer(rvEvery(0, 15*time.Second, 41, func(i int) float64 { return float64(10 * i) }), "__name__", "c", "job", "a"),
		rvSer(rvEvery(0, 15*time.Second, 41, func(i int) float64 { return float64(i % 7) }), "__name__", "c", "job", "b"),
		rvSer([]rvPt{{2 * time.Minute, 5}}, "__name__", "c", "job", "single"),
		rvSer([]rvPt{{2 * time.Minute, 5}, {2*time.Minute + time.Millisecond, 6}}, "__name__", "c", "job", "pair1ms"),
	)
	e := NewEmbedded(db, EmbeddedOptions{}).(*embedded)
	type grid struct {
		start, end, step time.Duration
	}
	grids := []grid{
		{time.Minute, 9 * time.Minute, 15 * time.Second},                                                // on the samples
		{time.Minute, 9 * time.Minute, 7 * time.Second},                                                 // not dividing
		{2 * time.Minute, 2 * time.Minute, time.Second},                                                 // start == end
		{2 * time.Minute, 2 * time.Minute, time.Hour},                                                   // start == end, huge step
		{0, 10 * time.Minute, 5 * time.Minute},                                                          // step > window
		{-time.Hour, -time.Minute, time.Minute},                                                         // before the data
		{20 * time.Minute, 3 * time.Hour, time.Minute},                                                  // after the data
		{-5 * time.Minute, 2 * time.Hour, 61 * time.Second},                                             // across both ends
		{time.Minute + 500*time.Microsecond, 5 * time.Minute, 1001 * time.Microsecond * 1000},           // sub-ms start
		{2*time.Minute - time.Millisecond, 2*time.Minute + 2*time.Millisecond, time.Millisecond},        // 1 ms step
		{2*time.Minute - time.Millisecond, 2*time.Minute + 9*time.Millisecond, 1500 * time.Microsecond}, // 1.5 ms step: 1 ms
		{time.Minute + 999*time.Microsecond, 3 * time.Minute, 14999 * time.Microsecond},                 // sub-ms start and step
	}
	for _, w := range []string{"1ms", "15s", "30s", "1m", "5m"} {
		qs := rvFns(`c`, w)
		for _, g := range grids {
			in := rvCheck(t, e, qs, base.Add(g.start), base.Add(g.end), g.step)
			require.True(t, in[0], "rate(c[%s]) must run in one pass", w)
		}
	}
}

// Odd values: NaN, ±Inf, float64 extremes, tiny counter decreases, negative counters, a
// series holding only staleness markers, staleness markers between samples.
func TestOnePassReviewOddValues(t *testing.T) {
	stale := math.Float64frombits(value.StaleNaN)
	db := rvDB(t,
		rvSer(rvEvery(0, 15*time.Second, 41, func(i int) float64 {
			switch i % 9 {
			case 3:
				return math.NaN()
			case 6:
				return math.Inf(1)
			}
			return float64(i)
		}), "__name__", "c", "job", "nan_inf"),
		rvSer(rvEvery(0, 15*time.Second, 41, func(i int) float64 { return math.MaxFloat64 / float64(41-i) }), "__name__", "c", "job", "huge"),
		rvSer(rvEvery(0, 15*time.Second, 41, func(i int) float64 {
			if i%2 == 1 {
				return 1 - 1e-16
			}
			return 1
		}), "__name__", "c", "job", "tiny_down"),
		rvSer(rvEvery(0, 15*time.Second, 41, func(i int) float64 { return -100 + float64(i) }), "__name__", "c", "job", "negative"),
		rvSer(rvEvery(0, 15*time.Second, 41, func(i int) float64 { return -float64(i) }), "__name__", "c", "job", "falling"),
		rvSer(rvEvery(0, 15*time.Second, 41, func(int) float64 { return stale }), "__name__", "c", "job", "stale_only"),
		rvSer(rvEvery(0, 15*time.Second, 41, func(i int) float64 {
			if i%4 == 2 {
				return stale
			}
			return float64(i * i)
		}), "__name__", "c", "job", "stale_gaps"),
		rvSer(rvEvery(0, 15*time.Second, 41, func(i int) float64 { return math.Inf(-1) }), "__name__", "c", "job", "neg_inf"),
		rvSer(rvEvery(0, 15*time.Second, 41, func(i int) float64 { return math.SmallestNonzeroFloat64 * float64(i) }), "__name__", "c", "job", "denormal"),
		rvSer(rvEvery(0, 15*time.Second, 41, func(i int) float64 { return math.Copysign(0, -1) }), "__name__", "c", "job", "negzero"),
	)
	e := NewEmbedded(db, EmbeddedOptions{}).(*embedded)
	for _, w := range []string{"20s", "1m", "3m"} {
		qs := rvFns(`c`, w)
		qs = append(qs,
			`sum by (job) (rate(c[`+w+`]))`,
			`rate(c[`+w+`]) > -Inf < +Inf`,
			`rate(c[`+w+`]) != NaN`,
			`delta(c[`+w+`]) == 0`,
			`delta(c[`+w+`]) >= -0`,
			`max(delta(c[`+w+`]))`,
			`sum(delta(c{job=~"huge|negative"}[`+w+`]))`,
			`sum(rate(c{job=~"nan_inf|neg_inf"}[`+w+`]))`,
		)
		for _, step := range []time.Duration{15 * time.Second, 13 * time.Second} {
			in := rvCheck(t, e, qs, base.Add(30*time.Second), base.Add(10*time.Minute), step)
			require.True(t, in[0])
		}
	}
}

// Query shapes: spellings of the same aggregation, without, nested aggregations, regex and
// empty matchers, __name__ regexes (series of different names colliding after the name is
// dropped), or/unless with on/ignoring and overlap, comparisons, unicode label names; and
// shapes that must go to the engine (bool, offset, @, subqueries, arithmetic).
func TestOnePassReviewShapes(t *testing.T) {
	var ss []rvSeries
	for _, le := range []string{"0.1", "1", "1.0", "+Inf"} {
		for _, job := range []string{"a", "b"} {
			f, _ := strconv.ParseFloat(le, 64)
			k := math.Min(f, 3) + 1
			ss = append(ss, rvSer(rvEvery(0, 15*time.Second, 41, func(i int) float64 { return k * float64(i) }),
				"__name__", "h_bucket", "job", job, "le", le, "ünï", "ü"+job))
		}
	}
	// Same labels but the name: a collides with b while both exist (minutes 0..4 and 3..10).
	ss = append(ss,
		rvSer(rvEvery(0, 15*time.Second, 17, func(i int) float64 { return float64(i) }), "__name__", "x_old", "job", "a"),
		rvSer(rvEvery(3*time.Minute, 15*time.Second, 29, func(i int) float64 { return float64(2 * i) }), "__name__", "x_new", "job", "a"),
		// Renamed without overlap: y_old until 4m, y_new from 6m.
		rvSer(rvEvery(0, 15*time.Second, 17, func(i int) float64 { return float64(i) }), "__name__", "y_old", "job", "a"),
		rvSer(rvEvery(6*time.Minute, 15*time.Second, 17, func(i int) float64 { return float64(3 * i) }), "__name__", "y_new", "job", "a"),
		rvSer(rvEvery(0, 15*time.Second, 41, func(i int) float64 { return float64(i) }), "__name__", "e", "job", ""),
		rvSer(rvEvery(0, 15*time.Second, 41, func(i int) float64 { return float64(i) }), "__name__", "e", "job", "j", "model", "m1"),
		rvSer(rvEvery(0, 15*time.Second, 41, func(i int) float64 { return float64(5 * i) }), "__name__", "e", "job", "j", "model_name", "m1"),
	)
	db := rvDB(t, ss...)
	e := NewEmbedded(db, EmbeddedOptions{}).(*embedded)
	qs := []string{
		`sum(rate(h_bucket[1m])) by (le)`,
		`sum by (le) (rate(h_bucket[1m]))`,
		`sum without (job, "ünï") (rate(h_bucket[1m]))`,
		`sum without () (rate(h_bucket[1m]))`,
		`sum by () (rate(h_bucket[1m]))`,
		`sum by ("ünï") (rate(h_bucket[1m]))`,
		`sum by (nonexistent) (rate(h_bucket[1m]))`,
		`sum(max by (le) (rate(h_bucket[1m])))`,
		`max(sum by (le) (rate(h_bucket[1m])))`,
		`sum by (le) (max without (job) (rate(h_bucket[1m])))`,
		`sum by (le) (sum by (le, job) (rate(h_bucket[1m])))`,
		`sum by (le) (rate(h_bucket{le=~"1|1.0"}[1m]))`,
		`rate({__name__=~"h_.*", job!="a"}[1m])`,
		`rate({"ünï"="üa"}[1m])`,
		`rate(e{job=""}[1m])`,
		`rate(e{job!=""}[1m])`,
		`rate(e{model=""}[1m])`,
		`rate({__name__=~"x_old|x_new"}[1m])`,      // overlapping duplicates: the engine fails
		`sum(rate({__name__=~"x_old|x_new"}[1m]))`, // same
		`rate({__name__=~"y_old|y_new"}[1m])`,      // non-overlapping: merged
		`sum(rate({__name__=~"y_.*"}[5m]))`,        // merged, windows overlap at 6m..9m? no: gap 4..6m < 5m
		`rate({__name__=~"y_.*"}[5m])`,             // windows of both series overlap in time: the engine fails
		`rate(x_old[1m]) or rate(x_new[1m])`,
		`rate(x_new[1m]) or rate(x_old[1m])`,
		`rate(x_old[1m]) or on() rate(x_new[1m])`,
		`rate(x_old[1m]) or on(job) rate(x_new[1m])`,
		`rate(x_old[1m]) unless rate(x_new[1m])`,
		`rate(x_old[1m]) unless on() rate(x_new[1m])`,
		`rate(x_old[1m]) unless ignoring (job) rate(x_new[1m])`,
		`rate(h_bucket[1m]) or rate(h_bucket[1m])`,
		`rate(h_bucket[1m]) unless rate(h_bucket[1m])`,
		`sum by (le) (rate(h_bucket{job="a"}[1m]) or ignoring (job) rate(h_bucket{job="b"}[1m]))`,
		`sum by (le) (rate(h_bucket{job="a"}[1m]) or on (le) rate(h_bucket{job="b"}[2m]))`,
		`(rate(h_bucket[1m]) > 0.05) or rate(h_bucket[1m])`,
		`rate(h_bucket[1m]) > 0.05 < 0.2`,
		`rate(h_bucket[1m]) > (0.05)`,
		`rate(h_bucket[1m]) > -(-0.05)`,
		`rate(h_bucket[1m]) > +0.05`,
		`rate(h_bucket[1m]) == 0.06666666666666667`,
		`sum by (le) (rate(h_bucket[1m])) > 0.1`,
		`rate(h_bucket[1m]) > bool 0`,
		`0 < rate(h_bucket[1m])`,
		`rate(h_bucket[1m] offset 1m)`,
		`rate(h_bucket[1m] offset -1m)`,
		`rate(h_bucket[1m] @ 1735689780)`,
		`rate(h_bucket[1m] @ end())`,
		`rate(h_bucket[2m:30s])`,
		`rate((h_bucket[1m]))`,
		`sum(rate(h_bucket[1m])) / 2`,
		`-rate(h_bucket[1m])`,
		`topk(1, rate(h_bucket[1m]))`,
		`sum(rate(h_bucket[1m])) or vector(0)`,
		`rate(h_bucket[1m]) > 0 or on() vector(0)`,
		`rate(h_bucket[90s])`,
		`rate(h_bucket[1m30s])`,
		`increase(h_bucket[1m]) and increase(h_bucket[1m])`,
		`sum by (job) (label_replace(rate(e[1m]), "model_name", "$1", "model", "(.+)"))`, // m1 twice, overlapping: fails
		`label_replace(rate(e[1m]), "model_name", "$1", "model", "(.+)")`,
		`label_replace(rate(e[1m]), "job", "", "job", ".*")`,
		`label_replace(rate(h_bucket[1m]), "le", "", "le", ".*")`,
		`label_replace(rate(h_bucket[1m]), "le", "$0$0", "le", "(.*)")`,
		`label_replace(rate(h_bucket[1m]), "le", "${1}x", "le", "(?P<1>[0-9]+)")`,
		`label_replace(rate(h_bucket[1m]), "new", "$1", "missing", "(.*)")`,
		`label_replace(rate(h_bucket[1m]), "new", "v", "le", "")`,
		`label_replace(rate(h_bucket[1m]), "new", "v", "le", "+")`,
		`label_replace(rate(h_bucket[1m]), "1bad", "v", "le", ".*")`,
		`label_replace(rate(h_bucket[1m]), "ünï", "$1", "le", "(.*)")`,
		`label_replace(rate(h_bucket[1m]), "__name__", "n", "le", ".*")`,
		`label_replace(rate(h_bucket[1m]), "le", "1", "le", "1.0")`, // le 1 and 1.0 collide
		`sum by (le) (label_replace(rate(h_bucket[1m]), "le", "1", "le", "1.0"))`,
		`label_replace(rate(y_old[1m]) or rate(y_new[1m]), "job", "z", "job", "a")`,
		`label_replace(label_replace(rate(h_bucket[1m]), "a", "$1", "le", "(.*)"), "b", "$1", "a", "(.*)")`,
		`sum by (le) (label_replace(rate(h_bucket[1m]), "le", "x", "le", ".*"))`,
		`resets(h_bucket[1m]) or resets(h_bucket[2m])`,
		`max by (le) (resets(h_bucket[5m]))`,
		`label_replace(rate(h_bucket[1m]), "", "v", "le", ".*")`,
		`rate(h_bucket[1m]) > 1m`,
		`rate(h_bucket[1m]) > 0x1p-4`,
		`rate(h_bucket[1m]) > Inf`,
		`rate(h_bucket[1m]) <= -0.0`,
		`rate(h_bucket[1m]) unless on(le) (rate(h_bucket[1m]) > 0.1)`,
		`sum by (le) (rate(h_bucket[1m]) > 0.05)`,
		`max by (le) (delta(h_bucket[1m]) or delta(h_bucket[2m]))`,
	}
	for _, g := range [][3]time.Duration{{time.Minute, 10 * time.Minute, 15 * time.Second}, {37 * time.Second, 11 * time.Minute, 29 * time.Second}} {
		in := rvCheck(t, e, qs, base.Add(g[0]), base.Add(g[1]), g[2])
		var goList []string
		for k, q := range qs {
			if in[k] {
				goList = append(goList, q)
			}
		}
		t.Logf("%d of %d queries answered in one pass", len(goList), len(qs))
	}
}

// DIVERGENCE (error versus answer): the engine counts the points it holds (its output
// included) against MaxSamples; the one-pass evaluator counts only the stored samples it
// reads. With a step finer than the scrape interval the engine refuses the query ("query
// processing would load too many samples into memory") while QueryRanges answers it.
func TestOnePassReviewMaxSamples(t *testing.T) {
	db := openHead(t) // 41 samples per series, every 15 s
	e := NewEmbedded(db, EmbeddedOptions{MaxSamples: 200}).(*embedded)
	start, end := base.Add(time.Minute), base.Add(9*time.Minute)
	rvCheck(t, e, []string{`rate(c_total[1m])`, `sum(rate(c_total[1m]))`}, start, end, time.Second)

	// The same with memory: MaxSamples is the engine's guard against a query that would hold
	// too many points; the one-pass evaluator holds series × steps floats, flags and windows
	// whatever the limit. One series, 2,000,000 steps of 1 ms, MaxSamples 100,000: the engine
	// stops at the limit, the one pass allocates hundreds of megabytes.
	small := NewEmbedded(db, EmbeddedOptions{MaxSamples: 100_000}).(*embedded)
	s0, e0 := base.Add(5*time.Minute), base.Add(5*time.Minute+2000*time.Second)
	var m0, m1 runtime.MemStats
	runtime.ReadMemStats(&m0)
	_, werr := small.QueryRange(context.Background(), `rate(c_total{job="a"}[1m])`, s0, e0, time.Millisecond)
	runtime.ReadMemStats(&m1)
	engineBytes := m1.TotalAlloc - m0.TotalAlloc
	runtime.ReadMemStats(&m0)
	got, gerr := small.QueryRanges(context.Background(), []string{`rate(c_total{job="a"}[1m])`}, s0, e0, time.Millisecond)
	runtime.ReadMemStats(&m1)
	onePassBytes := m1.TotalAlloc - m0.TotalAlloc
	series := 0
	if len(got) > 0 {
		series = len(got[0])
	}
	t.Logf("engine: %v, %d MB allocated; one pass: err %v, %d series, %d MB allocated", werr, engineBytes>>20, gerr, series, onePassBytes>>20)
	if werr != nil && gerr == nil {
		t.Errorf("DIVERGENCE: the engine refuses the 2,000,000-step query (%v) after %d MB; QueryRanges answers it after allocating %d MB", werr, engineBytes>>20, onePassBytes>>20)
	}
}

// Native histograms in a series that also holds floats, and outside the range.
func TestOnePassReviewNativeHistograms(t *testing.T) {
	db := rvDB(t,
		rvSer(rvEvery(0, 15*time.Second, 20, func(i int) float64 { return float64(i) }), "__name__", "m", "job", "a"),
		rvSer(rvEvery(0, 15*time.Second, 41, func(i int) float64 { return float64(i) }), "__name__", "f", "job", "a"),
	)
	app := db.Appender(context.Background())
	for i := 20; i <= 40; i++ {
		h := &histogram.FloatHistogram{Count: float64(i), Sum: float64(i), PositiveSpans: []histogram.Span{{Offset: 0, Length: 1}}, PositiveBuckets: []float64{float64(i)}}
		_, err := app.AppendHistogram(0, labels.FromStrings("__name__", "m", "job", "a"), base.Add(time.Duration(i)*15*time.Second).UnixMilli(), nil, h)
		require.NoError(t, err)
	}
	require.NoError(t, app.Commit())
	e := NewEmbedded(db, EmbeddedOptions{}).(*embedded)
	qs := []string{`rate(m[1m])`, `sum(rate(m[1m]))`, `resets(m[5m])`, `rate(f[1m])`, `rate(m[1m]) or rate(f[1m])`}
	// The histograms are after the range: the engine never sees them.
	rvCheck(t, e, qs, base.Add(time.Minute), base.Add(4*time.Minute), 15*time.Second)
	rvCheck(t, e, qs, base.Add(time.Minute), base.Add(9*time.Minute), 15*time.Second)
}

// Metadata labels (__type__, __unit__) stored with the series, as the type-and-unit-labels
// feature writes them, and other reserved-looking labels.
func TestOnePassReviewMetadataLabels(t *testing.T) {
	db := rvDB(t,
		rvSer(rvEvery(0, 15*time.Second, 41, func(i int) float64 { return float64(i) }), "__name__", "k", "__type__", "counter", "__unit__", "seconds", "job", "a"),
		rvSer(rvEvery(0, 15*time.Second, 41, func(i int) float64 { return float64(2 * i) }), "__name__", "k", "__type__", "gauge", "job", "a"),
		rvSer(rvEvery(0, 15*time.Second, 41, func(i int) float64 { return float64(3 * i) }), "__name__", "k", "__foo__", "bar", "job", "b"),
	)
	e := NewEmbedded(db, EmbeddedOptions{}).(*embedded)
	qs := []string{
		`rate(k{__type__="counter"}[1m])`, `rate(k{job="b"}[1m])`, `rate(k[1m])`, `sum without (job) (rate(k{job="b"}[1m]))`,
		`rate(k{job="b"}[1m]) or ignoring (__foo__) rate(k{__type__="counter"}[1m])`,
		`sum by (__foo__) (rate(k{job="b"}[1m]))`,
		`label_replace(rate(k{job="b"}[1m]), "x", "$1", "__foo__", "(.*)")`,
		// label_replace can create metadata labels; set operators ignore them, without drops them.
		`label_replace(rate(k{job="b"}[1m]), "__type__", "counter", "", "")`,
		`label_replace(rate(k{job="b"}[1m]), "__unit__", "s", "", "") or ignoring (__foo__) rate(k{job="b"}[1m])`,
		`rate(k{job="b"}[1m]) unless label_replace(rate(k{job="b"}[1m]), "__type__", "x", "", "")`,
		`sum without (job) (label_replace(rate(k{job="b"}[1m]), "__type__", "counter", "", ""))`,
		`sum by (__type__) (label_replace(rate(k[1m]), "__type__", "counter", "", ""))`,
		`label_replace(rate(k[1m]), "job", "a", "job", "b")`,
	}
	rvCheck(t, e, qs, base.Add(time.Minute), base.Add(9*time.Minute), 15*time.Second)
}

// Many series and many steps: more steps than a pooled slab holds (65,536), thousands of
// series, series created out of label order, and concurrent batches sharing the slab pool.
func TestOnePassReviewLarge(t *testing.T) {
	if testing.Short() {
		t.Skip("large")
	}
	rng := rand.New(rand.NewPCG(7, 7))
	var ss []rvSeries
	for j := 2999; j >= 0; j-- {
		iv := time.Duration(10+rng.IntN(20)) * time.Second
		v := 0.0
		ss = append(ss, rvSer(rvEvery(time.Duration(rng.IntN(10000))*time.Millisecond, iv, int(30*time.Minute/iv), func(int) float64 {
			if rng.IntN(50) == 0 {
				v = 0
			}
			v += float64(rng.IntN(100)) / 7
			return v
		}), "__name__", "big_bucket", "job", "j"+strconv.Itoa(j%37), "le", strconv.Itoa(j%11), "i", strconv.Itoa(j)))
	}
	ss = append(ss, rvSer(rvEvery(0, time.Second, 80000, func(i int) float64 { return float64(i) }), "__name__", "long", "job", "a"))
	db := rvDB(t, ss...)
	e := NewEmbedded(db, EmbeddedOptions{}).(*embedded)
	qs := []string{`sum by (le) (rate(big_bucket[1m]))`, `sum by (le, job) (increase(big_bucket[5m]))`, `max without (i) (delta(big_bucket[2m]))`, `sum(resets(big_bucket[10m]))`}
	rvCheck(t, e, qs, base.Add(90*time.Second), base.Add(29*time.Minute), 17*time.Second)
	rvCheck(t, e, []string{`rate(long[3s])`, `sum(increase(long[10s]))`}, base, base.Add(79000*time.Second), time.Second)

	// Concurrent batches: each must still equal the engine.
	want := make([]model.Matrix, len(qs))
	start, end, step := base.Add(5*time.Minute), base.Add(25*time.Minute), 31*time.Second
	for k, q := range qs {
		m, err := e.QueryRange(context.Background(), q, start, end, step)
		require.NoError(t, err)
		want[k] = m
	}
	var wg sync.WaitGroup
	errs := make(chan string, 8)
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for r := 0; r < 3; r++ {
				got, err := e.QueryRanges(context.Background(), qs, start, end, step)
				if err != nil {
					errs <- err.Error()
					return
				}
				for k, q := range qs {
					if d := rvDiff(q, want[k], got[k]); d != "" {
						errs <- q + ": " + d
						return
					}
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for s := range errs {
		t.Errorf("DIVERGENCE concurrent: %s", s)
	}
}

// Randomized differential test on a fresh generator: random shapes built from the accepted
// grammar over random data with odd values.
func TestOnePassReviewRandomShapes(t *testing.T) {
	rng := rand.New(rand.NewPCG(2026, 12))
	var ss []rvSeries
	for j := 0; j < 24; j++ {
		iv := time.Duration(5+rng.IntN(40)) * time.Second
		from := time.Duration(rng.IntN(600)) * time.Second
		n := 1 + rng.IntN(int((40*time.Minute-from)/iv))
		v := 0.0
		name := []string{"r_bucket", "r_count", "s_bucket"}[j%3]
		ss = append(ss, rvSer(rvEvery(from+time.Duration(rng.IntN(1000))*time.Millisecond, iv, n, func(int) float64 {
			switch rng.IntN(60) {
			case 0:
				v = 0
			case 1:
				return math.NaN()
			case 2:
				return math.Float64frombits(value.StaleNaN)
			case 3:
				v -= 1e-9
				return v
			}
			v += float64(rng.IntN(30))
			return v
		}), "__name__", name, "job", "j"+strconv.Itoa(j%3), "le", []string{"1", "1.0", "+Inf", "5"}[j%4], "rep", strconv.Itoa(j%2)))
	}
	db := rvDB(t, ss...)
	e := NewEmbedded(db, EmbeddedOptions{}).(*embedded)
	var gen func(d int) string
	ws := []string{"10s", "45s", "1m", "3m"}
	sels := []string{`r_bucket`, `s_bucket`, `{__name__=~"r_.*"}`, `r_bucket{le!="+Inf"}`, `{__name__=~".+_bucket", rep="1"}`}
	gen = func(d int) string {
		if d == 0 || rng.IntN(4) == 0 {
			fn := []string{"rate", "increase", "delta", "resets"}[rng.IntN(4)]
			return fn + "(" + sels[rng.IntN(len(sels))] + "[" + ws[rng.IntN(len(ws))] + "])"
		}
		switch rng.IntN(6) {
		case 0:
			return "sum by (le) (" + gen(d-1) + ")"
		case 1:
			return "max without (rep) (" + gen(d-1) + ")"
		case 2:
			return "(" + gen(d-1) + ") or ignoring (rep) (" + gen(d-1) + ")"
		case 3:
			return "(" + gen(d-1) + ") unless on (job) (" + gen(d-1) + ")"
		case 4:
			return gen(d-1) + " > " + []string{"0", "-Inf", "1.5", "NaN"}[rng.IntN(4)]
		default:
			return `label_replace(` + gen(d-1) + `, "le", "$1", "le", "([0-9]+)(\\.0)?")`
		}
	}
	var qs []string
	for k := 0; k < 120; k++ {
		qs = append(qs, gen(3))
	}
	in := rvCheck(t, e, qs, base.Add(2*time.Minute+333*time.Millisecond), base.Add(38*time.Minute), 23*time.Second+7*time.Millisecond)
	n := 0
	for _, b := range in {
		if b {
			n++
		}
	}
	t.Logf("%d of %d random queries answered in one pass", n, len(qs))
}

// rvShort is a matrix list in a line: each series' labels, points and first point.
func rvShort(ms []model.Matrix) string {
	var b strings.Builder
	for _, m := range ms {
		for _, s := range m {
			fmt.Fprintf(&b, "%v:%d points", s.Metric, len(s.Values))
			if len(s.Values) > 0 {
				fmt.Fprintf(&b, " (first %v @%d)", s.Values[0].Value, s.Values[0].Timestamp)
			}
			b.WriteString("; ")
		}
	}
	return b.String()
}

// DIVERGENCE (error versus answer): EmbeddedOptions.Timeout bounds the engine's evaluation
// of a query; QueryRanges' one pass never looks at it (only at ctx), so a batch the engine
// would abort with "query timed out" is answered. With a 1 ns timeout the engine refuses
// every query.
func TestOnePassReviewTimeout(t *testing.T) {
	e := NewEmbedded(openHead(t), EmbeddedOptions{Timeout: time.Nanosecond}).(*embedded)
	rvCheck(t, e, []string{`sum(rate(c_total[1m]))`}, base.Add(time.Minute), base.Add(9*time.Minute), 15*time.Second)
}

// Samples in persisted blocks and in the head (a query straddling both, series created out
// of label order, a counter reset at a block boundary): the engine's querier and the one
// pass's must yield the same series in the same order.
func TestOnePassReviewBlocks(t *testing.T) {
	var ss []rvSeries
	for j := 9; j >= 0; j-- {
		k := float64(j + 1)
		ss = append(ss, rvSer(rvEvery(time.Duration(j)*time.Second, 30*time.Second, 8*120, func(i int) float64 {
			if i == 4*120+j {
				return 0
			}
			return k * float64(i) * 1.1
		}), "__name__", "blk_bucket", "job", strconv.Itoa(j%3), "le", strconv.Itoa(9-j)))
	}
	db := rvDB(t, ss...)
	require.NoError(t, db.Compact(context.Background()))
	require.NotEmpty(t, db.Blocks(), "blocks persisted")
	t.Logf("%d blocks; head from %d", len(db.Blocks()), db.Head().MinTime())
	e := NewEmbedded(db, EmbeddedOptions{}).(*embedded)
	qs := []string{`sum(rate(blk_bucket[5m]))`, `sum by (job) (increase(blk_bucket[2m]))`, `rate(blk_bucket[1m])`, `max(delta(blk_bucket[10m]))`, `sum(resets(blk_bucket[1h]))`}
	for _, g := range [][3]time.Duration{{0, 4 * time.Hour, time.Minute}, {90 * time.Minute, 3*time.Hour + 10*time.Minute, 7 * time.Second}, {2 * time.Hour, 2 * time.Hour, time.Minute}} {
		in := rvCheck(t, e, qs, base.Add(g[0]), base.Add(g[1]), g[2])
		require.True(t, in[0])
	}
}

// A second randomized generator, several seeds: collisions made by label_replace (merged
// when they never meet, refused when they do), or on(), unless ignoring, without, regex and
// empty matchers, windows from 1 ms to 10 m, random grids.
func TestOnePassReviewRandomSeeds(t *testing.T) {
	for seed := uint64(100); seed < 106; seed++ {
		rng := rand.New(rand.NewPCG(seed, 99))
		var ss []rvSeries
		for j := 0; j < 18; j++ {
			iv := time.Duration(1+rng.IntN(60)) * time.Second
			from := time.Duration(rng.IntN(1200)) * time.Second
			to := from + time.Duration(1+rng.IntN(2400))*time.Second
			v := rng.Float64() * 1e6
			ss = append(ss, rvSer(rvEvery(from+time.Duration(rng.IntN(1000))*time.Millisecond, iv, 1+int((to-from)/iv), func(int) float64 {
				switch rng.IntN(80) {
				case 0:
					v = rng.Float64()
				case 1:
					return math.Inf(1)
				case 2:
					return math.Float64frombits(value.StaleNaN)
				case 3:
					v = math.Nextafter(v, 0)
				}
				v += rng.ExpFloat64() * 100
				return v
			}), "__name__", []string{"p_bucket", "q_bucket"}[j%2], "job", "j"+strconv.Itoa(j%3), "le", []string{"0.5", "1", "+Inf"}[j%3], "rep", strconv.Itoa(j/6)))
		}
		db := rvDB(t, ss...)
		e := NewEmbedded(db, EmbeddedOptions{}).(*embedded)
		ws := []string{"1ms", "9s", "30s", "2m", "10m"}
		sels := []string{`p_bucket`, `q_bucket{job=~"j1|j2"}`, `{__name__=~"p_.*|q_.*", rep!="1"}`, `p_bucket{le=""}`, `q_bucket{rep=~"0|2"}`}
		var gen func(d int) string
		gen = func(d int) string {
			if d == 0 || rng.IntN(5) == 0 {
				fn := []string{"rate", "increase", "delta", "resets"}[rng.IntN(4)]
				return fn + "(" + sels[rng.IntN(len(sels))] + "[" + ws[rng.IntN(len(ws))] + "])"
			}
			switch rng.IntN(8) {
			case 0:
				return "sum without (rep) (" + gen(d-1) + ")"
			case 1:
				return "max by (job, le) (" + gen(d-1) + ")"
			case 2:
				return "(" + gen(d-1) + ") or on () (" + gen(d-1) + ")"
			case 3:
				return "(" + gen(d-1) + ") unless ignoring (le, rep) (" + gen(d-1) + ")"
			case 4:
				return "(" + gen(d-1) + ") or (" + gen(d-1) + ")"
			case 5:
				return gen(d-1) + " " + []string{">", "<", ">=", "!="}[rng.IntN(4)] + " " + []string{"0", "100", "+Inf", "-1"}[rng.IntN(4)]
			case 6:
				return `label_replace(` + gen(d-1) + `, "rep", "x", "rep", "[01]")`
			default:
				return `sum by (le) (` + gen(d-1) + `)`
			}
		}
		var qs []string
		for k := 0; k < 60; k++ {
			qs = append(qs, gen(3))
		}
		start := base.Add(time.Duration(rng.IntN(900)) * time.Second)
		end := start.Add(time.Duration(1+rng.IntN(3000)) * time.Second)
		step := time.Duration(1+rng.IntN(90000)) * time.Millisecond
		in := rvCheck(t, e, qs, start, end, step)
		n := 0
		for _, b := range in {
			if b {
				n++
			}
		}
		t.Logf("seed %d step %s: %d of %d in one pass", seed, step, n, len(qs))
	}
}
