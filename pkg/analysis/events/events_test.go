package events

import (
	"fmt"
	"testing"
	"time"

	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/inferscope/inferscope-llm-datasource/pkg/analysis/sanity"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// at is the k-th 15 s scrape.
func at(k int) model.Time {
	return model.TimeFromUnixNano(t0.Add(time.Duration(k) * 15 * time.Second).UnixNano())
}

func series(labels model.Metric, vals ...float64) *model.SampleStream {
	s := &model.SampleStream{Metric: labels}
	for k, v := range vals {
		s.Values = append(s.Values, model.SamplePair{Timestamp: at(k), Value: model.SampleValue(v)})
	}
	return s
}

func in() Input {
	return Input{Target: "a", Interval: 15 * time.Second, From: t0, To: t0.Add(time.Hour)}
}

func TestCounterResetAndBackwards(t *testing.T) {
	x := in()
	x.Counters = model.Matrix{
		// 100 → 2 at scrape 3: a reset (2 ≤ 10 % of 100); 400 → 300 at scrape 7: backwards.
		series(model.Metric{"__name__": "vllm:request_success_total", "finished_reason": "stop"}, 50, 80, 100, 2, 150, 300, 400, 300, 350),
		// Another series resets at the same scrape: the same restart.
		series(model.Metric{"__name__": "vllm:prompt_tokens_total"}, 500, 800, 1000, 20, 1500, 3000, 4000, 4100, 4200),
	}
	evs := Detect(x)
	require.Len(t, evs, 2, "%+v", evs)
	assert.Equal(t, Restart, evs[0].Kind)
	assert.Equal(t, at(3).Time(), evs[0].Time)
	assert.Contains(t, evs[0].Text, "vllm:prompt_tokens_total, vllm:request_success_total")
	assert.Equal(t, []string{"restart", "a"}, evs[0].Tags)
	assert.Equal(t, CounterBackwards, evs[1].Kind)
	assert.Equal(t, at(7).Time(), evs[1].Time)
	assert.Contains(t, evs[1].Text, `vllm:request_success_total{finished_reason="stop"} went from 400 to 300`)
}

func TestDownPeriodAndModelChange(t *testing.T) {
	x := in()
	x.DownError = "connection refused"
	x.Errors = []ScrapeError{{At: at(2).Time(), Error: "HTTP 503"}, {At: at(3).Time(), Error: "HTTP 503"}}
	x.Up = model.Matrix{series(model.Metric{"__name__": "up"}, 1, 1, 0, 0, 1, 1, 0)}
	// Model a until scrape 3, nothing while down, b from scrape 4.
	a := series(model.Metric{"model_name": "a"}, 1, 1)
	b := &model.SampleStream{Metric: model.Metric{"model_name": "b"}}
	for k := 4; k < 7; k++ {
		b.Values = append(b.Values, model.SamplePair{Timestamp: at(k), Value: 1})
	}
	x.Models = model.Matrix{a, b}
	evs := Detect(x)
	require.Len(t, evs, 3, "%+v", evs)
	assert.Equal(t, Down, evs[0].Kind)
	assert.Equal(t, at(2).Time(), evs[0].Time)
	assert.Equal(t, at(4).Time(), evs[0].TimeEnd)
	assert.Contains(t, evs[0].Text, "scrape errors: HTTP 503 (2×)")
	assert.Equal(t, ModelChange, evs[1].Kind)
	assert.Equal(t, at(4).Time(), evs[1].Time)
	assert.Contains(t, evs[1].Text, "served a and now serves b")
	assert.Equal(t, Down, evs[2].Kind)
	assert.Equal(t, at(6).Time(), evs[2].Time)
	assert.Contains(t, evs[2].Text, "scrape error: connection refused")
}

func TestEngineAndConfigChange(t *testing.T) {
	x := in()
	name := func(n string, from, to int) *model.SampleStream {
		s := &model.SampleStream{Metric: model.Metric{"__name__": model.LabelValue(n)}}
		for k := from; k < to; k++ {
			s.Values = append(s.Values, model.SamplePair{Timestamp: at(k), Value: 1})
		}
		return s
	}
	// vLLM 0.10 (time_per_output_token without inter_token_latency) until
	// scrape 5, then 0.13+ (inter_token_latency only, prompt_tokens_cached).
	// A family appearing late (e2e from scrape 2) only narrows: no event.
	x.Names = model.Matrix{
		name("vllm:time_per_output_token_seconds_bucket", 0, 5),
		name("vllm:kv_cache_usage_perc", 0, 10),
		name("vllm:gpu_cache_usage_perc", 0, 5), // deprecated name, still there in 0.10
		name("vllm:e2e_request_latency_seconds_bucket", 2, 10),
		name("vllm:inter_token_latency_seconds_bucket", 5, 10),
		name("vllm:prompt_tokens_cached_total", 5, 10),
	}
	x.Config = model.Matrix{
		series(model.Metric{"__name__": "vllm:cache_config_info", "block_size": "16", "engine": "0"}, 1, 1, 1),
		{Metric: model.Metric{"__name__": "vllm:cache_config_info", "block_size": "32", "engine": "0"}, Values: []model.SamplePair{{Timestamp: at(3), Value: 1}}},
	}
	evs := Detect(x)
	require.Len(t, evs, 2, "%+v", evs)
	assert.Equal(t, ConfigChange, evs[0].Kind)
	assert.Equal(t, at(3).Time(), evs[0].Time)
	assert.Contains(t, evs[0].Text, `before block_size="16"; after block_size="32"`)
	assert.Equal(t, EngineChange, evs[1].Kind)
	assert.Equal(t, at(5).Time(), evs[1].Time)
	assert.Contains(t, evs[1].Text, "vllm v1 0.9-0.10")
	assert.Contains(t, evs[1].Text, "0.13+")
}

// TestRestartRuleIsTheQueries: a multiprocess vLLM page has no process_start_time_seconds. Its
// counters fall from 90 to 10 at scrape 2: below half, so a restart by sanity.ResetRule, the
// rule the latency and throughput queries apply (they found "a restart" there while this
// query said "counter went backwards … another process's counters"). The sentence says the
// restart rests on the counters alone. A fall from 100 to 60 (at least half) is backwards in
// both.
func TestRestartRuleIsTheQueries(t *testing.T) {
	x := in()
	x.Counters = model.Matrix{
		series(model.Metric{"__name__": "vllm:request_success_total", "finished_reason": "stop"}, 70, 90, 10, 20, 30),
		series(model.Metric{"__name__": "vllm:prompt_tokens_total"}, 600, 800, 900, 1000, 1100, 1200, 100, 150, 200, 220, 120),
	}
	evs := Detect(x)
	require.Len(t, evs, 3, "%+v", evs)
	assert.Equal(t, Restart, evs[0].Kind)
	assert.Equal(t, at(2).Time(), evs[0].Time)
	assert.Equal(t, "a restarted: counters fell to less than half their value (vllm:request_success_total); a restart by the counters alone: this page exports no process_start_time_seconds to confirm it. Rates over windows that span it count from zero again.", evs[0].Text)
	assert.Equal(t, Restart, evs[1].Kind, "1200 → 100")
	assert.Equal(t, at(6).Time(), evs[1].Time)
	assert.Equal(t, CounterBackwards, evs[2].Kind, "220 → 120")
	assert.Contains(t, evs[2].Text, "vllm:prompt_tokens_total went from 220 to 120, still at least half its value, so not a restart")
	// The queries' classification of the same steps.
	assert.True(t, sanity.IsRestart(90, 10))
	assert.False(t, sanity.IsBackwards(90, 10))
	assert.True(t, sanity.IsBackwards(100, 60))
	assert.Empty(t, sanity.CounterBackwards("requests_finished", x.Counters[:1], ""), "the latency/throughput rule finds no backwards step where events finds a restart")
	assert.Len(t, sanity.CounterBackwards("prompt_tokens", x.Counters[1:], ""), 1)

	// With process_start_time_seconds on the page the sentence does not say it is missing.
	x.StartTimes = model.Matrix{series(model.Metric{"__name__": "process_start_time_seconds"}, 1e9, 1e9, 1e9+30)}
	evs = Detect(x)
	assert.NotContains(t, evs[0].Text, "no process_start_time_seconds")
	assert.Contains(t, evs[0].Text, "process_start_time_seconds moved")
}

// BenchmarkDetectSteady is one target's events evidence over 6 h at 15 s steps (1441) with
// nothing happening: 30 metric names and 2 models present at every step, 5 counters.
func BenchmarkDetectSteady(b *testing.B) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	steps := func(v float64, grow bool) []model.SamplePair {
		out := make([]model.SamplePair, 1441)
		for k := range out {
			out[k] = model.SamplePair{Timestamp: model.TimeFromUnixNano(t0.Add(time.Duration(k) * 15 * time.Second).UnixNano()), Value: model.SampleValue(v)}
			if grow {
				v++
			}
		}
		return out
	}
	in := Input{Target: "t", Interval: 15 * time.Second, From: t0, To: t0.Add(6 * time.Hour)}
	for k := 0; k < 30; k++ {
		in.Names = append(in.Names, &model.SampleStream{Metric: model.Metric{"__name__": model.LabelValue(fmt.Sprintf("vllm:metric_%02d", k))}, Values: steps(1, false)})
	}
	for _, m := range []string{"a", "b"} {
		in.Models = append(in.Models, &model.SampleStream{Metric: model.Metric{"model_name": model.LabelValue(m)}, Values: steps(1, false)})
	}
	for k := 0; k < 5; k++ {
		in.Counters = append(in.Counters, &model.SampleStream{Metric: model.Metric{"__name__": model.LabelValue(fmt.Sprintf("c_%d_total", k))}, Values: steps(0, true)})
	}
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if len(Detect(in)) != 0 {
			b.Fatal("events where nothing happened")
		}
	}
}
