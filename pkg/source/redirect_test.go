package source

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// authTransport adds credentials to every request it sends, as the plugin
// SDK's middlewares do on every hop of a redirected request.
type authTransport struct{ next http.RoundTripper }

func (a authTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer tok-123456")
	r.SetBasicAuth("user", "pa55word")
	return a.next.RoundTrip(r)
}

// TestRemoteRedirects: a server answering 302 or 307 to another port of the
// same host (another origin) is not followed, the error says why, and the
// other server receives nothing; a redirect within the origin is followed
// and answered.
func TestRemoteRedirects(t *testing.T) {
	var foreign atomic.Int32
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		foreign.Add(1)
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"status":"success","data":{"resultType":"vector","result":[]}}`))
	}))
	defer other.Close()
	for _, code := range []int{http.StatusFound, http.StatusTemporaryRedirect, http.StatusPermanentRedirect} {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if strings.HasPrefix(r.URL.Path, "/moved/") {
				w.Header().Set("Content-Type", "application/json")
				_, _ = w.Write([]byte(`{"status":"success","data":{"resultType":"vector","result":[{"metric":{},"value":[1,"7"]}]}}`))
				return
			}
			if r.URL.Query().Get("query") == "same" || r.FormValue("query") == "same" {
				http.Redirect(w, r, "/moved"+r.URL.Path, code)
				return
			}
			http.Redirect(w, r, other.URL+r.URL.Path, code)
		}))
		q, err := NewRemoteWithOptions(srv.URL, authTransport{http.DefaultTransport}, RemoteOptions{Timeout: 5 * time.Second})
		require.NoError(t, err)
		_, err = q.Query(context.Background(), "vector(1)", time.Unix(1, 0))
		require.Error(t, err, "HTTP %d", code)
		var re *RemoteError
		require.ErrorAs(t, err, &re)
		assert.Equal(t, KindRedirect, re.Kind)
		assert.Contains(t, err.Error(), "another origin than http://127.0.0.1:")
		assert.Contains(t, err.Error(), other.URL)
		assert.NotContains(t, err.Error(), "pa55word")
		assert.Zero(t, foreign.Load(), "HTTP %d: the other origin received a request", code)

		v, err := q.Query(context.Background(), "same", time.Unix(1, 0))
		require.NoError(t, err, "HTTP %d within the origin", code)
		vec := v.(model.Vector)
		require.Len(t, vec, 1)
		assert.Equal(t, model.SampleValue(7), vec[0].Value)
		srv.Close()
	}
}

// TestOrigin: default ports are spelled out, so http://h and http://h:80 are
// one origin, https://h another.
func TestOrigin(t *testing.T) {
	f := sameOriginRedirects(mustURL(t, "http://Prom.example"))
	req := func(u string) *http.Request { return &http.Request{URL: mustURL(t, u)} }
	assert.NoError(t, f(req("http://prom.example:80/x"), nil))
	assert.Error(t, f(req("https://prom.example/x"), nil))
	assert.Error(t, f(req("http://prom.example:8080/x"), nil))
	assert.Error(t, f(req("http://evil.example/x"), nil))
	assert.Error(t, f(req("http://prom.example/x"), make([]*http.Request, maxRedirects+1)))
}

func mustURL(t *testing.T, s string) *url.URL {
	t.Helper()
	u, err := url.Parse(s)
	require.NoError(t, err)
	return u
}
