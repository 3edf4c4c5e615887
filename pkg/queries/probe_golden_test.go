package queries

import "testing"

// probeGoldens are the probe query's golden cases (testdata/golden/<name>.jsonc),
// on the probe fixture (goldentest.Probe).
var probeGoldens = []goldenCase{
	{Name: "probe_jitter", Query: gq("probe", "window", "5m"), OnProbe: true},
	{Name: "probe_errors", Query: gq("probe", "view", "errors", "window", "5m"), OnProbe: true},
	{Name: "probe_spikes", Query: gq("probe", "view", "spikes", "window", "5m", "threshold", 0.5), OnProbe: true},
	{Name: "probe_spikes_sustained", Query: gq("probe", "view", "spikes", "format", "sustained", "window", "5m", "threshold", 0.5), OnProbe: true},
}

// TestProbeGolden pins every frame (or error) of the probe golden cases.
func TestProbeGolden(t *testing.T) { checkGoldens(t, "probe") }
