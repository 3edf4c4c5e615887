package source

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"sync/atomic"
)

// Defaults of the bytes the plugin reads from a remote server (RemoteOptions.MaxAnswerBytes,
// MaxRequestBytes). A range answer costs about 30 bytes of JSON per point and several times
// that in memory while it is decoded, so 32 MiB is about a million points, twice what a
// seven-day dashboard panel reads, and 128 MiB bounds what all the sub-queries of one
// QueryData request read together.
const (
	DefaultMaxAnswerBytes  = 32 << 20
	DefaultMaxRequestBytes = 128 << 20
)

// TooLargeError is an answer of the remote server cut off because it passed one of the
// plugin's size limits: Limit bytes for one answer, or for all the answers of one request
// (PerRequest).
type TooLargeError struct {
	Limit      int64
	PerRequest bool
}

func (e *TooLargeError) Error() string {
	if e.PerRequest {
		return fmt.Sprintf("the answers to this request passed %s MiB, the most the data source reads for one request (remoteMaxRequestMiB): narrow the time range, raise the interval or select fewer series", mib(e.Limit))
	}
	return fmt.Sprintf("the answer passed %s MiB, the most the data source reads for one answer (remoteMaxAnswerMiB): narrow the time range, raise the interval or select fewer series", mib(e.Limit))
}

// mib writes n bytes in MiB, with one decimal when not whole.
func mib(n int64) string {
	if n%(1<<20) == 0 {
		return strconv.FormatInt(n>>20, 10)
	}
	return strconv.FormatFloat(float64(n)/(1<<20), 'f', 1, 64)
}

type readCounterKey struct{}

// readCounter counts the bytes read from the remote server for one request.
type readCounter struct{ n atomic.Int64 }

// WithReadCounter gives the request carried by ctx its own count of the bytes read from the
// remote server, which MaxRequestBytes bounds (without it, only each answer is bounded).
func WithReadCounter(ctx context.Context) context.Context {
	return context.WithValue(ctx, readCounterKey{}, &readCounter{})
}

// sizeLimit is the round tripper under the remote client: it refuses an answer whose
// Content-Length passes maxAnswer and cuts off a body once it passes maxAnswer, or the
// request's count (WithReadCounter) passes maxRequest, so no more than the limit is read
// into memory.
type sizeLimit struct {
	next                  http.RoundTripper
	maxAnswer, maxRequest int64
}

// RoundTrip implements http.RoundTripper.
func (s sizeLimit) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := s.next.RoundTrip(req)
	if err != nil || resp == nil || resp.Body == nil {
		return resp, err
	}
	if resp.ContentLength > s.maxAnswer {
		_ = resp.Body.Close()
		return nil, &TooLargeError{Limit: s.maxAnswer}
	}
	c, _ := req.Context().Value(readCounterKey{}).(*readCounter)
	resp.Body = &limitedBody{rc: resp.Body, s: s, c: c}
	return resp, nil
}

// limitedBody is a response body that fails with a *TooLargeError past a limit.
type limitedBody struct {
	rc   io.ReadCloser
	s    sizeLimit
	c    *readCounter
	read int64
}

func (b *limitedBody) Read(p []byte) (int, error) {
	// Read at most one byte past the answer's limit: enough to know it passed.
	if left := b.s.maxAnswer + 1 - b.read; int64(len(p)) > left {
		p = p[:max(left, 0)]
	}
	if len(p) == 0 {
		return 0, &TooLargeError{Limit: b.s.maxAnswer}
	}
	n, err := b.rc.Read(p)
	b.read += int64(n)
	if b.read > b.s.maxAnswer {
		return 0, &TooLargeError{Limit: b.s.maxAnswer}
	}
	if b.c != nil && b.c.n.Add(int64(n)) > b.s.maxRequest {
		return 0, &TooLargeError{Limit: b.s.maxRequest, PerRequest: true}
	}
	return n, err
}

func (b *limitedBody) Close() error { return b.rc.Close() }
