package catalog

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/promql"
	"github.com/prometheus/prometheus/promql/parser"
	"github.com/prometheus/prometheus/promql/promqltest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// gpuLoad holds GPU series as the embedded collector stores them (job = agent name), one
// sample a minute from 0 to 10m. d1: dcgm-exporter before 2026-05 (UUID, Hostname, modelName);
// d2: dcgm-exporter HEAD with --use-old-namespace (uuid, hostname); ag: the Inferscope agent;
// d3: MIG instances and an unlabelled dummy sample (as in DataDog's dcgm fixture); d4: an
// exporter upgrade that renamed Hostname to hostname at 5m; d5: the labels dcgm-exporter uses
// on NVLink families (gpu_uuid, model_name). Blank sentinels: d1's temperature is
// DCGM_INT64_BLANK (0x7ffffffffffffff0), its SM active DCGM_FP64_BLANK (2^47), its SM clock
// DCGM_INT32_NOT_SUPPORTED (0x7ffffff2).
const gpuLoad = `
load 1m
  DCGM_FI_DEV_POWER_USAGE{job="d1",gpu="0",UUID="GPU-a",Hostname="h1",modelName="NVIDIA H100",DCGM_FI_DRIVER_VERSION="550"} 300x10
  DCGM_FI_DEV_POWER_USAGE{job="d2",gpu="1",uuid="GPU-b",hostname="h2",modelName="NVIDIA A100"} 200x10
  inferscope_gpu_power_watts{job="ag",gpu="0",uuid="GPU-c",hostname="h3",name="NVIDIA H200"} 500x10
  DCGM_FI_DEV_POWER_USAGE{job="d3",gpu="0",UUID="GPU-m",GPU_I_ID="1",GPU_I_PROFILE="1g.10gb",modelName="NVIDIA A100"} 50x10
  DCGM_FI_DEV_POWER_USAGE{job="d3",gpu="0",UUID="GPU-m",GPU_I_ID="2",GPU_I_PROFILE="1g.10gb",modelName="NVIDIA A100"} 60x10
  DCGM_FI_DEV_POWER_USAGE{job="d3"} 1x10
  DCGM_FI_DEV_POWER_USAGE{job="d5",gpu="2",gpu_uuid="GPU-n",model_name="NVIDIA B200"} 900x10
  DCGM_FI_DEV_GPU_TEMP{job="d1",gpu="0",UUID="GPU-a",Hostname="h1",modelName="NVIDIA H100"} 9223372036854775792x10
  DCGM_FI_DEV_GPU_TEMP{job="d2",gpu="1",uuid="GPU-b",hostname="h2",modelName="NVIDIA A100"} 61x10
  DCGM_FI_PROF_SM_ACTIVE{job="d1",gpu="0",UUID="GPU-a",Hostname="h1",modelName="NVIDIA H100"} 140737488355328x10
  DCGM_FI_PROF_SM_ACTIVE{job="d2",gpu="1",uuid="GPU-b",hostname="h2",modelName="NVIDIA A100"} 0.25x10
  DCGM_FI_DEV_SM_CLOCK{job="d1",gpu="0",UUID="GPU-a",Hostname="h1",modelName="NVIDIA H100"} 2147483634x10
  DCGM_FI_DEV_SM_CLOCK{job="d2",gpu="1",uuid="GPU-b",hostname="h2",modelName="NVIDIA A100"} 1410x10
  DCGM_FI_DEV_FB_USED{job="d4",gpu="0",UUID="GPU-u",Hostname="h4"} 1024x4
  DCGM_FI_DEV_FB_USED{job="d4",gpu="0",UUID="GPU-u",hostname="h4"} _x5 2048x4
  DCGM_FI_DEV_CLOCKS_EVENT_REASONS{job="d1",gpu="0",UUID="GPU-a",Hostname="h1",DCGM_FI_DRIVER_VERSION="550"} 4x10
  DCGM_FI_DEV_CLOCK_THROTTLE_REASONS{job="d1",gpu="0",UUID="GPU-a",Hostname="h1",DCGM_FI_DRIVER_VERSION="535"} 4x10
  inferscope_gpu_throttle_reason{job="ag",gpu="0",uuid="GPU-c",hostname="h3",name="NVIDIA H200",reason="power_cap"} 1x10
`

