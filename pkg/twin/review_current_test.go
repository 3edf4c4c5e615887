package twin

import (
	"math"
	"strings"
	"testing"
)

// TestCurrentBandIsTheNarrowestChangeBand: by hand from ErrorBand's table (as recalibrated in
// issue 35's seventh round), the narrowest TTFT band is the prefix cache's (0.12; max_num_seqs
// 0.57, prompts 0.82, one more replica 0.13), the narrowest TPOT band max_num_seqs's and the
// prefix cache's (0.05; replica 0.08, prompts 0.15), the narrowest E2E band the prefix cache's
// (0.08; max_num_seqs 0.10, replica 0.14, prompts 0.24).
func TestCurrentBandIsTheNarrowestChangeBand(t *testing.T) {
	for sig, want := range map[string]float64{"ttft": 0.12, "tpot": 0.05, "e2e": 0.08} {
		if got := CurrentBand(sig); got != want {
			t.Errorf("CurrentBand(%s) = %v, want %v", sig, got, want)
		}
	}
}

// TestCheckCurrentFlagsAMissBeyondTheBand (issue 33, review 8): the demo's KV-starved target's
// twin predicted a current TTFT p99 of 31.7 s against 77 s observed, in vLLM's 40–80 s bucket.
// The band (12 % since issue 35's seventh round) is [31.7 / 1.12, 31.7 / 0.88] = [28.3 s, 36.0 s],
// below 40 s: off. A healthy target's 78.8 ms against 83.4 ms in the 80–100 ms bucket matches
// ([70.4 ms, 89.5 ms]), and an E2E of 6.64 s against 8.78 s interpolated in a 5–10 s bucket is
// not called a miss: the band (8 %) [6.15 s, 7.22 s] reaches the bucket.
func TestCheckCurrentFlagsAMissBeyondTheBand(t *testing.T) {
	off := CheckCurrent(map[string]float64{"ttft": 31.7, "e2e": 60}, map[string]ObservedP99{"ttft": {77, 40, 80}, "e2e": {90, 80, 160}}, "ttft", "e2e")
	if !strings.HasPrefix(off, "off: TTFT p99 observed 77 s (bucket 40 s to 80 s), predicted 31.7 s [28.3 s, 36 s]") {
		t.Errorf("a 31.7 s prediction against 77 s observed reads %q", off)
	}
	// E2E: band [60 / 1.08, 60 / 0.92] = [55.6 s, 65.2 s] below the 80–160 s bucket, so both are named.
	if !strings.Contains(off, "E2E p99 observed 90 s") {
		t.Errorf("the E2E miss is not named: %q", off)
	}
	ok := CheckCurrent(map[string]float64{"ttft": 0.0788, "e2e": 6.64}, map[string]ObservedP99{"ttft": {0.0834, 0.08, 0.1}, "e2e": {8.78, 5, 10}}, "ttft", "e2e")
	if ok != "matches the observed p99 (TTFT, E2E within the band)" {
		t.Errorf("predictions within the band (or the bucket's resolution) read %q", ok)
	}
	// The rank in the +Inf bucket: the true p99 is somewhere above 80 s, so 100 s predicted
	// is no miss.
	if got := CheckCurrent(map[string]float64{"ttft": 100}, map[string]ObservedP99{"ttft": {80, 80, math.Inf(1)}}, "ttft"); !strings.HasPrefix(got, "matches") {
		t.Errorf("a prediction above an open top bucket reads %q", got)
	}
	nan := math.NaN()
	if got := CheckCurrent(map[string]float64{"ttft": 1}, map[string]ObservedP99{"ttft": {nan, nan, nan}}, "ttft", "e2e"); got != "" {
		t.Errorf("nothing to compare reads %q, want empty", got)
	}
}

// TestSameOutcome: a change that leaves every p50 and p99 within 0.5 % predicts the same as
// the current configuration; 1 % off on one of them does not.
func TestSameOutcome(t *testing.T) {
	o := func(ttft99 float64) Outcome {
		return Outcome{P50: map[string]float64{"ttft": 0.02, "tpot": 0.008, "e2e": 1.4}, P99: map[string]float64{"ttft": ttft99, "tpot": 0.0095, "e2e": 6.6}}
	}
	if !SameOutcome(o(0.0792), o(0.0792)) || !SameOutcome(o(0.0792), o(0.0793)) {
		t.Error("equal outcomes (or 0.13 % apart) read as different")
	}
	if SameOutcome(o(0.0792), o(0.08)) {
		t.Error("outcomes 1 % apart read as the same")
	}
	if SameOutcome(Outcome{}, o(0.08)) {
		t.Error("an outcome without predictions reads as the same")
	}
}

// TestDaysToKneeWords: the four cases a null days figure used to merge, by hand.
func TestDaysToKneeWords(t *testing.T) {
	for days, want := range map[float64]string{3.24: "in 3.2 days", 0: "past the knee now", math.Inf(1): "no rising trend", 45: "in 45.0 days"} {
		if got := DaysToKneeWords(days); got != want {
			t.Errorf("DaysToKneeWords(%v) = %q, want %q", days, got, want)
		}
	}
	if got := DaysToKneeWords(math.NaN()); got != "no trend read: the range is under a day" {
		t.Errorf("DaysToKneeWords(NaN) = %q", got)
	}
}
