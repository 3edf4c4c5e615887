package plugin

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/backend"
	"github.com/grafana/grafana-plugin-sdk-go/data"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/inferscope/inferscope-llm-datasource/pkg/analysis/diagnose"
	"github.com/inferscope/inferscope-llm-datasource/pkg/queries"
	"github.com/inferscope/inferscope-llm-datasource/pkg/settings"
	"github.com/inferscope/inferscope-llm-datasource/pkg/sim"
	"github.com/inferscope/inferscope-llm-datasource/pkg/source"
)

// Real engine behaviour that reads like a fault, through QueryData on hand-written histories:
// llama.cpp's counters that move once per finished batch (busy, not idle or frozen), gauges
// frozen by a mass client cancel (not a queue), streams aborted without an abort counter,
// re-exporters told by their series' shape, a restart at the range end (issues 39 and 40).
// Truth is the history's own construction: what the engine was doing at each scrape.

// diagnoseHistory runs the diagnosis query's input assembly over [from, to] at the given step
// and window and returns the whole result (every step, every finding).
func diagnoseHistory(t *testing.T, inst *Instance, from, to time.Time, step time.Duration, window string) diagnose.Result {
	t.Helper()
	raw, _ := json.Marshal(map[string]any{"queryType": "diagnosis", "window": window})
	p, err := decodeQuery(backend.DataQuery{RefID: "A", QueryType: "diagnosis", JSON: raw, Interval: step,
		MaxDataPoints: 100000, TimeRange: backend.TimeRange{From: from, To: to}}, &inst.settings)
	require.NoError(t, err)
	in, _, err := inst.diagnosisInput(context.Background(), p)
	require.NoError(t, err)
	return diagnose.Diagnose(in, inst.settings.Diagnosis)
}

// llamaBusyHistory writes a llama.cpp server with 4 slots, every slot busy and 9 requests
// deferred for the whole 20 minutes, scraped every 15 s. The four slots finish their requests
// together every 90 s: llama.cpp adds a request's generated tokens (tokens_predicted_total) only
// when it ends and its prompt tokens (prompt_tokens_total) at its first token, so both counters
// jump once per 90 s and stay flat in between, while n_decode_total moves on every decode step
// (2 per second). The request gauges never change (4 processing, 9 deferred): a busy server.
func llamaBusyHistory(t *testing.T) (*Instance, time.Time) {
	h := newHandHistory(t)
	t0 := time.Unix(1_700_000_100, 0)
	var gen, genSec, prompt, promptSec float64
	for i := 0; i <= 80; i++ {
		ts := t0.Add(time.Duration(i) * 15 * time.Second)
		if i > 0 && i%6 == 0 { // every 90 s: 4 requests end (41 tokens each), 4 start
			gen += 4 * 41
			genSec += 4 * 88
			prompt += 4 * 120
			promptSec += 4 * 0.9
		}
		h.sample(ts, "lc", "up", nil, 1)
		h.sample(ts, "lc", "llamacpp:requests_processing", nil, 4)
		h.sample(ts, "lc", "llamacpp:requests_deferred", nil, 9)
		h.sample(ts, "lc", "llamacpp:n_decode_total", nil, 2*15*float64(i))
		h.sample(ts, "lc", "llamacpp:n_busy_slots_per_decode", nil, 4)
		h.sample(ts, "lc", "llamacpp:tokens_predicted_total", nil, gen)
		h.sample(ts, "lc", "llamacpp:tokens_predicted_seconds_total", nil, genSec)
		h.sample(ts, "lc", "llamacpp:prompt_tokens_total", nil, prompt)
		h.sample(ts, "lc", "llamacpp:prompt_seconds_total", nil, promptSec)
	}
	return h.instance(histTarget("lc")), t0
}

