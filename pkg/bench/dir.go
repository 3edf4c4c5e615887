package bench

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// NameRE restricts a baseline's name (its file name without extension) to
// letters, digits, '_', '.', '-' (1-100 characters): safe as a file name and
// as a query field.
var NameRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]{0,99}$`)

// Dir is what a baselines directory holds: the baselines read, by name
// (a GuideLLM report with several benchmarks gives "<name>#<i>"), and one
// sentence per file that could not be read. A bad file never hides the others.
type Dir struct {
	Baselines map[string]Baseline
	Problems  []string
}

// ReadDir reads every *.json file at the top of fsys (os.DirFS of the
// settings' baselinesPath). Names are the file names without ".json".
// It parses every file at every call; Cache.Read keeps what it parsed.
func ReadDir(fsys fs.FS) Dir {
	return readDir(fsys, func(name string, _ fs.FileInfo) ([]Baseline, error) {
		data, err := fs.ReadFile(fsys, name)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		return Parse(NameFromPath(name), data)
	})
}

// readDir lists fsys and hands each usable *.json file to parse; the file's
// error (a sentence starting with its name) becomes one of the Problems.
func readDir(fsys fs.FS, parse func(name string, info fs.FileInfo) ([]Baseline, error)) Dir {
	d := Dir{Baselines: map[string]Baseline{}}
	entries, err := fs.ReadDir(fsys, ".")
	if err != nil {
		d.Problems = append(d.Problems, fmt.Sprintf("the baselines directory cannot be read: %v", err))
		return d
	}
	for _, e := range entries {
		if e.IsDir() || !strings.HasSuffix(strings.ToLower(e.Name()), ".json") {
			continue
		}
		name := NameFromPath(e.Name())
		if !NameRE.MatchString(name) {
			d.Problems = append(d.Problems, fmt.Sprintf("%s: the file name is not a usable baseline name (letters, digits, '_', '.', '-')", e.Name()))
			continue
		}
		info, err := e.Info()
		if err != nil {
			d.Problems = append(d.Problems, fmt.Sprintf("%s: %v", e.Name(), err))
			continue
		}
		if info.Size() > MaxFileSize {
			d.Problems = append(d.Problems, fmt.Sprintf("%s: larger than %d MiB", e.Name(), MaxFileSize>>20))
			continue
		}
		bs, err := parse(e.Name(), info)
		if err != nil {
			d.Problems = append(d.Problems, err.Error())
			continue
		}
		for _, b := range bs {
			d.Baselines[b.Name] = b
		}
	}
	sort.Strings(d.Problems)
	return d
}

// Names returns the baselines' names, sorted.
func (d Dir) Names() []string {
	out := make([]string, 0, len(d.Baselines))
	for n := range d.Baselines {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// OrgDir is the folder of root (a data source's baselinesPath) that holds
// the baselines uploaded in Grafana organisation org: root/org-<org>. An org
// below 1 (a request without plugin context) is organisation 1, Grafana's
// default.
func OrgDir(root string, org int64) string {
	if org < 1 {
		org = 1
	}
	return filepath.Join(root, "org-"+strconv.FormatInt(org, 10))
}

// DefaultCacheFiles is how many parsed files a Cache made by NewCache keeps.
const DefaultCacheFiles = 4096

// Cache keeps the baselines parsed from each file, keyed by the file's
// path, size and modification time, so listing a directory and answering
// benchmark queries read the directory (one stat per file) instead of
// parsing every file again. Concurrent readers of one unparsed file wait for
// one parse. It holds at most its capacity of files; past that the entries
// not seen for longest go. Safe for concurrent use.
type Cache struct {
	mu    sync.Mutex
	files map[string]*cacheEntry
	max   int
	tick  uint64
	// parses and hits count the files parsed and the files answered from the cache.
	parses, hits atomic.Int64
}

type cacheEntry struct {
	size int64
	mod  time.Time
	seen uint64
	done chan struct{}
	bs   []Baseline
	err  error
}

// NewCache returns a Cache holding at most maxFiles parsed files
// (DefaultCacheFiles when maxFiles < 1).
func NewCache(maxFiles int) *Cache {
	if maxFiles < 1 {
		maxFiles = DefaultCacheFiles
	}
	return &Cache{files: map[string]*cacheEntry{}, max: maxFiles}
}

// Parses is the number of files the cache has parsed (its misses).
func (c *Cache) Parses() int64 { return c.parses.Load() }

// Hits is the number of files the cache answered without parsing.
func (c *Cache) Hits() int64 { return c.hits.Load() }

// Read is ReadDir over the directory dir, parsing only the files whose
// size or modification time changed since the cache last parsed them.
func (c *Cache) Read(dir string) Dir {
	fsys := os.DirFS(dir)
	return readDir(fsys, func(name string, info fs.FileInfo) ([]Baseline, error) {
		return c.file(fsys, filepath.Join(dir, name), name, info)
	})
}

func (c *Cache) file(fsys fs.FS, key, name string, info fs.FileInfo) ([]Baseline, error) {
	c.mu.Lock()
	c.tick++
	if e, ok := c.files[key]; ok && e.size == info.Size() && e.mod.Equal(info.ModTime()) {
		e.seen = c.tick
		c.mu.Unlock()
		<-e.done
		c.hits.Add(1)
		return e.bs, e.err
	}
	e := &cacheEntry{size: info.Size(), mod: info.ModTime(), seen: c.tick, done: make(chan struct{})}
	c.files[key] = e
	c.evictLocked()
	c.mu.Unlock()
	c.parses.Add(1)
	data, err := fs.ReadFile(fsys, name)
	if err != nil {
		e.err = fmt.Errorf("%s: %w", name, err)
	} else {
		e.bs, e.err = Parse(NameFromPath(name), data)
	}
	close(e.done)
	return e.bs, e.err
}

// evictLocked drops the entries seen longest ago until the cache holds at
// most its capacity. A dropped entry being parsed still answers its waiters.
func (c *Cache) evictLocked() {
	for len(c.files) > c.max {
		var oldest string
		var at uint64
		first := true
		for k, e := range c.files {
			if first || e.seen < at {
				oldest, at, first = k, e.seen, false
			}
		}
		delete(c.files, oldest)
	}
}

// Len is the number of files the cache holds.
func (c *Cache) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.files)
}

// ReadOrg reads what a data source of organisation org sees under root (its
// baselinesPath): the files an operator placed at the top of root, then the
// organisation's uploads in OrgDir(root, org), which win over a top-level
// file of the same name. A missing organisation folder is no problem (no
// uploads yet).
func (c *Cache) ReadOrg(root string, org int64) Dir {
	d := c.Read(root)
	od := OrgDir(root, org)
	if _, err := os.Stat(od); err != nil {
		return d
	}
	o := c.Read(od)
	for n, b := range o.Baselines {
		d.Baselines[n] = b
	}
	rel := filepath.Base(od) + "/"
	for _, p := range o.Problems {
		d.Problems = append(d.Problems, rel+p)
	}
	sort.Strings(d.Problems)
	return d
}
