package sim

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// startServer runs a Sim with no generated load (only API requests) in real time.
func startServer(t *testing.T, mod func(*Config)) (*Sim, *httptest.Server) {
	t.Helper()
	s := newSim(t, "healthy", func(c *Config) {
		c.Rate = 0
		if mod != nil {
			mod(c)
		}
	}, Options{RecordTruth: true})
	srv := NewServer(s)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { _ = srv.Run(ctx); close(done) }()
	hs := httptest.NewServer(srv.Handler())
	t.Cleanup(func() {
		hs.Close()
		cancel()
		<-done
	})
	return s, hs
}

type streamResult struct {
	ttft    time.Duration
	arrival []time.Duration // client-side time of each content chunk since the request was sent
	text    string
	reason  string
	done    bool
}

func streamCompletion(t testing.TB, client *http.Client, url, body string) (streamResult, error) {
	var res streamResult
	start := time.Now()
	resp, err := client.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		return res, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		return res, fmt.Errorf("status %d: %s", resp.StatusCode, b)
	}
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/event-stream") {
		return res, fmt.Errorf("content type %q", ct)
	}
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "data: ") {
			continue
		}
		data := strings.TrimPrefix(line, "data: ")
		if data == "[DONE]" {
			res.done = true
			break
		}
		var chunk struct {
			Choices []struct {
				Text         string                   `json:"text"`
				Delta        struct{ Content string } `json:"delta"`
				FinishReason *string                  `json:"finish_reason"`
			} `json:"choices"`
			Error any `json:"error"`
		}
		if err := json.Unmarshal([]byte(data), &chunk); err != nil {
			return res, err
		}
		if chunk.Error != nil {
			return res, fmt.Errorf("error chunk: %s", data)
		}
		for _, c := range chunk.Choices {
			piece := c.Text + c.Delta.Content
			if piece != "" {
				el := time.Since(start)
				if len(res.arrival) == 0 {
					res.ttft = el
				}
				res.arrival = append(res.arrival, el)
				res.text += piece
			}
			if c.FinishReason != nil {
				res.reason = *c.FinishReason
			}
		}
	}
	return res, sc.Err()
}

// A client measuring TTFT and inter-chunk gaps sees what the model scheduled:
// same number of tokens, TTFT and the sum of gaps close to the truth (loose
// tolerances for a loaded 2-core machine), and gaps in the same order of size.
func TestStreamingTimingFollowsModel(t *testing.T) {
	// a slow GPU makes steps long (≈ 40 ms) compared with scheduling noise
	s, hs := startServer(t, func(c *Config) {
		c.GPU.MemBandwidth = 0.45e12
	})
	body := `{"model":"meta-llama/Llama-3.1-8B-Instruct","prompt":"` + strings.Repeat("word ", 400) + `","max_tokens":40,"ignore_eos":true,"stream":true}`
	res, err := streamCompletion(t, hs.Client(), hs.URL+"/v1/completions", body)
	require.NoError(t, err)
	require.True(t, res.done)
	assert.Equal(t, "length", res.reason)
	require.Len(t, res.arrival, 40)
	fin := s.Finished()
	require.Len(t, fin, 1)
	r := fin[0]
	tr, ok := r.Truth(s.Config().Version)
	require.True(t, ok)
	require.Len(t, tr.ITL, 39)
	// TTFT: the client's includes HTTP and JSON; allow +250 ms / −10 ms
	assert.GreaterOrEqual(t, res.ttft.Seconds(), tr.TTFT-0.01, "client TTFT ≥ model TTFT")
	assert.Less(t, res.ttft.Seconds(), tr.TTFT+0.25)
	// sum of client gaps ≈ model decode time (±25 % + 100 ms)
	clientDecode := (res.arrival[len(res.arrival)-1] - res.arrival[0]).Seconds()
	assert.InDelta(t, tr.Decode, clientDecode, 0.25*tr.Decode+0.1)
	// every model gap is ~ a step (≥ 30 ms); the client's median gap is in the same range
	gaps := make([]float64, 0, 39)
	for i := 1; i < len(res.arrival); i++ {
		gaps = append(gaps, (res.arrival[i] - res.arrival[i-1]).Seconds())
	}
	med := median(gaps)
	assert.InDelta(t, median(tr.ITL), med, 0.5*median(tr.ITL))
}

