package queries

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/inferscope/inferscope-llm-datasource/pkg/analysis/diagnose"
	"github.com/inferscope/inferscope-llm-datasource/pkg/enginemodel"
	"github.com/inferscope/inferscope-llm-datasource/pkg/fetch"
	"github.com/inferscope/inferscope-llm-datasource/pkg/settings"
	"github.com/inferscope/inferscope-llm-datasource/pkg/twin"
)

// Issue 35: a diagnosis finding whose advice is a change the twin models quotes the cached
// twin's predicted effect; a target without a twin keeps the rule's advice. The what-ifs are
// put in the cache with known p99s, so no simulation runs and the quoted figures are those
// values with the bands of ErrorBand worked by hand.
func TestDiagnosisAdviceQuotesTheTwin(t *testing.T) {
	s, err := settings.Load([]byte(`{"targets":[{"name":"vllm-a","url":"http://a:8000/metrics"},{"name":"vllm-b","url":"http://b:8000/metrics"}],
		"sloProfiles":[{"name":"chat","objectives":[{"name":"ttft","signal":"ttft","threshold":3,"target":0.99}]}]}`), nil)
	require.NoError(t, err)
	now := time.Unix(1_800_000_000, 0)
	env := &fetch.Env{Settings: &s, Now: func() time.Time { return now }, Twins: fetch.NewTwins(time.Hour, nil)}
	cfg := enginemodel.DefaultConfig()
	cfg.MaxNumSeqs = 256
	key := fetch.TwinKey(env, "vllm-a", now.Add(-time.Hour), now, twin.Known{})
	obs := twin.Observed{Rate: 4}
	put := func(k string, v any) {
		_, err := env.Twins.Get(context.Background(), k, now, func(context.Context) (any, error) { return v, nil })
		require.NoError(t, err)
	}
	put(key, twin.Twin{Config: cfg})
	put(fetch.TwinObservedKey(key), obs)
	ct := fetch.TwinTarget{Name: "vllm-a", Key: key, Observed: obs, Twin: twin.Twin{Config: cfg}}
	all := twin.Profile{Name: "all", Objectives: []twin.Objective{{Signal: "ttft", Threshold: 3, Target: 0.99}}}
	put(fetch.TwinWhatIfKey(ct, twin.Change{Name: "max-num-seqs 512", MaxNumSeqs: 512}, all),
		twin.Outcome{P99: map[string]float64{"ttft": 1.1, "e2e": 9.3}, Attainment: []float64{1}, Finished: 1})
	put(fetch.TwinWhatIfKey(ct, twin.Change{Name: "+1 replica", AddReplicas: 1}, all),
		twin.Outcome{P99: map[string]float64{"ttft": 0.5, "e2e": 8}, Attainment: []float64{1}, Finished: 1})

	rec := "Raise --max-num-seqs (KV usage 0.4 leaves headroom), and --max-num-batched-tokens with it; add replicas if latency must drop further."
	res := diagnose.Result{Targets: []diagnose.TargetResult{
		{Target: "vllm-a", Findings: []diagnose.Finding{{Target: "vllm-a", Class: diagnose.QueueSaturation, Current: true, Recommendation: rec}}},
		{Target: "vllm-b", Findings: []diagnose.Finding{{Target: "vllm-b", Class: diagnose.QueueSaturation, Current: true, Recommendation: rec}}},
	}}
	r := fetch.NewRun(context.Background(), env, fetch.Plan{Start: now.Add(-time.Hour), End: now, Step: time.Minute})
	diagnosisTwinAdvice(context.Background(), env, r, &res)

	// max-num-seqs band (issue 35, seventh round): TTFT 0.57, E2E 0.10: 1.1/1.57 = 0.701,
	// 1.1/0.43 = 2.56; 9.3/1.10 = 8.45, 9.3/0.90 = 10.3. +1 replica: TTFT 0.13, E2E 0.14:
	// 0.5/1.13 = 0.442, 0.5/0.87 = 0.575; 8/1.14 = 7.02, 8/0.86 = 9.30.
	want := "Capacity twin (calibrated on the history 2027-01-15 07:00–08:00 UTC), at 4 req/s: " +
		"raise --max-num-seqs to 512: TTFT p99 predicted 1.1 s [701 ms, 2.56 s], E2E p99 predicted 9.3 s [8.45 s, 10.3 s]; " +
		"add 1 replica(s): TTFT p99 predicted 500 ms [442 ms, 575 ms], E2E p99 predicted 8 s [7.02 s, 9.3 s]."
	a := res.Targets[0].Findings[0]
	assert.Equal(t, want, a.TwinAdvice)
	assert.Equal(t, rec+" "+want, a.Recommendation)
	b := res.Targets[1].Findings[0]
	assert.Empty(t, b.TwinAdvice, "vllm-b has no twin")
	assert.Equal(t, rec, b.Recommendation)
	assert.False(t, math.IsNaN(twin.ErrorBand(twin.Change{MaxNumSeqs: 512}, "ttft")))
}

// The changes quoted per class follow the rule's advice.
func TestDiagnosisTwinChanges(t *testing.T) {
	names := func(cs []twin.Change) (out []string) {
		for _, c := range cs {
			out = append(out, c.Name)
		}
		return out
	}
	assert.Equal(t, []string{"+1 replica"}, names(diagnosisTwinChanges(diagnose.QueueSaturation, "Add replicas (scale out): the KV cache has no headroom", 128)))
	assert.Equal(t, []string{"max-num-seqs 256", "+1 replica"}, names(diagnosisTwinChanges(diagnose.QueueSaturation, "Raise --max-num-seqs (KV usage", 128)))
	assert.Equal(t, []string{"max-num-seqs 64", "prefix caching 50%"}, names(diagnosisTwinChanges(diagnose.KVPressure, "", 128)))
	assert.Nil(t, diagnosisTwinChanges(diagnose.Stalled, "", 128))
}
