package plugin

import (
	"errors"
	"fmt"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/backend"

	"github.com/inferscope/inferscope-llm-datasource/pkg/collect"
	"github.com/inferscope/inferscope-llm-datasource/pkg/settings"
)

// retryLockWait is how long a retry waits for another process's lock: a
// query or health check should not hang for the first attempt's full wait.
const retryLockWait = 500 * time.Millisecond

// pendingStore is an embedded store that could not be opened yet for a
// reason that may pass (another process holds its lock): every query and
// health check tries again, and the first to succeed starts the collector.
// Until then they answer the last error, as HTTP 503 "retry".
type pendingStore struct {
	mu    sync.Mutex
	cfg   settings.Settings
	opts  collect.Options
	err   error
	tries int
	// closed is set by Dispose: no retry starts after it.
	closed bool
	// ready is set, after the collector and querier fields of the instance
	// are written, once the store is open: readers that see it see them.
	ready atomic.Bool
}

// retryable reports whether Start's error may pass without a settings
// change: a lock held by another process, or an error of the moment (too
// many open files) that outlasted Start's own retries.
func retryable(err error) bool {
	return errors.Is(err, collect.ErrStoreLocked) || errors.Is(err, collect.ErrStoreTransient)
}

// storeReady is the gate of every query and health check of an embedded
// data source whose store is pending: nil once the store is open (opening
// it now when it can), else the error to answer.
func (i *Instance) storeReady() error {
	p := i.pending
	if p == nil || p.ready.Load() {
		return nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ready.Load() {
		return nil
	}
	if p.closed {
		return collect.ErrReconfigured
	}
	p.tries++
	opts := p.opts
	opts.LockWait = retryLockWait
	c, err := collect.Start(p.cfg, opts)
	if err != nil {
		p.err = err
		if !retryable(err) {
			i.logger.Warn("embedded store still cannot be opened", "error", err)
		}
		return p.err
	}
	i.collector, i.querier = c, budgeted(c.Querier())
	live.add(i)
	i.logger.Warn("embedded store opened on retry", "tries", p.tries)
	p.ready.Store(true)
	return nil
}

// pendingError is the sentence of a store not open yet.
func (p *pendingStore) pendingError(err error) error {
	return fmt.Errorf("the embedded store is not open yet: %v; it is tried again at every query and health check", err)
}

// pendingResponse answers every query of req while the store is pending:
// HTTP 503 from the plugin (not a bad request, not the user's fault).
func pendingResponse(req *backend.QueryDataRequest, err error) *backend.QueryDataResponse {
	resp := backend.NewQueryDataResponse()
	for _, q := range req.Queries {
		resp.Responses[q.RefID] = backend.DataResponse{Error: err, Status: backend.Status(http.StatusServiceUnavailable), ErrorSource: backend.ErrorSourcePlugin}
	}
	return resp
}