// TestLlamaCppBusyIsNeitherIdleNorFrozen (issue 40 point 1): at every step of the busy llama.cpp
// history, at 15 s steps over 60 s windows and 1 m steps over 5 m windows, the diagnosis names
// neither idle_stale_gauges nor stalled (its decode counter moves), and the saturation query
// gives no frozen-gauge warning.
func TestLlamaCppBusyIsNeitherIdleNorFrozen(t *testing.T) {
	inst, t0 := llamaBusyHistory(t)
	for _, cad := range []struct {
		step   time.Duration
		window string
	}{{15 * time.Second, "1m"}, {time.Minute, "5m"}} {
		t.Run(fmt.Sprintf("step=%s,window=%s", cad.step, cad.window), func(t *testing.T) {
			res := diagnoseHistory(t, inst, t0.Add(5*time.Minute), t0.Add(20*time.Minute), cad.step, cad.window)
			require.Len(t, res.Targets, 1)
			tr := res.Targets[0]
			steps := 0
			for i, c := range tr.Primary {
				if c == "" {
					continue
				}
				steps++
				assert.NotContains(t, []diagnose.Class{diagnose.IdleStaleGauges, diagnose.Stalled, diagnose.Unknown}, c, "step %s (%s)", res.Steps[i].Format(time.TimeOnly), cad.window)
			}
			assert.Greater(t, steps, 10, cad.window)
			for _, f := range tr.Findings {
				assert.NotContains(t, f.Summary, "Idle engine", cad.window)
			}
		})
	}
	dr := runHistQuery(t, inst, t0.Add(5*time.Minute), t0.Add(20*time.Minute), 15*time.Second, map[string]any{"queryType": "saturation"})
	require.NoError(t, dr.Error)
	for _, n := range responseNotices(dr) {
		assert.NotContains(t, n, "frozen", n)
	}
}

// TestLlamaCppStillDecodeCounterIsFrozen: the same server whose decode counter stops too (every
// activity counter still, the gauges unchanged) is called frozen: the verdict needs all of them
// still, and then it holds.
func TestLlamaCppStillDecodeCounterIsFrozen(t *testing.T) {
	h := newHandHistory(t)
	t0 := time.Unix(1_700_000_100, 0)
	for i := 0; i <= 80; i++ {
		ts := t0.Add(time.Duration(i) * 15 * time.Second)
		h.sample(ts, "lc", "up", nil, 1)
		h.sample(ts, "lc", "llamacpp:requests_processing", nil, 4)
		h.sample(ts, "lc", "llamacpp:requests_deferred", nil, 9)
		h.sample(ts, "lc", "llamacpp:n_decode_total", nil, 600)
		h.sample(ts, "lc", "llamacpp:tokens_predicted_total", nil, 1000)
		h.sample(ts, "lc", "llamacpp:prompt_tokens_total", nil, 5000)
	}
	inst := h.instance(histTarget("lc"))
	res := diagnoseHistory(t, inst, t0.Add(5*time.Minute), t0.Add(20*time.Minute), time.Minute, "5m")
	last := res.Targets[0].Primary[res.Targets[0].Last]
	assert.Contains(t, []diagnose.Class{diagnose.IdleStaleGauges, diagnose.Stalled}, last)
	dr := runHistQuery(t, inst, t0.Add(5*time.Minute), t0.Add(20*time.Minute), 15*time.Second, map[string]any{"queryType": "saturation"})
	require.NoError(t, dr.Error)
	var frozen []string
	for _, n := range responseNotices(dr) {
		if strings.Contains(n, "frozen") {
			frozen = append(frozen, n)
		}
	}
	assert.Len(t, frozen, 1, "one freeze, said once: %v", frozen)
}

