package collect

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/config"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/relabel"
	"github.com/prometheus/prometheus/model/textparse"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/inferscope/inferscope-llm-datasource/pkg/catalog"
)

// storeFilterConfigs returns the scrape configs of one configured target, one GPU agent and
// one embedded target group (file discovery), keyed by pool name, built from settings with storeAllSeries set to all.
func storeFilterConfigs(t *testing.T, all bool) map[string]*config.ScrapeConfig {
	t.Helper()
	dir := t.TempDir()
	cfg := loadSettings(t, map[string]any{
		"targets":        []map[string]any{{"name": "a", "url": "http://10.0.0.5:8000/metrics"}},
		"gpuAgents":      []map[string]any{{"name": "n", "url": "http://10.0.0.9:9400/metrics", "kind": "dcgm"}},
		"targetGroups":   []map[string]any{{"name": "g", "discovery": map[string]any{"file": map[string]any{"files": []string{filepath.Join(dir, "t.json")}}}}},
		"storeAllSeries": all,
	}, nil)
	scfgs, _, _, err := scrapeConfigs(cfg)
	require.NoError(t, err)
	gcfgs, _, err := groupScrapeConfigs(cfg)
	require.NoError(t, err)
	out := map[string]*config.ScrapeConfig{}
	for _, s := range append(scfgs, gcfgs...) {
		out[s.JobName] = s
	}
	// The agent's scrape settings equal the target's, so the two share pool "a".
	require.Len(t, out, 2, "the target's and agent's pool, and the group")
	return out
}

// kept runs one sample name (with an le label, as a bucket would have) through sc's metric
// relabelling, as the scrape loop does.
func kept(sc *config.ScrapeConfig, name string) bool {
	lb := labels.NewBuilder(labels.FromStrings("__name__", name, "le", "1", "job", "a"))
	return relabel.ProcessBuilder(lb, sc.MetricRelabelConfigs...)
}

// catalogueReadNames lists every sample name a query can read, derived from the catalogue's
// public tables (never a copied list): for every engine and signal, the metrics of Lookup and
// of LookupFor for a V0 vLLM (the TPOT fallback), histograms with their _bucket, _sum and
// _count samples, ratios with their Over and Plus gauges, deprecated twins; and the names
// other readers select: the error SLI, the running ceilings, vLLM's cache_config_info (the
// ceiling's max_num_seqs), the restart gauge, the GPU agent's and the probe's families.
func catalogueReadNames() []string {
	set := map[string]bool{}
	addMetric := func(m catalog.Metric) {
		if m.Kind == catalog.KindHistogram {
			set[m.Name+"_bucket"], set[m.Name+"_sum"], set[m.Name+"_count"] = true, true, true
		} else {
			set[m.Name] = true
		}
		for _, n := range []string{m.Over, m.Plus, m.Twin} {
			if n != "" {
				set[n] = true
			}
		}
	}
	for _, e := range catalog.Engines {
		for _, s := range catalog.AllSignals {
			for _, m := range catalog.Lookup(e, s).Metrics {
				addMetric(m)
			}
			for _, gen := range []string{"v0", "v1"} {
				for _, m := range catalog.LookupFor(catalog.Detection{Engine: e, Generation: gen}, s).Metrics {
					addMetric(m)
				}
			}
		}
	}
	for _, ns := range [][]string{catalog.ErrorSLINames(), catalog.MaxRunningGauges, catalog.AgentMetricNames, catalog.ProbeMetricNames,
		{"vllm:cache_config_info", catalog.ProcessStartTime}} {
		for _, n := range ns {
			set[n] = true
		}
	}
	out := make([]string, 0, len(set))
	for n := range set {
		out = append(out, n)
	}
	return out
}

