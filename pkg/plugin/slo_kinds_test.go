package plugin

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/data"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/tsdb"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/inferscope/inferscope-llm-datasource/pkg/settings"
	"github.com/inferscope/inferscope-llm-datasource/pkg/source"
)

// kindsStore is one hour of 15 s scrapes (241 samples from t0) of three
// vLLM targets, every request good:
//   - a: vLLM's default TTFT layout (…, 1.0, 2.5, …), 4 requests a scrape,
//     all in (0.5, 0.75] s;
//   - b: a custom layout with a 2.0 bound, 4 requests a scrape, all in
//     (1.0, 2.0] s;
//   - c: the inference handler answers 96 2xx, 2 4xx and 2 5xx per scrape
//     (the 960 : 20 : 20 page), /v1/models 50; `up` is 0 for the 20
//     scrapes of minutes [30, 35) and 1 otherwise.
func kindsStore(t *testing.T) (*Instance, time.Time) {
	t.Helper()
	db, err := tsdb.Open(t.TempDir(), nil, nil, tsdb.DefaultOptions(), nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = db.Close() })
	t0 := time.Now().Add(-2 * time.Hour).Truncate(time.Hour)
	app := db.Appender(context.Background())
	add := func(l labels.Labels, k int, v float64) {
		_, err := app.Append(0, l, t0.Add(time.Duration(k)*15*time.Second).UnixMilli(), v)
		require.NoError(t, err)
	}
	ttft := func(job, le string) labels.Labels {
		return labels.FromStrings("__name__", "vllm:time_to_first_token_seconds_bucket", "job", job, "instance", job+":8000", "model_name", "m", "engine", "0", "le", le)
	}
	http := func(handler, status string) labels.Labels {
		return labels.FromStrings("__name__", "http_requests_total", "job", "c", "instance", "c:8000", "handler", handler, "method", "POST", "status", status)
	}
	aLayout := []float64{0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5, 10}
	bLayout := []float64{0.5, 1, 2, 4}
	for k := 0; k <= 240; k++ {
		n := float64(4 * k)
		for _, le := range aLayout {
			v := 0.0
			if le >= 0.75 {
				v = n
			}
			add(ttft("a", strconv.FormatFloat(le, 'f', 1, 64)), k, v)
		}
		add(ttft("a", "+Inf"), k, n)
		for _, le := range bLayout {
			v := 0.0
			if le >= 2 {
				v = n
			}
			add(ttft("b", strconv.FormatFloat(le, 'f', 1, 64)), k, v)
		}
		add(ttft("b", "+Inf"), k, n)
		add(http("/v1/chat/completions", "2xx"), k, float64(96*k))
		add(http("/v1/chat/completions", "4xx"), k, float64(2*k))
		add(http("/v1/chat/completions", "5xx"), k, float64(2*k))
		add(http("/v1/models", "2xx"), k, float64(50*k))
		up := 1.0
		if k >= 120 && k < 140 {
			up = 0
		}
		add(labels.FromStrings("__name__", "up", "job", "c", "instance", "c:8000"), k, up)
	}
	require.NoError(t, app.Commit())
	st, err := settings.Load([]byte(`{"targets":[
		{"name":"a","url":"http://a:8000/metrics","engine":"vllm"},
		{"name":"b","url":"http://b:8000/metrics","engine":"vllm"},
		{"name":"c","url":"http://c:8000/metrics","engine":"vllm"}],
	  "sloProfiles":[{"name":"p","objectives":[
		{"name":"ttft-2s","signal":"ttft","threshold":2,"target":0.99},
		{"name":"errors","kind":"error_ratio","target":0.98},
		{"name":"up","kind":"availability","target":0.999}]}]}`), nil)
	require.NoError(t, err)
	return newInstanceForTest(st, source.NewEmbedded(db, source.EmbeddedOptions{})), t0
}

func sloRows(t *testing.T, f *data.Frame) []map[string]any {
	var rows []map[string]any
	for i := 0; i < f.Rows(); i++ {
		r := map[string]any{}
		for _, fl := range f.Fields {
			if v, ok := fl.ConcreteAt(i); ok {
				r[fl.Name] = v
			}
		}
		rows = append(rows, r)
	}
	return rows
}

