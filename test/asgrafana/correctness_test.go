package asgrafana

import (
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/data"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// clockHistogram serves a vLLM TTFT histogram whose counters grow linearly:
// rate requests/s, all of value v, with the given finite bounds. On a page
// clock (see pageClock) the k-th answer counts rate·k requests and carries
// the clock's timestamp, so the stored counters grow by exactly rate per
// second however late the scrapes come; with clock nil the count is
// rate·(seconds since start), unstamped (for a rate of 0: flat counters).
// rate() of a linear counter is its slope, so every expected value below is
// computed by hand.
func clockHistogram(clock *pageClock, start time.Time, bounds []float64, v, rate float64) http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) {
		var n float64
		stamp := ""
		if clock != nil {
			var k int
			k, stamp = clock.next()
			n = rate * float64(k) * clock.step.Seconds()
		} else {
			n = rate * time.Since(start).Seconds()
		}
		var b strings.Builder
		b.WriteString("# HELP vllm:time_to_first_token_seconds Histogram of time to first token in seconds.\n")
		b.WriteString("# TYPE vllm:time_to_first_token_seconds histogram\n")
		lbl := `engine="0",model_name="m"`
		for _, le := range bounds {
			c := 0.0
			if v <= le {
				c = n
			}
			fmt.Fprintf(&b, "vllm:time_to_first_token_seconds_bucket{%s,le=%q} %s%s\n", lbl, strconv.FormatFloat(le, 'g', -1, 64), strconv.FormatFloat(c, 'g', -1, 64), stamp)
		}
		fmt.Fprintf(&b, "vllm:time_to_first_token_seconds_bucket{%s,le=\"+Inf\"} %s%s\n", lbl, strconv.FormatFloat(n, 'g', -1, 64), stamp)
		fmt.Fprintf(&b, "vllm:time_to_first_token_seconds_sum{%s} %s%s\n", lbl, strconv.FormatFloat(n*v, 'g', -1, 64), stamp)
		fmt.Fprintf(&b, "vllm:time_to_first_token_seconds_count{%s} %s%s\n", lbl, strconv.FormatFloat(n, 'g', -1, 64), stamp)
		b.WriteString("# TYPE vllm:num_requests_running gauge\n")
		fmt.Fprintf(&b, "vllm:num_requests_running{%s} 1%s\n", lbl, stamp)
		w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
		_, _ = w.Write([]byte(b.String()))
	}
}

// requireNoInfinities asserts that no number field of any frame holds ±Inf or NaN.
func requireNoInfinities(t *testing.T, frames data.Frames, what string) {
	t.Helper()
	for _, f := range frames {
		for _, fld := range f.Fields {
			for i := 0; i < fld.Len(); i++ {
				v, ok := fld.ConcreteAt(i)
				if !ok {
					continue
				}
				if x, isFloat := v.(float64); isFloat {
					require.False(t, math.IsInf(x, 0) || math.IsNaN(x), "%s: frame %q field %s row %d is %v", what, f.Name, fld.Name, i, x)
				}
			}
		}
	}
}

