package collect

// Review of issue 32 (store identity across organisations), adversarial
// tests that failed on b51c626 and pass since: each was a way for one
// organisation's data source to reach another's stored history, or for a
// store to be locked out.
// Run one at a time: nice go test ./pkg/collect -run TestReview32Flaw -count=1

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// startAtRoot starts data source (org, uid) exactly as NewInstance does for
// storagePath root, returning Start's error instead of failing.
func startAtRoot(t *testing.T, root string, org int64, uid string, urls map[string]string) (*Collector, error) {
	t.Helper()
	cfg := loadSettings(t, counterSettings(t, urls), map[string]string{"a.bearerToken": "x"})
	c, err := Start(cfg, Options{Dir: OrgDataSourceDir(root, org, uid), LegacyDirs: LegacyStoreDirs(root, org, uid),
		Owner: Owner{Org: org, UID: uid}, UID: uid, LockWait: 200 * time.Millisecond})
	if err == nil {
		t.Cleanup(func() { _ = c.Close() })
	}
	return c, err
}

// victimHistory runs org's data source uid under root (the new layout, owner
// marker written) until it stored a few samples, closes it (a plugin
// restart: instances are created again only on the next request) and
// returns the samples.
func victimHistory(t *testing.T, root string, org int64, uid string, urls map[string]string) []float64 {
	t.Helper()
	c, err := startAtRoot(t, root, org, uid, urls)
	require.NoError(t, err)
	require.Eventually(t, func() bool { return len(promptSamples(t, c, "a")) >= 5 }, 20*time.Second, 10*time.Millisecond)
	stored := promptSamples(t, c, "a")
	require.NoError(t, c.Close())
	require.FileExists(t, ownerPath(OrgDataSourceDir(root, org, uid)))
	return stored
}

// TestReview32FlawOrg1StoragePathStealsAnotherOrgsStore: an organisation 1
// admin sets storagePath to <root>/org.2 and gives a data source the UID of
// an organisation 2 data source. LegacyStoreDirs offers organisation 1 the
// UID-only key <storagePath>/<uid>, which is now organisation 2's current
// store directory: moveLegacy renames it (owner marker ignored) into
// <root>/org.2/org.1/<uid>, claimStore marks it as organisation 1's, and the
// attacker reads organisation 2's whole history while organisation 2 starts
// over empty (its marker, left behind, still matches).
func TestReview32FlawOrg1StoragePathStealsAnotherOrgsStore(t *testing.T) {
	good, _ := counterServer(t, "x")
	urls := map[string]string{"a": good.URL}
	root := filepath.Join(t.TempDir(), "inferscope")
	victimDir := OrgDataSourceDir(root, 2, "prod")
	stored := victimHistory(t, root, 2, "prod", urls)

	attackerRoot := filepath.Join(root, "org.2") // storagePath, absolute: accepted by settings
	atk, err := startAtRoot(t, attackerRoot, 1, "prod", urls)
	if err == nil {
		got := promptSamples(t, atk, "a")
		assert.Less(t, len(got), len(stored), "organisation 1 must read none of organisation 2's history (it read %d samples, org 2 had %d)", len(got), len(stored))
	}
	assert.DirExists(t, victimDir, "organisation 2's store must stay where it is")

	v, err := startAtRoot(t, root, 2, "prod", urls)
	require.NoError(t, err)
	vals := promptSamples(t, v, "a")
	require.GreaterOrEqual(t, len(vals), len(stored), "organisation 2 keeps its history")
}

// TestReview32FlawPrefixedUIDStolenByAnotherOrg: the previous-layout key is
// offered under any storagePath too. Organisation 2's admin points
// storagePath at <root>/org.1 and creates UID "prod"; its previous key
// <root>/org.1/2-prod is organisation 1's current store of UID "2-prod".
func TestReview32FlawPrefixedUIDStolenByAnotherOrg(t *testing.T) {
	good, _ := counterServer(t, "x")
	urls := map[string]string{"a": good.URL}
	root := filepath.Join(t.TempDir(), "inferscope")
	victimDir := OrgDataSourceDir(root, 1, "2-prod")
	stored := victimHistory(t, root, 1, "2-prod", urls)

	atk, err := startAtRoot(t, filepath.Join(root, "org.1"), 2, "prod", urls)
	if err == nil {
		got := promptSamples(t, atk, "a")
		assert.Less(t, len(got), len(stored), "organisation 2 must read none of organisation 1's history")
	}
	assert.DirExists(t, victimDir, "organisation 1's store must stay where it is")
}

