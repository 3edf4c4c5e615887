package probe

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net"
	"net/http"
	"sort"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"
	"golang.org/x/time/rate"
)

// Prober runs one request loop per endpoint and records the results.
type Prober struct {
	cfg     Config
	client  *http.Client
	metrics *Metrics
	log     *slog.Logger
	// OnResult, when set before Start, receives every result after it is recorded (tests).
	OnResult func(Result)
	wg       sync.WaitGroup
}

// NewProber validates cfg and creates the metrics (series at zero for every endpoint).
func NewProber(cfg Config, logger *slog.Logger) (*Prober, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	p := &Prober{cfg: cfg, client: NewHTTPClient(cfg.Timeout, cfg.TLSSkipVerify), metrics: NewMetrics(), log: logger}
	for _, e := range cfg.Endpoints {
		p.metrics.Init(e.Name, e.Model, cfg.Interval.Seconds(), cfg.MaxTokens)
	}
	return p, nil
}

// Start runs the loops until ctx is done; Wait waits for them.
func (p *Prober) Start(ctx context.Context) {
	for _, e := range p.cfg.Endpoints {
		p.wg.Add(1)
		go func() {
			defer p.wg.Done()
			p.loop(ctx, e)
		}()
	}
}

// Wait blocks until every loop has returned.
func (p *Prober) Wait() { p.wg.Wait() }

// loop sends one request per interval to e, one at a time. The token bucket
// (one token per interval, burst 1) bounds the load: a request that outlasts
// the interval delays the next instead of piling up.
func (p *Prober) loop(ctx context.Context, e Endpoint) {
	lim := rate.NewLimiter(rate.Every(p.cfg.Interval), 1)
	q := Request{URL: e.URL, Chat: Chat(e.URL), Model: e.Model, Prompt: Prompt(p.cfg.PromptTokens), MaxTokens: p.cfg.MaxTokens,
		IgnoreEOS: p.cfg.IgnoreEOS, APIKey: p.cfg.APIKey, EndpointName: e.Name}
	for {
		if err := lim.Wait(ctx); err != nil {
			return
		}
		r := Measure(ctx, p.client, q)
		if ctx.Err() != nil {
			return // cancelled by shutdown, not a failure of the endpoint
		}
		p.metrics.Observe(r)
		if !r.OK() {
			p.log.Warn("probe request failed", "endpoint", e.Name, "class", r.Class, "code", r.Code(), "err", r.Err)
		} else {
			p.log.Debug("probe request", "endpoint", e.Name, "ttft", r.TTFT, "e2e", r.E2E, "max_gap", r.GapMax, "tokens", r.OutputTokens)
		}
		if p.OnResult != nil {
			p.OnResult(r)
		}
	}
}

// Handler serves /metrics, /last (the last result of each endpoint, JSON, with
// every gap) and /healthz.
func (p *Prober) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(p.metrics.Registry, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError}))
	mux.HandleFunc("GET /last", func(w http.ResponseWriter, _ *http.Request) {
		last := p.metrics.Last()
		sort.Slice(last, func(i, j int) bool { return last[i].Endpoint < last[j].Endpoint })
		for i := range last {
			if math.IsNaN(last[i].GapVariance) {
				last[i].GapVariance = 0
			}
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(last)
	})
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprintln(w, "ok") })
	return mux
}

// Run is the probe's main: it parses args, listens, probes and serves until
// ctx is done. It returns the exit code: 0 after a clean stop, 2 for bad flags,
// 1 when the listener fails.
func Run(ctx context.Context, args []string, getenv func(string) string, stderr io.Writer) int {
	cfg, err := ParseFlags(args, getenv, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintln(stderr, "inferscope-probe:", err)
		return 2
	}
	logger := slog.New(slog.NewTextHandler(stderr, nil))
	p, err := NewProber(cfg, logger)
	if err != nil {
		fmt.Fprintln(stderr, "inferscope-probe:", err)
		return 2
	}
	ln, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		logger.Error("cannot listen", "addr", cfg.Listen, "err", err)
		return 1
	}
	names := make([]string, len(cfg.Endpoints))
	for i, e := range cfg.Endpoints {
		names[i] = e.Name
	}
	logger.Info("probing", "addr", ln.Addr().String(), "endpoints", names, "interval", cfg.Interval, "max_tokens", cfg.MaxTokens,
		"prompt_tokens", cfg.PromptTokens, "api_key", cfg.APIKey != "")
	srv := &http.Server{Handler: p.Handler(), ReadHeaderTimeout: 10 * time.Second}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	p.Start(ctx)
	var serveErr error
	select {
	case <-ctx.Done():
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		serveErr = srv.Shutdown(sctx)
		cancel()
		<-errc //nolint:errcheck // Serve's http.ErrServerClosed after Shutdown: Shutdown's error is the one returned
	case serveErr = <-errc:
	}
	p.Wait()
	if serveErr != nil && !errors.Is(serveErr, http.ErrServerClosed) {
		logger.Error("stopped with error", "err", serveErr)
		return 1
	}
	return 0
}
