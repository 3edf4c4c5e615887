package plugin

import (
	"context"
	"encoding/json"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/grafana/grafana-plugin-sdk-go/backend"
	"github.com/grafana/grafana-plugin-sdk-go/data"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/tsdb"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// sanityT0 is the start of the synthetic histories below (scrapes every 15 s).
var sanityT0 = time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)

func writeHistory(t *testing.T, db *tsdb.DB, scrapes int, fill func(k int, add func(job, name string, v float64, kv ...string))) {
	t.Helper()
	app := db.Appender(context.Background())
	for k := 0; k < scrapes; k++ {
		fill(k, func(job, name string, v float64, kv ...string) {
			ls := append([]string{"__name__", name, "job", job, "instance", job + ":8000"}, kv...)
			_, err := app.Append(0, labels.FromStrings(ls...), sanityT0.Add(time.Duration(k)*15*time.Second).UnixMilli(), v)
			require.NoError(t, err)
		})
	}
	require.NoError(t, app.Commit())
}

// captureSender keeps the stream's packets and ends the stream after the first.
type captureSender struct {
	pkts   []*backend.StreamPacket
	cancel func()
}

func (c *captureSender) Send(p *backend.StreamPacket) error {
	c.pkts = append(c.pkts, p)
	c.cancel()
	return nil
}

// streamFrame runs the saturation stream once at now and returns its first frame.
func streamFrame(t *testing.T, inst *Instance, now time.Time) *data.Frame {
	t.Helper()
	inst.now = func() time.Time { return now }
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	cs := &captureSender{cancel: cancel}
	require.NoError(t, inst.RunStream(ctx, &backend.RunStreamRequest{Path: streamPath}, backend.NewStreamSender(cs)))
	require.NotEmpty(t, cs.pkts)
	var f data.Frame
	require.NoError(t, json.Unmarshal(cs.pkts[0].Data, &f))
	return &f
}

func streamValue(t *testing.T, f *data.Frame, name, target string) float64 {
	t.Helper()
	for _, fld := range f.Fields {
		if fld.Name == name && fld.Labels["target"] == target {
			v, ok := fld.ConcreteAt(0)
			require.True(t, ok)
			return toF(v)
		}
	}
	t.Fatalf("stream frame has no %s for %s", name, target)
	return math.NaN()
}

func toF(v any) float64 {
	switch x := v.(type) {
	case float64:
		return x
	case *float64:
		return *x
	}
	return math.NaN()
}

func frameNotices(f *data.Frame) []string {
	if f.Meta == nil {
		return nil
	}
	var out []string
	for _, n := range f.Meta.Notices {
		out = append(out, n.Text)
	}
	return out
}

func respNotices(r backend.DataResponse) []string {
	var out []string
	for _, f := range r.Frames {
		out = append(out, frameNotices(f)...)
	}
	return out
}

func hasText(ns []string, parts ...string) bool {
	for _, n := range ns {
		ok := true
		for _, p := range parts {
			ok = ok && strings.Contains(n, p)
		}
		if ok {
			return true
		}
	}
	return false
}

