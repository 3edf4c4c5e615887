package collect

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

// ignoreFailedOpen: tsdb.Open leaves its WAL goroutine running when it
// fails on a corrupted block (Prometheus v0.316): one per failed open.
func ignoreFailedOpen(t *testing.T) {
	opt := goleak.IgnoreCurrent()
	t.Cleanup(func() {
		goleak.VerifyNone(t, opt, goleak.IgnoreTopFunction("github.com/prometheus/prometheus/tsdb/wlog.(*WL).run"))
	})
}

// storeWithHistory scrapes a counter into dir until at least n samples are
// stored, closes the collector and returns the samples.
func storeWithHistory(t *testing.T, dir string, n int) []float64 {
	t.Helper()
	good, _ := counterServer(t, "x")
	cfg := loadSettings(t, counterSettings(t, map[string]string{"a": good.URL}), map[string]string{"a.bearerToken": "x"})
	c, err := Start(cfg, Options{Dir: dir, UID: filepath.Base(dir)})
	require.NoError(t, err)
	require.Eventually(t, func() bool { return len(promptSamples(t, c, "a")) >= n }, 10*time.Second, 10*time.Millisecond)
	stored := promptSamples(t, c, "a")
	require.NoError(t, c.Close())
	return stored
}

// garbageBlock writes a block whose index is not an index.
func garbageBlock(t *testing.T, dir, ulid string) {
	block := filepath.Join(dir, ulid)
	require.NoError(t, os.MkdirAll(filepath.Join(block, "chunks"), 0o755))
	meta := `{"ulid":"` + ulid + `","minTime":0,"maxTime":7200000,"stats":{"numSamples":720,"numSeries":3},"compaction":{"level":1,"sources":["` + ulid + `"]},"version":1}`
	require.NoError(t, os.WriteFile(filepath.Join(block, "meta.json"), []byte(meta), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(block, "index"), []byte("not an index"), 0o644))
}

func startOn(t *testing.T, dir string) *Collector {
	t.Helper()
	good, _ := counterServer(t, "x")
	cfg := loadSettings(t, counterSettings(t, map[string]string{"a": good.URL}), map[string]string{"a.bearerToken": "x"})
	c, err := Start(cfg, Options{Dir: dir, UID: filepath.Base(dir)})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, c.Close()) })
	return c
}

// TestStoreCorruptedBlockQuarantined: one unreadable block no longer sends
// the whole directory aside: the block goes to <dir>.quarantine/, the rest
// of the history (here the WAL's samples) opens, the notice says which range
// is missing, and the health is not OK while the block is kept.
func TestStoreCorruptedBlockQuarantined(t *testing.T) {
	ignoreFailedOpen(t)
	dir := filepath.Join(t.TempDir(), "ds")
	stored := storeWithHistory(t, dir, 5)
	const ulid = "01BKGV7JBM69T2G1BGBGM6KWKA"
	garbageBlock(t, dir, ulid)

	c := startOn(t, dir)
	vals := promptSamples(t, c, "a")
	require.GreaterOrEqual(t, len(vals), len(stored))
	assert.Equal(t, stored, vals[:len(stored)], "the history besides the bad block is kept")
	notice, missing := c.StoreHealth()
	assert.True(t, missing)
	assert.Contains(t, notice, "Block "+ulid+" could not be read (invalid magic number")
	assert.Contains(t, notice, "720 samples of 3 series from 1970-01-01T00:00:00Z to 1970-01-01T02:00:00Z are missing")
	assert.FileExists(t, filepath.Join(dir+".quarantine", ulid, "meta.json"))
	assert.NoDirExists(t, filepath.Join(dir, ulid))
	assert.Empty(t, mustGlob(t, dir+".corrupted-*"), "nothing else set aside")
}

// TestStoreWALRepairSaid: a scrambled region of the write-ahead log is
// repaired by the TSDB (the records from the corruption on are dropped);
// the loss is said with its size, the health is not OK, and the TSDB's
// corruption counter reaches the plugin's metrics.
func TestStoreWALRepairSaid(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "walds")
	stored := storeWithHistory(t, dir, 30)
	segs := mustGlob(t, filepath.Join(dir, "wal", "0*"))
	require.NotEmpty(t, segs)
	seg := segs[len(segs)-1]
	b, err := os.ReadFile(seg)
	require.NoError(t, err)
	for k := len(b) / 2; k < len(b)/2+64 && k < len(b); k++ {
		b[k] ^= 0xff
	}
	require.NoError(t, os.WriteFile(seg, b, 0o644))

	c := startOn(t, dir)
	vals := promptSamples(t, c, "a")
	assert.Less(t, len(vals), len(stored), "the repair dropped samples")
	notice, missing := c.StoreHealth()
	assert.True(t, missing)
	assert.Contains(t, notice, "The write-ahead log was corrupted")
	assert.NotContains(t, notice, "(0 bytes of", "the dropped bytes are counted")
	got, err := testutil.GatherAndCount(prometheus.DefaultGatherer, "inferscope_tsdb_wal_corruptions_total")
	require.NoError(t, err)
	assert.GreaterOrEqual(t, got, 1)
	page, err := prometheus.DefaultGatherer.Gather()
	require.NoError(t, err)
	var v float64
	for _, mf := range page {
		if mf.GetName() == "inferscope_tsdb_wal_corruptions_total" {
			for _, m := range mf.GetMetric() {
				if m.GetLabel()[0].GetValue() == "walds" {
					v = m.GetCounter().GetValue()
				}
			}
		}
	}
	assert.Equal(t, 1.0, v, "inferscope_tsdb_wal_corruptions_total{datasource=\"walds\"}")
}

// TestStoreUnopenableDirectorySetAside: a directory the TSDB cannot open
// at all (its wal is a file) is set aside whole and a fresh store starts;
// the set-aside directory counts against retentionSize and is removed once
// older than the retention.
func TestStoreUnopenableDirectorySetAside(t *testing.T) {
	ignoreFailedOpen(t)
	dir := filepath.Join(t.TempDir(), "ds")
	require.NoError(t, os.MkdirAll(dir, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "wal"), []byte(strings.Repeat("x", 3<<20)), 0o644))
	c := startOn(t, dir)
	notice, missing := c.StoreHealth()
	assert.True(t, missing)
	assert.Contains(t, notice, "set aside as "+dir+".corrupted-")
	assert.Contains(t, notice, "counted in retentionSize")
	aside := mustGlob(t, dir+".corrupted-*")
	require.Len(t, aside, 1)
	assert.Equal(t, int64(10<<20-3<<20), c.store.budget(10<<20), "retentionSize less the 3 MiB set aside")
	require.Eventually(t, func() bool { return len(promptSamples(t, c, "a")) >= 2 }, 10*time.Second, 20*time.Millisecond)

	old := time.Now().Add(-2 * time.Hour) // retention is 1h
	require.NoError(t, os.Chtimes(aside[0], old, old))
	_, _ = c.StoreHealth()
	assert.NoDirExists(t, aside[0], "removed after the retention")
	notice, _ = c.StoreHealth()
	assert.NotContains(t, notice, "counted in retentionSize")
}

func mustGlob(t *testing.T, pattern string) []string {
	t.Helper()
	m, err := filepath.Glob(pattern)
	require.NoError(t, err)
	return m
}
