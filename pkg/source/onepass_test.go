package source

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"testing"
	"time"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/histogram"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/value"
	"github.com/prometheus/prometheus/tsdb"
	"github.com/stretchr/testify/require"
)

// randomHistogramHistory appends, for a few jobs, a classic histogram (buckets, _sum, _count)
// scraped at irregular instants: jittered scrapes, missed scrapes, counter resets (restarts),
// staleness markers after a restart's gap, a NaN sample, targets that start or stop inside the
// range, a metric renamed inside the range (old name before, new after, as vLLM's ray_ prefix
// does), a model label under two names, and replica labels (tp_rank) that `max without`
// collapses.
func randomHistogramHistory(t testing.TB, db *tsdb.DB, rng *rand.Rand, span time.Duration) {
	t.Helper()
	les := []string{"0.1", "0.5", "1.0", "2.5", "+Inf"}
	app := db.Appender(context.Background())
	for j := 0; j < 4; j++ {
		job := fmt.Sprintf("job-%d", j)
		interval := time.Duration(5+rng.IntN(25)) * time.Second
		from := time.Duration(0)
		if rng.IntN(3) == 0 {
			from = time.Duration(rng.Int64N(int64(span / 2)))
		}
		to := span
		if rng.IntN(4) == 0 {
			to = span/2 + time.Duration(rng.Int64N(int64(span/2)))
		}
		rename := time.Duration(-1)
		if rng.IntN(2) == 0 {
			rename = time.Duration(rng.Int64N(int64(span)))
		}
		modelKey := "model_name"
		if j%2 == 1 {
			modelKey = "model"
		}
		replicas := 1 + rng.IntN(2)
		for rep := 0; rep < replicas; rep++ {
			var counts [5]float64
			var sum, count float64
			var lastName string
			for at := from; at <= to; at += interval {
				ts := at + time.Duration(rng.Int64N(int64(interval)/5+1))
				if rng.IntN(12) == 0 {
					continue // a missed scrape
				}
				name := "new_hist"
				if ts < rename {
					name = "old_hist"
				}
				if rng.IntN(40) == 0 {
					counts, sum, count = [5]float64{}, 0, 0 // a restart: counters from zero
				}
				n := float64(rng.IntN(20))
				for k := range counts {
					counts[k] += math.Floor(n * float64(k+1) / 5)
				}
				count += n
				sum += n * rng.Float64() * 3
				lbase := []string{"job", job, modelKey, "m" + strconv.Itoa(j%2)}
				if replicas > 1 {
					lbase = append(lbase, "tp_rank", strconv.Itoa(rep))
				}
				add := func(metric string, v float64, extra ...string) {
					ls := labels.FromStrings(append(append([]string{"__name__", metric}, lbase...), extra...)...)
					_, err := app.Append(0, ls, base.Add(ts).UnixMilli(), v)
					require.NoError(t, err)
				}
				if lastName != "" && lastName != name {
					// the old name's series end with staleness markers
					for k, le := range les {
						_ = k
						_, err := app.Append(0, labels.FromStrings(append(append([]string{"__name__", lastName + "_bucket"}, lbase...), "le", le)...), base.Add(ts).UnixMilli()-1, math.Float64frombits(value.StaleNaN))
						require.NoError(t, err)
					}
				}
				lastName = name
				for k, le := range les {
					v := counts[k]
					if rng.IntN(500) == 0 {
						v = math.NaN()
					}
					add(name+"_bucket", v, "le", le)
				}
				add(name+"_sum", sum)
				add(name+"_count", count)
			}
		}
	}
	require.NoError(t, app.Commit())
}

