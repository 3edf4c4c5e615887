package fetch

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/storage"
	"github.com/prometheus/prometheus/tsdb"
	"github.com/stretchr/testify/require"

	"github.com/inferscope/inferscope-llm-datasource/pkg/catalog"
	"github.com/inferscope/inferscope-llm-datasource/pkg/settings"
	"github.com/inferscope/inferscope-llm-datasource/pkg/sim"
	"github.com/inferscope/inferscope-llm-datasource/pkg/source"
)

// shifted writes a simulator's scrapes later by a fixed offset (a target that appears inside
// the range, or a second process of one target after a first).
type shifted struct {
	storage.Appendable
	by int64
}

func (s shifted) Appender(ctx context.Context) storage.Appender {
	return shiftedApp{s.Appendable.Appender(ctx), s.by}
}

type shiftedApp struct {
	storage.Appender
	by int64
}

func (a shiftedApp) Append(ref storage.SeriesRef, l labels.Labels, t int64, v float64) (storage.SeriesRef, error) {
	return a.Appender.Append(ref, l, t+a.by, v)
}

// engineOnly hides the embedded querier's batch evaluation: every query goes to the PromQL
// engine, one by one, as before the one-pass read.
type engineOnly struct{ source.Querier }

// simFleet writes, for one seed, five vLLM targets over span: a healthy one (15 s scrapes), one
// restarting every 10 min (counter resets, staleness markers in its downtime), a flaky one
// (failed scrapes, 10 s), one that appears a third into the range, and one whose vLLM moves
// from 0.6 (V0 names) to 0.11 (V1 names) half way: its metrics are renamed inside the range
// and its counters restart.
func simFleet(t *testing.T, seed uint64, span time.Duration) (*tsdb.DB, []string, time.Time) {
	t.Helper()
	ctx := context.Background()
	opts := tsdb.DefaultOptions()
	opts.MinBlockDuration = (24 * time.Hour).Milliseconds() // one head: targets are written one after another
	opts.MaxBlockDuration = opts.MinBlockDuration
	db, err := tsdb.Open(t.TempDir(), nil, nil, opts, nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = db.Close() })
	var start time.Time
	run := func(job, scenario string, v sim.Version, n uint64, scrape, dur, after time.Duration) {
		cfg := sim.DefaultConfig()
		require.NoError(t, sim.ApplyScenario(&cfg, scenario))
		cfg.Version, cfg.Seed = v, seed*10+n
		s, err := sim.New(cfg, sim.Options{})
		require.NoError(t, err)
		start = s.Start()
		_, err = s.FastForward(ctx, shifted{db, after.Milliseconds()}, sim.FastForwardOptions{Duration: dur, ScrapeInterval: scrape,
			VLLM: sim.Target{Job: job, Instance: job + ":8000"}})
		require.NoError(t, err)
	}
	run("v-healthy", "healthy", sim.V011, 1, 15*time.Second, span, 0)
	run("v-restart", "restart", sim.V011, 2, 15*time.Second, span, 0)
	run("v-flaky", "flaky", sim.V011, 3, 10*time.Second, span, 0)
	run("v-late", "healthy", sim.V011, 4, 15*time.Second, span-span/3, span/3)
	run("v-upgraded", "healthy", sim.V06, 5, 15*time.Second, span/2, 0)
	run("v-upgraded", "healthy", sim.V011, 6, 15*time.Second, span/2, span/2+7*time.Second)
	return db, []string{"v-healthy", "v-restart", "v-flaky", "v-late", "v-upgraded"}, start
}

