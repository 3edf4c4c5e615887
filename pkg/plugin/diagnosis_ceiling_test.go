package plugin

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/backend"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/inferscope/inferscope-llm-datasource/pkg/settings"
	"github.com/inferscope/inferscope-llm-datasource/pkg/source"
)

// TestDiagnosisRunningCeiling: the queue-saturation ceiling comes from the
// engine where it exports one (the SGLang 0.3 page's
// sglang:max_running_requests reads 4097), else from diagnosis.maxNumSeqs,
// else from the observed plateau. The simulator's queue-saturated scenario
// runs max_num_seqs 16 and vLLM exports no ceiling: with no setting the
// plateau (16) is used, with maxNumSeqs 16 the setting (threshold 0.9 × 16
// = 14.4), and with maxNumSeqs 64 the batch is far from its ceiling
// (16 < 57.6), so the queue is not called saturated.
func TestDiagnosisRunningCeiling(t *testing.T) {
	const scrape = 15 * time.Second
	db := openDiagDB(t)
	js, agents, start := fastForwardInto(t, db, 30*time.Minute, scrape, []simTarget{{name: "queue", scenario: "queue-saturated"}})
	appendGrowingPage(t, db, "sg03", readPage(t, "testdata/sglang-0.3-wip-names-gemma2-9b-under-load-docs.prom"), start.Add(20*time.Minute), 40, nil)
	js = append(js, map[string]any{"name": "sg03", "url": "http://sg03:8000/metrics"})
	from, to := start.Add(20*time.Minute), start.Add(30*time.Minute)

	instWith := func(diag map[string]any) *Instance {
		raw, _ := json.Marshal(map[string]any{"targets": js, "gpuAgents": agents, "scrapeInterval": durText(scrape), "diagnosis": diag})
		st, err := settings.Load(raw, nil)
		require.NoError(t, err)
		return newInstanceForTest(st, source.NewEmbedded(db, source.EmbeddedOptions{}))
	}
	ceilings := func(inst *Instance) map[string][2]any {
		raw, _ := json.Marshal(map[string]any{"queryType": "diagnosis", "window": "5m"})
		p, err := decodeQuery(backend.DataQuery{RefID: "A", QueryType: "diagnosis", JSON: raw, Interval: time.Minute,
			MaxDataPoints: 1000, TimeRange: backend.TimeRange{From: from, To: to}}, &inst.settings)
		require.NoError(t, err)
		in, _, err := inst.diagnosisInput(context.Background(), p)
		require.NoError(t, err)
		out := map[string][2]any{}
		for _, ti := range in.Targets {
			out[ti.Name] = [2]any{ti.RunningCeiling, ti.CeilingSource}
		}
		return out
	}
	current := func(inst *Instance) map[string]map[string]string {
		out := map[string]map[string]string{}
		for _, r := range findingRows(t, diagnosisQuery(t, inst, from, to, time.Minute, map[string]any{"window": "5m"})) {
			out[r["target"]+"/"+r["class"]] = r
		}
		return out
	}

	// No setting: SGLang's exported gauge, vLLM's plateau.
	inst := instWith(nil)
	c := ceilings(inst)
	assert.Equal(t, 4097.0, c["sg03"][0])
	assert.Contains(t, c["sg03"][1], "sglang:max_running_requests")
	assert.Equal(t, 0.0, c["queue"][0], "vLLM exports no ceiling")
	q := current(inst)["queue/queue_saturation"]
	require.NotNil(t, q)
	assert.Contains(t, q["evidence"], "requests_running_avg 16 requests ≥ 13 (ceiling = highest running count in the range") // held: 0.9 × 16 relaxed by 10 % = 12.96, printed as used

	// The setting stands in where the engine exports none; the exported value wins.
	inst = instWith(map[string]any{"maxNumSeqs": 16})
	c = ceilings(inst)
	assert.Equal(t, 16.0, c["queue"][0])
	assert.Equal(t, 4097.0, c["sg03"][0], "the engine's own ceiling beats the setting")
	q = current(inst)["queue/queue_saturation"]
	require.NotNil(t, q)
	assert.Contains(t, q["evidence"], "requests_running_avg 16 requests ≥ 13 (ceiling: --max-num-seqs from the diagnosis.maxNumSeqs setting)") // held: 12.96 used

	inst = instWith(map[string]any{"maxNumSeqs": 64})
	assert.Nil(t, current(inst)["queue/queue_saturation"], "16 running of 64 seats is not the ceiling")
}

// TestRunningCeilingsFromConfigInfo: a config-info series carrying
