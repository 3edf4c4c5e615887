package collect

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/inferscope/inferscope-llm-datasource/pkg/catalog"
)

// heapBudgetPerTarget is the most live heap one more scraped vLLM 0.11 target may add to a
// collector after its second scrape (scrape loop and its cache, label sets, TSDB head series,
// open chunks and postings), in bytes. This test measured 352–369 KiB a target (285 series
// with the synthetic ones: about 1.3 KB a series) when it was added (issue 34;
// docs/performance.md, "1,000 targets") and 342, 347 KiB when re-run, each in the same process as the
// storeAllSeries measurement below, which gave 415, 419 KiB (384 series: every series of the page
// stored). The budget, 400 KiB, sits about 8 % above the highest figure and under the
// store-everything one, so that a change which makes every target cost more (a cache per
// series, a second copy of the label sets, the store's filter lost) fails here on any machine
// load: it is heap bytes after forced collections, not time. The goal, 300 MiB RSS for
// 1,000 targets, would need this, the runtime's own memory and the heap's growth room under
// 300 KiB together; it is not met.
const heapBudgetPerTarget = 400 << 10

// TestCollectorHeapPerTarget pins the memory one scraped target costs: two collectors, with
// few and with many targets serving the real vLLM 0.11 page, each measured after every
// target's second scrape; the difference of their live heaps over the difference of their
// target counts is the cost of a target, the store's fixed costs (head stripes, block
// reload, the PromQL engine) cancelling out. It also checks that every series the catalogue
// stores (catalog.Stores over the page, plus the five synthetic series of a scrape) is
// in the head: the memory is not saved by dropping what queries read.
func TestCollectorHeapPerTarget(t *testing.T) {
	if testing.Short() {
		t.Skip("scrapes 120 targets")
	}
	page := readPage(t, page011)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; version=0.0.4")
		_, _ = w.Write([]byte(page))
	}))
	t.Cleanup(srv.Close)
	// up, scrape_duration_seconds, scrape_samples_scraped, scrape_samples_post_metric_relabeling, scrape_series_added
	const synthetic = 5
	wantSeries := storedSeriesOfPage(t, page) + synthetic
	all := false // storeAllSeries: every sample of the page stored
	// stacks holds the goroutine stacks in use (runtime.MemStats.StackInuse) at steady state,
	// per collector size: not heap, but resident memory each scrape loop adds too.
	stacks := map[int]uint64{}

	live := func(n int) int64 {
		targets := make([]map[string]any, n)
		for k := range targets {
			targets[k] = map[string]any{"name": fmt.Sprintf("vllm-%04d", k), "url": fmt.Sprintf("%s/t/%d/metrics", srv.URL, k)}
		}
		// A long interval and timeout. The timeout: on a loaded machine a scrape cut by it
		// stores only the synthetic series, which is not the steady state this measures. The
		// interval: the heap is read between scrapes, and a scrape in flight holds its page
		// buffer, parser and uncommitted samples (about 60 KB). At a 5 s interval on a machine
		// at load average 55-68, most targets were mid-scrape whenever the heap was read (458 KiB
		// a target, stacks 33 KiB against 7); at 30 s a scrape's few milliseconds of CPU are a
		// small share of the interval even when the machine is that busy.
		cfg := loadSettings(t, map[string]any{"scrapeInterval": "30s", "scrapeTimeout": "30s", "retention": "1h", "targets": targets, "storeAllSeries": all}, nil)
		before := heapLive()
		c, err := Start(cfg, Options{Dir: t.TempDir()})
		require.NoError(t, err)
		defer func() { require.NoError(t, c.Close()) }()
		// Steady state: every target scraped successfully twice (the second scrape finds its
		// series cached; a failed scrape's up=0 does not count), and every series of the page
		// the catalogue stores in the head. No time budget: the wait is bounded only so that a
		// broken collector fails instead of hanging.
		steady := func() bool {
			v, err := c.Querier().Query(context.Background(), `count(sum_over_time(up[1h]) >= 2)`, time.Now())
			if err != nil || len(v.(model.Vector)) != 1 || int(v.(model.Vector)[0].Value) != n {
				return false
			}
			for _, st := range c.Status() {
				if st.Series != wantSeries {
					return false
				}
			}
			return true
		}
		if !assert.Eventually(t, steady, 10*time.Minute, 200*time.Millisecond) {
			for _, st := range c.Status() {
				require.Equal(t, wantSeries, st.Series, "series of %s in the head", st.Name)
			}
		}
		after := heapLive()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		stacks[n] = ms.StackInuse
		runtime.KeepAlive(c)
		return int64(after) - int64(before)
	}
	const few, many = 20, 100
	a, b := live(few), live(many)
	per := float64(b-a) / (many - few)
	t.Logf("live heap: %d targets %.1f MiB, %d targets %.1f MiB: %.0f KiB per target (%d series each)", few, float64(a)/(1<<20), many, float64(b)/(1<<20), per/1024, wantSeries)
	t.Logf("goroutine stacks in use: %d targets %.1f MiB, %d targets %.1f MiB: %.0f KiB per target", few, float64(stacks[few])/(1<<20), many, float64(stacks[many])/(1<<20),
		(float64(stacks[many])-float64(stacks[few]))/(many-few)/1024)
	require.LessOrEqual(t, per, float64(heapBudgetPerTarget), "live heap per scraped target")

	// INFERSCOPE_HEAP_STORE_ALL=1 measures the same with storeAllSeries (every series the
	// page exposes stored), in the same process, for docs/performance.md; logged, not pinned.
	if os.Getenv("INFERSCOPE_HEAP_STORE_ALL") == "1" {
		all, wantSeries = true, samplesOfPage(t, page)+synthetic
		a2, b2 := live(few), live(many)
		per2 := float64(b2-a2) / (many - few)
		t.Logf("storeAllSeries: live heap: %d targets %.1f MiB, %d targets %.1f MiB: %.0f KiB per target (%d series each)", few, float64(a2)/(1<<20), many, float64(b2)/(1<<20), per2/1024, wantSeries)
	}
}

// samplesOfPage counts the sample lines of a text-format page.
func samplesOfPage(t *testing.T, page string) int {
	t.Helper()
	n := 0
	sc := bufio.NewScanner(strings.NewReader(page))
	for sc.Scan() {
		if line := strings.TrimSpace(sc.Text()); line != "" && !strings.HasPrefix(line, "#") {
			n++
		}
	}
	require.NoError(t, sc.Err())
	return n
}

// heapLive is the heap in use after two forced collections (the second frees what the first
// one's finalizers released).
func heapLive() uint64 {
	var m runtime.MemStats
	runtime.GC()
	runtime.GC()
	runtime.ReadMemStats(&m)
	return m.HeapAlloc
}

// storedSeriesOfPage counts the samples of a text-format page that the collector stores,
// by catalog.Stores on each sample's name (the one HTTP-instrumentator family the
// catalogue reads, http_requests_total, included).
func storedSeriesOfPage(t *testing.T, page string) int {
	t.Helper()
	n := 0
	sc := bufio.NewScanner(strings.NewReader(page))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		name := line[:strings.IndexAny(line, "{ ")]
		if catalog.Stores(name) || name == catalog.HTTPRequestsName {
			n++
		}
	}
	require.NoError(t, sc.Err())
	return n
}
