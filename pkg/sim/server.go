package sim

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"iter"
	"math"
	"math/rand/v2"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/inferscope/inferscope-llm-datasource/pkg/enginemodel"
)

// Server runs a Sim against the wall clock and serves vLLM's HTTP API:
// /v1/models, /v1/completions, /v1/chat/completions (SSE when stream=true),
// /health, /version and /metrics; GPUHandler serves the simulated GPU agent's
// /metrics. Simulated time = seconds since Run started (plus the Sim's time
// then).
type Server struct {
	s     *Sim
	wake  chan struct{}
	mu    sync.Mutex
	rng   *rand.Rand // output lengths of API requests
	base  time.Time  // wall time of simulated time offset
	off   float64
	ready chan struct{}
	once  sync.Once

	faultRng *rand.Rand // draws of Config.APIFaults (guarded by mu)
	streams  []StreamTruth

	// Style is the chunk layout of the OpenAI-compatible streams (StreamVLLM by default).
	// Set it before serving.
	Style StreamStyle
}

// StreamStyle is the chunk layout a Server's SSE streams follow.
type StreamStyle int

const (
	// StreamVLLM is vLLM's layout: the headers at once; in chat a role-only first chunk
	// (delta {role: assistant, content: ""}) then deltas {content}; a last choice chunk with an
	// empty delta (completions: empty text) and the finish reason; with
	// stream_options.include_usage a chunk with no choices and the usage block; data: [DONE].
	// An abort mid-stream sends an error object.
	StreamVLLM StreamStyle = iota
	// StreamOllama is Ollama's OpenAI-compatible layer (v0.17, checked on the wire by
	// pkg/probe's live tests): the headers come with the first token chunk (TTFB ≈ TTFT);
	// every chat delta carries role "assistant" and its text (no role-only chunk); the last
	// choice chunk has empty text and the finish reason; with include_usage every completions
	// chunk carries a zero usage block, and a last chunk with no choices carries the real one;
	// data: [DONE]; system_fingerprint "fp_ollama". An error after the first chunk becomes
	// one chunk with empty text and no finish reason, and the stream ends without [DONE].
	StreamOllama
)

// Fault names in StreamTruth.Fault.
const (
	FaultNone    = ""
	FaultTooMany = "429"
	FaultError   = "5xx"
	FaultCut     = "cut"
	FaultStall   = "stall"
	FaultSlow    = "slow"
)

// maxStreamLog bounds the ground-truth log of API requests.
const maxStreamLog = 4096

// StreamTruth is the ground truth of one API generate request as the server
// sent it: wall-clock times of the handler's start and of each token chunk
// written and flushed (Sent[i] is token i+1), the injected fault (Fault*), the
// HTTP status, and the engine's own record (nil when the request never reached
// the engine). Done is true when data: [DONE] was written.
type StreamTruth struct {
	ID       string
	Status   int
	Fault    string
	Received time.Time
	Sent     []time.Time
	Done     bool
	Request  *Request
}

// Streams returns a copy of the ground-truth log of API requests, oldest first
// (the last 4096).
func (v *Server) Streams() []StreamTruth {
	v.mu.Lock()
	defer v.mu.Unlock()
	out := make([]StreamTruth, len(v.streams))
	for i, st := range v.streams {
		st.Sent = append([]time.Time(nil), st.Sent...)
		out[i] = st
	}
	return out
}

func (v *Server) record(st *StreamTruth) {
	v.mu.Lock()
	defer v.mu.Unlock()
	if len(v.streams) == maxStreamLog {
		v.streams = append(v.streams[:0], v.streams[1:]...)
	}
	v.streams = append(v.streams, *st)
}

// drawFaults decides the faults of one request (see APIFaults).
func (v *Server) drawFaults() (status int, stream []string) {
	f := v.s.Config().APIFaults
	v.mu.Lock()
	defer v.mu.Unlock()
	draw := func(share float64) bool { return share > 0 && v.faultRng.Float64() < share }
	if draw(f.TooManyShare) {
		return http.StatusTooManyRequests, nil
	}
	if draw(f.ErrorShare) {
		if f.ErrorCode == 0 {
			return http.StatusServiceUnavailable, nil
		}
		return f.ErrorCode, nil
	}
	if draw(f.CutShare) {
		stream = append(stream, FaultCut)
	}
	if draw(f.StallShare) {
		stream = append(stream, FaultStall)
	}
	if draw(f.SlowShare) {
		stream = append(stream, FaultSlow)
	}
	return 0, stream
}

