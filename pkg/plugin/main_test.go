package plugin

import (
	"fmt"
	"os"
	"testing"
)

// TestMain points the default storage path (collect.DefaultStoragePath reads
// GF_PATHS_DATA) at a directory of this test run, so an instance created
// without storagePath never stores into, or reads history from, the user's
// cache directory or another run; and gives capacity queries a long wait.
func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "inferscope-plugin-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "plugin tests: temp dir:", err)
		os.Exit(1)
	}
	if err := os.Setenv("GF_PATHS_DATA", dir); err != nil {
		fmt.Fprintln(os.Stderr, "plugin tests: GF_PATHS_DATA:", err)
		os.Exit(1)
	}
	// The capacity tests compare whole answers: a loaded machine must not turn them into the
	// partial answer a query gives past its wait (TestCapacityAnswersWhatIsReadyAtItsWait
	// sets a short one itself).
	if os.Getenv("INFERSCOPE_CAPACITY_WAIT") == "" {
		_ = os.Setenv("INFERSCOPE_CAPACITY_WAIT", "10m")
	}
	code := m.Run()
	_ = os.RemoveAll(dir)
	os.Exit(code)
}
