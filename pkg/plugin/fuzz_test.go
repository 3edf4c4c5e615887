package plugin

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/backend"

	"github.com/inferscope/inferscope-llm-datasource/pkg/queries"
	"github.com/inferscope/inferscope-llm-datasource/pkg/settings"
)

// FuzzDecodeQuery: decoding any query JSON under any query type never panics
// and every rejection is a sentence. Seeds: every query of the dashboard
// shipped with the plugin, plus one of each query type.
func FuzzDecodeQuery(f *testing.F) {
	if b, err := os.ReadFile(filepath.Join("..", "..", "dashboards", "inferscope-overview.json")); err == nil {
		var d struct {
			Panels []struct {
				Targets []json.RawMessage `json:"targets"`
			} `json:"panels"`
		}
		if json.Unmarshal(b, &d) == nil {
			for _, p := range d.Panels {
				for _, q := range p.Targets {
					var qt struct {
						QueryType string `json:"queryType"`
					}
					_ = json.Unmarshal(q, &qt)
					f.Add(qt.QueryType, []byte(q))
				}
			}
		}
	}
	for _, qt := range queries.Names() {
		f.Add(qt, []byte(`{"queryType":"`+qt+`","targets":["vllm-a"],"models":["m"],"groupBy":"target","window":"1m"}`))
	}
	f.Add("raw", []byte(`{"metric":"vllm:num_requests_running","matchers":{"engine":"0"}}`))
	f.Add("latency", []byte(`{"stages":["ttft","nope"],"stats":["p99.9","mean"],"window":"-5s"}`))
	s, err := settings.Load([]byte(`{"targets":[{"name":"vllm-a","url":"http://a:8000/metrics"},{"name":"vllm-b","url":"http://b:8000/metrics","agent":"n"}],
		"gpuAgents":[{"name":"n","url":"http://n:9400/metrics"}]}`), nil)
	if err != nil {
		f.Fatal(err)
	}
	now := time.Unix(1_800_000_000, 0)
	f.Fuzz(func(t *testing.T, queryType string, js []byte) {
		q := backend.DataQuery{RefID: "A", QueryType: queryType, JSON: js, Interval: time.Second, MaxDataPoints: 500,
			TimeRange: backend.TimeRange{From: now.Add(-time.Hour), To: now}}
		p, err := decodeQuery(q, &s)
		if err != nil {
			if err.Error() == "" {
				t.Fatal("empty rejection")
			}
			return
		}
		if p == nil {
			t.Fatal("no plan and no error")
		}
	})
}
