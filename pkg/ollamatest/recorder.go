package ollamatest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Recorder is a loopback TCP relay in front of a server that timestamps every read of each
// connection: the client's bytes (the request) and the server's (the response). It is the live
// tests' independent truth: what arrived on the wire and when, parsed by Wire below, with code
// that shares nothing with the probe's SSE reader.
type Recorder struct {
	ln       net.Listener
	upstream string
	mu       sync.Mutex
	conns    []*Conn
	// OnChunk, when set before the first connection, is called from the relay after each read
	// of a response with the connection and the number of response reads so far.
	OnChunk func(c *Conn, reads int)
	wg      sync.WaitGroup
}

// Read is one read of a connection: when it returned and what it held.
type Read struct {
	At   time.Time
	Data []byte
}

// Conn is one relayed connection.
type Conn struct {
	done     chan struct{} // closed when the relay of both directions has ended
	mu       sync.Mutex
	request  []Read // client → server
	response []Read // server → client
}

// Wait blocks until the relay of the connection has ended (both sides closed) or d has
// passed, and reports whether it ended.
func (c *Conn) Wait(d time.Duration) bool {
	select {
	case <-c.done:
		return true
	case <-time.After(d):
		return false
	}
}

// Request returns a copy of the client's reads.
func (c *Conn) Request() []Read {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]Read(nil), c.request...)
}

// Response returns a copy of the server's reads.
func (c *Conn) Response() []Read {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]Read(nil), c.response...)
}

// NewRecorder listens on a free loopback port and relays every connection to upstream
// (host:port).
func NewRecorder(upstream string) (*Recorder, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	r := &Recorder{ln: ln, upstream: upstream}
	r.wg.Add(1)
	go r.accept()
	return r, nil
}

// URL is the relay's base URL.
func (r *Recorder) URL() string { return "http://" + r.ln.Addr().String() }

// Conns returns the connections relayed so far, oldest first.
func (r *Recorder) Conns() []*Conn {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]*Conn(nil), r.conns...)
}

// Reset forgets the connections relayed so far.
func (r *Recorder) Reset() {
	r.mu.Lock()
	r.conns = nil
	r.mu.Unlock()
}

// Close stops accepting and waits for the open relays to end.
func (r *Recorder) Close() error {
	err := r.ln.Close()
	r.wg.Wait()
	return err
}

func (r *Recorder) accept() {
	defer r.wg.Done()
	for {
		client, err := r.ln.Accept()
		if err != nil {
			return
		}
		r.wg.Add(1)
		go func() {
			defer r.wg.Done()
			r.relay(client)
		}()
	}
}

func (r *Recorder) relay(client net.Conn) {
	defer client.Close()
	server, err := net.Dial("tcp", r.upstream)
	if err != nil {
		return // the client sees the connection closed before any response, as without a relay
	}
	defer server.Close()
	c := &Conn{done: make(chan struct{})}
	defer close(c.done)
	r.mu.Lock()
	r.conns = append(r.conns, c)
	r.mu.Unlock()
	copyTimed := func(dst, src net.Conn, into *[]Read, notify bool) {
		buf := make([]byte, 64<<10)
		for {
			n, err := src.Read(buf)
			if n > 0 {
				at := time.Now()
				c.mu.Lock()
				*into = append(*into, Read{At: at, Data: append([]byte(nil), buf[:n]...)})
				reads := len(*into)
				c.mu.Unlock()
				if _, werr := dst.Write(buf[:n]); werr != nil {
					return
				}
				if notify && r.OnChunk != nil {
					r.OnChunk(c, reads)
				}
			}
			if err != nil {
				return
			}
		}
	}
	done := make(chan struct{})
	go func() {
		copyTimed(server, client, &c.request, false)
		if tc, ok := server.(*net.TCPConn); ok {
			_ = tc.CloseWrite()
		}
		close(done)
	}()
	copyTimed(client, server, &c.response, true)
	client.Close() // the server closed (or was killed): so does the client's side
	<-done
}

