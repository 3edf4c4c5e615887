package main

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func fixture(name string) string { return filepath.Join("..", "..", "bench", "testdata", name) }

func check(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errb bytes.Buffer
	code := run(context.Background(), append([]string{"check"}, args...), &out, &errb)
	return code, out.String(), errb.String()
}

func writeSettings(t *testing.T, jsonData string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "ds.json")
	require.NoError(t, os.WriteFile(p, []byte(`{"name":"inferscope","jsonData":`+jsonData+`}`), 0o600))
	return p
}

// The fixture's P99 TPOT is 35 ms: the default code-completion profile
// (TPOT ≤ 30 ms) is breached for sure, interactive chat (TPOT ≤ 50 ms) and
// batch analysis (≤ 200 ms, TTFT ≤ 30 s against a P99 of 400 ms) are met.
// The service profile's availability objective is not a benchmark's to
// judge: skipped, and said so on stderr.
func TestCheckBenchExitCodes(t *testing.T) {
	code, out, errs := check(t, "--bench", fixture("vllm-llama7b-rate5.json"))
	assert.Equal(t, exitBreached, code)
	assert.Contains(t, out, "p99 tpot = 35 ms > 30 ms")
	assert.Contains(t, out, "p99 tpot = 35 ms ≤ 50 ms")
	assert.NotContains(t, out, "availability")
	assert.Contains(t, errs, "service/availability skipped")

	code, out, _ = check(t, "--bench", fixture("vllm-llama7b-rate5.json"), "--profile", "batch-analysis")
	assert.Equal(t, exitMet, code, out)

	// The burst file reports TTFT p50 850 ms and p99 1500 ms only: a P95
	// objective at 1 s cannot be decided (2), at 2 s it is met (0), at
	// 800 ms breached (1).
	for _, c := range []struct {
		threshold string
		want      int
	}{{"1", exitPossibly}, {"2", exitMet}, {"0.8", exitBreached}} {
		ds := writeSettings(t, `{"sloProfiles":[{"name":"chat-p95","objectives":[{"name":"ttft-p95","signal":"ttft","threshold":`+c.threshold+`,"target":0.95}]}]}`)
		code, out, errs := check(t, "--bench", fixture("vllm-burst-default-percentiles.json"), "--settings", ds)
		assert.Equal(t, c.want, code, "threshold %s: %s%s", c.threshold, out, errs)
	}

	// genai-perf reports no TPOT: a TPOT objective is possibly breached, never met.
	ds := writeSettings(t, `{"sloProfiles":[{"name":"tpot","objectives":[{"name":"tpot-p99","signal":"tpot","threshold":1,"target":0.99}]}]}`)
	code, out, _ = check(t, "--bench", fixture("genai-perf-concurrency8.json"), "--settings", ds)
	assert.Equal(t, exitPossibly, code)
	assert.Contains(t, out, "does not report tpot")

	// GuideLLM: both benchmarks of the sweep are checked (P99 ITL 16 and 33 ms ≤ 50 ms).
	code, out, _ = check(t, "--bench", fixture("guidellm-sweep.json"), "--profile", "interactive-chat")
	assert.Equal(t, exitMet, code)
	assert.Contains(t, out, "guidellm-sweep#1")
}

func TestCheckUsageAndInputErrors(t *testing.T) {
	bad := filepath.Join(t.TempDir(), "bad.json")
	require.NoError(t, os.WriteFile(bad, []byte(`{"request_throughput": "fast"}`), 0o600))
	cases := []struct {
		args []string
		want string
	}{
		{nil, "give exactly one of --bench or --prometheus"},
		{[]string{"--bench", bad}, `bad: request_throughput: "fast" is not a number`},
		{[]string{"--bench", "no-such-file.json"}, "--bench:"},
		{[]string{"--bench", fixture("vllm-llama7b-rate5.json"), "--profile", "nope"}, `--profile: "nope" is not one of interactive-chat, code-completion, batch-analysis`},
		{[]string{"--bench", fixture("vllm-llama7b-rate5.json"), "--prometheus", "http://127.0.0.1:1"}, "exactly one"},
		{[]string{"--bench", fixture("vllm-llama7b-rate5.json"), "--from", "now-1h"}, "apply to --prometheus only"},
		{[]string{"--prometheus", "http://127.0.0.1:1", "--from", "yesterday", "--to", "now"}, `--from: "yesterday" is neither`},
		{[]string{"--prometheus", "http://127.0.0.1:1", "--from", "now", "--to", "now-1h"}, "is not after --from"},
		{[]string{"--bogus"}, "flag provided but not defined"},
		{[]string{"--bench", fixture("vllm-llama7b-rate5.json"), "--settings", writeSettings(t, `{"sloProfiles":[{"name":"x","objectives":[{"name":"o","signal":"ttft","threshold":1,"target":2}]}]}`)}, "sloProfiles[0].objectives[0].target"},
	}
	for _, c := range cases {
		code, _, errs := check(t, c.args...)
		assert.Equal(t, exitUsage, code, c.args)
		assert.Contains(t, errs, c.want, c.args)
	}
	var out, errb bytes.Buffer
	assert.Equal(t, exitUsage, run(context.Background(), []string{"gate"}, &out, &errb))
	assert.Contains(t, errb.String(), "usage:")
}

