package probe

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/inferscope/inferscope-llm-datasource/pkg/sim"
)

// TestProberBoundsLoadAndExposesMetrics runs the prober for 2.7 s at a 1 s
// interval against the simulator behind an API-key check: at most 3 requests
// (t = 0, 1, 2 s), each counted once, the key sent but never logged or served.
func TestProberBoundsLoadAndExposesMetrics(t *testing.T) {
	const key = "sk-test-secret-4242"
	cfg := sim.DefaultConfig()
	cfg.Rate = 0
	s, err := sim.New(cfg, sim.Options{})
	require.NoError(t, err)
	srv := sim.NewServer(s)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { _ = srv.Run(ctx) }()
	var mu sync.Mutex
	var auths []string
	inner := srv.Handler()
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		auths = append(auths, r.Header.Get("Authorization"))
		mu.Unlock()
		inner.ServeHTTP(w, r)
	}))
	defer hs.Close()

	var logs bytes.Buffer
	pc := Config{Endpoints: []Endpoint{{Name: "sim", URL: hs.URL}}, Model: simModel, API: "chat", Interval: time.Second,
		Timeout: 5 * time.Second, PromptTokens: 16, MaxTokens: 8, IgnoreEOS: true, APIKey: key}
	p, err := NewProber(pc, slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug})))
	require.NoError(t, err)
	var results []Result
	p.OnResult = func(r Result) { mu.Lock(); results = append(results, r); mu.Unlock() }
	pctx, pcancel := context.WithTimeout(ctx, 2700*time.Millisecond)
	defer pcancel()
	p.Start(pctx)
	p.Wait()

	mu.Lock()
	defer mu.Unlock()
	require.Len(t, results, 3, "one request per interval: t = 0, 1, 2 s")
	require.Len(t, auths, 3)
	for _, a := range auths {
		assert.Equal(t, "Bearer "+key, a)
	}
	m := p.Metrics()
	assert.Equal(t, 3.0, testutil.ToFloat64(m.requests.WithLabelValues("sim", simModel)))
	assert.Equal(t, 24.0, testutil.ToFloat64(m.outTokens.WithLabelValues("sim", simModel)))
	assert.Equal(t, 1.0, testutil.ToFloat64(m.interval.WithLabelValues("sim", simModel)))
	assert.Equal(t, results[2].GapMax, testutil.ToFloat64(m.lastMax.WithLabelValues("sim", simModel)))
	assert.Equal(t, results[2].TTFT, testutil.ToFloat64(m.lastTTFT.WithLabelValues("sim", simModel)))

	rec := httptest.NewRecorder()
	p.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	page := rec.Body.String()
	assert.Contains(t, page, `inferscope_probe_time_to_first_token_seconds_count{endpoint="sim",model="meta-llama/Llama-3.1-8B-Instruct"} 3`)
	assert.Contains(t, page, `inferscope_probe_inter_token_latency_seconds_count{endpoint="sim",model="meta-llama/Llama-3.1-8B-Instruct"} 21`)
	assert.Contains(t, page, `inferscope_probe_request_max_inter_token_latency_seconds_bucket{endpoint="sim",model="meta-llama/Llama-3.1-8B-Instruct",le="0.1"} 3`)
	rec = httptest.NewRecorder()
	p.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/last", nil))
	assert.Contains(t, rec.Body.String(), `"gapsSeconds":[`)
	for _, text := range []string{page, rec.Body.String(), logs.String()} {
		assert.NotContains(t, text, key)
	}
}

// TestErrorsAreCountedByClassAndCode: 429s land in errors_total with class and code.
func TestErrorsAreCountedByClassAndCode(t *testing.T) {
	_, base := startSim(t, 51, sim.APIFaults{TooManyShare: 1})
	m := NewMetrics()
	r := Measure(context.Background(), NewHTTPClient(time.Second, false), simRequest(base, true, 4))
	m.Observe(r)
	m.Observe(r)
	assert.Equal(t, 2.0, testutil.ToFloat64(m.errors.WithLabelValues("sim", simModel, ClassHTTP429, "429")))
	assert.Equal(t, 0.0, testutil.ToFloat64(m.lastOK.WithLabelValues("sim", simModel)))
	assert.Equal(t, 0, testutil.CollectAndCount(m.ttft), "failed requests stay out of the latency histograms")
}

