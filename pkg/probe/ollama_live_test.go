package probe

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/inferscope/inferscope-llm-datasource/pkg/ollamatest"
)

// liveModel is the name the tiny model is served under in the live tests.
const liveModel = ollamatest.TinyModel

// startOllama starts a real Ollama serving the tiny model, or skips (ollamatest.StartTiny).
func startOllama(t *testing.T, parallel int) *ollamatest.Server {
	return ollamatest.StartTiny(t, parallel)
}

// oneShotClient is the probe's client with one connection per request, so that each of the
// recorder's connections holds exactly one request.
func oneShotClient(timeout time.Duration) *http.Client {
	c := NewHTTPClient(timeout, false)
	c.Transport.(*http.Transport).DisableKeepAlives = true
	return c
}

func liveRequest(base string, chat bool, maxTokens int) Request {
	path := "/v1/completions"
	if chat {
		path = "/v1/chat/completions"
	}
	return Request{URL: base + path, Chat: chat, Model: liveModel, Prompt: Prompt(32), MaxTokens: maxTokens, IgnoreEOS: true, EndpointName: "ollama"}
}

// wireTruth is one request's truth from the recorder: TTFT, every gap, E2E (seconds from the
// relay's first read of the request) and the usage block's completion tokens.
type wireTruth struct {
	ttft, e2e float64
	gaps      []float64
	tokens    int
	usage     int
	span      float64 // last token − first token
	w         ollamatest.Wire
}

func truthOf(t *testing.T, c *ollamatest.Conn) wireTruth {
	t.Helper()
	w, err := ollamatest.ParseWire(c)
	require.NoError(t, err)
	toks, usage, err := w.TokenEvents()
	require.NoError(t, err)
	require.NotEmpty(t, toks, "no token events on the wire")
	tr := wireTruth{ttft: toks[0].At.Sub(w.Sent).Seconds(), tokens: len(toks), usage: usage, w: w,
		span: toks[len(toks)-1].At.Sub(toks[0].At).Seconds()}
	for k := 1; k < len(toks); k++ {
		tr.gaps = append(tr.gaps, toks[k].At.Sub(toks[k-1].At).Seconds())
	}
	for _, e := range w.Events {
		if e.Done {
			tr.e2e = e.At.Sub(w.Sent).Seconds()
		}
	}
	return tr
}

// onlyConn waits until the recorder has relayed exactly one connection and its response is
// closed, and returns it.
func onlyConn(t *testing.T, rec *ollamatest.Recorder) *ollamatest.Conn {
	t.Helper()
	conns := rec.Conns()
	require.Len(t, conns, 1)
	require.True(t, conns[0].Wait(time.Minute), "the relayed connection never closed")
	return conns[0]
}

// TestOllamaLiveProbeMatchesWire: the probe's TTFT, every gap, the max gap, TPOT, E2E and the
// output tokens of requests to a real Ollama agree with the wire's truth (the recorder's
// timestamps of each token chunk, parsed apart from the probe). Tolerances: the probe can
// never see a byte before the relay read it (its TTFT and E2E are ≥ the wire's); the median
// absolute errors stay under 5 ms and the largest under 250 ms (a loaded 2-core machine);
// counts are exact.
func TestOllamaLiveProbeMatchesWire(t *testing.T) {
	srv := startOllama(t, 1)
	rec, err := ollamatest.NewRecorder(srv.Addr())
	require.NoError(t, err)
	t.Cleanup(func() { _ = rec.Close() })
	client := oneShotClient(2 * time.Minute)
	var ttftErr, gapErr, maxErr, tpotErr, e2eErr errStats
	var truthTTFT, truthGap errStats // the wire's own values (errStats of |x − 0|)
	const requests, maxTokens = 12, 32
	for i := range requests {
		chat := i%2 == 0
		rec.Reset()
		r := Measure(context.Background(), client, liveRequest(rec.URL(), chat, maxTokens))
		require.True(t, r.OK(), "%s: %s", r.Class, r.Err)
		tr := truthOf(t, onlyConn(t, rec))
		require.True(t, tr.w.Complete, "the wire's body ended cleanly")
		assert.Equal(t, maxTokens, tr.usage, "the usage block says max_tokens (the model never emits EOS)")
		assert.Equal(t, maxTokens, r.OutputTokens)
		assert.Equal(t, maxTokens, tr.tokens, "one token per chunk on the wire")
		require.Len(t, r.Gaps, tr.tokens-1, "the probe saw every token chunk")
		assert.GreaterOrEqual(t, r.TTFT, tr.ttft, "the probe cannot see the first token before the wire carried it")
		assert.GreaterOrEqual(t, r.E2E, tr.e2e, "nor [DONE]")
		ttftErr.add(r.TTFT, tr.ttft)
		e2eErr.add(r.E2E, tr.e2e)
		truthTTFT.add(tr.ttft, 0)
		truthMax := 0.0
		for k, g := range tr.gaps {
			gapErr.add(r.Gaps[k], g)
			truthGap.add(g, 0)
			truthMax = max(truthMax, g)
		}
		maxErr.add(r.GapMax, truthMax)
		tpotErr.add(r.TPOT, tr.span/float64(tr.usage-1))
	}
	t.Logf("the wire: TTFT %s; gaps %s", &truthTTFT, &truthGap)
	for name, e := range map[string]*errStats{"TTFT": &ttftErr, "gap": &gapErr, "max gap": &maxErr, "TPOT": &tpotErr, "E2E": &e2eErr} {
		t.Logf("%-7s abs error vs the wire: %s", name, e)
		assert.Less(t, e.quantile(0.5), 0.005, name)
		assert.Less(t, e.quantile(1), 0.25, name)
	}
}