// TestOnePassStageReadsMatchEngine is the differential test of the one-pass stage read: over
// simulator histories (three seeds; restarts, failed scrapes and their staleness markers, a
// target appearing mid-range, metrics renamed by an upgrade inside the range), for every
// latency stage, scope (no groups, by target, by model, a model filter, the finite filters) and
// window (shorter than two scrapes to several minutes), at steps not aligned to the scrapes,
// fetchHistograms over the embedded store (one pass) and over the same store through the
// engine alone must return the same matrices: same series, timestamps and float64s, save a
// sum of more than two series, within 4 ulps (see source.TestOnePassMatchesEngine for why).
// The bucket rates read where a reset occurs are compared too, for every part.
func TestOnePassStageReadsMatchEngine(t *testing.T) {
	if testing.Short() {
		t.Skip("simulates five targets × 90 min per seed")
	}
	ctx := context.Background()
	span := 90 * time.Minute
	var points, exact, ratePoints int
	for seed := uint64(1); seed <= 3; seed++ {
		db, jobs, start := simFleet(t, seed, span)
		var ts []map[string]string
		for _, j := range jobs {
			ts = append(ts, map[string]string{"name": j, "url": "http://" + j + ":8000/metrics"})
		}
		raw, _ := json.Marshal(map[string]any{"targets": ts})
		st, err := settings.Load(raw, nil)
		require.NoError(t, err)
		emb := source.NewEmbedded(db, source.EmbeddedOptions{})
		_, batches := emb.(source.RangeBatcher)
		require.True(t, batches)
		models := []string{sim.DefaultConfig().Model.Name}
		for _, sc := range []catalog.Scope{
			{},
			{By: []string{"target"}},
			{By: []string{"model"}, Models: models},
			{By: []string{"target", "model"}, Finite: true},
			{Targets: []string{"v-upgraded", "v-late"}, Finite: true},
		} {
			for _, w := range []time.Duration{20 * time.Second, 5 * time.Minute} {
				step := time.Duration(23+seed*7)*time.Second + 300*time.Millisecond
				p := Plan{Start: start.Add(3*time.Minute + 1234*time.Millisecond), End: start.Add(span + time.Minute), Step: step, Window: w, Scope: sc}
				for _, stage := range catalog.LatencyStages {
					one := NewRun(ctx, &Env{Settings: &st, Querier: emb, Shared: NewSharedWork(DefaultSharedMaxAge)}, p)
					eng := NewRun(ctx, &Env{Settings: &st, Querier: engineOnly{emb}}, p)
					hqs, err := one.HistogramQueries(ctx, stage, w)
					require.NoError(t, err)
					hqe, err := eng.HistogramQueries(ctx, stage, w)
					require.NoError(t, err)
					require.Equal(t, hqe, hqs)
					got, err := one.fetchHistograms(ctx, hqs)
					require.NoError(t, err)
					want, err := eng.fetchHistograms(ctx, hqs)
					require.NoError(t, err)
					require.ElementsMatch(t, eng.Queries(), one.Queries(), "the executed PromQL is the same (the engine path records it in the order its parallel reads start)")
					// The bucket rates of every part, reset or not.
					var qs []string
					for _, hq := range hqs {
						qs = append(qs, hq.Buckets)
					}
					gotB, err := one.Ranges(ctx, append(qs, hqs[0].Resets))
					require.NoError(t, err)
					for k, f := range want {
						wb, err := eng.Range(ctx, hqs[k].Buckets)
						require.NoError(t, err)
						name := fmt.Sprintf("seed %d %v window %s stage %s part %d", seed, sc, w, stage, k)
						for _, c := range []struct {
							what      string
							want, got model.Matrix
						}{
							{"increases", f.inc, got[k].inc}, {"resets", f.resets, got[k].resets}, {"rates", f.rates, got[k].rates},
							{"sum", f.sum, got[k].sum}, {"count", f.count, got[k].count}, {"sum increase", f.sumInc, got[k].sumInc},
							{"count increase", f.cntInc, got[k].cntInc}, {"buckets", wb, gotB[k]},
						} {
							n, e := sameMatrix(t, name+" "+c.what, c.want, c.got)
							points, exact = points+n, exact+e
							if c.what == "rates" {
								ratePoints += n
							}
						}
					}
				}
			}
		}
	}
	t.Logf("%d points: %d bit-exact, %d within 4 ulps", points, exact, points-exact)
	require.Greater(t, points, 100000)
	require.Greater(t, ratePoints, 1000, "the restarts made fetchHistograms read the bucket rates")
}

// sameMatrix requires got to be want (see TestOnePassStageReadsMatchEngine) and returns the
// points compared and those equal to the bit.
func sameMatrix(t *testing.T, name string, want, got model.Matrix) (n, exact int) {
	t.Helper()
	require.Equal(t, len(want), len(got), "%s: series", name)
	for s := range want {
		require.Equal(t, want[s].Metric, got[s].Metric, name)
		require.Equal(t, len(want[s].Values), len(got[s].Values), "%s %v: points", name, want[s].Metric)
		for i, wp := range want[s].Values {
			gp := got[s].Values[i]
			require.Equal(t, wp.Timestamp, gp.Timestamp, name)
			a, b := float64(wp.Value), float64(gp.Value)
			n++
			switch {
			case math.Float64bits(a) == math.Float64bits(b) || (math.IsNaN(a) && math.IsNaN(b)):
				exact++
			case math.Abs(a-b) <= 4*(math.Nextafter(math.Max(math.Abs(a), math.Abs(b)), math.Inf(1))-math.Max(math.Abs(a), math.Abs(b))):
			default:
				t.Fatalf("%s %v at %d: engine %v, one pass %v", name, want[s].Metric, wp.Timestamp, a, b)
			}
		}
	}
	return n, exact
}
