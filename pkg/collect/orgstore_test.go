package collect

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestOrgDataSourceDir(t *testing.T) {
	assert.Equal(t, "/d/1-P1809F7CD", OrgDataSourceDir("/d", 1, "P1809F7CD"))
	assert.Equal(t, "/d/2-P1809F7CD", OrgDataSourceDir("/d", 2, "P1809F7CD"), "one UID in another organisation")
	assert.Equal(t, "/d/1-a_b_c", OrgDataSourceDir("/d", 0, "a/b.c"), "unknown organisation: Grafana's default, 1")
	assert.Equal(t, "/d/3-default", OrgDataSourceDir("/d", 3, ".."))
}

// TestStoreMovedFromUIDKey: a store of an older version, keyed by UID alone,
// moves to the organisation's key with its history (every sample stored
// before, replayed from the moved WAL), its lock file goes, and a second
// organisation's data source of the same UID starts empty beside it.
func TestStoreMovedFromUIDKey(t *testing.T) {
	verifyNoLeaks(t)
	good, _ := counterServer(t, "x")
	cfg := loadSettings(t, counterSettings(t, map[string]string{"a": good.URL}), map[string]string{"a.bearerToken": "x"})
	root := t.TempDir()
	legacy := DataSourceDir(root, "uid1")

	c, err := Start(cfg, Options{Dir: legacy, UID: "uid1"})
	require.NoError(t, err)
	require.Eventually(t, func() bool { return len(promptSamples(t, c, "a")) >= 5 }, 10*time.Second, 10*time.Millisecond)
	stored := promptSamples(t, c, "a")
	require.NoError(t, c.Close())

	dir1 := OrgDataSourceDir(root, 1, "uid1")
	c1, err := Start(cfg, Options{Dir: dir1, LegacyDir: legacy, UID: "uid1"})
	require.NoError(t, err)
	defer func() { require.NoError(t, c1.Close()) }()
	vals := promptSamples(t, c1, "a")
	require.GreaterOrEqual(t, len(vals), len(stored))
	assert.Equal(t, stored, vals[:len(stored)], "the history moved with the store")
	assert.NoDirExists(t, legacy)
	assert.NoFileExists(t, lockPath(legacy))
	assert.DirExists(t, filepath.Join(dir1, "wal"))

	// Org 2's data source of the same UID: its own, empty store.
	dir2 := OrgDataSourceDir(root, 2, "uid1")
	c2, err := Start(cfg, Options{Dir: dir2, LegacyDir: legacy, UID: "uid1"})
	require.NoError(t, err)
	defer func() { require.NoError(t, c2.Close()) }()
	v2 := promptSamples(t, c2, "a")
	assert.Less(t, len(v2), len(stored), "org 2 reads none of org 1's history")
	assert.NotEqual(t, c1.Dir(), c2.Dir())
}
