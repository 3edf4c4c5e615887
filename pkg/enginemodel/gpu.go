package enginemodel

import "math"

// stepLoad is what the GPU does while one engine step runs (ratios 0..1).
type stepLoad struct {
	util   float64 // share of time with a kernel running (NVML utilization.gpu)
	sm     float64 // SM activity (GPM SM_UTIL)
	dram   float64 // DRAM bandwidth over its theoretical maximum (GPM DRAM_BW_UTIL)
	tensor float64 // tensor-pipe activity
}

// stalledLoad is a hung engine: a kernel (e.g. a collective waiting forever)
// keeps utilization.gpu at 100 % while SMs and DRAM do almost nothing — the
// pattern reported for NCCL hangs.
var stalledLoad = stepLoad{util: 1, sm: 0.02, dram: 0.01}

// Throttle reason bits, NVML nvmlClocksEventReason* values.
const (
	ThrottleGPUIdle    = 0x1
	ThrottlePowerCap   = 0x4
	ThrottleSWThermal  = 0x20
	ThrottleHWThermal  = 0x40
	gpuIdleClockFactor = 345.0 / 1980.0 // H100 idle SM clock over its maximum
)

// gpuModel integrates the GPU's state over simulated time. The step-time
// model is a roofline: compute time = 2·params·tokens / (PeakFLOPS·MFU·clock
// factor) (prefill is compute-bound), memory time = (weights + KV bytes of
// every scheduled context token) / (bandwidth·efficiency) (decode is
// bandwidth-bound); a step lasts StepOverhead + max(compute, memory) + 10 % of
// the shorter one (imperfect overlap).
type gpuModel struct {
	spec GPUSpec

	// EWMA (τ = 1 s, the longest NVML sample window) of the load.
	util, sm, dram, tensor float64
	power                  float64 // watts, 1 s average
	temp                   float64 // °C
	energy                 float64 // joules since start
	thermalFactor          float64 // software thermal clock factor 0..1
	powerFactor            float64 // power-cap clock factor 0..1
	busy                   bool    // a kernel ran in the last advance
}

func newGPUModel(spec GPUSpec) *gpuModel {
	g := &gpuModel{spec: spec, thermalFactor: 1, powerFactor: 1}
	g.temp = spec.AmbientC + spec.ThermalResCW*spec.IdlePowerW
	g.power = spec.IdlePowerW
	return g
}

// clockFactor is the current SM clock over its maximum while busy.
func (g *gpuModel) clockFactor() float64 {
	f := math.Min(g.thermalFactor, g.powerFactor)
	if g.temp >= g.spec.HWSlowdownC {
		f *= 0.5
	}
	return f
}

// stepTime returns the duration of a step with tokens batched tokens reading
// ctx context tokens of KV cache, and the GPU load during it.
func (g *gpuModel) stepTime(cfg *Config, tokens, ctx int) (float64, stepLoad) {
	f := g.clockFactor()
	compute := 2 * cfg.Model.Params * float64(tokens) / (g.spec.PeakFLOPS * g.spec.MFU * f)
	mem := (cfg.Model.Params*cfg.Model.BytesPerParam + cfg.Model.KVBytesPerToken*float64(ctx)) /
		(g.spec.MemBandwidth * g.spec.BWEfficiency)
	kernel := math.Max(compute, mem) + 0.1*math.Min(compute, mem)
	d := cfg.StepOverhead + kernel
	busyShare := (kernel + 0.5*cfg.StepOverhead) / d
	l := stepLoad{
		util:   busyShare,
		sm:     math.Min(1, (compute+0.45*math.Max(0, mem-compute))/d),
		dram:   math.Min(1, g.spec.BWEfficiency*(mem+0.25*math.Max(0, compute-mem))/d),
		tensor: math.Min(1, 0.9*compute/d),
	}
	return d, l
}

// demand is the power a load would draw at clock factor f.
func (g *gpuModel) demand(l stepLoad, f float64) float64 {
	act := 0.3*l.util + 0.45*l.sm + 0.25*l.dram
	return g.spec.IdlePowerW + (g.spec.MaxPowerW-g.spec.IdlePowerW)*act*f*f
}

// advance integrates dt seconds under load l.
func (g *gpuModel) advance(dt float64, l stepLoad) {
	if dt <= 0 {
		return
	}
	a := 1 - math.Exp(-dt) // τ = 1 s
	g.util += (l.util - g.util) * a
	g.sm += (l.sm - g.sm) * a
	g.dram += (l.dram - g.dram) * a
	g.tensor += (l.tensor - g.tensor) * a
	g.busy = l.util > 0
	// power cap: the clock that keeps demand under the limit
	full := g.demand(l, 1)
	if full > g.spec.PowerLimitW {
		g.powerFactor = math.Sqrt((g.spec.PowerLimitW - g.spec.IdlePowerW) / (full - g.spec.IdlePowerW))
	} else {
		g.powerFactor = 1
	}
	f := g.clockFactor()
	if !g.busy {
		f = gpuIdleClockFactor
	}
	p := g.demand(l, f)
	g.power += (p - g.power) * a
	g.energy += p * dt
	ss := g.spec.AmbientC + g.spec.ThermalResCW*p
	g.temp += (ss - g.temp) * (1 - math.Exp(-dt/g.spec.ThermalTauS))
	// software thermal controller: lower the clock while above the slowdown
	// threshold, recover slowly below it
	if g.temp > g.spec.SlowdownTempC {
		g.thermalFactor = math.Max(0.4, g.thermalFactor-0.02*(g.temp-g.spec.SlowdownTempC)*dt)
	} else {
		g.thermalFactor = math.Min(1, g.thermalFactor+0.05*dt)
	}
}

// smClockHz is the SM clock now.
func (g *gpuModel) smClockHz() float64 {
	if !g.busy && g.util < 0.05 {
		return g.spec.SMClockMaxHz * gpuIdleClockFactor
	}
	return g.spec.SMClockMaxHz * g.clockFactor()
}

// throttleBits is the active clock-event reason mask.
func (g *gpuModel) throttleBits() uint64 {
	var b uint64
	if !g.busy && g.util < 0.05 {
		b |= ThrottleGPUIdle
	}
	if g.powerFactor < 1 {
		b |= ThrottlePowerCap
	}
	if g.thermalFactor < 1 {
		b |= ThrottleSWThermal
	}
	if g.temp >= g.spec.HWSlowdownC {
		b |= ThrottleHWThermal
	}
	return b
}

// GPUReadings are what an NVML agent would read of the simulated GPU now: utilisation, SM,
// DRAM and tensor activity (0..1, 1 s averages), power (W), energy since start (J),
// temperature (°C), SM clock (Hz) and the NVML clock-event reason bits.
type GPUReadings struct {
	Util, SM, DRAM, Tensor float64
	PowerW, EnergyJ, TempC float64
	SMClockHz              float64
	Throttle               uint64
}

// readings returns the GPU's readings now.
func (g *gpuModel) readings() GPUReadings {
	return GPUReadings{Util: g.util, SM: g.sm, DRAM: g.dram, Tensor: g.tensor, PowerW: g.power, EnergyJ: g.energy,
		TempC: g.temp, SMClockHz: g.smClockHz(), Throttle: g.throttleBits()}
}
