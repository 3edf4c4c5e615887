//go:build linux && cgo

package gpu

import (
	"errors"
	"fmt"
	"math"
	"sort"
	"strconv"
	"sync"
	"time"

	"github.com/NVIDIA/go-nvml/pkg/nvml"
)

// OpenNVML loads libnvidia-ml, initialises it and returns a Source over every GPU
// it lists. Without the library it returns an error wrapping
// ERROR_LIBRARY_NOT_FOUND and calls nothing else.
func OpenNVML() (Source, error) {
	return NewNVMLSource(nvml.New())
}

// Symbols the reader calls. A driver that lacks one would kill the process on
// the call (an unresolved symbol is not a Go panic), so each is looked up once
// after Init and every call checks the result first. For versioned functions
// go-nvml itself falls back to the oldest version, so the base name is enough.
const (
	symGetCount              = "nvmlDeviceGetCount"
	symGetHandleByIndex      = "nvmlDeviceGetHandleByIndex"
	symGetUUID               = "nvmlDeviceGetUUID"
	symGetName               = "nvmlDeviceGetName"
	symUtilization           = "nvmlDeviceGetUtilizationRates"
	symMemoryInfo            = "nvmlDeviceGetMemoryInfo"
	symMemoryInfoV2          = "nvmlDeviceGetMemoryInfo_v2"
	symPowerUsage            = "nvmlDeviceGetPowerUsage"
	symEnforcedPowerLimit    = "nvmlDeviceGetEnforcedPowerLimit"
	symDefaultPowerLimit     = "nvmlDeviceGetPowerManagementDefaultLimit"
	symTotalEnergy           = "nvmlDeviceGetTotalEnergyConsumption"
	symTemperature           = "nvmlDeviceGetTemperature"
	symClockInfo             = "nvmlDeviceGetClockInfo"
	symMaxClockInfo          = "nvmlDeviceGetMaxClockInfo"
	symEventReasons          = "nvmlDeviceGetCurrentClocksEventReasons"
	symThrottleReasons       = "nvmlDeviceGetCurrentClocksThrottleReasons"
	symSupportedEventReasons = "nvmlDeviceGetSupportedClocksEventReasons"
	symSupportedThrottle     = "nvmlDeviceGetSupportedClocksThrottleReasons"
	symViolationStatus       = "nvmlDeviceGetViolationStatus"
	symPcieThroughput        = "nvmlDeviceGetPcieThroughput"
	symTotalEccErrors        = "nvmlDeviceGetTotalEccErrors"
	symRemappedRows          = "nvmlDeviceGetRemappedRows"
	symPcieReplayCounter     = "nvmlDeviceGetPcieReplayCounter"
	symComputeProcesses      = "nvmlDeviceGetComputeRunningProcesses"
	symMigMode               = "nvmlDeviceGetMigMode"
	symMaxMigDeviceCount     = "nvmlDeviceGetMaxMigDeviceCount"
	symMigDeviceByIndex      = "nvmlDeviceGetMigDeviceHandleByIndex"
	symGpuInstanceID         = "nvmlDeviceGetGpuInstanceId"
	symComputeInstanceID     = "nvmlDeviceGetComputeInstanceId"
	symGpmQuerySupport       = "nvmlGpmQueryDeviceSupport"
	symGpmSampleAlloc        = "nvmlGpmSampleAlloc"
	symGpmSampleFree         = "nvmlGpmSampleFree"
	symGpmSampleGet          = "nvmlGpmSampleGet"
	symGpmMigSampleGet       = "nvmlGpmMigSampleGet"
	symGpmMetricsGet         = "nvmlGpmMetricsGet"
	symEventSetCreate        = "nvmlEventSetCreate"
	symRegisterEvents        = "nvmlDeviceRegisterEvents"
	symEventSetWait          = "nvmlEventSetWait"
	symEventSetFree          = "nvmlEventSetFree"
)

