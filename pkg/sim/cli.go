package sim

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strconv"
	"strings"
	"time"
)

// ParseTrace reads an arrival trace: one request per line as
// "seconds,prompt_tokens,output_tokens" (seconds since start, non-decreasing).
// Blank lines and lines starting with '#' are skipped; a header line
// starting with a letter is skipped too.
func ParseTrace(r io.Reader) ([]TraceEntry, error) {
	var out []TraceEntry
	sc := bufio.NewScanner(r)
	line := 0
	for sc.Scan() {
		line++
		s := strings.TrimSpace(sc.Text())
		if s == "" || s[0] == '#' || (line == 1 && (s[0] >= 'a' && s[0] <= 'z' || s[0] >= 'A' && s[0] <= 'Z')) {
			continue
		}
		f := strings.Split(s, ",")
		if len(f) != 3 {
			return nil, fmt.Errorf("sim: trace line %d: want 3 comma-separated fields, got %d", line, len(f))
		}
		at, err1 := strconv.ParseFloat(strings.TrimSpace(f[0]), 64)
		p, err2 := strconv.Atoi(strings.TrimSpace(f[1]))
		o, err3 := strconv.Atoi(strings.TrimSpace(f[2]))
		if err := errors.Join(err1, err2, err3); err != nil {
			return nil, fmt.Errorf("sim: trace line %d: %w", line, err)
		}
		out = append(out, TraceEntry{At: at, PromptTokens: p, OutputTokens: o})
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("sim: reading trace: %w", err)
	}
	if len(out) == 0 {
		return nil, errors.New("sim: trace is empty")
	}
	return out, nil
}

// CLI holds the parsed command line of cmd/vllm-sim.
type CLI struct {
	Listen    string
	GPUListen string
	Warmup    time.Duration // simulated time run before serving, so state is established
	Config    Config
}

