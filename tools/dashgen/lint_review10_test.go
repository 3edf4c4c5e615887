package main

import (
	"strings"
	"testing"
)

// The tenth review of issue 33 (review 33-9, the GPU page) found: the page never says whether
// the GPU is the limit, its first row read "not memory pressure" during a KV-cache incident,
// and the temperature chart's 80/90 °C lines lay above its 50–65 °C axis. Each test below
// failed on the dashboards committed before that review.

// TestGPUPageSaysWhetherTheGPUIsTheLimit: the GPU page has a table of the diagnosis query's
// current rows (the class per target that names a GPU bottleneck or another one), worst
// first, before its charts (within its first 8 grid rows).
func TestGPUPageSaysWhetherTheGPUIsTheLimit(t *testing.T) {
	p := gpuPanel(t, gpuVerdictTitle)
	tr := jsonText(p["transformations"])
	if p["type"] != "table" || !strings.Contains(jsonText(p["targets"]), `"queryType":"diagnosis"`) || !strings.Contains(tr, `"fieldName":"current"`) {
		t.Fatalf("%s: not a table of the current diagnoses: %s", gpuVerdictTitle, tr)
	}
	if !strings.Contains(tr, `{"desc":true,"field":"level"}`) {
		t.Errorf("%s: not worst first", gpuVerdictTitle)
	}
	if y, _ := get(p, "gridPos", "y").(float64); y > 8 {
		t.Errorf("%s: at grid row %v, below the first screen's charts", gpuVerdictTitle, y)
	}
}

// TestGPUNoteDoesNotRuleOutMemory: the GPU page's first row does not say "not memory
// pressure" (a KV-cache shortage is memory pressure, and the overview diagnoses it), and it
// points to where the verdicts are, saying KV-cache pressure is not a GPU fault (review
// 33-10: "a KV-cache shortage does not show here" above a red KV-cache pressure cell read as
// a contradiction).
func TestGPUNoteDoesNotRuleOutMemory(t *testing.T) {
	if strings.Contains(gpuNote, "not memory pressure") {
		t.Errorf("GPU note rules out memory pressure: %q", gpuNote)
	}
	if !strings.Contains(gpuNote, "whether the GPU is the limit") || !strings.Contains(gpuNote, "not a GPU fault") {
		t.Errorf("GPU note does not say where the verdict is: %q", gpuNote)
	}
}

// TestGPUTemperatureAxisReachesItsRedLine: the temperature chart's soft maximum is at least
// its red threshold (90 °C), so the dashed threshold lines are on the axis even when every
// GPU runs cool.
func TestGPUTemperatureAxisReachesItsRedLine(t *testing.T) {
	p := gpuPanel(t, "Temperature (dashes")
	m, _ := get(p, "fieldConfig", "defaults", "custom", "axisSoftMax").(float64)
	if m < 90 {
		t.Errorf("temperature chart's axisSoftMax %v, below the 90 °C red line", m)
	}
}

// TestGPUHealthVerdictFirst (review 33-10: GPU health had to be pieced together from six
// panels): the throttle-reason timeline, the one panel whose colour says "nothing holds this
// GPU back", is the page's first panel, above the bottleneck table and every chart.
func TestGPUHealthVerdictFirst(t *testing.T) {
	h := gpuPanel(t, gpuHealthTitle)
	if h["type"] != "state-timeline" || !strings.Contains(jsonText(h["targets"]), "throttle_reasons") {
		t.Fatalf("%s: not the throttle-reason timeline", gpuHealthTitle)
	}
	hy, _ := get(h, "gridPos", "y").(float64)
	for _, l := range onCallPanels(t) {
		if l.dash != "inferscope-gpu.json" || l.p["type"] == "row" || l.p["title"] == gpuHealthTitle {
			continue
		}
		if y, _ := get(l.p, "gridPos", "y").(float64); y <= hy {
			t.Errorf("%q at grid row %v, not below the health verdict (row %v)", l.p["title"], y, hy)
		}
	}
}
