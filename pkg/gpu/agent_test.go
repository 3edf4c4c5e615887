package gpu

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/inferscope/inferscope-llm-datasource/pkg/catalog"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// fakeSource is a cgo-free Source: it serves a fixed snapshot (or error) and
// XID events pushed on a channel.
type fakeSource struct {
	mu      sync.Mutex
	snap    Snapshot
	err     error
	samples atomic.Int64
	xid     chan XIDEvent
	noXID   bool
	closed  atomic.Int64
}

func (f *fakeSource) Sample() (Snapshot, error) {
	f.samples.Add(1)
	f.mu.Lock()
	defer f.mu.Unlock()
	s := f.snap
	s.Time = time.Now()
	return s, f.err
}

func (f *fakeSource) WaitXID(timeout time.Duration) ([]XIDEvent, error) {
	if f.noXID {
		return nil, ErrNoEvents
	}
	select {
	case e := <-f.xid:
		return []XIDEvent{e}, nil
	case <-time.After(timeout):
		return nil, nil
	}
}

func (f *fakeSource) Close() error { f.closed.Add(1); return nil }

var (
	gpuA = Identity{Index: 0, UUID: "GPU-a", Name: "NVIDIA H200"}
	migA = Identity{Index: 0, UUID: "MIG-a1", Name: "NVIDIA H200 MIG 3g.71gb", MIG: true, GPUInstanceID: 2, ComputeInstanceID: 0}
)

func newFake() *fakeSource {
	return &fakeSource{xid: make(chan XIDEvent, 4), snap: Snapshot{
		Devices: []DeviceSample{
			{Identity: gpuA, Values: []Reading{
				{Family: Power, Value: 300},
				{Family: ThrottleReason, Label: "power_cap", Value: 1},
			}},
			{Identity: migA, Values: []Reading{{Family: FBUsed, Value: 1024}}},
		},
		ReadErrors: 2,
	}}
}

func newTestAgent(t *testing.T, src Source) *Agent {
	t.Helper()
	a, err := NewAgent(src, AgentOptions{Interval: time.Hour, Hostname: "node-a", XIDWait: 10 * time.Millisecond})
	require.NoError(t, err)
	t.Cleanup(func() { _ = a.Close() })
	return a
}

func TestAgentServesCachedSnapshotWithMIGLabels(t *testing.T) {
	src := newFake()
	a := newTestAgent(t, src)
	reg := prometheus.NewRegistry()
	require.NoError(t, reg.Register(a.Collector()))

	want := exposition(t, `
inferscope_gpu_power_watts{$g} 300
inferscope_gpu_throttle_reason{$g,reason="power_cap"} 1
inferscope_gpu_fb_used_bytes{$m} 1024
`, map[string]string{
		"g": `gpu="0",uuid="GPU-a",name="NVIDIA H200",hostname="node-a"`,
		"m": `gpu="0",uuid="MIG-a1",name="NVIDIA H200 MIG 3g.71gb",hostname="node-a",gpu_instance_id="2",compute_instance_id="0"`,
	})
	require.NoError(t, testutil.GatherAndCompare(reg, strings.NewReader(want), allFamilyNames()...))

	// Scrapes read the cache: the source was sampled once (in NewAgent) however
	// often we gather.
	for range 5 {
		_, err := reg.Gather()
		require.NoError(t, err)
	}
	assert.Equal(t, int64(1), src.samples.Load())

	// Agent counters: 2 read errors from the one sample, no failed sample.
	require.NoError(t, testutil.GatherAndCompare(reg, strings.NewReader(`
# HELP inferscope_gpu_agent_read_errors_total Single NVML reads that failed with an error other than not supported since the agent started.
# TYPE inferscope_gpu_agent_read_errors_total counter
inferscope_gpu_agent_read_errors_total{hostname="node-a"} 2
# HELP inferscope_gpu_agent_sample_errors_total GPU samples that failed as a whole since the agent started.
# TYPE inferscope_gpu_agent_sample_errors_total counter
inferscope_gpu_agent_sample_errors_total{hostname="node-a"} 0
`), NameReadErrors, NameSampleErrors))
	require.NoError(t, a.Healthy())
}

