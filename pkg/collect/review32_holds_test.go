package collect

// Review of issue 32 (store identity across organisations): attacks that
// did NOT work on b51c626, kept as regression tests. They pass.
// nice go test ./pkg/collect -run TestReview32Holds -count=1

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// adversarialUIDs collide in some way with the layouts' spellings.
func adversarialUIDs() []string {
	hashOfEmpty := filepath.Base(OrgDataSourceDir("/", 1, ""))
	return []string{
		"prod", "Prod", "PROD", "_", "__", "-", "default", "org", "org.1", "org.2", "ORG.1", "uid", "uid.",
		hashOfEmpty, strings.TrimPrefix(hashOfEmpty, "uid."), "1-prod", "2-prod", "12-prod", "1-2-prod",
		"prod.lock", "prod.owner", "prod.quarantine", "prod.corrupted-20260101T000000Z", "prod.corrupted-*",
		"prod*", "pr?d", "[p]rod", "..", ".", "", "/", "a/b", "a\\b", "a\x00b", "CON", "nul", "prod ", "prod.",
		"é", "e\u0301", "ǅ", "ﬁ", strings.Repeat("a", 40), strings.Repeat("a", 128), strings.Repeat("a", 129),
		strings.Repeat("a", 500), strings.Repeat("é", 200), "uid=\"x\"", "x\" org=1 uid=\"prod", "prod\norg=1",
	}
}

// TestReview32HoldsNoNameCollides: over adversarial UIDs and organisations
// (1, 2, 12, 21, a huge id, 0 and -1 meaning 1), distinct data sources never
// spell one store directory, and no store directory is another store's lock,
// owner marker, quarantine or set-aside directory; across organisations this
// holds case-folded too (a case-insensitive file system). Every path
// component fits in 255 bytes. Owner lines are injective (no UID forges
// another data source's marker).
func TestReview32HoldsNoNameCollides(t *testing.T) {
	type ds struct {
		org int64
		uid string
	}
	orgs := []int64{1, 2, 12, 21, 1<<62 + 7}
	dirs := map[string]ds{}
	folded := map[string]ds{}
	lines := map[string]ds{}
	var all []string
	for _, org := range orgs {
		for _, uid := range adversarialUIDs() {
			me := ds{org, uid}
			d := OrgDataSourceDir("/r", org, uid)
			if prev, ok := dirs[d]; ok {
				t.Errorf("%s spelled by %v and %v", d, prev, me)
			}
			dirs[d] = me
			if prev, ok := folded[strings.ToLower(d)]; ok && prev.org != org {
				t.Errorf("%s case-folds onto %v's directory (other organisation)", d, prev)
			}
			folded[strings.ToLower(d)] = me
			l := Owner{Org: org, UID: uid}.ownerLine()
			if prev, ok := lines[l]; ok {
				t.Errorf("owner line %q written by %v and %v", l, prev, me)
			}
			lines[l] = me
			for _, p := range []string{d, lockPath(d), ownerPath(d), quarantineDir(d), d + ".corrupted-20260101T000000Z"} {
				assert.LessOrEqual(t, len(filepath.Base(p)), 255, p)
			}
			all = append(all, d)
		}
	}
	assert.Equal(t, OrgDataSourceDir("/r", 1, "prod"), OrgDataSourceDir("/r", 0, "prod"))
	assert.Equal(t, OrgDataSourceDir("/r", 1, "prod"), OrgDataSourceDir("/r", -1, "prod"))
	for _, d := range all {
		for _, e := range all {
			if d == e {
				continue
			}
			for _, side := range []string{lockPath(e), ownerPath(e), quarantineDir(e)} {
				if strings.EqualFold(d, side) || strings.HasPrefix(d, quarantineDir(e)+"/") {
					t.Errorf("store %s is %s", d, side)
				}
			}
			if m, _ := filepath.Match(globEscape(e)+".corrupted-*", d); m {
				t.Errorf("store %s matches %s's set-aside pattern", d, e)
			}
		}
	}
}

