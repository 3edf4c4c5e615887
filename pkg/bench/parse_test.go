package bench

import (
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func read(t *testing.T, file string) []Baseline {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", file))
	require.NoError(t, err)
	bs, err := Parse(NameFromPath(file), data)
	require.NoError(t, err)
	return bs
}

// The fixtures are written from the tools' documented formats with round
// values; every expectation below is the fixture's number converted by hand
// (ms → s, ns → s).

func TestParseVLLMSaveResult(t *testing.T) {
	bs := read(t, "vllm-llama7b-rate5.json")
	require.Len(t, bs, 1)
	b := bs[0]
	assert.Equal(t, "vllm-llama7b-rate5", b.Name)
	assert.Equal(t, ToolVLLM, b.Tool)
	assert.Equal(t, "meta-llama/Llama-2-7b-chat-hf", b.Model)
	assert.Equal(t, 5.0, b.RequestThroughput)
	assert.Equal(t, 640.0, b.OutputThroughput)
	assert.Equal(t, 3200.0, b.TotalThroughput)
	assert.Equal(t, 5.0, b.RequestRate)
	assert.Equal(t, 32.0, b.Concurrency)
	assert.Equal(t, 100.0, b.Completed)
	assert.Equal(t, 512.0, b.MeanInputTokens)
	assert.Equal(t, 128.0, b.MeanOutputTokens)
	ttft := b.Stages["ttft"]
	assert.InDelta(t, 0.1205, ttft.Mean, 1e-12)
	assert.InDelta(t, 0.110, ttft.Median, 1e-12)
	assert.InDelta(t, 0.030, ttft.Std, 1e-12)
	assert.Equal(t, []float64{50, 90, 95, 99}, ps(ttft))
	v, ok := ttft.At(95)
	assert.True(t, ok)
	assert.InDelta(t, 0.210, v, 1e-12)
	itl := b.Stages["itl"]
	assert.Equal(t, []float64{50, 90, 95, 99, 99.9}, ps(itl))
	v, _ = itl.At(99.9)
	assert.InDelta(t, 0.095, v, 1e-12)
	e2e := b.Stages["e2e"]
	v, _ = e2e.At(99)
	assert.InDelta(t, 4.5, v, 1e-12)
	v, _ = b.Stages["tpot"].At(90)
	assert.InDelta(t, 0.026, v, 1e-12)
	assert.Contains(t, b.Summary(), "request rate 5 req/s, concurrency ≤ 32")
}

func TestParseVLLMBurstWithPythonNaN(t *testing.T) {
	b := read(t, "vllm-burst-default-percentiles.json")[0]
	assert.True(t, math.IsInf(b.RequestRate, 1), "request_rate \"inf\" is a burst")
	assert.True(t, math.IsNaN(b.Concurrency), "max_concurrency null is unlimited")
	// The default --metric-percentiles 99 plus the median listed as P50.
	assert.Equal(t, []float64{50, 99}, ps(b.Stages["ttft"]))
	v, _ := b.Stages["ttft"].At(50)
	assert.InDelta(t, 0.85, v, 1e-12)
	_, hasE2E := b.Stages["e2e"]
	assert.False(t, hasE2E, "e2el was not in --percentile-metrics")
	assert.Equal(t, "burst (request rate inf)", b.Load())
}

func TestParseGuideLLMSweep(t *testing.T) {
	bs := read(t, "guidellm-sweep.json")
	require.Len(t, bs, 2)
	s, c := bs[0], bs[1]
	assert.Equal(t, "guidellm-sweep#0", s.Name)
	assert.Equal(t, ToolGuideLLM, s.Tool)
	assert.Equal(t, "meta-llama/Llama-2-13b-chat-hf", s.Model)
	assert.Equal(t, 1.0, s.Concurrency, "synchronous runs one request at a time")
	assert.True(t, math.IsNaN(s.RequestRate))
	assert.Equal(t, 1.25, s.RequestThroughput)
	assert.Equal(t, 80.0, s.OutputThroughput)
	assert.Equal(t, 400.0, s.TotalThroughput)
	assert.Equal(t, 256.0, s.MeanInputTokens)
	ttft := s.Stages["ttft"]
	assert.Equal(t, []float64{0.1, 1, 5, 10, 25, 50, 75, 90, 95, 99, 99.9}, ps(ttft))
	v, _ := ttft.At(99.9)
	assert.InDelta(t, 0.099, v, 1e-12)
	v, _ = ttft.At(0.1)
	assert.InDelta(t, 0.040, v, 1e-12)
	// request_latency is in seconds already.
	v, _ = s.Stages["e2e"].At(95)
	assert.InDelta(t, 0.95, v, 1e-12)
	assert.Equal(t, 4.0, c.RequestRate)
	assert.Equal(t, 6.5, c.MeanConcurrency)
	v, _ = c.Stages["itl"].At(99)
	assert.InDelta(t, 0.033, v, 1e-12)
}

func TestParseGenAIPerf(t *testing.T) {
	b := read(t, "genai-perf-concurrency8.json")[0]
	assert.Equal(t, ToolGenAI, b.Tool)
	assert.Equal(t, "meta-llama/Llama-2-7b-chat-hf", b.Model)
	assert.Equal(t, 8.0, b.Concurrency)
	assert.True(t, math.IsNaN(b.RequestRate))
	assert.Equal(t, 3.2, b.RequestThroughput)
	assert.Equal(t, 409.6, b.OutputThroughput)
	// total = output + request rate × mean prompt = 409.6 + 3.2 × 550 = 2169.6
	assert.InDelta(t, 2169.6, b.TotalThroughput, 1e-9)
	ttft := b.Stages["ttft"]
	assert.Equal(t, []float64{25, 50, 75, 90, 95, 99}, ps(ttft))
	v, _ := ttft.At(95)
	assert.InDelta(t, 0.52, v, 1e-12)
	assert.InDelta(t, 0.25, ttft.Mean, 1e-12)
	v, _ = b.Stages["e2e"].At(99)
	assert.InDelta(t, 3.9, v, 1e-12)
	_, hasTPOT := b.Stages["tpot"]
	assert.False(t, hasTPOT)

	n := read(t, "genai-perf-stimulus.json")[0]
	assert.Equal(t, 1.5, n.RequestRate)
	assert.Equal(t, "qwen", n.Model)
	v, _ = n.Stages["ttft"].At(99)
	assert.InDelta(t, 0.65, v, 1e-12, "ns → s")
}

func TestBracket(t *testing.T) {
	m := Metric{Percentiles: []Percentile{{50, 1}, {90, 2}, {99, 3}}}
	lo, hi := m.Bracket(95)
	assert.Equal(t, Percentile{90, 2}, lo)
	assert.Equal(t, Percentile{99, 3}, hi)
	lo, hi = m.Bracket(99)
	assert.Equal(t, Percentile{99, 3}, lo)
	assert.Equal(t, Percentile{99, 3}, hi)
	lo, hi = m.Bracket(99.9)
	assert.Equal(t, Percentile{99, 3}, lo)
	assert.True(t, math.IsNaN(hi.P))
}

func TestParseRejectsWithASentenceNamingTheField(t *testing.T) {
	cases := map[string]string{
		`[1,2]`:                          "x: not a JSON object",
		`{"foo": 1}`:                     "x: neither a vllm bench serve result",
		`{"request_throughput": "fast"}`: `x: request_throughput: "fast" is not a number`,
		`{"request_throughput": 1, "p99_ttft_ms": -3}`: "x: p99_ttft_ms: -3 is not a latency",
		`{"benchmarks": []}`:                           "x: benchmarks: the report holds no benchmark",
		`{"benchmarks": [{}]}`:                         "x: benchmarks[0].metrics: missing",
		`{"benchmarks": [{"metrics": {"time_to_first_token_ms": {"successful": {"percentiles": {"p50": "x"}}}}}]}`: `x: benchmarks[0].metrics.time_to_first_token_ms.successful.percentiles.p50: "x" is not a number`,
		`{"time_to_first_token": {"unit": "furlongs", "avg": 3}}`:                                                  `x: time_to_first_token.unit: "furlongs" is not a time unit`,
		`{"request_throughput": {"avg": 1}, "input_config": {"concurrency": -2}}`:                                  "x: input_config.concurrency: -2 must be",
		`{"completed": 3}`: "x: a vllm result without any latency statistic or throughput",
	}
	for in, want := range cases {
		_, err := Parse("x", []byte(in))
		if assert.Error(t, err, in) {
			assert.True(t, strings.HasPrefix(err.Error(), want), "%s: got %q, want prefix %q", in, err, want)
		}
	}
}

func TestPythonJSONLeavesStringsAlone(t *testing.T) {
	got := string(pythonJSON([]byte(`{"a": NaN, "b": "NaN Infinity", "c": -Infinity, "d": Infinity, "e": "\"NaN"}`)))
	assert.Equal(t, `{"a": "NaN", "b": "NaN Infinity", "c": "-inf", "d": "inf", "e": "\"NaN"}`, got)
}

func TestExpectationsLookupAndValidate(t *testing.T) {
	tbl := DefaultExpectations()
	e, ok := Lookup(tbl, "meta-llama/Llama-2-7b-chat-hf", "1xa100")
	require.True(t, ok)
	assert.Equal(t, 800.0, e.TokensPerSecond)
	assert.Equal(t, 0.5, e.TTFTP95)
	e, ok = Lookup(tbl, "meta-llama/Llama-2-70b-chat-hf", "2xA100")
	require.True(t, ok)
	assert.Equal(t, 1.5, e.TTFTP95, "70B is not 7B")
	_, ok = Lookup(tbl, "Llama-2-7B", "1xH100")
	assert.False(t, ok)
	e, _ = Lookup(tbl, "Qwen/Qwen2.5-72B-Instruct", "2xA100")
	assert.Equal(t, 250.0, e.TokensPerSecond)
	for i, e := range tbl {
		assert.NoError(t, e.Validate("expectedPerformance[0]"), i)
	}
	bad := tbl[0]
	bad.GPUUtilisation = 70
	assert.EqualError(t, bad.Validate("expectedPerformance[0]"), "expectedPerformance[0].gpuUtilisation: 70 must be a ratio in (0, 1], such as 0.7 for 70 %")
}

func ps(m Metric) []float64 {
	var out []float64
	for _, p := range m.Percentiles {
		out = append(out, p.P)
	}
	return out
}

func TestCheckLatencyBracketRule(t *testing.T) {
	b := read(t, "vllm-burst-default-percentiles.json")[0] // TTFT p50 850 ms, p99 1500 ms
	cases := []struct {
		threshold, target float64
		want              Outcome
	}{
		{1.0, 0.95, Possibly},  // p50 0.85 ≤ 1 < 1.5 = p99: p95 could be either side
		{2.0, 0.95, Met},       // p99 1.5 ≤ 2 bounds p95
		{0.8, 0.95, Breached},  // p50 0.85 > 0.8 already
		{1.5, 0.99, Met},       // reported exactly, at the threshold
		{1.49, 0.99, Breached}, // reported exactly, above
		{2.0, 0.999, Possibly}, // nothing reported above p99
	}
	for _, c := range cases {
		got := CheckLatency(b, "ttft", c.threshold, c.target)
		assert.Equal(t, c.want, got.Outcome, "threshold %v target %v: %s", c.threshold, c.target, got.Reason)
	}
	got := CheckLatency(b, "e2e", 10, 0.99)
	assert.Equal(t, Possibly, got.Outcome)
	assert.Contains(t, got.Reason, "does not report e2e")

	v := read(t, "vllm-llama7b-rate5.json")[0] // 100 of 100 prompts completed
	e := CheckError(v, 0.99)
	assert.Equal(t, Met, e.Outcome)
	g := read(t, "guidellm-sweep.json")[0] // 40 successful, 0 errored
	assert.Equal(t, Met, CheckError(g, 0.999).Outcome)
	assert.Equal(t, Possibly, CheckError(read(t, "genai-perf-concurrency8.json")[0], 0.99).Outcome)
}

func TestReadDirKeepsGoodFilesBesideBadOnes(t *testing.T) {
	fsys := fstest.MapFS{
		"good.json":      {Data: []byte(`{"request_throughput": 2, "p99_ttft_ms": 300}`)},
		"broken.json":    {Data: []byte(`{"request_throughput": `)},
		"sweep.json":     {Data: []byte(`{"benchmarks": [{"metrics": {"requests_per_second": {"successful": {"mean": 1}}}}, {"metrics": {"requests_per_second": {"successful": {"mean": 2}}}}]}`)},
		"notes.txt":      {Data: []byte(`ignored`)},
		"bad name!.json": {Data: []byte(`{}`)},
	}
	d := ReadDir(fsys)
	assert.Equal(t, []string{"good", "sweep#0", "sweep#1"}, d.Names())
	v, _ := d.Baselines["good"].Stages["ttft"].At(99)
	assert.InDelta(t, 0.3, v, 1e-12)
	require.Len(t, d.Problems, 2)
	assert.Contains(t, d.Problems[0], "bad name!.json: the file name is not a usable baseline name")
	assert.Contains(t, d.Problems[1], "broken: not a JSON object")
}