func evalGPU(t *testing.T, expr string, at time.Duration) promql.Vector {
	t.Helper()
	st := promqltest.LoadedStorage(t, gpuLoad)
	t.Cleanup(func() { _ = st.Close() })
	ng := promqltest.NewTestEngine(t, false, 0, 1_000_000)
	q, err := ng.NewInstantQuery(context.Background(), st, nil, expr, time.Unix(0, 0).Add(at))
	require.NoError(t, err, expr)
	res := q.Exec(context.Background())
	require.NoError(t, res.Err, expr)
	v, err := res.Vector()
	require.NoError(t, err)
	return v
}

// isMetricName picks __name__ for labels.Labels.DropReserved.
func isMetricName(n string) bool { return n == model.MetricNameLabel }

// byLabels renders each sample's full label set (name excluded) as the map key.
func byLabels(v promql.Vector) map[string]float64 {
	out := map[string]float64{}
	for _, s := range v {
		out[s.Metric.DropReserved(isMetricName).String()] = s.F
	}
	return out
}

func TestGPUPromQLNormalisesLabels(t *testing.T) {
	q, err := GPUPromQL(Power, nil, "avg")
	require.NoError(t, err)
	got := byLabels(evalGPU(t, q, 10*time.Minute))
	assert.Equal(t, map[string]float64{
		`{gpu="0", hostname="h1", job="d1", name="NVIDIA H100", uuid="GPU-a"}`:       300,
		`{gpu="1", hostname="h2", job="d2", name="NVIDIA A100", uuid="GPU-b"}`:       200,
		`{gpu="0", hostname="h3", job="ag", name="NVIDIA H200", uuid="GPU-c"}`:       500,
		`{gpu="0", gpu_instance_id="1", job="d3", name="NVIDIA A100", uuid="GPU-m"}`: 50,
		`{gpu="0", gpu_instance_id="2", job="d3", name="NVIDIA A100", uuid="GPU-m"}`: 60,
		`{gpu="2", job="d5", name="NVIDIA B200", uuid="GPU-n"}`:                      900,
	}, got, "d3's unlabelled dummy has no GPU index and is not read")

	// Scoped to agents.
	q, err = GPUPromQL(Power, []string{"d2", "ag"}, "max")
	require.NoError(t, err)
	assert.Len(t, evalGPU(t, q, 10*time.Minute), 2)
}

func TestGPUPromQLDropsBlanksAndScales(t *testing.T) {
	q, err := GPUPromQL(Temperature, nil, "avg")
	require.NoError(t, err)
	assert.Equal(t, map[string]float64{`{gpu="1", hostname="h2", job="d2", name="NVIDIA A100", uuid="GPU-b"}`: 61},
		byLabels(evalGPU(t, q, 10*time.Minute)), "INT64 blank on d1")

	q, err = GPUPromQL(SMActive, nil, "avg")
	require.NoError(t, err)
	assert.Equal(t, map[string]float64{`{gpu="1", hostname="h2", job="d2", name="NVIDIA A100", uuid="GPU-b"}`: 0.25},
		byLabels(evalGPU(t, q, 10*time.Minute)), "FP64 blank on d1")

	q, err = GPUPromQL(SMClock, nil, "avg")
	require.NoError(t, err)
	// 1410 MHz = 1.41e9 Hz; d1's INT32 blank is dropped.
	assert.Equal(t, map[string]float64{`{gpu="1", hostname="h2", job="d2", name="NVIDIA A100", uuid="GPU-b"}`: 1.41e9},
		byLabels(evalGPU(t, q, 10*time.Minute)))
}

