package asgrafana

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/data"
	"github.com/grafana/grafana-plugin-sdk-go/genproto/pluginv2"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// nanCounterPage is a vLLM page with two engines on a page clock (see pageClock): engine 0
// generates 100 tokens per answer, engine 1 50, except that its counter reads NaN at the 7th
// answer. Engine 1's KV usage reads 1.7, which no ratio can.
type nanCounterPage struct {
	clock *pageClock
}

func (p *nanCounterPage) scrapes() int {
	return int(p.clock.n.Load())
}

func (p *nanCounterPage) ServeHTTP(w http.ResponseWriter, _ *http.Request) {
	k, ts := p.clock.next()
	e1 := fmt.Sprint(50 * (k + 1))
	if k == 6 {
		e1 = "NaN"
	}
	w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
	fmt.Fprintf(w, `# TYPE vllm:num_requests_running gauge
vllm:num_requests_running{engine="0",model_name="m"} 2%[3]s
vllm:num_requests_running{engine="1",model_name="m"} 1%[3]s
# TYPE vllm:kv_cache_usage_perc gauge
vllm:kv_cache_usage_perc{engine="0",model_name="m"} 0.3%[3]s
vllm:kv_cache_usage_perc{engine="1",model_name="m"} 1.7%[3]s
# TYPE vllm:generation_tokens_total counter
vllm:generation_tokens_total{engine="0",model_name="m"} %[1]d%[3]s
vllm:generation_tokens_total{engine="1",model_name="m"} %[2]s%[3]s
`, 100*(k+1), e1, ts)
}

// sglangPPPage: one SGLang scheduler per pipeline stage (pp_rank 0..3), each reporting the
// same 5 running and 2 queued requests and token usage 0.5.
func sglangPPPage() string {
	var b strings.Builder
	for _, fam := range []struct{ name, v string }{{"sglang:num_running_reqs", "5"}, {"sglang:num_queue_reqs", "2"}, {"sglang:token_usage", "0.5"}} {
		fmt.Fprintf(&b, "# TYPE %s gauge\n", fam.name)
		for pp := 0; pp < 4; pp++ {
			fmt.Fprintf(&b, "%s{engine_type=\"unified\",model_name=\"g\",pp_rank=\"%d\",tp_rank=\"0\"} %s\n", fam.name, pp, fam.v)
		}
	}
	return b.String()
}

// TestTelemetryGaps drives the built plugin: a NaN sample in a counter is named and left out
// of the throughput (no NaN in the series); the live saturation stream counts SGLang's
// pipeline stages once and leaves out, and names in the frame's notices, a KV ratio of 1.7.
func TestTelemetryGaps(t *testing.T) {
	start := time.Now()
	nan := &nanCounterPage{clock: newPageClock(start)}
	pp := sglangPPPage()
	targets := []map[string]any{
		{"name": "nan", "url": serve(t, nan)},
		{"name": "sglang-pp", "url": serve(t, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
			_, _ = w.Write([]byte(pp))
		}))},
	}
	// A 1 s scrape timeout (the interval): a loaded machine then rarely gives up on a scrape
	// (issue 32).
	jd, err := json.Marshal(map[string]any{"scrapeInterval": "1s", "scrapeTimeout": "1s", "targets": targets})
	require.NoError(t, err)
	ds := dataSource{id: 91, uid: "inferscope-gaps", jsonData: jd, updatedMS: time.Now().UnixMilli()}
	host := startPlugin(t)
	_ = host.query(t, ds, start.Add(-time.Minute), start, map[string]map[string]any{"T": {"queryType": "targets"}})
	// The page is on its own clock; the query ends inside 7 s of complete samples after the
	// NaN (at the page's 6 s), which hold the last lastSteps steps' 4 s windows (issue 32).
	end := gridEnd(t, host, ds, nan.clock, []gridProbe{{target: "nan", metric: "vllm:generation_tokens_total", matchers: map[string]string{"engine": "0"}}}, nan.clock.at(7), 7*time.Second)
	require.GreaterOrEqual(t, nan.scrapes(), 14)

	tr := host.query(t, ds, start, end,
		map[string]map[string]any{"A": {"queryType": "throughput", "groupBy": "target", "targets": []string{"nan"}}})["A"]
	require.Empty(t, tr.err)
	notices := allNotices(tr.frames)
	assert.True(t, containsText(notices, `target nan: generation_tokens {engine="1", model_name="m"} read NaN at `), "notices: %q", notices)
	assert.True(t, containsText(notices, "not a number, left out of the rate in the windows that contain it"), "notices: %q", notices)
	gen := one(t, seriesOf(t, tr.frames), map[string]string{"signal": "generation_tokens", "target": "nan"})
	// Both engines read 150 tokens/s; the windows whose first or last sample is engine 1's
	// NaN read engine 0's 100 alone (the first windows of a new series are extrapolated
	// lower, as is a window that misses a scrape at its edge). A window never extrapolates
	// past its edges, so no window reads more than 150; the last ones, inside the complete
	// stretch, read 150 exactly.
	both, alone := 0, 0
	for i, v := range gen.values {
		assert.False(t, math.IsInf(v, 0), "generation tokens/s at %s", gen.times[i])
		if math.IsNaN(v) {
			continue
		}
		assert.LessOrEqual(t, v, 150*(1+1e-9), "at most both engines at %s", gen.times[i])
		switch {
		case math.Abs(v-150) <= 7.5:
			both++
		case math.Abs(v-100) <= 5:
			alone++
		}
	}
	assert.GreaterOrEqual(t, both, 3, "%v", gen.values)
	assert.GreaterOrEqual(t, alone, 1, "%v", gen.values)
	requireLast(t, gen, 150, 1e-9, "both engines after the NaN")

	ctx, cancel := context.WithTimeout(context.Background(), rpcTimeout)
	defer cancel()
	rs, err := host.stream.RunStream(ctx, &pluginv2.RunStreamRequest{PluginContext: ds.pluginContext(), Path: "saturation"})
	require.NoError(t, err)
	pkt, err := rs.Recv()
	require.NoError(t, err)
	cancel()
	var fr data.Frame
	require.NoError(t, json.Unmarshal(pkt.Data, &fr))
	got := map[string]float64{}
	for _, fld := range fr.Fields {
		if fld.Len() == 0 || fld.Labels["target"] == "" {
			continue
		}
		if v, ok := fld.ConcreteAt(0); ok {
			got[fld.Name+"/"+fld.Labels["target"]] = toFloat(t, v)
		}
	}
	assert.Equal(t, 5.0, got["requests_running/sglang-pp"], "pipeline stages count once")
	assert.Equal(t, 2.0, got["requests_waiting/sglang-pp"])
	assert.InDelta(t, 0.5, got["kv_cache_usage/sglang-pp"], 1e-12)
	assert.Equal(t, 3.0, got["requests_running/nan"], "engines add up")
	assert.InDelta(t, 0.3, got["kv_cache_usage/nan"], 1e-12, "1.7 left out")
	require.NotNil(t, fr.Meta, "the stream frame names the impossible value")
	var texts []string
	for _, n := range fr.Meta.Notices {
		texts = append(texts, n.Text)
	}
	assert.True(t, containsText(texts, `target nan: kv_cache_usage {engine="1", model_name="m"} read 1.7 at `), "%q", texts)
	assert.Len(t, texts, 1, "%q", texts)
}