var allSymbols = []string{
	symGetCount, symGetHandleByIndex, symGetUUID, symGetName, symUtilization, symMemoryInfo,
	symMemoryInfoV2, symPowerUsage, symEnforcedPowerLimit, symDefaultPowerLimit, symTotalEnergy, symTemperature,
	symClockInfo, symMaxClockInfo, symEventReasons, symThrottleReasons, symSupportedEventReasons,
	symSupportedThrottle, symViolationStatus, symPcieThroughput, symTotalEccErrors, symRemappedRows,
	symComputeProcesses, symMigMode, symMaxMigDeviceCount, symMigDeviceByIndex, symGpuInstanceID,
	symComputeInstanceID, symGpmQuerySupport, symGpmSampleAlloc, symGpmSampleFree, symGpmSampleGet,
	symGpmMigSampleGet, symGpmMetricsGet, symEventSetCreate, symRegisterEvents, symEventSetWait,
	symEventSetFree, symPcieReplayCounter,
}

// gpmMetrics are the GPM metrics read between consecutive samples, with the
// family each feeds. GPM reports percentages 0..100.
var gpmMetrics = []struct {
	id     nvml.GpmMetricId
	family Family
}{
	{nvml.GPM_METRIC_SM_UTIL, SMActive},
	{nvml.GPM_METRIC_SM_OCCUPANCY, SMOccupancy},
	{nvml.GPM_METRIC_DRAM_BW_UTIL, DRAMActive},
	{nvml.GPM_METRIC_ANY_TENSOR_UTIL, TensorActive},
}

// nvmlValueNotAvailable is NVML_VALUE_NOT_AVAILABLE as an unsigned long long
// (process memory that cannot be read, e.g. under WDDM).
const nvmlValueNotAvailable = math.MaxUint64

type nvmlSource struct {
	lib     nvml.Interface
	has     map[string]bool
	devices []*nvmlDevice

	events     nvml.EventSet // nil when no device accepted XID events
	eventsMu   sync.Mutex    // serialises WaitXID with Close
	closed     bool
	gpmMetrics bool // GPM symbols are all present
}

type nvmlDevice struct {
	handle nvml.Device
	id     Identity
	gpm    *gpmState         // whole-GPU GPM; nil when the GPU has no GPM
	migGPM map[int]*gpmState // per GPU instance id, when MIG is on
}

// gpmState holds two GPM sample buffers; a rate needs the previous and the
// current one.
type gpmState struct {
	prev, cur nvml.GpmSample
	havePrev  bool
}

// NewNVMLSource initialises lib and prepares a Source over its GPUs: it looks up
// every symbol it may call, reads each GPU's index, UUID and name, checks GPM
// support and registers XID events. When Init fails it returns the error and
// calls nothing else on lib (not even Shutdown). lib is usually nvml.New(); tests
// pass go-nvml's mock.
func NewNVMLSource(lib nvml.Interface) (Source, error) {
	if lib == nil {
		return nil, errors.New("nvml: nil library")
	}
	if ret := lib.Init(); ret != nvml.SUCCESS {
		return nil, fmt.Errorf("nvml init: %w", nvmlError(ret))
	}
	s := &nvmlSource{lib: lib, has: map[string]bool{}}
	ext := lib.Extensions()
	for _, sym := range allSymbols {
		s.has[sym] = ext != nil && ext.LookupSymbol(sym) == nil
	}
	if !s.has[symGetCount] || !s.has[symGetHandleByIndex] {
		_ = lib.Shutdown() // the missing symbols are the error reported
		return nil, errors.New("nvml: the installed library lacks nvmlDeviceGetCount or nvmlDeviceGetHandleByIndex")
	}
	n, ret := lib.DeviceGetCount()
	if ret != nvml.SUCCESS {
		_ = lib.Shutdown() // the device count's error is the one reported
		return nil, fmt.Errorf("nvml device count: %w", nvmlError(ret))
	}
	s.gpmMetrics = s.has[symGpmQuerySupport] && s.has[symGpmSampleAlloc] && s.has[symGpmSampleFree] &&
		s.has[symGpmSampleGet] && s.has[symGpmMetricsGet]
	for i := 0; i < n; i++ {
		h, ret := lib.DeviceGetHandleByIndex(i)
		if ret != nvml.SUCCESS {
			_ = s.closeAll() // the handle's error is the one reported
			return nil, fmt.Errorf("nvml device %d handle: %w", i, nvmlError(ret))
		}
		d := &nvmlDevice{handle: h, id: Identity{Index: i}}
		if s.has[symGetUUID] {
			if u, ret := h.GetUUID(); ret == nvml.SUCCESS {
				d.id.UUID = u
			}
		}
		if s.has[symGetName] {
			if name, ret := h.GetName(); ret == nvml.SUCCESS {
				d.id.Name = name
			}
		}
		if s.gpmMetrics {
			if sup, ret := lib.GpmQueryDeviceSupport(h); ret == nvml.SUCCESS && sup.IsSupportedDevice != 0 {
				d.gpm = &gpmState{}
			}
		}
		s.devices = append(s.devices, d)
	}
	s.registerXID()
	return s, nil
}