func TestSLOMixedLayoutsErrorsAndDownTimeThroughPromQL(t *testing.T) {
	inst, t0 := kindsStore(t)
	from, to := t0.Add(10*time.Minute), t0.Add(time.Hour)
	for _, groupBy := range []string{"none", "model", "target"} {
		dr := sloRun(t, inst, map[string]any{"queryType": "slo", "profile": "p", "objectives": []string{"ttft-2s"}, "groupBy": groupBy}, from, to, time.Minute)
		require.NoError(t, dr.Error)
		rows := sloRows(t, dr.Frames[0])
		require.NotEmpty(t, rows)
		for _, r := range rows {
			// Every request of a and b is under 2 s: attainment 1, budget 100 %,
			// status ok. Summed bound by bound (le=2.0 holds only b's requests),
			// it read 0.5 and a budget of −4900 %.
			assert.Equal(t, 1.0, r["attainment"], "groupBy %s %v", groupBy, r)
			assert.Equal(t, 1.0, r["attainment_lower"], "groupBy %s", groupBy)
			assert.Equal(t, 1.0, r["budget_remaining"], "groupBy %s", groupBy)
			assert.Equal(t, "ok", r["status"], "groupBy %s", groupBy)
			assert.Equal(t, "requests", r["count_unit"])
		}
		if groupBy == "target" {
			assert.Len(t, rows, 2)
		} else {
			assert.Len(t, rows, 1)
		}
	}

	// Error ratio over the last 50 minutes: 2 5xx of every 100 inference
	// requests (4xx and /v1/models not counted): attainment 0.98, burn 1 at
	// target 0.98, budget 0.
	dr := sloRun(t, inst, map[string]any{"queryType": "slo", "profile": "p", "objectives": []string{"errors"}, "groupBy": "target"}, from, to, time.Minute)
	require.NoError(t, dr.Error)
	rows := sloRows(t, dr.Frames[0])
	require.Len(t, rows, 1)
	assert.Equal(t, "c", rows[0]["target"])
	assert.InDelta(t, 0.98, rows[0]["attainment"], 1e-9)
	assert.InDelta(t, 1, rows[0]["burn_1h"], 1e-9)
	assert.Equal(t, "error_ratio", rows[0]["signal"])

	// Availability over the range (50 minutes to t0 + 1h, serving state at
	// 15 s): up is 0 for the 20 samples of minutes [30, 35), so 180 of the
	// 200 samples in (10m, 60m] serve: 0.9; the unit is seconds (200 × 15 s).
	dr = sloRun(t, inst, map[string]any{"queryType": "slo", "profile": "p", "objectives": []string{"up"}, "groupBy": "target"}, from, to, time.Minute)
	require.NoError(t, dr.Error)
	rows = sloRows(t, dr.Frames[0])
	require.Len(t, rows, 1)
	assert.InDelta(t, 0.9, rows[0]["attainment"], 1e-9)
	assert.InDelta(t, 3000, rows[0]["requests"], 1e-9)
	assert.Equal(t, "seconds", rows[0]["count_unit"])
	assert.Equal(t, "availability", rows[0]["signal"])
	// The store holds one hour: the rows of 6h, 1d and 3d are not evaluated.
	assert.Equal(t, "page 6h/30m, ticket 1d/2h, ticket 3d/6h", rows[0]["not_evaluated"])
}

