package catalog

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// GPU error and interconnect signals (issue 33: parity with dcgm-exporter's fields). Each is an
// extra signal (not in the contract list), read by the gpu query only when asked by name. The
// dcgm-exporter names are those of its default-counters.csv and dcgm_fields.h (XID, PCIe replay
// and NVLink bandwidth are enabled by default; ECC, NVLink error counters and the profiling
// NVLink byte rates must be enabled in the counters file); the agent's are pkg/gpu's families.
const (
	// XIDLast is a gauge: the number of the last XID error the GPU reported, 0 when none
	// (DCGM_FI_DEV_XID_ERRORS: "value of the last XID error encountered", not a count).
	XIDLast Signal = "xid_last"
	// XIDErrors is a counter of XID critical-error events by {xid} (the agent's
	// inferscope_gpu_xid_errors_total, from NVML events since the agent started). Events.
	XIDErrors Signal = "xid_errors"
	// ECCSBEVolatile is a counter of single-bit (corrected) ECC errors since the driver was
	// loaded (DCGM_FI_DEV_ECC_SBE_VOL_TOTAL; agent inferscope_gpu_ecc_errors_total{type="corrected"}). Errors.
	ECCSBEVolatile Signal = "ecc_sbe_volatile"
	// ECCDBEVolatile is a counter of double-bit (uncorrected) ECC errors since the driver was
	// loaded (DCGM_FI_DEV_ECC_DBE_VOL_TOTAL; agent {type="uncorrected"}). Errors.
	ECCDBEVolatile Signal = "ecc_dbe_volatile"
	// ECCSBEAggregate is a counter of single-bit ECC errors over the GPU's life (persistent
	// across driver reloads; DCGM_FI_DEV_ECC_SBE_AGG_TOTAL). Errors.
	ECCSBEAggregate Signal = "ecc_sbe_aggregate"
	// ECCDBEAggregate is a counter of double-bit ECC errors over the GPU's life
	// (DCGM_FI_DEV_ECC_DBE_AGG_TOTAL). Errors.
	ECCDBEAggregate Signal = "ecc_dbe_aggregate"
	// PCIeReplays is a counter of PCIe link-level retries (DCGM_FI_DEV_PCIE_REPLAY_COUNTER).
	// Replays. A rising count is a marginal link (riser, slot, cable).
	PCIeReplays Signal = "pcie_replays"
	// NVLinkBandwidthTotal is dcgm-exporter's NVLink bandwidth counter summed over all links
	// (DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL, a counter in default-counters.csv whose unit DCGM
	// does not document): its rate is shown as counts per second, for trends only.
	NVLinkBandwidthTotal Signal = "nvlink_bandwidth_total"
	// NVLinkTx is a gauge, bytes/s of NVLink payload sent (the DCGM profiling field
	// DCGM_FI_PROF_NVLINK_TX_BYTES, protocol headers excluded).
	NVLinkTx Signal = "nvlink_tx"
	// NVLinkRx is a gauge, bytes/s of NVLink payload received (DCGM_FI_PROF_NVLINK_RX_BYTES).
	NVLinkRx Signal = "nvlink_rx"
	// NVLinkCRCFlitErrors is a counter of NVLink flow-control (flit) CRC errors, all links
	// summed (DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL). Errors.
	NVLinkCRCFlitErrors Signal = "nvlink_crc_flit_errors"
	// NVLinkCRCDataErrors is a counter of NVLink data CRC errors, all links summed
	// (DCGM_FI_DEV_NVLINK_CRC_DATA_ERROR_COUNT_TOTAL). Errors.
	NVLinkCRCDataErrors Signal = "nvlink_crc_data_errors"
	// NVLinkReplayErrors is a counter of NVLink replays, all links summed
	// (DCGM_FI_DEV_NVLINK_REPLAY_ERROR_COUNT_TOTAL). Errors.
	NVLinkReplayErrors Signal = "nvlink_replay_errors"
	// NVLinkRecoveryErrors is a counter of NVLink recoveries (link retrains), all links summed
	// (DCGM_FI_DEV_NVLINK_RECOVERY_ERROR_COUNT_TOTAL). Errors.
	NVLinkRecoveryErrors Signal = "nvlink_recovery_errors"
)

