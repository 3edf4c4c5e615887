package collect

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/rand"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/relabel"
	"github.com/prometheus/prometheus/model/textparse"
	"github.com/prometheus/prometheus/storage"
	"github.com/prometheus/prometheus/tsdb"
	"github.com/stretchr/testify/require"

	"github.com/inferscope/inferscope-llm-datasource/pkg/catalog"
	"github.com/inferscope/inferscope-llm-datasource/pkg/settings"
	"github.com/inferscope/inferscope-llm-datasource/pkg/source"
)

const (
	benchStep      = 15 * time.Second
	benchRetention = 6 * time.Hour
	benchSteps     = int(benchRetention / benchStep) // 1440 scrapes
)

// metricRelabel returns the collector's real metric_relabel_configs.
func metricRelabel(tb testing.TB) []*relabel.Config {
	tb.Helper()
	s, err := settings.Load([]byte(`{"targets":[{"name":"t","url":"http://127.0.0.1:1/metrics"}]}`), nil)
	require.NoError(tb, err)
	scfgs, _, _, err := scrapeConfigs(s)
	require.NoError(tb, err)
	return scfgs[0].MetricRelabelConfigs
}

func openBenchDB(tb testing.TB) *tsdb.DB {
	tb.Helper()
	db, err := tsdb.Open(tb.TempDir(), nil, nil, tsdbOptions(benchRetention, 0), nil)
	require.NoError(tb, err)
	tb.Cleanup(func() { _ = db.Close() })
	return db
}

// cacheEntry mirrors the scrape loop's series cache: raw series bytes → ref and final labels.
type cacheEntry struct {
	ref  storage.SeriesRef
	lset labels.Labels
}

// ingester does what Prometheus's scrape loop does with a page body (its
// AppenderV2 path): textparse by Content-Type, a series cache
// keyed by the raw series text, target labels + metric_relabel_configs only on
// a cache miss, a dropped-series cache, and AppenderV2.Append by ref.
type ingester struct {
	db      *tsdb.DB
	st      *labels.SymbolTable
	rc      []*relabel.Config
	job     string
	inst    string
	cache   map[string]cacheEntry
	dropped map[string]struct{}
}

func newIngester(db *tsdb.DB, rc []*relabel.Config, job, inst string) *ingester {
	return &ingester{db: db, st: labels.NewSymbolTable(), rc: rc, job: job, inst: inst,
		cache: map[string]cacheEntry{}, dropped: map[string]struct{}{}}
}

func (in *ingester) scrape(page []byte, t int64) (int, error) {
	app := in.db.AppenderV2(context.Background())
	p, err := textparse.New(page, "text/plain; version=0.0.4; charset=utf-8", in.st, textparse.ParserOptions{})
	if err != nil {
		return 0, err
	}
	var (
		lset  labels.Labels
		lb    = labels.NewBuilder(labels.EmptyLabels())
		added int
	)
	for {
		et, err := p.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			_ = app.Rollback()
			return added, err
		}
		if et != textparse.EntrySeries {
			continue
		}
		met, _, v := p.Series()
		if _, ok := in.dropped[string(met)]; ok {
			continue
		}
		ce, ok := in.cache[string(met)]
		if !ok {
			p.Labels(&lset)
			lb.Reset(lset)
			lb.Set("job", in.job)
			lb.Set("instance", in.inst)
			if !relabel.ProcessBuilder(lb, in.rc...) {
				in.dropped[string(met)] = struct{}{}
				continue
			}
			ce.lset = lb.Labels()
		}
		ref, err := app.Append(ce.ref, ce.lset, 0, t, v, nil, nil, storage.AOptions{})
		if err != nil {
			_ = app.Rollback()
			return added, err
		}
		if !ok || ref != ce.ref {
			ce.ref = ref
			in.cache[string(met)] = ce
		}
		added++
	}
	return added, app.Commit()
}

