package plugin

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/backend"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/tsdb"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/inferscope/inferscope-llm-datasource/pkg/settings"
	"github.com/inferscope/inferscope-llm-datasource/pkg/source"
)

// TestGPUQueryJudgesStuckCountersOnScrapes (issue 20, point 8): the gpu
// query's stuck-counter check counts scrapes, not query steps. Two agents
// are scraped every 15 s for two hours, both with GPU utilisation 0.95:
// "stuck" has SM activity 0.6 until 1 h 30 min and 0 from then on (a
// profiling counter that stopped); "blip" has SM activity 0.6 except at the
// scrapes on whole minutes, which read 0 (a busy GPU sampled at idle
// instants: the steps of a query on whole minutes read only those). At two
// one-minute steps and at three one-hour steps, the stuck counter is named
// and saturation falls back to utilisation; the blips are not, although
// every step value reads 0 (the step-counting rule called them stuck).
func TestGPUQueryJudgesStuckCountersOnScrapes(t *testing.T) {
	db, err := tsdb.Open(t.TempDir(), nil, nil, tsdb.DefaultOptions(), nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = db.Close() })
	t0 := time.Unix(1_699_999_200, 0) // a whole hour
	app := db.Appender(context.Background())
	series := func(name, job string) labels.Labels {
		return labels.FromStrings("__name__", name, "job", job, "instance", job+":9835", "gpu", "0",
			"uuid", "GPU-"+job, "name", "NVIDIA H100 80GB HBM3", "hostname", job)
	}
	for i := 0; i <= 2*60*4; i++ {
		ts := t0.Add(time.Duration(i) * 15 * time.Second)
		stuck, blip := 0.6, 0.6
		if ts.Sub(t0) >= 90*time.Minute {
			stuck = 0
		}
		if ts.Second() == 0 {
			blip = 0
		}
		for job, sm := range map[string]float64{"stuck": stuck, "blip": blip} {
			_, err := app.Append(0, series("inferscope_gpu_sm_active_ratio", job), ts.UnixMilli(), sm)
			require.NoError(t, err)
			_, err = app.Append(0, series("inferscope_gpu_utilization_ratio", job), ts.UnixMilli(), 0.95)
			require.NoError(t, err)
		}
	}
	require.NoError(t, app.Commit())
	st, err := settings.Load([]byte(`{"targets":[],"scrapeInterval":"15s","gpuAgents":[
		{"name":"stuck","url":"http://stuck:9835/metrics"},{"name":"blip","url":"http://blip:9835/metrics"}]}`), nil)
	require.NoError(t, err)
	inst := newInstanceForTest(st, source.NewEmbedded(db, source.EmbeddedOptions{}))
	end := t0.Add(2 * time.Hour)
	for _, c := range []struct {
		name     string
		from     time.Time
		interval time.Duration
		steps    int
	}{{"two 1m steps", end.Add(-time.Minute), time.Minute, 2}, {"three 1h steps", t0, time.Hour, 3}} {
		t.Run(c.name, func(t *testing.T) {
			js, _ := json.Marshal(map[string]any{"queryType": "gpu", "signals": []string{"saturation"}})
			resp, err := inst.QueryData(context.Background(), &backend.QueryDataRequest{Queries: []backend.DataQuery{{
				RefID: "A", QueryType: "gpu", JSON: js, Interval: c.interval, MaxDataPoints: 1000,
				TimeRange: backend.TimeRange{From: c.from, To: end}}}})
			require.NoError(t, err)
			dr := resp.Responses["A"]
			require.NoError(t, dr.Error)
			src := map[string]string{}
			for _, f := range dr.Frames {
				for _, fld := range f.Fields {
					if fld.Labels["signal"] == "saturation" {
						require.Equal(t, c.steps, fld.Len())
						src[fld.Labels["target"]] = fld.Labels["source"]
					}
				}
			}
			assert.Equal(t, map[string]string{"stuck": "gpu_util", "blip": "sm_active"}, src)
			var stuckNotes []string
			for _, f := range dr.Frames {
				if f.Meta == nil {
					continue
				}
				for _, n := range f.Meta.Notices {
					if strings.Contains(n.Text, "looks stuck") && !contains(stuckNotes, n.Text) {
						stuckNotes = append(stuckNotes, n.Text)
					}
				}
			}
			require.Len(t, stuckNotes, 1, "%v", stuckNotes)
			assert.Contains(t, stuckNotes[0], "stuck/stuck/gpu 0: sm_active read 0 while gpu_util read up to 95% for")
			assert.Contains(t, stuckNotes[0], "steps (each judged on its last 3 scrapes)")
		})
	}
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}
