package collect

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/tsdb"
	"github.com/prometheus/prometheus/tsdb/chunkenc"
	"github.com/prometheus/prometheus/tsdb/fileutil"
)

// Opening a store, as Prometheus itself would: an error that may pass (too
// many open files, no memory) is retried; a corrupted write-ahead log is
// repaired by the TSDB (it drops the records from the corruption on, and
// counts it in prometheus_tsdb_wal_corruptions_total), and what was dropped
// is said; a block that cannot be opened is moved to <dir>.quarantine/ and
// the rest opens; the whole directory is set aside only when it still
// cannot be opened. Set-aside directories and quarantined blocks count
// against retentionSize and are removed once older than the retention.

// Transient retries of tsdb.Open: openTries attempts, the wait doubling from
// openBackoff (0.2 + 0.4 + 0.8 + 1.6 s).
const (
	openTries   = 5
	openBackoff = 200 * time.Millisecond
)

// ErrStoreTransient is wrapped by Start's error when the store could not be
// opened for a reason that may pass (too many open files, no memory) after
// retries: the caller should try again later; nothing was set aside.
var ErrStoreTransient = errors.New("the store could not be opened for now")

// transientError reports errors of the moment rather than of the data:
// descriptors or memory exhausted, a busy resource, an interrupted call.
func transientError(err error) bool {
	for _, e := range []error{syscall.EMFILE, syscall.ENFILE, syscall.ENOMEM, syscall.EAGAIN, syscall.EINTR, syscall.EBUSY} {
		if errors.Is(err, e) {
			return true
		}
	}
	// Some paths lose the errno and keep its text.
	msg := err.Error()
	return strings.Contains(msg, "too many open files") || strings.Contains(msg, "cannot allocate memory")
}

// transientErr is the error of a store that stayed unopenable after the
// retries; it is ErrStoreTransient.
type transientErr struct{ err error }

func (e transientErr) Error() string {
	return fmt.Sprintf("opening the store failed %d times over %s with an error that may pass (%v); nothing was set aside", openTries, openWait(), e.err)
}
func (e transientErr) Unwrap() error        { return e.err }
func (e transientErr) Is(target error) bool { return target == ErrStoreTransient }

func openWait() time.Duration {
	var d time.Duration
	for k := 0; k < openTries-1; k++ {
		d += openBackoff << k
	}
	return d
}

// corruptedBlockRE finds the blocks named in tsdb.Open's error.
var corruptedBlockRE = regexp.MustCompile(`corrupted block ([0-9A-HJKMNP-TV-Z]{26})`)

// chunkErrorRE recognises a query's chunk read error ("cannot populate chunk 8 from block
// …: checksum mismatch …", Prometheus's wording; the block id it names is not filled in).
var chunkErrorRE = regexp.MustCompile(`cannot populate chunk \d+ from block`)

// chunkCheckLookback is how far before a query's start its range selectors may read (the
// longest rate window a query may ask for).
const chunkCheckLookback = 31 * 24 * time.Hour

// chunkError handles a query error caused by a block whose chunks cannot be read (a block
// opens on its index alone; its chunks are read, and their checksums checked, by queries):
// the blocks overlapping [mint, maxt] are read through, and each that fails is moved to the
// quarantine directory at once (its open files stay valid); the TSDB drops it at its next
// block reload (every blockReload), the health check says what is missing, and the query's
// error says to retry. Other errors pass unchanged.
func (s *store) chunkError(err error, mint, maxt time.Time) error {
	if err == nil || !chunkErrorRE.MatchString(err.Error()) {
		return err
	}
	s.checkMu.Lock()
	defer s.checkMu.Unlock()
	var moved []string
	for _, b := range s.db.Blocks() {
		meta := b.Meta()
		id := meta.ULID.String()
		if meta.MaxTime < mint.UnixMilli() || meta.MinTime > maxt.UnixMilli() || slices.Contains(s.quarantined, id) {
			continue
		}
		if cerr := readThrough(b); cerr != nil {
			s.quarantined = append(s.quarantined, id)
			s.quarantineBlock(id, cerr)
			moved = append(moved, filepath.Join(quarantineDir(s.dir), id))
		}
	}
	if len(moved) == 0 {
		return err
	}
	return fmt.Errorf("a block of the stored history has unreadable chunks (%w); it was moved to %s and leaves the store within %s: retry the query", err, strings.Join(moved, ", "), blockReload)
}

// readThrough reads every sample of every series of block b and returns the first error.
func readThrough(b *tsdb.Block) error {
	meta := b.Meta()
	q, err := tsdb.NewBlockQuerier(b, meta.MinTime, meta.MaxTime)
	if err != nil {
		return err
	}
	defer q.Close()
	ss := q.Select(context.Background(), false, nil, labels.MustNewMatcher(labels.MatchRegexp, model.MetricNameLabel, ".+"))
	var it chunkenc.Iterator
	for ss.Next() {
		it = ss.At().Iterator(it)
		for it.Next() != chunkenc.ValNone {
		}
		if err := it.Err(); err != nil {
			return err
		}
	}
	return ss.Err()
}

