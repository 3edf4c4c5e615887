package catalog

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/textparse"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const corpusDir = "../../../shared/corpus"

// corpusFiles returns the corpus pages, skipping the test when the shared corpus is absent.
func corpusFiles(t *testing.T) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(corpusDir, "*.prom"))
	if err != nil || len(files) == 0 {
		t.Skipf("corpus not found at %s", corpusDir)
	}
	sort.Strings(files)
	return files
}

// pageNames parses an exposition page with Prometheus's own text parser (as the scrape loop
// does) and returns the distinct sample names and the family names from HELP/TYPE lines, up to
// the first parse error, which is returned (never a panic).
func pageNames(b []byte) (samples, families []string, err error) {
	p := textparse.NewPromParser(b, labels.NewSymbolTable(), false)
	seenS, seenF := map[string]bool{}, map[string]bool{}
	var lset labels.Labels
	for {
		et, err := p.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return samples, families, err
		}
		switch et {
		case textparse.EntryType:
			n, _ := p.Type()
			if !seenF[string(n)] {
				seenF[string(n)] = true
				families = append(families, string(n))
			}
		case textparse.EntryHelp:
			n, _ := p.Help()
			if !seenF[string(n)] {
				seenF[string(n)] = true
				families = append(families, string(n))
			}
		case textparse.EntrySeries:
			p.Labels(&lset)
			n := lset.Get(model.MetricNameLabel)
			if !seenS[n] {
				seenS[n] = true
				samples = append(samples, n)
			}
		}
	}
	return samples, families, nil
}

// engineFromFileName reads the engine a corpus file name announces.
func engineFromFileName(name string) Engine {
	prefixes := []struct {
		p string
		e Engine
	}{{"vllm-", EngineVLLM}, {"sglang-", EngineSGLang}, {"tgi-", EngineTGI}, {"llamacpp-", EngineLlamaCpp},
		{"trtllm-", EngineTRTLLM}, {"triton-", EngineTriton}, {"dcgm-", EngineDCGM}}
	for _, x := range prefixes {
		if strings.HasPrefix(name, x.p) {
			return x.e
		}
	}
	return EngineUnknown
}

func TestCorpusParsesAndDetects(t *testing.T) {
	for _, f := range corpusFiles(t) {
		base := filepath.Base(f)
		t.Run(base, func(t *testing.T) {
			b, err := os.ReadFile(f)
			require.NoError(t, err)
			var samples, families []string
			var perr error
			require.NotPanics(t, func() { samples, families, perr = pageNames(b) })
			if perr != nil {
				// A clear error: it names the position or the offending token.
				assert.NotEmpty(t, perr.Error())
				t.Logf("parse error (expected for elided pages): %v", perr)
			}
			want := engineFromFileName(base)
			require.NotEqual(t, EngineUnknown, want, "corpus file name does not announce an engine")
			d := Detect(append(append([]string{}, samples...), families...))
			assert.Equal(t, want, d.Engine, "evidence: %v", d.Evidence)
			t.Logf("%s: %+v", base, d)
		})
	}
}
