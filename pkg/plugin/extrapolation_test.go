package plugin

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// firstHits stores a vLLM target "a" (TTFT bounds 0.1, 1) scraped every 15 s
// for 15 minutes. 100 requests of 5 s happened before the first scrape, so
// +Inf starts at 100 while both finite buckets start at 0. From scrape 21 to
// 26, 5 requests of 0.05 s arrive per scrape (30 in all). With restart, the
// process restarts after scrape 40 (every counter back to 0) and serves 5
// requests of 0.05 s per scrape from scrape 41 to 46.
func firstHits(t *testing.T, restart bool) (*Instance, time.Time) {
	t.Helper()
	h := newHandHistory(t)
	t0 := time.Unix(1_700_000_100, 0)
	f := newHandHist(0.1, 1)
	f.observe(5, 100)
	m := map[string]string{"model_name": "m"}
	for i := 0; i <= 60; i++ {
		if i >= 21 && i <= 26 {
			f.observe(0.05, 5)
		}
		if restart && i == 41 {
			f.reset()
		}
		if restart && i >= 41 && i <= 46 {
			f.observe(0.05, 5)
		}
		h.scrape(t0.Add(time.Duration(i)*15*time.Second), "a", "vllm:time_to_first_token_seconds", m, f)
	}
	return h.instance(histTarget("a")), t0
}

// Item 3: rate() extrapolates each bucket series by its own factor; a bucket
// whose first sample in the window is 0 is extrapolated less (the zero-point
// clamp) than +Inf, which started at 100, so the first windows of the burst
// put part of it "above 1 s" and p95 came out clamped at 1 s. One scale per
// histogram and window keeps every window's p95 inside [0, 0.1], the bucket
// holding all of the window's requests, at every window edge of the burst.
func TestBoundsHoldUnderExtrapolationAtFirstHits(t *testing.T) {
	inst, t0 := firstHits(t, false)
	dr := runHistQuery(t, inst, t0.Add(2*time.Minute), t0.Add(15*time.Minute), 15*time.Second, map[string]any{
		"queryType": "latency", "stages": []string{"ttft"}, "stats": []string{"p50", "p95", "p99"}, "window": "2m"})
	require.NoError(t, dr.Error)
	requireFinite(t, dr, "first hits")
	f := fieldsBy(dr, "stat", "bound")
	withData := 0
	for _, stat := range []string{"p50", "p95", "p99"} {
		v, lo, hi := f[stat+"/"], f[stat+"/lower"], f[stat+"/upper"]
		for i := 0; i < v.Len(); i++ {
			x := v.At(i).(*float64)
			if x == nil {
				continue
			}
			withData++
			require.NotNil(t, hi.At(i), "%s step %d: upper bound null (clamped)", stat, i)
			assert.Equal(t, 0.0, *lo.At(i).(*float64), "%s step %d lower", stat, i)
			assert.Equal(t, 0.1, *hi.At(i).(*float64), "%s step %d: every request of the window took 0.05 s", stat, i)
			assert.LessOrEqual(t, *x, 0.1)
		}
	}
	// The burst (scrapes 21–26) is seen by the 2-minute windows ending at scrapes 22 to 33.
	assert.Equal(t, 3*12, withData)
	assert.NotContains(t, strings.Join(responseNotices(dr), "\n"), "clamped")
	// The magnitudes still follow rate(): the mean has its own query, and the
	// request rate is _count's rate, so refined and means are unchanged.
	assert.Contains(t, dr.Frames[0].Meta.ExecutedQueryString, "delta(vllm:time_to_first_token_seconds_bucket")
}

// Item 3 at a restart: windows that contain the counter reset fall back to
// rate() per bucket with a notice saying the bounds are not guaranteed there;
// windows after it (counters from 0) are consistent again.
func TestRestartWindowsFallBackWithNotice(t *testing.T) {
	inst, t0 := firstHits(t, true)
	dr := runHistQuery(t, inst, t0.Add(8*time.Minute), t0.Add(15*time.Minute), 15*time.Second, map[string]any{
		"queryType": "latency", "stages": []string{"ttft"}, "stats": []string{"p95"}, "window": "2m"})
	require.NoError(t, dr.Error)
	requireFinite(t, dr, "restart")
	notes := strings.Join(responseNotices(dr), "\n")
	// Windows (t−2m, t] holding both scrape 40 and 41 end at scrapes 41 to 47: 7 steps.
	assert.Contains(t, notes, "a counter reset (a restart) falls in the window of 7 of 29 steps")
	assert.Contains(t, dr.Frames[0].Meta.ExecutedQueryString, "rate(vllm:time_to_first_token_seconds_bucket", "the rate() buckets are fetched for the fallback")
	f := fieldsBy(dr, "stat", "bound")
	hi := f["p95/upper"]
	v := f["p95/"]
	checked := 0
	for i := 0; i < v.Len(); i++ {
		ts := t0.Add(8*time.Minute + time.Duration(i)*15*time.Second)
		if v.At(i).(*float64) == nil || ts.Before(t0.Add(48*15*time.Second)) {
			continue // no requests, or a window holding the reset
		}
		checked++
		require.NotNil(t, hi.At(i))
		assert.Equal(t, 0.1, *hi.At(i).(*float64), "step %s after the restart", ts.Sub(t0))
	}
	assert.Positive(t, checked)
}

// The histogram consistency checks (sanity.HistogramChecks) now read the
// delta() increases of buckets, _sum and _count: a page whose _count grows
// twice as fast as its +Inf bucket is still named.
func TestHistogramChecksOnIncreases(t *testing.T) {
	h := newHandHistory(t)
	t0 := time.Unix(1_700_000_100, 0)
	m := map[string]string{"model_name": "m"}
	for i := 0; i <= 40; i++ {
		ts := t0.Add(time.Duration(i) * 15 * time.Second)
		n := float64(2 * i)
		h.sample(ts, "a", "vllm:time_to_first_token_seconds_bucket", map[string]string{"model_name": "m", "le": "0.1"}, n)
		h.sample(ts, "a", "vllm:time_to_first_token_seconds_bucket", map[string]string{"model_name": "m", "le": "+Inf"}, n)
		h.sample(ts, "a", "vllm:time_to_first_token_seconds_sum", m, 0.05*n)
		h.sample(ts, "a", "vllm:time_to_first_token_seconds_count", m, 2*n)
	}
	inst := h.instance(histTarget("a"))
	dr := runHistQuery(t, inst, t0.Add(5*time.Minute), t0.Add(10*time.Minute), time.Minute, map[string]any{
		"queryType": "latency", "stages": []string{"ttft"}, "stats": []string{"p50"}, "window": "5m"})
	require.NoError(t, dr.Error)
	assert.Contains(t, strings.Join(responseNotices(dr), "\n"), "the histogram contradicts itself")
}