// NewServer wraps s. Call Run to start the clock.
func NewServer(s *Sim) *Server {
	return &Server{s: s, wake: make(chan struct{}, 1), rng: enginemodel.NewRand(s.Config().Seed, 3), ready: make(chan struct{}), faultRng: enginemodel.NewRand(s.Config().Seed, 5)}
}

// simNow maps the wall clock to simulated seconds (0 before Run).
func (v *Server) simNow() float64 {
	select {
	case <-v.ready:
	default:
		return v.s.Now()
	}
	return v.off + time.Since(v.base).Seconds()
}

func (v *Server) kick() {
	select {
	case v.wake <- struct{}{}:
	default:
	}
}

// Run advances the model in real time until ctx is done. It returns
// ctx.Err(). Call it once.
func (v *Server) Run(ctx context.Context) error {
	v.once.Do(func() {
		v.off = v.s.Now()
		v.base = time.Now()
		close(v.ready)
	})
	timer := time.NewTimer(0)
	defer timer.Stop()
	for {
		now := v.simNow()
		v.s.AdvanceTo(now)
		wait := v.s.NextEventTime() - v.simNow()
		// wake at least every 250 ms so GPU readings and gauges keep moving
		wait = math.Max(0, math.Min(wait, 0.25))
		timer.Reset(time.Duration(wait * float64(time.Second)))
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-v.wake:
			if !timer.Stop() {
				<-timer.C
			}
		case <-timer.C:
		}
	}
}

// RunAnchored is Run with the simulated clock tied to the wall clock the way FastForward stamps
// its samples: simulated second t is wall time Start()+t, so a simulator fast-forwarded into a
// store and then served live continues that history at the wall clock, however long the
// fast-forward took. (Run starts the clock where the model stands, so the live scrapes lagged
// the history's timestamps by the fast-forward's own duration and every rate window over the
// hand-over read a counter that had hardly moved: issue 33, the screenshots' "Now" tiles at
// 2.59 req/s beside a 4.41 req/s chart.) The time between the model's clock and the wall clock
// is simulated at once, without samples. Call it instead of Run, once.
func (v *Server) RunAnchored(ctx context.Context) error {
	v.once.Do(func() {
		v.off = 0
		v.base = v.s.Start()
		close(v.ready)
	})
	return v.Run(ctx)
}

// Handler returns the vLLM API and /metrics handler.
func (v *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /health", v.health)
	mux.HandleFunc("GET /version", v.version)
	mux.HandleFunc("GET /v1/models", v.models)
	mux.HandleFunc("POST /v1/completions", func(w http.ResponseWriter, r *http.Request) { v.generate(w, r, false) })
	mux.HandleFunc("POST /v1/chat/completions", func(w http.ResponseWriter, r *http.Request) { v.generate(w, r, true) })
	metrics := promhttp.HandlerFor(v.s.reg, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError})
	mux.HandleFunc("GET /metrics", func(w http.ResponseWriter, r *http.Request) {
		v.s.AdvanceTo(v.simNow())
		if v.s.Down() {
			http.Error(w, "server restarting", http.StatusServiceUnavailable)
			return
		}
		switch v.s.ScrapeOutcome() {
		case ScrapeError:
			http.Error(w, "Internal Server Error", http.StatusInternalServerError)
			return
		case ScrapeStall:
			select {
			case <-r.Context().Done():
				return
			case <-time.After(v.s.Config().FlakyStall):
			}
			http.Error(w, "Internal Server Error", http.StatusInternalServerError)
			return
		}
		metrics.ServeHTTP(w, r)
	})
	return mux
}

// GPUHandler returns the simulated GPU agent's handler (/metrics and /healthz).
func (v *Server) GPUHandler() http.Handler {
	mux := http.NewServeMux()
	h := promhttp.HandlerFor(v.s.gpuReg, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError})
	mux.HandleFunc("GET /metrics", func(w http.ResponseWriter, r *http.Request) {
		v.s.AdvanceTo(v.simNow())
		h.ServeHTTP(w, r)
	})
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusOK) })
	return mux
}

func (v *Server) health(w http.ResponseWriter, _ *http.Request) {
	v.s.AdvanceTo(v.simNow())
	if v.s.Down() {
		w.WriteHeader(http.StatusServiceUnavailable)
		return
	}
	w.WriteHeader(http.StatusOK)
}