// A Prometheus-compatible server answering the instant bucket query with a
// hand-made TTFT histogram of rates: le 0.5 → 90, 1 → 99.5, 2.5 → 100, +Inf
// → 100 requests/s. Attainment at 1 s is exactly 0.995; at 0.8 s it is only
// known to lie in [0.9, 0.995]; at 0.5 s it is exactly 0.9.
func TestCheckPrometheusExitCodes(t *testing.T) {
	var queries []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		require.NoError(t, r.ParseForm())
		q := r.Form.Get("query")
		queries = append(queries, q)
		w.Header().Set("Content-Type", "application/json")
		if !strings.Contains(q, "time_to_first_token") {
			fmt.Fprint(w, `{"status":"success","data":{"resultType":"vector","result":[]}}`)
			return
		}
		fmt.Fprint(w, `{"status":"success","data":{"resultType":"vector","result":[`+
			`{"metric":{"le":"0.5"},"value":[1764583200,"90"]},`+
			`{"metric":{"le":"1.0"},"value":[1764583200,"99.5"]},`+
			`{"metric":{"le":"2.5"},"value":[1764583200,"100"]},`+
			`{"metric":{"le":"+Inf"},"value":[1764583200,"100"]}]}}`)
	}))
	defer srv.Close()
	for _, c := range []struct {
		threshold string
		want      int
	}{{"1", exitMet}, {"0.8", exitPossibly}, {"0.5", exitBreached}} {
		ds := writeSettings(t, `{"sloProfiles":[{"name":"p","objectives":[{"name":"ttft-p99","signal":"ttft","threshold":`+c.threshold+`,"target":0.99}]}]}`)
		code, out, errs := check(t, "--prometheus", srv.URL, "--from", "2026-12-01T09:00:00Z", "--to", "2026-12-01T10:00:00Z", "--settings", ds)
		assert.Equal(t, c.want, code, "threshold %s: %s%s", c.threshold, out, errs)
	}
	require.NotEmpty(t, queries)
	assert.Contains(t, queries[0], "[1h]", "one window over the whole range")

	// An ITL objective finds no series: possibly breached, with the reason.
	code, out, _ := check(t, "--prometheus", srv.URL, "--from", "1764579600", "--to", "1764583200", "--profile", "batch-analysis")
	assert.Equal(t, exitPossibly, code)
	assert.Contains(t, out, "no series for this signal")

	// A server that fails is an input error.
	srv.Close()
	code, _, errs := check(t, "--prometheus", srv.URL, "--from", "now-1h", "--to", "now")
	assert.Equal(t, exitUsage, code)
	assert.Contains(t, errs, "--prometheus")
}

// --gpu adds the expected-performance row of the result's model: the
// Llama-2-7B fixture reaches 640 output tok/s against the 800 expected on
// one A100 (breached), P95 TTFT 210 ms ≤ 500 ms and P95 ITL 40 ms ≤ 50 ms (met).
func TestCheckExpectedPerformance(t *testing.T) {
	code, out, errs := check(t, "--bench", fixture("vllm-llama7b-rate5.json"), "--profile", "batch-analysis", "--gpu", "1xA100")
	assert.Equal(t, exitBreached, code, errs)
	assert.Contains(t, out, "640 tok/s < 800 expected for Llama-2-7B on 1xA100")
	assert.Contains(t, out, "p95 itl = 40 ms ≤ 50 ms")

	ds := writeSettings(t, `{"expectedPerformance":[{"model":"Llama-2-7B","gpu":"1xA100","tokensPerSecond":600,"ttftP95":0.5,"itlP95":0.05,"gpuUtilisation":0.7}]}`)
	code, out, _ = check(t, "--bench", fixture("vllm-llama7b-rate5.json"), "--profile", "batch-analysis", "--gpu", "1xA100", "--settings", ds)
	assert.Equal(t, exitMet, code, out)

	code, _, errs = check(t, "--bench", fixture("vllm-llama7b-rate5.json"), "--gpu", "1xH100")
	assert.Equal(t, exitUsage, code)
	assert.Contains(t, errs, `no row for model "meta-llama/Llama-2-7b-chat-hf" on 1xH100`)
	code, _, _ = check(t, "--prometheus", "http://127.0.0.1:1", "--from", "now-1h", "--to", "now", "--gpu", "1xA100")
	assert.Equal(t, exitUsage, code)
}
