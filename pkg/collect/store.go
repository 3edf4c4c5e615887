package collect

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/alecthomas/units"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/config"
	"github.com/prometheus/prometheus/tsdb"
	"github.com/prometheus/prometheus/tsdb/fileutil"
	"github.com/prometheus/prometheus/util/compression"
)

// storageDirName is the subdirectory of Grafana's data directory that holds
// every Inferscope data source's store when storagePath is not set.
const storageDirName = "inferscope"

// DefaultStoragePath returns the directory under which data sources keep
// their stores when storagePath is not set: $GF_PATHS_DATA/inferscope when
// Grafana's data path is in the environment (the official Docker image sets
// it), else <grafana data>/inferscope derived from the plugin binary's place
// (Grafana runs plugins from <data>/plugins/<plugin id>/ by default), else
// <user cache dir>/inferscope, else <temp dir>/inferscope. The result is absolute.
func DefaultStoragePath() string {
	if d := os.Getenv("GF_PATHS_DATA"); d != "" && filepath.IsAbs(d) {
		return filepath.Join(d, storageDirName)
	}
	if exe, err := os.Executable(); err == nil {
		pluginDir := filepath.Dir(exe)
		pluginsDir := filepath.Dir(pluginDir)
		if filepath.Base(pluginsDir) == "plugins" && writable(filepath.Dir(pluginsDir)) {
			return filepath.Join(filepath.Dir(pluginsDir), storageDirName)
		}
	}
	if d, err := os.UserCacheDir(); err == nil && filepath.IsAbs(d) && writable(d) {
		return filepath.Join(d, storageDirName)
	}
	return filepath.Join(os.TempDir(), storageDirName)
}

// writable reports whether a file can be created in dir.
func writable(dir string) bool {
	f, err := os.CreateTemp(dir, ".inferscope-probe-")
	if err != nil {
		return false
	}
	name := f.Name()
	_ = f.Close()
	_ = os.Remove(name)
	return true
}

// unsafeDirChars are the characters replaced in a UID used as a directory name.
var unsafeDirChars = regexp.MustCompile(`[^A-Za-z0-9_-]`)

// DataSourceDir returns the store directory of the data source with the given
// UID under root: root/<uid>, with characters other than letters, digits,
// '_' and '-' replaced by '_' (Grafana UIDs use only those). An empty UID
// (a data source created through the legacy API) maps to "default".
func DataSourceDir(root, uid string) string {
	name := unsafeDirChars.ReplaceAllString(uid, "_")
	if name == "" || strings.Trim(name, "_") == "" {
		name = "default"
	}
	return filepath.Join(root, name)
}

// safeUID matches the UIDs Grafana creates and accepts (letters, digits, '_'
// and '-'), which name a store directory as they are.
var safeUID = regexp.MustCompile(`^[A-Za-z0-9_-]{1,128}$`)

// orgPrefixed matches a directory name of the form "<digits>-…": the key of
// version 0.x stores (PreviousOrgDataSourceDir), never a UID-only key.
var orgPrefixed = regexp.MustCompile(`^[0-9]+-`)

// OrgDataSourceDir returns the store directory of the data source with the
// given UID in Grafana organisation org under root: root/org.<org>/<uid>.
// A UID outside Grafana's alphabet ([A-Za-z0-9_-], 1–128 characters), the
// empty UID included, is spelled "uid." followed by the first 32 hex digits of
// its SHA-256, so two UIDs never share a directory. Neither part can be
// mistaken for another data source's: an organisation has a directory of its
// own, whose name ("org." and digits) no UID-keyed directory of an older
// version can have (those hold no '.'), and inside it a directory name with a
// '.' is always a hash. Grafana keeps UIDs unique within an organisation only,
// so one UID in two organisations names two data sources and two stores.
// org ≤ 0 (unknown) means 1, Grafana's default organisation.
func OrgDataSourceDir(root string, org int64, uid string) string {
	if org <= 0 {
		org = 1
	}
	name := uid
	if !safeUID.MatchString(uid) {
		h := sha256.Sum256([]byte(uid))
		name = "uid." + hex.EncodeToString(h[:16])
	}
	return filepath.Join(root, "org."+strconv.FormatInt(org, 10), name)
}

