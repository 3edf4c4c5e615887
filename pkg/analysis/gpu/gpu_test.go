package gpu

import (
	"math"
	"testing"
	"time"

	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/inferscope/inferscope-llm-datasource/pkg/analysis"
	agent "github.com/inferscope/inferscope-llm-datasource/pkg/gpu"
)

func stream(m model.Metric, t0 time.Time, vals ...float64) *model.SampleStream {
	s := &model.SampleStream{Metric: m}
	for i, v := range vals {
		s.Values = append(s.Values, model.SamplePair{Timestamp: model.TimeFromUnixNano(t0.Add(time.Duration(i) * time.Minute).UnixNano()), Value: model.SampleValue(v)})
	}
	return s
}

func TestThrottleStatesPerReasonAndBitmask(t *testing.T) {
	t0 := time.Unix(1_700_000_000, 0)
	st := analysis.Steps(t0, t0.Add(2*time.Minute), time.Minute)
	per := model.Matrix{
		stream(model.Metric{"job": "agent", "gpu": "0", "reason": "sw_thermal"}, t0, 0, 1, 1),
		stream(model.Metric{"job": "agent", "gpu": "0", "reason": "power_cap"}, t0, 0, 0, 1),
	}
	// DCGM bitmask: 0x4 (power cap) | 0x40 (hw thermal) = 68; then 0; then no sample.
	mask := model.Matrix{stream(model.Metric{"job": "dcgm", "gpu": "1"}, t0, 68, 0)}
	states := ThrottleStates(per, mask, st)
	require.Len(t, states, 2)
	got := map[string][]string{}
	for _, s := range states {
		got[s.Labels["target"]] = s.Values
	}
	assert.Equal(t, []string{"none", "sw_thermal", "power_cap, sw_thermal"}, got["agent"])
	assert.Equal(t, []string{"hw_thermal, power_cap", "none", ""}, got["dcgm"])
}

func TestSaturationPrefersSMActiveThenGREngineThenUtil(t *testing.T) {
	t0 := time.Unix(1_700_000_000, 0)
	st := analysis.Steps(t0, t0.Add(time.Minute), time.Minute)
	g := func(gpu string) model.Metric {
		return model.Metric{"job": "a", "gpu": model.LabelValue(gpu), "uuid": model.LabelValue("GPU-" + gpu), "hostname": "h"}
	}
	nan := math.NaN()
	// GPU 0 has all three; GPU 1 lacks SM active (dcgm-exporter default); GPU 2 only has
	// utilisation; GPU 3 has an SM-active series with no value in range (all NaN after
	// alignment: its sample is off the step grid), so it falls back too.
	sm := model.Matrix{stream(g("0"), t0, 0.4, 0.5), stream(g("3"), t0.Add(time.Second), 0.9)}
	gr := model.Matrix{stream(g("0"), t0, 0.8, 0.8), stream(g("1"), t0, 0.6, nan), stream(g("3"), t0, 0.3, 0.2)}
	util := model.Matrix{stream(g("0"), t0, 1, 1), stream(g("1"), t0, 1, 1), stream(g("2"), t0, 0.7, 0.9), stream(g("3"), t0, 1, 1)}
	var notes analysis.Notices
	out := Saturation(sm, gr, util, st, &notes)
	require.Len(t, out, 4)
	got := map[string]analysis.Series{}
	for _, s := range out {
		got[s.Labels["gpu"]] = s
		assert.Equal(t, "saturation", s.Labels["signal"])
		assert.Equal(t, "a", s.Labels["target"])
		assert.Equal(t, "percentunit", s.Unit)
	}
	assert.Equal(t, "sm_active", got["0"].Labels["source"])
	assert.Equal(t, []float64{0.4, 0.5}, got["0"].Values)
	assert.Equal(t, "gr_engine_active", got["1"].Labels["source"])
	assert.Equal(t, 0.6, got["1"].Values[0])
	assert.True(t, math.IsNaN(got["1"].Values[1]), "a gap stays a gap, not filled from another source")
	assert.Equal(t, "gpu_util", got["2"].Labels["source"])
	assert.Equal(t, []float64{0.7, 0.9}, got["2"].Values)
	assert.Equal(t, "gr_engine_active", got["3"].Labels["source"])
	assert.Equal(t, []float64{0.3, 0.2}, got["3"].Values)
	list := notes.List()
	require.Len(t, list, 2)
	assert.Contains(t, list[0].Text, "graphics-engine active")
	assert.Contains(t, list[0].Text, "a/h/gpu 1, a/h/gpu 3")
	assert.Contains(t, list[1].Text, "GPU utilisation")
	assert.Contains(t, list[1].Text, "a/h/gpu 2")
	assert.NotContains(t, list[1].Text, "gpu 1")

	// Nothing to fall back from: no notice.
	var quiet analysis.Notices
	require.Len(t, Saturation(sm[:1], nil, util[:1], st, &quiet), 1)
	assert.Empty(t, quiet.List())
}

