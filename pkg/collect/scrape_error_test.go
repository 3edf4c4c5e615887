package collect

import (
	"errors"
	"net"
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestScrapeErrorText (issue 40 point 4): a refused connection reads as the health check's
// sentence, without Go's `Get "…": dial tcp …` wrapping, for any endpoint kind; other errors
// keep their own text.
func TestScrapeErrorText(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := l.Addr().String()
	require.NoError(t, l.Close()) // nothing listens there now
	_, err = http.Get("http://" + addr + "/metrics")
	require.Error(t, err)
	got := scrapeErrorText(err, "http://user:pw@"+addr+"/metrics")
	assert.Equal(t, "connection refused at "+addr+"/metrics", got)
	assert.NotContains(t, got, "dial tcp")

	other := errors.New("server returned HTTP status 503 Service Unavailable")
	assert.Equal(t, other.Error(), scrapeErrorText(other, "http://"+addr+"/metrics"))
}