// PreviousOrgDataSourceDir is where the version before OrgDataSourceDir kept
// the store of the data source (org, uid): root/<org>-<uid>. That name is
// ambiguous between organisations only for a UID-only key of an even older
// version (DataSourceDir) that starts with digits and '-', which
// LegacyStoreDirs therefore never offers as a UID-only key.
func PreviousOrgDataSourceDir(root string, org int64, uid string) string {
	if org <= 0 {
		org = 1
	}
	return filepath.Join(root, strconv.FormatInt(org, 10)+"-"+filepath.Base(DataSourceDir(root, uid)))
}

// LegacyStoreDirs lists, newest layout first, the directories under root
// where earlier versions kept the store of the data source (org, uid), each
// one that no other data source can claim:
//   - root/<org>-<uid> (PreviousOrgDataSourceDir), when uid is in Grafana's
//     alphabet: of all (organisation, UID) pairs only this one spells it;
//   - root/<uid> (DataSourceDir, before stores were keyed by organisation),
//     for organisation 1 only, and only when uid is in Grafana's alphabet and
//     does not start with digits and '-'. Until then every organisation's
//     data source of that UID wrote into it, so any of them could claim it;
//     Grafana's default organisation (the only one of most installations)
//     takes it, and no other organisation ever can. A UID-only key such as
//     "1-atk" is left alone: it is also organisation 1's previous key of
//     UID "atk".
//
// The one ambiguity left is a store of the oldest layout (release 0.1.0)
// whose UID starts with digits and '-': root/2-foo may be the oldest store
// of UID "2-foo" or the previous layout's store of organisation 2's "foo",
// and nothing on disk tells them apart; it goes to organisation 2's "foo"
// (docs/storage.md says how to keep it). moveLegacy only ever moves a
// directory that looks like such a store (legacyStore).
func LegacyStoreDirs(root string, org int64, uid string) []string {
	if org <= 0 {
		org = 1
	}
	if !safeUID.MatchString(uid) || filepath.Base(DataSourceDir(root, uid)) != uid {
		// Outside Grafana's alphabet, or spelled like another UID by the
		// older layouts' replacement ("_" and "__" became "default").
		return nil
	}
	out := []string{PreviousOrgDataSourceDir(root, org, uid)}
	if org == 1 && !orgPrefixed.MatchString(uid) {
		out = append(out, DataSourceDir(root, uid))
	}
	return out
}

// Owner is the data source a store directory belongs to: its Grafana
// organisation and UID, written into ownerPath(dir) when the store is first
// opened and checked at every later opening.
type Owner struct {
	// Org is the Grafana organisation id (≥ 1).
	Org int64
	// UID is the data source's UID as Grafana spells it.
	UID string
}

// ownerPath is the owner marker of a store directory, beside it like its lock.
func ownerPath(dir string) string { return dir + ".owner" }

// ownerLine is the marker's content: "org=<org> uid=<quoted uid>\n".
func (o Owner) ownerLine() string {
	return fmt.Sprintf("org=%d uid=%s\n", o.Org, strconv.Quote(o.UID))
}

// claimStore checks the owner marker of dir against o, writing it when
// there is none: a store whose marker names another data source is never
// opened (the error names both). It runs under dir's lock.
func claimStore(dir string, o Owner) error {
	want := o.ownerLine()
	b, err := os.ReadFile(ownerPath(dir))
	switch {
	case err == nil && len(b) == 0:
		// An empty marker names nobody (a crash between create and write
		// of a version that wrote it in place): it is claimed.
		return writeOwner(dir, want)
	case err == nil:
		if string(b) != want {
			return fmt.Errorf("collector: the store directory %s belongs to another data source (%s), not to organisation %d's data source %q: it is not opened",
				dir, strings.TrimSpace(string(b)), o.Org, o.UID)
		}
		return nil
	case errors.Is(err, os.ErrNotExist):
		return writeOwner(dir, want)
	default:
		return fmt.Errorf("collector: reading the owner of the store %s: %w", dir, err)
	}
}