func (s *nvmlSource) registerXID() {
	if !s.has[symEventSetCreate] || !s.has[symRegisterEvents] || !s.has[symEventSetWait] || !s.has[symEventSetFree] {
		return
	}
	set, ret := s.lib.EventSetCreate()
	if ret != nvml.SUCCESS {
		return
	}
	registered := 0
	for _, d := range s.devices {
		if d.handle.RegisterEvents(nvml.EventTypeXidCriticalError, set) == nvml.SUCCESS {
			registered++
		}
	}
	if registered == 0 {
		_ = s.lib.EventSetFree(set) // an unused set: nothing to report a failed free to
		return
	}
	s.events = set
}

// MissingSymbols lists the NVML symbols the installed library lacks, sorted;
// the agent logs them at start so a device check shows what a driver omits.
func (s *nvmlSource) MissingSymbols() []string {
	var out []string
	for _, sym := range allSymbols {
		if !s.has[sym] {
			out = append(out, sym)
		}
	}
	sort.Strings(out)
	return out
}

// nvmlError wraps an NVML return code as an error.
func nvmlError(ret nvml.Return) error {
	return fmt.Errorf("%s (NVML return %d)", ret.Error(), int32(ret))
}

// reader collects the readings of one device and counts failed reads.
type reader struct {
	values []Reading
	errors int
	lost   bool
}

// ok says whether ret is SUCCESS. Not supported (and its kin) silently omits the
// series; other codes count as read errors; a lost GPU stops further reads.
func (r *reader) ok(ret nvml.Return) bool {
	switch ret {
	case nvml.SUCCESS:
		return true
	case nvml.ERROR_NOT_SUPPORTED, nvml.ERROR_FUNCTION_NOT_FOUND, nvml.ERROR_NOT_FOUND, nvml.ERROR_NOT_READY:
		return false
	case nvml.ERROR_GPU_IS_LOST:
		r.lost = true
		r.errors++
		return false
	default:
		r.errors++
		return false
	}
}

func (r *reader) add(f Family, label string, v float64) {
	r.values = append(r.values, Reading{Family: f, Label: label, Value: v})
}

// Sample reads every GPU once. It never fails as a whole: a lost GPU is reported
// through DeviceSample.Err and the other GPUs are still read.
func (s *nvmlSource) Sample() (Snapshot, error) {
	start := time.Now()
	snap := Snapshot{Time: start, Devices: make([]DeviceSample, 0, len(s.devices))}
	for _, d := range s.devices {
		r := reader{values: make([]Reading, 0, 48)}
		migs := s.readDevice(d, &r)
		snap.ReadErrors += r.errors
		if r.lost {
			snap.Devices = append(snap.Devices, DeviceSample{Identity: d.id, Err: errors.New("GPU is lost (ERROR_GPU_IS_LOST)")})
			continue
		}
		snap.Devices = append(snap.Devices, DeviceSample{Identity: d.id, Values: r.values})
		snap.Devices = append(snap.Devices, migs...)
	}
	snap.Duration = time.Since(start)
	return snap, nil
}