// releaseOf is the full release string /version reports for each version.
var releaseOf = map[Version]string{V06: "0.6.6", V010: "0.10.2", V011: "0.11.0", V013: "0.13.0"}

func (v *Server) version(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, map[string]string{"version": releaseOf[v.s.Config().Version]})
}

func (v *Server) models(w http.ResponseWriter, _ *http.Request) {
	m := v.s.Config().Model
	writeJSON(w, http.StatusOK, map[string]any{
		"object": "list",
		"data": []map[string]any{{
			"id": m.Name, "object": "model", "created": v.s.Start().Unix(), "owned_by": "vllm",
			"root": m.Name, "parent": nil, "max_model_len": m.MaxModelLen,
		}},
	})
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_ = json.NewEncoder(w).Encode(v)
}

// apiError writes an OpenAI/vLLM-style error body.
func apiError(w http.ResponseWriter, code int, typ, msg string) {
	writeJSON(w, code, map[string]any{"object": "error", "message": msg, "type": typ, "param": nil, "code": code})
}

// genRequest is the subset of the OpenAI request the simulator understands.
type genRequest struct {
	Model               string          `json:"model"`
	Prompt              json.RawMessage `json:"prompt"`
	Messages            []chatMessage   `json:"messages"`
	MaxTokens           *int            `json:"max_tokens"`
	MaxCompletionTokens *int            `json:"max_completion_tokens"`
	Stream              bool            `json:"stream"`
	StreamOptions       *struct {
		IncludeUsage bool `json:"include_usage"`
	} `json:"stream_options"`
	IgnoreEOS bool `json:"ignore_eos"`
	N         *int `json:"n"`
}

type chatMessage struct {
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
}

// estimateTokens approximates a tokenizer: one token per 4 bytes, at least 1.
func estimateTokens(s string) int { return max(1, (len(s)+3)/4) }

// promptTokens counts the prompt's tokens: token-id arrays count exactly,
// text is estimated; chat adds 7 template tokens per message.
func (g *genRequest) promptTokens(chat bool) (int, error) {
	if chat {
		if len(g.Messages) == 0 {
			return 0, errors.New("messages must be a non-empty array")
		}
		n := 0
		for _, m := range g.Messages {
			var s string
			if err := json.Unmarshal(m.Content, &s); err != nil {
				// array of content parts: count its raw length
				s = string(m.Content)
			}
			n += estimateTokens(s) + 7
		}
		return n, nil
	}
	if len(g.Prompt) == 0 {
		return 0, errors.New("prompt is required")
	}
	var s string
	if err := json.Unmarshal(g.Prompt, &s); err == nil {
		return estimateTokens(s), nil
	}
	var ids []int
	if err := json.Unmarshal(g.Prompt, &ids); err == nil && len(ids) > 0 {
		return len(ids), nil
	}
	var ss []string
	if err := json.Unmarshal(g.Prompt, &ss); err == nil && len(ss) == 1 {
		return estimateTokens(ss[0]), nil
	}
	return 0, errors.New("prompt must be a string, a single-element string array or a non-empty token-id array")
}

var vocabulary = strings.Fields("the of and to in a is that for it as was with be by on not he this are or his from at which but have an they you were her she there been one all we their has would when if so no will more can what up out into time only about other")

// tokenText is the text of token i (an index, never negative) of request id.
func tokenText(id uint64, i int) string {
	if i < 0 {
		i = 0
	}
	return " " + vocabulary[(id*31+uint64(i)*17)%uint64(len(vocabulary))]
}

