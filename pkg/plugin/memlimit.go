package plugin

import (
	"fmt"
	"math"
	"runtime/debug"
	"strings"

	"github.com/alecthomas/units"
)

// MemoryLimitEnv names the environment variable that sets the plugin process's soft memory
// limit (runtime/debug.SetMemoryLimit): a size such as "768MiB" or "1GiB" (base-2 units,
// alecthomas/units), or "off". Grafana 12.4 and later forwards host variables to a plugin only
// when grafana.ini lists it in [plugins] forward_host_env_vars. GOMEMLIMIT, when the process
// has it, wins (the Go runtime applied it at start).
const MemoryLimitEnv = "INFERSCOPE_MEMORY_LIMIT"

// DefaultMemoryLimit (512 MiB) is the soft memory limit when neither MemoryLimitEnv nor
// GOMEMLIMIT is set: above it the Go collector runs more often instead of letting the heap
// grow to twice the live data (GOGC=100). Sized from the 1,000-target run of
// docs/performance.md (live heap about 330 MB: RSS 737 → 486 MiB at no measurable CPU cost;
// 400 MiB cost 0.23 cores of GC). A live heap near or above the limit (roughly 1,400 embedded
// targets and more) makes the collector run continuously, up to the runtime's cap of about half
// the CPU: raise the limit with MemoryLimitEnv there.
const DefaultMemoryLimit = 512 << 20

// memoryLimit returns the soft memory limit in bytes (math.MaxInt64: none) and where it came
// from, from the process environment read through getenv. Bad values name the variable.
func memoryLimit(getenv func(string) string) (int64, string, error) {
	if getenv("GOMEMLIMIT") != "" {
		return debug.SetMemoryLimit(-1), "GOMEMLIMIT", nil
	}
	v := strings.TrimSpace(getenv(MemoryLimitEnv))
	switch {
	case v == "":
		return DefaultMemoryLimit, "default", nil
	case strings.EqualFold(v, "off"):
		return math.MaxInt64, MemoryLimitEnv, nil
	}
	b, err := units.ParseBase2Bytes(v)
	if err != nil || b <= 0 {
		return DefaultMemoryLimit, "default", fmt.Errorf("%s=%q is not a size such as 768MiB or 1GiB, or off; using %d MiB", MemoryLimitEnv, v, DefaultMemoryLimit>>20)
	}
	return int64(b), MemoryLimitEnv, nil
}
