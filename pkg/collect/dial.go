package collect

import (
	"context"
	"errors"
	"net"
	"sync"
	"time"
)

// errCollectorClosed is the dial error of a scrape started while its
// collector is being closed.
var errCollectorClosed = errors.New("the data source is being reconfigured or shut down")

// connTracker dials every scrape connection of one collector and remembers
// it, so that Close can end in-flight scrapes at once: Prometheus's scrape
// pools wait for each loop's current scrape (up to its timeout) before they
// cancel the scrape context, which made closing a collector with hanging
// targets take as long as the scrape timeout.
type connTracker struct {
	dialer net.Dialer
	mu     sync.Mutex
	closed bool
	conns  map[*trackedConn]struct{}
}

func newConnTracker() *connTracker {
	return &connTracker{
		dialer: net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second},
		conns:  map[*trackedConn]struct{}{},
	}
}

// dial is a config_util.DialContextFunc.
func (t *connTracker) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	t.mu.Lock()
	closed := t.closed
	t.mu.Unlock()
	if closed {
		return nil, errCollectorClosed
	}
	c, err := t.dialer.DialContext(ctx, network, addr)
	if err != nil {
		return nil, err
	}
	tc := &trackedConn{Conn: c, t: t}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.closed {
		_ = c.Close()
		return nil, errCollectorClosed
	}
	t.conns[tc] = struct{}{}
	return tc, nil
}

// closeAll refuses new connections and closes every open one.
func (t *connTracker) closeAll() {
	t.mu.Lock()
	t.closed = true
	conns := make([]*trackedConn, 0, len(t.conns))
	for c := range t.conns {
		conns = append(conns, c)
	}
	t.mu.Unlock()
	for _, c := range conns {
		_ = c.Close()
	}
}

// trackedConn forgets itself when closed.
type trackedConn struct {
	net.Conn
	t    *connTracker
	once sync.Once
}

func (c *trackedConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(func() {
		c.t.mu.Lock()
		delete(c.t.conns, c)
		c.t.mu.Unlock()
	})
	return err
}