func (v *Server) generate(w http.ResponseWriter, r *http.Request, chat bool) {
	truth := &StreamTruth{Received: time.Now()}
	defer func() { v.record(truth) }()
	body, err := io.ReadAll(io.LimitReader(r.Body, 8<<20))
	if err != nil {
		apiError(w, http.StatusBadRequest, "BadRequestError", "reading body: "+err.Error())
		return
	}
	var g genRequest
	if err := json.Unmarshal(body, &g); err != nil {
		apiError(w, http.StatusBadRequest, "BadRequestError", "invalid JSON body: "+err.Error())
		return
	}
	if g.Model != "" && g.Model != v.s.Config().Model.Name {
		apiError(w, http.StatusNotFound, "NotFoundError", fmt.Sprintf("The model `%s` does not exist.", g.Model))
		return
	}
	if g.N != nil && *g.N != 1 {
		apiError(w, http.StatusBadRequest, "BadRequestError", "the simulator supports only n=1")
		return
	}
	prompt, err := g.promptTokens(chat)
	if err != nil {
		apiError(w, http.StatusBadRequest, "BadRequestError", err.Error())
		return
	}
	maxLen := v.s.Config().Model.MaxModelLen
	if prompt >= maxLen {
		apiError(w, http.StatusBadRequest, "BadRequestError", fmt.Sprintf("This model's maximum context length is %d tokens. However, your request has %d input tokens.", maxLen, prompt))
		return
	}
	maxTokens := maxLen - prompt
	if g.MaxCompletionTokens != nil {
		maxTokens = *g.MaxCompletionTokens
	}
	if g.MaxTokens != nil {
		maxTokens = *g.MaxTokens
	}
	if maxTokens < 1 || prompt+maxTokens > maxLen {
		apiError(w, http.StatusBadRequest, "BadRequestError", fmt.Sprintf("max_tokens must be ≥ 1 and prompt + max_tokens ≤ %d", maxLen))
		return
	}
	out := maxTokens
	if !g.IgnoreEOS {
		v.mu.Lock()
		out = v.s.Config().Output.Sample(v.rng)
		v.mu.Unlock()
	}
	out = min(out, maxTokens)
	status, faults := v.drawFaults()
	switch {
	case status == http.StatusTooManyRequests:
		truth.Status, truth.Fault = status, FaultTooMany
		w.Header().Set("Retry-After", "1")
		apiError(w, status, "RateLimitError", "rate limit reached (simulated)")
		return
	case status != 0:
		truth.Status, truth.Fault = status, FaultError
		apiError(w, status, "ServiceUnavailableError", "upstream unavailable (simulated)")
		return
	}
	truth.Fault = strings.Join(faults, "+")
	events := make(chan Event, out+2)
	v.s.AdvanceTo(v.simNow())
	req, err := v.s.Submit(prompt, out, maxTokens, func(_ *Request, ev Event) {
		select {
		case events <- ev:
		default: // cannot happen: the buffer holds every token and the final event
		}
	})
	truth.Request = req
	if errors.Is(err, ErrDown) {
		truth.Status = http.StatusServiceUnavailable
		apiError(w, http.StatusServiceUnavailable, "ServiceUnavailableError", "server is restarting")
		return
	}
	if err != nil {
		apiError(w, http.StatusBadRequest, "BadRequestError", err.Error())
		return
	}
	v.kick()
	created := time.Now().Unix()
	id := fmt.Sprintf("cmpl-%016x", req.ID)
	object := "text_completion"
	if chat {
		id = fmt.Sprintf("chatcmpl-%016x", req.ID)
		object = "chat.completion"
	}
	truth.ID, truth.Status = id, http.StatusOK
	if g.Stream {
		v.stream(w, r, req, events, chat, id, created, prompt, g.StreamOptions != nil && g.StreamOptions.IncludeUsage, faults, truth)
		return
	}
	var text strings.Builder
	for ev := range v.until(r, req, events) {
		switch ev.Kind {
		case EventToken:
			text.WriteString(tokenText(req.ID, ev.Index))
			continue
		case EventAbort:
			apiError(w, http.StatusInternalServerError, "InternalServerError", "request aborted: "+ev.Err)
			return
		}
		usage := map[string]int{"prompt_tokens": prompt, "completion_tokens": req.OutputTokens, "total_tokens": prompt + req.OutputTokens}
		choice := map[string]any{"index": 0, "finish_reason": ev.Reason, "logprobs": nil}
		if chat {
			choice["message"] = map[string]any{"role": "assistant", "content": text.String()}
		} else {
			choice["text"] = text.String()
		}
		writeJSON(w, http.StatusOK, map[string]any{"id": id, "object": object, "created": created,
			"model": v.s.Config().Model.Name, "choices": []any{choice}, "usage": usage})
		return
	}
}

// until yields req's events until its client goes away; req is then
// aborted and the run loop woken.
func (v *Server) until(r *http.Request, req *Request, events <-chan Event) iter.Seq[Event] {
	return func(yield func(Event) bool) {
		for {
			select {
			case <-r.Context().Done():
				v.s.Abort(req)
				v.kick()
				return
			case ev := <-events:
				if !yield(ev) {
					return
				}
			}
		}
	}
}

