package gpu

import "github.com/inferscope/inferscope-llm-datasource/pkg/catalog"

// Metric names served by the agent. The first block is the catalogue's list
// (pkg/catalog Agent*), which maps these names to canonical GPU signals.
// Units are SI: ratios 0..1, bytes, watts, joules, celsius, hertz, seconds.
const (
	NameUtilization       = catalog.AgentUtilizationRatio       // NVML utilization.gpu / 100: share of the sample window with ≥1 kernel running
	NameMemoryUtilization = catalog.AgentMemoryUtilizationRatio // NVML utilization.memory / 100: share of the window with device-memory traffic
	NameFBUsed            = catalog.AgentFBUsedBytes            // framebuffer used (v2: excludes driver-reserved memory)
	NameFBTotal           = catalog.AgentFBTotalBytes           // framebuffer total
	NameFBReserved        = catalog.AgentFBReservedBytes        // framebuffer reserved by the driver (GetMemoryInfo_v2 only)
	NamePower             = catalog.AgentPowerWatts             // board power draw (NVML mW / 1000)
	NamePowerLimit        = catalog.AgentPowerLimitWatts        // enforced power limit (NVML mW / 1000)
	NamePowerDefaultLimit = catalog.AgentPowerDefaultLimitWatts // the board's default power limit (NVML nvmlDeviceGetPowerManagementDefaultLimit, mW / 1000)
	NameEnergy            = catalog.AgentEnergyJoulesTotal      // energy since driver load (NVML mJ / 1000), counter
	NameTemperature       = catalog.AgentTemperatureCelsius     // GPU die temperature
	NameSMClock           = catalog.AgentSMClockHertz           // current SM clock (NVML MHz × 1e6)
	NameSMClockMax        = catalog.AgentSMClockMaxHertz        // maximum SM clock
	NameMemClock          = catalog.AgentMemClockHertz          // current memory clock
	NameMemClockMax       = catalog.AgentMemClockMaxHertz       // maximum memory clock
	NameThrottleReason    = catalog.AgentThrottleReason         // {reason}: 1 while the clock-event reason is active, else 0
	NameSMActive          = catalog.AgentSMActiveRatio          // GPM SM_UTIL / 100 (Hopper+)
	NameSMOccupancy       = catalog.AgentSMOccupancyRatio       // GPM SM_OCCUPANCY / 100 (Hopper+)
	NameDRAMActive        = catalog.AgentDRAMActiveRatio        // GPM DRAM_BW_UTIL / 100 (Hopper+)
	NameTensorActive      = catalog.AgentTensorActiveRatio      // GPM ANY_TENSOR_UTIL / 100 (Hopper+)
)

// Metric names the catalogue does not list yet (same style).
const (
	NameViolationSeconds  = "inferscope_gpu_violation_seconds_total"             // {reason}: cumulative time clocks were held below target by a policy (NVML ns / 1e9), counter
	NamePCIeTx            = "inferscope_gpu_pcie_tx_bytes_per_second"            // PCIe transmit throughput over NVML's 20 ms window (KiB/s × 1024)
	NamePCIeRx            = "inferscope_gpu_pcie_rx_bytes_per_second"            // PCIe receive throughput over NVML's 20 ms window (KiB/s × 1024)
	NameECCErrors         = "inferscope_gpu_ecc_errors_total"                    // {type="corrected"|"uncorrected"}: volatile ECC error count since driver load, counter
	NameRemappedRows      = "inferscope_gpu_remapped_rows_total"                 // {type="correctable"|"uncorrectable"}: rows remapped, counter
	NameRemapPending      = "inferscope_gpu_remap_pending"                       // 1 when a row remap waits for a GPU reset
	NameRemapFailed       = "inferscope_gpu_remap_failed"                        // 1 when a row remap has failed
	NameXIDErrors         = "inferscope_gpu_xid_errors_total"                    // {xid}: XID critical-error events seen since the agent started, counter
	NameECCAggregate      = catalog.AgentECCAggregateTotal                       // {type="corrected"|"uncorrected"}: ECC error count over the GPU's life (NVML AGGREGATE_ECC), counter
	NamePCIeReplays       = catalog.AgentPCIeReplaysTotal                        // PCIe link-level replays (nvmlDeviceGetPcieReplayCounter), counter
	NameProcessUsedMemory = "inferscope_gpu_process_used_memory_bytes"           // {pid}: device memory used by a compute process
	NameLastSample        = "inferscope_gpu_agent_last_sample_timestamp_seconds" // Unix time of the sample the cache holds
	NameSampleDuration    = "inferscope_gpu_agent_sample_duration_seconds"       // wall time the last sample took
	NameSampleErrors      = "inferscope_gpu_agent_sample_errors_total"           // samples that failed as a whole, counter
	NameReadErrors        = "inferscope_gpu_agent_read_errors_total"             // single NVML reads that failed (other than not supported), counter
)

// Label names. Every GPU series has gpu, uuid, name and hostname; MIG devices add
// gpu_instance_id and compute_instance_id. Agent series have hostname only.
const (
	LabelGPU               = "gpu"
	LabelUUID              = "uuid"
	LabelName              = "name"
	LabelHostname          = "hostname"
	LabelGPUInstanceID     = "gpu_instance_id"
	LabelComputeInstanceID = "compute_instance_id"
	LabelReason            = catalog.AgentThrottleReasonLabel
	LabelType              = "type"
	LabelXID               = "xid"
	LabelPID               = "pid"
)

// Family identifies one per-GPU metric family in a Reading.
type Family int