// writeOwner writes the owner marker of dir atomically (a temporary file
// renamed over it), so a full disk leaves no marker rather than an empty one.
func writeOwner(dir, line string) error {
	f, err := os.CreateTemp(filepath.Dir(dir), ".owner-*")
	if err != nil {
		return fmt.Errorf("collector: writing the owner of the store %s: %w", dir, err)
	}
	tmp := f.Name()
	_, werr := f.WriteString(line)
	if err := errors.Join(werr, f.Sync(), f.Close()); err != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("collector: writing the owner of the store %s: %w", dir, err)
	}
	if err := os.Chmod(tmp, 0o640); err != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("collector: writing the owner of the store %s: %w", dir, err)
	}
	if err := os.Rename(tmp, ownerPath(dir)); err != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("collector: writing the owner of the store %s: %w", dir, err)
	}
	return nil
}

// orgDirName matches the name of an organisation's directory of stores.
var orgDirName = regexp.MustCompile(`^org\.[0-9]+$`)

// checkRoot refuses a store directory dir (<root>/org.<org>/<uid>) whose
// root lies inside another data source's store or inside an organisation's
// directory of stores: storagePath is a setting an organisation admin
// chooses, and pointing it there would reach other data sources'
// directories (their files, or their stores as "older layouts").
func checkRoot(dir string) error {
	root := filepath.Dir(filepath.Dir(dir))
	for p := root; ; p = filepath.Dir(p) {
		if orgDirName.MatchString(filepath.Base(p)) {
			return fmt.Errorf("collector: storagePath %s lies inside the stores of an organisation (%s): choose a directory of its own", root, p)
		}
		for _, side := range []string{ownerPath(p), lockPath(p)} {
			if _, err := os.Lstat(side); err == nil {
				return fmt.Errorf("collector: storagePath %s lies inside the store %s: choose a directory of its own", root, p)
			}
		}
		if parent := filepath.Dir(p); parent == p {
			return nil
		}
	}
}

// legacyStore reports whether legacy looks like a store of an older layout
// that may be moved: a real directory (not a symlink) holding a WAL, with no
// owner marker beside it (every store of this layout has one) and no
// organisation's directory of stores inside it (a storage root).
func legacyStore(legacy string) bool {
	fi, err := os.Lstat(legacy)
	if err != nil || !fi.IsDir() {
		return false
	}
	if _, err := os.Lstat(ownerPath(legacy)); err == nil || !errors.Is(err, os.ErrNotExist) {
		return false
	}
	if wal, err := os.Lstat(filepath.Join(legacy, "wal")); err != nil || !wal.IsDir() {
		return false
	}
	entries, err := os.ReadDir(legacy)
	if err != nil {
		return false
	}
	for _, e := range entries {
		if orgDirName.MatchString(e.Name()) || strings.HasSuffix(e.Name(), ".owner") {
			return false
		}
	}
	return true
}

// store is one data source's TSDB on disk, shared by every collector of that
// data source inside this process. Grafana creates the new instance of a data
// source before it disposes the old one (5 s later, in the SDK's instance
// manager): both use one store, the newest scrapes, and the store closes
// when the last of them is closed.
type store struct {
	uid string
	// owner is the data source the store was opened for (zero: unchecked);
	// only that one shares it.
	owner Owner
	dir   string
	db    *tsdb.DB
	lock  fileutil.Releaser
	refs  int
	// notes are what opening the store found (transient errors retried,
	// WAL records dropped by the repair, blocks quarantined, the directory
	// set aside), for the health check; lost is set when history is missing.
	notes []string
	lost  bool
	// quarantined are the blocks moved aside while open (chunkError), under checkMu.
	quarantined []string
	checkMu     sync.Mutex
	// retention is the store's retention by time: set-aside directories and
	// quarantined blocks are removed once they are older.
	retention time.Duration
	// reg holds the TSDB's own metrics (exported by storageCollector).
	reg *prometheus.Registry

	// scraper is the collector now scraping into the store.
	scraper *Collector
	// targets are the target names of the newest collector, for metric clean-up.
	targets []string
	// appendErrs is the last failed commit per job (full disk, I/O error).
	appendErrs map[string]appendFailure
	// commits is the time of the last commit carrying an up sample per job
	// (a scrape attempt, successful or not), for the staleness sweep.
	commits map[string]time.Time
	// overloaded is, per job, the timestamp (ms) of the last scrape the plugin gave up on
	// while storing its page (ErrParseTimeout): that scrape's up sample is not stored.
	overloaded map[string]int64
}