func median(v []float64) float64 {
	c := append([]float64(nil), v...)
	for i := range c {
		for j := i + 1; j < len(c); j++ {
			if c[j] < c[i] {
				c[i], c[j] = c[j], c[i]
			}
		}
	}
	return c[len(c)/2]
}

func TestNonStreamingAndChat(t *testing.T) {
	s, hs := startServer(t, nil)
	c := hs.Client()
	resp, err := c.Post(hs.URL+"/v1/chat/completions", "application/json",
		strings.NewReader(`{"model":"meta-llama/Llama-3.1-8B-Instruct","messages":[{"role":"user","content":"hello there"}],"max_tokens":5,"ignore_eos":true}`))
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	var out struct {
		Object  string
		Choices []struct {
			Message      struct{ Role, Content string }
			FinishReason string `json:"finish_reason"`
		}
		Usage struct {
			PromptTokens     int `json:"prompt_tokens"`
			CompletionTokens int `json:"completion_tokens"`
		}
	}
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&out))
	assert.Equal(t, "chat.completion", out.Object)
	require.Len(t, out.Choices, 1)
	assert.Equal(t, "assistant", out.Choices[0].Message.Role)
	assert.Len(t, strings.Fields(out.Choices[0].Message.Content), 5)
	assert.Equal(t, "length", out.Choices[0].FinishReason)
	assert.Equal(t, 5, out.Usage.CompletionTokens)
	assert.Equal(t, 3+7, out.Usage.PromptTokens, "11 bytes → 3 tokens + 7 template tokens")

	// chat streaming: role chunk, 3 content chunks, finish, usage, [DONE]
	res, err := streamCompletion(t, c, hs.URL+"/v1/chat/completions",
		`{"messages":[{"role":"user","content":"hi"}],"max_tokens":3,"ignore_eos":true,"stream":true,"stream_options":{"include_usage":true}}`)
	require.NoError(t, err)
	assert.True(t, res.done)
	assert.Len(t, res.arrival, 3)

	// models, health, version, metrics
	for path, want := range map[string]string{"/v1/models": `"id":"meta-llama/Llama-3.1-8B-Instruct"`, "/version": `"version":"0.11.0"`,
		"/metrics": `vllm:request_success_total{engine="0",finished_reason="length",model_name="meta-llama/Llama-3.1-8B-Instruct"} 2`} {
		resp, err := c.Get(hs.URL + path)
		require.NoError(t, err)
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		assert.Equal(t, http.StatusOK, resp.StatusCode, path)
		assert.Contains(t, string(b), want, path)
	}
	resp, err = c.Get(hs.URL + "/health")
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusOK, resp.StatusCode)
	_ = s

	// bad requests
	for body, code := range map[string]int{
		`{`:                                  http.StatusBadRequest,
		`{"model":"other","prompt":"x"}`:     http.StatusNotFound,
		`{"prompt":""}`:                      http.StatusOK, // empty string still one token
		`{"prompt":"x","max_tokens":0}`:      http.StatusBadRequest,
		`{"prompt":"x","max_tokens":100000}`: http.StatusBadRequest,
		`{"prompt":{"a":1}}`:                 http.StatusBadRequest,
		`{"prompt":"x","n":2}`:               http.StatusBadRequest,
		`{}`:                                 http.StatusBadRequest,
	} {
		resp, err := c.Post(hs.URL+"/v1/completions", "application/json", strings.NewReader(body))
		require.NoError(t, err)
		_, err = io.Copy(io.Discard, resp.Body)
		require.NoError(t, err)
		resp.Body.Close()
		assert.Equal(t, code, resp.StatusCode, body)
	}
}