// onePassQueries are queries of the shapes catalog.HistogramQueries builds (the or chain of
// names, the model label's replacement, the replica collapse, the finite filters), for a window.
func onePassQueries(w string) []string {
	sel := `{job=~"job-0|job-1|job-2|job-3"}`
	chain := func(fn, suffix string) string {
		return fn + `(new_hist` + suffix + sel + `[` + w + `]) or ` + fn + `(old_hist` + suffix + sel + `[` + w + `])`
	}
	collapsed := func(fn, suffix string) string {
		return `max without (tp_rank) (` + chain(fn, suffix) + `)`
	}
	byModel := func(fn, suffix string) string {
		return `label_replace(` + collapsed(fn, suffix) + `, "model_name", "$1", "model", "(.+)")`
	}
	finite := func(fn, suffix string) string {
		r := fn + `(new_hist` + suffix + sel + `[` + w + `])`
		b := fn + `(new_hist_bucket` + sel + `[` + w + `])`
		if suffix == "_bucket" {
			return `(` + r + ` unless ignoring (le) (` + r + ` unless ` + r + ` > -Inf < +Inf))`
		}
		return `((` + r + ` > -Inf < +Inf) unless ignoring (le) (` + b + ` unless ` + b + ` > -Inf < +Inf))`
	}
	var qs []string
	for _, fn := range []string{"rate", "delta", "increase"} {
		qs = append(qs,
			`sum by (le) (`+chain(fn, "_bucket")+`)`,
			`sum by (le, job, model_name) (`+byModel(fn, "_bucket")+`)`,
			`sum by (job) (`+collapsed(fn, "_sum")+`)`,
			`sum (`+chain(fn, "_count")+`)`,
			`sum by (le) (`+finite(fn, "_bucket")+`)`,
			`sum by (job) (`+finite(fn, "_sum")+`)`,
			fn+`(new_hist_count`+sel+`[`+w+`])`,
		)
	}
	qs = append(qs,
		`sum by (job, model_name) (`+byModel("resets", "_count")+`)`,
		`sum (`+chain("resets", "_count")+`)`,
		`resets(old_hist_sum`+sel+`[`+w+`])`,
		`sum by (job) (`+chain("rate", "_sum")+` unless on (job) `+chain("rate", "_count")+`)`,
	)
	return qs
}

// TestOnePassMatchesEngine is the differential test of QueryRanges: over random histories
// (several seeds; resets, missed scrapes, staleness markers, NaN, targets appearing and leaving,
// a renamed metric, replicas), with steps not aligned to scrapes and windows from shorter than
// one scrape interval to several, every query's matrix must equal the engine's QueryRange.
// Equal means the same series, the same timestamps and the same float64, except a sum of more
// than two series, which may differ by a few units in the last place: the engine adds the
// inputs of an `or` in Go map order (rangeEval's series map), so its own answer varies in the
// last bits between runs; there the tolerance is 4 ulps of the largest term's magnitude
// (Kahan–Neumaier summation's error bound is 2 ulps of the sum of magnitudes for these sizes).
func TestOnePassMatchesEngine(t *testing.T) {
	ctx := context.Background()
	span := 2 * time.Hour
	var exact, close, points int
	for seed := uint64(1); seed <= 6; seed++ {
		rng := rand.New(rand.NewPCG(seed, 28))
		db, err := tsdb.Open(t.TempDir(), nil, nil, tsdb.DefaultOptions(), nil)
		require.NoError(t, err)
		randomHistogramHistory(t, db, rng, span)
		e := NewEmbedded(db, EmbeddedOptions{}).(*embedded)
		for _, w := range []string{"7s", "31s", "1m", "5m"} {
			start := base.Add(time.Duration(rng.Int64N(int64(10*time.Minute))) + 137*time.Millisecond)
			end := start.Add(span - 20*time.Minute)
			step := time.Duration(7+rng.IntN(60))*time.Second + time.Duration(rng.IntN(1000))*time.Millisecond
			qs := onePassQueries(w)
			got, inGo, err := e.queryRanges(ctx, qs, start, end, step)
			require.NoError(t, err)
			for k, q := range qs {
				require.True(t, inGo[k], "seed %d: %s was left to the engine", seed, q)
				want, err := e.QueryRange(ctx, q, start, end, step)
				require.NoError(t, err, q)
				require.Equal(t, len(want), len(got[k]), "seed %d window %s: series of %s", seed, w, q)
				for s := range want {
					require.Equal(t, want[s].Metric, got[k][s].Metric, q)
					require.Equal(t, len(want[s].Values), len(got[k][s].Values), "seed %d: points of %s %v", seed, q, want[s].Metric)
					for i, wp := range want[s].Values {
						gp := got[k][s].Values[i]
						require.Equal(t, wp.Timestamp, gp.Timestamp, q)
						a, b := float64(wp.Value), float64(gp.Value)
						points++
						switch {
						case math.Float64bits(a) == math.Float64bits(b) || (math.IsNaN(a) && math.IsNaN(b)):
							exact++
						case math.Abs(a-b) <= 4*ulp(math.Max(math.Abs(a), math.Abs(b))):
							close++
						default:
							t.Fatalf("seed %d window %s step %s: %s %v at %d: engine %v, one pass %v", seed, w, step, q, want[s].Metric, wp.Timestamp, a, b)
						}
					}
				}
			}
		}
	}
	t.Logf("%d points: %d bit-exact, %d within 4 ulps", points, exact, close)
	require.Greater(t, points, 10000)
}