// appendFailure is a scrape whose samples could not be written.
type appendFailure struct {
	at  time.Time
	err string
}

var stores = struct {
	sync.Mutex
	m map[string]*store
}{m: map[string]*store{}}

// storeOptions configure the TSDB of a store.
type storeOptions struct {
	retention time.Duration
	maxBytes  int64
	lockWait  time.Duration
	logger    *slog.Logger
	uid       string
	// legacyDirs are store directories of older versions (LegacyStoreDirs),
	// newest layout first: the first that exists moves to the store's
	// directory when that does not exist yet.
	legacyDirs []string
	// owner, when its Org is set, is the data source the directory belongs
	// to (claimStore): checked, or written, under the directory's lock.
	owner Owner
}

// opening serialises the opening of one directory (dir → *sync.Mutex), so
// that the slow part (waiting for another process's lock, replaying the WAL)
// runs without the stores lock held.
var opening sync.Map

// acquireStore returns the store of dir, opening it on first use, with one
// more reference. A store already open takes the new retention settings.
func acquireStore(dir string, o storeOptions) (*store, error) {
	dir = filepath.Clean(dir)
	m, _ := opening.LoadOrStore(dir, &sync.Mutex{})
	mu := m.(*sync.Mutex)
	mu.Lock()
	defer mu.Unlock()
	stores.Lock()
	if s := stores.m[dir]; s != nil {
		defer stores.Unlock()
		if o.owner != s.owner {
			return nil, fmt.Errorf("collector: the store directory %s is open for organisation %d's data source %q, not for organisation %d's %q: it is not shared",
				dir, s.owner.Org, s.owner.UID, o.owner.Org, o.owner.UID)
		}
		if err := applyRetention(s.db, o.retention, o.maxBytes); err != nil {
			return nil, err
		}
		s.refs++
		return s, nil
	}
	stores.Unlock()
	s, err := openStore(dir, o)
	if err != nil {
		return nil, err
	}
	stores.Lock()
	defer stores.Unlock()
	s.refs = 1
	stores.m[dir] = s
	return s, nil
}

// release drops one reference; the last one closes the TSDB and its lock.
func (s *store) release() error {
	stores.Lock()
	defer stores.Unlock()
	s.refs--
	if s.refs > 0 {
		return nil
	}
	delete(stores.m, s.dir)
	forgetDataSource(s.uid)
	var errs []error
	if err := s.db.Close(); err != nil {
		errs = append(errs, fmt.Errorf("collector: close TSDB in %s: %w", s.dir, err))
	}
	if err := s.lock.Release(); err != nil {
		errs = append(errs, fmt.Errorf("collector: release lock of %s: %w", s.dir, err))
	}
	return errors.Join(errs...)
}

// lockPath is the lock file of a store directory. It sits beside the
// directory, so setting a corrupted directory aside keeps the lock held.
func lockPath(dir string) string { return dir + ".lock" }