// A client that disconnects mid-stream aborts its request (finished_reason=abort).
func TestClientDisconnectAborts(t *testing.T) {
	s, hs := startServer(t, nil)
	ctx, cancel := context.WithCancel(context.Background())
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, hs.URL+"/v1/completions",
		strings.NewReader(`{"prompt":"x","max_tokens":2000,"ignore_eos":true,"stream":true}`))
	require.NoError(t, err)
	resp, err := hs.Client().Do(req)
	require.NoError(t, err)
	br := bufio.NewReader(resp.Body)
	_, err = br.ReadString('\n')
	require.NoError(t, err)
	cancel()
	resp.Body.Close()
	require.Eventually(t, func() bool {
		f := s.Finished()
		return len(f) == 1 && f[0].FinishReason == ReasonAbort
	}, 5*time.Second, 20*time.Millisecond)
}

func TestFlakyMetricsEndpoint(t *testing.T) {
	_, hs := startServer(t, func(c *Config) { c.FlakyErrorRatio = 0.5 })
	codes := map[int]int{}
	for i := 0; i < 40; i++ {
		resp, err := hs.Client().Get(hs.URL + "/metrics")
		require.NoError(t, err)
		_, err = io.Copy(io.Discard, resp.Body)
		require.NoError(t, err)
		resp.Body.Close()
		codes[resp.StatusCode]++
	}
	assert.Greater(t, codes[500], 5)
	assert.Greater(t, codes[200], 5)
}

// The HTTP simulator serves 500 concurrent streams.
func Test500ConcurrentStreams(t *testing.T) {
	if testing.Short() {
		t.Skip("short mode")
	}
	_, hs := startServer(t, func(c *Config) { c.MaxNumSeqs = 512; c.MaxNumBatchedTokens = 16384 })
	tr := &http.Transport{MaxIdleConns: 600, MaxIdleConnsPerHost: 600, MaxConnsPerHost: 0}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr, Timeout: 60 * time.Second}
	const n = 500
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res, err := streamCompletion(t, client, hs.URL+"/v1/completions", `{"prompt":"hello world","max_tokens":8,"ignore_eos":true,"stream":true}`)
			if err == nil && (len(res.arrival) != 8 || !res.done) {
				err = fmt.Errorf("got %d chunks, done=%v", len(res.arrival), res.done)
			}
			errs <- err
		}()
	}
	wg.Wait()
	close(errs)
	failed := 0
	for err := range errs {
		if err != nil {
			failed++
			t.Log(err)
		}
	}
	assert.Zero(t, failed)
}

// TestAPIFaultsValidateAndRecord: fault shares outside 0..1 and incomplete
// stall or cut settings are refused; a 429 and a 5xx are answered with their
// status and never reach the engine (pkg/probe's tests read the ground-truth
// log of Server.Streams).
func TestAPIFaultsValidateAndRecord(t *testing.T) {
	for _, f := range []APIFaults{{TooManyShare: 1.5}, {ErrorShare: 1, ErrorCode: 404}, {CutShare: 1}, {StallShare: 1, StallToken: 1, Stall: time.Second},
		{SlowShare: 1}} {
		c := DefaultConfig()
		c.APIFaults = f
		assert.Error(t, c.Validate(), "%+v", f)
	}
	for _, tc := range []struct {
		f     APIFaults
		code  int
		fault string
	}{{APIFaults{TooManyShare: 1}, 429, FaultTooMany}, {APIFaults{ErrorShare: 1, ErrorCode: 504}, 504, FaultError}} {
		s, hs := startServer(t, func(c *Config) { c.APIFaults = tc.f })
		resp, err := http.Post(hs.URL+"/v1/completions", "application/json", strings.NewReader(`{"prompt":"hi","max_tokens":4}`))
		require.NoError(t, err)
		resp.Body.Close()
		assert.Equal(t, tc.code, resp.StatusCode)
		assert.Empty(t, s.Finished(), "a faulted request never reaches the engine")
	}
}