// readDevice reads one physical GPU into r and returns its MIG devices' samples.
// Unit conversions: percent / 100, mW / 1000, mJ / 1000, MHz × 1e6, KiB/s × 1024,
// ns / 1e9 (units from nvml.h).
func (s *nvmlSource) readDevice(d *nvmlDevice, r *reader) []DeviceSample {
	h := d.handle
	if s.has[symUtilization] {
		if u, ret := h.GetUtilizationRates(); r.ok(ret) {
			r.add(Utilization, "", float64(u.Gpu)/100)
			r.add(MemoryUtilization, "", float64(u.Memory)/100)
		}
	}
	if r.lost {
		return nil
	}
	s.readMemory(h, r)
	powers := []struct {
		sym string
		get func() (uint32, nvml.Return) // mW
		f   Family
	}{
		{symPowerUsage, h.GetPowerUsage, Power},
		{symEnforcedPowerLimit, h.GetEnforcedPowerLimit, PowerLimit},
		{symDefaultPowerLimit, h.GetPowerManagementDefaultLimit, PowerDefaultLimit},
	}
	for _, p := range powers {
		if s.has[p.sym] {
			if mw, ret := p.get(); r.ok(ret) {
				r.add(p.f, "", float64(mw)/1000)
			}
		}
	}
	if s.has[symTotalEnergy] {
		if mj, ret := h.GetTotalEnergyConsumption(); r.ok(ret) {
			r.add(Energy, "", float64(mj)/1000)
		}
	}
	if s.has[symTemperature] {
		if c, ret := h.GetTemperature(nvml.TEMPERATURE_GPU); r.ok(ret) {
			r.add(Temperature, "", float64(c))
		}
	}
	if r.lost {
		return nil
	}
	clocks := []struct {
		sym string
		get func(nvml.ClockType) (uint32, nvml.Return)
		typ nvml.ClockType
		f   Family
	}{
		{symClockInfo, h.GetClockInfo, nvml.CLOCK_SM, SMClock},
		{symMaxClockInfo, h.GetMaxClockInfo, nvml.CLOCK_SM, SMClockMax},
		{symClockInfo, h.GetClockInfo, nvml.CLOCK_MEM, MemClock},
		{symMaxClockInfo, h.GetMaxClockInfo, nvml.CLOCK_MEM, MemClockMax},
	}
	for _, c := range clocks {
		if s.has[c.sym] {
			if mhz, ret := c.get(c.typ); r.ok(ret) {
				r.add(c.f, "", float64(mhz)*1e6)
			}
		}
	}
	s.readThrottle(h, r)
	if r.lost {
		return nil
	}
	if s.has[symViolationStatus] {
		for i, reason := range ViolationPolicies {
			if v, ret := h.GetViolationStatus(nvml.PerfPolicyType(i)); r.ok(ret) {
				r.add(ViolationSeconds, reason, float64(v.ViolationTime)/1e9)
			}
		}
	}
	if s.has[symPcieThroughput] {
		if kib, ret := h.GetPcieThroughput(nvml.PCIE_UTIL_TX_BYTES); r.ok(ret) {
			r.add(PCIeTx, "", float64(kib)*1024)
		}
		if kib, ret := h.GetPcieThroughput(nvml.PCIE_UTIL_RX_BYTES); r.ok(ret) {
			r.add(PCIeRx, "", float64(kib)*1024)
		}
	}
	if s.has[symTotalEccErrors] {
		if n, ret := h.GetTotalEccErrors(nvml.MEMORY_ERROR_TYPE_CORRECTED, nvml.VOLATILE_ECC); r.ok(ret) {
			r.add(ECCErrors, "corrected", float64(n))
		}
		if n, ret := h.GetTotalEccErrors(nvml.MEMORY_ERROR_TYPE_UNCORRECTED, nvml.VOLATILE_ECC); r.ok(ret) {
			r.add(ECCErrors, "uncorrected", float64(n))
		}
		if n, ret := h.GetTotalEccErrors(nvml.MEMORY_ERROR_TYPE_CORRECTED, nvml.AGGREGATE_ECC); r.ok(ret) {
			r.add(ECCAggregate, "corrected", float64(n))
		}
		if n, ret := h.GetTotalEccErrors(nvml.MEMORY_ERROR_TYPE_UNCORRECTED, nvml.AGGREGATE_ECC); r.ok(ret) {
			r.add(ECCAggregate, "uncorrected", float64(n))
		}
	}
	if s.has[symPcieReplayCounter] {
		if n, ret := h.GetPcieReplayCounter(); r.ok(ret) {
			r.add(PCIeReplays, "", float64(n))
		}
	}
	if s.has[symRemappedRows] {
		if corr, unc, pending, failed, ret := h.GetRemappedRows(); r.ok(ret) {
			r.add(RemappedRows, "correctable", float64(corr))
			r.add(RemappedRows, "uncorrectable", float64(unc))
			r.add(RemapPending, "", b2f(pending))
			r.add(RemapFailed, "", b2f(failed))
		}
	}
	if r.lost {
		return nil
	}
	if d.gpm != nil {
		s.readGPM(d.gpm, r, func(sample nvml.GpmSample) nvml.Return { return s.lib.GpmSampleGet(h, sample) })
	}
	migs := s.readMIG(d, r)
	if migs == nil {
		s.readProcesses(h, r)
	}
	return migs
}

