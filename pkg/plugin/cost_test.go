package plugin

import (
	"math"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/data"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"

	"github.com/inferscope/inferscope-llm-datasource/pkg/settings"
	"github.com/inferscope/inferscope-llm-datasource/pkg/source"
)

// costHistory stores ten minutes of two vLLM targets and one dcgm-exporter agent, scraped
// every 15 s, with rates chosen for hand computation:
//
//	a: 500 output tok/s, 1500 prompt tok/s (500 of them from the prefix cache), 2 req/s,
//	   running 0 on every other scrape (idle half the time); GPU 0: energy counter 700 W
//	   (in mJ, as dcgm-exporter stores it), power gauge 650 W.
//	b: 1000 output tok/s, 1000 prompt tok/s, 4 req/s, always busy; GPU 1: no energy
//	   counter, power gauge 400 W (the power × time fallback).
func costHistory(t *testing.T) (*handHistory, time.Time) {
	h := newHandHistory(t)
	t0 := time.Unix(1_700_000_100, 0) // a multiple of 15 s
	gpu := func(i string) map[string]string {
		return map[string]string{"gpu": i, "UUID": "GPU-" + i, "modelName": "NVIDIA H100 80GB HBM3", "Hostname": "node"}
	}
	for i := 0; i <= 40; i++ {
		ts := t0.Add(time.Duration(i) * 15 * time.Second)
		s := float64(i * 15)
		stop := map[string]string{"finished_reason": "stop"}
		h.sample(ts, "a", "vllm:generation_tokens_total", nil, 1e6+500*s)
		h.sample(ts, "a", "vllm:prompt_tokens_total", nil, 1e6+1500*s)
		h.sample(ts, "a", "vllm:prefix_cache_hits_total", nil, 1e6+500*s)
		h.sample(ts, "a", "vllm:prefix_cache_queries_total", nil, 2e6+1500*s)
		h.sample(ts, "a", "vllm:request_success_total", stop, 1e4+2*s)
		h.sample(ts, "a", "vllm:num_requests_running", nil, float64(4*(i%2)))
		h.sample(ts, "b", "vllm:generation_tokens_total", nil, 1e6+1000*s)
		h.sample(ts, "b", "vllm:prompt_tokens_total", nil, 1e6+1000*s)
		h.sample(ts, "b", "vllm:request_success_total", stop, 1e4+4*s)
		h.sample(ts, "b", "vllm:num_requests_running", nil, 8)
		h.sample(ts, "g", "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", gpu("0"), 5e9+700*1000*s)
		h.sample(ts, "g", "DCGM_FI_DEV_POWER_USAGE", gpu("0"), 650)
		h.sample(ts, "g", "DCGM_FI_DEV_POWER_USAGE", gpu("1"), 400)
	}
	h.instance()
	return h, t0
}

// costValues runs a cost query over the last minute of the history (5-minute window) and
// returns the last value of each series by target/stat[/bound].
func costValues(t *testing.T, h *handHistory, t0 time.Time, jsonData string) (map[string]float64, []data.Notice) {
	t.Helper()
	st, err := settings.Load([]byte(jsonData), nil)
	require.NoError(t, err)
	inst := newInstanceForTest(st, source.NewEmbedded(h.db, source.EmbeddedOptions{}))
	end := t0.Add(10 * time.Minute)
	dr := runQuery(t, inst, map[string]any{"queryType": "cost", "window": "5m"}, end.Add(-time.Minute), end, time.Minute)
	require.NoError(t, dr.Error)
	out := map[string]float64{}
	var notices []data.Notice
	for _, f := range dr.Frames {
		if f.Meta != nil && notices == nil {
			notices = f.Meta.Notices
		}
		v := f.Fields[1]
		k := v.Labels["target"] + "/" + v.Labels["stat"]
		if b := v.Labels["bound"]; b != "" {
			k += "/" + b
		}
		out[k] = reduceLastStrict(v)
	}
	return out, notices
}

const costTargets = `"targets":[
  {"name":"a","url":"http://a:8000/metrics","agent":"g","gpus":[0],"costPerHour":3.6},
  {"name":"b","url":"http://b:8000/metrics","agent":"g","gpus":[1]},
  {"name":"c","url":"http://c:8000/metrics"}],
 "gpuAgents":[{"name":"g","url":"http://g:9400/metrics","kind":"dcgm","costPerGPUHour":2.0}]`