// TestOllamaLiveStreamShapes pins what Ollama's OpenAI-compatible stream looks like on the wire,
// the shapes the simulator's Ollama style reproduces (sim.StreamOllama, ollamatest.OllamaShapes): no role-only first
// chunk (every chat delta carries the role and its text), a last choice chunk with empty text
// and the finish reason, a usage chunk with no choices, data: [DONE], no comments; in
// completions every chunk carries a zero usage block until the real one.
func TestOllamaLiveStreamShapes(t *testing.T) {
	srv := startOllama(t, 1)
	rec, err := ollamatest.NewRecorder(srv.Addr())
	require.NoError(t, err)
	t.Cleanup(func() { _ = rec.Close() })
	client := oneShotClient(2 * time.Minute)
	for _, chat := range []bool{true, false} {
		rec.Reset()
		r := Measure(context.Background(), client, liveRequest(rec.URL(), chat, 8))
		require.True(t, r.OK(), "%s: %s", r.Class, r.Err)
		c := onlyConn(t, rec)
		w, err := ollamatest.ParseWire(c)
		require.NoError(t, err)
		tr := truthOf(t, c)
		assert.GreaterOrEqual(t, r.TTFB, tr.ttft, "Ollama sends its headers with the first token chunk")
		shapes := ollamatest.Shapes(w)
		t.Logf("chat=%t: %s", chat, strings.Join(shapes, " | "))
		for _, e := range w.Events {
			t.Logf("  %s", e.Data)
		}
		assert.Equal(t, ollamatest.OllamaShapes(8), shapes)
		assert.Equal(t, 0, w.Comments)
		assert.Equal(t, "text/event-stream", w.Headers["content-type"])
	}
}

// TestOllamaLiveErrorClasses: the error classes of a real server's failures.
//   - a model it does not have: HTTP 404, class http_4xx, code 404;
//   - the model runner killed mid-stream (an engine crash): the server ends the stream
//     without [DONE]: stream_cut;
//   - the server stopped (SIGTERM) mid-stream: it closes the connection: stream_cut;
//   - the server gone: connect.
func TestOllamaLiveErrorClasses(t *testing.T) {
	srv := startOllama(t, 1)
	client := oneShotClient(2 * time.Minute)
	ctx := context.Background()

	q := liveRequest(srv.URL(), true, 8)
	q.Model = "no-such-model"
	r := Measure(ctx, client, q)
	assert.Equal(t, ClassHTTP4xx, r.Class, r.Err)
	assert.Equal(t, "404", r.Code())

	rec, err := ollamatest.NewRecorder(srv.Addr())
	require.NoError(t, err)
	t.Cleanup(func() { _ = rec.Close() })
	// Stop something after the 5th read of the response (headers, then token chunks): the
	// request asks for 3000 tokens, far more than are out by then.
	var mu sync.Mutex
	var action func()
	rec.OnChunk = func(_ *ollamatest.Conn, reads int) {
		mu.Lock()
		a := action
		if reads >= 5 {
			action = nil
		}
		mu.Unlock()
		if a != nil && reads >= 5 {
			a()
		}
	}
	arm := func(a func()) { mu.Lock(); action = a; mu.Unlock() }

	rec.Reset()
	arm(func() {
		pids, err := srv.RunnerPIDs()
		if err == nil {
			for _, pid := range pids {
				_ = killPID(pid)
			}
		}
	})
	r = Measure(ctx, client, liveRequest(rec.URL(), true, 3000))
	assert.Equal(t, ClassStreamCut, r.Class, "runner killed: %s", r.Err)
	w, err := ollamatest.ParseWire(onlyConn(t, rec))
	require.NoError(t, err)
	t.Logf("runner killed mid-stream: probe %s (%s); the wire's last events: %s", r.Class, r.Err, lastEvents(w, 2))

	// The server starts a new runner for the next request.
	require.NoError(t, srv.Load(ctx, liveModel), srv.LogTail(3000))
	rec.Reset()
	arm(func() { go srv.Stop(10 * time.Second) })
	r = Measure(ctx, client, liveRequest(rec.URL(), true, 3000))
	assert.Equal(t, ClassStreamCut, r.Class, "server stopped: %s", r.Err)
	t.Logf("server stopped mid-stream: probe %s (%s)", r.Class, r.Err)

	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		r = Measure(ctx, client, liveRequest(srv.URL(), true, 8))
		if r.Class == ClassConnect {
			break
		}
	}
	assert.Equal(t, ClassConnect, r.Class, "server gone: %s", r.Err)
}