func (s *nvmlSource) readMemory(h nvml.Device, r *reader) {
	if s.has[symMemoryInfoV2] {
		if m, ret := h.GetMemoryInfo_v2(); r.ok(ret) {
			r.add(FBUsed, "", float64(m.Used))
			r.add(FBTotal, "", float64(m.Total))
			r.add(FBReserved, "", float64(m.Reserved))
			return
		}
	}
	if r.lost || !s.has[symMemoryInfo] {
		return
	}
	// v1 Used includes the driver-reserved memory; there is no reserved figure.
	if m, ret := h.GetMemoryInfo(); r.ok(ret) {
		r.add(FBUsed, "", float64(m.Used))
		r.add(FBTotal, "", float64(m.Total))
	}
}

func (s *nvmlSource) readThrottle(h nvml.Device, r *reader) {
	var current uint64
	var ret nvml.Return
	switch {
	case s.has[symEventReasons]:
		current, ret = h.GetCurrentClocksEventReasons()
	case s.has[symThrottleReasons]:
		current, ret = h.GetCurrentClocksThrottleReasons()
	default:
		return
	}
	if !r.ok(ret) {
		return
	}
	supported := uint64(nvml.ClocksEventReasonAll)
	sret := nvml.ERROR_FUNCTION_NOT_FOUND
	switch {
	case s.has[symSupportedEventReasons]:
		supported, sret = h.GetSupportedClocksEventReasons()
	case s.has[symSupportedThrottle]:
		supported, sret = h.GetSupportedClocksThrottleReasons()
	}
	if sret != nvml.SUCCESS {
		// Unknown support: report every reason (an unsupported one reads 0).
		supported = uint64(nvml.ClocksEventReasonAll)
	}
	for _, tr := range ThrottleReasons {
		if supported&tr.Bit != 0 {
			r.add(ThrottleReason, tr.Reason, b2f(current&tr.Bit != 0))
		}
	}
}

