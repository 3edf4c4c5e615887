package probe

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"net/url"
	"os"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
)

// APIKeyEnv names the environment variable that may hold the API key (instead
// of --api-key-file / apiKeyFile).
const APIKeyEnv = "INFERSCOPE_PROBE_API_KEY" // #nosec G101 -- the name of the environment variable holding the key, not a key

// DefaultListen is the default listen address (the GPU agent uses 9402).
const DefaultListen = ":9401"

// MinInterval is the shortest interval between two requests to one endpoint.
const MinInterval = time.Second

// Endpoint is one server the probe exercises.
type Endpoint struct {
	// Name is the endpoint label; default: the URL without user info or query.
	Name string `yaml:"name"`
	// URL is the server's base URL (http://host:8000) or the full
	// /v1/chat/completions or /v1/completions URL.
	URL string `yaml:"url"`
	// Model overrides Config.Model for this endpoint.
	Model string `yaml:"model"`
}

// Config is the probe's configuration, from flags or a YAML file (same keys as
// the yaml tags).
type Config struct {
	Listen    string        `yaml:"listen"`
	Endpoints []Endpoint    `yaml:"endpoints"`
	Model     string        `yaml:"model"`
	API       string        `yaml:"api"`      // "chat" (default) or "completions": the path appended to a base URL
	Interval  time.Duration `yaml:"interval"` // between two requests to one endpoint, ≥ MinInterval
	Timeout   time.Duration `yaml:"timeout"`  // one whole request, stream included; ≤ Interval·10; 0 = min(30 s, Interval·10)
	// PromptTokens is the approximate prompt length in tokens (one common English word each).
	PromptTokens  int    `yaml:"promptTokens"`
	MaxTokens     int    `yaml:"maxTokens"`
	IgnoreEOS     bool   `yaml:"ignoreEOS"` // send ignore_eos so every request generates MaxTokens (vLLM, SGLang)
	TLSSkipVerify bool   `yaml:"tlsSkipVerify"`
	APIKeyFile    string `yaml:"apiKeyFile"`
	// APIKey is read from APIKeyFile or APIKeyEnv; it is never logged or served.
	APIKey string `yaml:"-"`
}

func defaults() Config {
	return Config{Listen: DefaultListen, API: "chat", Interval: 5 * time.Second, PromptTokens: 32, MaxTokens: 32, IgnoreEOS: true}
}

type multi []string

func (m *multi) String() string     { return strings.Join(*m, ",") }
func (m *multi) Set(v string) error { *m = append(*m, v); return nil }