// TestReview32HoldsStoragePathTricks: an organisation 2 admin tries
// storagePaths that climb into organisation 1's tree (.., organisation 1's
// directory itself with the victim's UID, the victim's store directory, its
// wal and a block-like directory inside it) while the victim is stopped and
// while it runs; the victim then restarts with its whole history, its
// directory and marker untouched, and the attacker never read it.
func TestReview32HoldsStoragePathTricks(t *testing.T) {
	good, _ := counterServer(t, "x")
	urls := map[string]string{"a": good.URL}
	root := filepath.Join(t.TempDir(), "inferscope")
	stored := victimHistory(t, root, 1, "victim", urls)
	vdir := OrgDataSourceDir(root, 1, "victim")
	marker, err := os.ReadFile(ownerPath(vdir))
	require.NoError(t, err)

	for _, sp := range []string{
		filepath.Join(root, "org.1") + "/..",
		vdir + "/../..",
		filepath.Join(root, "org.1"),
		vdir,
		filepath.Join(vdir, "wal"),
		filepath.Join(vdir, "chunks_head"),
		root,
	} {
		atk, err := startAtRoot(t, sp, 2, "victim", urls)
		if err != nil {
			// A storagePath inside an organisation's stores or inside a
			// store is refused outright (checkRoot).
			assert.Contains(t, err.Error(), "choose a directory of its own", sp)
			assert.NotErrorIs(t, err, ErrStoreLocked, sp)
			continue
		}
		assert.NotEqual(t, vdir, atk.Dir(), sp)
		assert.Less(t, len(promptSamples(t, atk, "a")), len(stored), "storagePath %s read organisation 1's history", sp)
		require.NoError(t, atk.Close())
	}
	v, err := startAtRoot(t, root, 1, "victim", urls)
	require.NoError(t, err)
	vals := promptSamples(t, v, "a")
	require.GreaterOrEqual(t, len(vals), len(stored))
	assert.Equal(t, stored, vals[:len(stored)])
	notes, lost := v.StoreHealth()
	assert.False(t, lost, notes)
	b, _ := os.ReadFile(ownerPath(vdir))
	assert.Equal(t, string(marker), string(b))
}

// TestReview32HoldsSymlinkIntoAnotherOrgsStore: a symlink (planted by an
// operator, say) makes organisation 2's directory resolve to organisation
// 1's store: the owner marker refuses it when the victim is stopped, the
// lock when it runs; the marker and the history are untouched.
func TestReview32HoldsSymlinkIntoAnotherOrgsStore(t *testing.T) {
	good, _ := counterServer(t, "x")
	urls := map[string]string{"a": good.URL}
	tmp := t.TempDir()
	root := filepath.Join(tmp, "inferscope")
	stored := victimHistory(t, root, 1, "prod", urls)
	vdir := OrgDataSourceDir(root, 1, "prod")
	atkRoot := filepath.Join(tmp, "other")
	require.NoError(t, os.MkdirAll(filepath.Join(atkRoot, "org.2"), 0o750))
	require.NoError(t, os.Symlink(vdir, OrgDataSourceDir(atkRoot, 2, "prod")))
	require.NoError(t, os.Symlink(ownerPath(vdir), ownerPath(OrgDataSourceDir(atkRoot, 2, "prod")))) // even the marker

	_, err := startAtRoot(t, atkRoot, 2, "prod", urls)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "belongs to another data source")

	v, err := startAtRoot(t, root, 1, "prod", urls)
	require.NoError(t, err)
	require.NoError(t, os.Remove(ownerPath(OrgDataSourceDir(atkRoot, 2, "prod"))))
	require.NoError(t, os.Remove(lockPath(OrgDataSourceDir(atkRoot, 2, "prod")))) // its own, from the refused try
	require.NoError(t, os.Symlink(lockPath(vdir), lockPath(OrgDataSourceDir(atkRoot, 2, "prod"))))
	_, err = startAtRoot(t, atkRoot, 2, "prod", urls)
	require.Error(t, err, "the running victim's lock refuses the symlinked directory")
	assert.GreaterOrEqual(t, len(promptSamples(t, v, "a")), len(stored))
}