// massCancelHistory writes a vLLM V1 engine serving steadily for 10 minutes (running 50,
// waiting 30 moving by ±1, KV usage 0.95, tokens, finished requests and every histogram count
// growing), then frozen by a mass client cancel (vLLM #22545, #29928): from minute 10 on the
// gauges read running 50, waiting 30, KV usage 0.95 unchanged and no counter or histogram
// _count grows, for 20 more minutes, while the page keeps answering.
//
// Variants: "lag" (the waiting gauge's last update lands one scrape after the counters' last
// one) and "static" (a page frozen from its first scrape: no live phase at all).
func massCancelHistory(t *testing.T, variant string) (*Instance, time.Time) {
	h := newHandHistory(t)
	t0 := time.Unix(1_700_000_100, 0)
	m := map[string]string{"model_name": "m", "engine": "0"}
	stop := map[string]string{"model_name": "m", "engine": "0", "finished_reason": "stop"}
	length := map[string]string{"model_name": "m", "engine": "0", "finished_reason": "length"}
	e2e, queue, ttft := newHandHist(0.5, 1, 2.5, 5, 10, 20, 40), newHandHist(0.5, 1, 2.5, 5, 10, 20, 40), newHandHist(0.1, 0.5, 1, 2.5, 5, 10)
	iter := newHandHist(1, 8, 16, 32, 64, 128, 256, 512, 1024, 2048)
	var gen, prompt, fin float64
	for i := 0; i <= 120; i++ {
		ts := t0.Add(time.Duration(i) * 15 * time.Second)
		live := i < 40 && variant != "static"
		wait := 30.0
		if variant == "lag" && i < 40 {
			wait = 29
		}
		if live && variant != "lag" {
			wait = 30 + float64((i+1)%3) - 1 // 30 at the last live scrape: the gauges keep their last update
		}
		if live {
			gen += 15 * 400
			prompt += 15 * 1200
			fin += 15 * 2
			e2e.observe(18, 30)
			queue.observe(6, 30)
			ttft.observe(4, 30)
			iter.observe(64, 15*40)
		}
		h.sample(ts, "v", "up", nil, 1)
		h.sample(ts, "v", "vllm:num_requests_running", m, 50)
		h.sample(ts, "v", "vllm:num_requests_waiting", m, wait)
		h.sample(ts, "v", "vllm:kv_cache_usage_perc", m, 0.95)
		h.sample(ts, "v", "vllm:generation_tokens_total", m, gen)
		h.sample(ts, "v", "vllm:prompt_tokens_total", m, prompt)
		h.sample(ts, "v", "vllm:num_preemptions_total", m, 0)
		h.sample(ts, "v", "vllm:request_success_total", stop, fin*0.8)
		h.sample(ts, "v", "vllm:request_success_total", length, fin*0.2)
		h.sample(ts, "v", "vllm:prefix_cache_queries_total", m, prompt)
		h.scrape(ts, "v", "vllm:e2e_request_latency_seconds", m, e2e)
		h.scrape(ts, "v", "vllm:request_queue_time_seconds", m, queue)
		h.scrape(ts, "v", "vllm:time_to_first_token_seconds", m, ttft)
		h.scrape(ts, "v", "vllm:iteration_tokens_total", m, iter)
	}
	return h.instance(histTarget("v")), t0
}

// TestMassCancelFrozenGaugesNotAQueue (issue 39 point 1): after the freeze (once the stall
// window and a rate window have passed, so the windows hold only frozen scrapes) every step
// reads idle_stale_gauges, whose evidence says nothing moved; no step reads queue_saturation or
// kv_cache_pressure, and no finding of the frozen span advises on seats, the queue or the KV
// cache. At both cadences.
func TestMassCancelFrozenGaugesNotAQueue(t *testing.T) {
	for _, variant := range []string{"", "lag", "static"} {
		t.Run("variant="+variant, func(t *testing.T) { massCancelCheck(t, variant) })
	}
}

func massCancelCheck(t *testing.T, variant string) {
	inst, t0 := massCancelHistory(t, variant)
	freeze := t0.Add(10 * time.Minute)
	// Frozen accounting: idle_stale_gauges; with the waiting gauge's last update one scrape
	// late, the run without progress saw it move: stalled (engine not progressing) is as right.
	want := []diagnose.Class{diagnose.IdleStaleGauges}
	if variant == "lag" {
		want = append(want, diagnose.Stalled)
	}
	for _, cad := range []struct {
		step   time.Duration
		window string
		settle time.Duration
	}{{15 * time.Second, "1m", 2 * time.Minute}, {time.Minute, "5m", 6 * time.Minute}} {
		t.Run(fmt.Sprintf("step=%s,window=%s", cad.step, cad.window), func(t *testing.T) {
			res := diagnoseHistory(t, inst, t0.Add(5*time.Minute), t0.Add(30*time.Minute), cad.step, cad.window)
			tr := res.Targets[0]
			for i, c := range tr.Primary {
				if res.Steps[i].Before(freeze) {
					continue
				}
				if res.Steps[i].After(freeze.Add(time.Minute)) {
					assert.NotContains(t, []diagnose.Class{diagnose.QueueSaturation, diagnose.KVPressure}, c, "%s at %s", cad.window, res.Steps[i].Sub(t0))
				}
				if !res.Steps[i].Before(freeze.Add(cad.settle)) {
					assert.Contains(t, want, c, "%s at %s", cad.window, res.Steps[i].Sub(t0))
				}
			}
			var frozen *diagnose.Finding
			for k, f := range tr.Findings {
				if f.End.After(freeze) && (f.Class == diagnose.QueueSaturation || f.Class == diagnose.KVPressure) && f.Start.After(freeze.Add(time.Minute)) {
					t.Errorf("%s: %s finding inside the frozen span: %s", cad.window, f.Class, f.Text())
				}
				if slices.Contains(want, f.Class) && f.Current {
					frozen = &tr.Findings[k]
				}
			}
			require.NotNil(t, frozen, cad.window)
			txt := frozen.Text()
			assert.Contains(t, txt, "progress 0 /s = 0", cad.window)
			assert.Contains(t, txt, "requests_running 50", cad.window)
			for _, advice := range []string{"--max-num-seqs", "--gpu-memory-utilization", "replicas", "KV"} {
				assert.NotContains(t, frozen.Recommendation, advice, cad.window)
			}
		})
	}
	// The saturation query names the frozen gauges once.
	dr := runHistQuery(t, inst, t0.Add(5*time.Minute), t0.Add(30*time.Minute), 15*time.Second, map[string]any{"queryType": "saturation"})
	require.NoError(t, dr.Error)
	n := 0
	for _, s := range responseNotices(dr) {
		if strings.Contains(s, "request gauges frozen") {
			n++
		}
	}
	assert.Equal(t, 1, n)
}