// TestAsGrafanaCorrectness drives the built plugin over gRPC, as Grafana and
// its alerting do, on four live targets (issue 10): fast (bounds 0.1, 1; 2
// req/s at 0.05 s; a settings label named "target"), slow (bound 0.5; 2 req/s
// at 0.3 s), clamped (bounds 0.1, 1; 2 req/s at 5 s) and idle (no requests).
// The three busy pages are on page clocks and every query ends inside a
// stretch the store holds completely (gridEnd), so the values are exact on a
// loaded machine too (issue 32).
func TestAsGrafanaCorrectness(t *testing.T) {
	start := time.Now()
	idleStart := start.Add(-time.Hour) // counters already flat
	clock := newPageClock(start)
	settings := map[string]any{
		"scrapeInterval": "1s",
		"scrapeTimeout":  "1s",
		"targets": []map[string]any{
			{"name": "fast", "url": serve(t, clockHistogram(newPageClock(start), start, []float64{0.1, 1}, 0.05, 2)), "labels": map[string]string{"target": "rack-7"}},
			{"name": "slow", "url": serve(t, clockHistogram(newPageClock(start), start, []float64{0.5}, 0.3, 2))},
			{"name": "clamped", "url": serve(t, clockHistogram(newPageClock(start), start, []float64{0.1, 1}, 5, 2))},
			{"name": "idle", "url": serve(t, clockHistogram(nil, idleStart, []float64{0.1, 1}, 0.05, 0))},
		},
	}
	jd, err := json.Marshal(settings)
	require.NoError(t, err)
	ds := dataSource{id: 7, uid: "inferscope-correctness", jsonData: jd, secure: map[string]string{}, updatedMS: time.Now().UnixMilli()}
	host := startPlugin(t)
	// The first request creates the instance, which starts the scrape loop.
	_ = host.query(t, ds, start.Add(-time.Minute), start, map[string]map[string]any{"T": {"queryType": "targets"}})

	// Every query below spans 10 s and checks its last lastSteps steps, whose
	// windows (at most 4 s) reach back 6 s: 8 s of complete samples hold them.
	var probes []gridProbe
	for _, name := range []string{"fast", "slow", "clamped"} {
		probes = append(probes, gridProbe{target: name, metric: "vllm:time_to_first_token_seconds_count"})
	}
	complete := func() time.Time { return gridEnd(t, host, ds, clock, probes, clock.at(1), 8*time.Second) }
	end := complete()

	// An alert rule sends the saved query JSON: window as Grafana's literal variable.
	both := map[string]any{"queryType": "latency", "targets": []string{"fast", "slow"}, "stages": []string{"ttft"},
		"stats": []string{"p75"}, "groupBy": "none", "window": "$__rate_interval"}
	ask := func(m map[string]any) queryResult {
		return host.query(t, ds, end.Add(-10*time.Second), end, map[string]map[string]any{"A": m})["A"]
	}

	t.Run("layouts-and-rate-interval", func(t *testing.T) {
		r := ask(both)
		require.Empty(t, r.err, "the $__rate_interval window is expanded by the backend")
		requireNoInfinities(t, r.frames, "layouts")
		// $__rate_interval at a 1 s interval and 1 s scrape: max(1s + 1s, 4 × 1s) = 4s.
		assert.Contains(t, r.frames[0].Meta.ExecutedQueryString, "[4s]")
		ss := seriesOf(t, r.frames)
		// Equal rates: merged counts 1.2r at 0.1 and 2r at 0.5; rank 1.5r → 0.1 + 0.4·0.3/0.8.
		// Exact: both targets' windows hold every answer of their page clocks, so both
		// rates are exactly 2/s whenever the scrapes came (issue 32).
		requireLast(t, one(t, ss, map[string]string{"stat": "p75", "bound": ""}), 0.25, 1e-9, "merged p75")
		requireLast(t, one(t, ss, map[string]string{"stat": "p75", "bound": "lower"}), 0, 0, "merged p75 lower")
		requireLast(t, one(t, ss, map[string]string{"stat": "p75", "bound": "upper"}), 0.5, 1e-12, "merged p75 upper")
		assert.True(t, containsText(allNotices(r.frames), "bucket layouts differ across target (fast: 0.1, 1; slow: 0.5)"), "%v", allNotices(r.frames))
	})

	t.Run("clamped-upper-is-null", func(t *testing.T) {
		r := ask(map[string]any{"queryType": "latency", "targets": []string{"clamped"}, "stages": []string{"ttft"}, "stats": []string{"p95"}, "window": "4s"})
		require.Empty(t, r.err)
		requireNoInfinities(t, r.frames, "clamped")
		ss := seriesOf(t, r.frames)
		requireLast(t, one(t, ss, map[string]string{"stat": "p95", "bound": ""}), 1, 1e-12, "clamped p95")
		requireLast(t, one(t, ss, map[string]string{"stat": "p95", "bound": "lower"}), 1, 1e-12, "clamped p95 lower")
		requireNoData(t, one(t, ss, map[string]string{"stat": "p95", "bound": "upper"}), "clamped p95 upper")
		assert.True(t, containsText(allNotices(r.frames), "its upper bound is unknown (null)"))
	})

	t.Run("idle-alert-reduce-last", func(t *testing.T) {
		// Five evaluations, as an alert rule every second: strict reduce-last of every
		// series is NaN (null), so "is above 1" never fires, and the series set stays put.
		var sets []string
		for k := 0; k < 5; k++ {
			r := ask(map[string]any{"queryType": "latency", "targets": []string{"idle"}, "stages": []string{"ttft"}, "stats": []string{"mean", "p95"}, "window": "4s"})
			require.Empty(t, r.err)
			requireNoInfinities(t, r.frames, "idle")
			ss := seriesOf(t, r.frames)
			var names []string
			for _, s := range ss {
				last := s.values[len(s.values)-1]
				assert.True(t, math.IsNaN(last), "%s: last value %v on an idle model", s.name, last)
				assert.False(t, last > 1)
				names = append(names, s.name)
			}
			sets = append(sets, strings.Join(names, ","))
			time.Sleep(time.Second)
			end = complete()
		}
		for _, s := range sets {
			assert.Equal(t, sets[0], s)
		}
	})

	t.Run("short-window-raised", func(t *testing.T) {
		r := ask(map[string]any{"queryType": "latency", "targets": []string{"fast"}, "stages": []string{"ttft"}, "stats": []string{"mean"}, "window": "500ms"})
		require.Empty(t, r.err)
		assert.Contains(t, r.frames[0].Meta.ExecutedQueryString, "[2s]")
		assert.True(t, containsText(allNotices(r.frames), "window 500ms is shorter than two scrape intervals"))
		requireLast(t, one(t, seriesOf(t, r.frames), map[string]string{"stat": "mean"}), 0.05, 1e-6, "fast mean")
	})

	t.Run("label-collision", func(t *testing.T) {
		for k := 0; k < 10; k++ {
			r := ask(map[string]any{"queryType": "raw", "metric": "vllm:num_requests_running", "targets": []string{"fast"}})
			require.Empty(t, r.err)
			ss := seriesOf(t, r.frames)
			require.Len(t, ss, 1)
			assert.Equal(t, "fast", ss[0].labels["target"])
			assert.Equal(t, "rack-7", ss[0].labels["exported_target"])
		}
	})
}
