package plugin

import (
	"context"
	"encoding/json"
	"io"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/backend"
	"github.com/grafana/grafana-plugin-sdk-go/data"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/inferscope/inferscope-llm-datasource/pkg/ollamatest"
	"github.com/inferscope/inferscope-llm-datasource/pkg/probe"
)

// TestOllamaLivePluginAnswers: the data source in front of a real Ollama, which serves no
// /metrics, watched by a real probe (its own loop, 1 s interval) that the collector scrapes
// every second, while the server is stopped and started again. The plugin must answer from
// what it has and invent nothing:
//   - Save & test names the target's failed scrape (HTTP 404) and claims no engine or signal;
//   - an engine latency query for the target has no data and says why;
//   - the probe's errors view shows the outage: connect errors, a success ratio below 1 in
//     the windows holding it and 1 before it;
//   - the events query has no restart for the target (there is no restart evidence: no page).
func TestOllamaLivePluginAnswers(t *testing.T) {
	srv := ollamatest.StartTiny(t, 1)
	cfg, err := probe.ParseFlags([]string{"--endpoint", "ollama=" + srv.URL(), "--model", ollamatest.TinyModel,
		"--interval", "1s", "--timeout", "10s", "--max-tokens", "8"}, func(string) string { return "" }, io.Discard)
	require.NoError(t, err)
	p, err := probe.NewProber(cfg, nil)
	require.NoError(t, err)
	results := make(chan probe.Result, 256)
	p.OnResult = func(r probe.Result) { results <- r }
	probeHS := httptest.NewServer(p.Handler())
	defer probeHS.Close()
	ctx, cancel := context.WithCancel(context.Background())
	defer func() { cancel(); p.Wait() }()

	inst := newLiveInstance(t, "ollama-live", map[string]any{"storagePath": t.TempDir(),
		"scrapeInterval": "1s", "scrapeTimeout": "1s", "retention": "1h",
		"targets": []map[string]any{{"name": "ollama", "url": srv.URL() + "/metrics"}},
		"probes":  []map[string]any{{"name": "probe-o", "url": probeHS.URL + "/metrics", "target": "ollama"}}})
	defer inst.Dispose()
	t0 := time.Now()
	p.Start(ctx)

	var seq []string
	var outageFrom, outageTo time.Time
	waitFor := func(class string, n int) {
		for got := 0; got < n; {
			select {
			case r := <-results:
				c := r.Class
				if c == "" {
					c = "ok"
				}
				seq = append(seq, c)
				if r.Class == class {
					got++
				}
			case <-time.After(2 * time.Minute):
				t.Fatalf("no %d results of class %q: %v", n, class, seq)
			}
		}
	}
	waitFor("", 4)
	outageFrom = time.Now()
	srv.Stop(10 * time.Second)
	waitFor(probe.ClassConnect, 3)
	require.NoError(t, srv.Restart(context.Background(), 2*time.Minute))
	outageTo = time.Now()
	waitFor("", 4) // at least 4 s after the restart: the collector has scraped the probe since
	t.Logf("probe results: %v", seq)
	now := time.Now()

	// Save & test
	res, err := inst.CheckHealth(context.Background(), &backend.CheckHealthRequest{})
	require.NoError(t, err)
	t.Logf("Save & test: %s: %s", res.Status, res.Message)
	assert.Equal(t, backend.HealthStatusError, res.Status)
	assert.Contains(t, res.Message, "404", "the sentence names the failed scrape")
	assert.NotContains(t, res.Message, "exports", "no signal is claimed")

	// an engine latency query for the target
	dr := runQuery(t, inst, map[string]any{"queryType": "latency", "targets": []string{"ollama"}, "signal": "ttft", "window": "5s"},
		t0, now, time.Second)
	require.NoError(t, dr.Error)
	var notices []string
	points := 0
	for _, f := range dr.Frames {
		if f.Meta != nil {
			for _, n := range f.Meta.Notices {
				notices = append(notices, n.Text)
			}
		}
		points += framePoints(f)
	}
	t.Logf("latency for ollama: %d points; notices: %q", points, notices)
	assert.Zero(t, points, "nothing invented for a target with no page")
	assert.NotEmpty(t, notices, "an empty answer says why")
	assert.Contains(t, strings.Join(notices, "\n"), "answers, but not with a metrics page", "a server that answers is not called down")

	// the probe's errors view over 5 s windows
	dr = runQuery(t, inst, map[string]any{"queryType": "probe", "view": "errors", "window": "5s"}, t0, now, time.Second)
	require.NoError(t, dr.Error)
	var minRatio, connect float64 = 2, 0
	for _, f := range dr.Frames {
		if len(f.Fields) < 2 {
			continue
		}
		lbl := f.Fields[1].Labels
		for i := 0; i < f.Fields[0].Len(); i++ {
			at := f.Fields[0].At(i).(time.Time)
			v, ok := f.Fields[1].ConcreteAt(i)
			if !ok {
				continue
			}
			x := v.(float64)
			switch {
			case lbl["signal"] == "success_ratio" && !at.Before(outageFrom) && !at.After(outageTo.Add(5*time.Second)):
				minRatio = min(minRatio, x)
			case lbl["signal"] == "errors" && lbl["class"] == probe.ClassConnect:
				connect = max(connect, x)
			}
		}
	}
	t.Logf("probe errors view: lowest success ratio around the outage %.2f, highest connect errors/s %.3f", minRatio, connect)
	assert.Less(t, minRatio, 1.0, "the outage shows in the availability SLI")
	assert.Greater(t, connect, 0.0, "as connect errors")

	// events
	dr = runQuery(t, inst, map[string]any{"queryType": "events"}, t0, now, time.Second)
	require.NoError(t, dr.Error)
	for _, f := range dr.Frames {
		b, _ := json.Marshal(f)
		t.Logf("events frame: %s", truncateForLog(string(b), 3000))
		for i := 0; i < f.Rows(); i++ {
			row := f.RowCopy(i)
			for _, v := range row {
				if s, ok := v.(string); ok && s == "restart" {
					t.Errorf("a restart was claimed without restart evidence: %v", row)
				}
			}
		}
	}
}

// framePoints counts the non-null values of a frame's value fields.
func framePoints(f *data.Frame) int {
	n := 0
	for _, fl := range f.Fields[min(1, len(f.Fields)):] {
		for i := 0; i < fl.Len(); i++ {
			if _, ok := fl.ConcreteAt(i); ok {
				n++
			}
		}
	}
	return n
}

func truncateForLog(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
