package source

import (
	"context"
	"sync"
)

// Notes collects the messages a remote server attaches to successful answers
// (warnings such as partial data from a failed store, and PromQL infos), for
// one request of the plugin. A nil *Notes ignores everything.
type Notes struct {
	mu   sync.Mutex
	seen map[string]bool
	list []string
	// down is the first "unreachable" or "timeout" failure of the request:
	// later calls of the same request return it at once instead of waiting
	// for the timeout again (a query asks per target and per signal).
	down error
}

type notesKey struct{}

// WithNotes returns a context carrying a fresh Notes, and that Notes.
// Queriers append to it through NotesFrom.
func WithNotes(ctx context.Context) (context.Context, *Notes) {
	n := &Notes{seen: map[string]bool{}}
	return context.WithValue(ctx, notesKey{}, n), n
}

// NotesFrom returns the Notes of ctx, or nil.
func NotesFrom(ctx context.Context) *Notes {
	n, _ := ctx.Value(notesKey{}).(*Notes)
	return n
}

// Add records msg once.
func (n *Notes) Add(msg string) {
	if n == nil {
		return
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.seen[msg] {
		return
	}
	n.seen[msg] = true
	n.list = append(n.list, msg)
}

// List returns the messages in the order first seen.
func (n *Notes) List() []string {
	if n == nil {
		return nil
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	return append([]string(nil), n.list...)
}

// fail records that the server is unreachable or too slow for this request.
func (n *Notes) fail(err error) {
	if n == nil {
		return
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.down == nil {
		n.down = err
	}
}

// failed returns the recorded failure, or nil.
func (n *Notes) failed() error {
	if n == nil {
		return nil
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.down
}