// GPUErrorSignals are the GPU error and interconnect signals, in AllSignals order.
var GPUErrorSignals = []Signal{XIDLast, XIDErrors, ECCSBEVolatile, ECCDBEVolatile, ECCSBEAggregate, ECCDBEAggregate,
	PCIeReplays, NVLinkBandwidthTotal, NVLinkTx, NVLinkRx, NVLinkCRCFlitErrors, NVLinkCRCDataErrors, NVLinkReplayErrors, NVLinkRecoveryErrors}

// AgentECCErrorsTotal and AgentXIDErrorsTotal are the Inferscope GPU agent's error counters
// (pkg/gpu NameECCErrors {type="corrected"|"uncorrected"}, NameXIDErrors {xid}), with
// AgentECCAggregateTotal and AgentPCIeReplaysTotal (pkg/gpu NameECCAggregate, NamePCIeReplays).
const (
	// AgentECCErrorsTotal is the agent's volatile ECC count {type}.
	AgentECCErrorsTotal = GPUAgentPrefix + "ecc_errors_total"
	// AgentXIDErrorsTotal is the agent's count of XID events {xid}.
	AgentXIDErrorsTotal = GPUAgentPrefix + "xid_errors_total"
	// AgentECCAggregateTotal is the agent's lifetime ECC count {type="corrected"|"uncorrected"}
	// (NVML AGGREGATE_ECC).
	AgentECCAggregateTotal = GPUAgentPrefix + "ecc_errors_aggregate_total"
	// AgentPCIeReplaysTotal is the agent's PCIe replay counter (nvmlDeviceGetPcieReplayCounter).
	AgentPCIeReplaysTotal = GPUAgentPrefix + "pcie_replays_total"
)

// LabelXID is the label of AgentXIDErrorsTotal naming the XID number.
const LabelXID = "xid"

// gpuErrorEntries are the table cells of GPUErrorSignals, merged into table by init.
var gpuErrorEntries = map[Engine]map[Signal]entry{
	EngineDCGM: {
		XIDLast:              {Exact, "The number of the last XID error (0: none), not a count: a change is a new error.", gauge("DCGM_FI_DEV_XID_ERRORS")},
		XIDErrors:            {Absent, "dcgm-exporter reports the last XID number (xid_last), not a count of events.", nil},
		ECCSBEVolatile:       {Exact, "Only where ECC is on and the field is enabled in dcgm-exporter's counters file.", ctr("DCGM_FI_DEV_ECC_SBE_VOL_TOTAL")},
		ECCDBEVolatile:       {Exact, "Only where ECC is on and the field is enabled in dcgm-exporter's counters file.", ctr("DCGM_FI_DEV_ECC_DBE_VOL_TOTAL")},
		ECCSBEAggregate:      {Exact, "Only where ECC is on and the field is enabled in dcgm-exporter's counters file.", ctr("DCGM_FI_DEV_ECC_SBE_AGG_TOTAL")},
		ECCDBEAggregate:      {Exact, "Only where ECC is on and the field is enabled in dcgm-exporter's counters file.", ctr("DCGM_FI_DEV_ECC_DBE_AGG_TOTAL")},
		PCIeReplays:          {Exact, "", ctr("DCGM_FI_DEV_PCIE_REPLAY_COUNTER")},
		NVLinkBandwidthTotal: {Approximate, "A counter over all links whose unit DCGM does not document: read its rate as a trend, not as bytes/s (nvlink_tx and nvlink_rx are bytes/s).", ctr("DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL")},
		NVLinkTx:             {Exact, "A DCGM profiling field, off by default in dcgm-exporter.", gauge("DCGM_FI_PROF_NVLINK_TX_BYTES")},
		NVLinkRx:             {Exact, "A DCGM profiling field, off by default in dcgm-exporter.", gauge("DCGM_FI_PROF_NVLINK_RX_BYTES")},
		NVLinkCRCFlitErrors:  {Exact, "Off by default in dcgm-exporter's counters file.", ctr("DCGM_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL")},
		NVLinkCRCDataErrors:  {Exact, "Off by default in dcgm-exporter's counters file.", ctr("DCGM_FI_DEV_NVLINK_CRC_DATA_ERROR_COUNT_TOTAL")},
		NVLinkReplayErrors:   {Exact, "Off by default in dcgm-exporter's counters file.", ctr("DCGM_FI_DEV_NVLINK_REPLAY_ERROR_COUNT_TOTAL")},
		NVLinkRecoveryErrors: {Exact, "Off by default in dcgm-exporter's counters file.", ctr("DCGM_FI_DEV_NVLINK_RECOVERY_ERROR_COUNT_TOTAL")},
	},
	EngineInferscopeGPU: {
		XIDLast:         {Absent, "The agent counts XID events by number (xid_errors) instead of keeping the last one.", nil},
		XIDErrors:       {Exact, "Counted from NVML's XID critical-error events since the agent started.", ctr(AgentXIDErrorsTotal)},
		ECCSBEVolatile:  {Exact, "", withMatch(ctr(AgentECCErrorsTotal), `type="corrected"`)},
		ECCDBEVolatile:  {Exact, "", withMatch(ctr(AgentECCErrorsTotal), `type="uncorrected"`)},
		ECCSBEAggregate: {Exact, "", withMatch(ctr(AgentECCAggregateTotal), `type="corrected"`)},
		ECCDBEAggregate: {Exact, "", withMatch(ctr(AgentECCAggregateTotal), `type="uncorrected"`)},
		PCIeReplays:     {Exact, "", ctr(AgentPCIeReplaysTotal)},
	},
}