// openStore takes the directory's lock (waiting up to o.lockWait while
// another process holds it), then opens the TSDB, replaying its WAL
// (openTSDB: transient errors retried, a corrupted WAL repaired, corrupted
// blocks quarantined, the directory set aside only when nothing opens).
func openStore(dir string, o storeOptions) (*store, error) {
	if o.owner.Org > 0 {
		if err := checkRoot(dir); err != nil {
			return nil, err
		}
	}
	if err := os.MkdirAll(filepath.Dir(dir), 0o750); err != nil {
		return nil, fmt.Errorf("collector: create storage directory %s: %w", filepath.Dir(dir), err)
	}
	lock, err := lockDir(dir, o.lockWait)
	if err != nil {
		if transientError(err) {
			return nil, transientErr{err}
		}
		return nil, err
	}
	s := &store{uid: o.uid, owner: o.owner, dir: dir, lock: lock, appendErrs: map[string]appendFailure{}, commits: map[string]time.Time{}, overloaded: map[string]int64{}}
	for _, legacy := range o.legacyDirs {
		moved, err := moveLegacy(legacy, dir, o.lockWait)
		if err != nil {
			_ = lock.Release()
			return nil, err
		}
		if moved {
			o.logger.Warn("store moved to its organisation's directory", "from", legacy, "to", dir)
			break
		}
	}
	if o.owner.Org > 0 {
		if err := claimStore(dir, o.owner); err != nil {
			_ = lock.Release()
			return nil, err
		}
	}
	if err := s.openTSDB(o); err != nil {
		_ = lock.Release()
		return nil, err
	}
	return s, nil
}

// moveLegacy renames the store directory of an older version (keyed by UID
// alone) to dir, keeping its blocks and WAL, when dir does not exist yet and
// legacy does. It takes legacy's lock first (waiting up to wait), so an
// older plugin process still using it is not disturbed, and removes the old
// lock file after. Which data source may take which directory is
// LegacyStoreDirs's rule.
func moveLegacy(legacy, dir string, wait time.Duration) (bool, error) {
	legacy = filepath.Clean(legacy)
	if legacy == dir {
		return false, nil
	}
	if _, err := os.Stat(dir); err == nil || !errors.Is(err, os.ErrNotExist) {
		return false, nil
	}
	if !legacyStore(legacy) {
		return false, nil
	}
	l, err := lockDir(legacy, wait)
	if err != nil {
		return false, fmt.Errorf("collector: moving the store %s to %s: %w", legacy, dir, err)
	}
	defer func() {
		_ = l.Release()
		_ = os.Remove(lockPath(legacy))
	}()
	if !legacyStore(legacy) {
		return false, nil // moved, or claimed, by another process meanwhile
	}
	if err := os.Rename(legacy, dir); err != nil {
		return false, fmt.Errorf("collector: moving the store %s to %s: %w", legacy, dir, err)
	}
	return true, nil
}

// ErrStoreLocked is wrapped by Start's error when another process holds the
// store directory's lock: a condition that may pass (the other process
// stops), so the caller should try again later rather than give up.
var ErrStoreLocked = errors.New("the store is locked by another process")

// lockedError is the sentence of a refused lock; it is ErrStoreLocked.
type lockedError struct{ msg string }

func (e lockedError) Error() string        { return e.msg }
func (e lockedError) Is(target error) bool { return target == ErrStoreLocked }

