package probe

import (
	"context"
	"fmt"
	"math"
	"net"
	"net/http"
	"net/http/httptest"
	"sort"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/inferscope/inferscope-llm-datasource/pkg/sim"
)

// simModel is the simulator's default served model.
var simModel = sim.DefaultConfig().Model.Name

// startSim runs the simulator in real time with no generated load (only the
// probe's requests) and the given API faults.
func startSim(t *testing.T, seed uint64, faults sim.APIFaults) (*sim.Server, string) {
	t.Helper()
	return startSimStyle(t, seed, faults, sim.StreamVLLM)
}

// startSimStyle is startSim with the server's stream layout.
func startSimStyle(t *testing.T, seed uint64, faults sim.APIFaults, style sim.StreamStyle) (*sim.Server, string) {
	t.Helper()
	cfg := sim.DefaultConfig()
	cfg.Rate = 0
	cfg.Seed = seed
	cfg.APIFaults = faults
	s, err := sim.New(cfg, sim.Options{RecordTruth: true, RecordTokens: true})
	require.NoError(t, err)
	srv := sim.NewServer(s)
	srv.Style = style
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _ = srv.Run(ctx); close(done) }()
	hs := httptest.NewServer(srv.Handler())
	t.Cleanup(func() {
		hs.Close()
		cancel()
		<-done
	})
	return srv, hs.URL
}

func simRequest(base string, chat bool, maxTokens int) Request {
	path := "/v1/completions"
	if chat {
		path = "/v1/chat/completions"
	}
	return Request{URL: base + path, Chat: chat, Model: simModel, Prompt: Prompt(32), MaxTokens: maxTokens, IgnoreEOS: true, EndpointName: "sim"}
}

// truthFor finds the server's record of the stream with the result's id.
func truthFor(t *testing.T, srv *sim.Server, r Result) sim.StreamTruth {
	t.Helper()
	// the server records a stream when its handler returns, just after the
	// client read the last byte
	for deadline := time.Now().Add(2 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		for _, st := range srv.Streams() {
			if st.ID == r.ID && st.ID != "" {
				return st
			}
		}
	}
	t.Fatalf("no ground truth for stream %q", r.ID)
	return sim.StreamTruth{}
}

// truthGaps are the gaps between consecutive token writes, seconds.
func truthGaps(st sim.StreamTruth) []float64 {
	var g []float64
	for i := 1; i < len(st.Sent); i++ {
		g = append(g, st.Sent[i].Sub(st.Sent[i-1]).Seconds())
	}
	return g
}

// errStats are the absolute errors of the probe against the ground truth.
type errStats struct{ all []float64 }

func (e *errStats) add(probe, truth float64) { e.all = append(e.all, math.Abs(probe-truth)) }
func (e *errStats) quantile(q float64) float64 {
	s := append([]float64(nil), e.all...)
	sort.Float64s(s)
	if len(s) == 0 {
		return 0
	}
	return s[int(math.Ceil(q*float64(len(s))))-1]
}
func (e *errStats) String() string {
	return fmt.Sprintf("n=%d median=%.2fms p95=%.2fms max=%.2fms", len(e.all), 1e3*e.quantile(0.5), 1e3*e.quantile(0.95), 1e3*e.quantile(1))
}