// TestReview32HoldsConcurrentStartsAcrossOrgs: organisations 1, 2 and 3
// start a data source of one UID at once, over an oldest-layout store of
// that UID: organisation 1 alone gets its history, each has a store of its
// own, none fails, and their data stays apart while all are open.
func TestReview32HoldsConcurrentStartsAcrossOrgs(t *testing.T) {
	good, _ := counterServer(t, "x")
	urls := map[string]string{"a": good.URL}
	root := t.TempDir()
	stored := startPrevious(t, DataSourceDir(root, "uid1"), urls)
	var wg sync.WaitGroup
	cs := make([]*Collector, 4)
	errs := make([]error, 4)
	for org := 1; org <= 3; org++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			cs[org], errs[org] = startAtRoot(t, root, int64(org), "uid1", urls)
		}()
	}
	wg.Wait()
	for org := 1; org <= 3; org++ {
		require.NoError(t, errs[org], "org %d", org)
	}
	assert.NotEqual(t, cs[1].store, cs[2].store)
	assert.NotEqual(t, cs[2].store, cs[3].store)
	v1 := promptSamples(t, cs[1], "a")
	require.GreaterOrEqual(t, len(v1), len(stored))
	assert.Equal(t, stored, v1[:len(stored)])
	// The server's counter grows with every request it answers, so each sample value is one
	// scrape's: organisations 2 and 3 hold none of the old store's values (counting them
	// instead would fail on a loaded machine whose new stores had scraped as often).
	old := map[float64]bool{}
	for _, v := range stored {
		old[v] = true
	}
	for org := 2; org <= 3; org++ {
		for _, v := range promptSamples(t, cs[org], "a") {
			assert.False(t, old[v], "org %d holds the old store's sample %v", org, v)
		}
	}
}

// TestReview32HoldsLegacyNotADirectory: an oldest-layout key that is a
// regular file, a dangling symlink or a symlink to a file is neither moved
// nor touched, and the store opens.
func TestReview32HoldsLegacyNotADirectory(t *testing.T) {
	good, _ := counterServer(t, "x")
	urls := map[string]string{"a": good.URL}
	for _, kind := range []string{"file", "dangling", "tofile"} {
		t.Run(kind, func(t *testing.T) {
			root := t.TempDir()
			legacy := DataSourceDir(root, "uid1")
			target := filepath.Join(root, "precious")
			require.NoError(t, os.WriteFile(target, []byte("keep"), 0o600))
			switch kind {
			case "file":
				require.NoError(t, os.WriteFile(legacy, []byte("keep"), 0o600))
			case "dangling":
				require.NoError(t, os.Symlink(filepath.Join(root, "nowhere"), legacy))
			case "tofile":
				require.NoError(t, os.Symlink(target, legacy))
			}
			c, err := startAtRoot(t, root, 1, "uid1", urls)
			require.NoError(t, err)
			_, err = os.Lstat(legacy)
			assert.NoError(t, err, "left where it was")
			b, _ := os.ReadFile(target)
			assert.Equal(t, "keep", string(b))
			fi, err := os.Lstat(c.Dir())
			require.NoError(t, err)
			assert.True(t, fi.IsDir())
		})
	}
}