func TestAgentCountsXIDPerGPUAndXID(t *testing.T) {
	src := newFake()
	a := newTestAgent(t, src)
	src.xid <- XIDEvent{Identity: gpuA, XID: 79}
	src.xid <- XIDEvent{Identity: gpuA, XID: 79}
	src.xid <- XIDEvent{Identity: gpuA, XID: 13}
	reg := prometheus.NewRegistry()
	require.NoError(t, reg.Register(a.Collector()))
	want := exposition(t, `
inferscope_gpu_xid_errors_total{$g,xid="13"} 1
inferscope_gpu_xid_errors_total{$g,xid="79"} 2
`, map[string]string{"g": `gpu="0",uuid="GPU-a",name="NVIDIA H200",hostname="node-a"`})
	require.Eventually(t, func() bool {
		return testutil.GatherAndCompare(reg, strings.NewReader(want), NameXIDErrors) == nil
	}, 5*time.Second, 10*time.Millisecond)
}

func TestAgentFailedSampleDropsSeriesAndFailsHealth(t *testing.T) {
	src := newFake()
	a := newTestAgent(t, src)
	src.mu.Lock()
	src.err = errors.New("driver went away")
	src.mu.Unlock()
	a.sampleOnce()

	reg := prometheus.NewRegistry()
	require.NoError(t, reg.Register(a.Collector()))
	n, err := testutil.GatherAndCount(reg, NamePower, NameFBUsed, NameLastSample)
	require.NoError(t, err)
	assert.Zero(t, n, "a failed sample must not keep serving stale values")
	require.NoError(t, testutil.GatherAndCompare(reg, strings.NewReader(`
# HELP inferscope_gpu_agent_sample_errors_total GPU samples that failed as a whole since the agent started.
# TYPE inferscope_gpu_agent_sample_errors_total counter
inferscope_gpu_agent_sample_errors_total{hostname="node-a"} 1
`), NameSampleErrors))

	rec := httptest.NewRecorder()
	NewHandler(a, "").ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/healthz", nil))
	assert.Equal(t, http.StatusServiceUnavailable, rec.Code)
	assert.Contains(t, rec.Body.String(), "driver went away")
}

func TestAgentLostGPUFailsHealth(t *testing.T) {
	src := newFake()
	src.snap.Devices = append(src.snap.Devices, DeviceSample{Identity: Identity{Index: 1, UUID: "GPU-b"}, Err: errors.New("GPU is lost")})
	a := newTestAgent(t, src)
	err := a.Healthy()
	require.Error(t, err)
	assert.Contains(t, err.Error(), "GPU 1 (GPU-b)")
}

func TestAgentRejectsBadOptions(t *testing.T) {
	_, err := NewAgent(nil, AgentOptions{Interval: time.Second})
	require.Error(t, err)
	_, err = NewAgent(newFake(), AgentOptions{Interval: time.Millisecond})
	require.ErrorContains(t, err, "shorter than the minimum")
}

func TestAgentCloseStopsGoroutinesAndClosesSourceOnce(t *testing.T) {
	src := newFake()
	src.noXID = true
	a, err := NewAgent(src, AgentOptions{Interval: MinInterval})
	require.NoError(t, err)
	require.Eventually(t, func() bool { return src.samples.Load() >= 3 }, 5*time.Second, 10*time.Millisecond)
	require.NoError(t, a.Close())
	require.NoError(t, a.Close())
	n := src.samples.Load()
	time.Sleep(2 * MinInterval)
	assert.Equal(t, n, src.samples.Load(), "no sampling after Close")
	assert.Equal(t, int64(1), src.closed.Load())
}

