package probe

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"os"
	"strconv"
	"strings"
	"time"
)

// Error classes of a failed request (label class of inferscope_probe_errors_total).
const (
	ClassConnect     = "connect"      // DNS, TCP or TLS failure before a request was sent
	ClassTimeout     = "timeout"      // the request timeout passed (before headers or mid-stream)
	ClassHTTP429     = "http_429"     // 429 Too Many Requests (rate limited)
	ClassHTTP4xx     = "http_4xx"     // any other 4xx; the code label has the status
	ClassHTTP5xx     = "http_5xx"     // 5xx (engine error, gateway 502/503/504); the code label has the status
	ClassStreamCut   = "stream_cut"   // the stream ended or was reset before data: [DONE]
	ClassStreamError = "stream_error" // the server sent an error object inside the stream
	ClassBadResponse = "bad_response" // 200 but not an SSE stream of completion chunks
	// ClassContentFilter: a choice ended with finish_reason "content_filter" (the OpenAI API's
	// content-policy stop): the answer was cut or refused by a filter, counted as failed.
	ClassContentFilter = "content_filter"
)

// Classes lists every error class, in the order above.
var Classes = []string{ClassConnect, ClassTimeout, ClassHTTP429, ClassHTTP4xx, ClassHTTP5xx, ClassStreamCut, ClassStreamError, ClassBadResponse, ClassContentFilter}

// Result is one probe request as the client saw it. Durations are seconds from
// the moment the request was handed to the HTTP client (Start); zero when not
// reached. Class is "" for a success.
type Result struct {
	Endpoint string    `json:"endpoint"`
	Model    string    `json:"model"`
	Start    time.Time `json:"start"`
	// ID is the response id of the stream's chunks (e.g. "chatcmpl-…"), "" when none arrived.
	ID string `json:"id,omitempty"`
	// Status is the HTTP status code, 0 when no response arrived.
	Status int `json:"status,omitempty"`
	// Class is the error class (Class*), "" for a success; Err the error text (never holds secrets).
	Class string `json:"class,omitempty"`
	Err   string `json:"error,omitempty"`

	TTFB float64 `json:"ttfbSeconds"` // response headers received
	TTFT float64 `json:"ttftSeconds"` // first chunk carrying text
	E2E  float64 `json:"e2eSeconds"`  // data: [DONE] (or the failure) received
	// Gaps are the intervals between consecutive text-carrying chunks, seconds (len = chunks − 1).
	Gaps []float64 `json:"gapsSeconds"`
	// OutputTokens is usage.completion_tokens when the server sent it, else the text chunks.
	OutputTokens int     `json:"outputTokens"`
	TPOT         float64 `json:"tpotSeconds"`         // (last text chunk − first) / (OutputTokens − 1); 0 when OutputTokens ≤ 1
	GapVariance  float64 `json:"gapVarianceSeconds2"` // population variance of Gaps, s²
	GapMax       float64 `json:"gapMaxSeconds"`       // largest gap, s
	lastToken    float64 // seconds to the last text chunk
	chunks       int
}

// OK reports whether the request succeeded.
func (r *Result) OK() bool { return r.Class == "" }

// Code is the code label of an error: the HTTP status for HTTP classes, else "".
func (r *Result) Code() string {
	if r.Status != 0 && (r.Class == ClassHTTP429 || r.Class == ClassHTTP4xx || r.Class == ClassHTTP5xx) {
		return strconv.Itoa(r.Status)
	}
	return ""
}

// Request is what one probe request sends.
type Request struct {
	URL          string // full URL of /v1/chat/completions or /v1/completions
	Chat         bool   // chat messages (true) or a completions prompt
	Model        string
	Prompt       string
	MaxTokens    int
	IgnoreEOS    bool   // vLLM/SGLang extension: generate exactly MaxTokens
	APIKey       string // sent as Authorization: Bearer; never logged
	EndpointName string // label value
}

// Body returns the JSON request body.
func (q *Request) Body() ([]byte, error) {
	m := map[string]any{
		"model":          q.Model,
		"max_tokens":     q.MaxTokens,
		"stream":         true,
		"stream_options": map[string]any{"include_usage": true},
		"temperature":    0,
	}
	if q.IgnoreEOS {
		m["ignore_eos"] = true
	}
	if q.Chat {
		m["messages"] = []map[string]string{{"role": "user", "content": q.Prompt}}
	} else {
		m["prompt"] = q.Prompt
	}
	return json.Marshal(m)
}

