package plugin

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/backend"
	"github.com/grafana/grafana-plugin-sdk-go/data"
	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/exemplar"
	"github.com/prometheus/prometheus/model/histogram"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/metadata"
	"github.com/prometheus/prometheus/model/value"
	"github.com/prometheus/prometheus/storage"
	"github.com/prometheus/prometheus/tsdb"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/inferscope/inferscope-llm-datasource/pkg/settings"
	"github.com/inferscope/inferscope-llm-datasource/pkg/sim"
	"github.com/inferscope/inferscope-llm-datasource/pkg/source"
)

// teeAppendable writes every float sample the simulator appends both into a
// TSDB (the embedded path) and into an OpenMetrics text exposition with
// timestamps (for `promtool tsdb create-blocks-from openmetrics`), so the two
// stores hold exactly the same samples. Staleness markers (StaleNaN) have no
// OpenMetrics spelling (a NaN in the text is an ordinary NaN), so they are
// dropped from both stores and counted.
type teeAppendable struct {
	db *tsdb.DB
	// shortLE names a job whose `le` labels the OpenMetrics copy spells as
	// Go's shortest float ("1", "0.005") instead of the simulator's
	// Prometheus 3 spelling ("1.0"): what Prometheus 2.42 stores when it
	// scrapes an exporter that writes them so (2.42 keeps le as scraped).
	shortLE string

	mu      sync.Mutex
	lines   []omLine // committed samples
	dropped int      // staleness markers left out of both stores
}

// omLine is one sample line of the exposition with its timestamp in ms.
type omLine struct {
	ts   int64
	text string
}

func (t *teeAppendable) Appender(ctx context.Context) storage.Appender {
	return &teeAppender{t: t, db: t.db.Appender(ctx)}
}

// teeAppender buffers lines until Commit, like a TSDB appender.
type teeAppender struct {
	t       *teeAppendable
	db      storage.Appender
	pending []omLine
	dropped int
}

var errTeeOnlyFloats = errors.New("differential test appender: only float samples are supported")

func (a *teeAppender) Append(ref storage.SeriesRef, l labels.Labels, ts int64, v float64) (storage.SeriesRef, error) {
	if value.IsStaleNaN(v) {
		a.dropped++
		return ref, nil
	}
	ol := l
	if a.t.shortLE != "" && l.Get("job") == a.t.shortLE && l.Has("le") {
		le, err := strconv.ParseFloat(l.Get("le"), 64)
		if err != nil {
			return 0, fmt.Errorf("le %q: %w", l.Get("le"), err)
		}
		b := labels.NewBuilder(l)
		b.Set("le", strconv.FormatFloat(le, 'g', -1, 64))
		ol = b.Labels()
	}
	line, err := openMetricsLine(ol, ts, v)
	if err != nil {
		return 0, err
	}
	a.pending = append(a.pending, omLine{ts: ts, text: line})
	return a.db.Append(ref, l, ts, v)
}

func (a *teeAppender) Commit() error {
	if err := a.db.Commit(); err != nil {
		return err
	}
	a.t.mu.Lock()
	a.t.lines = append(a.t.lines, a.pending...)
	a.t.dropped += a.dropped
	a.t.mu.Unlock()
	a.pending, a.dropped = nil, 0
	return nil
}

func (a *teeAppender) Rollback() error {
	a.pending, a.dropped = nil, 0
	return a.db.Rollback()
}

func (a *teeAppender) SetOptions(*storage.AppendOptions) {}

func (a *teeAppender) AppendExemplar(storage.SeriesRef, labels.Labels, exemplar.Exemplar) (storage.SeriesRef, error) {
	return 0, errTeeOnlyFloats
}

func (a *teeAppender) AppendHistogram(storage.SeriesRef, labels.Labels, int64, *histogram.Histogram, *histogram.FloatHistogram) (storage.SeriesRef, error) {
	return 0, errTeeOnlyFloats
}

