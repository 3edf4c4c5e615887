package plugin

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/backend"
	"github.com/grafana/grafana-plugin-sdk-go/data"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/promql"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"google.golang.org/protobuf/proto"

	"github.com/inferscope/inferscope-llm-datasource/pkg/sim"
	"github.com/inferscope/inferscope-llm-datasource/pkg/source"
)

// growingPage replays a real /metrics page whose counters, histograms
// (buckets, _sum, _count) and summary sums and counts all grow linearly in
// wall-clock time by the same factor, 1 + growth·(t − t0), while gauges stay
// as on the page. Histograms and counters that read zero on the page (an
// idle server) are first given a base: 100 observations with an exponential
// distribution of mean 0.4 s, and 1000 for counters.
//
// Why this shape: with every series of a scrape scaled by one factor, the
// bucket rates of a window are the page's buckets times one number, so
// quantiles, bounds and means do not depend on when each store scraped; and
// with linear growth, rate() equals base·growth wherever the window's
// samples sit (extrapolation to the window's edges is exact for a line).
// Both are known in advance from the page itself.
type growingPage struct {
	fams   []*dto.MetricFamily
	t0     time.Time
	growth float64 // per second
}

func newGrowingPage(t *testing.T, path string, t0 time.Time, growth float64) *growingPage {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	p := expfmt.NewTextParser(model.UTF8Validation)
	m, err := p.TextToMetricFamilies(bytes.NewReader(b))
	require.NoError(t, err, path)
	g := &growingPage{t0: t0, growth: growth}
	names := make([]string, 0, len(m))
	for n := range m {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		mf := m[n]
		for _, mt := range mf.Metric {
			switch mf.GetType() {
			case dto.MetricType_COUNTER:
				if mt.Counter.GetValue() == 0 {
					mt.Counter.Value = proto.Float64(1000)
				}
			case dto.MetricType_HISTOGRAM:
				h := mt.Histogram
				if h.GetSampleCount() == 0 {
					const n, mean = 100.0, 0.4
					for _, bk := range h.Bucket {
						bk.CumulativeCountFloat = proto.Float64(n * (1 - math.Exp(-bk.GetUpperBound()/mean)))
						bk.CumulativeCount = nil
					}
					h.SampleCountFloat, h.SampleCount = proto.Float64(n), nil
					h.SampleSum = proto.Float64(n * mean)
				}
			}
		}
		g.fams = append(g.fams, mf)
	}
	return g
}

// scaled returns the families at factor f.
func (g *growingPage) scaled(f float64) []*dto.MetricFamily {
	out := make([]*dto.MetricFamily, 0, len(g.fams))
	for _, mf := range g.fams {
		c := proto.Clone(mf).(*dto.MetricFamily)
		for _, mt := range c.Metric {
			switch c.GetType() {
			case dto.MetricType_COUNTER:
				mt.Counter.Value = proto.Float64(mt.Counter.GetValue() * f)
			case dto.MetricType_HISTOGRAM:
				h := mt.Histogram
				for _, bk := range h.Bucket {
					if bk.CumulativeCountFloat != nil {
						bk.CumulativeCountFloat = proto.Float64(bk.GetCumulativeCountFloat() * f)
					} else {
						bk.CumulativeCountFloat, bk.CumulativeCount = proto.Float64(float64(bk.GetCumulativeCount())*f), nil
					}
				}
				if h.SampleCountFloat != nil {
					h.SampleCountFloat = proto.Float64(h.GetSampleCountFloat() * f)
				} else {
					h.SampleCountFloat, h.SampleCount = proto.Float64(float64(h.GetSampleCount())*f), nil
				}
				h.SampleSum = proto.Float64(h.GetSampleSum() * f)
			case dto.MetricType_SUMMARY:
				s := mt.Summary
				s.SampleCount = proto.Uint64(uint64(float64(s.GetSampleCount()) * f))
				s.SampleSum = proto.Float64(s.GetSampleSum() * f)
			}
		}
		out = append(out, c)
	}
	return out
}