// TestOllamaLiveQueueingIsTTFT: with OLLAMA_NUM_PARALLEL=1, three requests sent at once are
// served one after the other: none fails, and each later one waits for the one before,
// which the probe sees as TTFT (its first token comes after the previous request's last one
// on the wire), not as errors or slower tokens.
func TestOllamaLiveQueueingIsTTFT(t *testing.T) {
	srv := startOllama(t, 1)
	rec, err := ollamatest.NewRecorder(srv.Addr())
	require.NoError(t, err)
	t.Cleanup(func() { _ = rec.Close() })
	client := oneShotClient(2 * time.Minute)
	const n, maxTokens = 3, 48
	results := make([]Result, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i] = Measure(context.Background(), client, liveRequest(rec.URL(), true, maxTokens))
		}()
	}
	wg.Wait()
	type served struct {
		r           Result
		first, last time.Time // the probe's first and last token
	}
	var all []served
	for _, r := range results {
		require.True(t, r.OK(), "%s: %s", r.Class, r.Err)
		assert.Equal(t, maxTokens, r.OutputTokens)
		s := served{r: r, first: r.Start.Add(secs(r.TTFT)), last: r.Start.Add(secs(r.lastToken))}
		all = append(all, s)
	}
	conns := rec.Conns()
	require.Len(t, conns, n)
	var wires []wireTruth
	for _, c := range conns {
		require.True(t, c.Wait(time.Minute), "the relayed connection never closed")
		wires = append(wires, truthOf(t, c))
	}
	sort.Slice(all, func(i, j int) bool { return all[i].first.Before(all[j].first) })
	sort.Slice(wires, func(i, j int) bool {
		return wires[i].w.Sent.Add(secs(wires[i].ttft)).Before(wires[j].w.Sent.Add(secs(wires[j].ttft)))
	})
	for k := 1; k < n; k++ {
		prevLast := wires[k-1].w.Sent.Add(secs(wires[k-1].ttft + wires[k-1].span))
		first := wires[k].w.Sent.Add(secs(wires[k].ttft))
		assert.False(t, first.Before(prevLast), "request %d's first token came before request %d's last: not queued", k, k-1)
		assert.False(t, all[k].first.Before(all[k-1].last), "the probe sees request %d's first token after request %d's last", k, k-1)
		assert.Greater(t, all[k].r.TTFT, all[0].r.TTFT, "queueing shows as TTFT")
		t.Logf("request %d: TTFT %.1f ms (the first: %.1f ms), TPOT %.2f ms", k, 1e3*all[k].r.TTFT, 1e3*all[0].r.TTFT, 1e3*all[k].r.TPOT)
	}
}