// ParseFlags parses args (without the program name). With --config the YAML
// file gives the configuration and no other flag is allowed except --listen.
// Errors name the offending flag or key; -h returns flag.ErrHelp.
func ParseFlags(args []string, getenv func(string) string, output io.Writer) (Config, error) {
	fs := flag.NewFlagSet("inferscope-probe", flag.ContinueOnError)
	fs.SetOutput(output)
	cfg := defaults()
	var eps multi
	var file string
	fs.StringVar(&file, "config", "", "YAML configuration file (keys: listen, endpoints[{name,url,model}], model, api, interval, timeout, promptTokens, maxTokens, ignoreEOS, tlsSkipVerify, apiKeyFile)")
	fs.Var(&eps, "endpoint", "server base URL or full /v1/chat/completions or /v1/completions URL; repeat for several; name=URL sets the endpoint label")
	fs.StringVar(&cfg.Listen, "listen", cfg.Listen, "address to serve /metrics, /last and /healthz on")
	fs.StringVar(&cfg.Model, "model", "", "model name sent in each request")
	fs.StringVar(&cfg.API, "api", cfg.API, "chat or completions: the path appended to a base URL")
	fs.DurationVar(&cfg.Interval, "interval", cfg.Interval, "interval between two requests to one endpoint")
	fs.DurationVar(&cfg.Timeout, "timeout", 0, "limit on one whole request, stream included (default 30s, or 10 × --interval if shorter)")
	fs.IntVar(&cfg.PromptTokens, "prompt-tokens", cfg.PromptTokens, "approximate prompt length, tokens")
	fs.IntVar(&cfg.MaxTokens, "max-tokens", cfg.MaxTokens, "max_tokens of each request")
	fs.BoolVar(&cfg.IgnoreEOS, "ignore-eos", cfg.IgnoreEOS, "send ignore_eos (vLLM, SGLang) so each request generates max_tokens tokens")
	fs.BoolVar(&cfg.TLSSkipVerify, "tls-skip-verify", false, "do not verify the endpoints' certificates")
	fs.StringVar(&cfg.APIKeyFile, "api-key-file", "", "file holding the API key sent as a bearer token (or set "+APIKeyEnv+")")
	if err := fs.Parse(args); err != nil {
		return Config{}, err
	}
	if fs.NArg() > 0 {
		return Config{}, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	if file != "" {
		other := ""
		fs.Visit(func(f *flag.Flag) {
			if f.Name != "config" && f.Name != "listen" {
				other = f.Name
			}
		})
		if other != "" {
			return Config{}, fmt.Errorf("--%s cannot be combined with --config (put it in the file)", other)
		}
		listen := cfg.Listen
		b, err := os.ReadFile(file)
		if err != nil {
			return Config{}, fmt.Errorf("--config: %w", err)
		}
		cfg = defaults()
		dec := yaml.NewDecoder(strings.NewReader(string(b)))
		dec.KnownFields(true)
		if err := dec.Decode(&cfg); err != nil && !errors.Is(err, io.EOF) {
			return Config{}, fmt.Errorf("--config %s: %w", file, err)
		}
		if isSet(fs, "listen") || cfg.Listen == "" {
			cfg.Listen = listen
		}
	} else {
		for _, e := range eps {
			ep := Endpoint{URL: e}
			if name, u, ok := strings.Cut(e, "="); ok && !strings.Contains(name, "/") {
				ep = Endpoint{Name: name, URL: u}
			}
			cfg.Endpoints = append(cfg.Endpoints, ep)
		}
	}
	if err := cfg.resolveKey(getenv); err != nil {
		return Config{}, err
	}
	return cfg, cfg.Validate()
}

func isSet(fs *flag.FlagSet, name string) bool {
	set := false
	fs.Visit(func(f *flag.Flag) { set = set || f.Name == name })
	return set
}

func (c *Config) resolveKey(getenv func(string) string) error {
	env := ""
	if getenv != nil {
		env = strings.TrimSpace(getenv(APIKeyEnv))
	}
	switch {
	case c.APIKeyFile != "" && env != "":
		return fmt.Errorf("give the API key either with --api-key-file (apiKeyFile) or in %s, not both", APIKeyEnv)
	case c.APIKeyFile != "":
		b, err := os.ReadFile(c.APIKeyFile)
		if err != nil {
			return fmt.Errorf("--api-key-file: %w", err)
		}
		c.APIKey = strings.TrimSpace(string(b))
		if c.APIKey == "" {
			return fmt.Errorf("--api-key-file %s is empty", c.APIKeyFile)
		}
	default:
		c.APIKey = env
	}
	return nil
}

// Validate checks the configuration, fills endpoint names and models, and
// resolves each URL to the completions path. Errors name the flag.
func (c *Config) Validate() error {
	if len(c.Endpoints) == 0 {
		return errors.New("--endpoint: give at least one endpoint")
	}
	if c.API != "chat" && c.API != "completions" {
		return fmt.Errorf("--api: %q is not chat or completions", c.API)
	}
	if c.Interval < MinInterval {
		return fmt.Errorf("--interval: %s is shorter than the minimum %s", c.Interval, MinInterval)
	}
	if c.Timeout == 0 {
		c.Timeout = min(30*time.Second, 10*c.Interval)
	}
	if c.Timeout < 0 || c.Timeout > 10*c.Interval {
		return fmt.Errorf("--timeout: %s must be > 0 and at most 10 × --interval (%s)", c.Timeout, 10*c.Interval)
	}
	if c.PromptTokens < 1 || c.PromptTokens > 8192 {
		return fmt.Errorf("--prompt-tokens: %d is not between 1 and 8192", c.PromptTokens)
	}
	if c.MaxTokens < 2 || c.MaxTokens > 4096 {
		return fmt.Errorf("--max-tokens: %d is not between 2 and 4096 (two tokens are needed for one gap)", c.MaxTokens)
	}
	seen := map[string]bool{}
	for i := range c.Endpoints {
		e := &c.Endpoints[i]
		f := fmt.Sprintf("--endpoint %d", i+1)
		u, err := url.Parse(e.URL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return fmt.Errorf("%s: %q is not an http(s) URL", f, e.URL)
		}
		if u.User != nil {
			return fmt.Errorf("%s: put credentials in --api-key-file, not in the URL", f)
		}
		if !strings.HasSuffix(u.Path, "/completions") {
			p := "/v1/chat/completions"
			if c.API == "completions" {
				p = "/v1/completions"
			}
			u.Path = strings.TrimSuffix(strings.TrimSuffix(u.Path, "/"), "/v1") + p
		}
		e.URL = u.String()
		if e.Name == "" {
			e.Name = u.Host + u.Path
		}
		if seen[e.Name] {
			return fmt.Errorf("%s: endpoint name %q is used twice", f, e.Name)
		}
		seen[e.Name] = true
		if e.Model == "" {
			e.Model = c.Model
		}
		if e.Model == "" {
			return fmt.Errorf("--model: give the model name (or endpoints[%d].model)", i)
		}
	}
	return nil
}

// Chat reports whether an endpoint URL is a chat completions URL.
func Chat(u string) bool { return strings.HasSuffix(strings.SplitN(u, "?", 2)[0], "/chat/completions") }

// Prompt returns a prompt of about n tokens: n common English words.
func Prompt(n int) string {
	words := strings.Fields("please count slowly from one upward and say each number as a word then describe the weather in a calm tone")
	var b strings.Builder
	for i := range n {
		if i > 0 {
			b.WriteByte(' ')
		}
		b.WriteString(words[i%len(words)])
	}
	return b.String()
}
