package plugin

import (
	"context"
	"encoding/json"
	"math"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/backend"
	"github.com/grafana/grafana-plugin-sdk-go/data"
	"github.com/prometheus/prometheus/tsdb"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/inferscope/inferscope-llm-datasource/pkg/settings"
	"github.com/inferscope/inferscope-llm-datasource/pkg/sim"
	"github.com/inferscope/inferscope-llm-datasource/pkg/source"
	"github.com/inferscope/inferscope-llm-datasource/pkg/twin"
)

// TestCapacityQueryFindsTheHiddenKnee runs the capacity query end to end through QueryData on
// the stored history of a simulator whose parameters the query does not know (long prompts
// and outputs, max_num_seqs 64, its own efficiencies and prefix hit ratio), served at half of
// its knee for 30 minutes. The hidden knee is the simulator's own: the highest load at which
// the profile (TTFT p99 ≤ 3 s, TPOT p99 ≤ 100 ms) holds on the hidden configuration
// (twin.Knee on it, the same sweep the validation uses). The query's knee must be within the
// goal of 15 % of it; the load within 10 % of the rate the history was served at; the
// replicas those of the rule on the query's own figures.
func TestCapacityQueryFindsTheHiddenKnee(t *testing.T) {
	if testing.Short() {
		t.Skip("simulates minutes of load")
	}
	hidden := sim.DefaultConfig()
	hidden.Seed = 7
	hidden.ClientTimeout = 0
	hidden.Prompt = sim.LengthDist{Kind: "lognormal", Mean: 1200, Sigma: 0.6, Min: 8, Max: 8000}
	hidden.Output = sim.LengthDist{Kind: "lognormal", Mean: 300, Sigma: 0.6, Min: 1, Max: 2000}
	hidden.MaxNumSeqs = 64
	hidden.GPU.MFU = 0.45
	hidden.GPU.BWEfficiency = 0.65
	hidden.PrefixHitRatio = 0.2
	profile := twin.Profile{Name: "chat", Objectives: []twin.Objective{{Signal: "ttft", Threshold: 3, Target: 0.99}, {Signal: "tpot", Threshold: 0.1, Target: 0.99}}}
	trueKnee, err := twin.Knee(context.Background(), hidden, profile, 2)
	require.NoError(t, err)
	require.Greater(t, trueKnee, 0.5)
	load := trueKnee / 2

	db, err := tsdb.Open(t.TempDir(), nil, nil, tsdb.DefaultOptions(), nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = db.Close() })
	hidden.Rate = load
	s, err := sim.New(hidden, sim.Options{})
	require.NoError(t, err)
	span := 30 * time.Minute
	_, err = s.FastForward(context.Background(), db, sim.FastForwardOptions{Duration: span, ScrapeInterval: 15 * time.Second,
		VLLM: sim.Target{Job: "hidden", Instance: "hidden:8000"}})
	require.NoError(t, err)
	st, err := settings.Load([]byte(`{"scrapeInterval":"15s","targets":[{"name":"hidden","url":"http://hidden:8000/metrics"}],
	 "sloProfiles":[{"name":"chat","objectives":[
	  {"name":"ttft-3s","signal":"ttft","threshold":3,"target":0.99},
	  {"name":"tpot-100ms","signal":"tpot","threshold":0.1,"target":0.99}]}]}`), nil)
	require.NoError(t, err)
	inst := newInstanceForTest(st, source.NewEmbedded(db, source.EmbeddedOptions{}))
	end := s.Start().Add(span)
	inst.now = func() time.Time { return end }

	query := func(fields map[string]any) *data.Frame {
		js, err := json.Marshal(fields)
		require.NoError(t, err)
		resp, err := inst.QueryData(context.Background(), &backend.QueryDataRequest{Queries: []backend.DataQuery{{
			RefID: "A", QueryType: "capacity", JSON: js, Interval: time.Minute, MaxDataPoints: 1000,
			TimeRange: backend.TimeRange{From: s.Start(), To: end},
		}}})
		require.NoError(t, err)
		dr := resp.Responses["A"]
		require.NoError(t, dr.Error)
		require.Len(t, dr.Frames, 1)
		return dr.Frames[0]
	}
	started := time.Now()
	f := query(map[string]any{"queryType": "capacity", "maxNumSeqs": 64})
	t.Logf("capacity query (calibration and knee): %s", time.Since(started))
	require.Equal(t, 1, f.Rows())
	num := func(name string) float64 {
		fld, _ := f.FieldByName(name)
		require.NotNil(t, fld, name)
		v, ok := fld.ConcreteAt(0)
		require.True(t, ok, "%s is null", name)
		return v.(float64)
	}
	knee, gotLoad := num("knee"), num("load")
	t.Logf("hidden knee %.3f req/s, query's knee %.3f req/s (error %.1f %%), load %.3f req/s served at %.3f", trueKnee, knee, 100*math.Abs(knee-trueKnee)/trueKnee, gotLoad, load)
	assert.InDelta(t, 1, knee/trueKnee, 0.15, "the knee is within 15 %% of the hidden simulator's")
	assert.InDelta(t, 1, gotLoad/load, 0.10, "the load is the served rate")
	assert.InDelta(t, knee/gotLoad, num("headroom"), 1e-9, "headroom = knee / load")
	assert.Equal(t, math.Ceil(gotLoad/(0.8*knee)), num("replicas"), "replicas = ⌈load / (0.8 × knee)⌉")

	// The what-if of one more replica at the same load is served from the cached twin.
	started = time.Now()
	w := query(map[string]any{"queryType": "capacity", "maxNumSeqs": 64, "format": "whatif", "whatIf": map[string]any{"addReplicas": 1}})
	t.Logf("what-if on the cached twin: %s", time.Since(started))
	require.Equal(t, 2, w.Rows())
	change, _ := w.FieldByName("change")
	assert.Equal(t, "+1 replica(s), 2 in all", change.At(1))
	l, _ := w.FieldByName("load")
	half, _ := l.ConcreteAt(1)
	assert.InDelta(t, gotLoad/2, half.(float64), 1e-9, "two replicas share the load")
}

