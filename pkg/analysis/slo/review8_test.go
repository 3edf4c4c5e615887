package slo

import (
	"math"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// TestReportNamesTheBoundAndLeavesUncoveredWindowsOut (issue 33, review 7): an objective at
// 99 % over 30 d whose store holds one hour; every window of an hour or less holds 20 % bad
// requests (point burn (1 − 0.8) / 0.01 = 20) with a bracket of ±2 % (favourable burn
// (1 − 0.82) / 0.01 = 18), and the longer windows can only read that same hour.
//   - The 2h, 6h, 1d and 3d burn rates are NaN (not covered), not the hour's 20 again.
//   - The page row 1h/5m fires on the favourable bound (18 > 14.4 on both), and the reason
//     quotes 18 and names it a bound, beside the point estimates 20 that the Burn columns hold.
func TestReportNamesTheBoundAndLeavesUncoveredWindowsOut(t *testing.T) {
	spec := Spec{Objective: "ttft-p99", Kind: "latency", Signal: "ttft", Threshold: 3, Target: 0.99, Period: 30 * 24 * time.Hour}
	w := Windowed{Burn: map[time.Duration]Counts{}}
	for _, win := range Windows {
		n := 100.0 * win.Minutes() / 5
		if win > time.Hour {
			n = 1200 // the hour the store holds
		}
		w.Burn[win] = Counts{Total: n, Good: 0.8 * n, GoodLower: 0.78 * n, GoodUpper: 0.82 * n}
	}
	w.Range, w.Period = w.Burn[time.Hour], w.Burn[time.Hour]
	r := NewReport(spec, map[string]string{"target": "a"}, w, time.Hour)
	for _, win := range []time.Duration{5 * time.Minute, 30 * time.Minute, time.Hour} {
		require.InDelta(t, 20, r.Burn[win], 1e-9, WindowName(win))
		require.InDelta(t, 18, r.BurnFavourable[win], 1e-9, WindowName(win))
	}
	for _, win := range []time.Duration{2 * time.Hour, 6 * time.Hour, 24 * time.Hour, 72 * time.Hour} {
		require.True(t, math.IsNaN(r.Burn[win]), "%s burn from an hour of history: %v", WindowName(win), r.Burn[win])
	}
	require.Equal(t, Page, r.Status)
	require.True(t, strings.HasPrefix(r.Reason, "burn rate 18 over 1h and 18 over 5m both exceed 14.4"), r.Reason)
	require.Contains(t, r.Reason, "(burn rates on the bound of the attainment bracket in the service's favour; the point estimates are 20 over 1h and 20 over 5m)")
}

// TestMaskUncoveredLeavesOutWindowsLongerThanTheHistory: three steps covering 20 m, 40 m and
// 70 m (slack 0): the 30m window is out at the first step only, the 1h window at the first two,
// the 2h window and longer at all three; the 5m window is kept everywhere, also at a step
// covering 1 m (the burn now).
func TestMaskUncoveredLeavesOutWindowsLongerThanTheHistory(t *testing.T) {
	burn := map[time.Duration][]float64{}
	for _, w := range Windows {
		burn[w] = []float64{1, 1, 1}
	}
	out := MaskUncovered(burn, []time.Duration{20 * time.Minute, 40 * time.Minute, 70 * time.Minute}, 0)
	short := map[time.Duration][]float64{5 * time.Minute: {1}, 30 * time.Minute: {1}}
	MaskUncovered(short, []time.Duration{time.Minute}, 0)
	require.Equal(t, 1.0, short[5*time.Minute][0], "5m at a minute of history")
	require.True(t, math.IsNaN(short[30*time.Minute][0]), "30m at a minute of history")
	require.Equal(t, []string{"2h", "6h", "1d", "3d"}, out)
	isNaN := func(w time.Duration) []bool {
		var b []bool
		for _, v := range burn[w] {
			b = append(b, math.IsNaN(v))
		}
		return b
	}
	require.Equal(t, []bool{false, false, false}, isNaN(5*time.Minute))
	require.Equal(t, []bool{true, false, false}, isNaN(30*time.Minute))
	require.Equal(t, []bool{true, true, false}, isNaN(time.Hour))
	require.Equal(t, []bool{true, true, true}, isNaN(2*time.Hour))
	require.Equal(t, []bool{true, true, true}, isNaN(72*time.Hour))
}

// TestReportKeepsBurnRatesWhenCoverageIsUnknown: a coverage of 0 (no sample count read) is
// not an empty store: a 2h window with 1,200 requests, 960 good at target 0.99, keeps its
// burn rate (1 − 0.8) / 0.01 = 20.
func TestReportKeepsBurnRatesWhenCoverageIsUnknown(t *testing.T) {
	spec := Spec{Objective: "errors", Kind: "error_ratio", Target: 0.99, Period: 30 * 24 * time.Hour, Threshold: math.NaN()}
	c := Counts{Total: 1200, Good: 960, GoodLower: 960, GoodUpper: 960}
	r := NewReport(spec, nil, Windowed{Range: c, Period: c, Burn: map[time.Duration]Counts{2 * time.Hour: c}}, 0)
	require.InDelta(t, 20, r.Burn[2*time.Hour], 1e-9)
}
