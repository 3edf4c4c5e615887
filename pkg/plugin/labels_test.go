package plugin

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Item 7: a target whose series carry labels named like the plugin's own
// output labels (target, model, stage: from the target's settings labels or
// from its page) got target=<its name> or target=rack-7 depending on map
// order. The plugin's labels win and the stored ones are kept as
// exported_<name>, identically on every run.
func TestLabelCollisionsResolvedInAFixedOrder(t *testing.T) {
	h := newHandHistory(t)
	t0 := time.Unix(1_700_000_100, 0)
	f := newHandHist(0.1, 1)
	extra := map[string]string{"model_name": "m", "target": "rack-7", "model": "other", "stage": "canary"}
	for i := 0; i <= 40; i++ {
		if i > 0 {
			f.observe(0.05, 2)
		}
		ts := t0.Add(time.Duration(i) * 15 * time.Second)
		h.scrape(ts, "a", "vllm:time_to_first_token_seconds", extra, f)
		h.sample(ts, "a", "vllm:num_requests_running", extra, 3)
	}
	inst := h.instance(histTarget("a"))
	from, to := t0.Add(5*time.Minute), t0.Add(10*time.Minute)
	for run := 0; run < 30; run++ {
		dr := runHistQuery(t, inst, from, to, time.Minute, map[string]any{"queryType": "raw", "metric": "vllm:num_requests_running"})
		require.NoError(t, dr.Error)
		require.Len(t, dr.Frames, 1)
		l := dr.Frames[0].Fields[1].Labels
		assert.Equal(t, "a", l["target"], "run %d", run)
		assert.Equal(t, "rack-7", l["exported_target"], "run %d", run)
		assert.Equal(t, "m", l["model"], "run %d", run)
		assert.Equal(t, "other", l["exported_model"], "run %d", run)
		assert.Equal(t, "canary", l["exported_stage"], "run %d", run)

		dr = runHistQuery(t, inst, from, to, time.Minute, map[string]any{"queryType": "latency", "stages": []string{"ttft"}, "stats": []string{"p50"}, "groupBy": "target", "bounds": false})
		require.NoError(t, dr.Error)
		require.Len(t, dr.Frames, 1)
		l = dr.Frames[0].Fields[1].Labels
		assert.Equal(t, "a", l["target"], "run %d", run)
		assert.Equal(t, "ttft", l["stage"], "run %d", run)
	}
}

// A raw query for a family the store's filter drops (python_gc_objects_collected_total is on
// every Python engine's page but no query reads it) answers no data with a notice that says
// why and names the setting that stores it (storeAllSeries).
func TestRawNoticeNamesStoreAllSeries(t *testing.T) {
	h := newHandHistory(t)
	t0 := time.Unix(1_700_000_100, 0)
	for i := 0; i <= 40; i++ {
		h.sample(t0.Add(time.Duration(i)*15*time.Second), "a", "vllm:num_requests_running", map[string]string{"model_name": "m"}, 3)
	}
	inst := h.instance(histTarget("a"))
	dr := runHistQuery(t, inst, t0.Add(5*time.Minute), t0.Add(10*time.Minute), time.Minute, map[string]any{"queryType": "raw", "metric": "python_gc_objects_collected_total"})
	require.NoError(t, dr.Error)
	found := false
	for _, n := range noticeTexts(dr.Frames) {
		if strings.Contains(n, "no series named python_gc_objects_collected_total") {
			found = true
			assert.Contains(t, n, "storeAllSeries", n)
		}
	}
	assert.True(t, found, "the no-series notice: %q", noticeTexts(dr.Frames))
}