// TestStreamAppliesSaturationRules: the live saturation stream counts an SGLang scheduler's
// eight tp_rank copies and four pp_rank stages once, takes the one value of a vLLM pid split,
// and leaves out engine 3's KV usage once it reads −0.39 (from scrape 20), naming it in a
// warning with target, labels, value and time. The same history with engine 3 at 0.38
// throughout raises no notice.
func TestStreamAppliesSaturationRules(t *testing.T) {
	for _, bad := range []bool{true, false} {
		t.Run(sanityHistory(bad), func(t *testing.T) {
			db := openDiagDB(t)
			writeHistory(t, db, 40, func(k int, add func(job, name string, v float64, kv ...string)) {
				for tp := 0; tp < 8; tp++ {
					for pp := 0; pp < 4; pp++ {
						ls := []string{"model_name", "g", "tp_rank", string(rune('0' + tp)), "pp_rank", string(rune('0' + pp))}
						add("s", "sglang:num_running_reqs", 5, ls...)
						add("s", "sglang:num_queue_reqs", 2, ls...)
						add("s", "sglang:token_usage", 0.5, ls...)
					}
				}
				for pid, v := range map[string]float64{"301": 0, "302": 0.653, "303": 0} {
					add("p", "vllm:kv_cache_usage_perc", v, "engine", "0", "model_name", "m", "pid", pid)
				}
				add("n", "vllm:kv_cache_usage_perc", 0.42, "engine", "0", "model_name", "m")
				e3 := 0.38
				if bad && k >= 20 {
					e3 = -0.3875
				}
				add("n", "vllm:kv_cache_usage_perc", e3, "engine", "3", "model_name", "m")
			})
			js := []map[string]any{{"name": "s", "url": "http://s:8000/metrics"}, {"name": "p", "url": "http://p:8000/metrics"}, {"name": "n", "url": "http://n:8000/metrics"}}
			inst := diagInstance(t, db, 15*time.Second, js, nil)
			now := sanityT0.Add(39 * 15 * time.Second)
			f := streamFrame(t, inst, now)
			assert.Equal(t, 5.0, streamValue(t, f, "requests_running", "s"), "not 160")
			assert.Equal(t, 2.0, streamValue(t, f, "requests_waiting", "s"))
			assert.InDelta(t, 0.5, streamValue(t, f, "kv_cache_usage", "s"), 1e-12)
			assert.InDelta(t, 0.653, streamValue(t, f, "kv_cache_usage", "p"), 1e-12)
			ns := frameNotices(f)
			if !bad {
				assert.InDelta(t, 0.40, streamValue(t, f, "kv_cache_usage", "n"), 1e-12)
				assert.Empty(t, ns)
				return
			}
			assert.InDelta(t, 0.42, streamValue(t, f, "kv_cache_usage", "n"), 1e-12, "the negative engine is left out")
			require.Len(t, ns, 1, "%q", ns)
			assert.Equal(t, `target n: kv_cache_usage {engine="3", model_name="m"} read -0.3875 at 2026-11-30 10:09:45 UTC: a ratio outside 0..1, left out of the average`, ns[0])
		})
	}
}

// TestGPUQueryLeavesOutImpossibleReadings: a dcgm-exporter GPU whose utilisation reads 250 %
// and whose power reads −12 W from scrape 30, and an Inferscope-agent GPU whose SM activity
// reads 1.5 from scrape 25: those samples are left out of the GPU's series (no value there,
// not the impossible one) and each is named with target, GPU labels, value and first time. A
// blank DCGM temperature is no value and is not reported. The same history with the readings
// in range raises no such notice.
func TestGPUQueryLeavesOutImpossibleReadings(t *testing.T) {
	const blank = 9223372036854775792.0 // DCGM_INT64_BLANK
	for _, bad := range []bool{true, false} {
		t.Run(sanityHistory(bad), func(t *testing.T) {
			db := openDiagDB(t)
			writeHistory(t, db, 40, func(k int, add func(job, name string, v float64, kv ...string)) {
				d := []string{"gpu", "0", "UUID", "GPU-x", "Hostname", "hx", "modelName", "H100"}
				a := []string{"gpu", "1", "uuid", "GPU-y", "hostname", "hy", "name", "H200"}
				util, power, sm := 80.0, 300.0, 0.6
				if bad && k >= 30 {
					util, power = 250, -12
				}
				if bad && k >= 25 {
					sm = 1.5
				}
				add("dcgm", "DCGM_FI_DEV_GPU_UTIL", util, d...)
				add("dcgm", "DCGM_FI_DEV_POWER_USAGE", power, d...)
				add("dcgm", "DCGM_FI_DEV_GPU_TEMP", blank, d...)
				add("agent", "inferscope_gpu_sm_active_ratio", sm, a...)
				add("agent", "inferscope_gpu_utilization_ratio", 0.9, a...)
				add("agent", "inferscope_gpu_power_watts", 400, a...)
			})
			agents := []map[string]any{{"name": "dcgm", "url": "http://g1:9400/metrics", "kind": "dcgm"}, {"name": "agent", "url": "http://g2:9100/metrics"}}
			inst := diagInstance(t, db, 15*time.Second, nil, agents)
			end := sanityT0.Add(39 * 15 * time.Second)
			r := sloRun(t, inst, map[string]any{"queryType": "gpu"}, sanityT0, end, 15*time.Second)
			require.NoError(t, r.Error)
			ns := respNotices(r)
			last := map[string]float64{}
			for _, f := range r.Frames {
				for _, fld := range f.Fields[1:] {
					key := fld.Labels["signal"] + "/" + fld.Labels["target"]
					last[key] = math.NaN()
					if fld.Len() > 0 {
						if v, ok := fld.ConcreteAt(fld.Len() - 1); ok && f.Fields[0].At(fld.Len()-1).(time.Time).Equal(end) {
							last[key] = toF(v)
						}
					}
				}
			}
			if !bad {
				assert.False(t, hasText(ns, "cannot be true"), "%q", ns)
				assert.False(t, hasText(ns, "} read "), "%q", ns)
				assert.InDelta(t, 0.8, last["gpu_util/dcgm"], 1e-12)
				assert.InDelta(t, 300, last["power/dcgm"], 1e-12)
				assert.InDelta(t, 0.6, last["sm_active/agent"], 1e-12)
				return
			}
			assert.Contains(t, ns, `target dcgm: gpu_util {gpu="0", hostname="hx", name="H100", uuid="GPU-x"} read 2.5 at 2026-11-30 10:07:30 UTC (10 times in the range): a ratio outside 0..1, left out of that GPU's series`)
			assert.Contains(t, ns, `target dcgm: power {gpu="0", hostname="hx", name="H100", uuid="GPU-x"} read -12 at 2026-11-30 10:07:30 UTC (10 times in the range): negative, which this quantity cannot be, left out of that GPU's series`)
			assert.Contains(t, ns, `target agent: sm_active {gpu="1", hostname="hy", name="H200", uuid="GPU-y"} read 1.5 at 2026-11-30 10:06:15 UTC (15 times in the range): a ratio outside 0..1, left out of that GPU's series`)
			assert.False(t, hasText(ns, "temperature {"), "a DCGM blank is not reported: %q", ns)
			assert.True(t, math.IsNaN(last["gpu_util/dcgm"]), "250 %% is not shown")
			assert.True(t, math.IsNaN(last["power/dcgm"]), "−12 W is not shown")
			assert.True(t, math.IsNaN(last["sm_active/agent"]), "1.5 is not shown")
			assert.InDelta(t, 400, last["power/agent"], 1e-12)
		})
	}
}