// addGPUErrorSignals merges gpuErrorEntries into the GPU sources' maps of the table (called by
// buildCatalogue).
func addGPUErrorSignals() {
	for e, sigs := range gpuErrorEntries {
		for s, en := range sigs {
			table[e][s] = en
		}
	}
}

// GPUCounterPromQL builds the per-GPU query of a GPU counter signal over GPU agents (job
// names; empty: every job), with fn "increase" (events in the window ending at each step) or
// "rate" (per second), summed by job, GPULabels and extraBy, dcgm-exporter's labels copied
// onto the agent's names as in GPUPromQL:
//
//	sum by (job, gpu, uuid, …) (increase(inferscope_gpu_ecc_errors_total{job=~"a", gpu!="", type="corrected"}[1m]))
//	  or sum by (job, gpu, uuid, …) (label_replace(…(increase(DCGM_FI_DEV_ECC_SBE_VOL_TOTAL{…}[1m]))…))
//
// A counter reset (a driver reload zeroes the volatile ECC counts) is handled by increase()
// and rate(). Errors: unknown signal or fn, invalid extraBy label, empty agent name, window
// under 1 ms, or a signal no GPU source exports as a counter.
func GPUCounterPromQL(s Signal, agents []string, fn string, window time.Duration, extraBy ...string) (string, error) {
	if err := checkSignal(s); err != nil {
		return "", err
	}
	if fn != "increase" && fn != "rate" {
		return "", fmt.Errorf("catalog: function %q not supported (want increase or rate)", fn)
	}
	w, err := windowString(window)
	if err != nil {
		return "", err
	}
	groups, base, err := gpuGroupsAndBase(agents, extraBy)
	if err != nil {
		return "", err
	}
	var parts []string
	for _, e := range gpuEngines {
		for _, m := range Lookup(e, s).Metrics {
			if m.Kind != KindCounter {
				continue
			}
			sel := slices.Clone(base)
			if m.Match != "" {
				sel = append(sel, m.Match)
			}
			t := fn + "(" + selector(m.Name, strings.Join(sel, ", ")) + "[" + w + "])"
			if m.Scale != 1 {
				t = "(" + t + " * " + formatScale(m.Scale) + ")"
			}
			if e == EngineDCGM {
				for _, c := range dcgmLabelCopies {
					t = `label_replace(` + t + `, "` + c.to + `", "$1", "` + c.from + `", "(.+)")`
				}
			}
			parts = append(parts, aggregate("sum", groups, t))
		}
	}
	if len(parts) == 0 {
		return "", fmt.Errorf("catalog: signal %q is not read from a counter by any GPU agent (Inferscope agent or dcgm-exporter)", s)
	}
	return strings.Join(parts, " or "), nil
}
