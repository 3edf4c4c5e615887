package bench

import (
	"fmt"
	"io/fs"
	"regexp"
	"sort"
	"strings"
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
func ReadDir(fsys fs.FS) Dir {
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
		if err == nil && info.Size() > MaxFileSize {
			d.Problems = append(d.Problems, fmt.Sprintf("%s: larger than %d MiB", e.Name(), MaxFileSize>>20))
			continue
		}
		data, err := fs.ReadFile(fsys, e.Name())
		if err != nil {
			d.Problems = append(d.Problems, fmt.Sprintf("%s: %v", e.Name(), err))
			continue
		}
		bs, err := Parse(name, data)
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
