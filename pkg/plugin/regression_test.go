package plugin

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/data"
	"github.com/prometheus/prometheus/tsdb"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/inferscope/inferscope-llm-datasource/pkg/settings"
	"github.com/inferscope/inferscope-llm-datasource/pkg/sim"
	"github.com/inferscope/inferscope-llm-datasource/pkg/source"
)

// twoEras fast-forwards 40 minutes of a healthy simulator, one minute of
// downtime, then 40 minutes of a second simulator (a new process: counters
// restart) configured by change, all as job "vllm-r" scraped every 15 s. It
// returns an instance over the history, its start and its end.
func twoEras(t *testing.T, seed uint64, change func(*sim.Config)) (*Instance, time.Time, time.Time) {
	t.Helper()
	db, err := tsdb.Open(t.TempDir(), nil, nil, tsdb.DefaultOptions(), nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = db.Close() })
	const era = 40 * time.Minute
	start := sim.DefaultStart
	target := sim.Target{Job: "vllm-r", Instance: "vllm-r:8000"}
	for k, at := range []time.Time{start, start.Add(era + time.Minute)} {
		cfg := sim.DefaultConfig()
		require.NoError(t, sim.ApplyScenario(&cfg, "healthy"))
		cfg.Seed = seed + uint64(k)
		if k == 1 {
			change(&cfg)
		}
		s, err := sim.New(cfg, sim.Options{Start: at})
		require.NoError(t, err)
		_, err = s.FastForward(context.Background(), db, sim.FastForwardOptions{Duration: era, ScrapeInterval: 15 * time.Second, VLLM: target})
		require.NoError(t, err)
	}
	st, err := settings.Load([]byte(`{"targets":[{"name":"vllm-r","url":"http://vllm-r:8000/metrics"}]}`), nil)
	require.NoError(t, err)
	inst := newInstanceForTest(st, source.NewEmbedded(db, source.EmbeddedOptions{}))
	end := start.Add(2*era + time.Minute)
	inst.now = func() time.Time { return end }
	return inst, start, end
}

// verdicts runs the regression table over the whole history and returns stage → verdict
// of the change found, with the reasons for the failure message.
func verdicts(t *testing.T, inst *Instance, from, to time.Time) (map[string]string, string) {
	t.Helper()
	dr := runQuery(t, inst, map[string]any{"queryType": "regression", "targets": []string{"vllm-r"}}, from, to, time.Minute)
	require.NoError(t, dr.Error)
	require.Len(t, dr.Frames, 1)
	f := dr.Frames[0]
	col := func(name string) *data.Field {
		fld, i := f.FieldByName(name)
		require.GreaterOrEqual(t, i, 0, name)
		return fld
	}
	out, why := map[string]string{}, ""
	for i := 0; i < f.Rows(); i++ {
		stage := col("stage").At(i).(string)
		out[stage] = col("verdict").At(i).(string)
		why += fmt.Sprintf("%s after %s: %s (%s)\n", stage, col("change").At(i), out[stage], col("reason").At(i))
	}
	return out, why
}

// A new engine version whose decode steps are slower (half the memory
// bandwidth efficiency: a decode step reads the weights, so it takes about
// twice as long) at the same arrival rate: TPOT and ITL must be called
// regressed around the restart the events query finds.
func TestRegressionFindsASlowerEngineAfterARestart(t *testing.T) {
	inst, from, to := twoEras(t, 101, func(c *sim.Config) {
		c.Version = sim.V013
		c.GPU.BWEfficiency *= 0.5
	})
	v, why := verdicts(t, inst, from, to)
	require.NotEmpty(t, v, "no change found")
	assert.Equal(t, "regressed", v["itl"], why)
	assert.Equal(t, "regressed", v["tpot"], why)
	assert.Equal(t, "regressed", v["e2e"], why)
	t.Log(why)
}

// Only the load changes after the restart (twice the arrival rate, same
// engine): whatever latency does, it must not be called a regression.
func TestRegressionDoesNotBlameALoadChange(t *testing.T) {
	inst, from, to := twoEras(t, 202, func(c *sim.Config) { c.Rate *= 2 })
	v, why := verdicts(t, inst, from, to)
	require.NotEmpty(t, v, "no change found")
	for stage, verdict := range v {
		assert.NotEqual(t, "regressed", verdict, "%s: %s", stage, why)
	}
	t.Log(why)
}

// The same engine and load on both sides of a restart: no change.
func TestRegressionSeesNoChangeAcrossAPlainRestart(t *testing.T) {
	inst, from, to := twoEras(t, 303, func(*sim.Config) {})
	v, why := verdicts(t, inst, from, to)
	require.NotEmpty(t, v, "no change found")
	for stage, verdict := range v {
		assert.Equal(t, "no change", verdict, "%s: %s", stage, why)
	}
	t.Log(why)
}

// Two ranges the user picks on the slower-engine history: the first era's
// last 30 minutes against the second era's first 30 minutes (minus warm-up)
// is the same verdict as around the restart; two ranges of the first era
// alone are no change.
func TestRegressionOnPickedRanges(t *testing.T) {
	inst, from, to := twoEras(t, 101, func(c *sim.Config) {
		c.Version = sim.V013
		c.GPU.BWEfficiency *= 0.5
	})
	ms := func(d time.Duration) string { return fmt.Sprint(from.Add(d).UnixMilli()) }
	run := func(bf, bt, af, at time.Duration) map[string]string {
		dr := runQuery(t, inst, map[string]any{"queryType": "regression", "targets": []string{"vllm-r"}, "stages": []string{"itl", "ttft"},
			"before": map[string]string{"from": ms(bf), "to": ms(bt)}, "after": map[string]string{"from": ms(af), "to": ms(at)}}, from, to, time.Minute)
		require.NoError(t, dr.Error)
		f := dr.Frames[0]
		stage, _ := f.FieldByName("stage")
		verdict, _ := f.FieldByName("verdict")
		change, _ := f.FieldByName("change")
		out := map[string]string{}
		for i := 0; i < f.Rows(); i++ {
			assert.Equal(t, "ranges", change.At(i))
			out[stage.At(i).(string)] = verdict.At(i).(string)
		}
		return out
	}
	assert.Equal(t, map[string]string{"itl": "regressed", "ttft": "regressed"}, run(10*time.Minute, 40*time.Minute, 43*time.Minute, 73*time.Minute))
	assert.Equal(t, map[string]string{"itl": "no change", "ttft": "no change"}, run(5*time.Minute, 20*time.Minute, 22*time.Minute, 38*time.Minute))
}
