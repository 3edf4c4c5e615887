package plugin

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/backend"
	"github.com/grafana/grafana-plugin-sdk-go/data"
	"github.com/prometheus/prometheus/tsdb"
	"github.com/stretchr/testify/require"

	"github.com/inferscope/inferscope-llm-datasource/pkg/settings"
	"github.com/inferscope/inferscope-llm-datasource/pkg/sim"
	"github.com/inferscope/inferscope-llm-datasource/pkg/source"
)

// simScenario fast-forwards d of a simulator scenario, scraped every 15 s,
// into a TSDB and returns an instance over it and the simulation start.
func simScenario(t *testing.T, scenario string, d time.Duration) (*Instance, time.Time, sim.Config) {
	t.Helper()
	cfg := sim.DefaultConfig()
	require.NoError(t, sim.ApplyScenario(&cfg, scenario))
	s, err := sim.New(cfg, sim.Options{})
	require.NoError(t, err)
	db, err := tsdb.Open(t.TempDir(), nil, nil, tsdb.DefaultOptions(), nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = db.Close() })
	_, err = s.FastForward(context.Background(), db, sim.FastForwardOptions{Duration: d, ScrapeInterval: 15 * time.Second,
		VLLM: sim.Target{Job: "sim", Instance: "sim:8000"}})
	require.NoError(t, err)
	st, err := settings.Load([]byte(`{"targets":[{"name":"sim","url":"http://sim:8000/metrics"}]}`), nil)
	require.NoError(t, err)
	inst := newInstanceForTest(st, source.NewEmbedded(db, source.EmbeddedOptions{}))
	inst.now = func() time.Time { return s.Start().Add(d) }
	return inst, s.Start(), cfg
}

// runQuery runs one query of the given JSON over [from, to] at step.
func runQuery(t *testing.T, inst *Instance, q map[string]any, from, to time.Time, step time.Duration) backend.DataResponse {
	t.Helper()
	qjson, err := json.Marshal(q)
	require.NoError(t, err)
	resp, err := inst.QueryData(context.Background(), &backend.QueryDataRequest{Queries: []backend.DataQuery{{
		RefID: "A", QueryType: q["queryType"].(string), JSON: qjson, Interval: step, MaxDataPoints: 100000,
		TimeRange: backend.TimeRange{From: from, To: to},
	}}})
	require.NoError(t, err)
	return resp.Responses["A"]
}

type eventRow struct {
	at, end    time.Time
	kind, text string
}

func eventRows(t *testing.T, dr backend.DataResponse) []eventRow {
	t.Helper()
	require.NoError(t, dr.Error)
	require.Len(t, dr.Frames, 1)
	f := dr.Frames[0]
	require.Equal(t, data.FrameTypeTable, f.Meta.Type)
	var out []eventRow
	for i := 0; i < f.Rows(); i++ {
		out = append(out, eventRow{
			at:   f.Fields[0].At(i).(time.Time),
			end:  f.Fields[1].At(i).(time.Time),
			kind: f.Fields[6].At(i).(string),
			text: f.Fields[3].At(i).(string),
		})
	}
	return out
}

func ofKind(rows []eventRow, kind string) []eventRow {
	var out []eventRow
	for _, r := range rows {
		if r.kind == kind {
			out = append(out, r)
		}
	}
	return out
}