// sanityHistory names the two histories of a sanity test: the one with the bad readings
// and the clean one of the same shape.
func sanityHistory(bad bool) string {
	if bad {
		return "bad readings"
	}
	return "clean"
}

// fieldValues returns a field's values as floats, NaN where null.
func fieldValues(f *data.Field) []float64 {
	out := make([]float64, f.Len())
	for i := range out {
		switch v := f.At(i).(type) {
		case float64:
			out[i] = v
		case *float64:
			out[i] = math.NaN()
			if v != nil {
				out[i] = *v
			}
		}
	}
	return out
}

// TestNonFiniteCountersLeftOut: target a's generation counter has two engines, 4 and 2
// tokens per second (60 and 30 per 15 s scrape). Engine 1 reads NaN at scrape 20 (10:05:00)
// and +Inf at scrape 30 (10:07:30). The throughput never shows NaN or Inf: engine 1 is left
// out of the windows those samples spoil (there the rate is engine 0's 4 tokens/s), and a
// warning names target, labels, the first value and its time. The clean history of the same
// shape reads 6 tokens/s throughout and raises no notice.
func TestNonFiniteCountersLeftOut(t *testing.T) {
	for _, bad := range []bool{true, false} {
		t.Run(sanityHistory(bad), func(t *testing.T) {
			db := openDiagDB(t)
			writeHistory(t, db, 40, func(k int, add func(job, name string, v float64, kv ...string)) {
				add("a", "vllm:generation_tokens_total", float64(60*k), "engine", "0", "model_name", "m")
				v := float64(30 * k)
				if bad && k == 20 {
					v = math.NaN()
				}
				if bad && k == 30 {
					v = math.Inf(1)
				}
				add("a", "vllm:generation_tokens_total", v, "engine", "1", "model_name", "m")
			})
			inst := diagInstance(t, db, 15*time.Second, []map[string]any{{"name": "a", "url": "http://a:8000/metrics"}}, nil)
			dr := sloRun(t, inst, map[string]any{"queryType": "throughput", "groupBy": "target", "window": "1m"}, sanityT0.Add(2*time.Minute), sanityT0.Add(39*15*time.Second), 15*time.Second)
			require.NoError(t, dr.Error)
			gen := fieldsBy(dr, "signal", "target")["generation_tokens/a"]
			require.NotNil(t, gen)
			vals := fieldValues(gen)
			ns := respNotices(dr)
			left := 0
			for i, v := range vals {
				require.False(t, math.IsInf(v, 0), "step %d", i)
				if math.IsNaN(v) {
					continue
				}
				if bad && math.Abs(v-4) < 1e-9 {
					left++
					continue
				}
				assert.InDelta(t, 6, v, 1e-9, "step %d", i)
			}
			if !bad {
				assert.False(t, hasText(ns, "} read "), "%q", ns)
				assert.Zero(t, left)
				return
			}
			assert.Greater(t, left, 4, "the windows holding engine 1's NaN or +Inf carry engine 0 alone")
			assert.Contains(t, ns, `target a: generation_tokens {engine="1", model_name="m"} read NaN at 2026-11-30 10:05:00 UTC (2 times in the range): not a number, left out of the rate in the windows that contain it`)
		})
	}
}

