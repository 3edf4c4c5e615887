// Package asgrafana drives the Inferscope plugin binary exactly as Grafana
// does: it builds ./pkg into gpx_inferscope_<os>_<arch>, launches it with
// hashicorp/go-plugin using the SDK's handshake (protocol 2, gRPC) and talks
// to it through the pluginv2 Data, Diagnostics, Resource and Stream clients.
// Targets are loopback servers replaying real vLLM /metrics pages whose
// counters advance by known rates, so every expected value is computed here,
// independently of the plugin.
package asgrafana

import (
	"flag"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
)

// binPath is the plugin binary built once by TestMain.
var binPath string

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	flag.Parse()
	dir, err := os.MkdirTemp("", "inferscope-asgrafana-")
	if err != nil {
		fmt.Fprintln(os.Stderr, "asgrafana: temp dir:", err)
		return 1
	}
	defer os.RemoveAll(dir)
	root, err := moduleRoot()
	if err != nil {
		fmt.Fprintln(os.Stderr, "asgrafana:", err)
		return 1
	}
	if err := statSources(root); err != nil {
		fmt.Fprintln(os.Stderr, "asgrafana:", err)
		return 1
	}
	binPath = filepath.Join(dir, fmt.Sprintf("gpx_inferscope_%s_%s", runtime.GOOS, runtime.GOARCH))
	start := time.Now()
	cmd := exec.Command("go", "build", "-o", binPath, "./pkg")
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "asgrafana: building the plugin binary failed: %v\n%s", err, out)
		return 1
	}
	if testing.Verbose() {
		fmt.Fprintf(os.Stderr, "asgrafana: built %s in %s\n", binPath, time.Since(start).Round(time.Millisecond))
	}
	return m.Run()
}

// moduleRoot returns the directory holding go.mod (asked of the go tool, so
// the test runs from any working directory inside the module).
func moduleRoot() (string, error) {
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("go env GOMOD: %w", err)
	}
	gomod := strings.TrimSpace(string(out))
	if gomod == "" || gomod == os.DevNull {
		return "", fmt.Errorf("not inside a Go module (go env GOMOD is %q)", gomod)
	}
	return filepath.Dir(gomod), nil
}

// statSources stats go.mod, go.sum and every file under pkg/. The test binary
// does not import the plugin (it builds and launches it), so these stats are
// what tells `go test`'s result cache that a cached pass is stale after the
// plugin's sources change.
func statSources(root string) error {
	for _, f := range []string{"go.mod", "go.sum"} {
		if _, err := os.Stat(filepath.Join(root, f)); err != nil {
			return err
		}
	}
	return filepath.WalkDir(filepath.Join(root, "pkg"), func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		_, err = os.Stat(path)
		return err
	})
}