// readGPM takes a GPM sample into st and, when a previous one exists, adds the
// GPM ratios over the interval between them (NVML GPM needs two samples).
func (s *nvmlSource) readGPM(st *gpmState, r *reader, get func(nvml.GpmSample) nvml.Return) {
	if st.cur == nil {
		var ret nvml.Return
		if st.prev, ret = s.lib.GpmSampleAlloc(); !r.ok(ret) {
			st.prev = nil
			return
		}
		if st.cur, ret = s.lib.GpmSampleAlloc(); !r.ok(ret) {
			_ = s.lib.GpmSampleFree(st.prev) // GPM is given up for this device either way
			st.prev, st.cur = nil, nil
			return
		}
	}
	if !r.ok(get(st.cur)) {
		st.havePrev = false
		return
	}
	if st.havePrev {
		n := len(gpmMetrics)
		if n > len(nvml.GpmMetricsGetType{}.Metrics) || n > math.MaxUint32 {
			return // more metrics than one NVML request holds: never, the list is fixed
		}
		q := &nvml.GpmMetricsGetType{
			Version:    nvml.GPM_METRICS_GET_VERSION,
			NumMetrics: uint32(n),
			Sample1:    st.prev,
			Sample2:    st.cur,
		}
		for i, m := range gpmMetrics {
			if m.id < 0 {
				continue // NVML's metric ids are positive
			}
			q.Metrics[i].MetricId = uint32(m.id)
		}
		if r.ok(s.lib.GpmMetricsGet(q)) {
			for i, m := range gpmMetrics {
				got := q.Metrics[i]
				if m.id < 0 || got.MetricId != uint32(m.id) || got.NvmlReturn != uint32(nvml.SUCCESS) {
					continue
				}
				if math.IsNaN(got.Value) || math.IsInf(got.Value, 0) {
					continue
				}
				r.add(m.family, "", got.Value/100)
			}
		}
	}
	st.prev, st.cur = st.cur, st.prev
	st.havePrev = true
}

// readMIG returns one sample per MIG device of d when MIG is enabled, nil
// otherwise. MIG devices are enumerated on every sample, so a new MIG layout
// shows up without a restart.
func (s *nvmlSource) readMIG(d *nvmlDevice, r *reader) []DeviceSample {
	if !s.has[symMigMode] || !s.has[symMaxMigDeviceCount] || !s.has[symMigDeviceByIndex] ||
		!s.has[symGpuInstanceID] || !s.has[symComputeInstanceID] {
		return nil
	}
	mode, _, ret := d.handle.GetMigMode()
	if !r.ok(ret) || mode != nvml.DEVICE_MIG_ENABLE {
		return nil
	}
	n, ret := d.handle.GetMaxMigDeviceCount()
	if !r.ok(ret) {
		return nil
	}
	out := []DeviceSample{}
	seenGI := map[int]bool{}
	for i := 0; i < n; i++ {
		m, ret := d.handle.GetMigDeviceHandleByIndex(i)
		if ret == nvml.ERROR_NOT_FOUND || ret == nvml.ERROR_INVALID_ARGUMENT {
			continue // empty slot
		}
		if !r.ok(ret) {
			continue
		}
		mr := reader{}
		gi, ret1 := m.GetGpuInstanceId()
		ci, ret2 := m.GetComputeInstanceId()
		if !mr.ok(ret1) || !mr.ok(ret2) {
			r.errors += mr.errors
			continue
		}
		id := Identity{Index: d.id.Index, Name: d.id.Name, MIG: true, GPUInstanceID: gi, ComputeInstanceID: ci}
		if s.has[symGetUUID] {
			if u, ret := m.GetUUID(); mr.ok(ret) {
				id.UUID = u
			}
		}
		if s.has[symGetName] {
			if name, ret := m.GetName(); mr.ok(ret) {
				id.Name = name
			}
		}
		s.readMemory(m, &mr)
		if d.gpm != nil && s.has[symGpmMigSampleGet] && !seenGI[gi] {
			// GPM on MIG is per GPU instance: read it once, on the first compute
			// instance of each GPU instance.
			seenGI[gi] = true
			if d.migGPM == nil {
				d.migGPM = map[int]*gpmState{}
			}
			st := d.migGPM[gi]
			if st == nil {
				st = &gpmState{}
				d.migGPM[gi] = st
			}
			s.readGPM(st, &mr, func(sample nvml.GpmSample) nvml.Return { return s.lib.GpmMigSampleGet(d.handle, gi, sample) })
		}
		s.readProcesses(m, &mr)
		r.errors += mr.errors
		out = append(out, DeviceSample{Identity: id, Values: mr.values})
	}
	return out
}

