package plugin

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/backend"
	"github.com/grafana/grafana-plugin-sdk-go/data"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/tsdb"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/inferscope/inferscope-llm-datasource/pkg/catalog"
	"github.com/inferscope/inferscope-llm-datasource/pkg/settings"
	"github.com/inferscope/inferscope-llm-datasource/pkg/source"
)

// sloProfilesJSON is a settings document with the simulator target and a
// profile whose two objectives are observed when a request finishes (E2E
// and inference time), so both histograms count the same requests; 1.7 s
// is not a bound of vLLM's E2E layout (1.5 and 2 are).
const sloProfilesJSON = `{"targets":[{"name":"sim","url":"http://sim:8000/metrics"}],"sloProfiles":[
 {"name":"chat","objectives":[
  {"name":"e2e-1.7s","signal":"e2e","threshold":1.7,"target":0.99},
  {"name":"inference-1s","signal":"inference_time","threshold":1,"target":0.95}]},
 {"name":"exact","objectives":[
  {"name":"e2e-2s","signal":"e2e","threshold":2,"target":0.9},
  {"name":"errors","kind":"error_ratio","target":0.99}]}]}`

func withProfiles(t *testing.T, inst *Instance) {
	t.Helper()
	st, err := settings.Load([]byte(sloProfilesJSON), nil)
	require.NoError(t, err)
	inst.settings = st
}

func sloRun(t *testing.T, inst *Instance, m map[string]any, from, to time.Time, interval time.Duration) backend.DataResponse {
	t.Helper()
	qjson, err := json.Marshal(m)
	require.NoError(t, err)
	resp, err := inst.QueryData(context.Background(), &backend.QueryDataRequest{Queries: []backend.DataQuery{{
		RefID: "A", QueryType: m["queryType"].(string), JSON: qjson, Interval: interval, MaxDataPoints: 1000,
		TimeRange: backend.TimeRange{From: from, To: to},
	}}})
	require.NoError(t, err)
	return resp.Responses["A"]
}

func TestSettingsStageNamesMatchCatalogue(t *testing.T) {
	var names []string
	for _, s := range catalog.LatencyStages {
		names = append(names, string(s))
	}
	assert.ElementsMatch(t, names, settings.LatencyStageNames)
}

// TestGoodputBoundsHoldTheSimulatorsTruth runs the simulator for an hour
// into a TSDB and checks that, in every 5-minute window, the true share of
// finished requests meeting both objectives (E2E ≤ 1.7 s, not a bucket
// bound, and inference time ≤ 1 s) lies within the goodput bounds divided
// by the request rate.
func TestGoodputBoundsHoldTheSimulatorsTruth(t *testing.T) {
	if testing.Short() {
		t.Skip("fast-forwards an hour of simulated traffic")
	}
	inst, start, truth := simHour(t)
	withProfiles(t, inst)
	joint := jointTruth(t, truth, start)
	dr := sloRun(t, inst, map[string]any{"queryType": "goodput", "profile": "chat", "window": "5m"}, start.Add(5*time.Minute), start.Add(time.Hour), time.Minute)
	require.NoError(t, dr.Error)
	byStat := map[string]*data.Frame{}
	for _, f := range dr.Frames {
		l := f.Fields[1].Labels
		byStat[l["stat"]+"/"+l["bound"]] = f
	}
	lo, hi, req := byStat["goodput/lower"], byStat["goodput/upper"], byStat["requests/"]
	require.NotNil(t, lo)
	require.NotNil(t, hi)
	require.NotNil(t, req)
	checked := 0
	for i := 0; i < lo.Rows(); i++ {
		ts := lo.Fields[0].At(i).(time.Time)
		l, ok1 := lo.Fields[1].ConcreteAt(i)
		u, ok2 := hi.Fields[1].ConcreteAt(i)
		n, ok3 := req.Fields[1].ConcreteAt(i)
		if !ok1 || !ok2 || !ok3 {
			continue
		}
		good, total := joint(ts)
		if total < 20 {
			continue
		}
		checked++
		f := float64(good) / float64(total)
		rate := n.(float64)
		if checked == 1 {
			t.Logf("first window %s: true joint %.4f of %d requests, bounds [%.4f, %.4f]", ts.Format(time.TimeOnly), f, total, l.(float64)/rate, u.(float64)/rate)
		}
		// One request of slack: rate() extrapolates each bucket series to
		// the window's edges, so a window's counts can differ from the
		// observations between its scrapes by a fraction of a request.
		slack := 1 / float64(total)
		assert.GreaterOrEqual(t, f, l.(float64)/rate-slack, "at %s: true joint fraction %.4f under the lower bound %.4f", ts, f, l.(float64)/rate)
		assert.LessOrEqual(t, f, u.(float64)/rate+slack, "at %s: true joint fraction %.4f over the upper bound %.4f", ts, f, u.(float64)/rate)
	}
	require.Greater(t, checked, 40, "too few windows checked")
	t.Logf("true joint fraction inside the goodput bounds in all %d windows", checked)
	notes := dr.Frames[0].Meta.Notices
	require.NotEmpty(t, notes)
	found, bound := false, false
	for _, n := range notes {
		if strings.Contains(n.Text, "Fréchet") {
			found = true
		}
		if strings.Contains(n.Text, "1.7 s is not a bucket bound") {
			assert.Contains(t, n.Text, "le=1.5 and le=2")
			bound = true
		}
	}
	assert.True(t, found, "goodput says it is a bound: %v", notes)
	assert.True(t, bound, "the notices name the bounds around 1.7 s: %v", notes)
}

