package catalog

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestGPUCounterPromQL: the agent's ECC counter is selected by its type label, dcgm-exporter's
// by its own name with its labels copied onto the agent's, both summed per GPU and joined with
// `or`; the XID events keep their xid label. Written out by hand.
func TestGPUCounterPromQL(t *testing.T) {
	q, err := GPUCounterPromQL(ECCDBEVolatile, []string{"g"}, "increase", time.Minute)
	require.NoError(t, err)
	by := "sum by (job, gpu, uuid, hostname, name, gpu_instance_id, compute_instance_id) "
	copies := func(inner string) string {
		for _, c := range []struct{ to, from string }{{"uuid", "gpu_uuid"}, {"uuid", "UUID"}, {"hostname", "Hostname"},
			{"name", "model_name"}, {"name", "modelName"}, {"gpu_instance_id", "GPU_I_ID"}} {
			inner = `label_replace(` + inner + `, "` + c.to + `", "$1", "` + c.from + `", "(.+)")`
		}
		return inner
	}
	want := by + `(increase(inferscope_gpu_ecc_errors_total{job=~"g", gpu!="", type="uncorrected"}[1m]))` +
		" or " + by + "(" + copies(`increase(DCGM_FI_DEV_ECC_DBE_VOL_TOTAL{job=~"g", gpu!=""}[1m])`) + ")"
	assert.Equal(t, want, q)

	x, err := GPUCounterPromQL(XIDErrors, nil, "increase", time.Minute, "xid")
	require.NoError(t, err)
	assert.Equal(t, `sum by (job, gpu, uuid, hostname, name, gpu_instance_id, compute_instance_id, xid) (increase(inferscope_gpu_xid_errors_total{gpu!=""}[1m]))`, x)

	bw, err := GPUCounterPromQL(NVLinkBandwidthTotal, []string{"g"}, "rate", 30*time.Second)
	require.NoError(t, err)
	assert.Equal(t, by+"("+copies(`rate(DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL{job=~"g", gpu!=""}[30s])`)+")", bw)

	_, err = GPUCounterPromQL(XIDLast, nil, "increase", time.Minute)
	assert.ErrorContains(t, err, "not read from a counter", "xid_last is a gauge")
	_, err = GPUCounterPromQL(PCIeReplays, nil, "delta", time.Minute)
	assert.ErrorContains(t, err, `"delta"`)
	_, err = GPUCounterPromQL(PCIeReplays, []string{""}, "increase", time.Minute)
	assert.Error(t, err, "an empty agent name")
}

// TestGPUErrorSignalsAreCatalogued: every GPU error signal is known (AllSignals), stored by the
// collector's keep filter and exported by at least one GPU source; the DCGM gauges get the
// blank-sentinel filter.
func TestGPUErrorSignalsAreCatalogued(t *testing.T) {
	keep := map[string]bool{}
	for _, n := range keepNames() {
		keep[n] = true
	}
	for _, s := range GPUErrorSignals {
		assert.Contains(t, AllSignals, s)
		n := 0
		for _, e := range gpuEngines {
			for _, m := range Lookup(e, s).Metrics {
				n++
				assert.True(t, keep[m.Name], "%s: %s is not stored", s, m.Name)
				if e == EngineDCGM && m.Kind == KindGauge {
					assert.Equal(t, "< "+dcgmBlankFloor, sentinelFilter[m.Name], m.Name)
				}
			}
		}
		assert.Positive(t, n, "%s has no GPU source", s)
	}
	assert.Contains(t, AllSignals, GenerationLength)
	for _, s := range SpecDecodeSignals {
		assert.Contains(t, AllSignals, s)
	}
}
