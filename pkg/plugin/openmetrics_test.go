package plugin

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/backend"
	"github.com/grafana/grafana-plugin-sdk-go/data"
	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The vLLM Rust front end (VLLM_USE_RUST_FRONTEND=1) serves its /metrics page as
// `application/openmetrics-text; version=1.0.0` whatever the Accept header says: counter
// `# TYPE` lines carry the family's base name (`# TYPE vllm:prompt_tokens counter`) while the
// samples keep `_total`, there are no `_created` samples and the page ends with `# EOF`. The
// Python front end serves the Prometheus text format 0.0.4 (`# TYPE vllm:prompt_tokens_total
// counter`, `_created` gauges). Both testdata pages below carry the same numbers.
const (
	rustFrontendPage   = "testdata/vllm-rust-frontend-openmetrics.om"
	pythonFrontendPage = "testdata/vllm-rust-frontend-python-text.prom"
	openMetricsType    = "application/openmetrics-text; version=1.0.0; charset=utf-8"
	textFormatType     = "text/plain; version=0.0.4; charset=utf-8"
)

// scaledPage serves a page as written, with every counter and histogram sample (not
// `_created`, not gauges) multiplied by 1 + growth·(t − t0) at the time of the request, under
// a fixed content type. The family of a sample is found from the page's `# TYPE` lines, so
// it works for both spellings of a counter. With one factor per scrape, quantiles over any
// window are the page's own (the factor cancels); rates are base·growth.
//
// onGrid(step) switches the page to a clock of its own, for the tests whose rates must hold
// on a loaded machine: the n-th request is answered as at t0 + n·step, and every sample carries
// that time as its explicit timestamp (which the collector honours). The stored samples then lie
// exactly on the line base·(1 + growth·t) at exactly one step apart, however late a busy
// machine scrapes; a scrape the plugin gave up on leaves a gap, which gridEnd waits past.
type scaledPage struct {
	lines       []string
	kind        map[string]string
	t0          time.Time
	growth      float64
	contentType string
	step        time.Duration // > 0: the page's own clock, see onGrid
	served      atomic.Int64  // requests answered on the page's own clock
	first       string        // the name of the page's first sample, for gridEnd
}

// onGrid puts the page on its own clock of one step per request (see scaledPage).
func (p *scaledPage) onGrid(step time.Duration) *scaledPage {
	p.step = step
	return p
}

// last is the page's own time of its latest answer (t0 before the first).
func (p *scaledPage) last() time.Time {
	return p.t0.Add(time.Duration(p.served.Load()) * p.step)
}

// gridEnd waits (up to three minutes) until, for every job's page (on its own clock), the
// store holds every one of that page's samples from span before the earliest page's latest
// answer up to it, each one step apart, and returns that time: a query whose windows end
// there and lie inside span reads only complete, evenly spaced samples, where Prometheus's
// rate() extrapolates to the window's edges in full and so equals the page's own rate.
func gridEnd(t *testing.T, inst *Instance, pages map[string]*scaledPage, span time.Duration) time.Time {
	t.Helper()
	var end time.Time
	require.Eventually(t, func() bool {
		end = time.Time{}
		for _, p := range pages {
			if l := p.last(); end.IsZero() || l.Before(end) {
				end = l
			}
		}
		end = end.Truncate(time.Millisecond) // as stored
		for job, p := range pages {
			sel := fmt.Sprintf(`{__name__=%q, job=%q}[%dms]`, p.first, job, (span + 2*p.step).Milliseconds())
			v, err := inst.querier.Query(context.Background(), sel, end)
			if err != nil {
				return false
			}
			m, ok := v.(model.Matrix)
			if !ok || len(m) == 0 {
				return false
			}
			var in []model.SamplePair
			for _, sp := range m[0].Values {
				if ts := sp.Timestamp.Time(); !ts.Before(end.Add(-span)) && !ts.After(end) {
					in = append(in, sp)
				}
			}
			if len(in) != int(span/p.step)+1 || !in[len(in)-1].Timestamp.Time().Equal(end) {
				return false
			}
		}
		return true
	}, 3*time.Minute, 200*time.Millisecond, "the pages never served a complete stretch of %v", span)
	return end
}

func newScaledPage(t *testing.T, path, contentType string, t0 time.Time, growth float64) *scaledPage {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	p := &scaledPage{kind: map[string]string{}, t0: t0, growth: growth, contentType: contentType}
	p.lines = strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	for _, l := range p.lines {
		if f := strings.Fields(l); len(f) == 4 && f[0] == "#" && f[1] == "TYPE" {
			p.kind[f[2]] = f[3]
		}
	}
	for _, l := range p.lines {
		if l == "" || strings.HasPrefix(l, "#") {
			continue
		}
		if name := strings.FieldsFunc(l, func(r rune) bool { return r == '{' || r == ' ' })[0]; p.family(name) == "counter" {
			p.first = name
			break
		}
	}
	return p
}

