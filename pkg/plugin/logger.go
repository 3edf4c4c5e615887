package plugin

import (
	"context"
	"log/slog"

	"github.com/grafana/grafana-plugin-sdk-go/backend/log"
)

// newLogger returns an slog.Logger writing through the SDK's logger (which
// Grafana's plugin host shows in its own log at the plugin's level), carrying
// the data source's uid on every line. Records below Warn are dropped here:
// Prometheus's scrape and TSDB components log every WAL replay and
// compaction at info level and every scrape failure at debug level.
func newLogger(l log.Logger, uid string) *slog.Logger {
	return slog.New(&sdkHandler{l: l.With("datasource", uid)})
}

// sdkHandler is an slog.Handler over the SDK's log.Logger.
type sdkHandler struct {
	l      log.Logger
	attrs  []any
	prefix string
}

func (h *sdkHandler) Enabled(_ context.Context, lvl slog.Level) bool { return lvl >= slog.LevelWarn }

func (h *sdkHandler) Handle(_ context.Context, r slog.Record) error {
	args := make([]any, 0, len(h.attrs)+2*r.NumAttrs())
	args = append(args, h.attrs...)
	r.Attrs(func(a slog.Attr) bool {
		args = append(args, h.prefix+a.Key, a.Value.Resolve().Any())
		return true
	})
	switch {
	case r.Level >= slog.LevelError:
		h.l.Error(r.Message, args...)
	case r.Level >= slog.LevelWarn:
		h.l.Warn(r.Message, args...)
	case r.Level >= slog.LevelInfo:
		h.l.Info(r.Message, args...)
	default:
		h.l.Debug(r.Message, args...)
	}
	return nil
}

func (h *sdkHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	n := &sdkHandler{l: h.l, prefix: h.prefix, attrs: append([]any(nil), h.attrs...)}
	for _, a := range attrs {
		n.attrs = append(n.attrs, h.prefix+a.Key, a.Value.Resolve().Any())
	}
	return n
}

func (h *sdkHandler) WithGroup(name string) slog.Handler {
	if name == "" {
		return h
	}
	return &sdkHandler{l: h.l, attrs: h.attrs, prefix: h.prefix + name + "."}
}