var _ = queries.Diagnosis{}

// abortedStreamsHistory writes a vLLM V1 engine that counts finished requests by reason (stop,
// length) but exports no finished_reason="abort" series (vLLM #55634, #31503). For 10 minutes it
// serves 2 requests/s of 600 prompt tokens each, all finishing (1200 prompt tokens/s, 2
// finished/s); then, for 10 minutes, clients close every stream early: the prompts are still
// processed (1200 prompt tokens/s, so 2 requests/s start), generation barely moves (5 tokens/s)
// and neither the success counter nor any latency histogram's _count grows. Running turns over
// between 6 and 8, nothing waits. Truth: 2 requests/s aborted.
func abortedStreamsHistory(t *testing.T) (*Instance, time.Time) {
	h := newHandHistory(t)
	t0 := time.Unix(1_700_000_100, 0)
	m := map[string]string{"model_name": "m", "engine": "0"}
	stop := map[string]string{"model_name": "m", "engine": "0", "finished_reason": "stop"}
	length := map[string]string{"model_name": "m", "engine": "0", "finished_reason": "length"}
	e2e, ttft := newHandHist(0.5, 1, 2.5, 5, 10, 20, 40), newHandHist(0.1, 0.5, 1, 2.5, 5, 10)
	var gen, prompt, fin float64
	for i := 0; i <= 80; i++ {
		ts := t0.Add(time.Duration(i) * 15 * time.Second)
		if i > 0 {
			prompt += 15 * 1200
			if i <= 40 {
				gen += 15 * 300
				fin += 15 * 2
				e2e.observe(3, 30)
				ttft.observe(0.3, 30)
			} else {
				gen += 15 * 5
			}
		}
		h.sample(ts, "v", "up", nil, 1)
		h.sample(ts, "v", "vllm:num_requests_running", m, 6+float64(i%3))
		h.sample(ts, "v", "vllm:num_requests_waiting", m, 0)
		h.sample(ts, "v", "vllm:kv_cache_usage_perc", m, 0.2)
		h.sample(ts, "v", "vllm:generation_tokens_total", m, gen)
		h.sample(ts, "v", "vllm:prompt_tokens_total", m, prompt)
		h.sample(ts, "v", "vllm:request_success_total", stop, fin*0.9)
		h.sample(ts, "v", "vllm:request_success_total", length, fin*0.1)
		h.sample(ts, "v", "vllm:prefix_cache_queries_total", m, prompt)
		h.scrape(ts, "v", "vllm:e2e_request_latency_seconds", m, e2e)
		h.scrape(ts, "v", "vllm:time_to_first_token_seconds", m, ttft)
	}
	return h.instance(histTarget("v")), t0
}