func TestGPUPromQLNeverCountsTwice(t *testing.T) {
	// Both throttle names with the same bitmask (different driver labels): summed once.
	q, err := GPUPromQL(ThrottleReasons, nil, "sum", AgentThrottleReasonLabel)
	require.NoError(t, err)
	assert.Equal(t, map[string]float64{
		`{gpu="0", hostname="h1", job="d1", uuid="GPU-a"}`:                                         4,
		`{gpu="0", hostname="h3", job="ag", name="NVIDIA H200", reason="power_cap", uuid="GPU-c"}`: 1,
	}, byLabels(evalGPU(t, q, 10*time.Minute)))

	// Hostname renamed to hostname at 5m: one series for the GPU, also while both are in the
	// lookback window (at 6m: 1024 MiB at 4m and 2048 MiB at 6m, averaged), never two.
	q, err = GPUPromQL(FBUsed, []string{"d4"}, "avg")
	require.NoError(t, err)
	assert.Equal(t, map[string]float64{`{gpu="0", hostname="h4", job="d4", uuid="GPU-u"}`: (1024 + 2048) / 2 * 1048576.0},
		byLabels(evalGPU(t, q, 6*time.Minute)))
	assert.Equal(t, map[string]float64{`{gpu="0", hostname="h4", job="d4", uuid="GPU-u"}`: 2048 * 1048576.0},
		byLabels(evalGPU(t, q, 10*time.Minute)))
}

func TestGPUPromQLShapeAndErrors(t *testing.T) {
	for _, s := range AllSignals {
		for _, agg := range gaugeAggs {
			q, err := GPUPromQL(s, []string{`we"ird\name`, "x|y"}, agg, "reason")
			if err != nil {
				continue
			}
			e := parse(t, q)
			vs, _ := selectors(e)
			for _, v := range vs {
				assert.True(t, matcher(v, "gpu").Matches("0"), q)
				assert.False(t, matcher(v, "gpu").Matches(""), q)
				assert.True(t, matcher(v, "job").Matches(`we"ird\name`), q)
				assert.False(t, matcher(v, "job").Matches("x"), q)
			}
			parser.Inspect(e, func(n parser.Node, _ []parser.Node) error {
				if a, ok := n.(*parser.AggregateExpr); ok {
					assert.Equal(t, []string{"job", "gpu", "uuid", "hostname", "name", "gpu_instance_id", "compute_instance_id", "reason"}, a.Grouping)
					assert.Equal(t, agg, a.Op.String())
				}
				return nil
			})
		}
	}
	for _, s := range []Signal{GPUUtil, SMActive, GREngineActive, DRAMActive, TensorActive, FBUsed, FBTotal, Power,
		PowerLimit, Temperature, SMClock, SMClockMax, ThrottleReasons} {
		_, err := GPUPromQL(s, nil, "avg")
		assert.NoError(t, err, s)
	}
	_, err := GPUPromQL(Energy, nil, "avg")
	assert.ErrorContains(t, err, "not read from a gauge by any GPU agent")
	_, err = GPUPromQL(TTFT, nil, "avg")
	assert.Error(t, err)
	_, err = GPUPromQL(Signal("nope"), nil, "avg")
	assert.ErrorContains(t, err, "unknown signal")
	_, err = GPUPromQL(Power, nil, "median")
	assert.ErrorContains(t, err, "aggregation")
	_, err = GPUPromQL(Power, []string{""}, "avg")
	assert.ErrorContains(t, err, "empty agent name")
	_, err = GPUPromQL(Power, nil, "avg", "bad-label")
	assert.ErrorContains(t, err, "not a valid label name")
	// GR_ENGINE_ACTIVE is read from DCGM only.
	q, err := GPUPromQL(GREngineActive, nil, "avg")
	require.NoError(t, err)
	assert.Contains(t, q, "DCGM_FI_PROF_GR_ENGINE_ACTIVE")
	assert.NotContains(t, q, GPUAgentPrefix)
}