// BenchmarkIngestVLLM011 measures the CPU of one scrape of the real 45 KB vLLM
// 0.11 page through parse + relabel + TSDB head append, in steady state (the
// series cache is warm, as from the second scrape on). The scrape manager's
// loop cannot be driven without HTTP and timers, so this reproduces its append
// path with the same libraries and the collector's own relabel rules.
func BenchmarkIngestVLLM011(b *testing.B) {
	page, err := os.ReadFile(page011)
	require.NoError(b, err)
	db := openBenchDB(b)
	in := newIngester(db, metricRelabel(b), "vllm-a", "10.0.0.5:8000")
	t0 := time.Now().Add(-benchRetention).UnixMilli()
	n, err := in.scrape(page, t0)
	require.NoError(b, err)
	b.SetBytes(int64(len(page)))
	b.ReportAllocs()
	b.ResetTimer()
	cpu0 := processCPU()
	for i := 1; i <= b.N; i++ {
		if _, err := in.scrape(page, t0+int64(i)*benchStep.Milliseconds()); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(processCPU()-cpu0)/float64(b.N), "cpu-ns/scrape")
	b.ReportMetric(float64(n), "kept-samples/scrape")
}

// processCPU returns the user+system CPU time this process has used, in ns.
// Unlike ns/op it does not grow when other processes compete for the CPUs;
// it does include this process's GC and TSDB background work.
func processCPU() int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}

// series is one stored series of a synthetic target and how its value moves.
type series struct {
	lset labels.Labels
	kind byte // 'c' counter-like (_bucket, _count, _total), 's' _sum, 'g' gauge
	v    float64
}

// keptSeries parses the 0.11 page once through the collector's relabel rules
// and returns the series one target stores, with job and instance set.
func keptSeries(tb testing.TB, job string) []*series {
	tb.Helper()
	page, err := os.ReadFile(page011)
	require.NoError(tb, err)
	rc := metricRelabel(tb)
	p, err := textparse.New(page, "text/plain", labels.NewSymbolTable(), textparse.ParserOptions{})
	require.NoError(tb, err)
	var out []*series
	var lset labels.Labels
	for {
		et, err := p.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		require.NoError(tb, err)
		if et != textparse.EntrySeries {
			continue
		}
		p.Labels(&lset)
		lb := labels.NewBuilder(lset)
		lb.Set("job", job)
		lb.Set("instance", job+":8000")
		if !relabel.ProcessBuilder(lb, rc...) {
			continue
		}
		name := lset.Get(model.MetricNameLabel)
		kind := byte('g')
		switch {
		case strings.HasSuffix(name, "_sum"):
			kind = 's'
		case strings.HasSuffix(name, "_bucket"), strings.HasSuffix(name, "_count"), strings.HasSuffix(name, "_total"):
			kind = 'c'
		}
		out = append(out, &series{lset: lb.Labels(), kind: kind})
	}
	// The 5 series the scrape loop adds per target.
	for _, n := range []string{"up", "scrape_duration_seconds", "scrape_samples_scraped", "scrape_samples_post_metric_relabeling", "scrape_series_added"} {
		out = append(out, &series{lset: labels.FromStrings("__name__", n, "instance", job+":8000", "job", job), kind: 'g'})
	}
	return out
}

// fill appends benchSteps scrapes, 15 s apart and ending now, of targets
// synthetic vLLM targets: counters grow by 0-5 per scrape, sums by a random
// real, gauges take random small values (so chunks compress like live data).
func fill(tb testing.TB, db *tsdb.DB, targets int) (start, end time.Time, perTarget int) {
	tb.Helper()
	rng := rand.New(rand.NewSource(1))
	end = time.Now().Truncate(benchStep)
	start = end.Add(-time.Duration(benchSteps-1) * benchStep)
	var all [][]*series
	for i := 0; i < targets; i++ {
		all = append(all, keptSeries(tb, fmt.Sprintf("vllm-%02d", i)))
	}
	perTarget = len(all[0])
	for k := 0; k < benchSteps; k++ {
		ts := start.Add(time.Duration(k) * benchStep).UnixMilli()
		app := db.Appender(context.Background())
		for _, ss := range all {
			for _, s := range ss {
				switch s.kind {
				case 'c':
					s.v += float64(rng.Intn(6))
				case 's':
					s.v += rng.Float64() * 3
				default:
					s.v = float64(rng.Intn(10))
				}
				if _, err := app.Append(0, s.lset, ts, s.v); err != nil {
					tb.Fatal(err)
				}
			}
		}
		require.NoError(tb, app.Commit())
	}
	return start, end, perTarget
}

