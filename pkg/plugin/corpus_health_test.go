package plugin

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/inferscope/inferscope-llm-datasource/pkg/catalog"
	"github.com/inferscope/inferscope-llm-datasource/pkg/settings"
)

// pageSignals is the independent side of TestHealthExportsCorpusPages: the
// sample names are read from the page's lines (the text before `{` or the
// first blank of every non-comment line, not the scrape parser the probe
// uses), and a signal counts as on the page when one of the metrics the
// catalogue names for it (for the engine and version those names show) has
// samples there: a histogram by its _bucket lines, a counter or gauge by
// its own name.
func pageSignals(page []byte) []string {
	has := map[string]bool{}
	var names []string
	for _, line := range strings.Split(string(page), "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		end := strings.IndexAny(line, "{ \t")
		if end <= 0 {
			continue
		}
		n := line[:end]
		if !has[n] {
			has[n] = true
			names = append(names, n)
		}
	}
	d := catalog.Detect(names)
	var out []string
	for _, s := range catalog.AllSignals {
		for _, m := range catalog.LookupFor(d, s).Metrics {
			n := m.Name
			if m.Kind == catalog.KindHistogram {
				n += "_bucket"
			}
			if has[n] {
				out = append(out, string(s))
				break
			}
		}
	}
	sort.Strings(out)
	return out
}

// dropElisions removes the "..." lines with which documentation excerpts
// mark elided parts: a scrape refuses a page carrying them, and they carry
// no family.
func dropElisions(page []byte) []byte {
	var keep []string
	for _, line := range strings.Split(string(page), "\n") {
		t := strings.TrimSpace(line)
		if strings.HasPrefix(t, "...") || strings.HasPrefix(t, "…") {
			continue
		}
		keep = append(keep, line)
	}
	return []byte(strings.Join(keep, "\n"))
}

// TestHealthExportsCorpusPages: for every page of the shared corpus, what
// Save & test says a target exports is the set of signals whose families
// are on the page. Skipped when the corpus is absent.
func TestHealthExportsCorpusPages(t *testing.T) {
	files, _ := filepath.Glob("../../../shared/corpus/*.prom")
	if len(files) == 0 {
		t.Skip("shared corpus not found")
	}
	compared, failed := 0, 0
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			page, err := os.ReadFile(f)
			require.NoError(t, err)
			page = dropElisions(page)
			want := pageSignals(page)
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
				w.Header().Set("Content-Type", "text/plain; version=0.0.4")
				_, _ = w.Write(page)
			}))
			defer srv.Close()
			st, err := settings.Load([]byte(`{"targets":[{"name":"page","url":"`+srv.URL+`/metrics"}]}`), nil)
			require.NoError(t, err)
			inst := newInstanceForTest(st, nil)
			h := inst.probe(context.Background(), "page", "target")
			if !h.OK {
				// Only a page without any engine family may fail.
				require.Empty(t, want, "health failed (%s) on a page with signals", h.Error)
				failed++
				return
			}
			got := slices.Clone(h.Exported)
			sort.Strings(got)
			assert.Equal(t, want, got, "engine %s %s %s", h.Engine, h.Generation, h.Version)
			compared++
		})
	}
	t.Logf("%d of %d pages compared, %d without an engine family", compared, len(files), failed)
	assert.Equal(t, len(files), compared+failed)
}