// TestOllamaLiveAvailability: the prober's own loop against a real Ollama that is stopped and
// started again: the requests during the outage fail as connect, the ones after it succeed,
// and the counters on the prober's /metrics say so (requests, errors by class, successes).
func TestOllamaLiveAvailability(t *testing.T) {
	srv := startOllama(t, 1)
	cfg := defaults()
	cfg.Endpoints = []Endpoint{{Name: "ollama", URL: srv.URL() + "/v1/chat/completions", Model: liveModel}}
	cfg.Model = liveModel
	cfg.Interval = MinInterval
	cfg.Timeout = 10 * time.Second
	cfg.MaxTokens = 16
	p, err := NewProber(cfg, nil)
	require.NoError(t, err)
	results := make(chan Result, 64)
	p.OnResult = func(r Result) { results <- r }
	ctx, cancel := context.WithCancel(context.Background())
	p.Start(ctx)
	t.Cleanup(func() { cancel(); p.Wait() })
	var seq []string
	waitFor := func(class string, n int) {
		got := 0
		for got < n {
			select {
			case r := <-results:
				seq = append(seq, cmpOr(r.Class, "ok"))
				if r.Class == class {
					got++
				}
			case <-time.After(2 * time.Minute):
				t.Fatalf("no %d results of class %q: %v", n, class, seq)
			}
		}
	}
	waitFor("", 2)
	srv.Stop(10 * time.Second)
	waitFor(ClassConnect, 2)
	require.NoError(t, srv.Restart(context.Background(), 2*time.Minute))
	waitFor("", 2)
	cancel()
	p.Wait()
	t.Logf("probe results in order: %v", seq)
	for _, c := range seq {
		assert.Contains(t, []string{"ok", ClassConnect, ClassStreamCut}, c, "only connect failures (and a cut stream at the stop) around a restart")
	}
	fams := gatherProbe(t, p)
	var okN, failN int
	for _, c := range seq {
		if c == "ok" {
			okN++
		} else {
			failN++
		}
	}
	assert.Equal(t, float64(okN+failN), counterValue(fams, "inferscope_probe_requests_total", nil))
	assert.Equal(t, float64(countOf(seq, ClassConnect)), counterValue(fams, "inferscope_probe_errors_total", map[string]string{"class": ClassConnect}))
	assert.Equal(t, float64(okN), histCount(fams, "inferscope_probe_time_to_first_token_seconds"))
}

func cmpOr(s, d string) string {
	if s == "" {
		return d
	}
	return s
}

func countOf(xs []string, x string) (n int) {
	for _, y := range xs {
		if y == x {
			n++
		}
	}
	return n
}

func secs(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }

func killPID(pid int) error {
	p, err := os.FindProcess(pid)
	if err != nil {
		return err
	}
	return p.Kill()
}

func lastEvents(w ollamatest.Wire, n int) string {
	ev := w.Events
	if len(ev) > n {
		ev = ev[len(ev)-n:]
	}
	var parts []string
	for _, e := range ev {
		parts = append(parts, e.Data)
	}
	return fmt.Sprintf("%q (body complete: %t)", parts, w.Complete)
}

// gatherProbe scrapes the prober's /metrics as text and parses it.
func gatherProbe(t *testing.T, p *Prober) map[string]*dto.MetricFamily {
	t.Helper()
	rw := &bufferWriter{h: http.Header{}}
	req, _ := http.NewRequest(http.MethodGet, "/metrics", nil)
	p.Handler().ServeHTTP(rw, req)
	parser := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := parser.TextToMetricFamilies(strings.NewReader(rw.b.String()))
	require.NoError(t, err)
	return fams
}

type bufferWriter struct {
	h http.Header
	b strings.Builder
}

func (w *bufferWriter) Header() http.Header         { return w.h }
func (w *bufferWriter) Write(p []byte) (int, error) { return w.b.Write(p) }
func (w *bufferWriter) WriteHeader(int)             {}

func matches(m *dto.Metric, want map[string]string) bool {
	for k, v := range want {
		found := false
		for _, l := range m.GetLabel() {
			if l.GetName() == k && l.GetValue() == v {
				found = true
			}
		}
		if !found {
			return false
		}
	}
	return true
}

func counterValue(fams map[string]*dto.MetricFamily, name string, want map[string]string) float64 {
	var sum float64
	if f, ok := fams[name]; ok {
		for _, m := range f.GetMetric() {
			if matches(m, want) {
				sum += m.GetCounter().GetValue()
			}
		}
	}
	return sum
}

func histCount(fams map[string]*dto.MetricFamily, name string) float64 {
	var sum float64
	if f, ok := fams[name]; ok {
		for _, m := range f.GetMetric() {
			sum += float64(m.GetHistogram().GetSampleCount())
		}
	}
	return sum
}