// TestCostQueryHandComputed checks the cost query on the stored pages against costs computed
// by hand from the rates above and the prices in the settings.
func TestCostQueryHandComputed(t *testing.T) {
	h, t0 := costHistory(t)

	// Without an energy price: a costs its 3.6 per hour (0.001 per second).
	got, notices := costValues(t, h, t0, `{`+costTargets+`}`)
	want := map[string]float64{
		"a/cost_per_hour":                 3.6,
		"a/cost_per_1m_output_tokens":     2.00,   // 0.001 / 500 × 1e6: the example
		"a/cost_per_1m_tokens":            0.5,    // 0.001 / 2000 × 1e6
		"a/cost_per_request":              0.0005, // 0.001 / 2
		"a/idle_share":                    0.5,    // running 0 on every other scrape
		"a/idle_cost_per_hour":            1.8,
		"a/energy_per_output_token":       1.4, // 700 J/s (the counter, not the 650 W gauge) / 500
		"a/prefill_cost_per_hour":         2.4, // computed prompt 1000 of 1500 tokens
		"a/decode_cost_per_hour":          1.2,
		"a/prefix_cache_savings_per_hour": 1.2, // 500 tok/s × 0.001/1500 × 3600
		// b: 1 GPU × 2.0 per GPU-hour.
		"b/cost_per_hour":             2.0,
		"b/cost_per_1m_output_tokens": 2.0 / 3600 / 1000 * 1e6,
		"b/cost_per_1m_tokens":        2.0 / 3600 / 2000 * 1e6,
		"b/cost_per_request":          2.0 / 3600 / 4,
		"b/idle_share":                0,
		"b/idle_cost_per_hour":        0,
		"b/energy_per_output_token":   0.4, // 400 W (power × time) / 1000 tok/s
		"b/prefill_cost_per_hour":     1.0, // 1000 of 2000 tokens (no cache counter)
		"b/decode_cost_per_hour":      1.0,
		// c: no price, no agent.
		"c/idle_share": math.NaN(), "c/energy_per_output_token": math.NaN(),
	}
	assertCosts(t, want, got)
	texts := costNoticeTexts(notices)
	assert.Contains(t, texts, "no price for c: set targets[].costPerHour, or costPerGPUHour on its GPU agent, in the data source settings to see its cost")
	assert.Contains(t, texts, "energy of b is the mean power draw × time where no GPU energy counter (NVML total energy, DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION) is stored: an estimate from sampled power")

	// With 0.25 per kWh, in euros: a adds 0.7 kWh per hour (0.175), b 0.4 kWh (0.1).
	got, _ = costValues(t, h, t0, `{"currency":"EUR","energyPricePerKWh":0.25,`+costTargets+`}`)
	assert.InDelta(t, 3.775, got["a/cost_per_hour"], 1e-9)
	assert.InDelta(t, 0.175, got["a/energy_cost_per_hour"], 1e-9)
	assert.InDelta(t, 3.775/3600/500*1e6, got["a/cost_per_1m_output_tokens"], 1e-9)
	assert.InDelta(t, 2.1, got["b/cost_per_hour"], 1e-9)
	assert.InDelta(t, 0.1, got["b/energy_cost_per_hour"], 1e-9)
}

func assertCosts(t *testing.T, want, got map[string]float64) {
	t.Helper()
	require.Len(t, got, len(want), "series: %v", got)
	for k, v := range want {
		g, ok := got[k]
		require.True(t, ok, "no series %s", k)
		if math.IsNaN(v) {
			assert.True(t, math.IsNaN(g), "%s: %v, want no value", k, g)
			continue
		}
		assert.InDelta(t, v, g, 1e-9, k)
	}
}

func costNoticeTexts(ns []data.Notice) []string {
	var out []string
	for _, n := range ns {
		out = append(out, n.Text)
	}
	return out
}

// TestCostQueryErrorsNameTheField: prices are per target, so grouping by model, a models
// filter or an unknown stat is refused with a sentence naming the field.
func TestCostQueryErrorsNameTheField(t *testing.T) {
	h, t0 := costHistory(t)
	st, err := settings.Load([]byte(`{`+costTargets+`}`), nil)
	require.NoError(t, err)
	inst := newInstanceForTest(st, source.NewEmbedded(h.db, source.EmbeddedOptions{}))
	end := t0.Add(10 * time.Minute)
	for q, field := range map[string]map[string]any{
		"groupBy: \"model\"":              {"queryType": "cost", "groupBy": "model"},
		"models: prices are per target":   {"queryType": "cost", "models": []string{"m"}},
		"series: \"cheap\" is not one of": {"queryType": "cost", "series": []string{"cheap"}},
	} {
		dr := runQuery(t, inst, field, end.Add(-time.Minute), end, time.Minute)
		require.Error(t, dr.Error, q)
		assert.Contains(t, dr.Error.Error(), q)
	}
}