// TestNonFiniteHistogramLeftOut: target a's TTFT histogram has two engines, each observing
// one request per 15 s scrape: engine 0 below 0.1 s, engine 1 between 0.1 and 0.5 s. Their
// joint median is the bucket bound 0.1 s (rank 1 of 2 falls at the top of [0, 0.1]); engine
// 0's alone is 0.05 s. Engine 1's le="0.5" bucket reads NaN at scrape 20 (10:05:00): the
// windows it spoils leave engine 1's whole histogram out (p50 0.05, never NaN), and a
// warning names the bucket series, value and time. The clean history reads 0.1 throughout
// and raises no notice.
func TestNonFiniteHistogramLeftOut(t *testing.T) {
	for _, bad := range []bool{true, false} {
		t.Run(sanityHistory(bad), func(t *testing.T) {
			db := openDiagDB(t)
			writeHistory(t, db, 40, func(k int, add func(job, name string, v float64, kv ...string)) {
				n := float64(k)
				for le, v := range map[string]float64{"0.1": n, "0.5": n, "+Inf": n} {
					add("a", "vllm:time_to_first_token_seconds_bucket", v, "engine", "0", "model_name", "m", "le", le)
				}
				add("a", "vllm:time_to_first_token_seconds_sum", 0.05*n, "engine", "0", "model_name", "m")
				add("a", "vllm:time_to_first_token_seconds_count", n, "engine", "0", "model_name", "m")
				mid := n
				if bad && k == 20 {
					mid = math.NaN()
				}
				for le, v := range map[string]float64{"0.1": 0, "0.5": mid, "+Inf": n} {
					add("a", "vllm:time_to_first_token_seconds_bucket", v, "engine", "1", "model_name", "m", "le", le)
				}
				add("a", "vllm:time_to_first_token_seconds_sum", 0.3*n, "engine", "1", "model_name", "m")
				add("a", "vllm:time_to_first_token_seconds_count", n, "engine", "1", "model_name", "m")
			})
			inst := diagInstance(t, db, 15*time.Second, []map[string]any{{"name": "a", "url": "http://a:8000/metrics"}}, nil)
			dr := sloRun(t, inst, map[string]any{"queryType": "latency", "stages": []string{"ttft"}, "stats": []string{"p50"}, "window": "1m"}, sanityT0.Add(2*time.Minute), sanityT0.Add(39*15*time.Second), 15*time.Second)
			require.NoError(t, dr.Error)
			p50 := fieldsBy(dr, "stat", "bound")["p50/"]
			require.NotNil(t, p50)
			ns := respNotices(dr)
			left := 0
			for i, v := range fieldValues(p50) {
				require.False(t, math.IsNaN(v) || math.IsInf(v, 0), "step %d: p50 %v", i, v)
				if bad && math.Abs(v-0.05) < 1e-9 {
					left++
					continue
				}
				assert.InDelta(t, 0.1, v, 1e-9, "step %d", i)
			}
			if !bad {
				assert.False(t, hasText(ns, "} read "), "%q", ns)
				assert.Zero(t, left)
				return
			}
			// delta() reads a window's first and last samples only: the windows whose first or last
			// sample is the NaN (ending 10:05:00 and 10:05:45) carry engine 0 alone.
			assert.Equal(t, 2, left, "windows without engine 1")
			assert.Contains(t, ns, `target a: vllm:time_to_first_token_seconds_bucket {engine="1", le="0.5", model_name="m"} read NaN at 2026-11-30 10:05:00 UTC: not a number, left out of the ttft quantiles and mean in the windows that contain it`)
		})
	}
}