func TestParseFlags(t *testing.T) {
	env := func(m map[string]string) func(string) string { return func(k string) string { return m[k] } }
	c, err := ParseFlags([]string{"--endpoint", "http://a:8000", "--endpoint", "b=https://b.example/v1/completions", "--model", "m", "--interval", "10s"}, env(nil), io.Discard)
	require.NoError(t, err)
	assert.Equal(t, "http://a:8000/v1/chat/completions", c.Endpoints[0].URL)
	assert.Equal(t, "a:8000/v1/chat/completions", c.Endpoints[0].Name)
	assert.Equal(t, "b", c.Endpoints[1].Name)
	assert.Equal(t, "https://b.example/v1/completions", c.Endpoints[1].URL)
	assert.False(t, Chat(c.Endpoints[1].URL))
	assert.Equal(t, "m", c.Endpoints[1].Model)
	assert.Equal(t, 30*time.Second, c.Timeout)
	c, err = ParseFlags([]string{"--endpoint", "http://a:8000", "--model", "m", "--interval", "1s"}, env(nil), io.Discard)
	require.NoError(t, err)
	assert.Equal(t, 10*time.Second, c.Timeout, "the default timeout shrinks to 10 × a short interval")

	c, err = ParseFlags([]string{"--endpoint", "http://a:8000/v1", "--model", "m", "--api", "completions"}, env(map[string]string{APIKeyEnv: " k1 "}), io.Discard)
	require.NoError(t, err)
	assert.Equal(t, "http://a:8000/v1/completions", c.Endpoints[0].URL)
	assert.Equal(t, "k1", c.APIKey)

	dir := t.TempDir()
	keyFile := filepath.Join(dir, "key")
	require.NoError(t, os.WriteFile(keyFile, []byte("k2\n"), 0o600))
	file := filepath.Join(dir, "probe.yaml")
	require.NoError(t, os.WriteFile(file, []byte("interval: 30s\nmodel: m\nmaxTokens: 16\napiKeyFile: "+keyFile+"\nendpoints:\n  - name: vllm-a\n    url: http://vllm:8000\n"), 0o600))
	c, err = ParseFlags([]string{"--config", file, "--listen", ":1"}, env(nil), io.Discard)
	require.NoError(t, err)
	assert.Equal(t, 30*time.Second, c.Interval)
	assert.Equal(t, "k2", c.APIKey)
	assert.Equal(t, ":1", c.Listen)
	assert.Equal(t, 16, c.MaxTokens)

	for args, want := range map[string]string{
		"--model m":                    "--endpoint",
		"--endpoint ftp://x --model m": "--endpoint 1",
		"--endpoint http://x":          "--model",
		"--endpoint http://x --model m --interval 100ms":            "--interval",
		"--endpoint http://x --model m --max-tokens 1":              "--max-tokens",
		"--endpoint http://x --model m --timeout 10m":               "--timeout",
		"--endpoint http://u:p@x --model m":                         "--api-key-file",
		"--config " + file + " --model m":                           "--model cannot be combined",
		"--endpoint http://x --model m --api-key-file /nonexistent": "--api-key-file",
	} {
		_, err := ParseFlags(strings.Fields(args), env(nil), io.Discard)
		require.Error(t, err, args)
		assert.Contains(t, err.Error(), want, args)
	}
	_, err = ParseFlags([]string{"--endpoint", "http://x", "--model", "m", "--api-key-file", keyFile}, env(map[string]string{APIKeyEnv: "k"}), io.Discard)
	assert.ErrorContains(t, err, "not both")
}

// Metrics returns the prober's metrics.
func (p *Prober) Metrics() *Metrics { return p.metrics }
