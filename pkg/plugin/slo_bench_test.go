package plugin

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/backend"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/storage"
	"github.com/prometheus/prometheus/tsdb"
	"github.com/stretchr/testify/require"

	"github.com/inferscope/inferscope-llm-datasource/pkg/settings"
	"github.com/inferscope/inferscope-llm-datasource/pkg/sim"
	"github.com/inferscope/inferscope-llm-datasource/pkg/source"
)

// fanOut is an Appendable that stores every sample of the one simulated
// target under n job names (vllm-0 … vllm-<n−1>), so a fleet's history
// costs one simulation.
type fanOut struct {
	db   *tsdb.DB
	jobs []string
}

type fanOutAppender struct {
	storage.Appender
	f *fanOut
	a storage.Appender
	b labels.Builder
}

func (f *fanOut) Appender(ctx context.Context) storage.Appender {
	return &fanOutAppender{f: f, a: f.db.Appender(ctx)}
}

func (a *fanOutAppender) Append(_ storage.SeriesRef, l labels.Labels, t int64, v float64) (storage.SeriesRef, error) {
	for _, j := range a.f.jobs {
		a.b.Reset(l)
		a.b.Set("job", j)
		a.b.Set("instance", j+":8000")
		if _, err := a.a.Append(0, a.b.Labels(), t, v); err != nil {
			return 0, err
		}
	}
	return 0, nil
}
func (a *fanOutAppender) Commit() error   { return a.a.Commit() }
func (a *fanOutAppender) Rollback() error { return a.a.Rollback() }

// fleetDay is 24 h of 15 s scrapes of the healthy simulated vLLM target
// stored for 20 targets, with an instance over it using the default SLO
// profiles. Built once per benchmark binary.
var fleetDay = struct {
	once  sync.Once
	inst  *Instance
	start time.Time
	err   error
}{}

const fleetTargets, fleetSpan = 20, 24 * time.Hour

func fleet(b *testing.B) (*Instance, time.Time) {
	fleetDay.once.Do(func() {
		opts := tsdb.DefaultOptions()
		opts.MinBlockDuration = (48 * time.Hour).Milliseconds()
		opts.MaxBlockDuration = opts.MinBlockDuration
		// Shared by the benchmarks of one run (a benchmark function is called
		// several times while b.N ramps up); left in the system temp dir.
		dir, err := os.MkdirTemp("", "inferscope-slo-bench-")
		if err != nil {
			fleetDay.err = err
			return
		}
		db, err := tsdb.Open(dir, nil, nil, opts, nil)
		if err != nil {
			fleetDay.err = err
			return
		}
		cfg := sim.DefaultConfig()
		if fleetDay.err = sim.ApplyScenario(&cfg, "healthy"); fleetDay.err != nil {
			return
		}
		s, err := sim.New(cfg, sim.Options{})
		if err != nil {
			fleetDay.err = err
			return
		}
		var js []map[string]string
		fo := &fanOut{db: db}
		for n := 0; n < fleetTargets; n++ {
			name := fmt.Sprintf("vllm-%d", n)
			fo.jobs = append(fo.jobs, name)
			js = append(js, map[string]string{"name": name, "url": "http://" + name + ":8000/metrics"})
		}
		if _, fleetDay.err = s.FastForward(context.Background(), fo, sim.FastForwardOptions{Duration: fleetSpan, ScrapeInterval: 15 * time.Second,
			VLLM: sim.Target{Job: "sim", Instance: "sim:8000"}}); fleetDay.err != nil {
			return
		}
		raw, _ := json.Marshal(map[string]any{"targets": js})
		st, err := settings.Load(raw, nil)
		if err != nil {
			fleetDay.err = err
			return
		}
		fleetDay.inst = newInstanceForTest(st, source.NewEmbedded(db, source.EmbeddedOptions{}))
		fleetDay.start = s.Start()
	})
	require.NoError(b, fleetDay.err)
	return fleetDay.inst, fleetDay.start
}

func benchQuery(b *testing.B, m map[string]any, step time.Duration) {
	inst, start := fleet(b)
	q, _ := json.Marshal(m)
	req := &backend.QueryDataRequest{Queries: []backend.DataQuery{{RefID: "A", QueryType: m["queryType"].(string), JSON: q,
		Interval: step, MaxDataPoints: 11000, TimeRange: backend.TimeRange{From: start, To: start.Add(fleetSpan)}}}}
	resp, err := inst.QueryData(context.Background(), req)
	require.NoError(b, err)
	require.NoError(b, resp.Responses["A"].Error)
	require.NotEmpty(b, resp.Responses["A"].Frames)
	b.ResetTimer()
	cpu0 := processCPU()
	for i := 0; i < b.N; i++ {
		resp, err := inst.QueryData(context.Background(), req)
		require.NoError(b, err)
		require.NoError(b, resp.Responses["A"].Error)
	}
	// CPU time of the whole process per query (both cores together): less
	// sensitive than wall time to other work on a shared machine.
	b.ReportMetric(float64(processCPU()-cpu0)/1e6/float64(b.N), "cpu-ms/op")
}

func processCPU() int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}

// BenchmarkSLOQuery is issue 11's slo speed target: the slo table for the 3
// default profiles (6 objectives) grouped by target over 20 simulated vLLM
// targets × 24 h of 15 s scrapes (120 rows), ≤ 1 s.
func BenchmarkSLOQuery(b *testing.B) {
	benchQuery(b, map[string]any{"queryType": "slo", "groupBy": "target"}, time.Minute)
}

// BenchmarkBurnRateQuery is issue 11's burn_rate speed target: one objective
// (interactive-chat TTFT) grouped by target over 20 targets × 24 h at 1 m
// steps (20 × 7 burn series and 20 status series of 1441 points), ≤ 300 ms.
func BenchmarkBurnRateQuery(b *testing.B) {
	benchQuery(b, map[string]any{"queryType": "burn_rate", "profile": "interactive-chat", "objectives": []string{"ttft-p99"}, "groupBy": "target"}, time.Minute)
}