func (g *growingPage) ServeHTTP(w http.ResponseWriter, _ *http.Request) {
	// One factor per response: every series of a scrape shares it.
	f := 1 + g.growth*time.Since(g.t0).Seconds()
	w.Header().Set("Content-Type", string(expfmt.NewFormat(expfmt.TypeTextPlain)))
	for _, mf := range g.scaled(f) {
		if _, err := expfmt.MetricFamilyToText(w, mf); err != nil {
			return
		}
	}
}

// pageQuantile is the q-quantile of histogram family name on the page
// (summed over its series), by Prometheus's own bucket interpolation: the
// answer every window's quantile must have, since windowed bucket rates are
// the page's buckets times one factor.
func (g *growingPage) pageQuantile(t *testing.T, name string, q float64) float64 {
	t.Helper()
	sum := map[float64]float64{}
	for _, mf := range g.fams {
		if mf.GetName() != name {
			continue
		}
		for _, mt := range mf.Metric {
			hasInf := false
			for _, bk := range mt.Histogram.Bucket {
				v := bk.GetCumulativeCountFloat()
				if bk.CumulativeCountFloat == nil {
					v = float64(bk.GetCumulativeCount())
				}
				sum[bk.GetUpperBound()] += v
				hasInf = hasInf || math.IsInf(bk.GetUpperBound(), 1)
			}
			if !hasInf {
				sum[math.Inf(1)] += mt.Histogram.GetSampleCountFloat() + float64(mt.Histogram.GetSampleCount())
			}
		}
	}
	require.NotEmpty(t, sum, name)
	var bs promql.Buckets
	for le, c := range sum {
		bs = append(bs, promql.Bucket{UpperBound: le, Count: c})
	}
	v, _, _, _, _, _ := promql.BucketQuantile(q, bs)
	return v
}

// startScrapingPrometheus starts the Debian prometheus binary with the given
// scrape configuration on a fresh data directory, waits for /-/ready and
// returns its base URL; the process is killed in t.Cleanup.
func startScrapingPrometheus(t *testing.T, config string) string {
	t.Helper()
	dir := t.TempDir()
	cfg := filepath.Join(dir, "prometheus.yml")
	require.NoError(t, os.WriteFile(cfg, []byte(config), 0o600))
	return runPrometheus(t, "--config.file="+cfg, "--storage.tsdb.path="+filepath.Join(dir, "data"))
}

// relClose reports whether a and b agree within rel (relative to the larger)
// or 1e-12 absolute; NaN agrees with NaN only.
func relClose(a, b, rel float64) bool { return relAbsClose(a, b, rel, 1e-12) }

// relAbsClose is relClose with the absolute floor abs.
func relAbsClose(a, b, rel, abs float64) bool {
	if math.IsNaN(a) || math.IsNaN(b) {
		return math.IsNaN(a) && math.IsNaN(b)
	}
	d := math.Abs(a - b)
	return d <= abs || d <= rel*math.Max(math.Abs(a), math.Abs(b))
}

// textNumber matches the decimal figures printed in a text.
var textNumber = regexp.MustCompile(`-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?`)

// sameTextWithin reports whether a and b are the same text once their figures are masked, with
// each pair of figures within rel of each other.
func sameTextWithin(a, b string, rel float64) bool {
	if a == b {
		return true
	}
	if textNumber.ReplaceAllString(a, "#") != textNumber.ReplaceAllString(b, "#") {
		return false
	}
	na, nb := textNumber.FindAllString(a, -1), textNumber.FindAllString(b, -1)
	for i := range na {
		x, err1 := strconv.ParseFloat(na[i], 64)
		y, err2 := strconv.ParseFloat(nb[i], 64)
		if err1 != nil || err2 != nil || !relAbsClose(x, y, rel, 0) {
			return false
		}
	}
	return true
}

// relDiff is |a − b| relative to the larger, 0 when both are NaN or equal.
func relDiff(a, b float64) float64 {
	if a == b || (math.IsNaN(a) && math.IsNaN(b)) {
		return 0
	}
	return math.Abs(a-b) / math.Max(math.Abs(a), math.Abs(b))
}