// family is the `# TYPE` name a sample belongs to and its type.
func (p *scaledPage) family(sample string) string {
	if k, ok := p.kind[sample]; ok {
		return k
	}
	if strings.HasSuffix(sample, "_created") {
		return "created"
	}
	for _, suf := range []string{"_total", "_bucket", "_sum", "_count"} {
		if b, ok := strings.CutSuffix(sample, suf); ok {
			if k, ok := p.kind[b]; ok {
				return k
			}
		}
	}
	return ""
}

func (p *scaledPage) ServeHTTP(w http.ResponseWriter, _ *http.Request) {
	now, stamp := time.Now(), ""
	if p.step > 0 {
		now = p.t0.Add(time.Duration(p.served.Add(1)) * p.step)
		stamp = " " + strconv.FormatInt(now.UnixMilli(), 10)
		if strings.HasPrefix(p.contentType, "application/openmetrics-text") {
			stamp = " " + strconv.FormatFloat(float64(now.UnixMilli())/1000, 'f', 3, 64)
		}
	}
	f := 1 + p.growth*now.Sub(p.t0).Seconds()
	var sb strings.Builder
	for _, l := range p.lines {
		if l == "" || strings.HasPrefix(l, "#") {
			sb.WriteString(l + "\n")
			continue
		}
		cut := strings.LastIndexByte(l, ' ')
		name := l[:cut]
		if i := strings.IndexByte(name, '{'); i >= 0 {
			name = name[:i]
		}
		switch p.family(name) {
		case "counter", "histogram":
			v, err := strconv.ParseFloat(l[cut+1:], 64)
			if err != nil {
				http.Error(w, err.Error(), http.StatusInternalServerError)
				return
			}
			sb.WriteString(l[:cut+1] + strconv.FormatFloat(v*f, 'g', -1, 64) + stamp + "\n")
		default:
			sb.WriteString(l + stamp + "\n")
		}
	}
	w.Header().Set("Content-Type", p.contentType)
	_, _ = w.Write([]byte(sb.String()))
}

// lastValues maps each frame's name to the last non-null value of its value field.
func lastValues(t *testing.T, fs data.Frames) map[string]float64 {
	t.Helper()
	out := map[string]float64{}
	for _, f := range fs {
		if len(f.Fields) < 2 {
			continue
		}
		v := f.Fields[1]
		for r := v.Len() - 1; r >= 0; r-- {
			switch x := v.At(r).(type) {
			case *float64:
				if x == nil || math.IsNaN(*x) {
					continue
				}
				out[f.Name] = *x
			case float64:
				if math.IsNaN(x) {
					continue
				}
				out[f.Name] = x
			default:
				continue
			}
			break
		}
	}
	return out
}