// ParseFlags parses the vllm-sim command line: the scenario is applied to
// DefaultConfig first, then every flag given explicitly overrides it.
// Errors name the bad flag; -h gives flag.ErrHelp.
func ParseFlags(args []string, output io.Writer) (CLI, error) {
	fs := flag.NewFlagSet("vllm-sim", flag.ContinueOnError)
	fs.SetOutput(output)
	d := DefaultConfig()
	listen := fs.String("listen", ":8000", "address of the vLLM API and /metrics")
	gpuListen := fs.String("gpu-listen", "", "address of the simulated GPU agent's /metrics (empty: off)")
	version := fs.String("vllm-version", string(d.Version), "vLLM version to imitate: 0.6 (V0), 0.10, 0.11, 0.13")
	scenario := fs.String("scenario", "healthy", "scenario: "+strings.Join(ScenarioNames(), ", "))
	model := fs.String("model", d.Model.Name, "served model name")
	rate := fs.Float64("rate", d.Rate, "generated load, requests/s (Poisson); 0 = only API requests")
	amp := fs.Float64("rate-amplitude", 0, "sinusoidal modulation of the rate, 0..1")
	period := fs.Duration("rate-period", time.Hour, "period of the rate modulation")
	seed := fs.Uint64("seed", d.Seed, "random seed")
	maxSeqs := fs.Int("max-num-seqs", d.MaxNumSeqs, "max running requests")
	maxBatched := fs.Int("max-num-batched-tokens", d.MaxNumBatchedTokens, "token budget per engine step")
	blocks := fs.Int("num-gpu-blocks", 0, "KV-cache blocks (0: derived from GPU memory)")
	blockSize := fs.Int("block-size", d.BlockSize, "tokens per KV block")
	prefix := fs.String("prefix-caching", "auto", "prefix caching: true, false or auto (off for 0.6, on for V1)")
	hit := fs.Float64("prefix-hit-ratio", d.PrefixHitRatio, "share of each prompt found in the prefix cache")
	maxLen := fs.Int("max-model-len", d.Model.MaxModelLen, "max model length, tokens")
	promptMean := fs.Float64("prompt-mean", d.Prompt.Mean, "mean prompt length, tokens (lognormal)")
	outputMean := fs.Float64("output-mean", d.Output.Mean, "mean output length, tokens (lognormal)")
	maxTokens := fs.Int("max-tokens", d.MaxTokens, "max_tokens of generated requests")
	trace := fs.String("trace", "", "arrival trace CSV (seconds,prompt_tokens,output_tokens) replacing the Poisson load")
	restart := fs.Duration("restart-every", 0, "restart the server this often (counters reset)")
	stallAt := fs.Duration("stall-at", 0, "stop engine progress after this long")
	dropRunning := fs.Bool("stall-drop-running", false, "report num_requests_running 0 while stalled")
	flakyErr := fs.Float64("flaky-error-ratio", 0, "share of /metrics requests answered with 500")
	flakyStall := fs.Float64("flaky-stall-ratio", 0, "share of /metrics requests that stall")
	hostname := fs.String("hostname", d.GPU.Hostname, "hostname label of the GPU page")
	warmup := fs.Duration("warmup", 0, "simulate this long (fast) before serving, so queues and KV usage are established")
	if err := fs.Parse(args); err != nil {
		return CLI{}, err
	}
	if fs.NArg() > 0 {
		return CLI{}, fmt.Errorf("sim: unexpected arguments %q", fs.Args())
	}
	cfg := DefaultConfig()
	if err := ApplyScenario(&cfg, *scenario); err != nil {
		return CLI{}, err
	}
	v, err := ParseVersion(*version)
	if err != nil {
		return CLI{}, err
	}
	cfg.Version = v
	cfg.Model.Name = *model
	cfg.Seed = *seed
	cfg.GPU.Hostname = *hostname
	switch *prefix {
	case "auto":
		cfg.PrefixCaching = v.V1()
	case "true":
		cfg.PrefixCaching = true
	case "false":
		cfg.PrefixCaching = false
	default:
		return CLI{}, fmt.Errorf("sim: -prefix-caching must be true, false or auto, got %q", *prefix)
	}
	// Each flag given explicitly overrides the scenario's value.
	override := map[string]func(c *Config){
		"rate":                   func(c *Config) { c.Rate = *rate },
		"rate-amplitude":         func(c *Config) { c.RateAmplitude = *amp },
		"rate-period":            func(c *Config) { c.RatePeriod = period.Seconds() },
		"max-num-seqs":           func(c *Config) { c.MaxNumSeqs = *maxSeqs },
		"max-num-batched-tokens": func(c *Config) { c.MaxNumBatchedTokens = *maxBatched },
		"num-gpu-blocks":         func(c *Config) { c.NumGPUBlocks = *blocks },
		"block-size":             func(c *Config) { c.BlockSize = *blockSize },
		"prefix-hit-ratio":       func(c *Config) { c.PrefixHitRatio = *hit },
		"max-model-len":          func(c *Config) { c.Model.MaxModelLen = *maxLen },
		"prompt-mean":            func(c *Config) { c.Prompt.Mean = *promptMean },
		"output-mean":            func(c *Config) { c.Output.Mean = *outputMean },
		"max-tokens":             func(c *Config) { c.MaxTokens = *maxTokens },
		"restart-every":          func(c *Config) { c.RestartEvery = *restart },
		"stall-at":               func(c *Config) { c.StallAt = *stallAt },
		"stall-drop-running":     func(c *Config) { c.StallDropRunning = *dropRunning },
		"flaky-error-ratio":      func(c *Config) { c.FlakyErrorRatio = *flakyErr },
		"flaky-stall-ratio":      func(c *Config) { c.FlakyStallRatio = *flakyStall },
	}
	var ferr error
	fs.Visit(func(f *flag.Flag) {
		if set, ok := override[f.Name]; ok {
			set(&cfg)
			return
		}
		if f.Name == "trace" {
			fh, err := os.Open(*trace)
			if err != nil {
				ferr = fmt.Errorf("sim: -trace: %w", err)
				return
			}
			defer fh.Close()
			cfg.Trace, ferr = ParseTrace(fh)
		}
	})
	if ferr != nil {
		return CLI{}, ferr
	}
	if err := cfg.Validate(); err != nil {
		return CLI{}, err
	}
	if *warmup < 0 {
		return CLI{}, errors.New("sim: -warmup must be ≥ 0")
	}
	return CLI{Listen: *listen, GPUListen: *gpuListen, Warmup: *warmup, Config: cfg}, nil
}

// Main runs cmd/vllm-sim: parse flags, serve the API (and the GPU page when
// --gpu-listen is set) and advance the model in real time until ctx is done.
// Log lines go to logw.
func Main(ctx context.Context, args []string, logw io.Writer) error {
	cli, err := ParseFlags(args, logw)
	if err != nil {
		return err
	}
	s, err := New(cli.Config, Options{Start: time.Now().Add(-cli.Warmup)})
	if err != nil {
		return err
	}
	s.AdvanceTo(cli.Warmup.Seconds())
	srv := NewServer(s)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	errc := make(chan error, 3)
	var servers []*http.Server
	serve := func(what, addr string, h http.Handler) error {
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			return fmt.Errorf("sim: listen %s: %w", addr, err)
		}
		hs := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
		servers = append(servers, hs)
		go func() {
			if err := hs.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
				errc <- err
			}
		}()
		fmt.Fprintf(logw, "vllm-sim: %s on http://%s (vLLM %s, model %q)\n", what, ln.Addr(), cli.Config.Version, cli.Config.Model.Name)
		return nil
	}
	if err := serve("vLLM API", cli.Listen, srv.Handler()); err != nil {
		return err
	}
	if cli.GPUListen != "" {
		if err := serve("GPU agent", cli.GPUListen, srv.GPUHandler()); err != nil {
			return err
		}
	}
	go func() { errc <- srv.Run(ctx) }()
	var runErr error
	select {
	case <-ctx.Done():
	case runErr = <-errc:
	}
	cancel()
	shut, cancelShut := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancelShut()
	for _, hs := range servers {
		_ = hs.Shutdown(shut)
	}
	if runErr != nil && !errors.Is(runErr, context.Canceled) {
		return runErr
	}
	return nil
}
