package asgrafana

import (
	"encoding/json"
	"fmt"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/data"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// stallPage is a small vLLM V1 page whose progress counters advance by one
// step per scrape while running, and freeze while stalled: the page keeps
// answering, the waiting gauge grows by one per scrape (requests keep
// arriving) and the running gauge reads stalledRunning.
type stallPage struct {
	mu             sync.Mutex
	stalled        bool
	stalledRunning int
	scrapes        int
	gen, finished  float64
	waiting        int
}

func (p *stallPage) setStalled(s bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.stalled = s
	if !s {
		p.waiting = 0
	}
}

func (p *stallPage) count() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.scrapes
}

func (p *stallPage) ServeHTTP(w http.ResponseWriter, _ *http.Request) {
	p.mu.Lock()
	p.scrapes++
	running := 4
	if p.stalled {
		p.waiting++
		running = p.stalledRunning
	} else {
		p.gen += 200
		p.finished += 2
	}
	l := `{engine="0",model_name="m"}`
	body := fmt.Sprintf(`# TYPE vllm:num_requests_running gauge
vllm:num_requests_running%s %d
# TYPE vllm:num_requests_waiting gauge
vllm:num_requests_waiting%s %d
# TYPE vllm:kv_cache_usage_perc gauge
vllm:kv_cache_usage_perc%s 0.2
# TYPE vllm:generation_tokens_total counter
vllm:generation_tokens_total%s %g
# TYPE vllm:prompt_tokens_total counter
vllm:prompt_tokens_total%s %g
# TYPE vllm:num_preemptions_total counter
vllm:num_preemptions_total%s 0
# TYPE vllm:request_success_total counter
vllm:request_success_total{engine="0",finished_reason="abort",model_name="m"} 0
vllm:request_success_total{engine="0",finished_reason="stop",model_name="m"} %g
`, l, running, l, p.waiting, l, l, p.gen, l, p.gen*3, l, p.finished)
	p.mu.Unlock()
	w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
	_, _ = w.Write([]byte(body))
}