// TestAbortedStreamsWithoutAbortCounter (issue 39 point 2): once the rate window holds only
// aborted streams, every step reads aborted_traffic (it read healthy), with an estimated abort
// rate within 10 % of the truth (2 requests/s) and the missing counter named; before the aborts,
// no step reads aborted_traffic. At both cadences.
func TestAbortedStreamsWithoutAbortCounter(t *testing.T) {
	inst, t0 := abortedStreamsHistory(t)
	onset := t0.Add(10 * time.Minute)
	for _, cad := range []struct {
		step   time.Duration
		window string
		settle time.Duration
	}{{15 * time.Second, "1m", 75 * time.Second}, {time.Minute, "5m", 6 * time.Minute}} {
		t.Run(fmt.Sprintf("step=%s,window=%s", cad.step, cad.window), func(t *testing.T) {
			res := diagnoseHistory(t, inst, t0.Add(3*time.Minute), t0.Add(20*time.Minute), cad.step, cad.window)
			tr := res.Targets[0]
			for i, c := range tr.Primary {
				switch {
				case !res.Steps[i].After(onset):
					assert.NotEqual(t, diagnose.AbortedTraffic, c, "%s at %s", cad.window, res.Steps[i].Sub(t0))
				case !res.Steps[i].Before(onset.Add(cad.settle)):
					assert.Equal(t, diagnose.AbortedTraffic, c, "%s at %s", cad.window, res.Steps[i].Sub(t0))
				}
			}
			var cur *diagnose.Finding
			for k, f := range tr.Findings {
				if f.Class == diagnose.AbortedTraffic && f.Current {
					cur = &tr.Findings[k]
				}
			}
			require.NotNil(t, cur, cad.window)
			var est float64
			for _, e := range cur.Evidence {
				if e.Signal == "aborted_rate_estimate" {
					est = e.Value
				}
			}
			assert.InDelta(t, 2.0, est, 0.2, "%s: %s", cad.window, cur.Text())
			assert.Contains(t, cur.Text(), `vllm:request_success_total{finished_reason="abort"} is not exported`, cad.window)
		})
	}
}

// shapeRouterHistory writes engines a (3 running, 1 waiting) and b (2 running, 0 waiting), each
// with its own model_name and engine labels, and a router r that re-exports both engines'
// request gauges under label (vLLM production-stack router: server; other proxies: endpoint,
// backend, upstream) with the engines' URLs as values and neither model_name nor engine, and
// none of the production-stack router's own families: only the shape says it is a re-exporter.
// The router also serves a family of its own (router_requests_total), which stays its own.
func shapeRouterHistory(t *testing.T, label string, targets ...string) (*Instance, time.Time) {
	h := newHandHistory(t)
	t0 := time.Unix(1_700_000_100, 0)
	m := map[string]string{"model_name": "m", "engine": "0"}
	for i := 0; i <= 40; i++ {
		ts := t0.Add(time.Duration(i) * 15 * time.Second)
		for job, v := range map[string][2]float64{"a": {3, 1}, "b": {2, 0}} {
			if slices.Contains(targets, job) {
				h.sample(ts, job, "up", nil, 1)
				h.sample(ts, job, "vllm:num_requests_running", m, v[0])
				h.sample(ts, job, "vllm:num_requests_waiting", m, v[1])
				h.sample(ts, job, "vllm:kv_cache_usage_perc", m, 0.5)
				h.sample(ts, job, "vllm:prefix_cache_queries_total", m, 100*float64(i))
			}
			srv := map[string]string{label: "http://" + job + ":8000"}
			h.sample(ts, "r", "vllm:num_requests_running", srv, v[0])
			h.sample(ts, "r", "vllm:num_requests_waiting", srv, v[1])
		}
		h.sample(ts, "r", "up", nil, 1)
		h.sample(ts, "r", "router_requests_total", nil, 10*float64(i))
	}
	var ts []string
	for _, n := range targets {
		ts = append(ts, histTarget(n))
	}
	return h.instance(ts...), t0
}

// TestReExporterRecognisedByShape (issue 39 point 3): truth by hand, running 3 + 2 = 5 and
// waiting 1 + 0 = 1 (it read 10 and 2). For each label name a re-exporting proxy uses, with the
// router and both engines configured, the saturation query reads 5 and 1 and names r as the
// re-exporter it set aside; with only a and the router configured, the router's copy is the
// only view of b and counts: 5 again. The diagnosis counts each engine once too (r's copies of
// a and b are left out: r has no engine data of its own).
func TestReExporterRecognisedByShape(t *testing.T) {
	for _, label := range []string{"server", "endpoint", "backend", "upstream"} {
		for _, targets := range [][]string{{"a", "b", "r"}, {"a", "r"}} {
			t.Run(fmt.Sprintf("label=%s,targets=%s", label, strings.Join(targets, "+")), func(t *testing.T) {
				inst, t0 := shapeRouterHistory(t, label, targets...)
				dr := runHistQuery(t, inst, t0.Add(5*time.Minute), t0.Add(10*time.Minute), time.Minute, map[string]any{"queryType": "saturation"})
				require.NoError(t, dr.Error)
				f := fieldsBy(dr, "signal")
				run, _ := lastFloat(f["requests_running"])
				wait, _ := lastFloat(f["requests_waiting"])
				assert.Equal(t, 5.0, run, "%s %v", label, targets)
				assert.Equal(t, 1.0, wait, "%s %v", label, targets)
				want := "target r is a re-exporter (gateway) of http://a:8000, http://b:8000"
				if len(targets) == 2 {
					want = "target r is a re-exporter (gateway) of http://a:8000"
				}
				assert.Contains(t, strings.Join(responseNotices(dr), "\n"), want, "%s %v", label, targets)
			})
		}
	}
}