// compareFramesAbs asserts both responses have the same frames (name and
// field labels) and rows, and every float within tol(frameKey) relative (a
// negative tolerance compares the frame's structure only) or within the
// absolute floor abs (values that far apart or closer agree whatever their relative difference: the
// breakdown's overhead, a difference of stages that cancels to about 0);
// maxRel is the largest relative difference among values above the floor.
func compareFramesAbs(t *testing.T, what string, want, got data.Frames, tol func(key string) float64, abs float64) (values int, maxRel float64) {
	t.Helper()
	index := func(fs data.Frames) map[string]*data.Frame {
		m := map[string]*data.Frame{}
		for _, f := range fs {
			m[frameKey(f)] = f
		}
		return m
	}
	wm, gm := index(want), index(got)
	var wk, gk []string
	for k := range wm {
		wk = append(wk, k)
	}
	for k := range gm {
		gk = append(gk, k)
	}
	sort.Strings(wk)
	sort.Strings(gk)
	require.Equal(t, wk, gk, "%s: frames", what)
	require.NotEmpty(t, wk, what)
	for k, wf := range wm {
		gf := gm[k]
		require.Equal(t, wf.Rows(), gf.Rows(), "%s %s: rows", what, k)
		rel := tol(k)
		if rel < 0 {
			continue // structure only
		}
		for c := range wf.Fields {
			for r := 0; r < wf.Rows(); r++ {
				wv, gv := wf.Fields[c].At(r), gf.Fields[c].At(r)
				switch w := wv.(type) {
				case *float64:
					g := gv.(*float64)
					if w == nil || g == nil {
						assert.True(t, w == nil && g == nil, "%s %s row %d: embedded %v, remote %v", what, k, r, fmtPtr(w), fmtPtr(g))
						continue
					}
					assert.True(t, relAbsClose(*w, *g, rel, abs), "%s %s row %d (%v): embedded %v, remote %v (tolerance %g)", what, k, r, wf.Fields[0].At(r), *w, *g, rel)
					if math.Abs(*w-*g) > abs {
						maxRel = math.Max(maxRel, relDiff(*w, *g))
					}
					values++
				case float64:
					g := gv.(float64)
					assert.True(t, relAbsClose(w, g, rel, abs), "%s %s row %d: embedded %v, remote %v (tolerance %g)", what, k, r, w, gv, rel)
					if math.Abs(w-g) > abs {
						maxRel = math.Max(maxRel, relDiff(w, g))
					}
					values++
				case time.Time:
					assert.True(t, w.Equal(gv.(time.Time)), "%s %s row %d: time %v vs %v", what, k, r, w, gv)
				case string:
					// Texts (diagnosis evidence and advice) print figures read from each
					// store's own scrapes: the words must match, the figures only within
					// the rate tolerance (two live stores see a counter a scrape apart).
					assert.True(t, sameTextWithin(w, gv.(string), math.Max(rel, 0.01)), "%s %s row %d field %d:\nembedded %q\nremote   %q", what, k, r, c, w, gv)
				default:
					assert.Equal(t, wv, gv, "%s %s row %d field %d", what, k, r, c)
				}
			}
		}
	}
	return values, maxRel
}