// TestOpenMetricsRustFrontendSameAnswers: a target serving the Rust front end's OpenMetrics
// page and one serving the Python front end's text page with the same numbers give the same
// latency, throughput and saturation answers through QueryData, and both equal the answers
// worked out by hand from the page:
//
//   - TTFT buckets (cumulative, 100 requests): 0.04→10, 0.06→30, 0.08→60, 0.1→75, 0.25→90,
//     0.5→96, 0.75→98, 1→100; sum 12.5 s. p50: rank 50 in (0.06, 0.08] holding 30…60, so
//     0.06 + 0.02·20/30 = 0.073333 s, bounds 0.06 and 0.08; p99: rank 99 in (0.75, 1] holding
//     98…100, 0.75 + 0.25·1/2 = 0.875 s; mean 12.5/100 = 0.125 s.
//   - ITL (3000 gaps): 0.01→200, 0.025→1800, …; p50: rank 1500 in (0.01, 0.025], 0.01 +
//     0.015·1300/1600 = 0.0221875 s; mean 75/3000 = 0.025 s.
//   - TPOT (100 requests): 0.01→5, 0.025→60, 0.05→95, 0.075→100; p50: 0.01 + 0.015·45/55 =
//     0.0222727 s.
//   - E2E: 0.5→5, 0.8→20, 1→40, 1.5→70, …; p50: 1 + 0.5·10/30 = 1.1666667 s.
//   - Queue time: 0.3→90, 0.5→95, …; p50: 0.3·50/90 = 0.1666667 s.
//   - Rates grow by growth = 0.05 of the page per second: prompt 12000 → 600 tokens/s,
//     generation 3000 → 150 tokens/s, stop 95 → 4.75 requests/s, length 5 → 0.25,
//     preemptions 2 → 0.1/s; prefix-cache hits/queries 3000/12000 = 0.25.
//   - Gauges as on the page: running 3, waiting 2, KV-cache usage 0.25.
//
// Tolerances: quantiles, bounds, means and ratios 1e-9 relative (one factor per scrape
// cancels); rates 5e-2 (the pages are on their own clocks, onGrid, and the queries end inside
// a complete stretch of samples, gridEnd, so rates are exact but for the rounding of a
// sample's timestamp to the millisecond; the tolerance is kept from when they were not);
// gauges exact.
func TestOpenMetricsRustFrontendSameAnswers(t *testing.T) {
	if testing.Short() {
		t.Skip("scrapes two loopback targets for about ten seconds")
	}
	t0 := time.Now()
	omPage := newScaledPage(t, rustFrontendPage, openMetricsType, t0, 0.05).onGrid(time.Second)
	om := httptest.NewServer(omPage)
	defer om.Close()
	txtPage := newScaledPage(t, pythonFrontendPage, textFormatType, t0, 0.05).onGrid(time.Second)
	txt := httptest.NewServer(txtPage)
	defer txt.Close()
	inst := newLiveInstance(t, "openmetrics", map[string]any{"storagePath": t.TempDir(),
		"scrapeInterval": "1s", "scrapeTimeout": "1s", "retention": "1h",
		"targets": []map[string]any{{"name": "rust", "url": om.URL + "/metrics"}, {"name": "python", "url": txt.URL + "/metrics"}}})
	defer inst.Dispose()
	// Windows of 4 s at the last step, inside 6 s of complete samples on the pages' own clocks.
	end := gridEnd(t, inst, map[string]*scaledPage{"rust": omPage, "python": txtPage}, 6*time.Second)

	query := func(target string, q map[string]any) map[string]float64 {
		t.Helper()
		q["targets"] = []string{target}
		q["window"] = "4s"
		js, err := json.Marshal(q)
		require.NoError(t, err)
		to := end.Add(500 * time.Millisecond)
		resp, err := inst.QueryData(context.Background(), &backend.QueryDataRequest{Queries: []backend.DataQuery{{
			RefID: "A", QueryType: q["queryType"].(string), JSON: js, Interval: time.Second, MaxDataPoints: 100,
			TimeRange: backend.TimeRange{From: to.Add(-5 * time.Second), To: to}}}})
		require.NoError(t, err)
		r := resp.Responses["A"]
		require.NoError(t, r.Error, "%s %s", target, q["queryType"])
		return lastValues(t, r.Frames)
	}
	latency := map[string]any{"queryType": "latency", "stages": []string{"ttft", "itl", "tpot", "e2e", "queue_time"}, "stats": []string{"p50", "p99", "mean"}}
	wantLatency := map[string]float64{
		"ttft p50": 0.06 + 0.02*20/30, "ttft p50 lower": 0.06, "ttft p50 upper": 0.08,
		"ttft p99": 0.875, "ttft mean": 0.125,
		"itl p50": 0.01 + 0.015*1300/1600, "itl mean": 0.025,
		"tpot p50":       0.01 + 0.015*45/55,
		"e2e p50":        1 + 0.5*10/30,
		"queue_time p50": 0.3 * 50 / 90,
	}
	wantRates := map[string]float64{"prompt tokens/s": 600, "generation tokens/s": 150,
		"requests/s stop": 4.75, "requests/s length": 0.25}
	wantSaturation := map[string]float64{"running": 3, "waiting": 2, "KV-cache usage": 0.25, "prefix-cache hit ratio": 0.25}

	answers := map[string][3]map[string]float64{}
	for _, target := range []string{"rust", "python"} {
		lat := query(target, latency)
		thr := query(target, map[string]any{"queryType": "throughput"})
		sat := query(target, map[string]any{"queryType": "saturation"})
		answers[target] = [3]map[string]float64{lat, thr, sat}
		for name, want := range wantLatency {
			got, ok := lat[name]
			if assert.True(t, ok, "%s: no %q frame (have %v)", target, name, lat) {
				assert.InDelta(t, want, got, 1e-9*want, "%s %s", target, name)
			}
		}
		for name, want := range wantRates {
			got, ok := thr[name]
			if assert.True(t, ok, "%s: no %q frame (have %v)", target, name, thr) {
				assert.InEpsilon(t, want, got, 5e-2, "%s %s", target, name)
			}
		}
		for name, want := range wantSaturation {
			got, ok := sat[name]
			if assert.True(t, ok, "%s: no %q frame (have %v)", target, name, sat) {
				assert.InDelta(t, want, got, 1e-9, "%s %s", target, name)
			}
		}
		if got, ok := sat["preemptions/s"]; assert.True(t, ok, "%s: no preemptions/s", target) {
			assert.InEpsilon(t, 0.1, got, 5e-2, target)
		}
	}
	// The same frames, by name, for both pages.
	for k := range 3 {
		var rn, pn []string
		for n := range answers["rust"][k] {
			rn = append(rn, n)
		}
		for n := range answers["python"][k] {
			pn = append(pn, n)
		}
		assert.ElementsMatch(t, pn, rn, "frames of query %d", k)
	}
}