// costSpikeRuleModel returns the query model of the provisioned Grafana-managed cost-spike
// rule and its threshold.
func costSpikeRuleModel(t *testing.T) (map[string]any, float64) {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("..", "..", "provisioning", "alerting", "inferscope-rules.yaml"))
	require.NoError(t, err)
	var f struct {
		Groups []struct {
			Rules []struct {
				UID  string `yaml:"uid"`
				Data []struct {
					RefID string         `yaml:"refId"`
					Model map[string]any `yaml:"model"`
				} `yaml:"data"`
			} `yaml:"rules"`
		} `yaml:"groups"`
	}
	require.NoError(t, yaml.Unmarshal(raw, &f))
	for _, g := range f.Groups {
		for _, r := range g.Rules {
			if r.UID != "inferscope-cost-spike" {
				continue
			}
			require.Len(t, r.Data, 3)
			th := r.Data[2].Model["conditions"].([]any)[0].(map[string]any)["evaluator"].(map[string]any)["params"].([]any)[0]
			return r.Data[0].Model, toFloat64(th)
		}
	}
	t.Fatal("no rule inferscope-cost-spike")
	return nil, 0
}

func toFloat64(v any) float64 {
	switch x := v.(type) {
	case int:
		return float64(x)
	case float64:
		return x
	}
	return math.NaN()
}

// TestCostSpikeRuleOnAStoredWeek stores eight days of a target priced 3.6 per hour at 1-minute
// scrapes: 2000 tokens/s (0.5 per 1M tokens), then from D (a 5-minute boundary) 500 tokens/s
// (2.0 per 1M). It runs the provisioned rule's query (ratio to the 7-day mean) and its
// reduce-last and threshold: not firing before D; at D+10m the 5-minute grid of the 7 days
// before holds 2014 points at 0.5 and 2 at 2.0 (D+5m, D+10m), mean (1007 + 4) / 2016, ratio
// 2.0 / 0.5014881 = 3.98813, above 2, and it stays above for the rule's 30 minutes.
func TestCostSpikeRuleOnAStoredWeek(t *testing.T) {
	h := newHandHistory(t)
	t0 := time.Unix(1_700_000_100, 0).Truncate(5 * time.Minute)
	d := t0.Add(8 * 24 * time.Hour)
	prompt, gen := 0.0, 0.0
	for ts := t0; !ts.After(d.Add(45 * time.Minute)); ts = ts.Add(time.Minute) {
		h.sample(ts, "a", "vllm:prompt_tokens_total", nil, prompt)
		h.sample(ts, "a", "vllm:generation_tokens_total", nil, gen)
		if ts.Before(d) {
			prompt, gen = prompt+1500*60, gen+500*60
		} else {
			prompt, gen = prompt+375*60, gen+125*60
		}
	}
	h.instance()
	st, err := settings.Load([]byte(`{"scrapeInterval":"1m","targets":[{"name":"a","url":"http://a:8000/metrics","costPerHour":3.6}]}`), nil)
	require.NoError(t, err)
	inst := newInstanceForTest(st, source.NewEmbedded(h.db, source.EmbeddedOptions{}))
	model, threshold := costSpikeRuleModel(t)
	assert.Equal(t, 2.0, threshold)
	ratioAt := func(at time.Time) float64 {
		dr := runQuery(t, inst, model, at.Add(-10*time.Minute), at, time.Minute)
		require.NoError(t, dr.Error)
		require.Len(t, dr.Frames, 1)
		v := dr.Frames[0].Fields[1]
		assert.Equal(t, "cost_spike_ratio", v.Labels["stat"])
		return reduceLastStrict(v)
	}
	assert.InDelta(t, 1.0, ratioAt(d), 1e-9, "steady: the cost equals its mean")
	assert.InDelta(t, 2.0/((2014*0.5+2*2.0)/2016), ratioAt(d.Add(10*time.Minute)), 1e-9)
	for m := 5; m <= 40; m += 5 {
		assert.Greater(t, ratioAt(d.Add(time.Duration(m)*time.Minute)), threshold, "D+%dm", m)
	}
}
