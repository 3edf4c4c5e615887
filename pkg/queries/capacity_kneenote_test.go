package queries

import (
	"strings"
	"testing"

	"github.com/inferscope/inferscope-llm-datasource/pkg/twin"
)

// The ninth review of issue 33 read "knee error 13%" in the capacity table beside a what-if
// current row whose twin check was off (TTFT p99 29.4 s predicted, 1.26 min observed): the
// knee comes from the same twin, so its row must say it is in doubt.
func TestCapacityKneeNoteSaysTheKneeIsInDoubt(t *testing.T) {
	// The review's kv-pressure figures: 29.4 s predicted, 75.6 s observed in the 60 s to
	// 120 s bucket. The 14 % TTFT band around 29.4 s reaches at most 29.4 / 0.86 = 34.2 s,
	// under the bucket's 60 s lower edge: off.
	off := twin.CompareCurrent(map[string]float64{"ttft": 29.4}, map[string]twin.ObservedP99{"ttft": {Value: 75.6, Lower: 60, Upper: 120}}, "ttft", "e2e")
	note := capacityKneeNote(off)
	if !strings.HasPrefix(note, "in doubt: ") || !strings.Contains(note, "TTFT p99 observed") {
		t.Errorf("twin check %q gave knee note %q, want \"in doubt: …\" naming the TTFT p99", off.Sentence(), note)
	}
	if strings.Contains(note, "read the what-ifs") {
		t.Errorf("knee note %q carries the what-if table's advice", note)
	}
	// 0.5 s predicted, 0.52 s observed in the 0.5 s to 0.75 s bucket: within the band.
	ok := twin.CompareCurrent(map[string]float64{"ttft": 0.5}, map[string]twin.ObservedP99{"ttft": {Value: 0.52, Lower: 0.5, Upper: 0.75}}, "ttft", "e2e")
	if note := capacityKneeNote(ok); note != "" {
		t.Errorf("twin check %q gave knee note %q, want none", ok.Sentence(), note)
	}
	if note := capacityKneeNote(twin.CurrentCheck{}); note != "" {
		t.Errorf("no twin check gave knee note %q, want none", note)
	}
}