// Event is one server-sent event of a response as it came off the wire: the time of the read
// that completed its data line, and the JSON payload ("" for data: [DONE]).
type Event struct {
	At   time.Time
	Data string
	Done bool // data: [DONE]
}

// Wire is one HTTP response parsed from a connection's reads.
type Wire struct {
	Sent    time.Time // the first read of the request
	Status  int
	Headers map[string]string // lower-case names
	Events  []Event
	// Complete reports whether the response's body ended cleanly (the last chunk of a
	// chunked body, or the connection closed after an identity body); false when it was cut.
	Complete bool
	Comments int // SSE comment lines (": …", keep-alives)
}

// ParseWire parses the first HTTP response of c (requests are sent one per connection by the
// live tests). It is written apart from the probe: a line scanner over the de-chunked body
// that keeps, for every byte, the time of the read it came in.
func ParseWire(c *Conn) (Wire, error) {
	req, resp := c.Request(), c.Response()
	var w Wire
	if len(req) == 0 {
		return w, errors.New("no request was relayed")
	}
	w.Sent = req[0].At
	var raw []byte
	var at []time.Time // at[i] is the time of raw[i]
	for _, rd := range resp {
		raw = append(raw, rd.Data...)
		for range rd.Data {
			at = append(at, rd.At)
		}
	}
	end := bytes.Index(raw, []byte("\r\n\r\n"))
	if end < 0 {
		return w, fmt.Errorf("no complete response header in %d bytes", len(raw))
	}
	lines := strings.Split(string(raw[:end]), "\r\n")
	f := strings.Fields(lines[0])
	if len(f) < 2 {
		return w, fmt.Errorf("bad status line %q", lines[0])
	}
	w.Status, _ = strconv.Atoi(f[1])
	w.Headers = map[string]string{}
	for _, l := range lines[1:] {
		k, v, _ := strings.Cut(l, ":")
		w.Headers[strings.ToLower(strings.TrimSpace(k))] = strings.TrimSpace(v)
	}
	body, bodyAt := raw[end+4:], at[end+4:]
	if strings.EqualFold(w.Headers["transfer-encoding"], "chunked") {
		var ok bool
		body, bodyAt, ok = dechunk(body, bodyAt)
		w.Complete = ok
	} else {
		w.Complete = true
	}
	// SSE: lines end with \n; an event's data line is "data: …".
	start := 0
	for i, b := range body {
		if b != '\n' {
			continue
		}
		line := strings.TrimRight(string(body[start:i]), "\r")
		start = i + 1
		switch {
		case strings.HasPrefix(line, ":"):
			w.Comments++
		case strings.HasPrefix(line, "data:"):
			d := strings.TrimSpace(strings.TrimPrefix(line, "data:"))
			w.Events = append(w.Events, Event{At: bodyAt[i], Data: d, Done: d == "[DONE]"})
		}
	}
	return w, nil
}

// dechunk decodes an HTTP/1.1 chunked body, carrying each byte's time along; ok is false when
// the body stopped before its last (zero-size) chunk.
func dechunk(b []byte, at []time.Time) (out []byte, outAt []time.Time, ok bool) {
	for {
		nl := bytes.Index(b, []byte("\r\n"))
		if nl < 0 {
			return out, outAt, false
		}
		sizeText, _, _ := strings.Cut(string(b[:nl]), ";")
		size, err := strconv.ParseUint(strings.TrimSpace(sizeText), 16, 32)
		if err != nil {
			return out, outAt, false
		}
		b, at = b[nl+2:], at[nl+2:]
		if size == 0 {
			return out, outAt, true
		}
		if uint64(len(b)) < size {
			return append(out, b...), append(outAt, at...), false
		}
		out, outAt = append(out, b[:size]...), append(outAt, at[:size]...)
		b, at = b[size:], at[size:]
		if len(b) < 2 {
			return out, outAt, false
		}
		b, at = b[2:], at[2:]
	}
}