func TestBurnRateSustainedFormat(t *testing.T) {
	// Target d: 4 TTFT observations per 15 s scrape for an hour, all under
	// 1 s, except the increments of scrapes 161 … 180 (minutes (40, 45]),
	// all between 2 and 4 s. Objective TTFT ≤ 2 s (a bound) at 0.99.
	db, err := tsdb.Open(t.TempDir(), nil, nil, tsdb.DefaultOptions(), nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = db.Close() })
	t0 := time.Now().Add(-2 * time.Hour).Truncate(time.Hour)
	app := db.Appender(context.Background())
	var good, total float64
	for k := 0; k <= 240; k++ {
		if k > 0 {
			total += 4
			if k <= 160 || k > 180 {
				good += 4
			}
		}
		for le, v := range map[string]float64{"1.0": good, "2.0": good, "4.0": total, "+Inf": total} {
			l := labels.FromStrings("__name__", "vllm:time_to_first_token_seconds_bucket", "job", "d", "instance", "d:8000", "model_name", "m", "engine", "0", "le", le)
			_, err := app.Append(0, l, t0.Add(time.Duration(k)*15*time.Second).UnixMilli(), v)
			require.NoError(t, err)
		}
	}
	require.NoError(t, app.Commit())
	st, err := settings.Load([]byte(`{"targets":[{"name":"d","url":"http://d:8000/metrics","engine":"vllm"}],
	  "sloProfiles":[{"name":"p","objectives":[{"name":"ttft-2s","signal":"ttft","threshold":2,"target":0.99}]}]}`), nil)
	require.NoError(t, err)
	inst := newInstanceForTest(st, source.NewEmbedded(db, source.EmbeddedOptions{}))
	dr := sloRun(t, inst, map[string]any{"queryType": "burn_rate", "profile": "p", "format": "sustained"}, t0.Add(36*time.Minute), t0.Add(50*time.Minute), time.Minute)
	require.NoError(t, dr.Error)
	require.Len(t, dr.Frames, 1)
	f := dr.Frames[0]
	assert.Equal(t, "2m", f.Fields[1].Labels["window"])
	assert.Equal(t, "favourable", f.Fields[1].Labels["bound"])
	// Each 1-minute step (m−1, m] sees its scrapes' increments, all bad for
	// m = 41 … 45. The 2m window at m holds steps m−1 and m: m = 41 half bad
	// (burn 0.5/0.01 = 50), 42 … 45 all bad (100), 46 half (50), 47 none.
	// Above 1 from 41 through 46: 6 minutes, so a `for: 5m` rule pages.
	want := map[int]float64{40: 0, 41: 50, 42: 100, 45: 100, 46: 50, 47: 0}
	got := map[int]float64{}
	for k := 0; k < f.Rows(); k++ {
		ts := f.Fields[0].At(k).(time.Time)
		m := int(ts.Sub(t0) / time.Minute)
		if v, ok := f.Fields[1].ConcreteAt(k); ok {
			got[m] = v.(float64)
		}
	}
	for m, w := range want {
		assert.InDelta(t, w, got[m], 1e-6, "minute %d", m)
	}

	// The burn-down (format budget): the budget over the 30-day period
	// at each minute; the store holds the history since t0 (4 requests per
	// 15 s scrape, 80 bad in minutes (40, 45]). Minute 40: nothing bad, 1.
	// Minute 45: 80 bad of 720 → 1 − (80/720)/0.01 = −10.11. Minute 50: 80
	// of 800 → 1 − 10 = −9.
	dr = sloRun(t, inst, map[string]any{"queryType": "burn_rate", "profile": "p", "format": "budget"}, t0.Add(36*time.Minute), t0.Add(50*time.Minute), time.Minute)
	require.NoError(t, dr.Error)
	require.Len(t, dr.Frames, 1)
	budget := map[int]float64{}
	for _, fr := range dr.Frames {
		if fr.Fields[1].Labels["stat"] != "budget" {
			continue
		}
		for k := 0; k < fr.Rows(); k++ {
			if v, ok := fr.Fields[1].ConcreteAt(k); ok {
				budget[int(fr.Fields[0].At(k).(time.Time).Sub(t0)/time.Minute)] = v.(float64)
			}
		}
	}
	assert.InDelta(t, 1, budget[40], 1e-9)
	assert.InDelta(t, 1-(80.0/720)/0.01, budget[45], 1e-9)
	assert.InDelta(t, -9, budget[50], 1e-9)

	// The latency query with the profile marks the spike windows: the 1m
	// windows of minutes 41 … 45 hold only requests in (2, 4] s (p99 above
	// 2 s), the others only requests ≤ 1 s.
	dr = sloRun(t, inst, map[string]any{"queryType": "latency", "profile": "p", "stages": []string{"ttft"}, "stats": []string{"p99"}}, t0.Add(36*time.Minute), t0.Add(50*time.Minute), time.Minute)
	require.NoError(t, dr.Error)
	spikes := map[int]float64{}
	for _, fr := range dr.Frames {
		if fr.Fields[1].Labels["stat"] != "spike" {
			continue
		}
		for k := 0; k < fr.Rows(); k++ {
			if v, ok := fr.Fields[1].ConcreteAt(k); ok {
				spikes[int(fr.Fields[0].At(k).(time.Time).Sub(t0)/time.Minute)] = v.(float64)
			}
		}
	}
	assert.Equal(t, map[int]float64{36: 0, 37: 0, 38: 0, 39: 0, 40: 0, 41: 1, 42: 1, 43: 1, 44: 1, 45: 1, 46: 0, 47: 0, 48: 0, 49: 0, 50: 0}, spikes)
}

