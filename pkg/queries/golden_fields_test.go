package queries

import (
	"encoding/json"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
)

// goldenFrames reads the frames of one golden file: the JSON after the
// comment header experimental.CheckGoldenJSONResponse writes.
func goldenFrames(t *testing.T, path string) []goldenFrameSchema {
	t.Helper()
	raw, err := os.ReadFile(filepath.Clean(path))
	if err != nil {
		t.Fatal(err)
	}
	var body []string
	for _, l := range strings.Split(string(raw), "\n") {
		if !strings.HasPrefix(l, "//") {
			body = append(body, l)
		}
	}
	var resp struct {
		Frames []struct {
			Schema goldenFrameSchema `json:"schema"`
		} `json:"frames"`
	}
	if err := json.Unmarshal([]byte(strings.Join(body, "\n")), &resp); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	out := make([]goldenFrameSchema, len(resp.Frames))
	for i, f := range resp.Frames {
		out[i] = f.Schema
	}
	return out
}

// goldenFrameSchema is the part of a frame's schema the field-name test reads.
type goldenFrameSchema struct {
	Name   string `json:"name"`
	Fields []struct {
		Name   string            `json:"name"`
		Labels map[string]string `json:"labels"`
	} `json:"fields"`
}

// fieldIdentity is how Grafana tells a frame's fields apart: the name, and
// for the fields of a wide time-series frame (one field per series, all
// named by the statistic) the labels.
func fieldIdentity(name string, labels map[string]string) string {
	keys := make([]string, 0, len(labels))
	for k := range labels {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	b.WriteString(name)
	for _, k := range keys {
		b.WriteString("\x00" + k + "=" + labels[k])
	}
	return b.String()
}

// TestGoldenFieldNamesAreUnique: in every frame of every golden case (which
// cover every query type and format, TestGoldenCoversEveryQueryTypeAndFormat),
// no two fields share a name and labels, and no two fields without labels
// share a name. Two fields of one name make a dashboard's transformations
// address them as "name 1" and "name 2" by position (the slo frame's
// objective ratio and its target column were both "target" before issue 33).
func TestGoldenFieldNamesAreUnique(t *testing.T) {
	paths, err := filepath.Glob(filepath.Join(goldenDir, "*.jsonc"))
	if err != nil || len(paths) == 0 {
		t.Fatalf("no golden files: %v", err)
	}
	frames := 0
	for _, p := range paths {
		for i, f := range goldenFrames(t, p) {
			frames++
			seen := map[string]bool{}
			for _, fd := range f.Fields {
				id := fieldIdentity(fd.Name, fd.Labels)
				if seen[id] {
					t.Errorf("%s: frame %d (%s): two fields named %q with labels %v", filepath.Base(p), i, f.Name, fd.Name, fd.Labels)
				}
				seen[id] = true
			}
		}
	}
	if frames < 50 {
		t.Errorf("only %d frames read from the golden files: the reader is broken", frames)
	}
}