// TestOwnURLLabelIsNotAReExporter: an engine whose settings add an extra label server with its
// own URL, and an engine page whose series carry model_name and engine with a backend label
// naming a server that is no target, are engines, not re-exporters: nothing is set aside.
func TestOwnURLLabelIsNotAReExporter(t *testing.T) {
	h := newHandHistory(t)
	t0 := time.Unix(1_700_000_100, 0)
	for i := 0; i <= 40; i++ {
		ts := t0.Add(time.Duration(i) * 15 * time.Second)
		h.sample(ts, "a", "up", nil, 1)
		h.sample(ts, "a", "vllm:num_requests_running", map[string]string{"model_name": "m", "engine": "0", "server": "http://a:8000"}, 3)
		h.sample(ts, "b", "up", nil, 1)
		h.sample(ts, "b", "vllm:num_requests_running", map[string]string{"model_name": "m", "engine": "0", "backend": "http://10.9.9.9:8000"}, 2)
	}
	inst := h.instance(histTarget("a"), histTarget("b"))
	dr := runHistQuery(t, inst, t0.Add(5*time.Minute), t0.Add(10*time.Minute), time.Minute, map[string]any{"queryType": "saturation"})
	require.NoError(t, dr.Error)
	run, _ := lastFloat(fieldsBy(dr, "signal")["requests_running"])
	assert.Equal(t, 5.0, run)
	assert.NotContains(t, strings.Join(responseNotices(dr), "\n"), "re-exporter")
}

// TestAvailabilityLeavesTheProbeOut (issue 40 point 2): a llama.cpp target lc answers its
// scrapes for 45 of 60 minutes (down from minute 20 to 35), its probe probe-lc and a GPU agent
// answer all the time. Grouped by target, the availability objective has one row, lc, at 0.75
// (45 / 60 minutes, by hand); the probe is a client of the service and the agent watches its
// GPUs: neither is a row.
func TestAvailabilityLeavesTheProbeOut(t *testing.T) {
	h := newHandHistory(t)
	t0 := time.Unix(1_700_000_100, 0)
	for i := 0; i < 240; i++ {
		ts := t0.Add(time.Duration(i) * 15 * time.Second)
		up := 1.0
		if i >= 80 && i < 140 {
			up = 0
		}
		h.sample(ts, "lc", "up", nil, up)
		h.sample(ts, "lc", "llamacpp:requests_processing", nil, 1)
		h.sample(ts, "probe-lc", "up", nil, 1)
		h.sample(ts, "gpu", "up", nil, 1)
	}
	require.NoError(t, h.app.Commit())
	st, err := settings.Load([]byte(`{"targets":[{"name":"lc","url":"http://lc:8080/metrics","agent":"gpu"}],
	  "gpuAgents":[{"name":"gpu","url":"http://gpu:9400/metrics"}],
	  "probes":[{"name":"probe-lc","url":"http://probe:9401/metrics","target":"lc"}],
	  "sloProfiles":[{"name":"p","objectives":[{"name":"up","kind":"availability","target":0.99}]}]}`), nil)
	require.NoError(t, err)
	inst := newInstanceForTest(st, source.NewEmbedded(h.db, source.EmbeddedOptions{}))
	dr := sloRun(t, inst, map[string]any{"queryType": "slo", "profile": "p", "groupBy": "target"}, t0, t0.Add(time.Hour-15*time.Second), time.Minute)
	require.NoError(t, dr.Error)
	rows := sloRows(t, dr.Frames[0])
	require.Len(t, rows, 1, "%v", rows)
	assert.Equal(t, "lc", rows[0]["target"])
	assert.InDelta(t, 0.75, rows[0]["attainment"], 0.02)
}