// TestMeasureMatchesSimulatorGroundTruth: on a healthy simulator (seeds 11
// and 12, chat and completions), the probe's TTFT, every gap, the gap
// variance and max, the output tokens and TPOT agree with the times the
// server wrote each token. Loopback adds well under a millisecond; the bounds
// are on medians, which a loaded CPU's hiccups do not move.
func TestMeasureMatchesSimulatorGroundTruth(t *testing.T) {
	var ttftErr, gapErr, maxErr, sdErr, tpotErr, outside errStats
	for _, seed := range []uint64{11, 12} {
		srv, base := startSim(t, seed, sim.APIFaults{})
		client := NewHTTPClient(10*time.Second, false)
		for i := range 6 {
			chat := i%2 == 0
			r := Measure(context.Background(), client, simRequest(base, chat, 24))
			require.True(t, r.OK(), "%s: %s", r.Class, r.Err)
			st := truthFor(t, srv, r)
			require.True(t, st.Done)
			assert.Equal(t, 24, r.OutputTokens)
			assert.Len(t, st.Sent, 24)
			require.Len(t, r.Gaps, 23)
			truthTTFT := st.Sent[0].Sub(st.Received).Seconds()
			ttftErr.add(r.TTFT, truthTTFT)
			assert.GreaterOrEqual(t, r.TTFT, truthTTFT-0.002, "the client cannot see a token before the server wrote it")
			tg := truthGaps(st)
			for k := range tg {
				gapErr.add(r.Gaps[k], tg[k])
			}
			tv, tm := varianceMax(tg)
			maxErr.add(r.GapMax, tm)
			sdErr.add(math.Sqrt(r.GapVariance), math.Sqrt(tv))
			// TPOT against the server's own first-to-last token span
			truthTPOT := st.Sent[23].Sub(st.Sent[0]).Seconds() / 23
			tpotErr.add(r.TPOT, truthTPOT)
			// the engine's TTFT (vLLM's histogram) is inside the client's; the
			// simulated engine clock counts the 0.5 ms output overhead the
			// server does not spend on the wall clock, hence the 1 ms slack
			et, ok := st.Request.Truth(sim.V011)
			require.True(t, ok)
			assert.Less(t, et.TTFT, r.TTFT+0.001)
			outside.add(r.TTFT, et.TTFT)
		}
	}
	t.Logf("TTFT abs error: %s", &ttftErr)
	t.Logf("gap abs error: %s", &gapErr)
	t.Logf("max gap abs error: %s", &maxErr)
	t.Logf("gap stddev abs error: %s", &sdErr)
	t.Logf("TPOT abs error: %s", &tpotErr)
	t.Logf("client TTFT − engine TTFT: %s", &outside)
	// Medians only: a measuring error (a clock started at the request instead of the first
	// byte, a gap off by one token, a variance of the wrong gaps) moves every request's figure,
	// so the median; a scheduling hiccup on a loaded machine moves one request's by an amount
	// nothing bounds (38 ms at a load average of 47, issue 32), so the maxima are logged, not
	// asserted. The stall tests below pin the max gap against a 300 ms stall.
	assert.Less(t, ttftErr.quantile(0.5), 0.002)
	assert.Less(t, gapErr.quantile(0.5), 0.001)
	assert.Less(t, maxErr.quantile(0.5), 0.002)
	assert.Less(t, sdErr.quantile(0.5), 0.001)
	assert.Less(t, tpotErr.quantile(0.5), 0.0002)
}

// TestOneTokenStallIsFoundAtItsGap: the server holds token 10 back 300 ms; the
// probe's max gap is that gap (between tokens 9 and 10) within a few ms, and
// the other gaps stay at decode speed.
func TestOneTokenStallIsFoundAtItsGap(t *testing.T) {
	srv, base := startSim(t, 21, sim.APIFaults{StallShare: 1, StallToken: 10, Stall: 300 * time.Millisecond})
	r := Measure(context.Background(), NewHTTPClient(10*time.Second, false), simRequest(base, true, 24))
	require.True(t, r.OK(), r.Err)
	st := truthFor(t, srv, r)
	assert.Equal(t, sim.FaultStall, st.Fault)
	tg := truthGaps(st)
	_, tm := varianceMax(tg)
	assert.GreaterOrEqual(t, tm, 0.3)
	assert.InDelta(t, tm, r.GapMax, 0.02)
	argmax := 0
	for i, g := range r.Gaps {
		if g > r.Gaps[argmax] {
			argmax = i
		}
	}
	assert.Equal(t, 8, argmax, "gap 9 (index 8) ends at the stalled token 10")
	// hand check of the variance: one gap of ~0.3 s among 22 of ~d gives
	// variance ≈ (0.3−d)²·22/23²; with d < 20 ms that is ≥ 0.0033 s².
	assert.Greater(t, r.GapVariance, 0.0033)
	t.Logf("stall: probe max gap %.1f ms, truth %.1f ms", 1e3*r.GapMax, 1e3*tm)
}

// TestSlowStreamTPOT: every token held 20 ms more; the probe's TPOT is the
// server's TPOT and at least 20 ms.
func TestSlowStreamTPOT(t *testing.T) {
	srv, base := startSim(t, 31, sim.APIFaults{SlowShare: 1, SlowPerToken: 20 * time.Millisecond})
	r := Measure(context.Background(), NewHTTPClient(10*time.Second, false), simRequest(base, false, 16))
	require.True(t, r.OK(), r.Err)
	st := truthFor(t, srv, r)
	assert.Equal(t, sim.FaultSlow, st.Fault)
	truthTPOT := st.Sent[15].Sub(st.Sent[0]).Seconds() / 15
	assert.GreaterOrEqual(t, r.TPOT, 0.020)
	assert.InDelta(t, truthTPOT, r.TPOT, 0.002)
	t.Logf("slow: probe TPOT %.2f ms, truth %.2f ms", 1e3*r.TPOT, 1e3*truthTPOT)
}

