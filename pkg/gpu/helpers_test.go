package gpu

import (
	"bytes"
	"fmt"
	"os/exec"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// exposition turns hand-written sample lines ("name{labels} value", one per line,
// blank lines ignored) into text format with the HELP and TYPE lines the agent
// declares, grouping lines by metric name. $vars in the lines are replaced first.
func exposition(t *testing.T, lines string, vars map[string]string) string {
	t.Helper()
	keys := make([]string, 0, len(vars))
	for k := range vars {
		keys = append(keys, k)
	}
	// Longest first so $g0m does not get eaten by $g0.
	sort.Slice(keys, func(i, j int) bool { return len(keys[i]) > len(keys[j]) })
	for _, k := range keys {
		lines = strings.ReplaceAll(lines, "$"+k, vars[k])
	}
	byName := map[string][]string{}
	var order []string
	for _, l := range strings.Split(lines, "\n") {
		l = strings.TrimSpace(l)
		if l == "" {
			continue
		}
		name := l[:strings.IndexAny(l, "{ ")]
		l = sortLabels(l)
		if _, ok := byName[name]; !ok {
			order = append(order, name)
		}
		byName[name] = append(byName[name], l)
	}
	var b strings.Builder
	for _, name := range order {
		spec, ok := specByName(name)
		require.True(t, ok, "unknown family %s", name)
		typ := "gauge"
		if spec.counter {
			typ = "counter"
		}
		fmt.Fprintf(&b, "# HELP %s %s\n# TYPE %s %s\n", name, spec.help, name, typ)
		for _, l := range byName[name] {
			b.WriteString(l + "\n")
		}
	}
	return b.String()
}

var labelPair = regexp.MustCompile(`(\w+)="([^"]*)"`)

// sortLabels puts the labels of one sample line in name order, as the text
// encoder writes them.
func sortLabels(line string) string {
	open, end := strings.IndexByte(line, '{'), strings.LastIndexByte(line, '}')
	if open < 0 || end < open {
		return line
	}
	pairs := labelPair.FindAllString(line[open+1:end], -1)
	sort.Strings(pairs)
	return line[:open+1] + strings.Join(pairs, ",") + line[end:]
}

func specByName(name string) (familySpec, bool) {
	for _, f := range families {
		if f.name == name {
			return f, true
		}
	}
	return familySpec{}, false
}

// allFamilyNames lists every per-GPU family name (agent self-metrics excluded:
// their values are times).
func allFamilyNames() []string {
	out := make([]string, 0, numFamilies)
	for _, f := range families {
		out = append(out, f.name)
	}
	return out
}

// promtoolCheck runs `promtool check metrics` on page and fails on findings;
// it skips when promtool is not installed.
func promtoolCheck(t *testing.T, page []byte) {
	t.Helper()
	path, err := exec.LookPath("promtool")
	if err != nil {
		t.Skip("promtool not installed (Debian package prometheus)")
	}
	cmd := exec.Command(path, "check", "metrics")
	cmd.Stdin = bytes.NewReader(page)
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "promtool check metrics:\n%s\npage:\n%s", out, page)
}