// TestAsGrafanaDiagnosis drives the diagnosis query type through the built
// plugin binary: two targets stall (running reads 0 on one, stays at 4 on
// the other) while their pages keep answering; the timeline names them
// stalled within 3 scrape intervals, the table and the alert frames say so,
// and the finding clears once progress resumes.
func TestAsGrafanaDiagnosis(t *testing.T) {
	zero, busy := &stallPage{stalledRunning: 0}, &stallPage{stalledRunning: 4}
	jd, err := json.Marshal(map[string]any{
		"scrapeInterval": "1s", "scrapeTimeout": "500ms",
		"targets": []map[string]any{{"name": "stall-zero", "url": serve(t, zero)}, {"name": "stall-busy", "url": serve(t, busy)}},
	})
	require.NoError(t, err)
	ds := dataSource{id: 2, uid: "inferscope-diagnosis", jsonData: jd, updatedMS: time.Now().UnixMilli()}
	host := startPlugin(t)
	q := func(from, to time.Time, m map[string]any) queryResult {
		t.Helper()
		m["queryType"] = "diagnosis"
		r := host.query(t, ds, from, to, map[string]map[string]any{"A": m})["A"]
		require.Empty(t, r.err, "diagnosis %v failed", m)
		return r
	}
	// The first query starts the instance (and its scrape loop).
	q(time.Now().Add(-time.Minute), time.Now(), map[string]any{})
	waitFor(t, 30*time.Second, func() bool { return zero.count() >= 8 && busy.count() >= 8 }, "8 scrapes of each target")

	timelineAt := func(from, to time.Time) (times []time.Time, cls map[string][]string) {
		r := q(from, to, map[string]any{"format": "timeline"})
		require.Len(t, r.frames, 1)
		f := r.frames[0]
		require.Equal(t, data.FrameTypeTimeSeriesWide, f.Meta.Type)
		cls = map[string][]string{}
		for i := 0; i < f.Rows(); i++ {
			times = append(times, f.Fields[0].At(i).(time.Time))
		}
		for _, fld := range f.Fields[1:] {
			for i := 0; i < fld.Len(); i++ {
				s := ""
				if p := fld.At(i).(*string); p != nil {
					s = *p
				}
				cls[fld.Labels["target"]] = append(cls[fld.Labels["target"]], s)
			}
		}
		return times, cls
	}

	before := time.Now()
	_, cls := timelineAt(before.Add(-6*time.Second), before.Add(-1500*time.Millisecond))
	for _, name := range []string{"stall-zero", "stall-busy"} {
		require.NotEmpty(t, cls[name], name)
		assert.NotContains(t, cls[name], "stalled", "%s before the stall", name)
	}

	stallAt := time.Now()
	zero.setStalled(true)
	busy.setStalled(true)
	time.Sleep(6500 * time.Millisecond)
	times, cls := timelineAt(stallAt.Add(-3*time.Second), time.Now().Add(-1500*time.Millisecond))
	for _, name := range []string{"stall-zero", "stall-busy"} {
		c := cls[name]
		require.Len(t, c, len(times), name)
		first := time.Time{}
		for i, ts := range times {
			if c[i] == "stalled" && first.IsZero() {
				first = ts
			}
		}
		require.False(t, first.IsZero(), "%s never stalled: %v", name, c)
		// 3 scrape intervals, plus one for the step grid.
		assert.LessOrEqual(t, first.Sub(stallAt), 4*time.Second, "%s stalled at +%s: %v", name, first.Sub(stallAt), c)
		assert.Equal(t, "stalled", c[len(c)-1], name)
	}

	// Current findings: a critical stall per target, with its evidence.
	r := q(time.Now().Add(-20*time.Second), time.Now().Add(-1500*time.Millisecond), map[string]any{})
	require.Len(t, r.frames, 1)
	tab := r.frames[0]
	for _, name := range []string{"stall-zero", "stall-busy"} {
		row := tableRow(t, tab, "target", name)
		assert.Equal(t, "stalled", cellString(t, tab, "class", row))
		assert.Equal(t, "critical", cellString(t, tab, "severity", row))
		assert.Contains(t, cellString(t, tab, "evidence", row), "progress 0 /s = 0")
		assert.Contains(t, cellString(t, tab, "recommendation", row), "restart")
		assert.Contains(t, cellString(t, tab, "not_checked", row), "no GPU agent is configured")
	}
	// Alert frames: one number per target and class, unique label sets.
	r = q(time.Now().Add(-20*time.Second), time.Now().Add(-1500*time.Millisecond), map[string]any{"format": "numeric"})
	seen := map[string]float64{}
	for _, f := range r.frames {
		require.Equal(t, data.FrameTypeNumericMulti, f.Meta.Type)
		require.Len(t, f.Fields, 1)
		require.Equal(t, 1, f.Fields[0].Len())
		key := f.Fields[0].Labels["target"] + "/" + f.Fields[0].Labels["class"] + f.Fields[0].Labels["gpu"]
		_, dup := seen[key]
		require.False(t, dup, "duplicate labels %s", key)
		seen[key] = toFloat(t, f.Fields[0].At(0))
	}
	assert.Equal(t, 3.0, seen["stall-zero/stalled"])
	assert.Equal(t, 3.0, seen["stall-busy/stalled"])
	assert.Equal(t, 0.0, seen["stall-zero/healthy"])
	assert.Equal(t, 0.0, seen["stall-busy/kv_cache_pressure"])

	resumeAt := time.Now()
	zero.setStalled(false)
	busy.setStalled(false)
	time.Sleep(6500 * time.Millisecond)
	times, cls = timelineAt(resumeAt.Add(-2*time.Second), time.Now().Add(-1500*time.Millisecond))
	for _, name := range []string{"stall-zero", "stall-busy"} {
		c := cls[name]
		for i, ts := range times {
			if ts.After(resumeAt.Add(4 * time.Second)) {
				assert.NotEqual(t, "stalled", c[i], "%s at +%s after the resume", name, ts.Sub(resumeAt))
			}
		}
	}
	// Annotations: the stall is a finding with a time range, a title and a text.
	r = q(stallAt.Add(-5*time.Second), time.Now().Add(-1500*time.Millisecond), map[string]any{"format": "annotations"})
	ann := r.frames[0]
	row := tableRow(t, ann, "target", "stall-zero")
	assert.Equal(t, "stall-zero: stalled (critical)", cellString(t, ann, "title", row))
	assert.Contains(t, cellString(t, ann, "text", row), "Stalled:")
	start := tableField(t, ann, "time").At(row).(time.Time)
	end := tableField(t, ann, "timeEnd").At(row).(time.Time)
	assert.True(t, end.After(start))
	assert.WithinDuration(t, stallAt, start, 5*time.Second)
	assert.WithinDuration(t, resumeAt, end, 5*time.Second)
}

func waitFor(t *testing.T, d time.Duration, cond func() bool, what string) {
	t.Helper()
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		if cond() {
			return
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Fatalf("timed out waiting for %s", what)
}
