package source

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// bigMatrix writes a successful range answer of about size bytes: series of
// 100 points each, without a Content-Length when chunked is set (the server
// streams it), so only the reader's count can stop it.
func bigMatrix(size int, chunked bool, sent *atomic.Int64) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		var b strings.Builder
		b.WriteString(`{"status":"success","data":{"resultType":"matrix","result":[`)
		for k := 0; b.Len() < size; k++ {
			if k > 0 {
				b.WriteByte(',')
			}
			fmt.Fprintf(&b, `{"metric":{"__name__":"m","i":"%d"},"values":[`, k)
			for p := range 100 {
				if p > 0 {
					b.WriteByte(',')
				}
				fmt.Fprintf(&b, `[%d,"1"]`, 1_700_000_000+p*15)
			}
			b.WriteString(`]}`)
		}
		b.WriteString(`]}}`)
		w.Header().Set("Content-Type", "application/json")
		if !chunked {
			w.Header().Set("Content-Length", fmt.Sprint(b.Len()))
		}
		n, _ := w.Write([]byte(b.String()))
		sent.Add(int64(n))
	}
}

// An answer past MaxAnswerBytes is cut off with a sentence naming the limit, whether
// the server announces its length (refused before reading) or streams it (cut off after
// the limit's bytes); an answer under it is read whole (checked failing before: the 3 MiB
// answer was read and decoded whole).
func TestRemoteAnswerSizeCap(t *testing.T) {
	for _, chunked := range []bool{false, true} {
		var sent atomic.Int64
		srv := httptest.NewServer(bigMatrix(3<<20, chunked, &sent))
		q, err := NewRemoteWithOptions(srv.URL, nil, RemoteOptions{MaxAnswerBytes: 1 << 20, MaxRequestBytes: 8 << 20})
		require.NoError(t, err)
		_, err = q.QueryRange(context.Background(), "m", time.Unix(1_700_000_000, 0), time.Unix(1_700_001_500, 0), 15*time.Second)
		require.Error(t, err, "chunked=%v", chunked)
		var re *RemoteError
		require.True(t, errors.As(err, &re))
		assert.Equal(t, KindTooLarge, re.Kind)
		assert.Contains(t, err.Error(), "answered more than the plugin reads")
		assert.Contains(t, err.Error(), "the answer passed 1 MiB, the most the data source reads for one answer (remoteMaxAnswerMiB)")
		srv.Close()
	}

	var sent atomic.Int64
	srv := httptest.NewServer(bigMatrix(512<<10, true, &sent))
	defer srv.Close()
	q, err := NewRemoteWithOptions(srv.URL, nil, RemoteOptions{MaxAnswerBytes: 1 << 20})
	require.NoError(t, err)
	m, err := q.QueryRange(context.Background(), "m", time.Unix(1_700_000_000, 0), time.Unix(1_700_001_500, 0), 15*time.Second)
	require.NoError(t, err, "an answer under the cap")
	assert.NotEmpty(t, m)
}

// The answers to one request (WithReadCounter) together may read at most
// MaxRequestBytes: three answers of 600 KiB each under a 1 MiB cap per answer and
// 1.5 MiB per request, the third fails naming the per-request limit; a request
// without the counter is bounded per answer only.
func TestRemoteRequestSizeCap(t *testing.T) {
	var sent atomic.Int64
	srv := httptest.NewServer(bigMatrix(600<<10, false, &sent))
	defer srv.Close()
	q, err := NewRemoteWithOptions(srv.URL, nil, RemoteOptions{MaxAnswerBytes: 1 << 20, MaxRequestBytes: 3 << 19})
	require.NoError(t, err)
	ctx := WithReadCounter(context.Background())
	start, end := time.Unix(1_700_000_000, 0), time.Unix(1_700_001_500, 0)
	for k := range 2 {
		_, err := q.QueryRange(ctx, fmt.Sprintf("m%d", k), start, end, 15*time.Second)
		require.NoError(t, err, k)
	}
	_, err = q.QueryRange(ctx, "m2", start, end, 15*time.Second)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "the answers to this request passed 1.5 MiB, the most the data source reads for one request (remoteMaxRequestMiB)")
	for k := range 3 {
		_, err := q.QueryRange(context.Background(), fmt.Sprintf("m%d", k), start, end, 15*time.Second)
		require.NoError(t, err, "no counter: each answer on its own")
	}
}
