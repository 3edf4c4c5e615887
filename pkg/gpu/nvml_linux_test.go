//go:build linux && cgo

package gpu

import (
	"errors"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
	"github.com/NVIDIA/go-nvml/pkg/nvml/mock"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const (
	h200UUID = "GPU-11111111-2222-3333-4444-555555555555"
	a100UUID = "GPU-66666666-7777-8888-9999-000000000000"
)

// h200 is a healthy Hopper GPU with GPM. Its violation counters for four of the
// six policies and its PCIe receive counter return ERROR_NOT_SUPPORTED.
func h200() *mock.Device {
	return &mock.Device{
		GetUUIDFunc:             func() (string, nvml.Return) { return h200UUID, nvml.SUCCESS },
		GetNameFunc:             func() (string, nvml.Return) { return "NVIDIA H200", nvml.SUCCESS },
		GetUtilizationRatesFunc: func() (nvml.Utilization, nvml.Return) { return nvml.Utilization{Gpu: 87, Memory: 41}, nvml.SUCCESS },
		GetMemoryInfo_v2Func: func() (nvml.Memory_v2, nvml.Return) {
			return nvml.Memory_v2{Total: 151397597184, Reserved: 536870912, Used: 100000000000, Free: 50860726272}, nvml.SUCCESS
		},
		GetPowerUsageFunc:                  func() (uint32, nvml.Return) { return 412345, nvml.SUCCESS },
		GetEnforcedPowerLimitFunc:          func() (uint32, nvml.Return) { return 700000, nvml.SUCCESS },
		GetPowerManagementDefaultLimitFunc: func() (uint32, nvml.Return) { return 700000, nvml.SUCCESS },
		GetTotalEnergyConsumptionFunc:      func() (uint64, nvml.Return) { return 123456789, nvml.SUCCESS },
		GetTemperatureFunc: func(s nvml.TemperatureSensors) (uint32, nvml.Return) {
			if s != nvml.TEMPERATURE_GPU {
				return 0, nvml.ERROR_INVALID_ARGUMENT
			}
			return 61, nvml.SUCCESS
		},
		GetClockInfoFunc:                   clocks(1980, 3201),
		GetMaxClockInfoFunc:                clocks(1980, 3201),
		GetCurrentClocksEventReasonsFunc:   func() (uint64, nvml.Return) { return 0, nvml.SUCCESS },
		GetSupportedClocksEventReasonsFunc: func() (uint64, nvml.Return) { return nvml.ClocksEventReasonAll, nvml.SUCCESS },
		GetViolationStatusFunc: func(p nvml.PerfPolicyType) (nvml.ViolationTime, nvml.Return) {
			switch p {
			case nvml.PERF_POLICY_POWER:
				return nvml.ViolationTime{ReferenceTime: 1, ViolationTime: 2_500_000_000}, nvml.SUCCESS
			case nvml.PERF_POLICY_THERMAL:
				return nvml.ViolationTime{ReferenceTime: 1}, nvml.SUCCESS
			}
			return nvml.ViolationTime{}, nvml.ERROR_NOT_SUPPORTED
		},
		GetPcieThroughputFunc: func(c nvml.PcieUtilCounter) (uint32, nvml.Return) {
			if c == nvml.PCIE_UTIL_TX_BYTES {
				return 1000, nvml.SUCCESS
			}
			return 0, nvml.ERROR_NOT_SUPPORTED
		},
		GetTotalEccErrorsFunc: func(t nvml.MemoryErrorType, c nvml.EccCounterType) (uint64, nvml.Return) {
			switch {
			case c == nvml.AGGREGATE_ECC && t == nvml.MEMORY_ERROR_TYPE_CORRECTED:
				return 10, nvml.SUCCESS
			case c == nvml.AGGREGATE_ECC:
				return 1, nvml.SUCCESS
			case c != nvml.VOLATILE_ECC:
				return 0, nvml.ERROR_INVALID_ARGUMENT
			case t == nvml.MEMORY_ERROR_TYPE_CORRECTED:
				return 3, nvml.SUCCESS
			}
			return 0, nvml.SUCCESS
		},
		GetPcieReplayCounterFunc: func() (int, nvml.Return) { return 7, nvml.SUCCESS },
		GetRemappedRowsFunc:      func() (int, int, bool, bool, nvml.Return) { return 2, 0, false, false, nvml.SUCCESS },
		GetComputeRunningProcessesFunc: func() ([]nvml.ProcessInfo, nvml.Return) {
			return []nvml.ProcessInfo{
				{Pid: 4242, UsedGpuMemory: 60 << 30},
				{Pid: 4243, UsedGpuMemory: math.MaxUint64}, // NVML_VALUE_NOT_AVAILABLE: omitted
			}, nvml.SUCCESS
		},
		GetMigModeFunc:     func() (int, int, nvml.Return) { return nvml.DEVICE_MIG_DISABLE, nvml.DEVICE_MIG_DISABLE, nvml.SUCCESS },
		RegisterEventsFunc: func(uint64, nvml.EventSet) nvml.Return { return nvml.SUCCESS },
	}
}

// a100 is an Ampere GPU without GPM that is power capped and thermally
// throttled; it has no GetMemoryInfo_v2 support, no ECC, no row remapping and
// no MIG support, and does not deliver XID events.
func a100() *mock.Device {
	return &mock.Device{
		GetUUIDFunc:             func() (string, nvml.Return) { return a100UUID, nvml.SUCCESS },
		GetNameFunc:             func() (string, nvml.Return) { return "NVIDIA A100-SXM4-80GB", nvml.SUCCESS },
		GetUtilizationRatesFunc: func() (nvml.Utilization, nvml.Return) { return nvml.Utilization{Gpu: 100, Memory: 95}, nvml.SUCCESS },
		GetMemoryInfo_v2Func:    func() (nvml.Memory_v2, nvml.Return) { return nvml.Memory_v2{}, nvml.ERROR_NOT_SUPPORTED },
		GetMemoryInfoFunc: func() (nvml.Memory, nvml.Return) {
			return nvml.Memory{Total: 85899345920, Free: 5899345920, Used: 80000000000}, nvml.SUCCESS
		},
		GetPowerUsageFunc:                  func() (uint32, nvml.Return) { return 400000, nvml.SUCCESS },
		GetEnforcedPowerLimitFunc:          func() (uint32, nvml.Return) { return 250000, nvml.SUCCESS },
		GetPowerManagementDefaultLimitFunc: func() (uint32, nvml.Return) { return 400000, nvml.SUCCESS },
		GetTotalEnergyConsumptionFunc:      func() (uint64, nvml.Return) { return 5000, nvml.SUCCESS },
		GetTemperatureFunc:                 func(nvml.TemperatureSensors) (uint32, nvml.Return) { return 84, nvml.SUCCESS },
		GetClockInfoFunc:                   clocks(1275, 1593),
		GetMaxClockInfoFunc:                clocks(1410, 1593),
		GetCurrentClocksEventReasonsFunc: func() (uint64, nvml.Return) {
			return nvml.ClocksEventReasonSwPowerCap | nvml.ClocksThrottleReasonHwThermalSlowdown, nvml.SUCCESS
		},
		GetSupportedClocksEventReasonsFunc: func() (uint64, nvml.Return) {
			return nvml.ClocksEventReasonAll &^ nvml.ClocksEventReasonDisplayClockSetting, nvml.SUCCESS
		},
		GetViolationStatusFunc: func(p nvml.PerfPolicyType) (nvml.ViolationTime, nvml.Return) {
			switch p {
			case nvml.PERF_POLICY_POWER:
				return nvml.ViolationTime{ViolationTime: 15_000_000_000}, nvml.SUCCESS
			case nvml.PERF_POLICY_THERMAL:
				return nvml.ViolationTime{ViolationTime: 3_000_000_000}, nvml.SUCCESS
			}
			return nvml.ViolationTime{}, nvml.SUCCESS
		},
		GetPcieThroughputFunc: func(c nvml.PcieUtilCounter) (uint32, nvml.Return) {
			if c == nvml.PCIE_UTIL_TX_BYTES {
				return 2048, nvml.SUCCESS
			}
			return 512, nvml.SUCCESS
		},
		GetTotalEccErrorsFunc: func(nvml.MemoryErrorType, nvml.EccCounterType) (uint64, nvml.Return) {
			return 0, nvml.ERROR_NOT_SUPPORTED
		},
		GetPcieReplayCounterFunc:       func() (int, nvml.Return) { return 0, nvml.ERROR_NOT_SUPPORTED },
		GetRemappedRowsFunc:            func() (int, int, bool, bool, nvml.Return) { return 0, 0, false, false, nvml.ERROR_NOT_SUPPORTED },
		GetComputeRunningProcessesFunc: func() ([]nvml.ProcessInfo, nvml.Return) { return nil, nvml.SUCCESS },
		GetMigModeFunc:                 func() (int, int, nvml.Return) { return 0, 0, nvml.ERROR_NOT_SUPPORTED },
		RegisterEventsFunc:             func(uint64, nvml.EventSet) nvml.Return { return nvml.ERROR_NOT_SUPPORTED },
	}
}

func clocks(sm, mem uint32) func(nvml.ClockType) (uint32, nvml.Return) {
	return func(c nvml.ClockType) (uint32, nvml.Return) {
		switch c {
		case nvml.CLOCK_SM:
			return sm, nvml.SUCCESS
		case nvml.CLOCK_MEM:
			return mem, nvml.SUCCESS
		}
		return 0, nvml.ERROR_INVALID_ARGUMENT
	}
}

// fakeNVML wires mock devices into a mock library with GPM for the devices in
// gpm, an event set fed from events, and a symbol table that lacks missing.
type fakeNVML struct {
	lib     *mock.Interface
	events  chan nvml.EventData
	mu      sync.Mutex
	gets    []nvml.GpmSample    // samples passed to GpmSampleGet, in order
	pairs   [][2]nvml.GpmSample // (Sample1, Sample2) passed to GpmMetricsGet
	freed   int
	shutOff int
}

func newFakeNVML(devs []*mock.Device, gpm map[int]bool, missing ...string) *fakeNVML {
	f := &fakeNVML{events: make(chan nvml.EventData, 8)}
	set := &mock.EventSet{}
	lacks := map[string]bool{}
	for _, m := range missing {
		lacks[m] = true
	}
	f.lib = &mock.Interface{
		InitFunc:     func() nvml.Return { return nvml.SUCCESS },
		ShutdownFunc: func() nvml.Return { f.shutOff++; return nvml.SUCCESS },
		ExtensionsFunc: func() nvml.ExtendedInterface {
			return &mock.ExtendedInterface{LookupSymbolFunc: func(s string) error {
				if lacks[s] {
					return errors.New("undefined symbol " + s)
				}
				return nil
			}}
		},
		DeviceGetCountFunc: func() (int, nvml.Return) { return len(devs), nvml.SUCCESS },
		DeviceGetHandleByIndexFunc: func(i int) (nvml.Device, nvml.Return) {
			if i < 0 || i >= len(devs) {
				return nil, nvml.ERROR_INVALID_ARGUMENT
			}
			return devs[i], nvml.SUCCESS
		},
		GpmQueryDeviceSupportFunc: func(d nvml.Device) (nvml.GpmSupport, nvml.Return) {
			for i, dev := range devs {
				if dev == d && gpm[i] {
					return nvml.GpmSupport{Version: 1, IsSupportedDevice: 1}, nvml.SUCCESS
				}
			}
			return nvml.GpmSupport{Version: 1}, nvml.SUCCESS
		},
		GpmSampleAllocFunc: func() (nvml.GpmSample, nvml.Return) { return &mock.GpmSample{}, nvml.SUCCESS },
		GpmSampleFreeFunc:  func(nvml.GpmSample) nvml.Return { f.freed++; return nvml.SUCCESS },
		GpmSampleGetFunc: func(_ nvml.Device, s nvml.GpmSample) nvml.Return {
			f.mu.Lock()
			f.gets = append(f.gets, s)
			f.mu.Unlock()
			return nvml.SUCCESS
		},
		GpmMetricsGetFunc: func(q *nvml.GpmMetricsGetType) nvml.Return {
			f.mu.Lock()
			f.pairs = append(f.pairs, [2]nvml.GpmSample{q.Sample1, q.Sample2})
			f.mu.Unlock()
			percent := map[nvml.GpmMetricId]float64{
				nvml.GPM_METRIC_SM_UTIL: 50, nvml.GPM_METRIC_SM_OCCUPANCY: 25,
				nvml.GPM_METRIC_DRAM_BW_UTIL: 80, nvml.GPM_METRIC_ANY_TENSOR_UTIL: 10,
			}
			for i := 0; i < int(q.NumMetrics); i++ {
				v, ok := percent[nvml.GpmMetricId(q.Metrics[i].MetricId)]
				if !ok {
					q.Metrics[i].NvmlReturn = uint32(nvml.ERROR_NOT_SUPPORTED)
					continue
				}
				q.Metrics[i].Value = v
			}
			return nvml.SUCCESS
		},
		EventSetCreateFunc: func() (nvml.EventSet, nvml.Return) { return set, nvml.SUCCESS },
		EventSetFreeFunc:   func(nvml.EventSet) nvml.Return { return nvml.SUCCESS },
		EventSetWaitFunc: func(_ nvml.EventSet, ms uint32) (nvml.EventData, nvml.Return) {
			select {
			case e := <-f.events:
				return e, nvml.SUCCESS
			case <-time.After(time.Duration(ms) * time.Millisecond):
				return nvml.EventData{}, nvml.ERROR_TIMEOUT
			}
		},
	}
	return f
}

const twoGPUVars = `gpu="0",uuid="` + h200UUID + `",name="NVIDIA H200",hostname="node-a"`

var labelVars = map[string]string{
	"h": twoGPUVars,
	"a": `gpu="1",uuid="` + a100UUID + `",name="NVIDIA A100-SXM4-80GB",hostname="node-a"`,
}

// Expected values, converted by hand from the mock's NVML units: mW/1000,
// mJ/1000, MHz×1e6, KiB/s×1024, ns/1e9, percent/100.
const twoGPUSeries = `
inferscope_gpu_utilization_ratio{$h} 0.87
inferscope_gpu_utilization_ratio{$a} 1
inferscope_gpu_memory_utilization_ratio{$h} 0.41
inferscope_gpu_memory_utilization_ratio{$a} 0.95
inferscope_gpu_fb_used_bytes{$h} 1e+11
inferscope_gpu_fb_used_bytes{$a} 8e+10
inferscope_gpu_fb_total_bytes{$h} 1.51397597184e+11
inferscope_gpu_fb_total_bytes{$a} 8.589934592e+10
inferscope_gpu_fb_reserved_bytes{$h} 5.36870912e+08
inferscope_gpu_power_watts{$h} 412.345
inferscope_gpu_power_watts{$a} 400
inferscope_gpu_power_limit_watts{$h} 700
inferscope_gpu_power_limit_watts{$a} 250
inferscope_gpu_power_default_limit_watts{$h} 700
inferscope_gpu_power_default_limit_watts{$a} 400
inferscope_gpu_energy_joules_total{$h} 123456.789
inferscope_gpu_energy_joules_total{$a} 5
inferscope_gpu_temperature_celsius{$h} 61
inferscope_gpu_temperature_celsius{$a} 84
inferscope_gpu_sm_clock_hertz{$h} 1.98e+09
inferscope_gpu_sm_clock_hertz{$a} 1.275e+09
inferscope_gpu_sm_clock_max_hertz{$h} 1.98e+09
inferscope_gpu_sm_clock_max_hertz{$a} 1.41e+09
inferscope_gpu_mem_clock_hertz{$h} 3.201e+09
inferscope_gpu_mem_clock_hertz{$a} 1.593e+09
inferscope_gpu_mem_clock_max_hertz{$h} 3.201e+09
inferscope_gpu_mem_clock_max_hertz{$a} 1.593e+09
inferscope_gpu_throttle_reason{$h,reason="gpu_idle"} 0
inferscope_gpu_throttle_reason{$h,reason="clocks_setting"} 0
inferscope_gpu_throttle_reason{$h,reason="power_cap"} 0
inferscope_gpu_throttle_reason{$h,reason="hw_slowdown"} 0
inferscope_gpu_throttle_reason{$h,reason="sync_boost"} 0
inferscope_gpu_throttle_reason{$h,reason="sw_thermal"} 0
inferscope_gpu_throttle_reason{$h,reason="hw_thermal"} 0
inferscope_gpu_throttle_reason{$h,reason="hw_power_brake"} 0
inferscope_gpu_throttle_reason{$h,reason="display_clocks"} 0
inferscope_gpu_throttle_reason{$h,reason="board_limit"} 0
inferscope_gpu_throttle_reason{$h,reason="reliability"} 0
inferscope_gpu_throttle_reason{$a,reason="gpu_idle"} 0
inferscope_gpu_throttle_reason{$a,reason="clocks_setting"} 0
inferscope_gpu_throttle_reason{$a,reason="power_cap"} 1
inferscope_gpu_throttle_reason{$a,reason="hw_slowdown"} 0
inferscope_gpu_throttle_reason{$a,reason="sync_boost"} 0
inferscope_gpu_throttle_reason{$a,reason="sw_thermal"} 0
inferscope_gpu_throttle_reason{$a,reason="hw_thermal"} 1
inferscope_gpu_throttle_reason{$a,reason="hw_power_brake"} 0
inferscope_gpu_throttle_reason{$a,reason="board_limit"} 0
inferscope_gpu_throttle_reason{$a,reason="reliability"} 0
inferscope_gpu_violation_seconds_total{$h,reason="power"} 2.5
inferscope_gpu_violation_seconds_total{$h,reason="thermal"} 0
inferscope_gpu_violation_seconds_total{$a,reason="power"} 15
inferscope_gpu_violation_seconds_total{$a,reason="thermal"} 3
inferscope_gpu_violation_seconds_total{$a,reason="sync_boost"} 0
inferscope_gpu_violation_seconds_total{$a,reason="board_limit"} 0
inferscope_gpu_violation_seconds_total{$a,reason="low_utilization"} 0
inferscope_gpu_violation_seconds_total{$a,reason="reliability"} 0
inferscope_gpu_pcie_tx_bytes_per_second{$h} 1.024e+06
inferscope_gpu_pcie_tx_bytes_per_second{$a} 2.097152e+06
inferscope_gpu_pcie_rx_bytes_per_second{$a} 524288
inferscope_gpu_ecc_errors_total{$h,type="corrected"} 3
inferscope_gpu_ecc_errors_total{$h,type="uncorrected"} 0
inferscope_gpu_remapped_rows_total{$h,type="correctable"} 2
inferscope_gpu_remapped_rows_total{$h,type="uncorrectable"} 0
inferscope_gpu_remap_pending{$h} 0
inferscope_gpu_remap_failed{$h} 0
inferscope_gpu_process_used_memory_bytes{$h,pid="4242"} 6.442450944e+10
inferscope_gpu_ecc_errors_aggregate_total{$h,type="corrected"} 10
inferscope_gpu_ecc_errors_aggregate_total{$h,type="uncorrected"} 1
inferscope_gpu_pcie_replays_total{$h} 7
`

const gpmSeries = `
inferscope_gpu_sm_active_ratio{$h} 0.5
inferscope_gpu_sm_occupancy_ratio{$h} 0.25
inferscope_gpu_dram_active_ratio{$h} 0.8
inferscope_gpu_tensor_active_ratio{$h} 0.1
`

func newMockAgent(t *testing.T, f *fakeNVML) *Agent {
	t.Helper()
	src, err := NewNVMLSource(f.lib)
	require.NoError(t, err)
	return newTestAgent(t, src)
}

func TestNVMLTwoGPUsExactSeries(t *testing.T) {
	h, a := h200(), a100()
	f := newFakeNVML([]*mock.Device{h, a}, map[int]bool{0: true})
	agent := newMockAgent(t, f)
	reg := prometheus.NewRegistry()
	require.NoError(t, reg.Register(agent.Collector()))

	// First sample: GPM needs two samples, so no GPM series yet.
	require.NoError(t, testutil.GatherAndCompare(reg,
		strings.NewReader(exposition(t, twoGPUSeries, labelVars)), allFamilyNames()...))

	// Second sample: GPM ratios between the two samples for the H200 only.
	agent.sampleOnce()
	require.NoError(t, testutil.GatherAndCompare(reg,
		strings.NewReader(exposition(t, twoGPUSeries+gpmSeries, labelVars)), allFamilyNames()...))

	// GPM read (previous, current) and swapped buffers: gets were s1, s2, s1.
	agent.sampleOnce()
	f.mu.Lock()
	require.Len(t, f.gets, 3)
	require.Len(t, f.pairs, 2)
	assert.Same(t, f.gets[0], f.pairs[0][0])
	assert.Same(t, f.gets[1], f.pairs[0][1])
	assert.Same(t, f.gets[1], f.pairs[1][0])
	assert.Same(t, f.gets[2], f.pairs[1][1])
	assert.NotSame(t, f.gets[0], f.gets[1])
	f.mu.Unlock()

	// Not-supported reads are omitted silently, not counted as errors.
	snap, err := agent.Snapshot()
	require.NoError(t, err)
	assert.Zero(t, snap.ReadErrors)

	// Scrapes never call NVML: call counts do not move while we gather.
	before := len(h.GetPowerUsageCalls()) + len(a.GetPowerUsageCalls()) + len(h.GetUtilizationRatesCalls())
	for range 5 {
		_, err := reg.Gather()
		require.NoError(t, err)
	}
	assert.Equal(t, before, len(h.GetPowerUsageCalls())+len(a.GetPowerUsageCalls())+len(h.GetUtilizationRatesCalls()))
	assert.Len(t, h.GetPowerUsageCalls(), 3, "one read per sample")

	// The A100 has no GPM: it never got a GPM sample.
	assert.Len(t, f.lib.GpmSampleAllocCalls(), 2, "two buffers, for the H200 only")

	// Close frees both GPM buffers and shuts NVML down once.
	require.NoError(t, agent.Close())
	assert.Equal(t, 2, f.freed)
	assert.Equal(t, 1, f.shutOff)
}

func TestNVMLXIDEventsAndPromtool(t *testing.T) {
	h, a := h200(), a100()
	f := newFakeNVML([]*mock.Device{h, a}, map[int]bool{0: true})
	agent := newMockAgent(t, f)
	agent.sampleOnce()
	assert.Len(t, h.RegisterEventsCalls(), 1)
	assert.Equal(t, uint64(nvml.EventTypeXidCriticalError), h.RegisterEventsCalls()[0].V)
	f.events <- nvml.EventData{Device: h, EventType: nvml.EventTypeXidCriticalError, EventData: 79}
	f.events <- nvml.EventData{Device: h, EventType: nvml.EventTypeXidCriticalError, EventData: 79}
	f.events <- nvml.EventData{Device: h, EventType: nvml.EventTypeXidCriticalError, EventData: 48}

	reg := prometheus.NewRegistry()
	require.NoError(t, reg.Register(agent.Collector()))
	want := exposition(t, `
inferscope_gpu_xid_errors_total{$h,xid="48"} 1
inferscope_gpu_xid_errors_total{$h,xid="79"} 2
`, labelVars)
	require.Eventually(t, func() bool {
		return testutil.GatherAndCompare(reg, strings.NewReader(want), NameXIDErrors) == nil
	}, 5*time.Second, 10*time.Millisecond)

	rec := httptest.NewRecorder()
	NewHandler(agent, "").ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	require.Equal(t, http.StatusOK, rec.Code)
	promtoolCheck(t, rec.Body.Bytes())
}

func TestNVMLFailingInitCallsNothingElse(t *testing.T) {
	// Only InitFunc is set: any other call on the mock panics ("method is nil").
	lib := &mock.Interface{InitFunc: func() nvml.Return { return nvml.ERROR_LIBRARY_NOT_FOUND }}
	src, err := NewNVMLSource(lib)
	require.Error(t, err)
	assert.Nil(t, src)
	assert.Contains(t, err.Error(), "ERROR_LIBRARY_NOT_FOUND")
	assert.Len(t, lib.InitCalls(), 1)
}

func TestNVMLRealLibraryWithoutDriver(t *testing.T) {
	src, err := OpenNVML()
	if err == nil {
		require.NoError(t, src.Close())
		t.Skip("libnvidia-ml is present on this machine")
	}
	assert.Contains(t, err.Error(), "ERROR_LIBRARY_NOT_FOUND")
}

func TestNVMLMissingSymbolsAreNeverCalled(t *testing.T) {
	h := h200()
	// The installed driver lacks the energy counter and the new clock-event
	// names; the old throttle-reason names exist. Leaving the mock funcs of the
	// missing symbols nil makes any call to them panic.
	h.GetTotalEnergyConsumptionFunc = nil
	h.GetPowerManagementDefaultLimitFunc = nil
	h.GetCurrentClocksEventReasonsFunc = nil
	h.GetSupportedClocksEventReasonsFunc = nil
	h.GetCurrentClocksThrottleReasonsFunc = func() (uint64, nvml.Return) { return nvml.ClocksEventReasonSwPowerCap, nvml.SUCCESS }
	h.GetSupportedClocksThrottleReasonsFunc = func() (uint64, nvml.Return) {
		return nvml.ClocksEventReasonSwPowerCap | nvml.ClocksEventReasonGpuIdle, nvml.SUCCESS
	}
	f := newFakeNVML([]*mock.Device{h}, nil, symTotalEnergy, symEventReasons, symSupportedEventReasons,
		symGpmQuerySupport, symEventSetCreate, symDefaultPowerLimit)
	agent := newMockAgent(t, f)
	reg := prometheus.NewRegistry()
	require.NoError(t, reg.Register(agent.Collector()))
	n, err := testutil.GatherAndCount(reg, NameEnergy, NamePowerDefaultLimit)
	require.NoError(t, err)
	assert.Zero(t, n, "no energy counter and no default power limit where the driver lacks them")
	require.NoError(t, testutil.GatherAndCompare(reg, strings.NewReader(exposition(t, `
inferscope_gpu_throttle_reason{$h,reason="gpu_idle"} 0
inferscope_gpu_throttle_reason{$h,reason="power_cap"} 1
`, labelVars)), NameThrottleReason))
	assert.Empty(t, f.lib.GpmQueryDeviceSupportCalls(), "GPM symbols missing: never queried")
	assert.Empty(t, f.lib.EventSetCreateCalls(), "event symbols missing: no event set")
	assert.Equal(t, []string{symEventReasons, symDefaultPowerLimit, symSupportedEventReasons, symTotalEnergy, symEventSetCreate, symGpmQuerySupport},
		src(agent).(*nvmlSource).MissingSymbols())
}

func src(a *Agent) Source { return a.src }

func TestNVMLLostGPUKeepsOthers(t *testing.T) {
	h, a := h200(), a100()
	a.GetUtilizationRatesFunc = func() (nvml.Utilization, nvml.Return) { return nvml.Utilization{}, nvml.ERROR_GPU_IS_LOST }
	f := newFakeNVML([]*mock.Device{h, a}, nil)
	agent := newMockAgent(t, f)
	err := agent.Healthy()
	require.Error(t, err)
	assert.Contains(t, err.Error(), "GPU 1 ("+a100UUID+")")
	assert.Empty(t, a.GetPowerUsageCalls(), "no reads after the GPU is lost")
	reg := prometheus.NewRegistry()
	require.NoError(t, reg.Register(agent.Collector()))
	require.NoError(t, testutil.GatherAndCompare(reg, strings.NewReader(exposition(t, `
inferscope_gpu_power_watts{$h} 412.345
`, labelVars)), NamePower))
}

func TestNVMLMIGDevices(t *testing.T) {
	h := h200()
	h.GetUtilizationRatesFunc = func() (nvml.Utilization, nvml.Return) { return nvml.Utilization{}, nvml.ERROR_NOT_SUPPORTED }
	mig := &mock.Device{
		GetGpuInstanceIdFunc:     func() (int, nvml.Return) { return 2, nvml.SUCCESS },
		GetComputeInstanceIdFunc: func() (int, nvml.Return) { return 0, nvml.SUCCESS },
		GetUUIDFunc:              func() (string, nvml.Return) { return "MIG-aaaa", nvml.SUCCESS },
		GetNameFunc:              func() (string, nvml.Return) { return "NVIDIA H200 MIG 3g.71gb", nvml.SUCCESS },
		GetMemoryInfo_v2Func: func() (nvml.Memory_v2, nvml.Return) {
			return nvml.Memory_v2{Total: 76235669504, Reserved: 0, Used: 1 << 30}, nvml.SUCCESS
		},
		GetComputeRunningProcessesFunc: func() ([]nvml.ProcessInfo, nvml.Return) {
			return []nvml.ProcessInfo{{Pid: 7, UsedGpuMemory: 512 << 20}}, nvml.SUCCESS
		},
	}
	h.GetMigModeFunc = func() (int, int, nvml.Return) { return nvml.DEVICE_MIG_ENABLE, nvml.DEVICE_MIG_ENABLE, nvml.SUCCESS }
	h.GetMaxMigDeviceCountFunc = func() (int, nvml.Return) { return 3, nvml.SUCCESS }
	h.GetMigDeviceHandleByIndexFunc = func(i int) (nvml.Device, nvml.Return) {
		if i == 0 {
			return mig, nvml.SUCCESS
		}
		return nil, nvml.ERROR_NOT_FOUND
	}
	h.GetComputeRunningProcessesFunc = nil // with MIG on, processes are read per MIG device
	f := newFakeNVML([]*mock.Device{h}, map[int]bool{0: true})
	var migGets []int
	f.lib.GpmMigSampleGetFunc = func(d nvml.Device, gi int, s nvml.GpmSample) nvml.Return {
		require.Same(t, h, d)
		migGets = append(migGets, gi)
		return nvml.SUCCESS
	}
	agent := newMockAgent(t, f)
	agent.sampleOnce()
	reg := prometheus.NewRegistry()
	require.NoError(t, reg.Register(agent.Collector()))
	vars := map[string]string{
		"h": twoGPUVars,
		"m": `gpu="0",uuid="MIG-aaaa",name="NVIDIA H200 MIG 3g.71gb",hostname="node-a",gpu_instance_id="2",compute_instance_id="0"`,
	}
	require.NoError(t, testutil.GatherAndCompare(reg, strings.NewReader(exposition(t, `
inferscope_gpu_fb_used_bytes{$h} 1e+11
inferscope_gpu_fb_used_bytes{$m} 1.073741824e+09
inferscope_gpu_sm_active_ratio{$h} 0.5
inferscope_gpu_sm_active_ratio{$m} 0.5
inferscope_gpu_process_used_memory_bytes{$m,pid="7"} 5.36870912e+08
`, vars)), NameUtilization, NameFBUsed, NameSMActive, NameProcessUsedMemory))
	assert.Equal(t, []int{2, 2}, migGets)
}

// Snapshot returns the cached sample (zero Snapshot and the error when the last
// sample failed).
func (a *Agent) Snapshot() (Snapshot, error) {
	c := a.cache.Load()
	if c == nil {
		return Snapshot{}, errors.New("no sample yet")
	}
	return c.snap, c.err
}