// TestReview32HoldsSetAsideCleanupStaysInItsStore: expired set-aside
// directories and quarantined blocks are removed for one store only: not a
// sibling UID's (prefix "a" of "ab", the hashed names, UID "uid" beside
// "uid.<hash>"), not another organisation's, not under a storagePath whose
// name holds glob metacharacters, and not the sibling's lock or marker.
func TestReview32HoldsSetAsideCleanupStaysInItsStore(t *testing.T) {
	root := t.TempDir()
	old := time.Now().Add(-48 * time.Hour)
	mk := func(p string) string {
		require.NoError(t, os.MkdirAll(p, 0o750))
		require.NoError(t, os.Chtimes(p, old, old))
		return p
	}
	const ulid = "01HZZZZZZZZZZZZZZZZZZZZZZZ"
	var keep []string
	for _, d := range []string{
		OrgDataSourceDir(root, 1, "ab"), OrgDataSourceDir(root, 1, "a-"), OrgDataSourceDir(root, 1, "a.b"),
		OrgDataSourceDir(root, 1, "uid"), OrgDataSourceDir(root, 2, "a"), OrgDataSourceDir(filepath.Join(root, "x"), 1, "a"),
	} {
		keep = append(keep, mk(d), mk(d+".corrupted-20200101T000000Z"), mk(filepath.Join(quarantineDir(d), ulid)))
		require.NoError(t, os.WriteFile(lockPath(d), nil, 0o640))
		require.NoError(t, os.WriteFile(ownerPath(d), []byte("x"), 0o640))
		keep = append(keep, lockPath(d), ownerPath(d))
	}
	for _, dir := range []string{OrgDataSourceDir(root, 1, "a"), OrgDataSourceDir(root, 2, "uid"), OrgDataSourceDir(root, 1, "")} {
		gone := []string{mk(dir + ".corrupted-20200101T000000Z"), mk(filepath.Join(quarantineDir(dir), ulid))}
		s := &store{dir: dir, retention: time.Hour}
		s.removeExpired(time.Now())
		for _, p := range gone {
			assert.NoDirExists(t, p, "its own expired set-aside is removed")
		}
	}
	// Glob metacharacters in another organisation's storagePath (the pattern
	// keeps the literal org.<n> component, so it never reaches organisation 1 or 2).
	for _, sp := range []string{"*", "?", "[", "[x]", "*/*"} {
		s := &store{dir: OrgDataSourceDir(filepath.Join(root, sp), 3, "a"), retention: time.Hour}
		s.removeExpired(time.Now())
	}
	for _, p := range keep {
		_, err := os.Stat(p)
		assert.NoError(t, err, "%s was removed by another store's clean-up", p)
	}
}

// TestReview32HoldsGarbledMarkers: markers of another data source in every
// near-miss spelling (other org, other UID, case, extra space, missing
// newline, two lines, a quote-injected UID) are refused, and left as they
// are; only the exact line opens.
func TestReview32HoldsGarbledMarkers(t *testing.T) {
	good, _ := counterServer(t, "x")
	urls := map[string]string{"a": good.URL}
	for k, m := range []string{
		"org=2 uid=\"prod\"\n", "org=1 uid=\"Prod\"\n", "org=1 uid=\"prod\" \n", "org=1  uid=\"prod\"\n",
		"org=1 uid=\"prod\"", "org=1 uid=\"prod\"\norg=2 uid=\"prod\"\n", "org=01 uid=\"prod\"\n",
		Owner{Org: 1, UID: `prod" org=1 uid="prod`}.ownerLine(), "org=1 uid=prod\n",
	} {
		t.Run(fmt.Sprint(k), func(t *testing.T) {
			root := t.TempDir()
			dir := OrgDataSourceDir(root, 1, "prod")
			require.NoError(t, os.MkdirAll(filepath.Dir(dir), 0o750))
			require.NoError(t, os.WriteFile(ownerPath(dir), []byte(m), 0o640))
			_, err := startAtRoot(t, root, 1, "prod", urls)
			require.Error(t, err, "%q", m)
			b, _ := os.ReadFile(ownerPath(dir))
			assert.Equal(t, m, string(b))
			assert.NoDirExists(t, dir, "nothing was created in a refused store")
		})
	}
}

// TestReview32HoldsRunningStoreNotMoved: while organisation 2's store is
// open, the organisation 1 storagePath attack of
// TestReview32FlawOrg1StoragePathStealsAnotherOrgsStore was refused only by
// the store's lock, with ErrStoreLocked, which the plugin retries at every
// query (so it succeeded once the victim's store closed) and whose text named
// the victim's directory. Now the storagePath itself is refused, for good,
// without naming the other store.
func TestReview32HoldsRunningStoreNotMoved(t *testing.T) {
	good, _ := counterServer(t, "x")
	urls := map[string]string{"a": good.URL}
	root := filepath.Join(t.TempDir(), "inferscope")
	v, err := startAtRoot(t, root, 2, "prod", urls)
	require.NoError(t, err)
	_, err = startAtRoot(t, filepath.Join(root, "org.2"), 1, "prod", urls)
	require.Error(t, err)
	assert.NotErrorIs(t, err, ErrStoreLocked, "refused for good, not retried at every query until a restart frees the lock")
	assert.NotContains(t, err.Error(), OrgDataSourceDir(root, 2, "prod"), "the error does not tell the attacker the other organisation's store exists")
	assert.DirExists(t, v.Dir())
}