func TestSLOOnSelfContradictingHistogram(t *testing.T) {
	// Target e: every TTFT observation in the lowest bucket (≤ 1 ms) while
	// the mean is 0.46 s: 4 per 15 s scrape, _sum growing by 4 × 0.46.
	db, err := tsdb.Open(t.TempDir(), nil, nil, tsdb.DefaultOptions(), nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = db.Close() })
	t0 := time.Now().Add(-2 * time.Hour).Truncate(time.Hour)
	app := db.Appender(context.Background())
	base := func(name string, kv ...string) labels.Labels {
		return labels.FromStrings(append([]string{"__name__", name, "job", "e", "instance", "e:8000", "model_name", "m", "engine", "0"}, kv...)...)
	}
	for k := 0; k <= 240; k++ {
		n := float64(4 * k)
		ts := t0.Add(time.Duration(k) * 15 * time.Second).UnixMilli()
		for _, x := range []struct {
			l labels.Labels
			v float64
		}{
			{base("vllm:time_to_first_token_seconds_bucket", "le", "0.001"), n},
			{base("vllm:time_to_first_token_seconds_bucket", "le", "2.0"), n},
			{base("vllm:time_to_first_token_seconds_bucket", "le", "+Inf"), n},
			{base("vllm:time_to_first_token_seconds_sum"), 0.46 * n},
			{base("vllm:time_to_first_token_seconds_count"), n},
		} {
			_, err := app.Append(0, x.l, ts, x.v)
			require.NoError(t, err)
		}
	}
	require.NoError(t, app.Commit())
	st, err := settings.Load([]byte(`{"targets":[{"name":"e","url":"http://e:8000/metrics","engine":"vllm"}],
	  "sloProfiles":[{"name":"p","objectives":[{"name":"ttft-2s","signal":"ttft","threshold":2,"target":0.99}]}]}`), nil)
	require.NoError(t, err)
	inst := newInstanceForTest(st, source.NewEmbedded(db, source.EmbeddedOptions{}))
	dr := sloRun(t, inst, map[string]any{"queryType": "slo", "profile": "p"}, t0.Add(10*time.Minute), t0.Add(time.Hour), time.Minute)
	require.NoError(t, dr.Error)
	rows := sloRows(t, dr.Frames[0])
	require.Len(t, rows, 1)
	// The buckets say every request took at most 1 ms (attainment 1), the
	// mean says 0.46 s: the status is not "ok", and the latency query's
	// warning is shown.
	// One verdict per histogram (issue 22): the row draws nothing from it,
	// status "unknown" (an alert rule's no data, never ok).
	assert.Equal(t, "unknown", rows[0]["status"])
	assert.Contains(t, rows[0]["reason"], "contradicts itself")
	found := false
	for _, n := range dr.Frames[0].Meta.Notices {
		if strings.Contains(n.Text, "histogram inconsistent") {
			found = true
		}
	}
	assert.True(t, found, "notices: %v", dr.Frames[0].Meta.Notices)
	// The same warning in burn_rate, goodput and buckets; buckets gives no advice from it.
	for _, qt := range []string{"burn_rate", "goodput", "buckets"} {
		q := map[string]any{"queryType": qt, "profile": "p", "stages": []string{"ttft"}}
		dr := sloRun(t, inst, q, t0.Add(10*time.Minute), t0.Add(time.Hour), time.Minute)
		require.NoError(t, dr.Error, qt)
		require.NotEmpty(t, dr.Frames, qt)
		var texts []string
		for _, n := range dr.Frames[0].Meta.Notices {
			texts = append(texts, n.Text)
		}
		assert.Contains(t, strings.Join(texts, "\n"), "contradicts itself", qt)
		if qt == "buckets" {
			assert.Contains(t, strings.Join(texts, "\n"), "No quantile, bound, SLO attainment, burn rate, goodput or bucket advice is drawn from it")
			assert.Zero(t, dr.Frames[0].Rows(), "no advice rows")
		}
	}
}
