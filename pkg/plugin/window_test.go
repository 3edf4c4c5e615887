package plugin

import (
	"strings"
	"testing"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/backend"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// steadyTTFT stores ten minutes of a vLLM target "a" scraped every 15 s whose
// TTFT histogram (bounds 0.1, 1) gains 2 requests of 0.05 s per scrape.
func steadyTTFT(t *testing.T) (*Instance, time.Time) {
	t.Helper()
	h := newHandHistory(t)
	t0 := time.Unix(1_700_000_100, 0) // a multiple of 60 s
	f := newHandHist(0.1, 1)
	for i := 0; i <= 40; i++ {
		f.observe(0.05, 2)
		h.scrape(t0.Add(time.Duration(i)*15*time.Second), "a", "vllm:time_to_first_token_seconds", map[string]string{"model_name": "m"}, f)
	}
	return h.instance(histTarget("a")), t0
}

// Item 5: a window shorter than two scrape intervals holds at most one
// sample per series, so rate() returns nothing. It is raised, with a notice.
func TestWindowShorterThanTwoScrapesIsRaised(t *testing.T) {
	inst, t0 := steadyTTFT(t)
	dr := runHistQuery(t, inst, t0.Add(5*time.Minute), t0.Add(10*time.Minute), 15*time.Second,
		map[string]any{"queryType": "latency", "stages": []string{"ttft"}, "stats": []string{"p50"}, "window": "15s", "bounds": false})
	require.NoError(t, dr.Error)
	p50 := fieldsBy(dr, "stat")["p50"]
	require.NotNil(t, p50)
	nonNull := 0
	for i := 0; i < p50.Len(); i++ {
		if v := p50.At(i).(*float64); v != nil {
			nonNull++
			// Every request took 0.05 s in [0, 0.1]: histogram_quantile interpolates to 0.05.
			assert.InDelta(t, 0.05, *v, 1e-9)
		}
	}
	assert.Equal(t, p50.Len(), nonNull, "every step has a value once the window holds two samples")
	assert.Contains(t, strings.Join(responseNotices(dr), "\n"), "window 15s is shorter than two scrape intervals")
	assert.Contains(t, dr.Frames[0].Meta.ExecutedQueryString, "[30s]")

	// Any window under two scrape intervals is raised to the same minimum.
	dr = runHistQuery(t, inst, t0.Add(5*time.Minute), t0.Add(10*time.Minute), 15*time.Second,
		map[string]any{"queryType": "latency", "stages": []string{"ttft"}, "stats": []string{"mean"}, "window": "1s"})
	require.NoError(t, dr.Error)
	assert.Contains(t, dr.Frames[0].Meta.ExecutedQueryString, "[30s]")
}

// Item 6: Grafana's interval variables in the window are expanded by the
// backend, so an alert rule sending the saved JSON gets the same window.
func TestWindowMacrosExpandedFromTheRequest(t *testing.T) {
	inst, t0 := steadyTTFT(t)
	from, to := t0.Add(5*time.Minute), t0.Add(10*time.Minute) // a 5-minute range
	for window, want := range map[string]string{
		"$__rate_interval":       "[1m15s]", // max(1m interval + 15s scrape, 4 × 15s)
		"${__rate_interval}":     "[1m15s]",
		"$__interval":            "[1m]",
		"$__range":               "[5m]",
		"${__range_s}s":          "[5m]",
		"${__interval_ms}ms":     "[1m]",
		"$__rate_interval_ms ms": "",
	} {
		dr := runHistQuery(t, inst, from, to, time.Minute,
			map[string]any{"queryType": "latency", "stages": []string{"ttft"}, "stats": []string{"mean"}, "window": window})
		if want == "" {
			require.Error(t, dr.Error, window)
			assert.Equal(t, backend.StatusBadRequest, dr.Status)
			assert.Contains(t, dr.Error.Error(), "is not a duration", window)
			continue
		}
		require.NoError(t, dr.Error, window)
		assert.Contains(t, dr.Frames[0].Meta.ExecutedQueryString, want, window)
		mean, _ := lastFloat(fieldsBy(dr, "stat")["mean"])
		assert.InDelta(t, 0.05, mean, 1e-9, window)
	}
}
