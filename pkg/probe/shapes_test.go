package probe

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/inferscope/inferscope-llm-datasource/pkg/ollamatest"
	"github.com/inferscope/inferscope-llm-datasource/pkg/sim"
)

// TestMeasureCountsReasoningDeltas: a thinking model on Ollama (and newer vLLM) streams its
// reasoning in delta.reasoning before any delta.content. Those chunks are tokens the user
// waits for: TTFT is the first of them and every one is a gap. Written as Ollama's
// OpenAI-compatible layer sends it (openai.Message's "reasoning" field, v0.17).
func TestMeasureCountsReasoningDeltas(t *testing.T) {
	chunk := func(field, text string, finish string) string {
		f := "null"
		if finish != "" {
			f = fmt.Sprintf("%q", finish)
		}
		delta := `{"role":"assistant","content":""}`
		if field != "" {
			delta = fmt.Sprintf(`{"role":"assistant","content":"","%s":%q}`, field, text)
			if field == "content" {
				delta = fmt.Sprintf(`{"role":"assistant","content":%q}`, text)
			}
		}
		return fmt.Sprintf(`data: {"id":"chatcmpl-7","object":"chat.completion.chunk","created":1,"model":"m","system_fingerprint":"fp_ollama","choices":[{"index":0,"delta":%s,"finish_reason":%s}]}`+"\n\n", delta, f)
	}
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		fl := w.(http.Flusher)
		for _, c := range []string{chunk("reasoning", "Let", ""), chunk("reasoning", " me", ""), chunk("reasoning", " think", ""),
			chunk("content", "Four", ""), chunk("content", ".", ""), chunk("", "", "stop")} {
			fmt.Fprint(w, c)
			fl.Flush()
			time.Sleep(5 * time.Millisecond)
		}
		fmt.Fprint(w, `data: {"id":"chatcmpl-7","object":"chat.completion.chunk","created":1,"model":"m","system_fingerprint":"fp_ollama","choices":[],"usage":{"prompt_tokens":9,"completion_tokens":5,"total_tokens":14}}`+"\n\ndata: [DONE]\n\n")
	}))
	defer hs.Close()
	r := Measure(context.Background(), NewHTTPClient(10*time.Second, false), Request{URL: hs.URL + "/v1/chat/completions", Chat: true, Model: "m", Prompt: "p", MaxTokens: 5})
	require.True(t, r.OK(), "%s: %s", r.Class, r.Err)
	assert.Equal(t, 5, r.OutputTokens)
	assert.Len(t, r.Gaps, 4, "the three reasoning chunks and the two content chunks are all tokens")
	assert.Less(t, r.TTFT, r.E2E-0.015, "TTFT is the first reasoning chunk, at least 5 chunks × 5 ms before [DONE]")
}

// TestMeasureAgainstSimulatorOllamaStyle: the probe on the simulator's Ollama layout
// (sim.StreamOllama: no role-only chunk, headers with the first token, zero usage blocks on
// every completions chunk) counts the same tokens and gaps as the server wrote, and a stream
// cut after 5 tokens is stream_cut.
func TestMeasureAgainstSimulatorOllamaStyle(t *testing.T) {
	srv, base := startSimStyle(t, 31, sim.APIFaults{}, sim.StreamOllama)
	client := NewHTTPClient(10*time.Second, false)
	for _, chat := range []bool{true, false} {
		r := Measure(context.Background(), client, simRequest(base, chat, 24))
		require.True(t, r.OK(), "%s: %s", r.Class, r.Err)
		st := truthFor(t, srv, r)
		require.True(t, st.Done)
		assert.Equal(t, 24, r.OutputTokens)
		require.Len(t, r.Gaps, 23)
		truthTTFT := st.Sent[0].Sub(st.Received).Seconds()
		assert.GreaterOrEqual(t, r.TTFT, truthTTFT-0.002)
		assert.GreaterOrEqual(t, r.TTFB, truthTTFT-0.002, "Ollama sends its headers with the first token: TTFB is at least the server's TTFT")
		tg := truthGaps(st)
		var gapErr errStats
		for k := range tg {
			gapErr.add(r.Gaps[k], tg[k])
		}
		assert.Less(t, gapErr.quantile(0.5), 0.002, "chat=%t: %s", chat, &gapErr)
	}
	_, base = startSimStyle(t, 32, sim.APIFaults{CutShare: 1, CutAfter: 5}, sim.StreamOllama)
	r := Measure(context.Background(), client, simRequest(base, true, 24))
	assert.Equal(t, ClassStreamCut, r.Class, r.Err)
}

// TestSimulatorOllamaStyleHasTheWiresShapes: the simulator's Ollama layout puts on the wire
// the chunk shapes the live test (TestOllamaLiveStreamShapes) pins from a real Ollama:
// ollamatest.OllamaShapes, read by the same classifier over the recorder's bytes.
func TestSimulatorOllamaStyleHasTheWiresShapes(t *testing.T) {
	_, base := startSimStyle(t, 33, sim.APIFaults{}, sim.StreamOllama)
	rec, err := ollamatest.NewRecorder(base[len("http://"):])
	require.NoError(t, err)
	t.Cleanup(func() { _ = rec.Close() })
	client := oneShotClient(10 * time.Second)
	for _, chat := range []bool{true, false} {
		rec.Reset()
		r := Measure(context.Background(), client, simRequest(rec.URL(), chat, 8))
		require.True(t, r.OK(), "%s: %s", r.Class, r.Err)
		w, err := ollamatest.ParseWire(onlyConn(t, rec))
		require.NoError(t, err)
		assert.Equal(t, ollamatest.OllamaShapes(8), ollamatest.Shapes(w), "chat=%t", chat)
		assert.Equal(t, 0, w.Comments)
	}
	// and the vLLM layout keeps its role-only first chunk
	_, base = startSim(t, 34, sim.APIFaults{})
	rec2, err := ollamatest.NewRecorder(base[len("http://"):])
	require.NoError(t, err)
	t.Cleanup(func() { _ = rec2.Close() })
	r := Measure(context.Background(), client, simRequest(rec2.URL(), true, 3))
	require.True(t, r.OK(), "%s: %s", r.Class, r.Err)
	w, err := ollamatest.ParseWire(onlyConn(t, rec2))
	require.NoError(t, err)
	assert.Equal(t, []string{ollamatest.ShapeRole, "text", "text", "text", ollamatest.ShapeFinish, ollamatest.ShapeUsage, ollamatest.ShapeDone}, ollamatest.Shapes(w))
}
