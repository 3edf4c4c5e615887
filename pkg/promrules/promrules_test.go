package promrules

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/inferscope/inferscope-llm-datasource/pkg/settings"
)

const shipped = "../../provisioning/prometheus/inferscope-slo.rules.yml"

// The shipped rule file is the generator's output for the default profiles
// (regenerate with go run ./pkg/cmd/inferscope-promrules -out provisioning/prometheus/inferscope-slo.rules.yml).
func TestShippedRulesAreGenerated(t *testing.T) {
	s, err := settings.Load([]byte(`{}`), nil)
	require.NoError(t, err)
	want, err := Generate(s.Profiles, DefaultOptions)
	require.NoError(t, err)
	got, err := os.ReadFile(shipped)
	require.NoError(t, err)
	assert.Equal(t, string(want), string(got), "regenerate the rule file")
	// Every profile and objective is in it.
	for _, p := range s.Profiles {
		for _, o := range p.Objectives {
			assert.Contains(t, string(got), "{profile: "+p.Name+", objective: "+o.Name+"}")
		}
	}
	// DefaultProfiles() as such (periods not yet parsed) gives the same file.
	again, err := Generate(settings.DefaultProfiles(), DefaultOptions)
	require.NoError(t, err)
	assert.Equal(t, string(want), string(again))
}

func TestLeInBothSpellings(t *testing.T) {
	assert.Equal(t, `3|3\\.0`, LeRegex(3))
	assert.Equal(t, `30|30\\.0`, LeRegex(30))
	assert.Equal(t, `0\\.05`, LeRegex(0.05))
	assert.Equal(t, `2\\.5`, LeRegex(2.5))
}

func TestFactorsScaleAndNeverFiringRowsAreNamed(t *testing.T) {
	// A 90-day objective at 0.97: the 1h/5m page row's factor 0.02·2160 =
	// 43.2 exceeds the highest burn 1/0.03 = 33.3: left out and named. The
	// 6h/30m row: 18 × 0.03 = 0.54 as an error-ratio threshold; tickets 9 and
	// 3 → 0.27 and 0.09.
	p := []settings.Profile{{Name: "p", Objectives: []settings.Objective{{Name: "o", Kind: settings.KindLatency, Signal: "e2e", Threshold: 10, Target: 0.97, PeriodRaw: "90d"}}}}
	b, err := Generate(p, DefaultOptions)
	require.NoError(t, err)
	s := string(b)
	assert.Contains(t, s, "# Never fires, left out: p/o: row page 1h/5m can never fire for a 90d period at target 0.97: its factor 43.2")
	assert.NotContains(t, s, `ratio_rate1h{profile="p", objective="o"} > `)
	assert.Contains(t, s, `ratio_rate6h{profile="p", objective="o"} > 0.54 and`)
	assert.Contains(t, s, `ratio_rate1d{profile="p", objective="o"} > 0.27 and`)
	assert.Contains(t, s, `ratio_rate3d{profile="p", objective="o"} > 0.09 and`)
	assert.Contains(t, s, `[90d])`)
	// A 3-day period: the 6h/30m page row (factor 0.6) is off; 1h/5m pages above 1.44 × 0.01.
	p[0].Objectives[0].PeriodRaw, p[0].Objectives[0].Target = "3d", 0.99
	b, err = Generate(p, DefaultOptions)
	require.NoError(t, err)
	s = string(b)
	assert.Contains(t, s, "row page 6h/30m is off for a 3d period")
	assert.Contains(t, s, `ratio_rate1h{profile="p", objective="o"} > 0.0144 and`)
	// An unknown stage is an error naming the objective.
	p[0].Objectives[0].Signal = "latency"
	_, err = Generate(p, DefaultOptions)
	assert.ErrorContains(t, err, "profile p objective o")
}

// promtool accepts the generated file (skipped when promtool is not installed).
func TestGeneratedRulesPassPromtoolCheck(t *testing.T) {
	if _, err := exec.LookPath("promtool"); err != nil {
		t.Skip("promtool not installed")
	}
	p := []settings.Profile{{Name: "x", Objectives: []settings.Objective{
		{Name: "e", Kind: settings.KindErrorRatio, Target: 0.995, Include4xx: true, IncludeAborts: true, PeriodRaw: "28d", Targets: []string{"a.b"}},
		{Name: "q", Kind: settings.KindLatency, Signal: "queue_time", Threshold: 1, Target: 0.9, PeriodRaw: "7d", Models: []string{"m"}},
		{Name: "u", Kind: settings.KindAvailability, Target: 0.999, PeriodRaw: "month"},
	}}}
	b, err := Generate(p, DefaultOptions)
	require.NoError(t, err)
	f := filepath.Join(t.TempDir(), "x.rules.yml")
	require.NoError(t, os.WriteFile(f, b, 0o644))
	out, err := exec.Command("promtool", "check", "rules", f).CombinedOutput()
	require.NoError(t, err, string(out))
	assert.True(t, strings.Contains(string(b), `[45]..`) && strings.Contains(string(b), `finished_reason=~\"error|abort\"`))
	assert.Contains(t, string(b), `job=~\"a\\\\.b\"`, "a target name quoted as a regex")
}