// TestRemoteModeSameAnswersLive is the proof of remote mode: a real
// Prometheus (Debian 2.42) scrapes loopback targets — two replayed corpus
// pages growing over time (vLLM 0.11 V1 and 0.8 V0) and the simulator with
// its GPU agent — while an embedded-mode instance scrapes the same targets.
// On the server, targets are told apart by label selectors that are not
// their names (one job "llm" for both pages, a `replica` label), so the
// target mapping is exercised. Every query type then runs in both modes.
//
// Tolerances, and why:
//   - Replayed pages, per target, quantiles, bounds and means: 1e-9 relative. Every
//     series of one scrape is scaled by the same factor, so the windowed
//     bucket rates are the page's buckets times one number, whatever the
//     instants each store scraped at.
//   - Replayed pages, rates (throughput, preemptions, the breakdown table's
//     request count): 5e-2 relative. The page's values grow linearly, so
//     rate() is the slope wherever the samples sit, except that a sample's
//     timestamp is the scrape's start while the page computes its value when
//     the request arrives, in each store differently: usually under a
//     millisecond (1e-4 over a 10 s window), but on a loaded machine a
//     scrape can wait tens of milliseconds (30 ms measured: 3e-3), and 250 ms
//     at both edges of the window is 5e-2.
//   - Quantiles and means over both replayed targets together: 5e-2, the
//     rates' tolerance. Summing two targets' bucket rates weighs them by
//     their rates, which carry the error above (measured up to 1e-2 while
//     the package's other tests loaded the machine); per target, the one
//     factor cancels and 1e-9 holds.
//   - Gauges (running, waiting, KV usage, GPU memory and limits): exact.
//   - The simulator's stage means over the whole range: 15 % relative. Its
//     counters grow with random requests, and the two stores scrape it up to
//     one scrape interval (1 s) apart, so each window's edges see different
//     requests: over a 20 s window at a few requests/s that is a few
//     requests of a hundred. Only the simulator's structure (same frames,
//     same labels) and its GPU constants are compared exactly.
//
// The first window after the start is left out: Prometheus 2.42 and the
// embedded 3.x engine extrapolate rate() differently where a series begins
// (see TestSameAnswersAsRealPrometheus).
func TestRemoteModeSameAnswersLive(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a real Prometheus for about a minute")
	}
	if _, err := exec.LookPath("prometheus"); err != nil {
		t.Skipf("prometheus is not on PATH (install the Debian package prometheus to run this test): %v", err)
	}
	sameAnswersLive(t, liveBackend{name: "Prometheus 2.42", start: func(t *testing.T, h liveHosts) (string, func()) {
		return startScrapingPrometheus(t, liveScrapeConfig(h, nil, "")), nil
	}})
}

// liveHosts are the loopback host:port of the live test's targets: the
// replayed vLLM 0.11 V1 page, the replayed vLLM 0.8 V0 page, the simulator
// and its GPU agent.
type liveHosts struct{ v1, v0, sim, gpus string }

// liveScrapeConfig is the server's scrape configuration for the live test:
// every second, the two pages in one job "llm" (the V0 page with a replica
// label), the simulator in job "sim" and its agent in job "gpus". keep
// (nil: all) selects which of "v1", "v0", "sim", "gpus" this server
// scrapes; global is added under global: (external labels of a shard).
func liveScrapeConfig(h liveHosts, keep func(string) bool, global string) string {
	if keep == nil {
		keep = func(string) bool { return true }
	}
	var b strings.Builder
	b.WriteString("global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\n" + global + "scrape_configs:\n")
	if keep("v1") || keep("v0") {
		b.WriteString("  - job_name: llm\n    static_configs:\n")
		if keep("v1") {
			fmt.Fprintf(&b, "      - targets: [%q]\n", h.v1)
		}
		if keep("v0") {
			fmt.Fprintf(&b, "      - targets: [%q]\n        labels: {replica: v0}\n", h.v0)
		}
	}
	if keep("sim") {
		fmt.Fprintf(&b, "  - job_name: sim\n    static_configs:\n      - targets: [%q]\n", h.sim)
	}
	if keep("gpus") {
		fmt.Fprintf(&b, "  - job_name: gpus\n    static_configs:\n      - targets: [%q]\n", h.gpus)
	}
	return b.String()
}

// liveBackend is a Prometheus-compatible server (or cluster) for
// sameAnswersLive.
type liveBackend struct {
	name string
	// start launches the server scraping the hosts every second (see
	// liveScrapeConfig), waits until it answers queries and returns the
	// base URL of its query API, and optionally mid: called 28 s after
	// start returned, in the middle of the compared range (ready+18 s …
	// ready+38 s), e.g. to move a target between Thanos shards.
	start func(t *testing.T, h liveHosts) (base string, mid func())
	// tol, when set, widens the tolerance def of frame key of the case
	// named what (see the backend's test for why).
	tol func(what, key string, def float64) float64
	// notices, when set, returns the notices remote mode adds on this
	// backend to the frames of a query of type queryType.
	notices func(queryType string) []string
	// quantileTol is the tolerance between the plugin's p90 TTFT and the
	// server's own histogram_quantile (0: 1e-9).
	quantileTol float64
	// noServerQuantile skips comparing with the server's histogram_quantile.
	noServerQuantile bool
	// abs is the absolute floor under which two values agree (0: 1e-12).
	abs float64
	// victoriaMetrics is whether source.IsVictoriaMetrics must say yes.
	victoriaMetrics bool
}

