package plugin

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/backend"
	"github.com/prometheus/prometheus/tsdb"
	"github.com/stretchr/testify/require"

	"github.com/inferscope/inferscope-llm-datasource/pkg/catalog"
	"github.com/inferscope/inferscope-llm-datasource/pkg/settings"
	"github.com/inferscope/inferscope-llm-datasource/pkg/sim"
	"github.com/inferscope/inferscope-llm-datasource/pkg/source"
)

// BenchmarkLatencyQuery is issue 2's speed target: one latency query for 8
// stages × 4 stats (mean, p50, p90, p99) over 10 simulated vLLM targets × 6 h
// of 15 s scrapes, at 15 s steps (1441 points per series), ≤ 500 ms.
func BenchmarkLatencyQuery(b *testing.B) {
	const targets, scrape, span = 10, 15 * time.Second, 6 * time.Hour
	// One head block spanning the whole history, so every target can be
	// appended from the start after the previous one reached the end.
	opts := tsdb.DefaultOptions()
	opts.MinBlockDuration = (24 * time.Hour).Milliseconds()
	opts.MaxBlockDuration = opts.MinBlockDuration
	db, err := tsdb.Open(b.TempDir(), nil, nil, opts, nil)
	require.NoError(b, err)
	defer db.Close()
	var js []map[string]string
	var start time.Time
	for n := 0; n < targets; n++ {
		cfg := sim.DefaultConfig()
		require.NoError(b, sim.ApplyScenario(&cfg, "healthy"))
		cfg.Seed = uint64(n + 1)
		s, err := sim.New(cfg, sim.Options{})
		require.NoError(b, err)
		start = s.Start()
		name := fmt.Sprintf("vllm-%d", n)
		_, err = s.FastForward(context.Background(), db, sim.FastForwardOptions{Duration: span, ScrapeInterval: scrape,
			VLLM: sim.Target{Job: name, Instance: name + ":8000"}})
		require.NoError(b, err)
		js = append(js, map[string]string{"name": name, "url": "http://" + name + ":8000/metrics"})
	}
	raw, _ := json.Marshal(map[string]any{"targets": js})
	st, err := settings.Load(raw, nil)
	require.NoError(b, err)
	inst := newInstanceForTest(st, source.NewEmbedded(db, source.EmbeddedOptions{}))
	stages := make([]string, 0, len(catalog.LatencyStages))
	for _, s := range catalog.LatencyStages {
		stages = append(stages, string(s))
	}
	q, _ := json.Marshal(map[string]any{"queryType": "latency", "stages": stages, "stats": []string{"mean", "p50", "p90", "p99"}, "bounds": false})
	req := &backend.QueryDataRequest{Queries: []backend.DataQuery{{RefID: "A", QueryType: "latency", JSON: q,
		Interval: scrape, MaxDataPoints: 2000, TimeRange: backend.TimeRange{From: start, To: start.Add(span)}}}}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		resp, err := inst.QueryData(context.Background(), req)
		require.NoError(b, err)
		require.NoError(b, resp.Responses["A"].Error)
	}
}

// BenchmarkDiagnosisQuery is issue 12's speed target: one diagnosis query
// (current findings) over 20 simulated vLLM targets, each with its GPU
// agent, × 6 h of 15 s scrapes, at 1-minute steps (361 per series), ≤ 500 ms.
func BenchmarkDiagnosisQuery(b *testing.B) {
	const targets, scrape, span = 20, 15 * time.Second, 6 * time.Hour
	var tgs []simTarget
	for n := 0; n < targets; n++ {
		tgs = append(tgs, simTarget{name: fmt.Sprintf("vllm-%d", n), scenario: "healthy", gpu: true})
	}
	inst, start := simDiagnosisInstance(b, span, scrape, tgs...)
	q, _ := json.Marshal(map[string]any{"queryType": "diagnosis"})
	req := &backend.QueryDataRequest{Queries: []backend.DataQuery{{RefID: "A", QueryType: "diagnosis", JSON: q,
		Interval: time.Minute, MaxDataPoints: 2000, TimeRange: backend.TimeRange{From: start, To: start.Add(span)}}}}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		resp, err := inst.QueryData(context.Background(), req)
		require.NoError(b, err)
		require.NoError(b, resp.Responses["A"].Error)
	}
}