// TestGPUImpossiblePromQL: impossible GPU readings are left out of GPUPromQL and selected by
// GPUImpossiblePromQL with the normalised labels; DCGM blank sentinels (d1 in gpuLoad) are
// "no value" and are not selected again.
func TestGPUImpossiblePromQL(t *testing.T) {
	all := []Signal{GPUUtil, SMActive, GREngineActive, DRAMActive, TensorActive, FBUsed, FBTotal,
		Power, PowerLimit, Temperature, SMClock, SMClockMax, ThrottleReasons}
	q, err := GPUImpossiblePromQL(all, nil)
	require.NoError(t, err)
	assert.Empty(t, evalGPU(t, q, 10*time.Minute), "blanks and real readings are not impossible")

	const bad = `
load 1m
  DCGM_FI_DEV_GPU_UTIL{job="x",gpu="0",UUID="GPU-x",Hostname="hx",modelName="H100"} 250x10
  DCGM_FI_DEV_POWER_USAGE{job="x",gpu="0",UUID="GPU-x",Hostname="hx",modelName="H100"} -12x10
  inferscope_gpu_sm_active_ratio{job="y",gpu="1",uuid="GPU-y",hostname="hy",name="H200"} 1.5x10
  inferscope_gpu_temperature_celsius{job="y",gpu="1",uuid="GPU-y",hostname="hy",name="H200"} NaN NaN NaN NaN NaN NaN NaN NaN NaN NaN NaN
  inferscope_gpu_power_watts{job="y",gpu="1",uuid="GPU-y",hostname="hy",name="H200"} 400x10
`
	st := promqltest.LoadedStorage(t, bad)
	t.Cleanup(func() { _ = st.Close() })
	ng := promqltest.NewTestEngine(t, false, 0, 1_000_000)
	eval := func(expr string) promql.Vector {
		qq, err := ng.NewInstantQuery(context.Background(), st, nil, expr, time.Unix(600, 0))
		require.NoError(t, err, expr)
		res := qq.Exec(context.Background())
		require.NoError(t, res.Err, expr)
		v, err := res.Vector()
		require.NoError(t, err)
		return v
	}
	q, err = GPUImpossiblePromQL(all, nil)
	require.NoError(t, err)
	got := map[string]float64{}
	for _, s := range eval(q) {
		got[s.Metric.DropReserved(isMetricName).String()] = s.F
	}
	require.Len(t, got, 4, "%v", got)
	// DCGM_FI_DEV_GPU_UTIL is in percent: 250 % = 2.5.
	assert.Equal(t, 2.5, got[`{gpu="0", hostname="hx", job="x", name="H100", signal="gpu_util", uuid="GPU-x"}`])
	assert.Equal(t, -12.0, got[`{gpu="0", hostname="hx", job="x", name="H100", signal="power", uuid="GPU-x"}`])
	assert.Equal(t, 1.5, got[`{gpu="1", hostname="hy", job="y", name="H200", signal="sm_active", uuid="GPU-y"}`])
	assert.True(t, math.IsNaN(got[`{gpu="1", hostname="hy", job="y", name="H200", signal="temperature", uuid="GPU-y"}`]))

	// GPUPromQL leaves them out: only y's power remains of these.
	for _, s := range []Signal{GPUUtil, Power, SMActive, Temperature} {
		q, err := GPUPromQL(s, nil, "avg")
		require.NoError(t, err)
		v := eval(q)
		if s == Power {
			require.Len(t, v, 1)
			assert.Equal(t, 400.0, v[0].F)
			continue
		}
		assert.Empty(t, v, s)
	}
	_, err = GPUImpossiblePromQL(nil, nil)
	assert.Error(t, err)
}
