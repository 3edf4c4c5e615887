package sim

import (
	"strconv"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/inferscope/inferscope-llm-datasource/pkg/enginemodel"
)

// GPU agent metric names served on the simulator's --gpu-listen page. They
// are the inferscope GPU agent's names (gpu.NameUtilization and the rest); they are repeated
// here as literals so that pkg/sim does not depend on the NVML agent package.
const (
	GPUUtilization       = "inferscope_gpu_utilization_ratio"
	GPUMemoryUtilization = "inferscope_gpu_memory_utilization_ratio"
	GPUFBUsed            = "inferscope_gpu_fb_used_bytes"
	GPUFBTotal           = "inferscope_gpu_fb_total_bytes"
	GPUPower             = "inferscope_gpu_power_watts"
	GPUPowerLimit        = "inferscope_gpu_power_limit_watts"
	GPUPowerDefaultLimit = "inferscope_gpu_power_default_limit_watts"
	GPUEnergy            = "inferscope_gpu_energy_joules_total"
	GPUTemperature       = "inferscope_gpu_temperature_celsius"
	GPUSMClock           = "inferscope_gpu_sm_clock_hertz"
	GPUSMClockMax        = "inferscope_gpu_sm_clock_max_hertz"
	GPUThrottleReason    = "inferscope_gpu_throttle_reason"
	GPUSMActive          = "inferscope_gpu_sm_active_ratio"
	GPUDRAMActive        = "inferscope_gpu_dram_active_ratio"
	GPUTensorActive      = "inferscope_gpu_tensor_active_ratio"
)

// gpuThrottleReasons are the reason label values with their NVML bits, as the
// agent names them (dcgm-exporter's clock_event names).
var gpuThrottleReasons = []struct {
	bit    uint64
	reason string
}{
	{0x1, "gpu_idle"}, {0x2, "clocks_setting"}, {0x4, "power_cap"}, {0x8, "hw_slowdown"},
	{0x10, "sync_boost"}, {0x20, "sw_thermal"}, {0x40, "hw_thermal"}, {0x80, "hw_power_brake"},
	{0x100, "display_clocks"}, {0x200, "board_limit"}, {0x400, "reliability"},
}

type gpuCollector struct {
	s      *Sim
	labels []string
	descs  map[string]*prometheus.Desc
}

func newGPUCollector(s *Sim) *gpuCollector {
	g := s.Config().GPU
	c := &gpuCollector{s: s, labels: []string{strconv.Itoa(g.Index), g.UUID, g.Name, g.Hostname}, descs: map[string]*prometheus.Desc{}}
	names := []string{"gpu", "uuid", "name", "hostname"}
	help := map[string]string{
		GPUUtilization:       "Share of the last NVML sample window during which one or more kernels ran (0..1).",
		GPUMemoryUtilization: "Share of the last NVML sample window during which device memory was read or written (0..1).",
		GPUFBUsed:            "Framebuffer memory used, in bytes.",
		GPUFBTotal:           "Framebuffer memory total, in bytes.",
		GPUPower:             "Power draw, in watts.",
		GPUPowerLimit:        "Enforced power limit, in watts.",
		GPUPowerDefaultLimit: "Default power limit of the board (the limit after a reset), in watts.",
		GPUEnergy:            "Energy consumed since the driver was loaded, in joules.",
		GPUTemperature:       "GPU temperature, in degrees celsius.",
		GPUSMClock:           "Current SM clock, in hertz.",
		GPUSMClockMax:        "Maximum SM clock, in hertz.",
		GPUSMActive:          "Share of SMs busy between two GPM samples (NVML GPM SM_UTIL, 0..1).",
		GPUDRAMActive:        "DRAM bandwidth used over the theoretical maximum between two GPM samples (NVML GPM DRAM_BW_UTIL, 0..1).",
		GPUTensorActive:      "Share of time any tensor pipe was active between two GPM samples (NVML GPM ANY_TENSOR_UTIL, 0..1).",
	}
	for n, h := range help {
		c.descs[n] = prometheus.NewDesc(n, h, names, nil)
	}
	c.descs[GPUThrottleReason] = prometheus.NewDesc(GPUThrottleReason,
		"1 while the clock-event (throttle) reason is active, else 0; only reasons the GPU supports.",
		append(append([]string{}, names...), "reason"), nil)
	return c
}

// Describe sends nothing: an unchecked collector.
func (c *gpuCollector) Describe(chan<- *prometheus.Desc) {}

// Collect sends the simulated GPU's readings.
func (c *gpuCollector) Collect(ch chan<- prometheus.Metric) {
	c.s.Inspect(func(snap *enginemodel.Snapshot) { c.collect(ch, snap.GPU) })
}

// collect sends the readings g.
func (c *gpuCollector) collect(ch chan<- prometheus.Metric, g enginemodel.GPUReadings) {
	cfg := c.s.Config()
	// vLLM reserves GPUMemoryUtil of the memory at start (weights + KV cache),
	// plus ~0.5 GiB CUDA context: FB used does not follow the load.
	fbUsed := cfg.GPU.MemoryBytes*cfg.GPUMemoryUtil + 0.5*(1<<30)
	vals := []struct {
		name string
		vt   prometheus.ValueType
		v    float64
	}{
		{GPUUtilization, prometheus.GaugeValue, clamp01(g.Util)},
		{GPUMemoryUtilization, prometheus.GaugeValue, clamp01(g.DRAM * 1.1)},
		{GPUFBUsed, prometheus.GaugeValue, fbUsed},
		{GPUFBTotal, prometheus.GaugeValue, cfg.GPU.MemoryBytes},
		{GPUPower, prometheus.GaugeValue, g.PowerW},
		{GPUPowerLimit, prometheus.GaugeValue, cfg.GPU.PowerLimitW},
		{GPUPowerDefaultLimit, prometheus.GaugeValue, cfg.GPU.DefaultPowerLimit()},
		{GPUEnergy, prometheus.CounterValue, g.EnergyJ},
		{GPUTemperature, prometheus.GaugeValue, float64(int(g.TempC))}, // NVML reports whole degrees
		{GPUSMClock, prometheus.GaugeValue, float64(int(g.SMClockHz/1e6)) * 1e6},
		{GPUSMClockMax, prometheus.GaugeValue, cfg.GPU.SMClockMaxHz},
		{GPUSMActive, prometheus.GaugeValue, clamp01(g.SM)},
		{GPUDRAMActive, prometheus.GaugeValue, clamp01(g.DRAM)},
		{GPUTensorActive, prometheus.GaugeValue, clamp01(g.Tensor)},
	}
	for _, v := range vals {
		ch <- prometheus.MustNewConstMetric(c.descs[v.name], v.vt, v.v, c.labels...)
	}
	bits := g.Throttle
	d := c.descs[GPUThrottleReason]
	for _, r := range gpuThrottleReasons {
		v := 0.0
		if bits&r.bit != 0 {
			v = 1
		}
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, append(append(make([]string, 0, 5), c.labels...), r.reason)...)
	}
}

func clamp01(v float64) float64 { return min(1, max(0, v)) }
