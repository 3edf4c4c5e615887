package fetch

import (
	"fmt"
	"strings"

	"github.com/inferscope/inferscope-llm-datasource/pkg/bench"
)

// Baseline reads the baseline called name from the settings' baselinesPath
// (the operator's files at its top and the uploads of the request's
// organisation, bench.Cache.ReadOrg; a name "<file>#<i>" picks one benchmark
// of a GuideLLM sweep). The error is a sentence for the query's author: no
// directory configured, or no such baseline (with the names there and the
// problems of unreadable files).
func (e *Env) Baseline(name string) (bench.Baseline, error) {
	dir := e.Settings.BaselinesPath
	if dir == "" {
		return bench.Baseline{}, fmt.Errorf("no baselines directory is configured (baselinesPath in the data source's settings)")
	}
	c := e.Baselines
	if c == nil {
		c = bench.NewCache(0)
	}
	d := c.ReadOrg(dir, e.Org)
	if b, ok := d.Baselines[name]; ok {
		return b, nil
	}
	msg := fmt.Sprintf("%q is not a baseline; the directory holds %s", name, strings.Join(d.Names(), ", "))
	if len(d.Names()) == 0 {
		msg = fmt.Sprintf("%q is not a baseline; the directory holds none", name)
	}
	if len(d.Problems) > 0 {
		msg += " (unreadable: " + strings.Join(d.Problems, "; ") + ")"
	}
	return bench.Baseline{}, fmt.Errorf("%s", msg)
}