func TestDecodeReasons(t *testing.T) {
	assert.Nil(t, DecodeReasons(0))
	assert.Equal(t, []string{"gpu_idle"}, DecodeReasons(1))
	// 0x4 | 0x40 | 0x200 = 580: SW power cap, HW thermal slowdown, board limit.
	assert.Equal(t, []string{"power_cap", "hw_thermal", "board_limit"}, DecodeReasons(580))
	// 0x7FF is every NVML reason; a bit NVML might add (0x800) is named, not dropped.
	assert.Len(t, DecodeReasons(0x7FF), 11)
	assert.Equal(t, []string{"reliability", "unknown_0x1800"}, DecodeReasons(0x1C00))
}

// The DCGM bitmask decodes to exactly the reason label values the Inferscope
// agent serves (pkg/gpu.ThrottleReasons), so both sources show the same states.
func TestDCGMReasonBitsMatchTheAgent(t *testing.T) {
	require.Len(t, DCGMReasonBits, len(agent.ThrottleReasons))
	for i, r := range agent.ThrottleReasons {
		assert.Equal(t, r.Bit, DCGMReasonBits[i].Bit)
		assert.Equal(t, r.Reason, DCGMReasonBits[i].Name)
	}
}

func TestSaturationFallsBackFromAStuckSource(t *testing.T) {
	t0 := time.Unix(1_700_000_000, 0)
	st := analysis.Steps(t0, t0.Add(7*time.Minute), time.Minute)
	g := func(gpu string) model.Metric {
		return model.Metric{"job": "a", "gpu": model.LabelValue(gpu), "uuid": model.LabelValue("GPU-" + gpu), "hostname": "h"}
	}
	// GPU 0: SM active stops at minute 3 (reads 0) while utilisation keeps reading 0.9.
	// GPU 1: utilisation stuck at 0 while SM active reads 0.7.
	// GPU 2: the same shape as GPU 0 but the load really stops at minute 3: both go to 0.
	sm := model.Matrix{
		stream(g("0"), t0, 0.6, 0.6, 0.6, 0, 0, 0, 0, 0),
		stream(g("1"), t0, 0.7, 0.7, 0.7, 0.7, 0.7, 0.7, 0.7, 0.7),
		stream(g("2"), t0, 0.6, 0.6, 0.6, 0, 0, 0, 0, 0),
	}
	util := model.Matrix{
		stream(g("0"), t0, 0.9, 0.9, 0.9, 0.9, 0.9, 0.9, 0.9, 0.9),
		stream(g("1"), t0, 0, 0, 0, 0, 0, 0, 0, 0),
		stream(g("2"), t0, 0.9, 0.9, 0.9, 0, 0, 0, 0, 0),
	}
	var notes analysis.Notices
	out := Saturation(sm, nil, util, st, &notes)
	require.Len(t, out, 3)
	got := map[string]analysis.Series{}
	for _, s := range out {
		got[s.Labels["gpu"]] = s
	}
	assert.Equal(t, "gpu_util", got["0"].Labels["source"])
	assert.Equal(t, 0.9, got["0"].Values[7])
	assert.Equal(t, "sm_active", got["1"].Labels["source"])
	assert.Equal(t, "sm_active", got["2"].Labels["source"])
	var texts []string
	for _, n := range notes.List() {
		texts = append(texts, n.Text)
		assert.Equal(t, analysis.Warning, n.Severity)
	}
	at := t0.Add(3 * time.Minute).UTC().Format("2006-01-02 15:04:05 UTC")
	assert.Equal(t, []string{
		"a/h/gpu 0: sm_active read 0 while gpu_util read up to 90% for 5 steps from " + at + ", so sm_active looks stuck; saturation uses GPU utilisation for this GPU over the whole range",
		"a/h/gpu 1: gpu_util read 0 while sm_active read up to 70% for 8 steps from " + t0.UTC().Format("2006-01-02 15:04:05 UTC") + ", so gpu_util looks stuck; saturation keeps sm_active",
	}, texts)
}

// TestSaturationStuckOnAShortRange (issue 20, point 8): a two-step range
// whose SM activity reads 0 at both steps while utilisation reads 0.99 is
// stuck (each step is a window of several scrapes): utilisation is used,
// with a warning. Before, the three-step rule never fired on two steps.
func TestSaturationStuckOnAShortRange(t *testing.T) {
	t0 := time.Unix(1_700_000_000, 0)
	st := analysis.Steps(t0, t0.Add(time.Minute), time.Minute)
	require.Len(t, st, 2)
	m := model.Metric{"job": "a", "gpu": "0", "uuid": "GPU-0", "hostname": "h"}
	var notes analysis.Notices
	out := Saturation(model.Matrix{stream(m, t0, 0, 0)}, nil, model.Matrix{stream(m, t0, 0.99, 0.99)}, st, &notes)
	require.Len(t, out, 1)
	assert.Equal(t, "gpu_util", out[0].Labels["source"])
	require.Len(t, notes.List(), 1)
	assert.Contains(t, notes.List()[0].Text, "sm_active looks stuck")
	// one step at 0 of a two-step range is not enough
	notes = analysis.Notices{}
	out = Saturation(model.Matrix{stream(m, t0, 0.5, 0)}, nil, model.Matrix{stream(m, t0, 0.99, 0.99)}, st, &notes)
	assert.Equal(t, "sm_active", out[0].Labels["source"])
}
