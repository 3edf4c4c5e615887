package archtest

import (
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
)

const module = "github.com/inferscope/inferscope-llm-datasource/"

// layers ranks the packages of the plugin binary, lowest first: a package may import only
// packages of a lower rank (the analysis packages may also import one another, acyclically,
// as Go enforces). Data flows one way: settings, store and source → catalogue → collector →
// analysis → read layer (fetch) and frames → query types → SDK edge → main.
var layers = map[string]int{
	"pkg/bench":    -1, // benchmark result formats: a leaf that settings embeds
	"pkg/settings": 0, "pkg/hist": 0, "pkg/source": 0, "pkg/redact": 0, "pkg/bounds": 0,
	"pkg/enginemodel": 0, // the vLLM engine model the simulator and the twin share: pure, no I/O
	"pkg/catalog":     1,
	"pkg/collect":     2, "pkg/analysis": 2,
	"pkg/analysis/*": 3,
	"pkg/twin":       3, // the calibrated capacity twin over pkg/enginemodel
	"pkg/fetch":      4, "pkg/frames": 4,
	"pkg/queries": 5,
	"pkg/plugin":  6,
	"pkg":         7, // the plugin binary's main package
}

// rank returns a package's layer, and whether it has one.
func rank(pkg string) (int, bool) {
	if r, ok := layers[pkg]; ok {
		return r, true
	}
	if strings.HasPrefix(pkg, "pkg/analysis/") {
		return layers["pkg/analysis/*"], true
	}
	return 0, false
}

// imports parses the import lines of every non-test Go file under pkg/ and returns, per
// package directory (relative to the module root), the module's packages it imports.
func imports(t *testing.T) map[string][]string {
	t.Helper()
	root := filepath.Join("..", "..")
	out := map[string][]string{}
	err := filepath.WalkDir(filepath.Join(root, "pkg"), func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return err
		}
		f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.ImportsOnly)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, filepath.Dir(path))
		rel = filepath.ToSlash(rel)
		if _, ok := out[rel]; !ok {
			out[rel] = nil
		}
		for _, im := range f.Imports {
			p, _ := strconv.Unquote(im.Path.Value)
			if dep, ok := strings.CutPrefix(p, module); ok && !slices.Contains(out[rel], dep) {
				out[rel] = append(out[rel], dep)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestNoPackageImportsOneAboveIt(t *testing.T) {
	graph := imports(t)
	for _, must := range []string{"pkg/plugin", "pkg/queries", "pkg/fetch", "pkg/frames", "pkg/catalog"} {
		if _, ok := graph[must]; !ok {
			t.Fatalf("%s not found: is the test run from pkg/archtest?", must)
		}
	}
	for pkg, deps := range graph {
		r, ok := rank(pkg)
		if !ok {
			continue // gpu, sim and the binaries under pkg/cmd are not part of the plugin's layers
		}
		for _, dep := range deps {
			dr, ok := rank(dep)
			if !ok {
				t.Errorf("%s imports %s, which is not in the plugin's layers", pkg, dep)
				continue
			}
			sameAnalysis := strings.HasPrefix(pkg, "pkg/analysis/") && strings.HasPrefix(dep, "pkg/analysis/")
			if dr > r || (dr == r && !sameAnalysis) {
				t.Errorf("%s (layer %d) imports %s (layer %d): a package may import only lower layers", pkg, r, dep, dr)
			}
		}
	}
}

func TestPluginNeverLinksGPUAgentOrSimulator(t *testing.T) {
	graph := imports(t)
	seen := map[string]bool{}
	var walk func(p string)
	walk = func(p string) {
		if seen[p] {
			return
		}
		seen[p] = true
		for _, d := range graph[p] {
			walk(d)
		}
	}
	walk("pkg")
	for p := range seen {
		if p == "pkg/gpu" || p == "pkg/sim" || p == "pkg/probe" || p == "pkg/ollamatest" || strings.HasPrefix(p, "pkg/gpu/") || strings.HasPrefix(p, "pkg/sim/") {
			t.Errorf("the plugin binary links %s", p)
		}
	}
	if !seen["pkg/plugin"] || !seen["pkg/fetch"] {
		t.Fatalf("the plugin binary's import graph looks incomplete: %v", seen)
	}
}

// TestEngineModelDoesNoIO keeps pkg/enginemodel, the part of the simulator the plugin links
// through the capacity twin, free of I/O and of the simulator's serving code: its non-test
// files import only the standard library's computational packages, no network, file system,
// Prometheus client or other package of the module.
func TestEngineModelDoesNoIO(t *testing.T) {
	allowed := []string{"container/heap", "errors", "fmt", "math", "math/rand/v2", "slices", "sort", "sync", "time"}
	dir := filepath.Join("..", "enginemodel")
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), ".go") || strings.HasSuffix(e.Name(), "_test.go") {
			continue
		}
		n++
		f, err := parser.ParseFile(token.NewFileSet(), filepath.Join(dir, e.Name()), nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, im := range f.Imports {
			p, _ := strconv.Unquote(im.Path.Value)
			if !slices.Contains(allowed, p) {
				t.Errorf("pkg/enginemodel/%s imports %s: the engine model does no I/O and links nothing but computation", e.Name(), p)
			}
		}
	}
	if n == 0 {
		t.Fatal("pkg/enginemodel has no Go file: is the test run from pkg/archtest?")
	}
}