// TestReview32FlawWholeStorageRootMoved: organisation 1's admin sets
// storagePath to the parent of the shared storage root and the UID to its
// base name ("inferscope"): the UID-only key is the whole root, holding
// every organisation's stores, and nothing locks it (each store locks only
// its own <dir>.lock). It is renamed even while another organisation's
// store is open in the process, whose TSDB then writes into a directory
// that no longer exists; after a restart every organisation starts empty.
func TestReview32FlawWholeStorageRootMoved(t *testing.T) {
	good, _ := counterServer(t, "x")
	urls := map[string]string{"a": good.URL}
	parent := t.TempDir()
	root := filepath.Join(parent, "inferscope")
	victim, err := startAtRoot(t, root, 2, "prod", urls)
	require.NoError(t, err)
	require.Eventually(t, func() bool { return len(promptSamples(t, victim, "a")) >= 3 }, 20*time.Second, 10*time.Millisecond)

	_, _ = startAtRoot(t, parent, 1, "inferscope", urls)
	assert.DirExists(t, root, "the storage root of every organisation must not be moved")
	assert.DirExists(t, OrgDataSourceDir(root, 2, "prod"), "organisation 2's open store must stay where it is")
}

// TestReview32FlawLegacyMoveIgnoresOwnerMarker pins the root cause of the
// three attacks above at the unit level: a directory carrying an owner
// marker of another data source (i.e. a store of the new layout) is still
// moved by moveLegacy, and its marker is neither checked nor moved.
func TestReview32FlawLegacyMoveIgnoresOwnerMarker(t *testing.T) {
	root := t.TempDir()
	legacy := filepath.Join(root, "org.2", "prod")
	require.NoError(t, os.MkdirAll(filepath.Join(legacy, "wal"), 0o750))
	require.NoError(t, os.WriteFile(ownerPath(legacy), []byte(Owner{Org: 2, UID: "prod"}.ownerLine()), 0o640))
	dst := filepath.Join(root, "org.2", "org.1", "prod")
	require.NoError(t, os.MkdirAll(filepath.Dir(dst), 0o750))
	moved, err := moveLegacy(legacy, dst, 100*time.Millisecond)
	assert.False(t, moved && err == nil, "a store marked as organisation 2's must not move to another data source's directory")
}

// TestReview32OldestKeyOfDigitDashUIDIsThePreviousLayouts pins the one
// ambiguity left, as docs/storage.md states it: <root>/2-foo is both the
// oldest layout's key of UID "2-foo" (release 0.1.0, any organisation) and
// the previous layout's key of organisation 2's "foo", and nothing on disk
// tells them apart. It is read as the previous layout's, for organisation
// 2's "foo" only; no data source is ever offered it as a UID-only key.
func TestReview32OldestKeyOfDigitDashUIDIsThePreviousLayouts(t *testing.T) {
	root := "/d"
	key := DataSourceDir(root, "2-foo")
	assert.Equal(t, []string{key}, LegacyStoreDirs(root, 2, "foo"))
	for org := int64(1); org <= 3; org++ {
		assert.NotContains(t, LegacyStoreDirs(root, org, "2-foo"), key, "organisation %d's UID 2-foo", org)
	}
}

// TestReview32FlawUnderscoreUIDsShareAPreviousKey: PreviousOrgDataSourceDir
// still goes through DataSourceDir's replacement, so UIDs "_", "__", "-_"…
// and "default" of one organisation all spell <org>-default (and "_" and
// "default" both are offered the UID-only key <root>/default). Within one
// organisation only: low.
func TestReview32FlawUnderscoreUIDsShareAPreviousKey(t *testing.T) {
	seen := map[string]string{}
	for _, uid := range []string{"default", "_", "__"} {
		for _, l := range LegacyStoreDirs("/d", 1, uid) {
			if prev, ok := seen[l]; ok {
				t.Errorf("legacy %s offered to both %q and %q", l, prev, uid)
			}
			seen[l] = uid
		}
	}
}

// TestReview32FlawEmptyOwnerMarkerAfterFullDisk: claimStore writes the
// marker with os.WriteFile (create, then write): on a full disk the create
// succeeds and the write fails, leaving an empty marker. Once space is freed
// the data source's own store is refused for ever as belonging to "another
// data source ()", with no way back short of deleting the file by hand.
func TestReview32FlawEmptyOwnerMarkerAfterFullDisk(t *testing.T) {
	mnt := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", mnt).CombinedOutput(); err != nil {
		t.Skipf("cannot mount a small tmpfs (needs root): %v %s", err, strings.TrimSpace(string(out)))
	}
	t.Cleanup(func() { _ = exec.Command("umount", "-l", mnt).Run() })
	good, _ := counterServer(t, "x")
	urls := map[string]string{"a": good.URL}
	require.NoError(t, os.MkdirAll(filepath.Join(mnt, "org.1"), 0o750))
	filler := filepath.Join(mnt, "filler")
	f, err := os.Create(filler)
	require.NoError(t, err)
	buf := make([]byte, 4<<10)
	for {
		if _, err := f.Write(buf); err != nil {
			break
		}
	}
	require.NoError(t, f.Close())

	_, err = startAtRoot(t, mnt, 1, "prod", urls)
	require.Error(t, err, "a full disk fails the first opening")
	t.Logf("first opening on a full disk: %v", err)
	require.NoError(t, os.Remove(filler))

	_, err = startAtRoot(t, mnt, 1, "prod", urls)
	assert.NoError(t, err, "once space is freed the data source opens its own store")
}

