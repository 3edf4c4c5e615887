package asgrafana

import (
	"encoding/json"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// caseTarget is one case page and, written by hand from the page, the
// signals whose families it carries.
type caseTarget struct {
	name, page string
	exported   []string
}

var caseTargets = []caseTarget{
	{"gauges-only", "testdata/cases/vllm-v1-scheduler-gauges-only.prom", []string{"kv_cache_usage", "requests_running", "requests_waiting"}},
	// request_prompt_tokens carries prompt_length (the prompt-token histogram the
	// head-of-line rule reads) and nothing else.
	{"dp2-multiproc", "testdata/cases/vllm-v1-dp2-multiproc-token-histograms-only.prom", []string{"prompt_length"}},
	{"dp2-no-ttft", "testdata/cases/vllm-v1-dp2-no-ttft-e2e-buckets-end-60s.prom", []string{"e2e", "kv_cache_usage", "requests_finished", "requests_running", "requests_waiting"}},
}

// vllmSample is, per signal, the stored vLLM sample name a notice must name
// when the signal is missing (vLLM's own names, from its sources).
var vllmSample = map[string]string{
	"ttft":              "vllm:time_to_first_token_seconds_bucket",
	"itl":               "vllm:inter_token_latency_seconds_bucket",
	"e2e":               "vllm:e2e_request_latency_seconds_bucket",
	"queue_time":        "vllm:request_queue_time_seconds_bucket",
	"prefill_time":      "vllm:request_prefill_time_seconds_bucket",
	"decode_time":       "vllm:request_decode_time_seconds_bucket",
	"inference_time":    "vllm:request_inference_time_seconds_bucket",
	"requests_finished": "vllm:request_success_total",
	"prompt_tokens":     "vllm:prompt_tokens_total",
	"generation_tokens": "vllm:generation_tokens_total",
	"requests_running":  "vllm:num_requests_running",
	"requests_waiting":  "vllm:num_requests_waiting",
	"kv_cache_usage":    "vllm:kv_cache_usage_perc",
	"preemptions":       "vllm:num_preemptions_total",
	"prefix_cache_hits": "vllm:prefix_cache_hits_total",
}

// TestCases serves the three case pages of shared/cases (README rows 1-3)
// with advancing counters to the built plugin: health, /signals, the
// targets table and every query type agree on what each target exports,
// and every signal a query asks for and a target lacks has a notice naming
// the target and the metric looked for.
func TestCases(t *testing.T) {
	pages := map[string]*advancingPage{}
	var targets []map[string]any
	for _, c := range caseTargets {
		p := newAdvancingPage(t, c.page)
		pages[c.name] = p
		targets = append(targets, map[string]any{"name": c.name, "url": serve(t, p)})
	}
	jd, err := json.Marshal(map[string]any{"scrapeInterval": "1s", "scrapeTimeout": "500ms", "targets": targets})
	require.NoError(t, err)
	ds := dataSource{id: 2, uid: "inferscope-cases", jsonData: jd, updatedMS: time.Now().UnixMilli()}
	host := startPlugin(t)
	start := time.Now()

	deadline := time.Now().Add(40 * time.Second)
	for {
		ready := true
		for _, p := range pages {
			ready = ready && p.scrapes() >= 8
		}
		if ready {
			break
		}
		require.True(t, time.Now().Before(deadline), "case pages not scraped 8 times within 40 s")
		// The instance (and its collector) starts on the first request.
		host.query(t, ds, time.Now().Add(-time.Minute), time.Now(), map[string]map[string]any{"T": {"queryType": "targets"}})
		time.Sleep(250 * time.Millisecond)
	}
	query := func(t *testing.T, m map[string]any) queryResult {
		t.Helper()
		r := host.query(t, ds, start, time.Now().Add(-1500*time.Millisecond), map[string]map[string]any{"A": m})["A"]
		require.Empty(t, r.err, "query %v", m)
		return r
	}
	want := map[string][]string{}
	for _, c := range caseTargets {
		want[c.name] = c.exported
	}

	t.Run("health", func(t *testing.T) {
		h := host.checkHealth(t, ds)
		var details struct {
			Targets []struct {
				Name     string   `json:"name"`
				OK       bool     `json:"ok"`
				Engine   string   `json:"engine"`
				Exported []string `json:"exported"`
				NotSeen  []string `json:"notSeen"`
			} `json:"targets"`
		}
		require.NoError(t, json.Unmarshal(h.JsonDetails, &details), "%s", h.JsonDetails)
		require.Len(t, details.Targets, 3)
		for _, d := range details.Targets {
			assert.True(t, d.OK, d.Name)
			assert.Equal(t, "vllm", d.Engine, d.Name)
			assert.ElementsMatch(t, want[d.Name], d.Exported, "%s exports", d.Name)
			assert.Contains(t, d.NotSeen, "ttft", d.Name)
			assert.Contains(t, h.Message, fmt.Sprintf("%s: vllm", d.Name))
			assert.Contains(t, h.Message, fmt.Sprintf("exports %d signals", len(want[d.Name])))
		}
		assert.NotContains(t, h.Message, "18 signals")
	})

	t.Run("signals", func(t *testing.T) {
		code, body := host.resource(t, ds, "signals")
		require.EqualValues(t, http.StatusOK, code, "%s", body)
		var sigs []struct {
			Target  string `json:"target"`
			Engine  string `json:"engine"`
			Signals []struct {
				Signal    string   `json:"signal"`
				Status    string   `json:"status"`
				LookedFor []string `json:"lookedFor"`
			} `json:"signals"`
		}
		require.NoError(t, json.Unmarshal(body, &sigs), "%s", body)
		require.Len(t, sigs, 3)
		for _, s := range sigs {
			assert.Equal(t, "vllm", s.Engine, s.Target)
			var exported []string
			for _, x := range s.Signals {
				switch x.Status {
				case "exported", "approximate":
					exported = append(exported, x.Signal)
				case "not_seen":
					if n, ok := vllmSample[x.Signal]; ok {
						assert.Contains(t, x.LookedFor, n, "%s %s", s.Target, x.Signal)
					}
				}
			}
			assert.ElementsMatch(t, want[s.Target], exported, "%s", s.Target)
		}
	})

	t.Run("targets", func(t *testing.T) {
		r := query(t, map[string]any{"queryType": "targets"})
		require.Len(t, r.frames, 1)
		fr := r.frames[0]
		for _, c := range caseTargets {
			i := tableRow(t, fr, "target", c.name)
			assert.Equal(t, "vllm", cellString(t, fr, "engine", i), c.name)
			assert.Equal(t, "true", cellString(t, fr, "up", i), c.name)
			assert.Empty(t, cellString(t, fr, "last_error", i), c.name)
		}
	})

	// Every query type: each signal asked and missing on a target has a
	// notice naming the target and the metric looked for.
	for _, qc := range []struct {
		name    string
		q       map[string]any
		signals []string
	}{
		{"latency", map[string]any{"queryType": "latency", "stages": []string{"ttft", "e2e"}, "stats": []string{"p99"}}, []string{"ttft", "e2e"}},
		{"breakdown", map[string]any{"queryType": "breakdown"}, []string{"queue_time", "prefill_time", "decode_time", "inference_time", "e2e"}},
		{"breakdown-table", map[string]any{"queryType": "breakdown", "format": "table"}, []string{"queue_time", "prefill_time", "decode_time", "inference_time", "e2e"}},
		{"throughput", map[string]any{"queryType": "throughput"}, []string{"requests_finished", "prompt_tokens", "generation_tokens"}},
		{"saturation", map[string]any{"queryType": "saturation"}, []string{"requests_running", "requests_waiting", "kv_cache_usage", "preemptions", "prefix_cache_hits"}},
	} {
		t.Run("notices/"+qc.name, func(t *testing.T) {
			r := query(t, qc.q)
			notes := allNotices(r.frames)
			for _, c := range caseTargets {
				for _, s := range qc.signals {
					if contains(c.exported, s) {
						for _, n := range notes {
							assert.NotContains(t, n, fmt.Sprintf("target %s (vllm): %s not seen", c.name, s))
						}
						continue
					}
					want := fmt.Sprintf("target %s (vllm): %s not seen in the queried range: none of %s", c.name, s, vllmSample[s])
					assert.True(t, containsText(notes, want), "%s: no notice %q in %q", qc.name, want, notes)
				}
			}
		})
	}

	t.Run("latency/regression", func(t *testing.T) {
		r := query(t, map[string]any{"queryType": "latency", "targets": []string{"dp2-no-ttft"}, "stages": []string{"ttft", "e2e"}, "stats": []string{"p99"}, "bounds": false})
		ss := seriesOf(t, r.frames)
		require.Len(t, ss, 1, "e2e only: ttft is not on the page")
		// 90 % of each scrape's requests ≤ 60 s, 10 % above: p99 is in +Inf, clamped at 60.
		requireLast(t, one(t, ss, map[string]string{"stage": "e2e", "stat": "p99"}), 60, rel, "e2e p99")
		notes := allNotices(r.frames)
		assert.True(t, containsText(notes, "target dp2-no-ttft (vllm): ttft not seen"), "%q", notes)
		assert.True(t, containsText(notes, "clamp"), "the clamp is said: %q", notes)
	})

	t.Run("saturation/regression", func(t *testing.T) {
		r := query(t, map[string]any{"queryType": "saturation", "targets": []string{"dp2-no-ttft"}})
		ss := seriesOf(t, r.frames)
		var kv []series
		for _, s := range ss {
			if strings.Contains(s.name, "kv") || s.unit == "percentunit" {
				kv = append(kv, s)
			}
		}
		require.Len(t, kv, 1, "one KV-cache series: %v", names(ss))
		requireLast(t, kv[0], 0.5, rel, "KV usage averaged across the two engines")
	})

	t.Run("events", func(t *testing.T) {
		r := query(t, map[string]any{"queryType": "events"})
		require.Len(t, r.frames, 1)
		assert.Equal(t, 0, r.frames[0].Rows(), "advancing pages have no restart or change")
		assert.True(t, containsText(allNotices(r.frames), "no restart, down period"))
	})
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func names(ss []series) []string {
	out := make([]string, 0, len(ss))
	for _, s := range ss {
		out = append(out, s.name+fmt.Sprint(s.labels))
	}
	sort.Strings(out)
	return out
}