// jointTruth returns a function counting, for the 5-minute window rate()
// sees at ts, the finished requests meeting both chat objectives and all of
// them. simHour appends each request's E2E and inference time at the same
// index, both observed when it finished.
func jointTruth(t *testing.T, truth map[string][]obs, start time.Time) func(ts time.Time) (int, int) {
	t.Helper()
	e2e, inf := truth["e2e"], truth["inference_time"]
	require.Equal(t, len(e2e), len(inf))
	return func(ts time.Time) (int, int) {
		from := ts.Add(-5*time.Minute).Sub(start).Seconds() + 15
		to := ts.Sub(start).Seconds()
		good, total := 0, 0
		for k, o := range e2e {
			if o.at > from && o.at <= to {
				total++
				if o.v <= 1.7 && inf[k].v <= 1 {
					good++
				}
			}
		}
		return good, total
	}
}

func TestSLOTableOnSimulator(t *testing.T) {
	if testing.Short() {
		t.Skip("fast-forwards an hour of simulated traffic")
	}
	inst, start, truth := simHour(t)
	withProfiles(t, inst)
	to := start.Add(time.Hour)
	dr := sloRun(t, inst, map[string]any{"queryType": "slo", "profile": "exact"}, start, to, time.Minute)
	require.NoError(t, dr.Error)
	require.Len(t, dr.Frames, 1)
	f := dr.Frames[0]
	rowOf := map[string]int{}
	obj, _ := f.FieldByName("objective")
	for i := 0; i < f.Rows(); i++ {
		rowOf[obj.At(i).(string)] = i
	}
	require.Contains(t, rowOf, "e2e-2s")
	require.Contains(t, rowOf, "errors")
	cell := func(name string, row int) any {
		fld, _ := f.FieldByName(name)
		require.NotNil(t, fld, name)
		if v, ok := fld.ConcreteAt(row); ok {
			return v
		}
		return nil
	}
	i := rowOf["e2e-2s"]
	// The simulator stores le="2.0" (Prometheus 3 form): a 2 s threshold is exact.
	assert.Equal(t, true, cell("threshold_exact", i))
	// Attainment over the hour: the share of all E2E observations ≤ 2 s
	// (rate over the whole hour sees every request after the first scrape).
	var good, total int
	for _, o := range truth["e2e"] {
		if o.at > 15 && o.at <= 3600 {
			total++
			if o.v <= 2 {
				good++
			}
		}
	}
	require.Greater(t, total, 100)
	att := cell("attainment", i).(float64)
	assert.InDelta(t, float64(good)/float64(total), att, 0.01)
	assert.Equal(t, att, cell("attainment_lower", i))
	assert.Equal(t, att, cell("attainment_upper", i))
	// Budget over the period (history of one hour): 1 − (1 − att)/(1 − 0.9).
	assert.InDelta(t, 1-(1-att)/0.1, cell("budget_remaining", i).(float64), 0.02)
	// One hour of history out of 30 days.
	assert.InDelta(t, 3600, cell("history", i).(float64), 30)
	st := cell("status", i).(string)
	assert.Contains(t, []string{"ok", "ticket", "page"}, st)
	notes := f.Meta.Notices
	found := false
	for _, n := range notes {
		if strings.Contains(n.Text, "stored history covers about") {
			found = true
		}
	}
	assert.True(t, found, "short-history notice missing: %v", notes)
}

