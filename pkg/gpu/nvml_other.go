//go:build !(linux && cgo)

package gpu

// OpenNVML returns ErrNVMLUnavailable: go-nvml needs cgo, and NVML ships for
// linux only. Build the agent on linux with CGO_ENABLED=1.
func OpenNVML() (Source, error) {
	return nil, ErrNVMLUnavailable
}