func ulp(x float64) float64 { return math.Nextafter(x, math.Inf(1)) - x }

// TestOnePassLeavesOtherShapesToTheEngine: queries outside the one-pass shape (other functions,
// offsets, arithmetic) are answered by the engine, in the batch's order.
func TestOnePassLeavesOtherShapesToTheEngine(t *testing.T) {
	ctx := context.Background()
	e := NewEmbedded(openHead(t), EmbeddedOptions{}).(*embedded)
	start, end := base.Add(time.Minute), base.Add(9*time.Minute)
	qs := []string{`sum(rate(c_total[1m]))`, `avg(rate(c_total[1m]))`, `rate(c_total[1m] offset 1m)`, `sum(rate(c_total[1m])) / 2`, `histogram_quantile(0.5, sum by (le) (rate(h_bucket[1m])))`}
	got, inGo, err := e.queryRanges(ctx, qs, start, end, 30*time.Second)
	require.NoError(t, err)
	require.Equal(t, []bool{true, false, false, false, false}, inGo)
	for k, q := range qs {
		want, err := e.QueryRange(ctx, q, start, end, 30*time.Second)
		require.NoError(t, err)
		require.Equal(t, want, got[k], q)
	}
	// sum(rate(c_total[1m])) at 5m: (10 + 20)/15 per second, by hand.
	require.InDelta(t, 2.0, float64(got[0][0].Values[8].Value), 1e-12)
	_ = model.Matrix{}
}

// TestOnePassFallsBackToTheEngine: a batch reading more samples than MaxSamples, or a selector
// holding native histograms, is answered by the engine, query by query, with its answer (the
// engine's error included).
func TestOnePassFallsBackToTheEngine(t *testing.T) {
	ctx := context.Background()
	db := openHead(t)
	start, end := base.Add(time.Minute), base.Add(9*time.Minute)
	qs := []string{`sum(rate(c_total[1m]))`, `sum by (le) (delta(h_bucket[1m]))`}
	// The batch reads 205 samples; each query alone stays under the engine's limit of 150.
	small := NewEmbedded(db, EmbeddedOptions{MaxSamples: 150}).(*embedded)
	got, inGo, err := small.queryRanges(ctx, qs, start, end, 30*time.Second)
	require.NoError(t, err)
	require.Equal(t, []bool{false, false}, inGo)
	for k, q := range qs {
		want, err := small.QueryRange(ctx, q, start, end, 30*time.Second)
		require.NoError(t, err)
		require.Equal(t, want, got[k])
	}

	app := db.Appender(ctx)
	for i := 0; i <= 40; i++ {
		h := &histogram.FloatHistogram{Schema: 0, Count: float64(i), Sum: float64(i), PositiveSpans: []histogram.Span{{Offset: 0, Length: 1}}, PositiveBuckets: []float64{float64(i)}}
		_, err := app.AppendHistogram(0, labels.FromStrings("__name__", "nh", "job", "a"), base.Add(time.Duration(i)*15*time.Second).UnixMilli(), nil, h)
		require.NoError(t, err)
	}
	require.NoError(t, app.Commit())
	e := NewEmbedded(db, EmbeddedOptions{}).(*embedded)
	qs = []string{`sum(rate(nh[1m]))`, `sum(rate(c_total[1m]))`}
	got, inGo, err = e.queryRanges(ctx, qs, start, end, 30*time.Second)
	require.NoError(t, err)
	require.Equal(t, []bool{false, false}, inGo)
	for k, q := range qs {
		want, err := e.QueryRange(ctx, q, start, end, 30*time.Second)
		require.NoError(t, err)
		require.Equal(t, want, got[k])
	}
	require.NotEmpty(t, got[0][0].Histograms, "the engine's native-histogram rate")
}
