package catalog

// GPUAgentPrefix starts every metric name the Inferscope GPU agent (cmd/inferscope-gpu-agent)
// exposes. Detect reports EngineInferscopeGPU for pages with such names.
const GPUAgentPrefix = "inferscope_gpu_"

// Metric names exposed by the Inferscope GPU agent. All are gauges except
// AgentEnergyJoulesTotal (a counter). Units are in the names: ratios 0..1, bytes, watts,
// joules, degrees Celsius, hertz. Every series carries the labels the agent sets per GPU.
const (
	AgentUtilizationRatio       = GPUAgentPrefix + "utilization_ratio"         // gauge, 0..1: time a kernel ran (NVML utilization.gpu/100)
	AgentMemoryUtilizationRatio = GPUAgentPrefix + "memory_utilization_ratio"  // gauge, 0..1: time device memory was read or written
	AgentFBUsedBytes            = GPUAgentPrefix + "fb_used_bytes"             // gauge, bytes of framebuffer in use
	AgentFBTotalBytes           = GPUAgentPrefix + "fb_total_bytes"            // gauge, bytes of framebuffer installed
	AgentFBReservedBytes        = GPUAgentPrefix + "fb_reserved_bytes"         // gauge, bytes reserved by the driver
	AgentPowerWatts             = GPUAgentPrefix + "power_watts"               // gauge, W drawn
	AgentPowerLimitWatts        = GPUAgentPrefix + "power_limit_watts"         // gauge, W enforced limit
	AgentPowerDefaultLimitWatts = GPUAgentPrefix + "power_default_limit_watts" // gauge, W the board's default limit (NVML nvmlDeviceGetPowerManagementDefaultLimit)
	AgentEnergyJoulesTotal      = GPUAgentPrefix + "energy_joules_total"       // counter, J since driver load
	AgentTemperatureCelsius     = GPUAgentPrefix + "temperature_celsius"       // gauge, °C of the GPU die
	AgentSMClockHertz           = GPUAgentPrefix + "sm_clock_hertz"            // gauge, Hz current SM clock
	AgentSMClockMaxHertz        = GPUAgentPrefix + "sm_clock_max_hertz"        // gauge, Hz maximum SM clock
	AgentMemClockHertz          = GPUAgentPrefix + "mem_clock_hertz"           // gauge, Hz current memory clock
	AgentMemClockMaxHertz       = GPUAgentPrefix + "mem_clock_max_hertz"       // gauge, Hz maximum memory clock
	AgentThrottleReason         = GPUAgentPrefix + "throttle_reason"           // gauge {reason}: 1 while the reason is active, else 0
	AgentSMActiveRatio          = GPUAgentPrefix + "sm_active_ratio"           // gauge, 0..1 (profiling metric)
	AgentSMOccupancyRatio       = GPUAgentPrefix + "sm_occupancy_ratio"        // gauge, 0..1 (profiling metric)
	AgentDRAMActiveRatio        = GPUAgentPrefix + "dram_active_ratio"         // gauge, 0..1 (profiling metric)
	AgentTensorActiveRatio      = GPUAgentPrefix + "tensor_active_ratio"       // gauge, 0..1 (profiling metric)
)

// AgentMetricNames lists every name in the Agent* constants, in declaration order, then the
// error counters of gpuErrorEntries.
var AgentMetricNames = []string{AgentUtilizationRatio, AgentMemoryUtilizationRatio, AgentFBUsedBytes,
	AgentFBTotalBytes, AgentFBReservedBytes, AgentPowerWatts, AgentPowerLimitWatts, AgentPowerDefaultLimitWatts,
	AgentEnergyJoulesTotal, AgentTemperatureCelsius, AgentSMClockHertz, AgentSMClockMaxHertz,
	AgentMemClockHertz, AgentMemClockMaxHertz, AgentThrottleReason, AgentSMActiveRatio,
	AgentSMOccupancyRatio, AgentDRAMActiveRatio, AgentTensorActiveRatio, AgentECCErrorsTotal, AgentXIDErrorsTotal,
	AgentECCAggregateTotal, AgentPCIeReplaysTotal}

// AgentThrottleReasonLabel is the label of AgentThrottleReason naming the reason.
const AgentThrottleReasonLabel = "reason"
