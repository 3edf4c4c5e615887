package asgrafana

import (
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Case pages of telemetry that lies (shared/cases rows 4–6), copied into testdata/cases.
const (
	casePIDSplit   = "testdata/cases/vllm-kv-split-by-pid.prom"
	caseSGLangCP8  = "testdata/cases/sglang-cp8-replicated-gauges.prom"
	caseNegativeKV = "testdata/cases/vllm-negative-kv.prom"
)

// advancingPage serves a case page as the cases README asks: every counter, histogram bucket,
// _sum and _count multiplied by 1 + k at the k-th scrape (k from 0), gauges as written.
type advancingPage struct {
	lines []string
	types map[string]string
	mu    sync.Mutex
	k     int
}

func newAdvancingPage(t *testing.T, path string) *advancingPage {
	lines := readLines(t, path)
	return &advancingPage{lines: lines, types: pageTypes(lines)}
}

func (p *advancingPage) scrapes() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.k
}

func (p *advancingPage) ServeHTTP(w http.ResponseWriter, _ *http.Request) {
	p.mu.Lock()
	k := p.k
	p.k++
	p.mu.Unlock()
	var b strings.Builder
	for _, l := range p.lines {
		s, ok := parseSample(l)
		if !ok {
			b.WriteString(l + "\n")
			continue
		}
		if _, typ := family(p.types, s.name); typ == "counter" || typ == "histogram" {
			v, err := strconv.ParseFloat(s.value, 64)
			if err == nil {
				fmt.Fprintf(&b, "%s%s %s\n", s.name, s.labels, strconv.FormatFloat(v*float64(1+k), 'g', -1, 64))
				continue
			}
		}
		b.WriteString(l + "\n")
	}
	w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
	_, _ = w.Write([]byte(b.String()))
}

// frozenPage is a vLLM page whose request gauges say work is in progress while its counters
// never move: the engine stopped updating its gauges (as vLLM does after a mass cancel).
const frozenPage = `# TYPE vllm:num_requests_running gauge
vllm:num_requests_running{engine="0",model_name="m"} 3
# TYPE vllm:num_requests_waiting gauge
vllm:num_requests_waiting{engine="0",model_name="m"} 1
# TYPE vllm:kv_cache_usage_perc gauge
vllm:kv_cache_usage_perc{engine="0",model_name="m"} 0.2
# TYPE vllm:prompt_tokens_total counter
vllm:prompt_tokens_total{engine="0",model_name="m"} 500
# TYPE vllm:generation_tokens_total counter
vllm:generation_tokens_total{engine="0",model_name="m"} 900
# TYPE vllm:request_success_total counter
vllm:request_success_total{engine="0",finished_reason="stop",model_name="m"} 7
`

// backwardsPage is a vLLM page on a page clock (see pageClock) whose generation counter
// climbs 100 per answer and, at the 7th answer, goes back 150 (600 → 550) without a restart,
// then climbs on: 100 tokens/s exactly, but for the step.
type backwardsPage struct {
	clock *pageClock
}

func (p *backwardsPage) ServeHTTP(w http.ResponseWriter, _ *http.Request) {
	k, stamp := p.clock.next()
	v := 100 * (k + 1)
	if k >= 6 {
		v -= 150
	}
	w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
	fmt.Fprintf(w, "# TYPE vllm:num_requests_running gauge\nvllm:num_requests_running{engine=\"0\",model_name=\"m\"} 2%s\n# TYPE vllm:kv_cache_usage_perc gauge\nvllm:kv_cache_usage_perc{engine=\"0\",model_name=\"m\"} 0.1%s\n# TYPE vllm:generation_tokens_total counter\nvllm:generation_tokens_total{engine=\"0\",model_name=\"m\"} %d%s\n", stamp, stamp, v, stamp)
}