// TestErrorClassesAgainstSimulator: each injected fault gives its class and code.
func TestErrorClassesAgainstSimulator(t *testing.T) {
	client := NewHTTPClient(10*time.Second, false)
	cases := []struct {
		name   string
		faults sim.APIFaults
		mod    func(*Request)
		class  string
		code   string
		chunks int
	}{
		{name: "429", faults: sim.APIFaults{TooManyShare: 1}, class: ClassHTTP429, code: "429"},
		{name: "503", faults: sim.APIFaults{ErrorShare: 1}, class: ClassHTTP5xx, code: "503"},
		{name: "502", faults: sim.APIFaults{ErrorShare: 1, ErrorCode: 502}, class: ClassHTTP5xx, code: "502"},
		{name: "404 unknown model", mod: func(q *Request) { q.Model = "no-such-model" }, class: ClassHTTP4xx, code: "404"},
		{name: "400 max_tokens", mod: func(q *Request) { q.MaxTokens = 1 << 20 }, class: ClassHTTP4xx, code: "400"},
		{name: "cut", faults: sim.APIFaults{CutShare: 1, CutAfter: 5}, class: ClassStreamCut, chunks: 5},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			srv, base := startSim(t, 41, c.faults)
			q := simRequest(base, true, 16)
			if c.mod != nil {
				c.mod(&q)
			}
			r := Measure(context.Background(), client, q)
			assert.Equal(t, c.class, r.Class, r.Err)
			assert.Equal(t, c.code, r.Code())
			assert.Equal(t, c.chunks, len(r.Gaps)+min(1, int(r.TTFT*1e9)))
			if c.chunks > 0 {
				st := truthFor(t, srv, r)
				assert.Len(t, st.Sent, c.chunks)
				assert.False(t, st.Done)
			}
		})
	}
	t.Run("timeout", func(t *testing.T) {
		_, base := startSim(t, 42, sim.APIFaults{StallShare: 1, StallToken: 3, Stall: 2 * time.Second})
		r := Measure(context.Background(), NewHTTPClient(300*time.Millisecond, false), simRequest(base, true, 16))
		assert.Equal(t, ClassTimeout, r.Class, r.Err)
		assert.Equal(t, "", r.Code())
		assert.InDelta(t, 0.3, r.E2E, 0.1)
	})
	t.Run("connect", func(t *testing.T) {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		addr := ln.Addr().String()
		require.NoError(t, ln.Close())
		r := Measure(context.Background(), client, simRequest("http://"+addr, true, 16))
		assert.Equal(t, ClassConnect, r.Class, r.Err)
	})
}

// TestStreamErrorAndBadResponse: a server that sends an error object inside
// the stream, one that does not stream, one that ends [DONE] with no text, and one whose
// answer ends with finish_reason content_filter.
func TestStreamErrorAndBadResponse(t *testing.T) {
	h := http.NewServeMux()
	h.HandleFunc("/err/v1/chat/completions", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, "data: {\"id\":\"x\",\"choices\":[{\"delta\":{\"content\":\"a\"}}]}\n\n")
		fmt.Fprint(w, "data: {\"error\":{\"message\":\"request aborted: restart\",\"code\":500}}\n\n")
	})
	h.HandleFunc("/json/v1/chat/completions", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"id":"x","choices":[]}`)
	})
	h.HandleFunc("/filter/v1/chat/completions", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, "data: {\"id\":\"x\",\"choices\":[{\"delta\":{\"content\":\"a\"}}]}\n\n")
		fmt.Fprint(w, "data: {\"id\":\"x\",\"choices\":[{\"delta\":{},\"finish_reason\":\"content_filter\"}]}\n\n")
		fmt.Fprint(w, "data: [DONE]\n\n")
	})
	h.HandleFunc("/empty/v1/chat/completions", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprint(w, "data: [DONE]\n\n")
	})
	hs := httptest.NewServer(h)
	defer hs.Close()
	client := NewHTTPClient(5*time.Second, false)
	for path, class := range map[string]string{"/err": ClassStreamError, "/json": ClassBadResponse, "/empty": ClassBadResponse,
		"/filter": ClassContentFilter} {
		r := Measure(context.Background(), client, simRequest(hs.URL+path, true, 4))
		assert.Equal(t, class, r.Class, path+": "+r.Err)
	}
}