// TestRegressionRestartAtTheRangeEnd (issue 40 point 3): a llama.cpp server restarts one minute
// before the end of the range (its counters fall to 0). The after side would start two steps
// (2 minutes) after the restart, past the range's end: the query answers, without an error,
// with a sentence saying why the restart is not compared.
func TestRegressionRestartAtTheRangeEnd(t *testing.T) {
	h := newHandHistory(t)
	t0 := time.Unix(1_700_000_100, 0)
	for i := 0; i <= 80; i++ {
		ts := t0.Add(time.Duration(i) * 15 * time.Second)
		k := float64(i)
		if i >= 76 { // restart at 19 minutes
			k = float64(i - 76)
		}
		h.sample(ts, "lc", "up", nil, 1)
		h.sample(ts, "lc", "llamacpp:requests_processing", nil, 2)
		h.sample(ts, "lc", "llamacpp:requests_deferred", nil, 0)
		h.sample(ts, "lc", "llamacpp:n_decode_total", nil, 30*k)
		h.sample(ts, "lc", "llamacpp:tokens_predicted_total", nil, 60*k)
		h.sample(ts, "lc", "llamacpp:tokens_predicted_seconds_total", nil, 3*k)
		h.sample(ts, "lc", "llamacpp:prompt_tokens_total", nil, 200*k)
		h.sample(ts, "lc", "llamacpp:prompt_seconds_total", nil, 0.5*k)
	}
	inst := h.instance(histTarget("lc"))
	dr := runHistQuery(t, inst, t0.Add(5*time.Minute), t0.Add(20*time.Minute), time.Minute, map[string]any{"queryType": "regression"})
	require.NoError(t, dr.Error)
	assert.Contains(t, strings.Join(responseNotices(dr), "\n"), "target lc: lc restarted at 2023-11-14 22:34:00 UTC is not compared: it is too close to the end of the range for an after side")
}

// TestLlamaCppPrefillIsPerPromptToken (issue 40 point 5): llama.cpp's prefill time is seconds
// per prompt token (0.9 s for 120 tokens in the busy history: 0.0075 s, by hand), and the
// latency query says so rather than presenting it as a per-request prefill time.
func TestLlamaCppPrefillIsPerPromptToken(t *testing.T) {
	inst, t0 := llamaBusyHistory(t)
	dr := runHistQuery(t, inst, t0.Add(5*time.Minute), t0.Add(20*time.Minute), time.Minute,
		map[string]any{"queryType": "latency", "stages": []string{"prefill_time"}, "stats": []string{"mean"}, "window": "5m"})
	require.NoError(t, dr.Error)
	var v float64
	for _, f := range fieldsBy(dr, "stage") {
		v, _ = lastFloat(f)
	}
	assert.InDelta(t, 0.0075, v, 1e-9)
	assert.Contains(t, strings.Join(responseNotices(dr), "\n"), "prefill_time is approximate: seconds per prompt token, not per request")
}

// TestLlamaCppNoticesSayWhatIs (issue 40 point 6): on the busy llama.cpp history the breakdown
// says why it is empty and does not speak of vLLM's frontend overhead; saturation says KV-cache
// usage is not exported by current builds (information, not a warning that a family went
// missing); the latency quantile notice says "exports" for one target.
func TestLlamaCppNoticesSayWhatIs(t *testing.T) {
	inst, t0 := llamaBusyHistory(t)
	from, to := t0.Add(5*time.Minute), t0.Add(20*time.Minute)
	dr := runHistQuery(t, inst, from, to, time.Minute, map[string]any{"queryType": "breakdown"})
	require.NoError(t, dr.Error)
	txt := strings.Join(responseNotices(dr), "\n")
	assert.Contains(t, txt, "target lc (llamacpp) has no breakdown: it exports no per-request stage histogram")
	assert.NotContains(t, txt, "vLLM")

	dr = runHistQuery(t, inst, from, to, time.Minute, map[string]any{"queryType": "saturation"})
	require.NoError(t, dr.Error)
	kvSaid := false
	for _, n := range noticesWithSeverity(dr) {
		if strings.Contains(n.Text, "kv_cache_usage") {
			kvSaid = true
			assert.NotEqual(t, data.NoticeSeverityWarning, n.Severity, n.Text)
			assert.Contains(t, n.Text, "current llama.cpp builds do not export KV-cache usage")
		}
	}
	assert.True(t, kvSaid)

	dr = runHistQuery(t, inst, from, to, time.Minute, map[string]any{"queryType": "latency", "stages": []string{"itl"}, "stats": []string{"p50"}})
	require.NoError(t, dr.Error)
	assert.Contains(t, strings.Join(responseNotices(dr), "\n"), "itl: lc exports only cumulative counters")
}

// noticesWithSeverity returns every notice of a response.
func noticesWithSeverity(dr backend.DataResponse) []data.Notice {
	var out []data.Notice
	for _, f := range dr.Frames {
		if f.Meta != nil {
			out = append(out, f.Meta.Notices...)
		}
	}
	return out
}

