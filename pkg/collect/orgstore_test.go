package collect

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestOrgDataSourceDir(t *testing.T) {
	cases := []struct {
		name string
		org  int64
		uid  string
		want string
	}{
		{"a Grafana UID", 1, "P1809F7CD", "/d/org.1/P1809F7CD"},
		{"one UID in another organisation", 2, "P1809F7CD", "/d/org.2/P1809F7CD"},
		{"unknown organisation: Grafana's default, 1", 0, "P1809F7CD", "/d/org.1/P1809F7CD"},
		{"a UID that looks like an older key", 2, "1-atk", "/d/org.2/1-atk"},
		// The first 16 bytes of sha256 (echo -n … | sha256sum).
		{"outside Grafana's alphabet: hashed", 1, "a/b.c", "/d/org.1/uid.c06205148f780eb7bafc4158b8c4b4d6"},
		{"dots", 3, "..", "/d/org.3/uid.5ec1f7e700f37c3d0b2981d04855fc34"},
		{"empty", 1, "", "/d/org.1/uid.e3b0c44298fc1c149afbf4c8996fb924"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			assert.Equal(t, c.want, OrgDataSourceDir("/d", c.org, c.uid))
		})
	}
}

func TestLegacyStoreDirs(t *testing.T) {
	cases := []struct {
		name string
		org  int64
		uid  string
		want []string
	}{
		{"organisation 1 takes its previous key, then the UID-only key", 1, "uid1", []string{"/d/1-uid1", "/d/uid1"}},
		{"another organisation never takes a UID-only key", 2, "uid1", []string{"/d/2-uid1"}},
		{"a UID-only key that is also organisation 1's previous key of another UID is nobody's UID-only key", 1, "1-atk", []string{"/d/1-1-atk"}},
		{"organisation 2's UID 1-atk cannot reach organisation 1's 1-atk", 2, "1-atk", []string{"/d/2-1-atk"}},
		{"a UID outside Grafana's alphabet had an ambiguous key: none", 1, "a.b", nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			assert.Equal(t, c.want, LegacyStoreDirs("/d", c.org, c.uid))
		})
	}
}

// TestNoTwoDataSourcesShareAKey: over organisations and UIDs chosen to
// collide in the older layouts (digits and '-' inside UIDs, UIDs that differ
// only in characters the older layout replaced), every store directory and
// every legacy directory offered belongs to exactly one data source.
func TestNoTwoDataSourcesShareAKey(t *testing.T) {
	uids := []string{"atk", "1-atk", "2-atk", "1-1-atk", "12-atk", "a.b", "a_b", "a/b", "", "..", "org.1", "default", "uid.x"}
	dirs := map[string]string{}
	legacy := map[string]string{}
	for org := int64(1); org <= 12; org++ {
		for _, uid := range uids {
			who := fmt.Sprintf("org %d %q", org, uid)
			d := OrgDataSourceDir("/d", org, uid)
			if prev, ok := dirs[d]; ok {
				t.Errorf("%s is the store of both %q and org %d %q", d, prev, org, uid)
			}
			dirs[d] = who
			for _, l := range LegacyStoreDirs("/d", org, uid) {
				if prev, ok := legacy[l]; ok {
					t.Errorf("legacy %s offered to both %q and org %d %q", l, prev, org, uid)
				}
				legacy[l] = who
			}
		}
	}
	for d := range dirs {
		_, clash := legacy[d]
		assert.False(t, clash, "%s is both a store and a legacy directory", d)
	}
}

// startPrevious runs a collector in dir (an older version's layout) until it
// holds a few samples, and returns them.
func startPrevious(t *testing.T, dir string, urls map[string]string) []float64 {
	t.Helper()
	cfg := loadSettings(t, counterSettings(t, urls), map[string]string{"a.bearerToken": "x"})
	c, err := Start(cfg, Options{Dir: dir, UID: "old"})
	require.NoError(t, err)
	require.Eventually(t, func() bool { return len(promptSamples(t, c, "a")) >= 5 }, 20*time.Second, 10*time.Millisecond)
	stored := promptSamples(t, c, "a")
	require.NoError(t, c.Close())
	return stored
}

// startAs starts the collector of data source (org, uid) as the plugin does.
func startAs(t *testing.T, root string, org int64, uid string, urls map[string]string) *Collector {
	t.Helper()
	cfg := loadSettings(t, counterSettings(t, urls), map[string]string{"a.bearerToken": "x"})
	c, err := Start(cfg, Options{Dir: OrgDataSourceDir(root, org, uid), LegacyDirs: LegacyStoreDirs(root, org, uid),
		Owner: Owner{Org: org, UID: uid}, UID: uid})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, c.Close()) })
	return c
}