// TestEventsSimRestart: the simulator's restart scenario restarts the server
// every 10 minutes with 20 s of downtime. Over 35 minutes that is three
// restarts, at 10, 20 and 30 minutes; the first scrape after each downtime
// (the 15 s grid point after restart + 20 s) shows them. Each must be
// reported once, within one scrape interval of that scrape, with one down
// period per restart, and nothing else.
func TestEventsSimRestart(t *testing.T) {
	inst, start, cfg := simScenario(t, "restart", 35*time.Minute)
	require.Equal(t, 10*time.Minute, cfg.RestartEvery)
	rows := eventRows(t, runQuery(t, inst, map[string]any{"queryType": "events"}, start, start.Add(35*time.Minute), 15*time.Second))
	restarts := ofKind(rows, "restart")
	require.Len(t, restarts, 3, "%+v", rows)
	downs := ofKind(rows, "down")
	require.Len(t, downs, 3, "%+v", rows)
	for k, r := range restarts {
		at := start.Add(time.Duration(k+1) * cfg.RestartEvery)
		// The first successful scrape after the downtime: the first 15 s grid
		// point at or after restart + downtime.
		back := at.Add(cfg.RestartDowntime)
		firstUp := start.Add(((back.Sub(start) + 15*time.Second - 1) / (15 * time.Second)) * 15 * time.Second)
		require.WithinDuration(t, firstUp, r.at, 15*time.Second, "restart %d: %s", k, r.text)
		require.Contains(t, r.text, "process_start_time_seconds")
		require.WithinDuration(t, at, downs[k].at, 15*time.Second, "down %d starts at the first failed scrape", k)
		require.WithinDuration(t, firstUp, downs[k].end, 15*time.Second, "down %d ends at the first good scrape", k)
	}
	for _, r := range rows {
		t.Logf("%s %s..%s %s", r.kind, r.at.Sub(start), r.end.Sub(start), r.text)
	}
	require.Len(t, rows, 6, "nothing but the restarts and the down periods: %+v", rows)

	// A latency query whose range spans the second restart says so.
	dr := runQuery(t, inst, map[string]any{"queryType": "latency", "stages": []string{"e2e"}, "stats": []string{"p50"}}, start.Add(18*time.Minute), start.Add(23*time.Minute), 15*time.Second)
	require.NoError(t, dr.Error)
	var notes []string
	for _, n := range dr.Frames[0].Meta.Notices {
		notes = append(notes, n.Text)
	}
	require.Contains(t, notes, "target sim restarted at "+restarts[1].at.UTC().Format(time.RFC3339)+": windows that span it count its counters from zero again (rate() treats it as a counter reset); see the events query")
}

// TestEventsSimHealthy: the healthy scenario has no events.
func TestEventsSimHealthy(t *testing.T) {
	inst, start, _ := simScenario(t, "healthy", 20*time.Minute)
	dr := runQuery(t, inst, map[string]any{"queryType": "events"}, start, start.Add(20*time.Minute), 15*time.Second)
	require.Empty(t, eventRows(t, dr))
	require.Len(t, dr.Frames[0].Meta.Notices, 1, "an empty result says why")
	require.Contains(t, dr.Frames[0].Meta.Notices[0].Text, "no restart, down period")
}

func hasNotice(ns []data.Notice, sub string) bool {
	for _, n := range ns {
		if strings.Contains(n.Text, sub) {
			return true
		}
	}
	return false
}

// TestEventsEngineChangeFromIndex: one URL serves vLLM 0.6 (V0) for 30
// minutes and, after 10 minutes away, vLLM 0.11 (V1) for 20. The events
// query reads which families a target exposes at each step without
// evaluating its `_bucket` series (their names come from the index, present
// where their `_count` is); it must still report the one engine change, at
// the first 0.11 scrape.
func TestEventsEngineChangeFromIndex(t *testing.T) {
	db, err := tsdb.Open(t.TempDir(), nil, nil, tsdb.DefaultOptions(), nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = db.Close() })
	var start time.Time
	for k, v := range []sim.Version{sim.V06, sim.V011} {
		cfg := sim.DefaultConfig()
		require.NoError(t, sim.ApplyScenario(&cfg, "healthy"))
		cfg.Version = v
		var at time.Time
		if k == 1 {
			at = start.Add(40 * time.Minute)
		}
		s, err := sim.New(cfg, sim.Options{Start: at})
		require.NoError(t, err)
		if k == 0 {
			start = s.Start()
		}
		_, err = s.FastForward(context.Background(), db, sim.FastForwardOptions{Duration: []time.Duration{30 * time.Minute, 20 * time.Minute}[k],
			ScrapeInterval: 15 * time.Second, VLLM: sim.Target{Job: "sim", Instance: "sim:8000"}})
		require.NoError(t, err)
	}
	st, err := settings.Load([]byte(`{"targets":[{"name":"sim","url":"http://sim:8000/metrics"}]}`), nil)
	require.NoError(t, err)
	inst := newInstanceForTest(st, source.NewEmbedded(db, source.EmbeddedOptions{}))
	inst.now = func() time.Time { return start.Add(time.Hour) }
	dr := runQuery(t, inst, map[string]any{"queryType": "events"}, start, start.Add(time.Hour), 15*time.Second)
	rows := ofKind(eventRows(t, dr), "engine_change")
	require.Len(t, rows, 1, "%+v", eventRows(t, dr))
	require.WithinDuration(t, start.Add(40*time.Minute+15*time.Second), rows[0].at, 0, "the first 0.11 scrape: %s", rows[0].text)
	require.Contains(t, rows[0].text, "was vllm v0 0.6")
	require.Contains(t, rows[0].text, "is now vllm v1 0.11")
	require.NotContains(t, dr.Frames[0].Meta.ExecutedQueryString, `{job=~"sim"})`, "bucket series are not evaluated")
}