// lockDir takes an exclusive flock on lockPath(dir), retrying every 100 ms
// for up to wait while another process holds it, and writes this process's
// id into the file. The error names the directory and the holder's pid.
func lockDir(dir string, wait time.Duration) (fileutil.Releaser, error) {
	deadline := time.Now().Add(wait)
	for {
		r, _, err := fileutil.Flock(lockPath(dir))
		if err == nil {
			_ = os.WriteFile(lockPath(dir), []byte(strconv.Itoa(os.Getpid())+"\n"), 0o640)
			return r, nil
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) && !errors.Is(err, syscall.EAGAIN) {
			return nil, fmt.Errorf("collector: lock %s: %w", lockPath(dir), err)
		}
		if time.Now().After(deadline) {
			holder := "another process"
			if b, rerr := os.ReadFile(lockPath(dir)); rerr == nil && strings.TrimSpace(string(b)) != "" {
				holder = "process " + strings.TrimSpace(string(b))
			}
			return nil, lockedError{fmt.Sprintf("storage directory %s is in use by %s (waited %s): two Grafana servers or plugin processes must not share one storagePath", dir, holder, wait)}
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// diskError reports errors of the disk rather than of the data: no space,
// read-only file system, permission, quota. A directory failing with one is
// kept as it is.
func diskError(err error) bool {
	for _, e := range []error{syscall.ENOSPC, syscall.EROFS, syscall.EACCES, syscall.EPERM, syscall.EDQUOT, syscall.EIO} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}

// tsdbOptions are Prometheus's defaults with: a write-ahead log (Snappy
// compressed, as Prometheus's own default), retention by time and by size
// (maxBytes; 0 means none), the lock file off (lockDir holds a lock beside
// the directory), and block ranges as Prometheus chooses them: head blocks of
// 2 h (a third of the retention when it is shorter, for short test
// retentions), compacted up to a tenth of the retention (at most 31 d).
func tsdbOptions(retention time.Duration, maxBytes int64) *tsdb.Options {
	o := tsdb.DefaultOptions()
	o.WALCompression = compression.Snappy
	o.RetentionDuration = retention.Milliseconds()
	o.MaxBytes = maxBytes
	o.NoLockfile = true
	o.SamplesPerChunk = samplesPerChunk
	minBlock := min(retention/3, 2*time.Hour)
	minBlock = max(minBlock, time.Minute).Truncate(time.Minute)
	maxBlock := min(retention/10, 31*24*time.Hour)
	maxBlock = max(maxBlock, minBlock).Truncate(minBlock)
	o.BlockReloadInterval = blockReload
	o.MinBlockDuration = minBlock.Milliseconds()
	o.MaxBlockDuration = maxBlock.Milliseconds()
	return o
}

// samplesPerChunk is the TSDB's target of samples per head chunk (Prometheus: 120, a chunk
// cut every 30 min at 15 s). Every series' open chunk is an in-heap byte slice that grows by
// doubling until the chunk is cut, and a fleet's open chunks fill and are cut together, so
// the open chunks' size sets the heap's peak; 60 (15 min at 15 s) lowered the peak a series
// costs over a 4 h head cycle by 6–10 % and its mean by 2–5 % (TestHeadCycleHeap), at the
// cost of twice the memory-mapped chunk references and chunks per series, a little more
// disk (docs/performance.md, "Issue 34, fourth round"). Queries read the same samples.
const samplesPerChunk = 60

// blockReload is how often the TSDB reloads its blocks from disk (Prometheus: every
// minute): a block quarantined while open leaves the store's queries within it.
const blockReload = 10 * time.Second

// applyRetention updates an open TSDB's retention by time and size.
func applyRetention(db *tsdb.DB, retention time.Duration, maxBytes int64) error {
	return db.ApplyConfig(retentionConfig(retention, maxBytes))
}

// recordAppend remembers the outcome of one commit for job: a failure is
// kept until a later commit of the same job succeeds.
func (s *store) recordAppend(job string, err error) {
	stores.Lock()
	defer stores.Unlock()
	s.commits[job] = time.Now()
	if err == nil {
		delete(s.appendErrs, job)
		return
	}
	s.appendErrs[job] = appendFailure{at: time.Now(), err: err.Error()}
}

// markOverloaded records that the scrape of job at t (ms) was given up while its page was
// stored (ErrParseTimeout).
func (s *store) markOverloaded(job string, t int64) {
	stores.Lock()
	defer stores.Unlock()
	s.overloaded[job] = t
}

// wasOverloaded reports whether the scrape of job at t (ms) was given up while its page was
// stored.
func (s *store) wasOverloaded(job string, t int64) bool {
	stores.Lock()
	defer stores.Unlock()
	at, ok := s.overloaded[job]
	return ok && at == t
}

// appendFailure returns the last unrecovered commit failure of job.
func (s *store) appendFailure(job string) (appendFailure, bool) {
	stores.Lock()
	defer stores.Unlock()
	f, ok := s.appendErrs[job]
	return f, ok
}

// storeDirSize is the bytes of every file under dir (blocks, WAL, head chunks).
func storeDirSize(dir string) int64 {
	n, _ := fileutil.DirSize(dir)
	return n
}

// retentionConfig is the part of a Prometheus configuration that
// tsdb.DB.ApplyConfig reads for retention.
func retentionConfig(retention time.Duration, maxBytes int64) *config.Config {
	return &config.Config{StorageConfig: config.StorageConfig{TSDBConfig: &config.TSDBConfig{
		Retention: &config.TSDBRetentionConfig{Time: model.Duration(retention), Size: units.Base2Bytes(maxBytes)},
	}}}
}