// TestStoreMovedFromUIDKey: a store of the oldest layout, keyed by UID alone,
// moves to organisation 1's key with its history (every sample stored before,
// replayed from the moved WAL), its lock file goes, and a second
// organisation's data source of the same UID starts empty beside it.
func TestStoreMovedFromUIDKey(t *testing.T) {
	verifyNoLeaks(t)
	good, _ := counterServer(t, "x")
	urls := map[string]string{"a": good.URL}
	root := t.TempDir()
	legacy := DataSourceDir(root, "uid1")
	stored := startPrevious(t, legacy, urls)

	// Org 2 first: the UID-only key is never offered to it.
	c2 := startAs(t, root, 2, "uid1", urls)
	assert.DirExists(t, legacy, "org 2 left the UID-only store alone")
	assert.Less(t, len(promptSamples(t, c2, "a")), len(stored), "org 2 reads none of the older history")

	c1 := startAs(t, root, 1, "uid1", urls)
	vals := promptSamples(t, c1, "a")
	require.GreaterOrEqual(t, len(vals), len(stored))
	assert.Equal(t, stored, vals[:len(stored)], "the history moved with the store")
	assert.NoDirExists(t, legacy)
	assert.NoFileExists(t, lockPath(legacy))
	assert.DirExists(t, filepath.Join(OrgDataSourceDir(root, 1, "uid1"), "wal"))
	assert.NotEqual(t, c1.Dir(), c2.Dir())
}

// TestStoreMovedFromPreviousOrgKey: a store of the previous layout
// (<org>-<uid>) moves to the organisation's directory with its history.
func TestStoreMovedFromPreviousOrgKey(t *testing.T) {
	verifyNoLeaks(t)
	good, _ := counterServer(t, "x")
	urls := map[string]string{"a": good.URL}
	root := t.TempDir()
	prev := PreviousOrgDataSourceDir(root, 3, "uid1")
	require.Equal(t, filepath.Join(root, "3-uid1"), prev)
	stored := startPrevious(t, prev, urls)

	c := startAs(t, root, 3, "uid1", urls)
	vals := promptSamples(t, c, "a")
	require.GreaterOrEqual(t, len(vals), len(stored))
	assert.Equal(t, stored, vals[:len(stored)], "the history moved with the store")
	assert.NoDirExists(t, prev)
}

// TestAnotherOrgCannotTakeAStore is the attack of issue 32: org 1's data
// source "atk" keeps its store at the previous layout's 1-atk; an org 2 admin
// creates a data source of UID "1-atk", which the previous version took for
// the UID-only key of its own and moved (after a restart, when org 2 queried
// first): org 2 then read org 1's series and org 1 lost them. Now org 2
// starts first and gets an empty store of its own, 1-atk stays where it is,
// and org 1's data source then finds its whole history.
func TestAnotherOrgCannotTakeAStore(t *testing.T) {
	verifyNoLeaks(t)
	good, _ := counterServer(t, "x")
	urls := map[string]string{"a": good.URL}
	root := t.TempDir()
	victim := PreviousOrgDataSourceDir(root, 1, "atk")
	stored := startPrevious(t, victim, urls)

	attacker := startAs(t, root, 2, "1-atk", urls)
	assert.DirExists(t, victim, "org 2 did not move org 1's store")
	got := promptSamples(t, attacker, "a")
	assert.Less(t, len(got), len(stored), "org 2 reads none of org 1's history")
	if len(got) > 0 {
		assert.NotEqual(t, stored[0], got[0], "org 2's first sample is its own")
	}

	owner := startAs(t, root, 1, "atk", urls)
	vals := promptSamples(t, owner, "a")
	require.GreaterOrEqual(t, len(vals), len(stored))
	assert.Equal(t, stored, vals[:len(stored)], "org 1 keeps its history")
}

// TestOwnerMarkerRefusesAnotherDataSource: a store directory whose owner
// marker names another data source is never opened, whatever path leads to
// it (a storagePath pointed at another organisation's stores, a symlink),
// and the error names both.
func TestOwnerMarkerRefusesAnotherDataSource(t *testing.T) {
	verifyNoLeaks(t)
	good, _ := counterServer(t, "x")
	urls := map[string]string{"a": good.URL}
	root := t.TempDir()
	c := startAs(t, root, 1, "prod", urls)
	dir := c.Dir()
	b, err := os.ReadFile(ownerPath(dir))
	require.NoError(t, err)
	assert.Equal(t, "org=1 uid=\"prod\"\n", string(b))

	cfg := loadSettings(t, counterSettings(t, urls), map[string]string{"a.bearerToken": "x"})
	require.NoError(t, c.Close())
	_, err = Start(cfg, Options{Dir: dir, Owner: Owner{Org: 2, UID: "prod"}, UID: "2/prod"})
	require.Error(t, err)
	assert.Contains(t, err.Error(), `org=1 uid="prod"`)
	assert.Contains(t, err.Error(), `organisation 2's data source "prod"`)
	b2, _ := os.ReadFile(ownerPath(dir))
	assert.Equal(t, string(b), string(b2), "the marker is unchanged")
}