// readProcesses adds the memory each compute process uses, summed per pid.
func (s *nvmlSource) readProcesses(h nvml.Device, r *reader) {
	if !s.has[symComputeProcesses] {
		return
	}
	procs, ret := h.GetComputeRunningProcesses()
	if !r.ok(ret) {
		return
	}
	byPID := map[uint32]float64{}
	for _, p := range procs {
		if p.UsedGpuMemory == nvmlValueNotAvailable {
			continue
		}
		byPID[p.Pid] += float64(p.UsedGpuMemory)
	}
	pids := make([]uint32, 0, len(byPID))
	for pid := range byPID {
		pids = append(pids, pid)
	}
	sort.Slice(pids, func(i, j int) bool { return pids[i] < pids[j] })
	for _, pid := range pids {
		r.add(ProcessUsedMemory, strconv.FormatUint(uint64(pid), 10), byPID[pid])
	}
}

// WaitXID waits up to timeout for XID critical-error events.
func (s *nvmlSource) WaitXID(timeout time.Duration) ([]XIDEvent, error) {
	s.eventsMu.Lock()
	defer s.eventsMu.Unlock()
	if s.closed {
		return nil, errors.New("nvml source closed")
	}
	if s.events == nil {
		return nil, ErrNoEvents
	}
	ms := timeout.Milliseconds()
	if ms < 1 {
		ms = 1
	}
	if ms > math.MaxUint32 {
		ms = math.MaxUint32
	}
	data, ret := s.lib.EventSetWait(s.events, uint32(ms))
	switch ret {
	case nvml.SUCCESS:
	case nvml.ERROR_TIMEOUT:
		return nil, nil
	default:
		return nil, fmt.Errorf("nvml event wait: %w", nvmlError(ret))
	}
	if data.EventType&nvml.EventTypeXidCriticalError == 0 {
		return nil, nil
	}
	id := Identity{Index: -1, UUID: "unknown"}
	for _, d := range s.devices {
		if sameDevice(d.handle, data.Device) {
			id = d.id
			break
		}
	}
	return []XIDEvent{{Identity: id, XID: data.EventData}}, nil
}

// sameDevice compares two handles without panicking on uncomparable types.
func sameDevice(a, b nvml.Device) (same bool) {
	defer func() {
		if recover() != nil {
			same = false
		}
	}()
	return a == b
}

// Close frees GPM samples and the event set, then shuts NVML down.
func (s *nvmlSource) Close() error {
	s.eventsMu.Lock()
	defer s.eventsMu.Unlock()
	if s.closed {
		return nil
	}
	s.closed = true
	return s.closeAll()
}

func (s *nvmlSource) closeAll() error {
	for _, d := range s.devices {
		s.freeGPM(d.gpm)
		for _, st := range d.migGPM {
			s.freeGPM(st)
		}
	}
	if s.events != nil {
		_ = s.lib.EventSetFree(s.events) // closing: Shutdown's result is the one reported
		s.events = nil
	}
	if ret := s.lib.Shutdown(); ret != nvml.SUCCESS {
		return fmt.Errorf("nvml shutdown: %w", nvmlError(ret))
	}
	return nil
}

func (s *nvmlSource) freeGPM(st *gpmState) {
	if st == nil {
		return
	}
	for _, smp := range []nvml.GpmSample{st.prev, st.cur} {
		if smp != nil {
			_ = s.lib.GpmSampleFree(smp) // a sample given up: nothing to report a failed free to
		}
	}
	st.prev, st.cur = nil, nil
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