// Per-GPU families, in exposition order. Each maps to one Name* constant.
const (
	Utilization Family = iota
	MemoryUtilization
	FBUsed
	FBTotal
	FBReserved
	Power
	PowerLimit
	PowerDefaultLimit
	Energy
	Temperature
	SMClock
	SMClockMax
	MemClock
	MemClockMax
	ThrottleReason
	SMActive
	SMOccupancy
	DRAMActive
	TensorActive
	ViolationSeconds
	PCIeTx
	PCIeRx
	ECCErrors
	RemappedRows
	RemapPending
	RemapFailed
	XIDErrors
	ProcessUsedMemory
	ECCAggregate
	PCIeReplays
	numFamilies
)

type familySpec struct {
	name    string
	help    string
	counter bool
	label   string // extra label carried in Reading.Label, "" for none
}

var families = [numFamilies]familySpec{
	Utilization:       {NameUtilization, "Share of the last NVML sample window during which one or more kernels ran (0..1).", false, ""},
	MemoryUtilization: {NameMemoryUtilization, "Share of the last NVML sample window during which device memory was read or written (0..1).", false, ""},
	FBUsed:            {NameFBUsed, "Framebuffer memory used, in bytes.", false, ""},
	FBTotal:           {NameFBTotal, "Framebuffer memory total, in bytes.", false, ""},
	FBReserved:        {NameFBReserved, "Framebuffer memory reserved by the driver, in bytes.", false, ""},
	Power:             {NamePower, "Power draw, in watts.", false, ""},
	PowerLimit:        {NamePowerLimit, "Enforced power limit, in watts.", false, ""},
	PowerDefaultLimit: {NamePowerDefaultLimit, "Default power limit of the board (the limit after a reset), in watts.", false, ""},
	Energy:            {NameEnergy, "Energy consumed since the driver was loaded, in joules.", true, ""},
	Temperature:       {NameTemperature, "GPU temperature, in degrees celsius.", false, ""},
	SMClock:           {NameSMClock, "Current SM clock, in hertz.", false, ""},
	SMClockMax:        {NameSMClockMax, "Maximum SM clock, in hertz.", false, ""},
	MemClock:          {NameMemClock, "Current memory clock, in hertz.", false, ""},
	MemClockMax:       {NameMemClockMax, "Maximum memory clock, in hertz.", false, ""},
	ThrottleReason:    {NameThrottleReason, "1 while the clock-event (throttle) reason is active, else 0; only reasons the GPU supports.", false, LabelReason},
	SMActive:          {NameSMActive, "Share of SMs busy between two GPM samples (NVML GPM SM_UTIL, 0..1).", false, ""},
	SMOccupancy:       {NameSMOccupancy, "Resident warps over the theoretical maximum between two GPM samples (NVML GPM SM_OCCUPANCY, 0..1).", false, ""},
	DRAMActive:        {NameDRAMActive, "DRAM bandwidth used over the theoretical maximum between two GPM samples (NVML GPM DRAM_BW_UTIL, 0..1).", false, ""},
	TensorActive:      {NameTensorActive, "Share of time any tensor pipe was active between two GPM samples (NVML GPM ANY_TENSOR_UTIL, 0..1).", false, ""},
	ViolationSeconds:  {NameViolationSeconds, "Cumulative time clocks were held below target by a performance policy, in seconds.", true, LabelReason},
	PCIeTx:            {NamePCIeTx, "PCIe transmit throughput over NVML's 20 ms window, in bytes per second.", false, ""},
	PCIeRx:            {NamePCIeRx, "PCIe receive throughput over NVML's 20 ms window, in bytes per second.", false, ""},
	ECCErrors:         {NameECCErrors, "Volatile ECC errors since the driver was loaded.", true, LabelType},
	RemappedRows:      {NameRemappedRows, "Memory rows remapped.", true, LabelType},
	RemapPending:      {NameRemapPending, "1 when a row remap is pending a GPU reset, else 0.", false, ""},
	RemapFailed:       {NameRemapFailed, "1 when a row remap has failed, else 0.", false, ""},
	XIDErrors:         {NameXIDErrors, "XID critical-error events seen since the agent started.", true, LabelXID},
	ProcessUsedMemory: {NameProcessUsedMemory, "Device memory used by a compute process, in bytes.", false, LabelPID},
	ECCAggregate:      {NameECCAggregate, "ECC errors over the GPU's life (persistent across driver reloads).", true, LabelType},
	PCIeReplays:       {NamePCIeReplays, "PCIe link-level replays (retries) since the driver was loaded.", true, ""},
}

// Name returns the metric name of f, or "" for an unknown family.
func (f Family) Name() string {
	if f < 0 || f >= numFamilies {
		return ""
	}
	return families[f].name
}

// ThrottleReasons maps NVML clock-event reason bits (nvmlClocksEventReason*) to
// the reason label values of inferscope_gpu_throttle_reason. The names follow
// dcgm-exporter's clock_event label where it has one (its
// DCGM_EXP_CLOCK_EVENTS_COUNT), plus board_limit and reliability.
var ThrottleReasons = []struct {
	Bit    uint64
	Reason string
}{
	{0x1, "gpu_idle"},
	{0x2, "clocks_setting"},
	{0x4, "power_cap"},
	{0x8, "hw_slowdown"},
	{0x10, "sync_boost"},
	{0x20, "sw_thermal"},
	{0x40, "hw_thermal"},
	{0x80, "hw_power_brake"},
	{0x100, "display_clocks"},
	{0x200, "board_limit"},
	{0x400, "reliability"},
}

// ViolationPolicies are the reason label values of
// inferscope_gpu_violation_seconds_total, indexed like NVML's
// nvmlPerfPolicyType (PERF_POLICY_POWER = 0 … PERF_POLICY_RELIABILITY = 5).
var ViolationPolicies = []string{"power", "thermal", "sync_boost", "board_limit", "low_utilization", "reliability"}
