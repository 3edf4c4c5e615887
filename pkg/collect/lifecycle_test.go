package collect

import (
	"context"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestCloseCutsHangingScrapes: 50 targets, 10 of which accept the request and
// never answer, with a 5 s scrape timeout. Close cuts them (it used to wait for the
// scrape timeout) and leaves no goroutine or connection. Checked against the scrape
// timeout, not a wall-clock budget: Close must return before the last hanging
// request's timeout could have fired (its arrival + 5 s), with every hanging request
// already ended. (A 1 s budget failed at 1.09 s under a load average of 25.)
func TestCloseCutsHangingScrapes(t *testing.T) {
	verifyNoLeaks(t)
	var hanging, ended atomic.Int64
	var lastArrival atomic.Int64 // unix nanoseconds of the latest hanging request
	release := make(chan struct{})
	hang := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		lastArrival.Store(time.Now().UnixNano())
		hanging.Add(1)
		select {
		case <-r.Context().Done():
		case <-release:
		}
		ended.Add(1)
	}))
	defer hang.Close()
	defer close(release)
	good, _ := counterServer(t, "x")
	var targets []map[string]any
	secure := map[string]string{}
	for k := 0; k < 50; k++ {
		name := "t" + string(rune('a'+k/26)) + string(rune('a'+k%26))
		u := good.URL
		if k%5 == 0 {
			u = hang.URL
		}
		targets = append(targets, map[string]any{"name": name, "url": u + "/metrics"})
		secure[name+".bearerToken"] = "x"
	}
	cfg := loadSettings(t, map[string]any{"scrapeInterval": "5s", "scrapeTimeout": "5s", "targets": targets}, secure)
	c, err := Start(cfg, Options{Dir: t.TempDir()})
	require.NoError(t, err)
	// Every hanging target is in the middle of a scrape.
	require.Eventually(t, func() bool { return hanging.Load() >= 10 }, 10*time.Second, 10*time.Millisecond)
	start := time.Now()
	require.NoError(t, c.Close())
	done := time.Now()
	sinceLast := done.Sub(time.Unix(0, lastArrival.Load()))
	assert.Less(t, sinceLast, cfg.ScrapeTimeout, "Close returned %s after the last hanging request arrived: it waited for the scrape timeout", sinceLast)
	// Close cut the requests: each hanging request that arrived has ended (the
	// handler returns on the request's context), none was left for its timeout.
	require.Eventually(t, func() bool { return ended.Load() == hanging.Load() }, cfg.ScrapeTimeout, 10*time.Millisecond,
		"hanging requests still open after Close")
	t.Logf("Close with %d hanging requests took %s", hanging.Load(), done.Sub(start))
	assert.Zero(t, c.tracker.open())
}

// TestCloseWaitsForQueriesInFlight: a query running when Close begins
// finishes on an open store; one arriving later gets ErrReconfigured.
func TestCloseWaitsForQueriesInFlight(t *testing.T) {
	verifyNoLeaks(t)
	good, scrapes := counterServer(t, "x")
	cfg := loadSettings(t, counterSettings(t, map[string]string{"a": good.URL}), map[string]string{"a.bearerToken": "x"})
	c, err := Start(cfg, Options{Dir: filepath.Join(t.TempDir(), "ds")})
	require.NoError(t, err)
	require.Eventually(t, func() bool { return scrapes.Load() >= 3 }, 10*time.Second, 10*time.Millisecond)

	q := trackedQuerier{c}
	end, err := q.begin() // a query in flight
	require.NoError(t, err)
	closed := make(chan error, 1)
	go func() { closed <- c.Close() }()
	require.Eventually(t, func() bool {
		c.qmu.RLock()
		defer c.qmu.RUnlock()
		return c.closing
	}, 5*time.Second, time.Millisecond)
	// New queries are refused with a clear error...
	_, err = c.Querier().Query(context.Background(), "up", time.Now())
	require.ErrorIs(t, err, ErrReconfigured)
	assert.Equal(t, "data source reconfigured, retry", err.Error())
	// ...while the one in flight still reads the open store.
	select {
	case err := <-closed:
		t.Fatalf("Close returned (%v) with a query in flight", err)
	case <-time.After(200 * time.Millisecond):
	}
	v, err := c.querier.Query(context.Background(), `count(up)`, time.Now())
	require.NoError(t, err)
	assert.NotEmpty(t, v.String())
	end()
	select {
	case err := <-closed:
		require.NoError(t, err)
	case <-time.After(5 * time.Second):
		t.Fatal("Close did not return after the last query ended")
	}
}

// TestCreateDisposeCycles: ten settings saves (a new collector on the same
// directory, the old one closed after it, as Grafana does) leave no
// goroutine, no connection and one store.
func TestCreateDisposeCycles(t *testing.T) {
	verifyNoLeaks(t)
	good, scrapes := counterServer(t, "x")
	cfg := loadSettings(t, counterSettings(t, map[string]string{"a": good.URL, "b": good.URL}), map[string]string{"a.bearerToken": "x", "b.bearerToken": "x"})
	dir := filepath.Join(t.TempDir(), "ds")
	var olds []*Collector
	prev, err := Start(cfg, Options{Dir: dir, UID: "cycles"})
	require.NoError(t, err)
	for k := 0; k < 10; k++ {
		at := scrapes.Load()
		require.Eventually(t, func() bool { return scrapes.Load() >= at+2 }, 10*time.Second, 5*time.Millisecond)
		next, err := Start(cfg, Options{Dir: dir, UID: "cycles"})
		require.NoError(t, err)
		require.NoError(t, prev.Close())
		olds = append(olds, prev)
		prev = next
	}
	stores.Lock()
	assert.Len(t, stores.m, 1)
	stores.Unlock()
	require.NoError(t, prev.Close())
	for _, o := range append(olds, prev) {
		assert.Zero(t, o.tracker.open())
	}
	stores.Lock()
	assert.Empty(t, stores.m)
	stores.Unlock()
}
