package bench

import (
	"os"
	"path/filepath"
	"regexp"
	"testing"
)

// sentence is the shape of every rejection: it starts with the file's name and a colon.
var sentence = regexp.MustCompile(`^f(#\d+)?: \S`)

// FuzzParse: Parse never panics on any bytes; a rejection is one sentence
// starting with the file's name; an accepted file has sorted percentiles
// within 0..100 and no negative latency.
func FuzzParse(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join("testdata", "*.json"))
	for _, p := range files {
		if data, err := os.ReadFile(p); err == nil {
			f.Add(data)
		}
	}
	f.Add([]byte(`{"benchmarks": [null]}`))
	f.Add([]byte(`{"benchmarks": [{"metrics": {"request_latency": {"successful": null}}}]}`))
	f.Add([]byte(`{"time_to_first_token": {"unit": "ms", "p99": NaN}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		bs, err := Parse("f", data)
		if err != nil {
			if !sentence.MatchString(err.Error()) {
				t.Fatalf("rejection %q does not start with the file's name", err)
			}
			return
		}
		for _, b := range bs {
			for s, m := range b.Stages {
				prev := -1.0
				for _, p := range m.Percentiles {
					if p.P <= prev || p.P < 0 || p.P > 100 || p.Value < 0 {
						t.Fatalf("%s: bad percentile list %v", s, m.Percentiles)
					}
					prev = p.P
				}
			}
			_ = b.Summary()
		}
	})
}