// TestTelemetryThatLies drives the built plugin against the three case pages of issue 9 and a
// page with frozen gauges: replicated and process-split gauges count once, an impossible value
// is left out and named, and frozen gauges are called frozen.
func TestTelemetryThatLies(t *testing.T) {
	for _, p := range []string{casePIDSplit, caseSGLangCP8, caseNegativeKV} {
		if _, err := os.Stat(p); err != nil {
			t.Skipf("testdata page missing: %v", err)
		}
	}
	pages := map[string]*advancingPage{
		"pid-split":   newAdvancingPage(t, casePIDSplit),
		"sglang-cp8":  newAdvancingPage(t, caseSGLangCP8),
		"negative-kv": newAdvancingPage(t, caseNegativeKV),
	}
	var targets []map[string]any
	for _, name := range []string{"pid-split", "sglang-cp8", "negative-kv"} {
		targets = append(targets, map[string]any{"name": name, "url": serve(t, pages[name])})
	}
	var frozenScrapes sync.Map
	targets = append(targets, map[string]any{"name": "frozen", "url": serve(t, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		n, _ := frozenScrapes.LoadOrStore("n", new(int))
		*(n.(*int))++
		w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
		_, _ = w.Write([]byte(frozenPage))
	}))})
	start := time.Now()
	back := &backwardsPage{clock: newPageClock(start)}
	targets = append(targets, map[string]any{"name": "backwards", "url": serve(t, back)})
	// A 1 s scrape timeout (the interval): a loaded machine then rarely gives up on a scrape,
	// and one of the backwards page's answers around its step is needed (issue 32).
	jd, err := json.Marshal(map[string]any{"scrapeInterval": "1s", "scrapeTimeout": "1s", "targets": targets})
	require.NoError(t, err)
	ds := dataSource{id: 9, uid: "inferscope-lies", jsonData: jd, updatedMS: time.Now().UnixMilli()}
	host := startPlugin(t)

	// The frozen rule needs 10 scrape intervals of unchanged gauges; wait for 14 scrapes of
	// every page so the last steps are well inside the span.
	// The backwards page is on its own clock, which runs behind the wall clock under load, so
	// it is queried on its own stretch below.
	saturation := func() queryResult {
		return host.query(t, ds, start, time.Now().Add(-1500*time.Millisecond),
			map[string]map[string]any{"A": {"queryType": "saturation", "groupBy": "target",
				"targets": []string{"pid-split", "sglang-cp8", "negative-kv", "frozen"}}})["A"]
	}
	// The first request creates the instance, which starts the scrape loop.
	_ = host.query(t, ds, start.Add(-time.Minute), start, map[string]map[string]any{"T": {"queryType": "targets"}})
	deadline := time.Now().Add(3 * time.Minute) // a safety net, not a speed test (issue 32)
	for {
		ready := true
		for _, p := range pages {
			ready = ready && p.scrapes() >= 14
		}
		if ready {
			break
		}
		require.True(t, time.Now().Before(deadline), "pages not scraped 14 times in 3 min")
		time.Sleep(250 * time.Millisecond)
	}
	r := saturation()
	require.Empty(t, r.err)
	ss := seriesOf(t, r.frames)
	notices := allNotices(r.frames)
	t.Logf("notices: %q", notices)

	// Row 4: one engine's KV gauge written once per API-server process: the one value, 0.653.
	requireLast(t, one(t, ss, map[string]string{"signal": "kv_cache_usage", "target": "pid-split"}), 0.6530455880475035, 1e-12, "pid-split KV usage")
	requireLast(t, one(t, ss, map[string]string{"signal": "requests_running", "target": "pid-split"}), 12, 0, "pid-split running")

	// Row 5: eight tensor/context-parallel ranks of one scheduler: counted once.
	requireLast(t, one(t, ss, map[string]string{"signal": "requests_running", "target": "sglang-cp8"}), 5, 0, "sglang-cp8 running")
	requireLast(t, one(t, ss, map[string]string{"signal": "requests_waiting", "target": "sglang-cp8"}), 2, 0, "sglang-cp8 waiting")
	requireLast(t, one(t, ss, map[string]string{"signal": "kv_cache_usage", "target": "sglang-cp8"}), 0.5, 1e-12, "sglang-cp8 token usage")

	// Row 6: engine 3's KV −0.39 is left out (0.42, not 0.016) and named in a notice.
	requireLast(t, one(t, ss, map[string]string{"signal": "kv_cache_usage", "target": "negative-kv"}), 0.42, 1e-12, "negative-kv KV usage")
	requireLast(t, one(t, ss, map[string]string{"signal": "requests_running", "target": "negative-kv"}), 8, 0, "negative-kv running (engines add up)")
	var neg string
	for _, n := range notices {
		if strings.Contains(n, "target negative-kv: kv_cache_usage") {
			neg = n
		}
	}
	require.NotEmpty(t, neg, "no notice names the negative KV value; notices: %q", notices)
	for _, part := range []string{`engine="3"`, `model_name="org/ds"`, "-0.38754", "outside 0..1", "left out of the average", " UTC"} {
		assert.Contains(t, neg, part)
	}
	// Only that series is impossible.
	for _, n := range notices {
		for _, clean := range []string{"target pid-split", "target sglang-cp8", "target frozen"} {
			if strings.HasPrefix(n, clean+":") && strings.Contains(n, "read ") {
				t.Errorf("clean target named as impossible: %q", n)
			}
		}
	}

	// A counter that went back from 600 to 550 without a restart: named, and the windows that
	// hold the step are left out of the rate (PromQL alone would count 550 more tokens there).
	// The page is on its own clock, and the query ends inside 7 s of complete samples after the
	// step (at the page's 6 s), which hold the last lastSteps steps' 4 s windows: there the rate
	// is exactly 100/s, and no window anywhere reads more (issue 32).
	bend := gridEnd(t, host, ds, back.clock, []gridProbe{{target: "backwards", metric: "vllm:generation_tokens_total"}}, back.clock.at(7), 7*time.Second)
	tr := host.query(t, ds, start, bend,
		map[string]map[string]any{"B": {"queryType": "throughput", "groupBy": "target", "targets": []string{"backwards"}}})["B"]
	require.Empty(t, tr.err)
	tnotices := allNotices(tr.frames)
	assert.True(t, containsText(tnotices, `target backwards: generation_tokens {engine="0", model_name="m"} read 550 at `), "notices: %q", tnotices)
	assert.True(t, containsText(tnotices, "a counter that went back from 600 without a restart, left out of the rate in the windows that contain it"), "notices: %q", tnotices)
	gen := one(t, seriesOf(t, tr.frames), map[string]string{"signal": "generation_tokens", "target": "backwards"})
	values := 0
	for i, v := range gen.values {
		if !math.IsNaN(v) {
			values++
			// A window never extrapolates past its edges, so a linear counter's rate is at
			// most its slope, gaps or not; PromQL alone reads 550 tokens more in 4 s.
			assert.LessOrEqual(t, v, 100*(1+1e-9), "generation tokens/s at %s (100/s)", gen.times[i])
		}
	}
	assert.Greater(t, values, 3, "the windows without the step keep their rate")
	requireLast(t, gen, 100, 1e-9, "generation tokens/s after the step")
	// The page's gauges are steady while its counter moves: not frozen.
	bs := host.query(t, ds, start, bend, map[string]map[string]any{"S": {"queryType": "saturation", "groupBy": "target", "targets": []string{"backwards"}}})["S"]
	require.Empty(t, bs.err)
	assert.False(t, containsText(allNotices(bs.frames), "frozen since"), "notices: %q", allNotices(bs.frames))

	// Frozen gauges: called frozen since a time; the pid-split page (gauges as steady, but
	// tokens counted every scrape) and the pages without counters are not.
	assert.True(t, containsText(notices, "target frozen: request gauges frozen since "), "no frozen notice; notices: %q", notices)
	for _, n := range notices {
		if strings.Contains(n, "frozen since") && !strings.HasPrefix(n, "target frozen:") {
			t.Errorf("unexpected frozen notice: %q", n)
		}
	}
}
