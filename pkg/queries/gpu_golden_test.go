package queries

import "testing"

// gpuGoldens are the gpu query's golden cases (testdata/golden/<name>.jsonc,
// an error's <name>.json), on the golden fixture (goldentest.Golden) unless OnProbe.
var gpuGoldens = []goldenCase{
	// gpu: default signals (with saturation), explicit signals, and
	// throttle_reasons alone (the state-timeline frame).
	{Name: "gpu_default", Query: gq("gpu")},
	{Name: "gpu_signals", Query: gq("gpu", "signals", []string{"power", "temperature", "saturation"}, "agents", []string{"vllm-a-gpu"})},
	{Name: "gpu_throttle_reasons", Query: gq("gpu", "signals", []string{"throttle_reasons"})},
	{Name: "gpu_by_target", Query: gq("gpu", "targets", []string{"vllm-a"}, "signals", []string{"gpu_util"})},
	{Name: "gpu_errors", Query: gq("gpu", "signals", []string{"xid_last", "xid_errors", "ecc_sbe_volatile", "ecc_dbe_volatile", "pcie_replays", "nvlink_tx"})},
}

// TestGPUGolden pins every frame (or error) of the gpu golden cases.
func TestGPUGolden(t *testing.T) { checkGoldens(t, "gpu") }
