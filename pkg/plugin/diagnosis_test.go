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

	"github.com/inferscope/inferscope-llm-datasource/pkg/settings"
	"github.com/inferscope/inferscope-llm-datasource/pkg/sim"
	"github.com/inferscope/inferscope-llm-datasource/pkg/source"
)

// simTarget is one simulated target for a diagnosis test.
type simTarget struct {
	name     string
	scenario string
	gpu      bool                // also write the simulated GPU agent
	tweak    func(c *sim.Config) // optional change after the scenario
}

// simDiagnosisInstance fast-forwards each target's scenario for span at the
// given scrape interval into one TSDB and returns an instance over it and
// the common start.
func simDiagnosisInstance(t testing.TB, span, scrape time.Duration, targets ...simTarget) (*Instance, time.Time) {
	t.Helper()
	opts := tsdb.DefaultOptions()
	opts.MinBlockDuration = (24 * time.Hour).Milliseconds()
	opts.MaxBlockDuration = opts.MinBlockDuration
	db, err := tsdb.Open(t.TempDir(), nil, nil, opts, nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = db.Close() })
	var js, agents []map[string]any
	var start time.Time
	for k, tg := range targets {
		cfg := sim.DefaultConfig()
		require.NoError(t, sim.ApplyScenario(&cfg, tg.scenario))
		cfg.Seed = uint64(k + 1)
		if tg.tweak != nil {
			tg.tweak(&cfg)
		}
		s, err := sim.New(cfg, sim.Options{})
		require.NoError(t, err)
		start = s.Start()
		ff := sim.FastForwardOptions{Duration: span, ScrapeInterval: scrape, VLLM: sim.Target{Job: tg.name, Instance: tg.name + ":8000"}}
		tj := map[string]any{"name": tg.name, "url": "http://" + tg.name + ":8000/metrics"}
		if tg.gpu {
			agent := tg.name + "-gpu"
			ff.GPU = sim.Target{Job: agent, Instance: agent + ":9400"}
			agents = append(agents, map[string]any{"name": agent, "url": "http://" + agent + ":9400/metrics"})
			tj["agent"] = agent
		}
		_, err = s.FastForward(context.Background(), db, ff)
		require.NoError(t, err)
		js = append(js, tj)
	}
	raw, _ := json.Marshal(map[string]any{"targets": js, "gpuAgents": agents, "scrapeInterval": durText(scrape)})
	st, err := settings.Load(raw, nil)
	require.NoError(t, err)
	return newInstanceForTest(st, source.NewEmbedded(db, source.EmbeddedOptions{})), start
}

func durText(d time.Duration) string { return fmt.Sprintf("%ds", int(d.Seconds())) }

// diagnosisQuery runs one diagnosis query and returns its response.
func diagnosisQuery(t testing.TB, inst *Instance, from, to time.Time, step time.Duration, q map[string]any) backend.DataResponse {
	t.Helper()
	q["queryType"] = "diagnosis"
	raw, _ := json.Marshal(q)
	resp, err := inst.QueryData(context.Background(), &backend.QueryDataRequest{Queries: []backend.DataQuery{{
		RefID: "A", QueryType: "diagnosis", JSON: raw, Interval: step, MaxDataPoints: 100000,
		TimeRange: backend.TimeRange{From: from, To: to},
	}}})
	require.NoError(t, err)
	return resp.Responses["A"]
}