// NewHTTPClient returns the client the probe uses: a fresh connection per
// request is not forced (keep-alive, like a real client), redirects are not
// followed, and timeout bounds the whole request including the stream.
func NewHTTPClient(timeout time.Duration, skipVerify bool) *http.Client {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.TLSClientConfig = &tls.Config{InsecureSkipVerify: skipVerify} // #nosec G402 -- opt-in per probe (probes[].tlsSkipVerify), off by default
	tr.DisableCompression = true                                     // gzip would buffer SSE chunks
	return &http.Client{
		Transport:     tr,
		Timeout:       timeout,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

// chunk is the subset of a streamed completion chunk the probe reads.
type chunk struct {
	ID      string `json:"id"`
	Choices []struct {
		Text         string `json:"text"`
		FinishReason string `json:"finish_reason"`
		Delta        struct {
			Content          string `json:"content"`
			ReasoningContent string `json:"reasoning_content"` // vLLM's reasoning parsers (before 0.10), SGLang
			Reasoning        string `json:"reasoning"`         // Ollama's thinking output, newer vLLM
		} `json:"delta"`
	} `json:"choices"`
	Usage *struct {
		CompletionTokens int `json:"completion_tokens"`
	} `json:"usage"`
	Error json.RawMessage `json:"error"`
}

// Measure sends one streaming request and measures it. It never returns an
// error: failures are in Result.Class and Result.Err.
func Measure(ctx context.Context, client *http.Client, q Request) Result {
	res := Result{Endpoint: q.EndpointName, Model: q.Model}
	body, err := q.Body()
	if err != nil {
		res.Class, res.Err = ClassBadResponse, err.Error()
		return res
	}
	var start time.Time
	since := func() float64 { return time.Since(start).Seconds() }
	trace := &httptrace.ClientTrace{
		GotFirstResponseByte: func() { res.TTFB = since() },
	}
	req, err := http.NewRequestWithContext(httptrace.WithClientTrace(ctx, trace), http.MethodPost, q.URL, bytes.NewReader(body))
	if err != nil {
		res.Class, res.Err = ClassConnect, err.Error()
		return res
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "text/event-stream")
	if q.APIKey != "" {
		req.Header.Set("Authorization", "Bearer "+q.APIKey)
	}
	start = time.Now()
	res.Start = start
	resp, err := client.Do(req)
	if err != nil {
		res.E2E = since()
		res.Class, res.Err = classifyTransport(err, false), scrub(err, q.APIKey)
		return res
	}
	defer resp.Body.Close()
	res.Status = resp.StatusCode
	if resp.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		res.E2E = since()
		switch {
		case resp.StatusCode == http.StatusTooManyRequests:
			res.Class = ClassHTTP429
		case resp.StatusCode >= 500:
			res.Class = ClassHTTP5xx
		case resp.StatusCode >= 400:
			res.Class = ClassHTTP4xx
		default:
			res.Class = ClassBadResponse
		}
		res.Err = fmt.Sprintf("HTTP %d: %s", resp.StatusCode, strings.TrimSpace(string(msg)))
		return res
	}
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/event-stream") {
		res.E2E = since()
		res.Class, res.Err = ClassBadResponse, fmt.Sprintf("content type %q is not text/event-stream (is the server streaming?)", ct)
		return res
	}
	readStream(resp.Body, &res, since, q.APIKey)
	res.finish()
	return res
}