// compact brings db to the steady state of a long-running collector: the
// head compacted into blocks and truncated, as the TSDB's own loop does.
func compact(tb testing.TB, db *tsdb.DB) {
	tb.Helper()
	require.NoError(tb, db.Compact(context.Background()))
}

// dirSize sums the sizes of the regular files under dir.
func dirSize(tb testing.TB, dir string) int64 {
	var n int64
	require.NoError(tb, filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.Type().IsRegular() {
			info, err := d.Info()
			if err != nil {
				return err
			}
			n += info.Size()
		}
		return nil
	}))
	return n
}

func heapInUse() uint64 {
	var ms runtime.MemStats
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// BenchmarkMemoryPerTarget appends 6 h at 15 s of vLLM 0.11 targets' kept
// series into a collector-configured TSDB and reports the Go heap it holds
// per target (heap after − heap with the empty TSDB open), for 1 and 10
// targets, both right after appending (6 h in the head, the worst case) and
// after the head compaction a running TSDB performs every block range.
func BenchmarkMemoryPerTarget(b *testing.B) {
	for _, targets := range []int{1, 10} {
		b.Run(fmt.Sprintf("targets=%d", targets), func(b *testing.B) {
			for i := 0; i < b.N; i++ {
				db := openBenchDB(b)
				db.DisableCompactions()
				before := heapInUse()
				_, _, perTarget := fill(b, db, targets)
				uncompacted := heapInUse()
				db.EnableCompactions()
				compact(b, db)
				after := heapInUse()
				per := float64(int64(after)-int64(before)) / float64(targets)
				b.ReportMetric(per/(1<<20), "heap-MiB/target")
				b.ReportMetric(float64(int64(uncompacted)-int64(before))/float64(targets)/(1<<20), "heap-MiB/target-before-compaction")
				b.ReportMetric(float64(perTarget), "series/target")
				b.ReportMetric(float64(dirSize(b, db.Dir()))/float64(targets)/(1<<20), "disk-MiB/target")
				runtime.KeepAlive(db)
			}
		})
	}
}

// runParallel runs queries on GOMAXPROCS workers, as a handler may do.
func runParallel(b *testing.B, q source.Querier, queries []string, start, end time.Time) {
	work := make(chan string)
	errs := make(chan error, len(queries))
	var wg sync.WaitGroup
	for w := 0; w < runtime.GOMAXPROCS(0); w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for qs := range work {
				if _, err := q.QueryRange(context.Background(), qs, start, end, benchStep); err != nil {
					errs <- err
				}
			}
		}()
	}
	for _, qs := range queries {
		work <- qs
	}
	close(work)
	wg.Wait()
	close(errs)
	for err := range errs {
		b.Fatal(err)
	}
}

// latencyStages are vLLM V1's eight latency histograms, one per catalogue latency stage.
var latencyStages = []string{
	"vllm:request_queue_time_seconds", "vllm:request_prefill_time_seconds", "vllm:request_decode_time_seconds",
	"vllm:request_inference_time_seconds", "vllm:time_to_first_token_seconds", "vllm:inter_token_latency_seconds",
	"vllm:request_time_per_output_token_seconds", "vllm:e2e_request_latency_seconds",
}