func (a *teeAppender) AppendHistogramSTZeroSample(storage.SeriesRef, labels.Labels, int64, int64, *histogram.Histogram, *histogram.FloatHistogram) (storage.SeriesRef, error) {
	return 0, errTeeOnlyFloats
}

func (a *teeAppender) UpdateMetadata(storage.SeriesRef, labels.Labels, metadata.Metadata) (storage.SeriesRef, error) {
	return 0, errTeeOnlyFloats
}

func (a *teeAppender) AppendSTZeroSample(storage.SeriesRef, labels.Labels, int64, int64) (storage.SeriesRef, error) {
	return 0, errTeeOnlyFloats
}

// omEscaper escapes a label value for the OpenMetrics text format.
var omEscaper = strings.NewReplacer(`\`, `\\`, "\n", `\n`, `"`, `\"`)

// openMetricsLine spells one sample as `name{l="v",…} value timestamp`, the
// timestamp in seconds with millisecond decimals. Prometheus 2.42's
// OpenMetrics parser turns it back into int64(seconds·1000), which truncates:
// the line is refused unless that round trip gives ts back exactly.
func openMetricsLine(l labels.Labels, ts int64, v float64) (string, error) {
	var b strings.Builder
	b.WriteString(l.Get(model.MetricNameLabel))
	b.WriteByte('{')
	first := true
	l.Range(func(lb labels.Label) {
		if lb.Name == model.MetricNameLabel {
			return
		}
		if !first {
			b.WriteByte(',')
		}
		first = false
		b.WriteString(lb.Name)
		b.WriteString(`="`)
		b.WriteString(omEscaper.Replace(lb.Value))
		b.WriteByte('"')
	})
	b.WriteString("} ")
	switch {
	case math.IsNaN(v):
		b.WriteString("NaN")
	case math.IsInf(v, 1):
		b.WriteString("+Inf")
	case math.IsInf(v, -1):
		b.WriteString("-Inf")
	default:
		b.WriteString(strconv.FormatFloat(v, 'g', -1, 64))
	}
	secs := strconv.FormatFloat(float64(ts)/1000, 'f', 3, 64)
	f, err := strconv.ParseFloat(secs, 64)
	if err != nil || int64(f*1000) != ts {
		return "", fmt.Errorf("timestamp %d ms does not survive OpenMetrics seconds (%s)", ts, secs)
	}
	b.WriteByte(' ')
	b.WriteString(secs)
	return b.String(), nil
}

// writeOpenMetrics writes the committed samples in timestamp order (stable,
// so each series stays in append order) and the `# EOF` OpenMetrics needs.
// No TYPE lines: promtool stores samples under their full names whatever
// their type, exactly as a scrape stores a histogram's _bucket/_sum/_count.
func (t *teeAppendable) writeOpenMetrics(path string) error {
	sort.SliceStable(t.lines, func(i, j int) bool { return t.lines[i].ts < t.lines[j].ts })
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	w := bufio.NewWriterSize(f, 1<<20)
	for _, l := range t.lines {
		_, _ = w.WriteString(l.text)
		_ = w.WriteByte('\n')
	}
	_, _ = w.WriteString("# EOF\n")
	if err := w.Flush(); err != nil {
		_ = f.Close()
		return err
	}
	return f.Close()
}

// freePort returns a TCP port on 127.0.0.1 that was free a moment ago.
func freePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	port := l.Addr().(*net.TCPAddr).Port
	require.NoError(t, l.Close())
	return port
}

