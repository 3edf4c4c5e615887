package settings

import (
	"fmt"
	"path/filepath"
	"time"

	"github.com/alecthomas/units"
)

// Storage limits of the embedded TSDB.
const (
	// MaxRetention is the longest accepted retention: 90 days.
	MaxRetention = 90 * 24 * time.Hour
	// DefaultRetentionSize is the default disk budget of one data source's
	// store in bytes (10 GiB): blocks beyond it are deleted oldest first,
	// as Prometheus's --storage.tsdb.retention.size does.
	DefaultRetentionSize int64 = 10 << 30
	// MinRetentionSize is the smallest accepted disk budget (64 MiB): the
	// write-ahead log alone needs a few segments of 128 MiB at most, and a
	// smaller budget would delete every block as soon as it is written.
	MinRetentionSize int64 = 64 << 20
)

// Storage is where and for how long the embedded store keeps samples. It is
// embedded in Settings, so its fields are top-level jsonData keys.
type Storage struct {
	// StoragePath is the directory under which each data source keeps its
	// TSDB, in a subdirectory named after the data source's UID. Empty means
	// the default chosen by the collector (Grafana's data directory).
	StoragePath string `json:"storagePath,omitempty"`
	// RetentionSizeRaw is the disk budget in Prometheus notation ("10GB",
	// "512MB"; units are powers of 1024 as in Prometheus); "0" disables it.
	RetentionSizeRaw string `json:"retentionSize,omitempty"`
	// RetentionSize is the parsed disk budget in bytes; 0 means no budget.
	RetentionSize int64 `json:"-"`
}

// storageDefaults parses the disk budget and applies its default.
func (s *Settings) storageDefaults() error {
	switch s.RetentionSizeRaw {
	case "":
		s.RetentionSize = DefaultRetentionSize
	case "0":
		s.RetentionSize = 0
	default:
		b, err := units.ParseBase2Bytes(s.RetentionSizeRaw)
		if err != nil || b <= 0 {
			return fmt.Errorf("retentionSize: %q is not a size such as 10GB or 512MB", s.RetentionSizeRaw)
		}
		s.RetentionSize = int64(b)
	}
	return nil
}

// validateStorage checks the retention bounds and the storage path.
func (s *Settings) validateStorage() error {
	if s.Retention > MaxRetention {
		return fmt.Errorf("retention: %s is longer than the maximum of 90d; use remote mode (a Prometheus server) for longer history", s.RetentionRaw)
	}
	if s.RetentionSize != 0 && s.RetentionSize < MinRetentionSize {
		return fmt.Errorf("retentionSize: %q is below the minimum of 64MB", s.RetentionSizeRaw)
	}
	if s.StoragePath != "" && !filepath.IsAbs(s.StoragePath) {
		return fmt.Errorf("storagePath: %q must be an absolute directory path such as /var/lib/grafana/inferscope", s.StoragePath)
	}
	return nil
}