// BenchmarkLatencyQuery: 10 targets × 6 h at 15 s; one op runs, for each of the
// 8 latency stages, the bucket, sum and count range queries over the 6 h at
// 15 s steps (1440 steps). "plain" uses `sum by (le, job) (rate(x_bucket[1m]))`
// on vLLM V1 names; "catalog" uses catalog.HistogramPromQL grouped by target
// (every engine's names joined with `or`, as the latency handler asks).
// The -parallel variants run the 24 queries on GOMAXPROCS workers.
func BenchmarkLatencyQuery(b *testing.B) {
	db := openBenchDB(b)
	start, end, _ := fill(b, db, 10)
	compact(b, db)
	q := source.NewEmbedded(db, source.EmbeddedOptions{})
	ctx := context.Background()

	plain := make([]string, 0, 3*len(latencyStages))
	for _, m := range latencyStages {
		plain = append(plain,
			fmt.Sprintf(`sum by (le, job) (rate(%s_bucket[1m]))`, m),
			fmt.Sprintf(`sum by (job) (rate(%s_sum[1m]))`, m),
			fmt.Sprintf(`sum by (job) (rate(%s_count[1m]))`, m))
	}
	var fromCatalog []string
	for _, s := range catalog.LatencyStages {
		hq, err := catalog.HistogramPromQL(s, catalog.Scope{By: []string{"target"}}, time.Minute)
		require.NoError(b, err)
		fromCatalog = append(fromCatalog, hq.Buckets, hq.Sum, hq.Count)
	}
	for _, set := range []struct {
		name     string
		queries  []string
		parallel bool
	}{{"plain", plain, false}, {"catalog", fromCatalog, false}, {"plain-parallel", plain, true}, {"catalog-parallel", fromCatalog, true}} {
		b.Run(set.name, func(b *testing.B) {
			// Every bucket query must return 10 targets' buckets.
			m, err := q.QueryRange(ctx, set.queries[0], start, end, benchStep)
			require.NoError(b, err)
			require.NotEmpty(b, m)
			b.ResetTimer()
			cpu0 := processCPU()
			for i := 0; i < b.N; i++ {
				if set.parallel {
					runParallel(b, q, set.queries, start, end)
					continue
				}
				for _, qs := range set.queries {
					if _, err := q.QueryRange(ctx, qs, start, end, benchStep); err != nil {
						b.Fatal(err)
					}
				}
			}
			b.ReportMetric(float64(processCPU()-cpu0)/float64(b.N)/1e6, "cpu-ms/op")
		})
	}
}

// BenchmarkScrapeManagerVLLM011 runs the real collector (Prometheus scrape
// manager, HTTP over loopback, TSDB) on one target serving the 45 KB vLLM 0.11
// page every 20 ms, and reports the process CPU per scrape. It includes the
// test HTTP server's own work, so it is an upper bound of the collector's cost.
func BenchmarkScrapeManagerVLLM011(b *testing.B) {
	page, err := os.ReadFile(page011)
	require.NoError(b, err)
	var served, stopAt atomic.Int64
	stopAt.Store(-1)
	done := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
		_, _ = w.Write(page)
		if served.Add(1) == stopAt.Load() {
			close(done)
		}
	}))
	defer srv.Close()
	cfg, err := settings.Load([]byte(`{"scrapeInterval":"20ms","targets":[{"name":"vllm-a","url":"`+srv.URL+`/metrics"}]}`), nil)
	require.NoError(b, err)
	c, err := Start(cfg, Options{Dir: b.TempDir()})
	require.NoError(b, err)
	defer func() { _ = c.Close() }()
	for served.Load() < 3 { // warm the scrape cache
		time.Sleep(5 * time.Millisecond)
	}
	b.ResetTimer()
	cpu0 := processCPU()
	n := int64(b.N)
	stopAt.Store(served.Load() + n)
	<-done
	b.ReportMetric(float64(processCPU()-cpu0)/float64(n), "cpu-ns/scrape")
}
