package collect

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// promptSamples returns the stored values of the good target's prompt-token
// counter over the last hour, in time order.
func promptSamples(t *testing.T, c *Collector, job string) []float64 {
	t.Helper()
	v, err := c.Querier().Query(context.Background(), `vllm:prompt_tokens_total{job="`+job+`"}[1h]`, time.Now())
	require.NoError(t, err)
	m := v.(model.Matrix)
	if len(m) == 0 {
		return nil
	}
	require.Len(t, m, 1)
	out := make([]float64, len(m[0].Values))
	for i, p := range m[0].Values {
		out[i] = float64(p.Value)
	}
	return out
}

func counterSettings(t *testing.T, urls map[string]string) map[string]any {
	var targets []map[string]any
	for _, name := range []string{"a", "b", "c"} {
		if u, ok := urls[name]; ok {
			targets = append(targets, map[string]any{"name": name, "url": u + "/metrics"})
		}
	}
	return map[string]any{"scrapeInterval": "100ms", "scrapeTimeout": "100ms", "retention": "1h", "targets": targets}
}

func TestStoreSurvivesRestart(t *testing.T) {
	verifyNoLeaks(t)
	good, _ := counterServer(t, "x")
	cfg := loadSettings(t, counterSettings(t, map[string]string{"a": good.URL}), map[string]string{"a.bearerToken": "x"})
	dir := filepath.Join(t.TempDir(), "ds-uid")

	c, err := Start(cfg, Options{Dir: dir, UID: "ds-uid"})
	require.NoError(t, err)
	require.Eventually(t, func() bool { return len(promptSamples(t, c, "a")) >= 5 }, 10*time.Second, 10*time.Millisecond)
	stored := promptSamples(t, c, "a")
	require.NoError(t, c.Close())

	c, err = Start(cfg, Options{Dir: dir, UID: "ds-uid"})
	require.NoError(t, err)
	defer func() { require.NoError(t, c.Close()) }()
	// Every sample stored before Close was replayed from the WAL.
	vals := promptSamples(t, c, "a")
	require.GreaterOrEqual(t, len(vals), len(stored))
	assert.Equal(t, stored, vals[:len(stored)])
	assert.Empty(t, c.Notice())
}

func TestStoreSettingsSaveKeepsHistory(t *testing.T) {
	verifyNoLeaks(t)
	srvA, scrapesA := counterServer(t, "x")
	srvB, scrapesB := counterServer(t, "x")
	secure := map[string]string{"a.bearerToken": "x", "b.bearerToken": "x"}
	dir := filepath.Join(t.TempDir(), "ds")
	old, err := Start(loadSettings(t, counterSettings(t, map[string]string{"a": srvA.URL, "b": srvB.URL}), secure), Options{Dir: dir, UID: "ds"})
	require.NoError(t, err)
	require.Eventually(t, func() bool { return scrapesA.Load() >= 4 && scrapesB.Load() >= 4 }, 10*time.Second, 10*time.Millisecond)

	prevA := promptSamples(t, old, "a")
	// Grafana builds the new instance (target b removed) before disposing the old one.
	cur, err := Start(loadSettings(t, counterSettings(t, map[string]string{"a": srvA.URL}), secure), Options{Dir: dir, UID: "ds"})
	require.NoError(t, err)
	defer func() { require.NoError(t, cur.Close()) }()
	// The old instance stopped scraping at once: b is no longer fetched.
	bAtSwitch := scrapesB.Load()
	aAtSwitch := scrapesA.Load()
	require.Eventually(t, func() bool { return scrapesA.Load() >= aAtSwitch+4 }, 10*time.Second, 10*time.Millisecond)
	assert.Equal(t, bAtSwitch, scrapesB.Load(), "the old instance kept scraping b")
	// The old instance still answers until it is disposed, from the same store.
	assert.Equal(t, promptSamples(t, old, "b"), promptSamples(t, cur, "b"))
	require.NoError(t, old.Close())

	// a's history is continuous across the switch: everything stored
	// before it, then the new instance's scrapes of the same counter.
	vals := promptSamples(t, cur, "a")
	require.Greater(t, len(vals), len(prevA)+2)
	assert.Equal(t, prevA, vals[:len(prevA)])
	for k := 1; k < len(vals); k++ {
		assert.Greater(t, vals[k], vals[k-1], "sample %d", k)
	}
	// b's history stays queryable (it ages out with the retention).
	assert.NotEmpty(t, promptSamples(t, cur, "b"))
	// The removed target is not in the new instance's status.
	require.Len(t, cur.Status(), 1)
}