// quarantineBlock moves block id to the quarantine directory and says what it held.
func (s *store) quarantineBlock(id string, cause error) {
	src := filepath.Join(s.dir, id)
	what := blockContents(src)
	q := quarantineDir(s.dir)
	if err := os.MkdirAll(q, 0o750); err != nil {
		return
	}
	dst := filepath.Join(q, id)
	if err := os.Rename(src, dst); err != nil {
		return
	}
	now := time.Now()
	_ = os.Chtimes(dst, now, now)
	stores.Lock()
	s.lost = true
	s.notes = append(s.notes, fmt.Sprintf("Block %s had unreadable chunks (%v) and was moved to %s: %s are missing.", id, cause, dst, what))
	stores.Unlock()
}

// blockContents says what block dir held, from its meta.json.
func blockContents(dir string) string {
	var meta tsdb.BlockMeta
	if b, err := os.ReadFile(filepath.Join(dir, "meta.json")); err == nil && json.Unmarshal(b, &meta) == nil {
		return fmt.Sprintf("%d samples of %d series from %s to %s", meta.Stats.NumSamples, meta.Stats.NumSeries,
			time.UnixMilli(meta.MinTime).UTC().Format(time.RFC3339), time.UnixMilli(meta.MaxTime).UTC().Format(time.RFC3339))
	}
	return "its time range"
}

// quarantineDir is where the unreadable blocks of the store in dir go.
func quarantineDir(dir string) string { return dir + ".quarantine" }

// openTSDB opens s.dir's TSDB into s.db (see the comment at the top).
func (s *store) openTSDB(o storeOptions) error {
	dir := s.dir
	s.retention = o.retention
	s.removeExpired(time.Now())
	opts := tsdbOptions(o.retention, s.budget(o.maxBytes))
	walBefore, _ := fileutil.DirSize(filepath.Join(dir, "wal"))
	logger := o.logger.With("component", "tsdb")
	transient := 0
	for attempt := 0; ; attempt++ {
		reg := prometheus.NewRegistry()
		db, err := tsdb.Open(dir, logger, reg, opts, nil)
		if err == nil {
			s.db, s.reg = db, reg
			break
		}
		switch {
		case transientError(err):
			transient++
			if transient >= openTries {
				return transientErr{err}
			}
			o.logger.Warn("opening the TSDB failed with an error that may pass; retrying", "dir", dir, "error", err, "try", transient)
			time.Sleep(openBackoff << (transient - 1))
			continue
		case diskError(err):
			return fmt.Errorf("collector: open TSDB in %s: %w", dir, err)
		}
		if attempt < 20 {
			if n := s.quarantineBlocks(err); n > 0 {
				continue
			}
		}
		aside := dir + ".corrupted-" + time.Now().UTC().Format("20060102T150405Z")
		if rerr := os.Rename(dir, aside); rerr != nil {
			return fmt.Errorf("collector: open TSDB in %s: %w (and setting it aside failed: %v)", dir, err, rerr)
		}
		now := time.Now()
		_ = os.Chtimes(aside, now, now)
		s.lost = true
		s.notes = append(s.notes, fmt.Sprintf("The stored history could not be opened (%v); it was set aside as %s and a fresh store was started.", err, aside))
		o.logger.Warn("TSDB directory set aside", "dir", dir, "aside", aside, "error", err)
		reg = prometheus.NewRegistry()
		if s.db, err = tsdb.Open(dir, logger, reg, opts, nil); err != nil {
			return fmt.Errorf("collector: open a fresh TSDB in %s: %w", dir, err)
		}
		s.reg = reg
		break
	}
	if transient > 0 {
		s.notes = append(s.notes, fmt.Sprintf("Opening the store failed %d time(s) with an error that may pass (too many open files, no memory) and was retried; it then opened with its history.", transient))
	}
	if n := counterValue(s.reg, "prometheus_tsdb_wal_corruptions_total"); n > 0 {
		walAfter, _ := fileutil.DirSize(filepath.Join(dir, "wal"))
		s.lost = true
		s.notes = append(s.notes, fmt.Sprintf("The write-ahead log was corrupted; the TSDB repaired it by dropping everything from the corruption on (%d bytes of %d): the samples of the last scrapes before the restart are missing.", max(walBefore-walAfter, 0), walBefore))
		o.logger.Warn("TSDB write-ahead log repaired", "dir", dir, "droppedBytes", walBefore-walAfter)
	}
	return nil
}