// A target whose history holds fewer finished requests than the twin needs gets a notice
// saying so and no row: no guess. The fixture serves 0.03 req/s for 30 minutes (about 54
// requests, under the 100 needed).
func TestCapacityTooLittleHistoryIsANotice(t *testing.T) {
	cfg := sim.DefaultConfig()
	cfg.Seed = 3
	cfg.Rate = 0.03
	db, err := tsdb.Open(t.TempDir(), nil, nil, tsdb.DefaultOptions(), nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = db.Close() })
	s, err := sim.New(cfg, sim.Options{RecordTruth: true})
	require.NoError(t, err)
	span := 30 * time.Minute
	_, err = s.FastForward(context.Background(), db, sim.FastForwardOptions{Duration: span, ScrapeInterval: 15 * time.Second,
		VLLM: sim.Target{Job: "quiet", Instance: "quiet:8000"}})
	require.NoError(t, err)
	finished := len(s.Finished())
	require.Less(t, finished, 100)
	st, err := settings.Load([]byte(`{"scrapeInterval":"15s","targets":[{"name":"quiet","url":"http://quiet:8000/metrics"}]}`), nil)
	require.NoError(t, err)
	inst := newInstanceForTest(st, source.NewEmbedded(db, source.EmbeddedOptions{}))
	end := s.Start().Add(span)
	inst.now = func() time.Time { return end }
	resp, err := inst.QueryData(context.Background(), &backend.QueryDataRequest{Queries: []backend.DataQuery{{
		RefID: "A", QueryType: "capacity", JSON: []byte(`{"queryType":"capacity"}`), Interval: time.Minute, MaxDataPoints: 100,
		TimeRange: backend.TimeRange{From: s.Start(), To: end},
	}}})
	require.NoError(t, err)
	dr := resp.Responses["A"]
	require.NoError(t, dr.Error)
	require.Len(t, dr.Frames, 1)
	assert.Equal(t, 0, dr.Frames[0].Rows())
	var texts []string
	for _, n := range dr.Frames[0].Meta.Notices {
		texts = append(texts, n.Text)
	}
	assert.Contains(t, texts, "target quiet finished "+strconv.Itoa(finished)+" requests in the 30m of history: too little history to calibrate its twin (it needs at least 100); no capacity figures")
}