// TestBackwardsHistogramLeftOut: the TTFT history of TestNonFiniteHistogramLeftOut (joint
// median 0.1 s, engine 0's alone 0.05 s), except that engine 1's le="0.5" bucket goes back
// by 15 at scrape 20 (10:05:00: 19 → 5) while its _count and +Inf bucket keep growing: not a
// restart. The four 1-minute windows that hold the step (ending 10:05:00 … 10:05:45) leave
// engine 1's whole histogram out (p50 0.05: engine 1's negative bucket increase there says
// observations left a bucket, which cannot happen), every other window reads 0.1, and a
// warning names the
// bucket series, the new value, the old one and the time. The same history without the step
// raises no notice and reads 0.1 throughout.
func TestBackwardsHistogramLeftOut(t *testing.T) {
	for _, bad := range []bool{true, false} {
		t.Run(sanityHistory(bad), func(t *testing.T) {
			db := openDiagDB(t)
			writeHistory(t, db, 40, func(k int, add func(job, name string, v float64, kv ...string)) {
				n := float64(k)
				for le, v := range map[string]float64{"0.1": n, "0.5": n, "+Inf": n} {
					add("a", "vllm:time_to_first_token_seconds_bucket", v, "engine", "0", "model_name", "m", "le", le)
				}
				add("a", "vllm:time_to_first_token_seconds_sum", 0.05*n, "engine", "0", "model_name", "m")
				add("a", "vllm:time_to_first_token_seconds_count", n, "engine", "0", "model_name", "m")
				mid := n
				if bad && k >= 20 {
					mid = n - 15
				}
				for le, v := range map[string]float64{"0.1": 0, "0.5": mid, "+Inf": n} {
					add("a", "vllm:time_to_first_token_seconds_bucket", v, "engine", "1", "model_name", "m", "le", le)
				}
				add("a", "vllm:time_to_first_token_seconds_sum", 0.3*n, "engine", "1", "model_name", "m")
				add("a", "vllm:time_to_first_token_seconds_count", n, "engine", "1", "model_name", "m")
			})
			inst := diagInstance(t, db, 15*time.Second, []map[string]any{{"name": "a", "url": "http://a:8000/metrics"}}, nil)
			dr := sloRun(t, inst, map[string]any{"queryType": "latency", "stages": []string{"ttft"}, "stats": []string{"p50"}, "window": "1m"}, sanityT0.Add(2*time.Minute), sanityT0.Add(39*15*time.Second), 15*time.Second)
			require.NoError(t, dr.Error)
			p50 := fieldsBy(dr, "stat", "bound")["p50/"]
			require.NotNil(t, p50)
			ns := respNotices(dr)
			var alone []time.Time
			for i, v := range fieldValues(p50) {
				at := sanityT0.Add(2*time.Minute + time.Duration(i)*15*time.Second)
				require.False(t, math.IsNaN(v) || math.IsInf(v, 0), "step %d: p50 %v", i, v)
				if bad && math.Abs(v-0.05) < 1e-9 {
					alone = append(alone, at)
					continue
				}
				assert.InDelta(t, 0.1, v, 1e-9, "step %s", at)
			}
			if !bad {
				assert.False(t, hasText(ns, "} read "), "%q", ns)
				assert.Empty(t, alone)
				return
			}
			step := sanityT0.Add(5 * time.Minute)
			assert.Equal(t, []time.Time{step, step.Add(15 * time.Second), step.Add(30 * time.Second), step.Add(45 * time.Second)}, alone)
			assert.Contains(t, ns, `target a: vllm:time_to_first_token_seconds_bucket {engine="1", le="0.5", model_name="m"} read 5 at 2026-11-30 10:05:00 UTC: a histogram series of ttft that went back from 19 while the histogram's count did not fall (not a restart), the whole histogram left out of the ttft quantiles and mean in the windows that contain it`)
		})
	}
}