// TestHelperProcess is not a test: run as a child process by the tests
// below (INFERSCOPE_COLLECT_CHILD set), it starts a collector on the
// directory and target given in the environment, prints "ready" and waits
// to be killed.
func TestHelperProcess(t *testing.T) {
	if os.Getenv("INFERSCOPE_COLLECT_CHILD") == "" {
		t.Skip("helper process for the lock and kill -9 tests")
	}
	js := counterSettings(t, map[string]string{"a": os.Getenv("INFERSCOPE_CHILD_URL")})
	// A timeout as long as the interval: a busy machine does not make
	// scrapes fail, so the scrape before the last request is stored.
	js["scrapeInterval"], js["scrapeTimeout"] = "300ms", "300ms"
	cfg := loadSettings(t, js, map[string]string{"a.bearerToken": "x"})
	c, err := Start(cfg, Options{Dir: os.Getenv("INFERSCOPE_CHILD_DIR"), LockWait: time.Millisecond})
	if err != nil {
		fmt.Println("error:", err)
		os.Exit(2)
	}
	_ = c
	fmt.Println("ready")
	time.Sleep(time.Hour)
}

// startChild runs TestHelperProcess in a child process on dir and target url
// and waits for its "ready" line.
func startChild(t *testing.T, dir, url string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestHelperProcess$", "-test.v=false")
	cmd.Env = append(os.Environ(), "INFERSCOPE_COLLECT_CHILD=1", "INFERSCOPE_CHILD_DIR="+dir, "INFERSCOPE_CHILD_URL="+url)
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	line, err := bufio.NewReader(out).ReadString('\n')
	require.NoError(t, err)
	require.Equal(t, "ready\n", line)
	return cmd
}

func TestStoreKill9KeepsCommittedScrapes(t *testing.T) {
	good, scrapes := counterServer(t, "x")
	dir := filepath.Join(t.TempDir(), "ds")
	child := startChild(t, dir, good.URL)
	require.Eventually(t, func() bool { return scrapes.Load() >= 8 }, 20*time.Second, 5*time.Millisecond)
	require.NoError(t, child.Process.Signal(syscall.SIGKILL))
	_ = child.Wait()
	served := scrapes.Load()

	verifyNoLeaks(t)
	// The lock died with the process; the WAL replays every committed scrape:
	// at most the one in flight at the kill is lost.
	cfg := loadSettings(t, counterSettings(t, map[string]string{"a": good.URL}), map[string]string{"a.bearerToken": "x"})
	c, err := Start(cfg, Options{Dir: dir, LockWait: time.Second})
	require.NoError(t, err)
	defer func() { require.NoError(t, c.Close()) }()
	// Request k served the value 7·k. The scrape of request served-1 was
	// complete before the kill (request served had begun), so it is stored.
	vals := promptSamples(t, c, "a")
	require.NotEmpty(t, vals)
	assert.GreaterOrEqual(t, vals[len(vals)-1], float64(promptIncrement*(served-1)), "the last complete scrape before the kill is lost")
	for k := 1; k < len(vals); k++ {
		assert.Greater(t, vals[k], vals[k-1])
	}
	assert.Empty(t, c.Notice(), "a killed process's directory is not corrupted")
}

func TestStoreLockedByAnotherProcess(t *testing.T) {
	good, _ := counterServer(t, "x")
	dir := filepath.Join(t.TempDir(), "ds")
	child := startChild(t, dir, good.URL)

	cfg := loadSettings(t, counterSettings(t, map[string]string{"a": good.URL}), map[string]string{"a.bearerToken": "x"})
	start := time.Now()
	_, err := Start(cfg, Options{Dir: dir, LockWait: 300 * time.Millisecond})
	require.Error(t, err)
	assert.GreaterOrEqual(t, time.Since(start), 300*time.Millisecond, "the second process waits before it gives up")
	assert.Contains(t, err.Error(), dir+" is in use by process "+strconv.Itoa(child.Process.Pid))
	assert.Contains(t, err.Error(), "must not share one storagePath")

	// Waiting works: the directory is taken as soon as the holder exits.
	go func() {
		time.Sleep(300 * time.Millisecond)
		_ = child.Process.Signal(syscall.SIGTERM)
	}()
	verifyNoLeaks(t)
	c, err := Start(cfg, Options{Dir: dir, LockWait: 20 * time.Second})
	require.NoError(t, err)
	require.NoError(t, c.Close())
}

