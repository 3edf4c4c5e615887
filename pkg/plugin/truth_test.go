package plugin

import (
	"context"
	"encoding/json"
	"math"
	"testing"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/backend"
	"github.com/grafana/grafana-plugin-sdk-go/data"
	"github.com/prometheus/prometheus/tsdb"
	"github.com/stretchr/testify/require"

	"github.com/inferscope/inferscope-llm-datasource/pkg/settings"
	"github.com/inferscope/inferscope-llm-datasource/pkg/sim"
	"github.com/inferscope/inferscope-llm-datasource/pkg/source"
)

// inside reports whether the rank-q order statistic of vals (the smallest
// value with at least ⌈q·n⌉ observations ≤ it, the rank a cumulative
// histogram count describes) lies in [lo, hi], by counting rather than sorting.
func inside(vals []float64, q, lo, hi float64) bool {
	rank := int(math.Ceil(q * float64(len(vals))))
	if rank < 1 {
		rank = 1
	}
	below, atMost := 0, 0
	for _, v := range vals {
		if v < lo-1e-9 {
			below++
		}
		if v <= hi+1e-9 {
			atMost++
		}
	}
	return below < rank && rank <= atMost
}

// TestLatencyBoundsHoldTheSimulatorsTruth runs the simulator for one
// simulated hour straight into a TSDB, asks the plugin's latency query for
// p50/p95/p99 of every stage over 5-minute windows, and checks that the true
// quantile of the observations made in each window lies within the bucket
// bounds the plugin reports, in at least 99% of windows.
func TestLatencyBoundsHoldTheSimulatorsTruth(t *testing.T) {
	if testing.Short() {
		t.Skip("fast-forwards an hour of simulated traffic")
	}
	cfg := sim.DefaultConfig()
	require.NoError(t, sim.ApplyScenario(&cfg, "healthy"))
	s, err := sim.New(cfg, sim.Options{RecordTruth: true, RecordTokens: true})
	require.NoError(t, err)
	db, err := tsdb.Open(t.TempDir(), nil, nil, tsdb.DefaultOptions(), nil)
	require.NoError(t, err)
	defer db.Close()
	const scrape = 15 * time.Second
	_, err = s.FastForward(context.Background(), db, sim.FastForwardOptions{Duration: time.Hour, ScrapeInterval: scrape,
		VLLM: sim.Target{Job: "sim", Instance: "sim:8000"}})
	require.NoError(t, err)

	st, err := settings.Load([]byte(`{"targets":[{"name":"sim","url":"http://sim:8000/metrics"}]}`), nil)
	require.NoError(t, err)
	inst := newInstanceForTest(st, source.NewEmbedded(db, source.EmbeddedOptions{}))
	start := s.Start()
	const window = 5 * time.Minute
	qjson, _ := json.Marshal(map[string]any{"queryType": "latency", "window": "5m",
		"stages": []string{"queue_time", "prefill_time", "decode_time", "inference_time", "ttft", "tpot", "itl", "e2e"}, "stats": []string{"p50", "p95", "p99"}})
	resp, err := inst.QueryData(context.Background(), &backend.QueryDataRequest{Queries: []backend.DataQuery{{
		RefID: "A", QueryType: "latency", JSON: qjson, Interval: time.Minute, MaxDataPoints: 1000,
		TimeRange: backend.TimeRange{From: start.Add(window), To: start.Add(time.Hour)},
	}}})
	require.NoError(t, err)
	dr := resp.Responses["A"]
	require.NoError(t, dr.Error)

	// Ground truth per stage: (observation time in seconds since start, value).
	type obs struct{ at, v float64 }
	truth := map[string][]obs{}
	v := cfg.Version
	for _, r := range s.Finished() {
		tr, ok := r.Truth(v)
		if !ok {
			continue
		}
		truth["queue_time"] = append(truth["queue_time"], obs{r.Finished, tr.Queue})
		truth["prefill_time"] = append(truth["prefill_time"], obs{r.Finished, tr.Prefill})
		truth["decode_time"] = append(truth["decode_time"], obs{r.Finished, tr.Decode})
		truth["inference_time"] = append(truth["inference_time"], obs{r.Finished, tr.Inference})
		truth["e2e"] = append(truth["e2e"], obs{r.Finished, tr.E2E})
		truth["ttft"] = append(truth["ttft"], obs{r.Arrival + tr.TTFT, tr.TTFT})
		truth["tpot"] = append(truth["tpot"], obs{r.Finished, tr.TPOT})
		// ITL: one observation per gap between consecutive tokens, made at the later token.
		for k, gap := range tr.ITL {
			truth["itl"] = append(truth["itl"], obs{r.TokenTimes[k+1], gap})
		}
	}

	series := map[string]*data.Frame{}
	for _, f := range dr.Frames {
		l := f.Fields[1].Labels
		series[l["stage"]+"/"+l["stat"]+"/"+l["bound"]] = f
	}
	checked, within := 0, 0
	for stage, list := range truth {
		for _, stat := range []struct {
			name string
			q    float64
		}{{"p50", 0.5}, {"p95", 0.95}, {"p99", 0.99}} {
			lo, hi := series[stage+"/"+stat.name+"/lower"], series[stage+"/"+stat.name+"/upper"]
			require.NotNil(t, lo, "%s %s lower", stage, stat.name)
			require.NotNil(t, hi, "%s %s upper", stage, stat.name)
			for i := 0; i < lo.Rows(); i++ {
				ts := lo.Fields[0].At(i).(time.Time)
				l, okL := lo.Fields[1].ConcreteAt(i)
				u, okU := hi.Fields[1].ConcreteAt(i)
				if !okL || !okU {
					continue
				}
				// rate() over [ts−5m, ts] sees the scrapes after ts−5m: requests observed between the
				// first scrape in the window and ts.
				from := ts.Add(-window).Sub(start).Seconds() + scrape.Seconds()
				to := ts.Sub(start).Seconds()
				var vals []float64
				for _, o := range list {
					if o.at > from && o.at <= to {
						vals = append(vals, o.v)
					}
				}
				if len(vals) < 20 {
					continue
				}
				checked++
				if inside(vals, stat.q, l.(float64), u.(float64)) {
					within++
				} else {
					t.Logf("%s %s at %s: true quantile outside [%.4f, %.4f] (%d observations)", stage, stat.name, ts.Format(time.TimeOnly), l, u, len(vals))
				}
			}
		}
	}
	require.Greater(t, checked, 100, "too few windows checked")
	t.Logf("true quantile inside the reported bucket bounds in %d of %d windows", within, checked)
	require.GreaterOrEqual(t, float64(within)/float64(checked), 0.99)
}
