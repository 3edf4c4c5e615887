package plugin

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/grafana/grafana-plugin-sdk-go/backend/log"
)

// newLogger returns an slog.Logger writing through the SDK's logger (which
// Grafana's plugin host shows in its own log at the plugin's level), carrying
// the data source's uid on every line. Records below Warn are dropped here:
// Prometheus's scrape and TSDB components log every WAL replay and
// compaction at info level and every scrape failure at debug level.
// mask (nil: none) masks the data source's secrets in the message and in
// every attribute's text, so an error echoing a credential is not logged.
func newLogger(l log.Logger, uid string, mask func(string) string) *slog.Logger {
	return slog.New(&sdkHandler{l: l.With("datasource", uid), mask: mask})
}

// sdkHandler is an slog.Handler over the SDK's log.Logger.
type sdkHandler struct {
	l      log.Logger
	attrs  []any
	prefix string
	mask   func(string) string
}

// value is an attribute's value as logged: its text masked when a mask is set
// and the text changed.
func (h *sdkHandler) value(v slog.Value) any {
	a := v.Resolve().Any()
	if h.mask == nil {
		return a
	}
	var t string
	switch x := a.(type) {
	case string:
		t = x
	case error:
		t = x.Error()
	case fmt.Stringer:
		t = x.String()
	default:
		t = fmt.Sprint(x)
	}
	if m := h.mask(t); m != t {
		return m
	}
	return a
}

func (h *sdkHandler) Enabled(_ context.Context, lvl slog.Level) bool { return lvl >= slog.LevelWarn }

func (h *sdkHandler) Handle(_ context.Context, r slog.Record) error {
	args := make([]any, 0, len(h.attrs)+2*r.NumAttrs())
	args = append(args, h.attrs...)
	r.Attrs(func(a slog.Attr) bool {
		args = append(args, h.prefix+a.Key, h.value(a.Value))
		return true
	})
	msg := r.Message
	if h.mask != nil {
		msg = h.mask(msg)
	}
	switch {
	case r.Level >= slog.LevelError:
		h.l.Error(msg, args...)
	case r.Level >= slog.LevelWarn:
		h.l.Warn(msg, args...)
	case r.Level >= slog.LevelInfo:
		h.l.Info(msg, args...)
	default:
		h.l.Debug(msg, args...)
	}
	return nil
}

func (h *sdkHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	n := &sdkHandler{l: h.l, prefix: h.prefix, attrs: append([]any(nil), h.attrs...), mask: h.mask}
	for _, a := range attrs {
		n.attrs = append(n.attrs, h.prefix+a.Key, h.value(a.Value))
	}
	return n
}

func (h *sdkHandler) WithGroup(name string) slog.Handler {
	if name == "" {
		return h
	}
	return &sdkHandler{l: h.l, attrs: h.attrs, prefix: h.prefix + name + ".", mask: h.mask}
}
