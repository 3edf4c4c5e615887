package gpu

import (
	"context"
	"crypto/subtle"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// TokenEnv names the environment variable that may hold the bearer token
// (instead of --bearer-token-file).
const TokenEnv = "INFERSCOPE_GPU_AGENT_TOKEN" // #nosec G101 -- the name of the environment variable holding the token, not a token

// DefaultListen is the default listen address (dcgm-exporter uses 9400).
const DefaultListen = ":9402"

// Config is the agent's command line.
type Config struct {
	Listen      string        // host:port, default DefaultListen
	Interval    time.Duration // sampling interval, default 5 s, at least MinInterval
	BearerToken string        // required on /metrics when non-empty
	TLSCert     string        // PEM certificate file; with TLSKey serves HTTPS
	TLSKey      string        // PEM key file
	Hostname    string        // hostname label, default os.Hostname()
}

// ParseFlags parses args (without the program name). The token comes from
// --bearer-token-file or the TokenEnv variable read through getenv, not both.
// Errors name the offending flag; -h returns flag.ErrHelp.
func ParseFlags(args []string, getenv func(string) string, output io.Writer) (Config, error) {
	fs := flag.NewFlagSet("inferscope-gpu-agent", flag.ContinueOnError)
	fs.SetOutput(output)
	var cfg Config
	var tokenFile string
	fs.StringVar(&cfg.Listen, "listen", DefaultListen, "address to serve /metrics and /healthz on")
	fs.DurationVar(&cfg.Interval, "interval", 5*time.Second, "NVML sampling interval (GPM ratios average over it)")
	fs.StringVar(&tokenFile, "bearer-token-file", "", "file holding a bearer token required on /metrics (or set "+TokenEnv+")")
	fs.StringVar(&cfg.TLSCert, "tls-cert", "", "PEM certificate file; with --tls-key serves HTTPS")
	fs.StringVar(&cfg.TLSKey, "tls-key", "", "PEM private key file for --tls-cert")
	fs.StringVar(&cfg.Hostname, "hostname", "", "value of the hostname label (default: the machine's hostname)")
	if err := fs.Parse(args); err != nil {
		return Config{}, err
	}
	if fs.NArg() > 0 {
		return Config{}, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	if cfg.Interval < MinInterval {
		return Config{}, fmt.Errorf("--interval %s is shorter than the minimum %s", cfg.Interval, MinInterval)
	}
	if (cfg.TLSCert == "") != (cfg.TLSKey == "") {
		return Config{}, errors.New("--tls-cert and --tls-key must be given together")
	}
	envToken := ""
	if getenv != nil {
		envToken = strings.TrimSpace(getenv(TokenEnv))
	}
	switch {
	case tokenFile != "" && envToken != "":
		return Config{}, fmt.Errorf("give the bearer token either with --bearer-token-file or in %s, not both", TokenEnv)
	case tokenFile != "":
		b, err := os.ReadFile(tokenFile)
		if err != nil {
			return Config{}, fmt.Errorf("--bearer-token-file: %w", err)
		}
		cfg.BearerToken = strings.TrimSpace(string(b))
		if cfg.BearerToken == "" {
			return Config{}, fmt.Errorf("--bearer-token-file %s is empty", tokenFile)
		}
	default:
		cfg.BearerToken = envToken
	}
	if cfg.Hostname == "" {
		h, err := os.Hostname()
		if err != nil {
			return Config{}, fmt.Errorf("hostname: %w (set --hostname)", err)
		}
		cfg.Hostname = h
	}
	return cfg, nil
}

// NewHandler serves /metrics (the agent's collector on a registry of its own,
// behind the bearer token when one is set) and /healthz (200 "ok", or 503 and
// the reason; never behind the token so liveness probes need no secret).
func NewHandler(a *Agent, token string) http.Handler {
	reg := prometheus.NewRegistry()
	reg.MustRegister(a.Collector())
	metrics := promhttp.HandlerFor(reg, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError})
	mux := http.NewServeMux()
	mux.Handle("/metrics", requireToken(token, metrics))
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		if err := a.Healthy(); err != nil {
			w.WriteHeader(http.StatusServiceUnavailable)
			fmt.Fprintln(w, err.Error())
			return
		}
		fmt.Fprintln(w, "ok")
	})
	return mux
}

func requireToken(token string, next http.Handler) http.Handler {
	if token == "" {
		return next
	}
	want := []byte("Bearer " + token)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got := []byte(r.Header.Get("Authorization"))
		if subtle.ConstantTimeCompare(got, want) != 1 {
			w.Header().Set("WWW-Authenticate", `Bearer realm="inferscope-gpu-agent"`)
			http.Error(w, "missing or wrong bearer token", http.StatusUnauthorized)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// Serve runs an Agent over src and serves it on ln until ctx is done, then shuts
// the server down (5 s grace) and closes the agent (which closes src).
func Serve(ctx context.Context, ln net.Listener, cfg Config, src Source, logger *slog.Logger) error {
	agent, err := NewAgent(src, AgentOptions{Interval: cfg.Interval, Hostname: cfg.Hostname, Logger: logger})
	if err != nil {
		src.Close()
		return err
	}
	srv := &http.Server{Handler: NewHandler(agent, cfg.BearerToken), ReadHeaderTimeout: 10 * time.Second}
	errc := make(chan error, 1)
	go func() {
		if cfg.TLSCert != "" {
			errc <- srv.ServeTLS(ln, cfg.TLSCert, cfg.TLSKey)
		} else {
			errc <- srv.Serve(ln)
		}
	}()
	var serveErr error
	select {
	case <-ctx.Done():
		shutCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		serveErr = srv.Shutdown(shutCtx)
		cancel()
		<-errc //nolint:errcheck // Serve's http.ErrServerClosed after Shutdown: Shutdown's error is the one returned
	case serveErr = <-errc:
	}
	if errors.Is(serveErr, http.ErrServerClosed) {
		serveErr = nil
	}
	return errors.Join(serveErr, agent.Close())
}

// Run is the agent's main: it parses args, opens NVML, listens and serves until
// ctx is done. It returns the process exit code: 0 after a clean stop, 2 for bad
// flags, 1 when NVML or the listener fails (the reason goes to stderr).
func Run(ctx context.Context, args []string, getenv func(string) string, stderr io.Writer) int {
	cfg, err := ParseFlags(args, getenv, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintln(stderr, "inferscope-gpu-agent:", err)
		return 2
	}
	logger := slog.New(slog.NewTextHandler(stderr, nil))
	src, err := OpenNVML()
	if err != nil {
		logger.Error("cannot read GPUs", "err", err)
		return 1
	}
	if m, ok := src.(interface{ MissingSymbols() []string }); ok {
		logger.Info("NVML opened", "missing_symbols", strings.Join(m.MissingSymbols(), ","))
	}
	ln, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		src.Close()
		logger.Error("cannot listen", "addr", cfg.Listen, "err", err)
		return 1
	}
	logger.Info("serving", "addr", ln.Addr().String(), "interval", cfg.Interval, "tls", cfg.TLSCert != "", "token", cfg.BearerToken != "")
	if err := Serve(ctx, ln, cfg, src, logger); err != nil {
		logger.Error("stopped with error", "err", err)
		return 1
	}
	return 0
}
