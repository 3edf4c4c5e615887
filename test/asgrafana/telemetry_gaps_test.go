package asgrafana

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/data"
	"github.com/grafana/grafana-plugin-sdk-go/genproto/pluginv2"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// nanCounterPage is a vLLM page with two engines: engine 0 generates 100 tokens per scrape,
// engine 1 50, except that its counter reads NaN at the 7th scrape. Engine 1's KV usage reads
// 1.7, which no ratio can.
type nanCounterPage struct {
	mu sync.Mutex
	k  int
}

func (p *nanCounterPage) scrapes() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.k
}

func (p *nanCounterPage) ServeHTTP(w http.ResponseWriter, _ *http.Request) {
	p.mu.Lock()
	k := p.k
	p.k++
	p.mu.Unlock()
	e1 := fmt.Sprint(50 * (k + 1))
	if k == 6 {
		e1 = "NaN"
	}
	w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
	fmt.Fprintf(w, `# TYPE vllm:num_requests_running gauge
vllm:num_requests_running{engine="0",model_name="m"} 2
vllm:num_requests_running{engine="1",model_name="m"} 1
# TYPE vllm:kv_cache_usage_perc gauge
vllm:kv_cache_usage_perc{engine="0",model_name="m"} 0.3
vllm:kv_cache_usage_perc{engine="1",model_name="m"} 1.7
# TYPE vllm:generation_tokens_total counter
vllm:generation_tokens_total{engine="0",model_name="m"} %d
vllm:generation_tokens_total{engine="1",model_name="m"} %s
`, 100*(k+1), e1)
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
	nan := &nanCounterPage{}
	pp := sglangPPPage()
	targets := []map[string]any{
		{"name": "nan", "url": serve(t, nan)},
		{"name": "sglang-pp", "url": serve(t, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
			_, _ = w.Write([]byte(pp))
		}))},
	}
	jd, err := json.Marshal(map[string]any{"scrapeInterval": "1s", "scrapeTimeout": "500ms", "targets": targets})
	require.NoError(t, err)
	ds := dataSource{id: 91, uid: "inferscope-gaps", jsonData: jd, updatedMS: time.Now().UnixMilli()}
	host := startPlugin(t)
	start := time.Now()
	_ = host.query(t, ds, start.Add(-time.Minute), start, map[string]map[string]any{"T": {"queryType": "targets"}})
	deadline := time.Now().Add(40 * time.Second)
	for nan.scrapes() < 14 {
		require.True(t, time.Now().Before(deadline), "page not scraped 14 times in 40 s")
		time.Sleep(250 * time.Millisecond)
	}

	tr := host.query(t, ds, start, time.Now().Add(-1500*time.Millisecond),
		map[string]map[string]any{"A": {"queryType": "throughput", "groupBy": "target", "targets": []string{"nan"}}})["A"]
	require.Empty(t, tr.err)
	notices := allNotices(tr.frames)
	assert.True(t, containsText(notices, `target nan: generation_tokens {engine="1", model_name="m"} read NaN at `), "notices: %q", notices)
	assert.True(t, containsText(notices, "not a number, left out of the rate in the windows that contain it"), "notices: %q", notices)
	gen := one(t, seriesOf(t, tr.frames), map[string]string{"signal": "generation_tokens", "target": "nan"})
	// Both engines read 150 tokens/s; the windows whose first or last sample is engine 1's
	// NaN read engine 0's 100 alone (scrape times jitter by a few percent; the first windows
	// of a new series are extrapolated lower).
	both, alone := 0, 0
	for i, v := range gen.values {
		assert.False(t, math.IsInf(v, 0), "generation tokens/s at %s", gen.times[i])
		if math.IsNaN(v) {
			continue
		}
		assert.LessOrEqual(t, v, 160.0, "at most both engines at %s", gen.times[i])
		switch {
		case math.Abs(v-150) <= 7.5:
			both++
		case math.Abs(v-100) <= 5:
			alone++
		}
	}
	assert.GreaterOrEqual(t, both, 3, "%v", gen.values)
	assert.GreaterOrEqual(t, alone, 1, "%v", gen.values)

	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
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