// llamaPage is a current llama.cpp server's /metrics page (written from the server's metric
// list: no KV-cache gauge).
const llamaPage = `# TYPE llamacpp:prompt_tokens_total counter
llamacpp:prompt_tokens_total 480
# TYPE llamacpp:prompt_seconds_total counter
llamacpp:prompt_seconds_total 3.6
# TYPE llamacpp:tokens_predicted_total counter
llamacpp:tokens_predicted_total 164
# TYPE llamacpp:tokens_predicted_seconds_total counter
llamacpp:tokens_predicted_seconds_total 88
# TYPE llamacpp:n_decode_total counter
llamacpp:n_decode_total 41
# TYPE llamacpp:n_busy_slots_per_decode gauge
llamacpp:n_busy_slots_per_decode 4
# TYPE llamacpp:requests_processing gauge
llamacpp:requests_processing 4
# TYPE llamacpp:requests_deferred gauge
llamacpp:requests_deferred 9
`

// TestSignalsOnAFreshStore (issue 40 point 6): before anything is stored for a target, /signals
// reads its page as the health check does and names llama.cpp, not "unknown".
func TestSignalsOnAFreshStore(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; version=0.0.4")
		_, _ = w.Write([]byte(llamaPage))
	}))
	defer srv.Close()
	h := newHandHistory(t)
	inst := h.instance(`{"name":"lc","url":"` + srv.URL + `/metrics"}`)
	var s goldenSender
	require.NoError(t, inst.CallResource(context.Background(), &backend.CallResourceRequest{Method: "GET", Path: "signals", URL: "signals"}, &s))
	require.Len(t, s.got, 1)
	var out []map[string]any
	require.NoError(t, json.Unmarshal(s.got[0].Body, &out), string(s.got[0].Body))
	require.Len(t, out, 1)
	assert.Equal(t, "llamacpp", out[0]["engine"])
}

// TestSimulatedLlamaCppNeverIdle (issue 40 point 1, simulated history): the simulator's
// llama.cpp exposition, 2 slots busy with answers of ~8000 tokens (over a minute each, so most
// stall windows count no generated token) and requests deferred, 20 minutes at 15 s
// scrapes. At both cadences no step after the first 5 minutes reads idle_stale_gauges or
// stalled, and saturation gives no frozen-gauge warning.
func TestSimulatedLlamaCppNeverIdle(t *testing.T) {
	cfg := sim.DefaultConfig()
	cfg.MaxNumSeqs = 2
	cfg.Rate = 0.05
	cfg.Output = sim.LengthDist{Kind: "lognormal", Mean: 8000, Sigma: 0.05, Min: 7000, Max: 9000}
	cfg.MaxTokens = 10000
	s, err := sim.New(cfg, sim.Options{})
	require.NoError(t, err)
	require.NoError(t, s.ExposeLlamaCpp())
	db := openDiagDB(t)
	_, err = s.FastForward(context.Background(), db, sim.FastForwardOptions{Duration: 20 * time.Minute, ScrapeInterval: 15 * time.Second,
		VLLM: sim.Target{Job: "lc", Instance: "lc:8080"}})
	require.NoError(t, err)
	st, err := settings.Load([]byte(`{"targets":[{"name":"lc","url":"http://lc:8080/metrics"}],"scrapeInterval":"15s"}`), nil)
	require.NoError(t, err)
	inst := newInstanceForTest(st, source.NewEmbedded(db, source.EmbeddedOptions{}))
	from, to := s.Start().Add(5*time.Minute), s.Start().Add(20*time.Minute)
	for _, cad := range []struct {
		step   time.Duration
		window string
	}{{15 * time.Second, "1m"}, {time.Minute, "5m"}} {
		t.Run(fmt.Sprintf("step=%s,window=%s", cad.step, cad.window), func(t *testing.T) {
			res := diagnoseHistory(t, inst, from, to, cad.step, cad.window)
			n := 0
			for i, c := range res.Targets[0].Primary {
				if c != "" {
					n++
				}
				assert.NotContains(t, []diagnose.Class{diagnose.IdleStaleGauges, diagnose.Stalled}, c, "%s at %s", cad.window, res.Steps[i].Sub(s.Start()))
			}
			assert.Greater(t, n, 10, cad.window)
		})
	}
	dr := runHistQuery(t, inst, from, to, 15*time.Second, map[string]any{"queryType": "saturation"})
	require.NoError(t, dr.Error)
	for _, n := range responseNotices(dr) {
		assert.NotContains(t, n, "request gauges frozen", n)
	}
}
