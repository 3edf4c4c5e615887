package plugin

import (
	"context"
	"encoding/json"
	"math"
	"testing"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/backend"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/inferscope/inferscope-llm-datasource/pkg/analysis/diagnose"
	"github.com/inferscope/inferscope-llm-datasource/pkg/source"
)

// TestDiagnosisPromptTailMatchesPrometheus: the prompt-length median and
// 99th percentile the head-of-line rule reads equal, at every step,
// Prometheus's own histogram_quantile over the stored
// vllm:request_prompt_tokens buckets (the PromQL engine as oracle), and on
// the long-prompt-hol scenario (5 % of prompts 24k–30k tokens, the rest
// under 2k) the tail is long: p99 ≥ 8,000 tokens, p50 < 1,000. The
// current finding is head-of-line blocking with that evidence.
func TestDiagnosisPromptTailMatchesPrometheus(t *testing.T) {
	const scrape = 15 * time.Second
	db := openDiagDB(t)
	js, agents, start := fastForwardInto(t, db, 30*time.Minute, scrape, []simTarget{{name: "hol", scenario: "long-prompt-hol", gpu: true}})
	inst := diagInstance(t, db, scrape, js, agents)
	from, to := start.Add(15*time.Minute), start.Add(30*time.Minute)
	raw, _ := json.Marshal(map[string]any{"queryType": "diagnosis", "window": "5m"})
	p, err := decodeQuery(backend.DataQuery{RefID: "A", QueryType: "diagnosis", JSON: raw, Interval: time.Minute,
		MaxDataPoints: 1000, TimeRange: backend.TimeRange{From: from, To: to}}, &inst.settings)
	require.NoError(t, err)
	in, _, err := inst.diagnosisInput(context.Background(), p)
	require.NoError(t, err)
	require.Len(t, in.Targets, 1)
	v := in.Targets[0].Values

	q := source.NewEmbedded(db, source.EmbeddedOptions{})
	for _, c := range []struct {
		sig diagnose.Signal
		q   string
	}{{diagnose.PromptP50, "0.5"}, {diagnose.PromptP99, "0.99"}} {
		m, err := q.QueryRange(context.Background(),
			`histogram_quantile(`+c.q+`, sum by (le) (rate(vllm:request_prompt_tokens_bucket{job="hol"}[5m])))`, p.Plan.Start, p.Plan.End, p.Plan.Step)
		require.NoError(t, err)
		require.Len(t, m, 1)
		got := v[c.sig]
		require.Len(t, got, len(in.Steps))
		n := 0
		for _, s := range m[0].Values {
			k := -1
			for i, ts := range in.Steps {
				if ts.Equal(s.Timestamp.Time()) {
					k = i
				}
			}
			require.GreaterOrEqual(t, k, 0, "step %s", s.Timestamp)
			assert.InDelta(t, float64(s.Value), got[k], 1e-9*math.Max(1, float64(s.Value)), "%s at %s", c.sig, s.Timestamp.Time().Sub(start))
			n++
		}
		assert.Equal(t, len(in.Steps), n)
	}
	last := len(in.Steps) - 1
	assert.GreaterOrEqual(t, v[diagnose.PromptP99][last], 8000.0)
	assert.Less(t, v[diagnose.PromptP50][last], 1000.0)

	rows := findingRows(t, diagnosisQuery(t, inst, from, to, time.Minute, map[string]any{"window": "5m"}))
	require.NotEmpty(t, rows)
	assert.Equal(t, "head_of_line_blocking", rows[0]["class"], "%v", rows)
	assert.Contains(t, rows[0]["evidence"], "prompt_tokens_p99 ")
	assert.Contains(t, rows[0]["evidence"], "prompt_tail_ratio ")
}