func TestHandlerBearerToken(t *testing.T) {
	a := newTestAgent(t, newFake())
	h := NewHandler(a, "s3cret")
	for _, tc := range []struct {
		auth string
		code int
	}{
		{"", http.StatusUnauthorized},
		{"Bearer wrong", http.StatusUnauthorized},
		{"bearer s3cret", http.StatusUnauthorized},
		{"Bearer s3cret", http.StatusOK},
	} {
		req := httptest.NewRequest(http.MethodGet, "/metrics", nil)
		if tc.auth != "" {
			req.Header.Set("Authorization", tc.auth)
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		assert.Equal(t, tc.code, rec.Code, "Authorization %q", tc.auth)
		if tc.code == http.StatusOK {
			assert.Contains(t, rec.Body.String(), `inferscope_gpu_power_watts{gpu="0",hostname="node-a",name="NVIDIA H200",uuid="GPU-a"} 300`)
		}
	}
	// /healthz needs no token.
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/healthz", nil))
	assert.Equal(t, http.StatusOK, rec.Code)
	assert.Equal(t, "ok\n", rec.Body.String())
}

func TestHandlerPagePassesPromtool(t *testing.T) {
	a := newTestAgent(t, newFake())
	rec := httptest.NewRecorder()
	NewHandler(a, "").ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	require.Equal(t, http.StatusOK, rec.Code)
	promtoolCheck(t, rec.Body.Bytes())
}

func TestParseFlags(t *testing.T) {
	dir := t.TempDir()
	tokenFile := filepath.Join(dir, "token")
	require.NoError(t, os.WriteFile(tokenFile, []byte("abc\n"), 0o600))
	empty := filepath.Join(dir, "empty")
	require.NoError(t, os.WriteFile(empty, nil, 0o600))
	env := func(v string) func(string) string {
		return func(k string) string {
			if k == TokenEnv {
				return v
			}
			return ""
		}
	}

	cfg, err := ParseFlags([]string{"--listen", "127.0.0.1:9999", "--interval", "2s", "--bearer-token-file", tokenFile, "--hostname", "h1"}, env(""), io.Discard)
	require.NoError(t, err)
	assert.Equal(t, Config{Listen: "127.0.0.1:9999", Interval: 2 * time.Second, BearerToken: "abc", Hostname: "h1"}, cfg)

	cfg, err = ParseFlags([]string{"--hostname", "h1"}, env("fromenv"), io.Discard)
	require.NoError(t, err)
	assert.Equal(t, Config{Listen: DefaultListen, Interval: 5 * time.Second, BearerToken: "fromenv", Hostname: "h1"}, cfg)

	for _, tc := range []struct {
		args []string
		env  string
		want string
	}{
		{[]string{"--interval", "10ms"}, "", "shorter than the minimum"},
		{[]string{"--tls-cert", "c.pem"}, "", "--tls-cert and --tls-key"},
		{[]string{"--bearer-token-file", tokenFile}, "x", "not both"},
		{[]string{"--bearer-token-file", empty}, "", "is empty"},
		{[]string{"--bearer-token-file", filepath.Join(dir, "missing")}, "", "--bearer-token-file"},
		{[]string{"extra"}, "", "unexpected argument"},
		{[]string{"--interval", "soon"}, "", "invalid value"},
	} {
		_, err := ParseFlags(tc.args, env(tc.env), io.Discard)
		require.ErrorContains(t, err, tc.want, "args %v", tc.args)
	}
}

func TestServeOverLoopback(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	src := newFake()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- Serve(ctx, ln, Config{Interval: time.Hour, Hostname: "node-a", BearerToken: "t"}, src, nil)
	}()
	url := "http://" + ln.Addr().String()
	req, err := http.NewRequest(http.MethodGet, url+"/metrics", nil)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer t")
	var body []byte
	require.Eventually(t, func() bool {
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		body, _ = io.ReadAll(resp.Body)
		return resp.StatusCode == http.StatusOK
	}, 5*time.Second, 20*time.Millisecond)
	assert.Contains(t, string(body), "inferscope_gpu_fb_used_bytes")
	cancel()
	require.NoError(t, <-done)
	assert.Equal(t, int64(1), src.closed.Load())
}

func TestRunWithoutNVMLOrBadFlags(t *testing.T) {
	var stderr strings.Builder
	assert.Equal(t, 2, Run(context.Background(), []string{"--interval", "1ms"}, nil, &stderr))
	assert.Contains(t, stderr.String(), "shorter than the minimum")

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	stderr.Reset()
	code := Run(ctx, []string{"--listen", "127.0.0.1:0", "--hostname", "h"}, nil, &stderr)
	if code == 0 {
		t.Skip("NVML is present on this machine; the agent started and stopped cleanly")
	}
	assert.Equal(t, 1, code)
	assert.Regexp(t, "ERROR_LIBRARY_NOT_FOUND|NVML needs linux and cgo", stderr.String())
}

func TestCatalogNamesAreServed(t *testing.T) {
	for _, name := range catalog.AgentMetricNames {
		_, ok := specByName(name)
		assert.True(t, ok, "catalog name %s has no agent family", name)
	}
	spec, ok := specByName(catalog.AgentThrottleReason)
	require.True(t, ok)
	assert.Equal(t, catalog.AgentThrottleReasonLabel, spec.label)
}

func TestFamilyNames(t *testing.T) {
	seen := map[string]bool{}
	for f := Family(0); f < numFamilies; f++ {
		name := f.Name()
		require.NotEmpty(t, name, "family %d", f)
		require.True(t, strings.HasPrefix(name, "inferscope_gpu_"), name)
		require.False(t, seen[name], "duplicate %s", name)
		seen[name] = true
		if families[f].counter {
			require.True(t, strings.HasSuffix(name, "_total"), name)
		}
	}
	assert.Empty(t, Family(-1).Name())
	assert.Empty(t, numFamilies.Name())
}