// TokenEvents returns the events whose choices carry text (choices[].text,
// choices[].delta.content or choices[].delta.reasoning), and the completion tokens of the
// last usage block (-1 when none).
func (w Wire) TokenEvents() (tokens []Event, usage int, err error) {
	usage = -1
	for _, e := range w.Events {
		if e.Done {
			continue
		}
		var m struct {
			Choices []map[string]json.RawMessage `json:"choices"`
			Usage   *struct {
				CompletionTokens int `json:"completion_tokens"`
			} `json:"usage"`
		}
		if err := json.Unmarshal([]byte(e.Data), &m); err != nil {
			return nil, usage, fmt.Errorf("event %q: %w", e.Data, err)
		}
		if m.Usage != nil {
			usage = m.Usage.CompletionTokens
		}
		text := false
		for _, ch := range m.Choices {
			var s string
			if raw, ok := ch["text"]; ok && json.Unmarshal(raw, &s) == nil && s != "" {
				text = true
			}
			var d map[string]any
			if raw, ok := ch["delta"]; ok && json.Unmarshal(raw, &d) == nil {
				for _, k := range []string{"content", "reasoning", "reasoning_content"} {
					if v, _ := d[k].(string); v != "" {
						text = true
					}
				}
			}
		}
		if text {
			tokens = append(tokens, e)
		}
	}
	return tokens, usage, nil
}

var _ io.Closer = (*Recorder)(nil)

// Shape names of Shapes.
const (
	ShapeText   = "text"   // a choice carrying text
	ShapeRole   = "role"   // a chat choice with a role and no text (vLLM's first chunk)
	ShapeFinish = "finish" // a choice with no text and a finish reason
	ShapeEmpty  = "empty"  // a choice with no text, no role and no finish reason
	ShapeUsage  = "usage"  // no choices, a usage block
	ShapeError  = "error"  // an error object
	ShapeDone   = "done"   // data: [DONE]
	ShapeOther  = "other"  // anything else
)

// Shapes classifies every event of w, in order (Shape* names); a text chunk that also carries
// a non-zero usage block is "text+usage".
func Shapes(w Wire) []string {
	var out []string
	for _, e := range w.Events {
		if e.Done {
			out = append(out, ShapeDone)
			continue
		}
		var m struct {
			Choices []struct {
				Text         *string        `json:"text"`
				Delta        map[string]any `json:"delta"`
				FinishReason *string        `json:"finish_reason"`
			} `json:"choices"`
			Usage *struct {
				CompletionTokens int `json:"completion_tokens"`
			} `json:"usage"`
			Error json.RawMessage `json:"error"`
		}
		if json.Unmarshal([]byte(e.Data), &m) != nil {
			out = append(out, ShapeOther)
			continue
		}
		switch {
		case len(m.Error) > 0 && string(m.Error) != "null":
			out = append(out, ShapeError)
		case len(m.Choices) == 0 && m.Usage != nil:
			out = append(out, ShapeUsage)
		case len(m.Choices) == 0:
			out = append(out, ShapeOther)
		default:
			c := m.Choices[0]
			text := c.Text != nil && *c.Text != ""
			for _, k := range []string{"content", "reasoning", "reasoning_content"} {
				if v, _ := c.Delta[k].(string); v != "" {
					text = true
				}
			}
			role, _ := c.Delta["role"].(string)
			s := ShapeEmpty
			switch {
			case text:
				s = ShapeText
			case c.FinishReason != nil:
				s = ShapeFinish
			case role != "":
				s = ShapeRole
			}
			if s == ShapeText && m.Usage != nil && m.Usage.CompletionTokens > 0 {
				s += "+usage"
			}
			out = append(out, s)
		}
	}
	return out
}

// OllamaShapes is the event sequence of a successful stream of n tokens from Ollama's
// OpenAI-compatible layer (v0.17, chat and completions alike, with
// stream_options.include_usage), as TestOllamaLiveStreamShapes saw it on the wire: n text
// chunks (no role-only first chunk), a finish chunk with empty text, a usage chunk with no
// choices, data: [DONE].
func OllamaShapes(n int) []string {
	out := make([]string, 0, n+3)
	for range n {
		out = append(out, ShapeText)
	}
	return append(out, ShapeFinish, ShapeUsage, ShapeDone)
}
