package plugin

import (
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/backend"
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

// benchStageMetric is the vLLM 0.11 histogram of each latency stage, as a
// Prometheus-native dashboard names it.
var benchStageMetric = map[catalog.Signal]string{
	catalog.QueueTime:     "vllm:request_queue_time_seconds",
	catalog.PrefillTime:   "vllm:request_prefill_time_seconds",
	catalog.DecodeTime:    "vllm:request_decode_time_seconds",
	catalog.InferenceTime: "vllm:request_inference_time_seconds",
	catalog.TTFT:          "vllm:time_to_first_token_seconds",
	catalog.ITL:           "vllm:inter_token_latency_seconds",
	catalog.TPOT:          "vllm:request_time_per_output_token_seconds",
	catalog.E2E:           "vllm:e2e_request_latency_seconds",
}

// keepAppendable passes on only the samples keep accepts, so both stores
// hold exactly the latency histograms the benchmark reads (a 6 h × 10
// targets OpenMetrics file of whole pages would be gigabytes).
type keepAppendable struct {
	inner storage.Appendable
	keep  func(labels.Labels) bool
}

func (k keepAppendable) Appender(ctx context.Context) storage.Appender {
	return keepAppender{Appender: k.inner.Appender(ctx), keep: k.keep}
}

type keepAppender struct {
	storage.Appender
	keep func(labels.Labels) bool
}

func (k keepAppender) Append(ref storage.SeriesRef, l labels.Labels, ts int64, v float64) (storage.SeriesRef, error) {
	if !k.keep(l) {
		return ref, nil
	}
	return k.Appender.Append(ref, l, ts, v)
}

// recordingQuerier remembers the range queries it forwards.
type recordingQuerier struct {
	source.Querier
	mu   sync.Mutex
	seen []string
}

func (r *recordingQuerier) QueryRange(ctx context.Context, q string, start, end time.Time, step time.Duration) (model.Matrix, error) {
	r.mu.Lock()
	r.seen = append(r.seen, q)
	r.mu.Unlock()
	return r.Querier.QueryRange(ctx, q, start, end, step)
}

func (r *recordingQuerier) LabelValuesAny(ctx context.Context, name string, sels []string, start, end time.Time) ([]string, error) {
	return r.Querier.(source.MultiLabelValuer).LabelValuesAny(ctx, name, sels, start, end)
}

// BenchmarkRemoteSideBySide is issue 14's speed comparison, in one run on
// one history: 10 simulated vLLM 0.11 targets × 6 h of 15 s scrapes (the 8
// latency histograms), written into the embedded TSDB and, with promtool
// backfill, into a real Prometheus (Debian 2.42). Over the whole 6 h at 15 s
// steps (1441 points) and a 1 m window:
//
//   - a_promql_seq / a_promql_8way: the dashboard as Prometheus-native
//     PromQL: per stage histogram_quantile for p50, p90, p99 and the mean
//     as rate(_sum)/rate(_count): 32 range queries, one after another or 8
//     at a time.
//   - b_plugin_embedded: the plugin's latency query for 8 stages ×
//     mean/p50/p90/p99 with bounds, embedded mode.
//   - c_plugin_remote: the same query in remote mode against that Prometheus
//     (targets selected by their job, the server's job being the name);
//     c_plugin_remote_instance: each target selected by its instance
//     label, so each selector expands to 10 relabelled branches.
//   - d_plugin_promql_direct: the range queries c_plugin_remote sends,
//     sent straight to Prometheus with the plugin's concurrency: what c
//     costs at least.
//
// a, c and d run once per server holding the history, as sub-benchmarks
// prometheus/…, thanos/… (two Prometheus 2.42 shards backfilled with
// vllm-0…4 and vllm-5…9, a sidecar each and a Thanos Query: thanosOver)
// when thanos is on PATH, and victoriametrics/… (VictoriaMetrics
// single-node, the same samples imported) when victoria-metrics is.
func BenchmarkRemoteSideBySide(b *testing.B) {
	for _, bin := range []string{"prometheus", "promtool"} {
		if _, err := exec.LookPath(bin); err != nil {
			b.Skipf("%s is not on PATH (Debian package prometheus): %v", bin, err)
		}
	}
	const targets, scrape, span = 10, 15 * time.Second, 6 * time.Hour
	ctx := context.Background()
	opts := tsdb.DefaultOptions()
	opts.MinBlockDuration = (24 * time.Hour).Milliseconds()
	opts.MaxBlockDuration = opts.MinBlockDuration
	db, err := tsdb.Open(b.TempDir(), nil, nil, opts, nil)
	require.NoError(b, err)
	defer db.Close()
	keepNames := map[string]bool{}
	for _, m := range benchStageMetric {
		for _, suf := range []string{"_bucket", "_sum", "_count"} {
			keepNames[m+suf] = true
		}
	}
	tee := &teeAppendable{db: db}
	app := keepAppendable{inner: tee, keep: func(l labels.Labels) bool { return keepNames[l.Get(model.MetricNameLabel)] }}
	var js []map[string]string
	var start time.Time
	for n := 0; n < targets; n++ {
		cfg := sim.DefaultConfig()
		require.NoError(b, sim.ApplyScenario(&cfg, "healthy"))
		cfg.Version, cfg.Seed = sim.V011, uint64(n+1)
		s, err := sim.New(cfg, sim.Options{})
		require.NoError(b, err)
		start = s.Start()
		name := fmt.Sprintf("vllm-%d", n)
		_, err = s.FastForward(ctx, app, sim.FastForwardOptions{Duration: span, ScrapeInterval: scrape,
			VLLM: sim.Target{Job: name, Instance: name + ":8000"}})
		require.NoError(b, err)
		js = append(js, map[string]string{"name": name, "url": "http://" + name + ":8000/metrics"})
	}
	omFile := filepath.Join(b.TempDir(), "bench.om.txt")
	require.NoError(b, tee.writeOpenMetrics(omFile))
	b.Logf("%d samples in every store", len(tee.lines))
	tee.lines = nil
	end := start.Add(span)
	// The remote servers, each holding the same history: Prometheus 2.42
	// always; a two-shard Thanos (vllm-0…4 on shard a, vllm-5…9 on b) and
	// VictoriaMetrics single-node when their binaries are on PATH.
	const probe = "vllm:e2e_request_latency_seconds_count"
	servers := []struct{ name, base string }{{"prometheus", startPrometheus(b, omFile)}}
	if _, err := exec.LookPath("thanos"); err == nil {
		inA := func(line string) bool {
			for n := 0; n < targets/2; n++ {
				if strings.Contains(line, fmt.Sprintf(`job="vllm-%d"`, n)) {
					return true
				}
			}
			return false
		}
		servers = append(servers, struct{ name, base string }{"thanos", thanosFromOpenMetrics(b, omFile, inA, end, probe, targets)})
	} else {
		b.Logf("thanos is not on PATH: Thanos left out (%v)", err)
	}
	if _, err := exec.LookPath("victoria-metrics"); err == nil {
		servers = append(servers, struct{ name, base string }{"victoriametrics", victoriaMetricsFromOpenMetrics(b, omFile, end, probe, targets)})
	} else {
		b.Logf("victoria-metrics is not on PATH: VictoriaMetrics left out (%v)", err)
	}
	embedded := source.NewEmbedded(db, source.EmbeddedOptions{})

	// (a) Prometheus-native dashboard queries.
	var native []string
	for _, st := range catalog.LatencyStages {
		m := benchStageMetric[st]
		for _, q := range []string{"0.5", "0.9", "0.99"} {
			native = append(native, fmt.Sprintf(`histogram_quantile(%s, sum by (le) (rate(%s_bucket[1m])))`, q, m))
		}
		native = append(native, fmt.Sprintf(`sum(rate(%s_sum[1m])) / sum(rate(%s_count[1m]))`, m, m))
	}
	rangeAll := func(server source.Querier, qs []string, workers int) {
		sem := make(chan struct{}, workers)
		var wg sync.WaitGroup
		for _, q := range qs {
			wg.Add(1)
			sem <- struct{}{}
			go func() {
				defer func() { <-sem; wg.Done() }()
				m, err := server.QueryRange(ctx, q, start, end, scrape)
				if err != nil || len(m) == 0 {
					b.Errorf("%s: %v (%d series)", q, err, len(m))
				}
			}()
		}
		wg.Wait()
	}
	stages := make([]string, 0, len(catalog.LatencyStages))
	for _, s := range catalog.LatencyStages {
		stages = append(stages, string(s))
	}
	qj, _ := json.Marshal(map[string]any{"queryType": "latency", "stages": stages, "stats": []string{"mean", "p50", "p90", "p99"},
		"bounds": true, "window": "1m"})
	req := &backend.QueryDataRequest{Queries: []backend.DataQuery{{RefID: "A", QueryType: "latency", JSON: qj,
		Interval: scrape, MaxDataPoints: 2000, TimeRange: backend.TimeRange{From: start, To: end}}}}
	runPlugin := func(b *testing.B, inst *Instance) {
		for i := 0; i < b.N; i++ {
			resp, err := inst.QueryData(ctx, req)
			require.NoError(b, err)
			require.NoError(b, resp.Responses["A"].Error)
			require.NotEmpty(b, resp.Responses["A"].Frames)
		}
	}
	raw, _ := json.Marshal(map[string]any{"targets": js})
	st, err := settings.Load(raw, nil)
	require.NoError(b, err)
	b.Run("b_plugin_embedded", func(b *testing.B) { runPlugin(b, newInstanceForTest(st, embedded)) })

	for _, srv := range servers {
		base := srv.base
		server, err := source.NewRemoteWithOptions(base, nil, source.RemoteOptions{Timeout: 5 * time.Minute})
		require.NoError(b, err)
		b.Run(srv.name, func(b *testing.B) {
			b.Run("a_promql_seq", func(b *testing.B) {
				for i := 0; i < b.N; i++ {
					rangeAll(server, native, 1)
				}
			})
			b.Run("a_promql_8way", func(b *testing.B) {
				for i := 0; i < b.N; i++ {
					rangeAll(server, native, 8)
				}
			})

			remoteInst := func(selector func(name string) string) (*Instance, *recordingQuerier) {
				var rjs []map[string]string
				for _, t := range js {
					rjs = append(rjs, map[string]string{"name": t["name"], "selector": selector(t["name"])})
				}
				raw, _ := json.Marshal(map[string]any{"mode": "remote", "remoteTimeout": "5m", "targets": rjs})
				rst, err := settings.LoadWithURL(base, false, raw, nil)
				require.NoError(b, err)
				rec := &recordingQuerier{Querier: server}
				var sels []source.TargetSelector
				for _, t := range rst.Targets {
					ms, err := settings.ParseSelector(t.SelectorOrDefault())
					require.NoError(b, err)
					sels = append(sels, source.TargetSelector{Job: t.Name, Matchers: ms})
				}
				inst := newInstanceForTest(rst, source.MapTargets(rec, sels))
				inst.remote = &remoteState{server: server, url: base}
				return inst, rec
			}
			instJob, rec := remoteInst(func(n string) string { return `{job="` + n + `"}` })
			b.Run("c_plugin_remote", func(b *testing.B) { runPlugin(b, instJob) })
			instInst, _ := remoteInst(func(n string) string { return `{instance="` + n + `:8000"}` })
			b.Run("c_plugin_remote_instance", func(b *testing.B) { runPlugin(b, instInst) })

			// (d) the same range queries as c, sent directly, as concurrently as the
			// plugin sends them (stages in parallel on GOMAXPROCS goroutines).
			rec.mu.Lock()
			sent := map[string]bool{}
			var direct []string
			for _, q := range rec.seen {
				if !sent[q] {
					sent[q] = true
					direct = append(direct, q)
				}
			}
			rec.mu.Unlock()
			require.NotEmpty(b, direct)
			b.Logf("c sends %d range queries per latency query, e.g. %s", len(direct), strings.Split(direct[0], "\n")[0])
			b.Run("d_plugin_promql_direct", func(b *testing.B) {
				for i := 0; i < b.N; i++ {
					rangeAll(server, direct, runtime.GOMAXPROCS(0))
				}
			})
		})
	}
}