// quarantineBlocks moves the blocks that err names as corrupted to
// quarantineDir and says what each held; it returns how many moved.
func (s *store) quarantineBlocks(err error) int {
	moved := 0
	for _, m := range corruptedBlockRE.FindAllStringSubmatch(err.Error(), -1) {
		id := m[1]
		src := filepath.Join(s.dir, id)
		if _, serr := os.Stat(src); serr != nil {
			continue
		}
		what := "its time range"
		var meta tsdb.BlockMeta
		if b, merr := os.ReadFile(filepath.Join(src, "meta.json")); merr == nil && json.Unmarshal(b, &meta) == nil {
			what = fmt.Sprintf("%d samples of %d series from %s to %s", meta.Stats.NumSamples, meta.Stats.NumSeries,
				time.UnixMilli(meta.MinTime).UTC().Format(time.RFC3339), time.UnixMilli(meta.MaxTime).UTC().Format(time.RFC3339))
		}
		q := quarantineDir(s.dir)
		if merr := os.MkdirAll(q, 0o750); merr != nil {
			return moved
		}
		dst := filepath.Join(q, id)
		if merr := os.Rename(src, dst); merr != nil {
			return moved
		}
		now := time.Now()
		_ = os.Chtimes(dst, now, now)
		moved++
		s.lost = true
		s.notes = append(s.notes, fmt.Sprintf("Block %s could not be read (%s) and was moved to %s: %s are missing.", id, blockReason(err, id), dst, what))
	}
	return moved
}

// blockReason is the part of err about block id.
func blockReason(err error, id string) string {
	for _, line := range strings.Split(err.Error(), "\n") {
		if _, after, ok := strings.Cut(line, "corrupted block "+id+":"); ok {
			return strings.TrimSpace(after)
		}
		if _, after, ok := strings.Cut(line, "from block "+id+":"); ok {
			return strings.TrimSpace(after)
		}
	}
	return err.Error()
}

// asidePaths returns the set-aside directories (<dir>.corrupted-*) and
// quarantined blocks (<dir>.quarantine/*) of the store in dir.
// The directory is a literal prefix: storagePath may hold glob
// metacharacters ('[', '*'), which must neither hide a store's own set-aside
// data nor reach another store's.
func asidePaths(dir string) []string {
	out, _ := filepath.Glob(globEscape(dir) + ".corrupted-*")
	q, _ := filepath.Glob(filepath.Join(globEscape(quarantineDir(dir)), "*"))
	return append(out, q...)
}

// globEscape makes p match itself only in filepath.Match: every
// metacharacter ('*', '?', '[', and '\\' where it escapes) behind a backslash.
func globEscape(p string) string {
	var b strings.Builder
	for _, r := range p {
		switch r {
		case '*', '?', '[', ']', '\\':
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}

// removeExpired deletes set-aside directories and quarantined blocks older
// than the retention (by the time they were set aside).
func (s *store) removeExpired(now time.Time) {
	if s.retention <= 0 {
		return
	}
	for _, p := range asidePaths(s.dir) {
		if fi, err := os.Stat(p); err == nil && now.Sub(fi.ModTime()) > s.retention {
			_ = os.RemoveAll(p)
		}
	}
	_ = os.Remove(quarantineDir(s.dir)) // only when empty
}

// asideBytes is the size of every set-aside directory and quarantined block.
func asideBytes(dir string) int64 {
	var n int64
	for _, p := range asidePaths(dir) {
		b, _ := fileutil.DirSize(p)
		n += b
	}
	return n
}

// budget is the TSDB's size retention once the set-aside data is counted:
// retentionSize less what is set aside (at least 1 MiB; 0 means none).
func (s *store) budget(maxBytes int64) int64 {
	if maxBytes <= 0 {
		return maxBytes
	}
	return max(maxBytes-asideBytes(s.dir), 1<<20)
}

// health returns the store's notes and whether history is missing: notes
// from the opening, plus every set-aside directory or quarantined block
// still kept (expired ones are removed first).
func (s *store) health() (string, bool) {
	stores.Lock()
	notes, lost := append([]string(nil), s.notes...), s.lost
	stores.Unlock()
	s.removeExpired(time.Now())
	for _, p := range asidePaths(s.dir) {
		fi, err := os.Stat(p)
		if err != nil {
			continue
		}
		b, _ := fileutil.DirSize(p)
		lost = true
		notes = append(notes, fmt.Sprintf("%s (%.1f MiB, counted in retentionSize) holds history that is not read; it is removed after the retention, on %s, or delete it to acknowledge.",
			p, float64(b)/(1<<20), fi.ModTime().Add(s.retention).UTC().Format("2006-01-02")))
	}
	return strings.Join(notes, " "), lost
}

// counterValue is the sum of a counter family in reg (0 when absent).
func counterValue(reg *prometheus.Registry, name string) float64 {
	if reg == nil {
		return 0
	}
	mfs, err := reg.Gather()
	if err != nil {
		return 0
	}
	var v float64
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			v += counterOf(m)
		}
	}
	return v
}

func counterOf(m *dto.Metric) float64 {
	if c := m.GetCounter(); c != nil {
		return c.GetValue()
	}
	return 0
}
