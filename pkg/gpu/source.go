package gpu

import (
	"errors"
	"time"
)

// ErrNVMLUnavailable is returned by OpenNVML on builds without linux and cgo.
var ErrNVMLUnavailable = errors.New("NVML needs linux and cgo: this agent was built without them")

// Source reads GPUs. It is the plugin-owned interface over NVML: the Agent calls
// Sample from its sampling goroutine and WaitXID from its event goroutine (the two
// may run concurrently), and nothing else calls a Source.
type Source interface {
	// Sample reads every GPU once. A value the GPU does not support is absent
	// from Values; a failed read of one value counts in ReadErrors. An error means
	// the whole sample failed (for example, the device count could not be read).
	Sample() (Snapshot, error)
	// WaitXID blocks up to timeout for XID critical-error events and returns the
	// ones seen (none on timeout). It returns ErrNoEvents when the Source cannot
	// deliver events at all; the Agent then stops waiting.
	WaitXID(timeout time.Duration) ([]XIDEvent, error)
	// Close releases NVML. It is called once, after both goroutines stopped.
	Close() error
}

// ErrNoEvents is returned by Source.WaitXID when no GPU supports XID events.
var ErrNoEvents = errors.New("no GPU supports XID events")

// Identity labels one GPU or one MIG device.
type Identity struct {
	Index int    // NVML index of the physical GPU (label gpu)
	UUID  string // "GPU-…" or, for a MIG device, "MIG-…"
	Name  string // product name, e.g. "NVIDIA H200"
	// MIG is true for a MIG device; GPUInstanceID and ComputeInstanceID are then
	// its NVML instance ids.
	MIG               bool
	GPUInstanceID     int
	ComputeInstanceID int
}

// Reading is one value of one series in SI units (see NameUtilization and the other Name* constants).
type Reading struct {
	Family Family
	Label  string // value of the family's extra label (reason, type, pid); "" when it has none
	Value  float64
}

// DeviceSample is everything read from one GPU or MIG device in one sample.
type DeviceSample struct {
	Identity Identity
	Values   []Reading
	// Err is set when the device could not be read at all (for example a GPU
	// that fell off the bus); Values is then empty and /healthz reports it.
	Err error
}

// Snapshot is one sample of every GPU, physical GPUs in index order, each
// followed by its MIG devices.
type Snapshot struct {
	Time       time.Time     // when the sample started
	Duration   time.Duration // how long it took
	Devices    []DeviceSample
	ReadErrors int // reads that failed with an error other than not-supported
}

// XIDEvent is one XID critical error reported by NVML.
type XIDEvent struct {
	Identity Identity // the GPU (or MIG device) the event names
	XID      uint64   // the XID number, e.g. 79 (GPU fallen off the bus)
}