func (v *Server) stream(w http.ResponseWriter, r *http.Request, req *Request, events <-chan Event, chat bool, id string, created int64, prompt int, usage bool, faults []string, truth *StreamTruth) {
	f := v.s.Config().APIFaults
	ollama := v.Style == StreamOllama
	has := func(name string) bool { return slices.Contains(faults, name) }
	hold := func(d time.Duration) bool {
		select {
		case <-r.Context().Done():
			return false
		case <-time.After(d):
			return true
		}
	}
	fl, _ := w.(http.Flusher)
	headersSent := false
	sendHeaders := func() {
		if headersSent {
			return
		}
		headersSent = true
		w.Header().Set("Content-Type", "text/event-stream")
		w.Header().Set("Cache-Control", "no-cache")
		w.WriteHeader(http.StatusOK)
	}
	if !ollama {
		// vLLM answers the headers at once; Ollama with its first chunk (below).
		sendHeaders()
	}
	object := "text_completion"
	if chat {
		object = "chat.completion.chunk"
	}
	zero := map[string]int{"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0}
	send := func(choice map[string]any, extra map[string]any) bool {
		sendHeaders()
		m := map[string]any{"id": id, "object": object, "created": created, "model": v.s.Config().Model.Name}
		if ollama {
			m["system_fingerprint"] = "fp_ollama"
			if usage && !chat {
				m["usage"] = zero // Ollama's completions chunks carry a zero usage block until the last
			}
		}
		if choice != nil {
			m["choices"] = []any{choice}
		} else {
			m["choices"] = []any{}
		}
		for k, x := range extra {
			m[k] = x
		}
		b, err := json.Marshal(m)
		if err != nil {
			return false
		}
		if _, err := fmt.Fprintf(w, "data: %s\n\n", b); err != nil {
			return false
		}
		if fl != nil {
			fl.Flush()
		}
		return true
	}
	// choiceOf is one chunk's choice: text t, finish reason (nil while streaming).
	choiceOf := func(t string, finish any) map[string]any {
		c := map[string]any{"index": 0, "finish_reason": finish}
		switch {
		case chat && ollama:
			c["delta"] = map[string]any{"role": "assistant", "content": t}
		case chat && finish != nil:
			c["delta"], c["logprobs"] = map[string]any{}, nil
		case chat:
			c["delta"], c["logprobs"] = map[string]any{"content": t}, nil
		case ollama:
			c["text"] = t
		default:
			c["text"], c["logprobs"] = t, nil
		}
		return c
	}
	if chat && !ollama && !send(map[string]any{"index": 0, "delta": map[string]any{"role": "assistant", "content": ""}, "logprobs": nil, "finish_reason": nil}, nil) {
		v.s.Abort(req)
		return
	}
	for ev := range v.until(r, req, events) {
		switch ev.Kind {
		case EventToken:
			if has(FaultSlow) && !hold(f.SlowPerToken) || has(FaultStall) && ev.Index == f.StallToken && !hold(f.Stall) {
				v.s.Abort(req)
				v.kick()
				return
			}
			if !send(choiceOf(tokenText(req.ID, ev.Index), nil), nil) {
				v.s.Abort(req)
				v.kick()
				return
			}
			truth.Sent = append(truth.Sent, time.Now())
			if has(FaultCut) && ev.Index == f.CutAfter {
				v.s.Abort(req)
				v.kick()
				panic(http.ErrAbortHandler) // drop the connection: no [DONE], no terminating chunk
			}
			continue
		case EventAbort:
			if ollama {
				// Ollama's OpenAI layer turns an error after the first chunk into an
				// empty chunk (the error object decoded as a response) and ends the
				// stream without [DONE].
				send(choiceOf("", nil), nil)
				return
			}
			sendHeaders()
			b, _ := json.Marshal(map[string]any{"error": map[string]any{"object": "error", "message": "request aborted: " + ev.Err, "type": "InternalServerError", "code": 500}})
			_, _ = fmt.Fprintf(w, "data: %s\n\n", b)
			if fl != nil {
				fl.Flush()
			}
			return
		}
		send(choiceOf("", ev.Reason), nil)
		if usage {
			send(nil, map[string]any{"usage": map[string]int{"prompt_tokens": prompt, "completion_tokens": req.OutputTokens, "total_tokens": prompt + req.OutputTokens}})
		}
		_, _ = io.WriteString(w, "data: [DONE]\n\n")
		if fl != nil {
			fl.Flush()
		}
		truth.Done = true
		return
	}
}