// TestStoreKeepsEveryCatalogueName: no name the catalogue reads, for any engine (vLLM V0 and
// V1, SGLang, TGI, llama.cpp, TensorRT-LLM, Triton, the gateways, the user's own metrics,
// DCGM, the NVML agent, the probe), is dropped by the store's relabelling, on a configured
// target, a GPU agent or a discovered target group; with storeAllSeries, names no query
// reads are stored too.
func TestStoreKeepsEveryCatalogueName(t *testing.T) {
	names := catalogueReadNames()
	require.Greater(t, len(names), 300, "the catalogue's names were collected")
	for _, all := range []bool{false, true} {
		for job, sc := range storeFilterConfigs(t, all) {
			for _, n := range names {
				assert.True(t, kept(sc, n), "storeAllSeries=%v, %s: %s is stored", all, job, n)
			}
			for _, n := range []string{"python_gc_objects_collected_total", "vllm:request_params_n_bucket", "vllm:prompt_tokens_created", "go_goroutines"} {
				assert.Equal(t, all, kept(sc, n), "storeAllSeries=%v, %s: %s", all, job, n)
			}
		}
	}
}

// TestRealPageStoredSeries: of the real vLLM 0.11 page's 379 series (379 sample lines), the
// store keeps 280, counted by hand with grep: 315 vllm: samples that are not _created, less
// the 36 buckets of the three histograms no query reads (request_params_max_tokens 15,
// request_max_num_generation_tokens 15, request_params_n 6), plus process_start_time_seconds;
// python_*, http_*, the other process_* gauges and every _created sample are dropped. With
// storeAllSeries all 379 are kept.
func TestRealPageStoredSeries(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("testdata", "vllm-0.11-v1-qwen05b-created-series.prom"))
	require.NoError(t, err)
	want := map[bool]int{false: 280, true: 379}
	for _, all := range []bool{false, true} {
		sc := storeFilterConfigs(t, all)["a"]
		p := textparse.NewPromParser(b, labels.NewSymbolTable(), false)
		exposed, stored := 0, 0
		var lset labels.Labels
		for {
			et, err := p.Next()
			if errors.Is(err, io.EOF) {
				break
			}
			require.NoError(t, err)
			if et != textparse.EntrySeries {
				continue
			}
			p.Labels(&lset)
			exposed++
			lb := labels.NewBuilder(lset)
			lb.Set("job", "a")
			if relabel.ProcessBuilder(lb, sc.MetricRelabelConfigs...) {
				stored++
			}
		}
		assert.Equal(t, 379, exposed)
		assert.Equal(t, want[all], stored, "storeAllSeries=%v", all)
	}
}

// TestStoreAllSeriesStoresThePage: a collector scraping the real vLLM 0.11 page stores 285
// series for the target by default (the 280 the filter keeps, counted by hand in
// TestRealPageStoredSeries, plus up and the four scrape_* series) and 384 (all 379 plus the
// five) with storeAllSeries; a family the filter drops (python_gc_objects_collected_total,
// three series on the page) is then queryable.
func TestStoreAllSeriesStoresThePage(t *testing.T) {
	page := readPage(t, page011)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; version=0.0.4")
		_, _ = w.Write([]byte(page))
	}))
	t.Cleanup(srv.Close)
	for _, tc := range []struct {
		all        bool
		series, gc int
	}{{false, 285, 0}, {true, 384, 3}} {
		cfg := loadSettings(t, map[string]any{"scrapeInterval": "2s", "scrapeTimeout": "2s", "retention": "1h", "storeAllSeries": tc.all,
			"targets": []map[string]any{{"name": "v", "url": srv.URL + "/metrics"}}}, nil)
		c, err := Start(cfg, Options{Dir: t.TempDir()})
		require.NoError(t, err)
		// No time budget: bounded only so that a broken collector fails instead of hanging.
		ok := assert.Eventually(t, func() bool {
			for _, st := range c.Status() {
				if st.Name == "v" {
					return st.Up && st.Series == tc.series
				}
			}
			return false
		}, 5*time.Minute, 50*time.Millisecond, "storeAllSeries=%v: %d series stored", tc.all, tc.series)
		if ok {
			v, err := c.Querier().Query(context.Background(), `python_gc_objects_collected_total{job="v"}`, time.Now())
			require.NoError(t, err)
			assert.Len(t, v.(model.Vector), tc.gc, "storeAllSeries=%v", tc.all)
		}
		require.NoError(t, c.Close())
	}
}