// readStream reads SSE lines until data: [DONE], recording when each
// text-carrying chunk arrived.
func readStream(body io.Reader, res *Result, since func() float64, key string) {
	br := bufio.NewReaderSize(body, 64<<10)
	var usage = -1
	defer func() {
		if usage >= 0 && res.Class == "" {
			res.OutputTokens = usage
		}
	}()
	for {
		line, err := br.ReadSlice('\n')
		now := since()
		if err != nil && (!errors.Is(err, io.EOF) || len(line) == 0) {
			res.E2E = now
			if errors.Is(err, bufio.ErrBufferFull) {
				res.Class, res.Err = ClassBadResponse, "an SSE line is longer than 64 KiB"
				return
			}
			if errors.Is(err, io.EOF) {
				res.Class, res.Err = ClassStreamCut, fmt.Sprintf("stream ended after %d text chunks without data: [DONE]", res.chunks)
				return
			}
			if c := classifyTransport(err, true); c == ClassTimeout {
				res.Class, res.Err = c, "timeout mid-stream after "+strconv.Itoa(res.chunks)+" text chunks: "+scrub(err, key)
			} else {
				res.Class, res.Err = ClassStreamCut, fmt.Sprintf("stream broken after %d text chunks: %s", res.chunks, scrub(err, key))
			}
			return
		}
		s := strings.TrimRight(string(line), "\r\n")
		data, ok := strings.CutPrefix(s, "data:")
		if !ok {
			continue // blank separator, comment, event:, id:
		}
		data = strings.TrimSpace(data)
		if data == "[DONE]" {
			res.E2E = now
			return
		}
		var c chunk
		if err := json.Unmarshal([]byte(data), &c); err != nil {
			res.E2E = now
			res.Class, res.Err = ClassBadResponse, "a data line is not JSON: "+err.Error()
			return
		}
		if len(c.Error) > 0 && string(c.Error) != "null" {
			res.E2E = now
			res.Class, res.Err = ClassStreamError, "error in stream: "+truncate(string(c.Error), 300)
			return
		}
		if c.ID != "" && res.ID == "" {
			res.ID = c.ID
		}
		if c.Usage != nil {
			usage = c.Usage.CompletionTokens
		}
		text := false
		for _, ch := range c.Choices {
			if ch.Text != "" || ch.Delta.Content != "" || ch.Delta.ReasoningContent != "" || ch.Delta.Reasoning != "" {
				text = true
			}
			if ch.FinishReason == ClassContentFilter && res.Class == "" {
				res.Class, res.Err = ClassContentFilter, "the answer ended with finish_reason content_filter (a content policy stopped it)"
			}
		}
		if !text {
			continue
		}
		if res.chunks == 0 {
			res.TTFT = now
		} else {
			res.Gaps = append(res.Gaps, now-res.lastToken)
		}
		res.lastToken = now
		res.chunks++
	}
}

// finish derives the per-request statistics from the recorded times.
func (r *Result) finish() {
	if r.OutputTokens == 0 {
		r.OutputTokens = r.chunks
	}
	if r.Class == "" && r.chunks == 0 {
		r.Class, r.Err = ClassBadResponse, "the stream ended with [DONE] but carried no text"
	}
	if r.OutputTokens > 1 && r.chunks > 1 {
		r.TPOT = (r.lastToken - r.TTFT) / float64(r.OutputTokens-1)
	}
	r.GapVariance, r.GapMax = varianceMax(r.Gaps)
}

// varianceMax returns the population variance (Σ(x−mean)²/n, two-pass) and
// the maximum of xs; 0, 0 for an empty slice.
func varianceMax(xs []float64) (variance, maxv float64) {
	if len(xs) == 0 {
		return 0, 0
	}
	var sum float64
	for _, x := range xs {
		sum += x
		maxv = max(maxv, x)
	}
	mean := sum / float64(len(xs))
	for _, x := range xs {
		variance += (x - mean) * (x - mean)
	}
	return variance / float64(len(xs)), maxv
}

// classifyTransport sorts a client error: timeouts first (context deadline,
// client timeout, net timeout), then connection failures (dial, DNS, TLS,
// refused) unless the stream had started (midStream: a reset is a cut stream).
func classifyTransport(err error, midStream bool) string {
	var ne net.Error
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, os.ErrDeadlineExceeded) || (errors.As(err, &ne) && ne.Timeout()) {
		return ClassTimeout
	}
	if midStream {
		return ClassStreamCut
	}
	// Dial, DNS, TLS and refused connections, and a connection closed or reset
	// before any response: the request never got an answer.
	return ClassConnect
}

// scrub returns err's text with the API key removed.
func scrub(err error, key string) string {
	s := err.Error()
	if key != "" {
		s = strings.ReplaceAll(s, key, "<redacted>")
	}
	return truncate(s, 300)
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
