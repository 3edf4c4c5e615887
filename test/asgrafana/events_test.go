package asgrafana

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// scriptedPage serves a case page whose k-th answered scrape has every
// counter and histogram sample multiplied by factor(k), fails scrapes
// failFrom..failTo-1 with HTTP 503, and from failTo on, with swapModel,
// serves another model's name. It records when each scrape arrived.
type scriptedPage struct {
	lines            []string
	types            map[string]string
	factor           func(k int) float64
	failFrom, failTo int
	swapModel        [2]string

	mu       sync.Mutex
	n        int // scrapes received
	answered int // scrapes answered with the page
	times    []time.Time
}

func newScriptedPage(t *testing.T, path string, failFrom, failTo int) *scriptedPage {
	lines := readLines(t, path)
	return &scriptedPage{lines: lines, types: pageTypes(lines), failFrom: failFrom, failTo: failTo,
		factor: func(k int) float64 { return float64(1 + k) }}
}

func (p *scriptedPage) at(k int) time.Time {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.times[k]
}

func (p *scriptedPage) served() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.n
}

func (p *scriptedPage) ServeHTTP(w http.ResponseWriter, _ *http.Request) {
	p.mu.Lock()
	k := p.n
	p.n++
	p.times = append(p.times, time.Now())
	fail := k >= p.failFrom && k < p.failTo
	answered := p.answered
	if !fail {
		p.answered++
	}
	p.mu.Unlock()
	if fail {
		http.Error(w, "engine restarting", http.StatusServiceUnavailable)
		return
	}
	f := p.factor(answered)
	var b strings.Builder
	for _, l := range p.lines {
		s, ok := parseSample(l)
		if ok {
			if _, typ := family(p.types, s.name); typ == "counter" || typ == "histogram" {
				if v, err := strconv.ParseFloat(s.value, 64); err == nil {
					l = fmt.Sprintf("%s%s %s", s.name, s.labels, strconv.FormatFloat(v*f, 'g', -1, 64))
				}
			}
		}
		if k >= p.failTo && p.swapModel[0] != "" {
			l = strings.ReplaceAll(l, `"`+p.swapModel[0]+`"`, `"`+p.swapModel[1]+`"`)
		}
		b.WriteString(l + "\n")
	}
	w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
	_, _ = w.Write([]byte(b.String()))
}

// TestEventsAsGrafana: through the built plugin, a target that fails three
// scrapes with HTTP 503 and comes back with its counters restarted gives one
// down period (naming the 503) and one restart, each at the right scrape
// (± one interval); a target whose URL starts serving another model gives
// one model change; a steady target gives nothing.
func TestEventsAsGrafana(t *testing.T) {
	const casePage = "testdata/cases/vllm-v1-dp2-no-ttft-e2e-buckets-end-60s.prom"
	restart := newScriptedPage(t, casePage, 8, 11)
	// The page's k-th answer (failed scrapes get none): counters advance,
	// then, after the failures, start again near zero (a restarted engine
	// has counted only a few requests by its first scrape).
	restart.factor = func(k int) float64 {
		if k < restart.failFrom {
			return float64(1 + k)
		}
		return 0.05 * float64(1+k-restart.failFrom)
	}
	swap := newScriptedPage(t, casePage, 8, 8)
	swap.swapModel = [2]string{"org/model-7b", "org/other-13b"}
	steady := newScriptedPage(t, casePage, 0, 0)
	jd, err := json.Marshal(map[string]any{"scrapeInterval": "1s", "scrapeTimeout": "500ms", "targets": []map[string]any{
		{"name": "restarts", "url": serve(t, restart)},
		{"name": "swaps", "url": serve(t, swap)},
		{"name": "steady", "url": serve(t, steady)},
	}})
	require.NoError(t, err)
	ds := dataSource{id: 3, uid: "inferscope-events", jsonData: jd, updatedMS: time.Now().UnixMilli()}
	host := startPlugin(t)
	start := time.Now()
	deadline := time.Now().Add(3 * time.Minute) // a safety net, not a speed test (issue 32)
	for restart.served() < 16 || swap.served() < 16 {
		require.True(t, time.Now().Before(deadline), "not scraped 16 times within 3 min")
		host.query(t, ds, time.Now().Add(-time.Minute), time.Now(), map[string]map[string]any{"T": {"queryType": "targets"}})
		time.Sleep(250 * time.Millisecond)
	}
	r := host.query(t, ds, start.Add(-time.Second), time.Now(), map[string]map[string]any{"A": {"queryType": "events"}})["A"]
	require.Empty(t, r.err)
	require.Len(t, r.frames, 1)
	f := r.frames[0]
	type row struct {
		at, end            time.Time
		target, kind, text string
	}
	var rows []row
	for i := 0; i < f.Rows(); i++ {
		rows = append(rows, row{tableField(t, f, "time").At(i).(time.Time), tableField(t, f, "timeEnd").At(i).(time.Time),
			cellString(t, f, "target", i), cellString(t, f, "kind", i), cellString(t, f, "text", i)})
	}
	// The injected faults' events, each exactly once. A loaded machine may also miss a scrape
	// of a healthy page (the page answered too late for the 500 ms scrape timeout): a real
	// down period, which the plugin reports as such. Such an extra event may only be a down
	// period that names a timeout and no injected 503; anything else (an extra restart, model
	// change, or a down period without a timeout) fails (issue 32).
	byKey := map[string][]row{}
	var missed []row
	for _, x := range rows {
		if x.kind == "down" && !strings.Contains(x.text, "503") {
			missed = append(missed, x)
			continue
		}
		byKey[x.target+"/"+x.kind] = append(byKey[x.target+"/"+x.kind], x)
	}
	require.Len(t, rows, 3+len(missed), "%+v", rows)
	for _, x := range missed {
		assert.True(t, strings.Contains(x.text, "context deadline exceeded") || strings.Contains(x.text, "scrape timeout exceeded"),
			"a down period that is not an injected fault must be a missed scrape (a timeout): %+v", x)
	}
	if len(missed) > 0 {
		t.Logf("scrapes missed on this machine, not injected: %+v", missed)
	}
	require.Len(t, byKey, 3, "%+v", rows)
	tol := 1100 * time.Millisecond
	down := byKey["restarts/down"]
	require.Len(t, down, 1, "%+v", rows)
	assert.WithinDuration(t, restart.at(restart.failFrom), down[0].at, tol)
	assert.WithinDuration(t, restart.at(restart.failTo), down[0].end, tol)
	assert.Contains(t, down[0].text, "503")
	re := byKey["restarts/restart"]
	require.Len(t, re, 1, "%+v", rows)
	assert.WithinDuration(t, restart.at(restart.failTo), re[0].at, tol)
	mc := byKey["swaps/model_change"]
	require.Len(t, mc, 1, "%+v", rows)
	assert.WithinDuration(t, swap.at(swap.failTo), mc[0].at, tol)
	assert.Contains(t, mc[0].text, "org/other-13b")
	assert.Empty(t, byKey["steady/restart"])
	// Rows are in time order, and the down period and the model swap can
	// start in the same second: find the down period's row by its kind.
	tags := tableField(t, f, "tags")
	downRow := -1
	for i := 0; i < f.Rows(); i++ {
		if cellString(t, f, "kind", i) == "down" && cellString(t, f, "target", i) == "restarts" && strings.Contains(cellString(t, f, "text", i), "503") {
			downRow = i
		}
	}
	require.GreaterOrEqual(t, downRow, 0)
	assert.Equal(t, "down,restarts", tags.At(downRow), "tags: kind and target")
}