// sameAnswersLive runs every query type in embedded mode and in remote
// mode against be, both collecting the same live targets, and compares the
// frames (see TestRemoteModeSameAnswersLive for the targets and the
// tolerances).
func sameAnswersLive(t *testing.T, be liveBackend) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	t0 := time.Now()
	pageV1 := newGrowingPage(t, "testdata/vllm-0.11-v1-qwen05b-created-series.prom", t0, 0.01)
	pageV0 := newGrowingPage(t, "testdata/vllm-0.8-v0-multiproc-qwen3-0.6b-under-load-decommented.prom", t0, 0.02)
	s1, s0 := httptest.NewServer(pageV1), httptest.NewServer(pageV0)
	defer s1.Close()
	defer s0.Close()
	cfg := sim.DefaultConfig()
	require.NoError(t, sim.ApplyScenario(&cfg, "healthy"))
	cfg.Seed = 7
	sm, err := sim.New(cfg, sim.Options{Start: t0})
	require.NoError(t, err)
	vs := sim.NewServer(sm)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); _ = vs.Run(ctx) }()
	defer wg.Wait()
	defer cancel()
	ss, sg := httptest.NewServer(vs.Handler()), httptest.NewServer(vs.GPUHandler())
	defer ss.Close()
	defer sg.Close()
	host := func(u string) string { return strings.TrimPrefix(u, "http://") }

	hosts := liveHosts{v1: host(s1.URL), v0: host(s0.URL), sim: host(ss.URL), gpus: host(sg.URL)}
	jsonData := map[string]any{
		"scrapeInterval": "1s", "scrapeTimeout": "1s", "retention": "1h",
		"targets": []map[string]any{
			{"name": "replay-v1", "url": s1.URL + "/metrics", "selector": fmt.Sprintf(`{job="llm", instance=%q}`, host(s1.URL))},
			{"name": "replay-v0", "url": s0.URL + "/metrics", "selector": `{replica="v0"}`, "labels": map[string]string{"replica": "v0"}},
			// No selector: the server's job is the target's name.
			{"name": "sim", "url": ss.URL + "/metrics", "agent": "node"},
		},
		"gpuAgents": []map[string]any{{"name": "node", "url": sg.URL + "/metrics", "selector": `{job="gpus"}`}},
	}
	embJSON, err := json.Marshal(jsonData)
	require.NoError(t, err)
	ei, err := NewInstance(ctx, backend.DataSourceInstanceSettings{UID: "emb", Type: PluginID, JSONData: embJSON})
	require.NoError(t, err)
	emb := ei.(*Instance)
	defer emb.Dispose()
	require.NoError(t, emb.settingsErr)

	began := time.Now()
	base, mid := be.start(t, hosts)
	ready := time.Now()
	t.Logf("%s: query API %s ready after %s", be.name, base, ready.Sub(began).Round(time.Millisecond))
	isVM, err := source.IsVictoriaMetrics(ctx, base, nil)
	require.NoError(t, err)
	require.Equal(t, be.victoriaMetrics, isVM, "%s: is it VictoriaMetrics?", be.name)
	jsonData["mode"] = "remote"
	// A safety net, not what is measured: on a loaded machine the live Prometheus took more
	// than 20 s over a burn-rate range query (found by scripts/ci-under-load.sh).
	jsonData["remoteTimeout"] = "5m"
	remJSON, err := json.Marshal(jsonData)
	require.NoError(t, err)
	ri, err := NewInstance(ctx, backend.DataSourceInstanceSettings{UID: "rem", Type: PluginID, URL: base, JSONData: remJSON})
	require.NoError(t, err)
	rem := ri.(*Instance)
	defer rem.Dispose()
	require.NoError(t, rem.settingsErr)
	require.Nil(t, rem.collector, "remote mode scrapes nothing")

	// Let both stores collect: one 10 s window to skip, 20 s to compare.
	const window = 10 * time.Second
	// The range ends 5 s before now: on a loaded machine a store's scrape can
	// lag its schedule by seconds, and a window ending at a scrape not yet
	// taken would compare a missing sample with a present one.
	if mid != nil {
		time.Sleep(time.Until(ready.Add(28 * time.Second)))
		mid()
	}
	time.Sleep(time.Until(ready.Add(43 * time.Second)))
	to := time.Now().Add(-5 * time.Second).Truncate(time.Second)
	from := to.Add(-20 * time.Second)
	require.True(t, from.After(ready.Add(window+5*time.Second)), "the compared range starts a full window after the first scrape")

	run := func(inst *Instance, q map[string]any, rng backend.TimeRange) backend.DataResponse {
		qj, err := json.Marshal(q)
		require.NoError(t, err)
		resp, err := inst.QueryData(ctx, &backend.QueryDataRequest{Queries: []backend.DataQuery{{RefID: "A", QueryType: q["queryType"].(string),
			JSON: qj, Interval: time.Second, MaxDataPoints: 1000, TimeRange: rng}}})
		require.NoError(t, err)
		return resp.Responses["A"]
	}
	rng := backend.TimeRange{From: from, To: to}
	replay := []string{"replay-v0", "replay-v1"}
	exact := func(string) float64 { return 1e-9 }
	rates := func(k string) float64 {
		if strings.Contains(k, "preemptions") || strings.Contains(k, "/s") {
			return 5e-2
		}
		return 1e-9 // gauges and ratios of one target's rates
	}
	allStages := []string{"queue_time", "prefill_time", "decode_time", "inference_time", "ttft", "itl", "tpot", "e2e"}
	cases := []struct {
		name   string
		q      map[string]any
		tol    func(string) float64
		range_ backend.TimeRange
	}{
		{"latency by target", map[string]any{"queryType": "latency", "targets": replay, "window": "10s", "groupBy": "target", "stages": allStages,
			"stats": []string{"mean", "p50", "p90", "p99"}, "bounds": true}, exact, rng},
		{"latency by target, refined", map[string]any{"queryType": "latency", "targets": replay, "window": "10s", "groupBy": "target",
			"stages": allStages, "stats": []string{"mean", "p50", "p99"}, "estimator": "refined"}, exact, rng},
		{"latency over both targets", map[string]any{"queryType": "latency", "targets": replay, "window": "10s", "stages": allStages,
			"stats": []string{"mean", "p50", "p90", "p99"}, "bounds": true}, func(string) float64 { return 5e-2 }, rng},
		{"breakdown", map[string]any{"queryType": "breakdown", "targets": replay, "window": "10s", "groupBy": "target"}, exact, rng},
		{"breakdown table", map[string]any{"queryType": "breakdown", "targets": replay, "format": "table", "groupBy": "target"},
			func(string) float64 { return 5e-2 }, rng}, // the table's request count is a rate × range
		{"throughput", map[string]any{"queryType": "throughput", "targets": replay, "window": "10s", "groupBy": "target"}, rates, rng},
		{"saturation", map[string]any{"queryType": "saturation", "targets": replay, "window": "10s", "groupBy": "target"}, rates, rng},
		{"raw", map[string]any{"queryType": "raw", "targets": replay, "metric": "vllm:num_requests_running"}, exact, rng},
		{"events", map[string]any{"queryType": "events", "window": "10s"}, exact, rng},
		// The SLO table covers the objectives' 30-day period, i.e. everything
		// each store holds, and the two stores began scraping a few seconds
		// apart (the embedded one before Prometheus was up): its history and
		// request counts differ by design, so only its shape is compared.
		{"slo (shape)", map[string]any{"queryType": "slo", "targets": replay}, func(string) float64 { return -1 }, rng},
		// Likewise every burn-rate window (5m … 3d) is longer than the ~40 s
		// each store holds, so each window covers a store's whole history,
		// including the window where its series begin, which Prometheus 2.42
		// and the embedded 3.x engine extrapolate differently (see above):
		// 6 % apart when the two stores started a few seconds apart on a
		// loaded machine. Only the shape is compared; TestBurnRateStepHistoryThroughPromQL
		// checks the values against hand-computed ones.
		{"burn rate (shape)", map[string]any{"queryType": "burn_rate", "targets": replay}, func(string) float64 { return -1 }, rng},
		{"goodput", map[string]any{"queryType": "goodput", "profile": "interactive-chat", "targets": replay, "window": "10s"}, func(string) float64 { return 5e-2 }, rng},
		{"buckets", map[string]any{"queryType": "buckets", "targets": []string{"replay-v1"}, "window": "10s", "stages": []string{"ttft"}}, exact, rng},
		{"diagnosis table", map[string]any{"queryType": "diagnosis", "targets": replay, "window": "10s"}, func(string) float64 { return 5e-2 }, rng},
		{"diagnosis numeric", map[string]any{"queryType": "diagnosis", "targets": replay, "window": "10s", "format": "numeric"},
			func(string) float64 { return 5e-2 }, rng},
		{"gpu constants", map[string]any{"queryType": "gpu", "agents": []string{"node"}, "signals": []string{"fb_total", "power_limit", "sm_clock_max"}},
			func(k string) float64 {
				if strings.Contains(k, "signal=saturation") {
					return -1 // the simulator's SM activity, sampled at different instants
				}
				return 1e-9
			}, rng},
		{"simulator breakdown table", map[string]any{"queryType": "breakdown", "targets": []string{"sim"}, "format": "table"},
			func(string) float64 { return 0.15 }, backend.TimeRange{From: ready.Add(window + 5*time.Second), To: to}},
	}
	total := 0
	for _, c := range cases {
		re, rr := run(emb, c.q, c.range_), run(rem, c.q, c.range_)
		require.NoError(t, re.Error, "embedded %s", c.name)
		require.NoError(t, rr.Error, "remote %s", c.name)
		tol := c.tol
		if be.tol != nil {
			tol = func(k string) float64 { return be.tol(c.name, k, c.tol(k)) }
		}
		abs := be.abs
		if abs == 0 {
			abs = 1e-12
		}
		n, maxRel := compareFramesAbs(t, c.name, re.Frames, rr.Frames, tol, abs)
		notices := func(fs data.Frames) []string {
			var out []string
			for _, f := range fs {
				if f.Meta != nil {
					for _, nt := range f.Meta.Notices {
						out = append(out, nt.Text)
					}
				}
			}
			sort.Strings(out)
			return out
		}
		if c.tol("") >= 0 {
			want := notices(re.Frames)
			if be.notices != nil {
				// The backend's notice is on every frame of the query.
				for _, nt := range be.notices(c.q["queryType"].(string)) {
					for range rr.Frames {
						want = append(want, nt)
					}
				}
				sort.Strings(want)
			}
			assert.Equal(t, want, notices(rr.Frames), "%s: notices", c.name)
		}
		t.Logf("%s: %d frames, %d values compared, largest relative difference %.2g", c.name, len(re.Frames), n, maxRel)
		total += n
	}

	// The simulator's latency: same frames and labels in both modes (values
	// differ by scrape timing, see above).
	lq := map[string]any{"queryType": "latency", "targets": []string{"sim"}, "window": "10s", "stages": []string{"ttft", "e2e"}, "stats": []string{"p90"}}
	le, lr := run(emb, lq, rng), run(rem, lq, rng)
	require.NoError(t, le.Error)
	require.NoError(t, lr.Error)
	keys := func(fs data.Frames) []string {
		var out []string
		for _, f := range fs {
			out = append(out, frameKey(f))
		}
		sort.Strings(out)
		return out
	}
	assert.Equal(t, keys(le.Frames), keys(lr.Frames), "simulator latency frames")

	// The targets table: what each mode knows of every target. The url column
	// differs by design (URL vs selector on the server), and so do the
	// series counts (the embedded store drops families the catalogue does
	// not use; the server keeps the whole page).
	te, tr := run(emb, map[string]any{"queryType": "targets"}, rng), run(rem, map[string]any{"queryType": "targets"}, rng)
	require.NoError(t, te.Error)
	require.NoError(t, tr.Error)
	for _, col := range []string{"target", "kind", "engine", "generation", "version", "models", "up"} {
		fe, _ := te.Frames[0].FieldByName(col)
		fr, _ := tr.Frames[0].FieldByName(col)
		require.NotNil(t, fe, col)
		require.NotNil(t, fr, col)
		for r := 0; r < fe.Len(); r++ {
			assert.Equal(t, fe.At(r), fr.At(r), "targets table %s row %d", col, r)
		}
	}
	urls, _ := tr.Frames[0].FieldByName("url")
	names, _ := tr.Frames[0].FieldByName("target")
	shown := map[string]string{}
	for r := 0; r < names.Len(); r++ {
		shown[fmt.Sprint(names.At(r))] = fmt.Sprint(urls.At(r))
	}
	assert.Equal(t, `{replica="v0"}`, shown["replay-v0"], "remote mode shows the selector")
	assert.Equal(t, `{job="sim"}`, shown["sim"], "the default selector")

	// Independent answers: the replayed pages' quantiles are those of the
	// page itself; Prometheus's own histogram_quantile agrees with the
	// plugin's remote-mode quantile at every step.
	ttft := run(rem, map[string]any{"queryType": "latency", "targets": []string{"replay-v0"}, "window": "10s", "stages": []string{"ttft"},
		"stats": []string{"p90"}, "bounds": false}, rng)
	require.NoError(t, ttft.Error)
	require.Len(t, ttft.Frames, 1)
	want := pageV0.pageQuantile(t, "vllm:time_to_first_token_seconds", 0.9)
	server, err := source.NewRemote(base, nil)
	require.NoError(t, err)
	hq := `histogram_quantile(0.9, sum by (le) (rate(vllm:time_to_first_token_seconds_bucket{replica="v0"}[10s])))`
	f := ttft.Frames[0]
	checked := 0
	for r := 0; r < f.Rows(); r++ {
		ts := f.Fields[0].At(r).(time.Time)
		v := f.Fields[1].At(r)
		var got float64
		switch x := v.(type) {
		case *float64:
			require.NotNil(t, x, "p90 TTFT at %s", ts)
			got = *x
		case float64:
			got = x
		}
		assert.True(t, relClose(got, want, 1e-9), "p90 TTFT at %s: plugin %v, page %v", ts, got, want)
		checked++
		if be.noServerQuantile {
			continue
		}
		pv, err := server.Query(ctx, hq, ts)
		require.NoError(t, err)
		vec := pv.(model.Vector)
		require.Len(t, vec, 1, "histogram_quantile at %s", ts)
		qt := be.quantileTol
		if qt == 0 {
			qt = 1e-9
		}
		assert.True(t, relClose(got, float64(vec[0].Value), qt), "p90 TTFT at %s: plugin %v, %s histogram_quantile %v", ts, got, be.name, vec[0].Value)
	}
	require.Greater(t, checked, 10)
	t.Logf("%s: %d values agree across %d queries; p90 TTFT %s s = page = server at %d steps", be.name, total, len(cases), strconv.FormatFloat(want, 'g', 6, 64), checked)

	// Health in remote mode: reachability and per target what the server holds.
	h, err := rem.CheckHealth(ctx, &backend.CheckHealthRequest{})
	require.NoError(t, err)
	assert.Equal(t, backend.HealthStatusOk, h.Status, h.Message)
	assert.Contains(t, h.Message, "Remote Prometheus "+base+" answered")
	assert.Equal(t, be.victoriaMetrics, strings.Contains(h.Message, "It is VictoriaMetrics"), h.Message)
	assert.Contains(t, h.Message, "replay-v0: vllm v0")
	assert.Contains(t, h.Message, "replay-v1: vllm v1")
}