// lockedBuffer collects a child process's output for failure messages.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// startPrometheus backfills the OpenMetrics file into a fresh data directory
// with promtool and starts the Debian prometheus binary on it (no scrape
// configs, 100-year retention so the backfilled blocks are kept), waits for
// /-/ready and returns its base URL. The process is killed in t.Cleanup.
func startPrometheus(t testing.TB, omFile string) string {
	t.Helper()
	dir := t.TempDir()
	dataDir := filepath.Join(dir, "data")
	out, err := exec.Command("promtool", "tsdb", "create-blocks-from", "openmetrics", omFile, dataDir).CombinedOutput()
	require.NoError(t, err, "promtool backfill: %s", out)
	cfg := filepath.Join(dir, "prometheus.yml")
	require.NoError(t, os.WriteFile(cfg, []byte("global:\n  scrape_interval: 15s\n"), 0o600))
	return runPrometheus(t, "--config.file="+cfg, "--storage.tsdb.path="+dataDir, "--storage.tsdb.retention.time=100y")
}

// runPrometheus starts the Debian prometheus binary with args on a free
// loopback port, waits for /-/ready (at most 60 s, failing with its log)
// and returns its base URL; the process is killed in t.Cleanup.
func runPrometheus(t testing.TB, args ...string) string {
	t.Helper()
	port := freePort(t)
	base := fmt.Sprintf("http://127.0.0.1:%d", port)
	var logs lockedBuffer
	cmd := exec.Command("prometheus", append(args, fmt.Sprintf("--web.listen-address=127.0.0.1:%d", port))...)
	cmd.Stdout, cmd.Stderr = &logs, &logs
	require.NoError(t, cmd.Start())
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-exited //nolint:errcheck // waits for the killed process: its exit error says only that it was killed
	})
	deadline := time.Now().Add(60 * time.Second)
	for {
		select {
		case err := <-exited:
			exited <- err
			t.Fatalf("prometheus exited before it was ready (%v):\n%s", err, logs.String())
		default:
		}
		resp, err := http.Get(base + "/-/ready")
		if err == nil {
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return base
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("prometheus not ready after 60 s:\n%s", logs.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// sameFloat reports whether two query answers agree: both NaN, or equal
// within 1e-9 relative. Values within 1e-12 of each other also agree: a sum
// that cancels to about zero (Prometheus 3 sums with Kahan compensation,
// 2.42 does not) has no meaningful relative error.
func sameFloat(a, b float64) bool {
	if math.IsNaN(a) || math.IsNaN(b) {
		return math.IsNaN(a) && math.IsNaN(b)
	}
	if a == b {
		return true
	}
	d := math.Abs(a - b)
	return d <= 1e-12 || d <= 1e-9*math.Max(math.Abs(a), math.Abs(b))
}

// frameKey identifies a frame by its name and the labels of its fields.
func frameKey(f *data.Frame) string {
	var parts []string
	for _, fl := range f.Fields {
		parts = append(parts, fl.Name+fl.Labels.String())
	}
	return f.Name + "|" + strings.Join(parts, "|")
}

// requireSameFrames asserts that two responses carry the same frames (by
// name and field labels), the same values at every row (floats per
// sameFloat, nulls equal), the same notices and the same executed PromQL
// (as a set: stages are fetched concurrently, so the order varies).
func requireSameFrames(t *testing.T, what string, want, got data.Frames) (values int) {
	t.Helper()
	byKey := func(fs data.Frames) map[string]*data.Frame {
		m := map[string]*data.Frame{}
		for _, f := range fs {
			k := frameKey(f)
			require.NotContains(t, m, k, "%s: two frames named %s", what, k)
			m[k] = f
		}
		return m
	}
	wm, gm := byKey(want), byKey(got)
	keys := func(m map[string]*data.Frame) []string {
		var ks []string
		for k := range m {
			ks = append(ks, k)
		}
		sort.Strings(ks)
		return ks
	}
	require.Equal(t, keys(wm), keys(gm), "%s: frames", what)
	require.NotEmpty(t, wm, what)
	queries := func(fs data.Frames) []string {
		set := map[string]bool{}
		for _, f := range fs {
			if f.Meta != nil {
				for _, q := range strings.Split(f.Meta.ExecutedQueryString, "\n") {
					set[q] = true
				}
			}
		}
		var out []string
		for q := range set {
			out = append(out, q)
		}
		sort.Strings(out)
		return out
	}
	assert.Equal(t, queries(want), queries(got), "%s: executed PromQL", what)
	require.NotNil(t, want[0].Meta, what)
	require.NotNil(t, got[0].Meta, what)
	assert.Equal(t, want[0].Meta.Notices, got[0].Meta.Notices, "%s: notices", what)
	for k, wf := range wm {
		gf := gm[k]
		require.Equal(t, wf.Rows(), gf.Rows(), "%s %s: rows", what, k)
		for c := range wf.Fields {
			for r := 0; r < wf.Rows(); r++ {
				wv, gv := wf.Fields[c].At(r), gf.Fields[c].At(r)
				switch w := wv.(type) {
				case *float64:
					g := gv.(*float64)
					if w == nil || g == nil {
						require.True(t, w == nil && g == nil, "%s %s row %d: embedded %v, prometheus %v", what, k, r, fmtPtr(w), fmtPtr(g))
						continue
					}
					require.True(t, sameFloat(*w, *g), "%s %s row %d (%v): embedded %v, prometheus %v", what, k, r, wf.Fields[0].At(r), *w, *g)
					values++
				case float64:
					require.True(t, sameFloat(w, gv.(float64)), "%s %s row %d: embedded %v, prometheus %v", what, k, r, w, gv)
					values++
				case time.Time:
					require.True(t, w.Equal(gv.(time.Time)), "%s %s row %d: time %v vs %v", what, k, r, w, gv)
				default:
					require.Equal(t, wv, gv, "%s %s row %d field %d", what, k, r, c)
				}
			}
		}
	}
	return values
}

func fmtPtr(p *float64) string {
	if p == nil {
		return "null"
	}
	return strconv.FormatFloat(*p, 'g', -1, 64)
}

// TestSameAnswersAsRealPrometheus is the differential test of DESIGN.md §7:
// the same simulated samples are stored (a) in a local TSDB queried by the
// embedded PromQL engine (Prometheus 3.x, module v0.316) and (b) backfilled
// with promtool into a real Debian Prometheus 2.42 queried over its HTTP API;
// every plugin query type over the Prometheus path must give the same frames.
//
// Scrape offset. The simulation starts 7 s after a whole minute, so samples
// lie at :07, :22, :37, :52 and never on the 1-minute query steps or on the
// edges of their 5-minute windows, as with a real scrape's offset. When a
// sample lies exactly on a window's lower edge the two versions disagree by
// design: Prometheus 3.0 made range selectors left-open, (t−5m, t], while
// 2.42 selects [t−5m, t]; with 15 s scrapes aligned to whole minutes 2.42's
// rate() sees 21 samples over exactly 300 s and 3.x sees 20 over 285 s,
// extrapolated, so rates differ whenever a counter does not grow linearly.
// That is a version difference, not a plugin one, and an aligned start is
// not what this test compares.
//
// Rate extrapolation at a series' start. Prometheus 2.51 changed how rate()
// limits extrapolation below a counter's zero (prometheus/prometheus#13725):
// 2.42 first shortens the distance to the window start to the counter's
// extrapolated zero point and then compares it with 1.1 × the mean sample
// spacing (extrapolating by half a spacing when it is longer), while 3.x
// compares first and then takes the zero point if it is nearer. The two
// differ only when the first sample in the window lies more than 1.1
// spacings after the window's start, i.e. in windows where a series begins.
// The simulation's counters begin at its first scrape (0:22), so the 5-minute
// window ending at 5:00 differs (mean queue time 4.5907 ms embedded vs
// 4.6136 ms from 2.42 in a run of this test) and comparisons start at 6:00,
// whose window (1:00, 6:00] starts 7 s before its first sample.
//
// le spelling. The V0 target's bucket bounds are written "1", "0.005" in the
// copy Prometheus 2.42 gets and "1.0", "0.005" in the embedded store: 2.42
// keeps le as scraped, 3.x normalises it. The plugin matches le numerically,
// so its answers (including sums over both targets, whose buckets then meet
// under two spellings) must still agree; so does 2.42's histogram_quantile,
// which merges buckets with equal bounds.
//
// Staleness markers have no OpenMetrics spelling; they are left out of both
// stores (the healthy scenario writes none: no series disappears).
func TestSameAnswersAsRealPrometheus(t *testing.T) {
	if testing.Short() {
		t.Skip("backfills and starts a real Prometheus")
	}
	for _, bin := range []string{"prometheus", "promtool"} {
		if _, err := exec.LookPath(bin); err != nil {
			t.Skipf("%s is not on PATH (Debian package prometheus): %v", bin, err)
		}
	}
	const (
		span   = 35 * time.Minute
		scrape = 15 * time.Second
		offset = 7 * time.Second
	)
	ctx := context.Background()
	opts := tsdb.DefaultOptions()
	opts.MinBlockDuration = (24 * time.Hour).Milliseconds() // one head holds both targets' whole span
	opts.MaxBlockDuration = opts.MinBlockDuration
	db, err := tsdb.Open(t.TempDir(), nil, nil, opts, nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = db.Close() })
	tee := &teeAppendable{db: db, shortLE: "vllm-v06"}

	start := sim.DefaultStart.Add(offset)
	targets := []struct {
		name    string
		version sim.Version
		seed    uint64
	}{{"vllm-v011", sim.V011, 1}, {"vllm-v06", sim.V06, 2}}
	var js []map[string]string
	for _, tg := range targets {
		cfg := sim.DefaultConfig()
		require.NoError(t, sim.ApplyScenario(&cfg, "healthy"))
		cfg.Version, cfg.Seed = tg.version, tg.seed
		s, err := sim.New(cfg, sim.Options{Start: start})
		require.NoError(t, err)
		_, err = s.FastForward(ctx, tee, sim.FastForwardOptions{Duration: span, ScrapeInterval: scrape,
			VLLM: sim.Target{Job: tg.name, Instance: tg.name + ":8000"}})
		require.NoError(t, err)
		js = append(js, map[string]string{"name": tg.name, "url": "http://" + tg.name + ":8000/metrics"})
	}
	assert.Zero(t, tee.dropped, "staleness markers the healthy scenario wrote (left out of both stores)")
	omFile := filepath.Join(t.TempDir(), "sim.om.txt")
	require.NoError(t, tee.writeOpenMetrics(omFile))
	t.Logf("%d samples in both stores", len(tee.lines))

	base := startPrometheus(t, omFile)
	remote, err := source.NewRemote(base, http.DefaultTransport)
	require.NoError(t, err)
	embedded := source.NewEmbedded(db, source.EmbeddedOptions{})
	end := start.Add(span)

	// The backfilled blocks loaded: both stores count the same series at the end.
	countQ := `count({__name__=~".+"})`
	ev, err := embedded.Query(ctx, countQ, end)
	require.NoError(t, err)
	rv, err := remote.Query(ctx, countQ, end)
	require.NoError(t, err)
	require.Len(t, ev.(model.Vector), 1)
	require.Len(t, rv.(model.Vector), 1, "prometheus has no series: the backfilled blocks did not load")
	require.Greater(t, float64(ev.(model.Vector)[0].Value), 100.0)
	require.Equal(t, ev.(model.Vector)[0].Value, rv.(model.Vector)[0].Value, "series at the end")

	// The V0 target's le labels are spelled differently in the two stores.
	for _, c := range []struct {
		q          source.Querier
		has, lacks string
	}{{embedded, "1.0", "1"}, {remote, "1", "1.0"}} {
		les, err := c.q.LabelValues(ctx, "le", `{job="vllm-v06"}`, start, end)
		require.NoError(t, err)
		assert.Contains(t, les, c.has)
		assert.NotContains(t, les, c.lacks)
	}

	// The store, not the plugin: Prometheus's own histogram_quantile over rates.
	hq := `histogram_quantile(0.9, sum by (le) (rate(vllm:e2e_request_latency_seconds_bucket[5m])))`
	for _, at := range []time.Duration{10 * time.Minute, 17*time.Minute + 23*time.Second, 25 * time.Minute, span} {
		ts := sim.DefaultStart.Add(at)
		ev, err := embedded.Query(ctx, hq, ts)
		require.NoError(t, err)
		rv, err := remote.Query(ctx, hq, ts)
		require.NoError(t, err)
		e, r := ev.(model.Vector), rv.(model.Vector)
		require.Len(t, e, 1, "at %s", at)
		require.Len(t, r, 1, "at %s", at)
		assert.Equal(t, e[0].Metric, r[0].Metric)
		assert.True(t, sameFloat(float64(e[0].Value), float64(r[0].Value)), "p90 E2E at %s: embedded %v, prometheus %v", at, e[0].Value, r[0].Value)
		assert.Greater(t, float64(e[0].Value), 0.0)
	}

	raw, _ := json.Marshal(map[string]any{"targets": js})
	st, err := settings.Load(raw, nil)
	require.NoError(t, err)
	instE := newInstanceForTest(st, embedded)
	instR := newInstanceForTest(st, remote)
	// The first step is 6:00, not 5:00: see the extrapolation note above.
	from := sim.DefaultStart.Add(6 * time.Minute)
	queries := map[string]map[string]any{
		"latency": {"queryType": "latency", "window": "5m", "stages": []string{"ttft", "itl", "e2e", "queue_time", "tpot"},
			"stats": []string{"mean", "p50", "p90", "p99"}, "bounds": true},
		"latency by target": {"queryType": "latency", "window": "5m", "groupBy": "target", "stages": []string{"ttft", "itl", "e2e", "queue_time", "tpot"},
			"stats": []string{"mean", "p50", "p90", "p99"}, "bounds": true},
		"breakdown":             {"queryType": "breakdown", "window": "5m", "format": "timeseries"},
		"breakdown by target":   {"queryType": "breakdown", "window": "5m", "groupBy": "target"},
		"throughput":            {"queryType": "throughput", "window": "5m"},
		"throughput by target":  {"queryType": "throughput", "window": "5m", "groupBy": "target"},
		"saturation":            {"queryType": "saturation", "window": "5m"},
		"saturation by target":  {"queryType": "saturation", "window": "5m", "groupBy": "target"},
		"raw running":           {"queryType": "raw", "metric": "vllm:num_requests_running"},
		"raw V0 KV usage":       {"queryType": "raw", "metric": "vllm:gpu_cache_usage_perc"},
		"raw V0 per-step ITL":   {"queryType": "raw", "metric": "vllm:time_per_output_token_seconds_count"},
		"raw generation tokens": {"queryType": "raw", "metric": "vllm:generation_tokens_total"},
	}
	names := make([]string, 0, len(queries))
	for n := range queries {
		names = append(names, n)
	}
	sort.Strings(names)
	total := 0
	for _, name := range names {
		qj, err := json.Marshal(queries[name])
		require.NoError(t, err)
		req := &backend.QueryDataRequest{Queries: []backend.DataQuery{{RefID: "A", QueryType: queries[name]["queryType"].(string), JSON: qj,
			Interval: time.Minute, MaxDataPoints: 1000, TimeRange: backend.TimeRange{From: from, To: end}}}}
		re, err := instE.QueryData(ctx, req)
		require.NoError(t, err)
		rr, err := instR.QueryData(ctx, req)
		require.NoError(t, err)
		require.NoError(t, re.Responses["A"].Error, name)
		require.NoError(t, rr.Responses["A"].Error, name)
		n := requireSameFrames(t, name, re.Responses["A"].Frames, rr.Responses["A"].Frames)
		require.Positive(t, n, "%s: no values compared", name)
		t.Logf("%s: %d frames, %d values equal", name, len(re.Responses["A"].Frames), n)
		total += n
	}
	t.Logf("%d values equal across %d queries", total, len(names))
}