// TestReview32FlawSharedOpenStoreSkipsOwnerCheck: acquireStore hands an
// already open store to any caller of the same directory without
// claimStore, so the owner marker is checked only by the first opener in
// the process. Not reachable through OrgDataSourceDir today (two owners
// never spell one directory), but the marker is documented as checked "at
// every opening, whatever path leads to it": defence in depth, low.
func TestReview32FlawSharedOpenStoreSkipsOwnerCheck(t *testing.T) {
	good, _ := counterServer(t, "x")
	urls := map[string]string{"a": good.URL}
	root := t.TempDir()
	_, err := startAtRoot(t, root, 1, "prod", urls)
	require.NoError(t, err)
	cfg := loadSettings(t, counterSettings(t, urls), map[string]string{"a.bearerToken": "x"})
	c, err := Start(cfg, Options{Dir: OrgDataSourceDir(root, 1, "prod"), Owner: Owner{Org: 2, UID: "prod"}, UID: "2/prod"})
	if err == nil {
		_ = c.Close()
	}
	assert.Error(t, err, "organisation 2 joined organisation 1's open store")
}

// TestReview32FlawGlobMetacharactersInStoragePath: asidePaths builds glob
// patterns from the store directory unescaped, and storagePath is any
// absolute path an org admin types. With a '[' in it the pattern is invalid:
// set-aside directories and quarantined blocks are never removed, never
// counted in retentionSize and never reported by the health check. With a
// '*' the clean-up of one data source removes expired set-aside data of
// stores under other storagePaths (the same organisation's directory
// component stays literal, so not another organisation's). Low.
func TestReview32FlawGlobMetacharactersInStoragePath(t *testing.T) {
	root := t.TempDir()
	old := time.Now().Add(-48 * time.Hour)
	mk := func(p string) string {
		require.NoError(t, os.MkdirAll(p, 0o750))
		require.NoError(t, os.Chtimes(p, old, old))
		return p
	}
	bracket := OrgDataSourceDir(filepath.Join(root, "data[1]"), 1, "a")
	aside := mk(bracket + ".corrupted-20200101T000000Z")
	s := &store{dir: bracket, retention: time.Hour}
	assert.NotEmpty(t, asidePaths(bracket), "the set-aside directory is seen")
	s.removeExpired(time.Now())
	assert.NoDirExists(t, aside, "the expired set-aside directory is removed")

	other := mk(OrgDataSourceDir(filepath.Join(root, "other"), 1, "a") + ".corrupted-20200101T000000Z")
	star := &store{dir: OrgDataSourceDir(filepath.Join(root, "*"), 1, "a"), retention: time.Hour}
	star.removeExpired(time.Now())
	assert.DirExists(t, other, "a store under storagePath <root>/* removed the set-aside data of <root>/other")
}

// TestReview32FlawRunningStoresInnardsMoved: the UID-only key reaches any
// directory whose name is a Grafana UID, and only the store directory itself
// is locked. Organisation 1's admin sets storagePath to organisation 2's
// running store and the UID to "wal" (or to a block's ULID, or
// "chunks_head"): the running store's write-ahead log is renamed away under
// it. The same reaches any directory the plugin may rename, e.g. Grafana's
// own <data>/plugins with storagePath <data> and UID "plugins".
func TestReview32FlawRunningStoresInnardsMoved(t *testing.T) {
	good, _ := counterServer(t, "x")
	urls := map[string]string{"a": good.URL}
	data := t.TempDir()
	root := filepath.Join(data, "inferscope")
	v, err := startAtRoot(t, root, 2, "prod", urls)
	require.NoError(t, err)
	require.Eventually(t, func() bool { return len(promptSamples(t, v, "a")) >= 3 }, 20*time.Second, 10*time.Millisecond)

	_, _ = startAtRoot(t, v.Dir(), 1, "wal", urls)
	assert.DirExists(t, filepath.Join(v.Dir(), "wal"), "organisation 2's running store keeps its write-ahead log")

	plugins := filepath.Join(data, "plugins")
	require.NoError(t, os.MkdirAll(filepath.Join(plugins, "inferscope-llm-datasource"), 0o750))
	_, _ = startAtRoot(t, data, 1, "plugins", urls)
	assert.DirExists(t, plugins, "Grafana's plugins directory stays where it is")
}