// TestStoreFullDisk runs the store on a 4 MiB tmpfs (root only: mount),
// fills the disk: scrapes fail with a notice in the status, queries keep
// answering, and scrapes resume when space is freed.
func TestStoreFullDisk(t *testing.T) {
	mnt := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", mnt).CombinedOutput(); err != nil {
		t.Skipf("cannot mount a small tmpfs to fill (needs root): %v %s", err, strings.TrimSpace(string(out)))
	}
	t.Cleanup(func() { _ = exec.Command("umount", "-l", mnt).Run() })
	verifyNoLeaks(t)
	good, scrapes := counterServer(t, "x")
	cfg := loadSettings(t, counterSettings(t, map[string]string{"a": good.URL}), map[string]string{"a.bearerToken": "x"})
	dir := filepath.Join(mnt, "ds")
	c, err := Start(cfg, Options{Dir: dir})
	require.NoError(t, err)
	defer func() { require.NoError(t, c.Close()) }()
	require.Eventually(t, func() bool { return len(promptSamples(t, c, "a")) >= 3 }, 10*time.Second, 20*time.Millisecond)

	// Fill the disk.
	filler := filepath.Join(mnt, "filler")
	f, err := os.Create(filler)
	require.NoError(t, err)
	buf := make([]byte, 64<<10)
	for {
		if _, err := f.Write(buf); err != nil {
			break
		}
	}
	require.NoError(t, f.Close())

	require.Eventually(t, func() bool {
		st := c.Status()
		return !st[0].Up && strings.Contains(st[0].LastError, "could not be stored") && strings.Contains(st[0].LastError, "no space left on device")
	}, 20*time.Second, 20*time.Millisecond, "a scrape that cannot be stored is reported")
	stored := len(promptSamples(t, c, "a"))
	assert.GreaterOrEqual(t, stored, 3, "queries keep working on a full disk")

	require.NoError(t, os.Remove(filler))
	at := scrapes.Load()
	require.Eventually(t, func() bool {
		st := c.Status()
		return scrapes.Load() > at+3 && st[0].Up && st[0].LastError == ""
	}, 20*time.Second, 20*time.Millisecond, "scrapes resume when space is freed")
	assert.Greater(t, len(promptSamples(t, c, "a")), stored)
}

func TestTSDBOptions(t *testing.T) {
	o := tsdbOptions(15*24*time.Hour, 10<<30)
	assert.Equal(t, (15 * 24 * time.Hour).Milliseconds(), o.RetentionDuration)
	assert.Equal(t, int64(10<<30), o.MaxBytes)
	assert.Equal(t, (2 * time.Hour).Milliseconds(), o.MinBlockDuration, "Prometheus's 2 h head blocks")
	assert.Equal(t, (36 * time.Hour).Milliseconds(), o.MaxBlockDuration, "a tenth of the retention")
	assert.GreaterOrEqual(t, o.WALSegmentSize, 0, "the WAL is on")
	o = tsdbOptions(90*24*time.Hour, 0)
	assert.Equal(t, (216 * time.Hour).Milliseconds(), o.MaxBlockDuration)
	o = tsdbOptions(time.Hour, 0)
	assert.Equal(t, (20 * time.Minute).Milliseconds(), o.MinBlockDuration)
	assert.Equal(t, (20 * time.Minute).Milliseconds(), o.MaxBlockDuration)
}

func TestDataSourceDir(t *testing.T) {
	assert.Equal(t, "/var/lib/grafana/inferscope/P1809F7CD0C75ACF3", DataSourceDir("/var/lib/grafana/inferscope", "P1809F7CD0C75ACF3"))
	assert.Equal(t, "/d/a_b_c", DataSourceDir("/d", "a/b.c"), "no path separators or dots from a UID")
	assert.Equal(t, "/d/default", DataSourceDir("/d", ""))
	assert.Equal(t, "/d/default", DataSourceDir("/d", ".."))

	t.Setenv("GF_PATHS_DATA", "/var/lib/grafana")
	assert.Equal(t, "/var/lib/grafana/inferscope", DefaultStoragePath())
	t.Setenv("GF_PATHS_DATA", "")
	assert.True(t, filepath.IsAbs(DefaultStoragePath()))
}