// TestBurnRateStepHistoryThroughPromQL stores a synthetic vLLM E2E
// histogram in a TSDB (15 s scrapes, 1000 requests a minute, 0.1 % slower
// than 2 s except two hours at 5 %, changes on minute boundaries so that
// every 1-minute rate is exact) and runs the burn_rate query over it: the
// status series must follow the multi-window rule at the instants computed
// by hand in analysis/slo's TestStepHistoryBurnAndStatus (target 0.998: burn
// 0.5 healthy, 25 bad; page from the 35th bad minute through the 23rd
// minute after recovery, then ticket until the 6h window holds fewer than 8
// bad minutes), and the 1h burn rate is 25 once the window is all bad.
func TestBurnRateStepHistoryThroughPromQL(t *testing.T) {
	opts := tsdb.DefaultOptions()
	opts.MinBlockDuration = (10 * 24 * time.Hour).Milliseconds()
	opts.MaxBlockDuration = opts.MinBlockDuration
	db, err := tsdb.Open(t.TempDir(), nil, nil, opts, nil)
	require.NoError(t, err)
	t.Cleanup(func() { _ = db.Close() })

	// Minute m's increments land in (t0 + (m−1) min, t0 + m min]; minutes
	// B … B+119 are bad.
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	const B = 3*24*60 + 60
	const minutes = B + 480
	bucket := func(le string) labels.Labels {
		return labels.FromStrings("__name__", "vllm:e2e_request_latency_seconds_bucket", "job", "a", "instance", "a:8000",
			"model_name", "m", "engine", "0", "le", le)
	}
	series := map[string]labels.Labels{"1.0": bucket("1.0"), "2.0": bucket("2.0"), "+Inf": bucket("+Inf")}
	count := labels.FromStrings("__name__", "vllm:e2e_request_latency_seconds_count", "job", "a", "instance", "a:8000", "model_name", "m", "engine", "0")
	app := db.Appender(context.Background())
	var c1, c2, cInf float64
	for k := 0; k <= minutes*4; k++ {
		if k > 0 {
			m := (k + 3) / 4 // scrape k closes a quarter of minute m
			slow := 0.25
			if m >= B && m < B+120 {
				slow = 12.5
			}
			c1 += 125
			c2 += 250 - slow
			cInf += 250
		}
		ts := t0.Add(time.Duration(k) * 15 * time.Second).UnixMilli()
		for le, v := range map[string]float64{"1.0": c1, "2.0": c2, "+Inf": cInf} {
			_, err := app.Append(0, series[le], ts, v)
			require.NoError(t, err)
		}
		_, err := app.Append(0, count, ts, cInf)
		require.NoError(t, err)
		if k%1000 == 0 {
			require.NoError(t, app.Commit())
			app = db.Appender(context.Background())
		}
	}
	require.NoError(t, app.Commit())

	st, err := settings.Load([]byte(`{"targets":[{"name":"a","url":"http://a:8000/metrics","engine":"vllm"}],
		"sloProfiles":[{"name":"p","objectives":[{"name":"e2e-2s","signal":"e2e","threshold":2,"target":0.998}]}]}`), nil)
	require.NoError(t, err)
	inst := newInstanceForTest(st, source.NewEmbedded(db, source.EmbeddedOptions{}))
	at := func(m int) time.Time { return t0.Add(time.Duration(m) * time.Minute) }
	dr := sloRun(t, inst, map[string]any{"queryType": "burn_rate", "profile": "p"}, at(B-10), at(minutes), time.Minute)
	require.NoError(t, dr.Error)
	var status, burn1h *data.Frame
	for _, f := range dr.Frames {
		l := f.Fields[1].Labels
		switch {
		case f.Name == "status":
			status = f
		case l["window"] == "1h":
			burn1h = f
		}
	}
	require.NotNil(t, status)
	require.NotNil(t, burn1h)
	want := func(m int) float64 {
		switch {
		case m >= B+34 && m <= B+142:
			return 2
		case m >= B+143 && m <= B+471:
			return 1
		}
		return 0
	}
	checked, changes := 0, 0
	prev := -1.0
	for i := 0; i < status.Rows(); i++ {
		ts := status.Fields[0].At(i).(time.Time)
		m := int(ts.Sub(t0) / time.Minute)
		v, ok := status.Fields[1].ConcreteAt(i)
		require.True(t, ok, "status null at minute %d", m)
		require.Equal(t, want(m), v.(float64), "status at minute B%+d", m-B)
		if prev >= 0 && v.(float64) != prev {
			changes++
		}
		prev = v.(float64)
		checked++
		if m == B+59 {
			b, _ := burn1h.Fields[1].ConcreteAt(i)
			assert.InDelta(t, 25, b.(float64), 1e-9, "1h burn once the hour is all bad")
		}
	}
	t.Logf("%d steps checked, %d status changes", checked, changes)
	assert.Equal(t, 3, changes, "ok → page → ticket → ok, no flapping")
	assert.Greater(t, checked, 480)

	// format "status": what an alert rule asks for, the same status series alone.
	dr = sloRun(t, inst, map[string]any{"queryType": "burn_rate", "profile": "p", "format": "status"}, at(B-10), at(minutes), time.Minute)
	require.NoError(t, dr.Error)
	require.Len(t, dr.Frames, 1)
	only := dr.Frames[0]
	require.Equal(t, "status", only.Name)
	require.Equal(t, status.Rows(), only.Rows())
	for i := 0; i < only.Rows(); i++ {
		a, _ := status.Fields[1].ConcreteAt(i)
		b, _ := only.Fields[1].ConcreteAt(i)
		require.Equal(t, a, b)
	}
	dr = sloRun(t, inst, map[string]any{"queryType": "burn_rate", "profile": "p", "format": "table"}, at(B-10), at(minutes), time.Minute)
	require.ErrorContains(t, dr.Error, "format")
}