// The first capacity query of a fleet outlasts what Grafana waits for a panel (minutes of
// twin simulation): past its wait (INFERSCOPE_CAPACITY_WAIT) it answers with the rows that are ready and
// a notice naming the targets still computing, and their simulations go on, so that a later
// query finds the twin, its knee and its rows without simulating again.
func TestCapacityAnswersWhatIsReadyAtItsWait(t *testing.T) {
	if testing.Short() {
		t.Skip("simulates minutes of load")
	}
	cfg := sim.DefaultConfig()
	cfg.Seed = 4242 // a history no other test calibrates
	cfg.Rate = 1.5
	db, err := tsdb.Open(t.TempDir(), nil, nil, tsdb.DefaultOptions(), nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = db.Close() })
	s, err := sim.New(cfg, sim.Options{})
	require.NoError(t, err)
	span := 30 * time.Minute
	_, err = s.FastForward(context.Background(), db, sim.FastForwardOptions{Duration: span, ScrapeInterval: 15 * time.Second,
		VLLM: sim.Target{Job: "busy", Instance: "busy:8000"}})
	require.NoError(t, err)
	st, err := settings.Load([]byte(`{"scrapeInterval":"15s","targets":[{"name":"busy","url":"http://busy:8000/metrics"}],
	 "sloProfiles":[{"name":"chat","objectives":[{"name":"ttft-3s","signal":"ttft","threshold":3,"target":0.99}]}]}`), nil)
	require.NoError(t, err)
	inst := newInstanceForTest(st, source.NewEmbedded(db, source.EmbeddedOptions{}))
	end := s.Start().Add(span)
	inst.now = func() time.Time { return end }
	query := func() (*data.Frame, string) {
		resp, err := inst.QueryData(context.Background(), &backend.QueryDataRequest{Queries: []backend.DataQuery{{
			RefID: "A", QueryType: "capacity", JSON: json.RawMessage(`{"queryType":"capacity"}`), Interval: time.Minute,
			MaxDataPoints: 1000, TimeRange: backend.TimeRange{From: s.Start(), To: end}}}})
		require.NoError(t, err)
		dr := resp.Responses["A"]
		require.NoError(t, dr.Error)
		require.Len(t, dr.Frames, 1)
		var texts []string
		if dr.Frames[0].Meta != nil {
			for _, n := range dr.Frames[0].Meta.Notices {
				texts = append(texts, n.Text)
			}
		}
		return dr.Frames[0], strings.Join(texts, " | ")
	}

	inst.twins.Wait = time.Millisecond // as INFERSCOPE_CAPACITY_WAIT=1ms when the instance is built
	started := time.Now()
	f, notes := query()
	assert.Less(t, time.Since(started), 30*time.Second, "answered at its wait, not after the simulations")
	assert.Equal(t, 0, f.Rows(), "no row before the twin exists")
	assert.Contains(t, notes, "target(s) busy: its twin is still being computed")

	// The calibration and then the knee go on without a query waiting for them: a query
	// that waits finds them (and, once both are cached, answers at once).
	inst.twins.Wait = 10 * time.Minute
	f, notes = query()
	require.Equal(t, 1, f.Rows(), notes)
	assert.NotContains(t, notes, "still being computed")
	inst.twins.Wait = time.Millisecond
	f, notes = query()
	assert.Equal(t, 1, f.Rows(), "served from the cache within any wait: %s", notes)
}
